"""nn.functional pooling: max/avg (1-3d, ceil_mode, padding, dilation, indices), adaptive, lp, unpool, fold/unfold.

Max pooling is one primitive (a strided window view and an argmax; its
gradient scatters through the saved indices).  Average pooling is a
depthwise convolution with a ones kernel divided by torch's per-window divisor,
so its gradients come from the convolution ops.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_RESULT, OpDef, call, quantized_error
from .._ops import conv as conv_ops
from .._ops import quantized_ops
from .._ops._api import not_implemented
from .._ops._shapes import in_suggested_layout, suggested_order
from .._tensor import Tensor
from ._functional_conv import _tuple

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
    "unfold", "fold", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
]


def _pool_out(size, kernel, stride, pad, dilation, ceil_mode):
    numerator = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (-(-numerator // stride) if ceil_mode else numerator // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _batched(input: Tensor, dims: int, name: str):
    if input.ndim == dims + 1:
        return input.unsqueeze(0), True
    if input.ndim != dims + 2:
        raise RuntimeError(f"{name}: Expected {dims + 1}D or {dims + 2}D input, but got {input.ndim}D")
    return input, False


def keep_suggested_layout(result: Tensor, input: Tensor) -> Tensor:
    """`result` (a composition's NCHW-contiguous output) made channels-last when `input` suggests channels-last, as
    torch's CPU avg_pool2d, adaptive pool2d and upsample kernels return (torch's suggest_memory_format()); a
    channels_last model keeps channels_last activations through them."""
    array = input._data
    if result.ndim != input.ndim or not hasattr(array, "strides") or suggested_order(array) is None:
        return result
    from .. import channels_last, channels_last_3d

    return result.contiguous(memory_format=channels_last if result.ndim == 4 else channels_last_3d)


def _check_geometry(name: str, kernel, stride, padding, dilation=None) -> None:
    """torch's argument checks for max/avg pooling: max_pool1d's own messages, the shared pool_shape_check ones
    for the rest (avg_pool1d runs as a 2-D pool with a height-1 kernel)."""
    if name == "max_pool1d":
        for what, value, low in (("kernel_size", kernel[0], 1), ("stride", stride[0], 1),
                                 ("padding", padding[0], 0), ("dilation", dilation[0], 1)):
            if value < low:
                need = "be non-negative" if low == 0 else "be greater than zero"
                raise RuntimeError(f"max_pool1d() {what} must {need}, but got {value}")
        return
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    if len(kernel) == 1:
        kernel, stride, dilation = (1,) + tuple(kernel), (1,) + tuple(stride), None
    axes = "TWH"[:1] + "HW" if len(kernel) == 3 else "HW"
    for what, prefix, values in (("kernel size", "k", kernel), ("stride", "d", stride),
                                 ("dilation", "dilation", dilation)):
        if values is not None and min(values) <= 0:
            listing = " ".join(f"{prefix}{axis}: {v}" for axis, v in zip(axes, values))
            raise RuntimeError(f"{what} should be greater than zero, but got {listing}")


def _max_pool_impl(xp, x, kernel, stride, padding, dilation, out):
    dims = len(kernel)
    spatial = x.shape[2:]
    pad_right = [max((out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - spatial[i] - padding[i], 0)
                 for i in range(dims)]
    floating = x.dtype.kind in "fV"  # (ml_dtypes' bfloat16 is a NumPy 'V' kind: -inf fills it, not iinfo)
    fill = -np.inf if floating else np.iinfo(x.dtype).min
    pads = ((0, 0), (0, 0)) + tuple((padding[i], pad_right[i]) for i in range(dims))
    shape = x.shape[:2] + tuple(out) + tuple(kernel)

    def windows(array):
        """(N, C, *out, kernel-flattened) windows of the padded array, as a strided view."""
        padded = xp.pad(array, pads, constant_values=fill if array is x else False)
        strides = padded.strides
        window_strides = strides[:2] + tuple(strides[2 + i] * stride[i] for i in range(dims)) + tuple(
            strides[2 + i] * dilation[i] for i in range(dims))
        view = np.lib.stride_tricks.as_strided(padded, shape, window_strides, writeable=False)
        return view.reshape(shape[: 2 + dims] + (-1,))

    flat = windows(x)
    if floating:
        nan = xp.isnan(flat)
        arg = xp.where(nan.any(-1), nan.argmax(-1), flat.argmax(-1))
    else:
        arg = flat.argmax(-1)
    values = xp.take_along_axis(flat, arg[..., None], -1)[..., 0]
    if (values == fill).any():  # the fill value is the window's max: torch keeps its first in-bounds element
        first_valid = windows(xp.ones(x.shape, bool)).argmax(-1)
        arg = xp.where(values == fill, first_valid, arg)
    # position of the chosen element in the unpadded input, flattened over the spatial dims (torch's indices)
    offsets = np.unravel_index(arg, tuple(kernel))
    index = xp.zeros(arg.shape, np.int64)
    for i in range(dims):
        grid_shape = [1] * arg.ndim
        grid_shape[2 + i] = out[i]
        start = (xp.arange(out[i]) * stride[i] - padding[i]).reshape(grid_shape)
        coordinate = start + offsets[i] * dilation[i]
        index = index * spatial[i] + coordinate
    return values, index


def _max_pool_backward(ctx, grads):
    g, _ = grads
    _, indices = ctx.result
    shape = ctx.input_meta[0][0]
    n, c = shape[:2]
    flat = g.new_zeros((n, c, math.prod(shape[2:])))
    flat = flat.scatter_add(2, indices.reshape(n, c, -1), g.reshape(n, c, -1))
    return flat.reshape(shape)


def _max_pool_rule(args, params):
    return None, (args[0]._dtype, dt.int64)


def _max_pool_meta(args, params):
    shape = tuple(args[0].shape[:2]) + tuple(params["out"])
    return shape, shape


def _max_pool_op_impl(xp, x, kernel, stride, padding, dilation, out):
    values, index = _max_pool_impl(xp, x, kernel, stride, padding, dilation, out)
    return in_suggested_layout(xp, values, x), in_suggested_layout(xp, index, x)


MAX_POOL = OpDef("max_pool", _max_pool_op_impl, _max_pool_backward, dtype_rule=_max_pool_rule, saves=SAVE_RESULT,
                 outputs=2, upcast_half=False, meta=_max_pool_meta, grad_name="MaxPool2DWithIndicesBackward0")
MAX_POOL.quantized = quantized_ops.max_pool  # the same windows over the integers (NOTE [ Quantized dtypes ])


def _max_pool(dims, name, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    kernel = _tuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, dims, "stride")
    padding = _tuple(padding, dims, "padding")
    dilation = _tuple(dilation, dims, "dilation")
    _check_geometry(name, kernel, stride, padding, dilation)
    x, unbatched = _batched(input, dims, name)
    if return_indices and input._qparams is not None:
        raise quantized_error(f"aten::max_pool{dims}d_with_indices.out")
    for i in range(dims):
        if padding[i] > kernel[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={padding[i]}, "
                               f"kernel_size={kernel[i]} and dilation={dilation[i]}")
    out = tuple(_pool_out(x.shape[2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode)
                for i in range(dims))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(str(s) for s in x.shape[1:])}). Calculated output size: "
                           f"({'x'.join(str(s) for s in (x.shape[1],) + out)}). Output size is too small")
    values, indices = call(MAX_POOL, (x,), {"kernel": kernel, "stride": stride, "padding": padding,
                                             "dilation": dilation, "out": out})
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


# the *_with_indices forms always return (values, indices); return_indices is accepted and ignored, as in torch
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_divisor(spatial, kernel, stride, padding, out, count_include_pad):
    """torch's per-window divisor, as an array over output positions (outer product of per-dim counts)."""
    divisor = np.ones((), np.float64)
    for i in range(len(kernel)):
        starts = np.arange(out[i]) * stride[i] - padding[i]
        ends = np.minimum(starts + kernel[i], spatial[i] + padding[i])
        size_with_pad = ends - starts
        clipped = np.minimum(ends, spatial[i]) - np.maximum(starts, 0)
        count = size_with_pad if count_include_pad else clipped
        divisor = np.multiply.outer(divisor, count)
    return divisor


def _avg_pool(dims, name, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    kernel = _tuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, dims, "stride")
    padding = _tuple(padding, dims, "padding")
    if name != "lp_pool":
        _check_geometry(name, kernel, stride, padding)
    x, unbatched = _batched(input, dims, name)
    for i in range(dims):
        if padding[i] > kernel[i] // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={padding[i]}, "
                               f"kernel_size={kernel[i]} and dilation=1")
    spatial = tuple(x.shape[2:])
    out = tuple(_pool_out(spatial[i], kernel[i], stride[i], padding[i], 1, ceil_mode) for i in range(dims))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size: ({'x'.join(str(s) for s in x.shape[1:])}). Calculated output size: "
                           f"({'x'.join(str(s) for s in (x.shape[1],) + out)}). Output size is too small")
    if input._qparams is not None:  # torch's quantized kernel, not the decomposition: it rounds its own way
        return _quantized_avg_pool(dims, input, kernel, stride, padding, ceil_mode, count_include_pad,
                                   divisor_override, out)
    if x.dtype is dt.int64:  # torch averages int64 too: the sum divided with C++'s truncating division
        result = _avg_pool(dims, name, x.double(), kernel, stride, padding, ceil_mode, count_include_pad,
                           divisor_override).trunc().long()
        return result.squeeze(0) if unbatched else result
    _floating_only(x, "avg_pool3d" if dims == 3 else "avg_pool2d")
    n, c = x.shape[:2]
    pairs = tuple((padding[i], max((out[i] - 1) * stride[i] + kernel[i] - spatial[i] - padding[i], 0))
                  for i in range(dims))
    ones = x.new_ones((1, 1) + kernel)
    geometry = {"stride": stride, "padding": pairs, "dilation": (1,) * dims, "groups": 1}
    summed = conv_ops.conv(x.reshape((n * c, 1) + spatial), ones, None, geometry).reshape((n, c) + out)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if divisor_override:
        result = summed / divisor_override
    else:
        divisor = _avg_divisor(spatial, kernel, stride, padding, out, count_include_pad)
        result = summed / x.new_tensor(divisor.astype(np.float64)).to(x.dtype)
    if dims == 2:
        result = keep_suggested_layout(result, x)
    return result.squeeze(0) if unbatched else result


def _quantized_avg_pool(dims, input, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
                        out):
    """avg_pool1d/2d of a quantized tensor: quantized_ops.avg_pool2d; 1-d pools as torch's avg_pool1d, a 2-d
    pool over input.unsqueeze(-2) with 1-high windows."""
    if dims == 2:
        return quantized_ops.avg_pool2d(input, kernel, stride, padding, ceil_mode, count_include_pad,
                                        divisor_override, out)
    if dims == 1:
        pooled = quantized_ops.avg_pool2d(input.unsqueeze(-2), (1,) + kernel, (1,) + stride, (0,) + padding,
                                          ceil_mode, count_include_pad, divisor_override, (1,) + out)
        return pooled.squeeze(-2)
    raise NotImplementedError("ember has no quantized avg_pool3d")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(1, "avg_pool1d", input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(2, "avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(3, "avg_pool3d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _floating_only(x, kernel: str) -> None:
    """torch's CPU pooling kernels are dispatched for floating types only (avg_pool also for int64)."""
    if not x.is_floating_point():
        raise not_implemented(kernel, x.dtype)


def _nonempty(x, name: str) -> None:
    for dim in range(1, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {dim} being empty")


def _adaptive_bounds(size, out):
    return [(math.floor(i * size / out), math.ceil((i + 1) * size / out)) for i in range(out)]


def _adaptive(dims, input, output_size, reduce_window, name):
    x, unbatched = _batched(input, dims, name)
    spatial = tuple(x.shape[2:])
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != dims:
            raise RuntimeError(f"{name}: output_size must be {dims}")
        if dims == 1 and output_size[0] is None:
            raise TypeError(f"{name}(): argument 'output_size' (position 2) must be tuple of ints, but found element "
                            "of type NoneType at pos 0")
    output_size = _tuple(output_size, dims, "output_size") if not isinstance(output_size, (tuple, list)) else tuple(
        spatial[i] if output_size[i] is None else output_size[i] for i in range(dims))
    return x, unbatched, spatial, output_size


def _adaptive_avg(dims, input, output_size, name):
    x, unbatched, spatial, out = _adaptive(dims, input, output_size, None, name)
    if input._qparams is not None:  # torch's quantized kernel (1-d: a 2-d pool over input.unsqueeze(-2))
        if dims == 2:
            return quantized_ops.adaptive_avg_pool2d(input, out)
        if dims == 1:
            return quantized_ops.adaptive_avg_pool2d(input.unsqueeze(-2), (1,) + out).squeeze(-2)
        raise NotImplementedError("ember has no quantized adaptive_avg_pool3d")
    if all(o == 1 for o in out):  # global pooling: a mean, as ATen does (no window machinery, no kernel of ones)
        result = x.mean(tuple(range(2, 2 + dims)), keepdim=True)
        return result.squeeze(0) if unbatched else result
    kernel_name = "adaptive_avg_pool3d" if dims == 3 else "adaptive_avg_pool2d"
    _floating_only(x, kernel_name)
    _nonempty(x, kernel_name)
    if 0 in out:
        result = x.new_zeros(tuple(x.shape[:2]) + tuple(out))
    elif all(spatial[i] % out[i] == 0 for i in range(dims)):
        kernel = tuple(spatial[i] // out[i] for i in range(dims))
        result = _avg_pool(dims, name, x, kernel, kernel, 0, False, True, None)
    else:
        result = _adaptive_loop(x, spatial, out, lambda window: window.mean(tuple(range(2, 2 + dims))))
    if dims == 2:  # (torch's adaptive_avg_pool3d returns contiguous output)
        result = keep_suggested_layout(result, x)
    return result.squeeze(0) if unbatched else result


def _adaptive_loop(x, spatial, out, reduce):
    from .. import stack

    dims = len(out)
    bounds = [_adaptive_bounds(spatial[i], out[i]) for i in range(dims)]
    values = []
    for position in np.ndindex(*out):
        key = (slice(None), slice(None)) + tuple(slice(*bounds[i][position[i]]) for i in range(dims))
        values.append(reduce(x[key]))
    return stack(values, -1).reshape(tuple(x.shape[:2]) + tuple(out))


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(1, input, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(2, input, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(3, input, output_size, "adaptive_avg_pool3d")


def _adaptive_max(dims, input, output_size, return_indices, name):
    x, unbatched, spatial, out = _adaptive(dims, input, output_size, None, name)
    kernel = "adaptive_max_pool3d" if dims == 3 else "adaptive_max_pool2d"
    _floating_only(x, kernel)
    _nonempty(x, kernel)
    n, c = x.shape[:2]
    if 0 in out or n == 0:
        values, indices = x.new_zeros((n, c) + tuple(out)), x.new_zeros((n, c) + tuple(out), dtype=dt.int64)
        if unbatched:
            values, indices = values.squeeze(0), indices.squeeze(0)
        return (values, indices) if return_indices else values
    bounds = [_adaptive_bounds(spatial[i], out[i]) for i in range(dims)]
    flat = x.reshape(n, c, -1)
    index_rows = []
    for position in np.ndindex(*out):
        ranges = [np.arange(*bounds[i][position[i]]) for i in range(dims)]
        grid = np.stack(np.meshgrid(*ranges, indexing="ij"), 0).reshape(dims, -1)
        index_rows.append(np.ravel_multi_index(tuple(grid), spatial))
    width = max(len(r) for r in index_rows)
    padded = np.stack([np.pad(r, (0, width - len(r)), mode="edge") for r in index_rows])  # (P, W)
    candidates = x.new_tensor(padded, dtype=dt.int64)
    gathered = flat[:, :, candidates.reshape(-1)].reshape(n, c, len(index_rows), width)
    values, arg = gathered.max(-1)
    indices = candidates.unsqueeze(0).unsqueeze(0).expand(n, c, -1, -1).gather(3, arg.unsqueeze(-1)).squeeze(-1)
    values = values.reshape((n, c) + tuple(out))
    indices = indices.reshape((n, c) + tuple(out))
    if dims == 2:  # (torch's adaptive_max_pool3d returns contiguous output)
        values, indices = keep_suggested_layout(values, x), keep_suggested_layout(indices, x)
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(1, input, output_size, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size, return_indices, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(3, input, output_size, return_indices, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(1, input, output_size, True, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(2, input, output_size, True, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max(3, input, output_size, True, "adaptive_max_pool3d")


def _lp_pool(dims, input, norm_type, kernel_size, stride, ceil_mode):
    kernel = _tuple(kernel_size, dims, "kernel_size")
    if norm_type in (math.inf, -math.inf):  # torch: the max (or min) of |x| over each window
        sign = 1 if norm_type > 0 else -1
        pooled = _max_pool(dims, f"max_pool{dims}d", sign * input.abs(), kernel, stride, 0, 1, ceil_mode, False)
        return sign * pooled
    pooled = _avg_pool(dims, "lp_pool", input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    sign = pooled.sign()
    from .functional import relu

    return (sign * relu(pooled.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


def _unpool_output_size(x, kernel, stride, padding, output_size) -> tuple:
    """torch's _unpool_output_size: the default size, or a given one (with or without N, C) within one stride."""
    dims = len(kernel)
    default = [(x.shape[2 + i] - 1) * stride[i] + kernel[i] - 2 * padding[i] for i in range(dims)]
    if output_size is None:
        return tuple(default)
    output_size = list(output_size)
    if len(output_size) == dims + 2:
        output_size = output_size[2:]
    if len(output_size) != dims:
        raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for i in range(dims):
        low, high = default[i] - stride[i], default[i] + stride[i]
        if not low < output_size[i] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between {low} and {high})')
    return tuple(int(v) for v in output_size)


def _max_unpool(dims, input, indices, kernel_size, stride, padding, output_size):
    kernel = _tuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, dims, "stride")
    padding = _tuple(padding, dims, "padding")
    x, unbatched = _batched(input, dims, "max_unpool")
    if unbatched:
        indices = indices.unsqueeze(0)
    spatial = _unpool_output_size(x, kernel, stride, padding, output_size)
    n, c = x.shape[:2]
    size = math.prod(spatial)
    invalid = ((indices < 0) | (indices >= size)).reshape(-1)
    if invalid.any():  # torch names the first one it meets
        raise RuntimeError(f"Found an invalid max index: {int(indices.reshape(-1)[invalid][0])} (output volumes "
                           f"are of size {'x'.join(str(v) for v in spatial)})")
    flat = x.new_zeros((n, c, size))
    flat = flat.scatter(2, indices.reshape(n, c, -1), x.reshape(n, c, -1))
    result = flat.reshape((n, c) + spatial)
    return result.squeeze(0) if unbatched else result


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


def _check_im2col_dtype(input: Tensor, kernel: str) -> None:
    """torch's im2col/col2im kernels take floating, complex and bool tensors, not integer ones."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex or input.dtype == dt.bool_):
        raise not_implemented(kernel, input.dtype)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col: (N, C, H, W) -> (N, C * kh * kw, L), as a convolution with one-hot kernels (differentiable)."""
    kernel = _tuple(kernel_size, 2, "kernel_size")
    if input.ndim < 3:  # torch's im2col reads size(ndim - 3 + 2) before checking the rank
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], but "
                         f"got {input.ndim})")
    if input.ndim not in (3, 4) or 0 in input.shape[input.ndim - 3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_im2col_dtype(input, "im2col_out_cpu")
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)
    n, c = x.shape[:2]
    k = math.prod(kernel)
    eye = np.eye(k).reshape((k, 1) + kernel)
    weight = x.new_tensor(eye)
    geometry = {"stride": _tuple(stride, 2, "stride"), "padding": tuple((p, p) for p in _tuple(padding, 2, "padding")),
                "dilation": _tuple(dilation, 2, "dilation"), "groups": 1}
    spatial = tuple(x.shape[2:])
    blocks = tuple((spatial[i] + 2 * geometry["padding"][i][0] - geometry["dilation"][i] * (kernel[i] - 1) - 1)
                   // geometry["stride"][i] + 1 for i in range(2))
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {spatial}, kernel_size={kernel}, dilation="
                           f"{geometry['dilation']}, padding={tuple(p for p, _ in geometry['padding'])}, calculated "
                           f"shape of the array of sliding blocks as {blocks}, but its components must be at least "
                           "one.")
    cols = conv_ops.conv(x.reshape((n * c, 1) + spatial), weight, None, geometry)
    result = cols.reshape(n, c * k, blocks[0] * blocks[1])
    return result.squeeze(0) if unbatched else result


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im: the adjoint of unfold, summing overlapping values."""
    kernel = _tuple(kernel_size, 2, "kernel_size")
    output_size = _tuple(output_size, 2, "output_size")
    if input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_im2col_dtype(input, "col2im_out_cpu")
    x, unbatched = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    n = x.shape[0]
    k = math.prod(kernel)
    if x.shape[1] % k:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={x.shape[1]} and kernel_size={kernel}.")
    c = x.shape[1] // k
    geometry = {"stride": _tuple(stride, 2, "stride"), "padding": tuple((p, p) for p in _tuple(padding, 2, "padding")),
                "dilation": _tuple(dilation, 2, "dilation"), "groups": 1}
    out = [(output_size[i] + 2 * geometry["padding"][i][0] - geometry["dilation"][i] * (kernel[i] - 1) - 1)
           // geometry["stride"][i] + 1 for i in range(2)]
    if x.shape[2] != out[0] * out[1]:
        block_dim = 1 if unbatched else 2
        raise RuntimeError(
            f"Given output_size={output_size}, kernel_size={kernel}, dilation={geometry['dilation']}, "
            f"padding={tuple(p for p, _ in geometry['padding'])}, stride={geometry['stride']}, expected size of "
            f"input's dimension {block_dim} to match the calculated number of sliding blocks {out[0]} * {out[1]} = "
            f"{out[0] * out[1]}, but got input.size({block_dim})={x.shape[2]}.")
    weight = x.new_tensor(np.eye(k).reshape((k, 1) + kernel))
    cols = x.reshape(n, c, k, out[0], out[1]).reshape(n * c, k, out[0], out[1])
    result = conv_ops.conv_input_grad(cols, weight, (n * c, 1) + output_size, geometry).reshape((n, c) + output_size)
    return result.squeeze(0) if unbatched else result
