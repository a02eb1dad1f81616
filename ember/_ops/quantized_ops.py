"""torch's QuantizedCPU kernels for ordinary ops, and the `quantized::` ops behind QFunctional.

Two kinds live here:
- kernels for registry ops that torch runs on per-tensor quantized tensors (relu, hardtanh, clamp, max pooling,
  cat, the comparisons).  Each is an OpDef's `quantized` entry, a function (op, args, params) -> result that
  dispatch calls when an operand is quantized (NOTE [ Quantized dtypes ] in ember/_dtype.py); the table at the
  bottom of this file sets them;
- functions called directly: average pooling (nn.functional's decompositions do not hold for quantized tensors,
  so its avg_pool / adaptive_avg_pool call these), and quantized add / add_relu / mul / add_scalar / mul_scalar /
  cat / matmul / batch_norm2d with output parameters (torch.ops.quantized.*, used by
  ember.ao.nn.quantized.QFunctional and BatchNorm2d).
The integers follow torch 2.13's x86 kernels bit for bit: NOTE [ QuantizedCPU vector and scalar paths ] in
ember/_ops/quantized_numerics.py says which formula each element gets.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import SCALAR_NAMES, Tensor
from . import comparison, movement, nn_ops, ternary
from . import quantized_numerics as qn
from .quantized import (
    QParams,
    _dequantize_array,
    _dequantized_values,
    _expect_scheme,
    _make_quantized,
    _quantize_array,
    per_tensor_affine,
)


def _per_tensor(tensor: Tensor) -> QParams:
    """The tensor's per-tensor parameters; torch's assertion for a per-channel tensor."""
    qparams = tensor._qparams
    _expect_scheme(qparams, per_channel=False)
    return qparams


def _result(integers: np.ndarray, like: Tensor, scale: float | None = None, zero_point: int | None = None) -> Tensor:
    """A quantized tensor of `like`'s dtype with the given (default: `like`'s) per-tensor parameters."""
    qparams = like._qparams
    scale = qparams.scale if scale is None else float(scale)
    zero_point = qparams.zero_point if zero_point is None else int(zero_point)
    return _make_quantized(integers, like._dtype, QParams(per_tensor_affine, scale, zero_point))


def _quantized_name(dtype: dt.dtype) -> str:
    return SCALAR_NAMES.get(dtype.name, dtype.name)


def _not_quantized_error(op_name: str) -> NotImplementedError:
    """torch's error for a float tensor given to a quantized:: op."""
    return NotImplementedError(
        f"Could not run '{op_name}' with arguments from the 'CPU' backend. This could be because the operator "
        "doesn't exist for this backend, or was omitted during the selective/custom build process (if using "
        "custom build).")


# ---------------------------------------------------------------- kernels of registry ops


def relu(op, args: tuple, params: dict) -> Tensor:
    """torch.relu on QuantizedCPU: max(q, zero_point), same parameters and layout."""
    (input,) = args
    zero_point = _per_tensor(input).zero_point
    integers = np.maximum(input._data, np.asarray(zero_point).astype(input._data.dtype))
    return _result(integers, input)


def _clamped(input: Tensor, low: float | None, high: float | None) -> Tensor:
    """qclamp_kernel: the bounds quantized with quantize_val, the integers clamped between them."""
    qparams = _per_tensor(input)
    integers = input._data
    if low is not None:
        bound = qn.quantize_scalar(np.float32(low), qparams.scale, qparams.zero_point, input._dtype)
        integers = np.maximum(integers, bound)
    if high is not None:
        bound = qn.quantize_scalar(np.float32(high), qparams.scale, qparams.zero_point, input._dtype)
        integers = np.minimum(integers, bound)
    if integers is input._data:
        integers = integers.copy(order="K")
    return _result(integers, input)


def hardtanh(op, args: tuple, params: dict) -> Tensor:
    """F.hardtanh / relu6 on QuantizedCPU (torch's quantized clamp)."""
    return _clamped(args[0], params["min_val"], params["max_val"])


def clamp(op, args: tuple, params: dict) -> Tensor:
    """torch.clamp with number bounds on QuantizedCPU; tensor bounds fail in type promotion, as in torch."""
    input, low, high = args
    for bound in (low, high):
        if isinstance(bound, Tensor):
            raise RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out what the "
                               f"correct rules should be, offending types: {_quantized_name(input._dtype)} "
                               f"{_quantized_name(bound._dtype)}")
    return _clamped(input, low, high)


def max_pool(op, args: tuple, params: dict) -> tuple:
    """Max pooling on QuantizedCPU: the float kernel on the integers (max commutes with the monotone
    dequantization), same parameters; channels-last in, channels-last out.  The indices are returned for the
    op's shape but torch refuses return_indices=True on quantized tensors (nn.functional checks that)."""
    (input,) = args
    _per_tensor(input)
    values, indices = op.impl(np, input._data, **params)
    values = qn.in_layout_of(values, input._data)
    return _result(values, input), Tensor._make(indices, dt.int64)


def dequantized(op, args: tuple, params: dict):
    """Comparisons on QuantizedCPU: torch dequantizes the quantized operands and compares the floats."""
    from .._dispatch import call

    floats = tuple(Tensor._make(_dequantized_values(a), dt.float32) if isinstance(a, Tensor) and
                   a._qparams is not None else a for a in args)
    return call(op, floats, params)


def cat(op, args: tuple, params: dict) -> Tensor:
    """torch.cat of quantized tensors: the result takes the first tensor's scale and zero point; tensors with
    other parameters are requantized to them (cat_quantized_cpu)."""
    first = args[0]
    if first._qparams is None or first._qparams.axis is not None:
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    if not all(_shares_qparams(first, t) for t in args[1:]):
        warnings.warn("All inputs of this cat operator must share the same quantization parameters. Otherwise "
                      "large numerical inaccuracies may occur.", UserWarning, stacklevel=5)
    return quantized_cat(list(args), first._qparams.scale, first._qparams.zero_point, params["dim"])


def _shares_qparams(first: Tensor, other: Tensor) -> bool:
    """torch's all_inputs_sharing_qparams for per-tensor tensors: the same dtype and zero point, scales within
    1e-4."""
    qparams = other._qparams
    return (qparams is not None and qparams.axis is None and other._dtype is first._dtype
            and abs(qparams.scale - first._qparams.scale) < 1e-4 and qparams.zero_point == first._qparams.zero_point)


def stack(op, args: tuple, params: dict) -> Tensor:
    """torch.stack of quantized tensors: each unsqueezed at `dim`, concatenated (torch's cat kernel) into a
    contiguous result."""
    dim = params["dim"]
    joined = cat(None, tuple(a.unsqueeze(dim) for a in args), {"dim": dim})
    return _result(np.ascontiguousarray(joined._data), joined)


# ---------------------------------------------------------------- quantized cat


def quantized_cat(tensors: list, scale: float, zero_point: int, dim: int = 0) -> Tensor:
    """torch.ops.quantized.cat(qxs, scale, zero_point, dim): concatenation requantized to (scale, zero_point).

    Channels-last 4-d tensors joined along dim 1 take torch's NHWC kernel (tensors whose parameters already
    match are copied, others requantized channel by channel, vector and scalar channels rounding differently);
    anything else is dequantized, concatenated and quantized again, as torch does."""
    first = tensors[0]
    if first._qparams is None or first._qparams.axis is not None:
        raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    arrays = [t._data for t in tensors]
    if dim == 1 and all(qn.is_channels_last(a) for a in arrays):
        return _cat_channels_last(tensors, float(scale), int(zero_point))
    for t in tensors:
        if t._qparams is None or t._dtype is not first._dtype:
            raise RuntimeError("All dtypes must be the same.")
        if (t._qparams.axis is None) != (first._qparams.axis is None):
            raise RuntimeError("Quantization schemes must be the same.")
    floats = [_dequantize_array(t._data, t._qparams.scale, t._qparams.zero_point) for t in tensors]
    joined = np.concatenate([f for f in floats if not (f.ndim == 1 and f.shape[0] == 0)] or floats[:1], axis=dim)
    if all(a.ndim == 4 and qn.suggests_channels_last(a) for a in arrays):
        joined = qn.to_channels_last(joined)  # at::cat keeps a layout all its inputs share
    integers = _quantize_array(joined, float(scale), int(zero_point), first._dtype, fused=True)
    return _result(integers, first, scale, zero_point)


def _cat_channels_last(tensors: list, scale: float, zero_point: int) -> Tensor:
    """qcat_nhwc_kernel: per input, a copy when its parameters are the output's, else dequantize and quantize
    (vector channels: the build's Vectorized dequantize / quantize; scalar channels: torch's scalar forms).

    Its vector loops take Vectorized<T>::size() channels, then whole Vectorized<float>::size() groups of the rest
    (it has no AVX512 build): the first multiple of `float_lanes` channels are vector."""
    first = tensors[0]
    path = qn.vector_path()
    inverse = np.float32(1.0 / scale)  # static_cast<float>(1.0 / scale): the division in double
    parts = []
    for t in tensors:
        if t._dtype is not first._dtype:
            raise RuntimeError(f"Expected object of scalar type {_quantized_name(first._dtype)} but got scalar "
                               f"type {_quantized_name(t._dtype)}")
        qparams = _per_tensor(t)
        if qparams.scale == scale and qparams.zero_point == zero_point:
            parts.append(t._data)
            continue
        vector = path.quantize(path.dequantize(t._data, qparams.scale, qparams.zero_point), scale, inverse,
                               zero_point, t._dtype)
        scalar = qn.quantize_scalar(qn.dequantize_scalar(t._data, qparams.scale, qparams.zero_point), scale,
                                    zero_point, t._dtype)
        parts.append(np.where(qn.channel_vector_mask(t.shape[1], path.float_lanes), vector, scalar))
    integers = qn.to_channels_last(np.concatenate(parts, axis=1))
    return _result(integers, first, scale, zero_point)


# ---------------------------------------------------------------- average pooling


def _window_sums(integers: np.ndarray, starts: list, ends: list) -> np.ndarray:
    """Sums of the integers over rectangular windows, exactly (int64), through an integral image:
    (N, C, H, W) with per-output-row/column [start, end) bounds -> (N, C, OH, OW)."""
    integral = np.zeros(integers.shape[:2] + (integers.shape[2] + 1, integers.shape[3] + 1), dtype=np.int64)
    integral[:, :, 1:, 1:] = integers.astype(np.int64).cumsum(2).cumsum(3)
    h0, h1 = (np.asarray(v)[:, None] for v in (starts[0], ends[0]))
    w0, w1 = (np.asarray(v)[None, :] for v in (starts[1], ends[1]))
    sums = integral[:, :, h1, w1] - integral[:, :, h0, w1] - integral[:, :, h1, w0] + integral[:, :, h0, w0]
    return np.ascontiguousarray(sums)  # (fancy indexing leaves the window axes outermost in memory)


def _pool_windows(size: int, kernel: int, stride: int, padding: int, out: int) -> tuple:
    """Per output index: clipped [start, end) and the padded window length (torch's avg_pool2d loops)."""
    starts = np.arange(out) * stride - padding
    ends = np.minimum(starts + kernel, size + padding)
    padded = ends - starts
    return np.maximum(starts, 0), np.minimum(ends, size), padded


def _as_batched(input: Tensor) -> tuple[np.ndarray, bool]:
    """torch's quantized pools take (C, H, W) or (N, C, H, W); the 3-d form is one batch and never
    channels-last."""
    if input.ndim == 3:
        return input._data[None], True
    if input.ndim != 4:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor for input, got {input.ndim}D")
    return input._data, False


def avg_pool2d(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, ceil_mode: bool,
               count_include_pad: bool, divisor_override: int | None, out_size: tuple) -> Tensor:
    """F.avg_pool2d on QuantizedCPU (q_avg_pool2d): same scale and zero point as the input.

    The window sum minus size * zero_point is scaled by 1/divisor; a contiguous input adds the zero point in
    float32 before rounding, a channels-last input after (vector channels) or before (scalar channels):
    the two layouts round ties differently, as in torch.  The channels-last kernel is the one QuantizedCPU kernel
    with an AVX512 build (16 vector channels there, 8 on AVX2, none on DEFAULT)."""
    qparams = _per_tensor(input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    integers, unbatched = _as_batched(input)
    channels_last = not unbatched and qn.is_channels_last(integers)
    height = _pool_windows(integers.shape[2], kernel[0], stride[0], padding[0], out_size[0])
    width = _pool_windows(integers.shape[3], kernel[1], stride[1], padding[1], out_size[1])
    sums = _window_sums(integers, [height[0], width[0]], [height[1], width[1]])
    size = np.outer(height[1] - height[0], width[1] - width[0])
    if divisor_override:
        divisor = np.full(size.shape, divisor_override)
    else:
        divisor = np.outer(height[2], width[2]) if count_include_pad else size
    zero_point = qparams.zero_point
    shifted = (sums - size * zero_point).astype(np.float32)
    multiplier = (np.float32(1.0) / divisor.astype(np.float32)).astype(np.float32)
    if channels_last:
        vector = qn.quantize_vector(shifted, multiplier, zero_point, input._dtype)
        scalar = qn.quantize_scalar(shifted, np.float32(1.0) / multiplier, zero_point, input._dtype)
        lanes = qn.channel_vector_mask(integers.shape[1], qn.vector_path(avx512_build=True).pool_channel_lanes())
        result = qn.in_layout_of(np.where(lanes, vector, scalar), integers)
    else:
        scaled = (shifted * multiplier).astype(np.float32) + np.float32(zero_point)
        result = qn.clamp_to(np.rint(scaled.astype(np.float32)), input._dtype)
    return _result(result[0] if unbatched else result, input)


def _adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """torch's quantized start_index / end_index: floor and ceil of float32 quotients."""
    index = np.arange(out)
    starts = np.floor((index * size).astype(np.float32) / np.float32(out)).astype(np.int64)
    ends = np.ceil(((index + 1) * size).astype(np.float32) / np.float32(out)).astype(np.int64)
    return starts, ends


def adaptive_avg_pool2d(input: Tensor, output_size: tuple) -> Tensor:
    """F.adaptive_avg_pool2d on QuantizedCPU: same scale and zero point as the input.

    Contiguous input: rint(float32(sum of q) * float32(1/kH/kW)), the zero point never subtracted; channels-last
    input: the sum minus size * zero_point requantized by 1/size, vector channels (8 on AVX2 and AVX512, none on
    DEFAULT) with quantize_vec, scalar channels with quantize_val."""
    qparams = _per_tensor(input)
    integers, unbatched = _as_batched(input)
    for dim in range(1, integers.ndim):
        if integers.shape[dim] == 0:
            raise RuntimeError(f"adaptive_avg_pooling2d(): expected input to have non-empty spatial dimensions, "
                               f"but input has sizes {list(input.shape)} with dimension {dim} being empty")
    height = _adaptive_bounds(integers.shape[2], output_size[0])
    width = _adaptive_bounds(integers.shape[3], output_size[1])
    sums = _window_sums(integers, [height[0], width[0]], [height[1], width[1]])
    kernel_h = (height[1] - height[0]).astype(np.float32)
    kernel_w = (width[1] - width[0]).astype(np.float32)
    if not unbatched and qn.is_channels_last(integers):
        size = np.outer(height[1] - height[0], width[1] - width[0])
        multiplier = (np.float32(1.0) / size.astype(np.float32)).astype(np.float32)
        scale = (np.float32(1.0) / multiplier).astype(np.float32)  # quantize_vec / quantize_val(1.0f / multiplier)
        shifted = (sums - size * qparams.zero_point).astype(np.float32)
        vector = qn.quantize_vec(shifted, scale, qparams.zero_point, input._dtype)
        scalar = qn.quantize_scalar(shifted, scale, qparams.zero_point, input._dtype)
        lanes = qn.channel_vector_mask(integers.shape[1], qn.vector_path().pool_channel_lanes())
        result = qn.in_layout_of(np.where(lanes, vector, scalar), integers)
    else:
        reciprocal = np.outer(np.float32(1.0) / kernel_h, np.ones_like(kernel_w)).astype(np.float32)
        reciprocal = (reciprocal / kernel_w[None, :]).astype(np.float32)
        result = np.rint((sums.astype(np.float32) * reciprocal).astype(np.float32)).astype(input._data.dtype)
    return _result(result[0] if unbatched else result, input)


# ---------------------------------------------------------------- quantized:: binary ops (QFunctional)


def _binary_inputs(qa: Tensor, qb: Tensor, op_name: str, what: str) -> tuple[QParams, QParams]:
    """torch's checks of quantized add / mul operands."""
    for operand in (qa, qb):
        if not isinstance(operand, Tensor) or operand._qparams is None:
            raise _not_quantized_error(f"quantized::{op_name}")
    if qa._qparams.axis is not None:
        raise RuntimeError(f"Only per tensor quantization is supported in {what}.")
    if qb._qparams.axis is not None:
        raise RuntimeError(f"Both inputs to {what} must have the same quantization scheme.")
    if qa._dtype is not qb._dtype:
        raise RuntimeError(f"{what} operands should have same data type.")
    return qa._qparams, qb._qparams


def _broadcast_other(qa: Tensor, qb: Tensor) -> np.ndarray:
    """qb's integers broadcast to qa's shape (torch's output takes qa's sizes)."""
    try:
        return np.broadcast_to(qb._data, qa._data.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({list(qa.shape)}) must match the size of tensor b "
                           f"({list(qb.shape)})") from None


def _output_strides(reference: np.ndarray) -> tuple:
    """Dense strides, in elements, of a result stored in `reference`'s layout."""
    if reference.ndim == 4 and qn.suggests_channels_last(reference):
        n, c, h, w = reference.shape
        return (h * w * c, 1, w * c, c)
    strides, step = [], 1
    for size in reversed(reference.shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _add(qa: Tensor, qb: Tensor, scale: float, zero_point: int, relu: bool) -> Tensor:
    """qadd_kernel: dequantize both, add in float32, (relu,) quantize to (scale, zero_point); vector elements and
    scalar elements follow their own formulas (NOTE [ QuantizedCPU vector and scalar paths ])."""
    a, b = _binary_inputs(qa, qb, "add_relu" if relu else "add", "Add")
    other = _broadcast_other(qa, qb)
    path = qn.vector_path()
    sums = []
    for dequantize in (path.dequantize, qn.dequantize_scalar):
        total = (dequantize(qa._data, a.scale, a.zero_point) + dequantize(other, b.scale, b.zero_point))
        total = total.astype(np.float32)
        sums.append(np.maximum(total, np.float32(0.0)) if relu else total)
    inverse = np.float32(1.0) / np.float32(scale)
    vector = path.quantize(sums[0], scale, inverse, zero_point, qa._dtype)
    scalar = qn.quantize_scalar(sums[1], scale, zero_point, qa._dtype)
    mask = qn.elementwise_vector_mask(tuple(qa.shape), _output_strides(qa._data),
                                      [qn.element_strides(qa._data), qn.element_strides(other)],
                                      2 * path.quantized_lanes)
    integers = qn.in_layout_of(np.where(mask, vector, scalar), qa._data)
    return _result(integers, qa, scale, zero_point)


def add(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    """torch.ops.quantized.add(qa, qb, scale, zero_point)."""
    return _add(qa, qb, float(scale), int(zero_point), relu=False)


def add_relu(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    """torch.ops.quantized.add_relu(qa, qb, scale, zero_point)."""
    return _add(qa, qb, float(scale), int(zero_point), relu=True)


def _mul(qa: Tensor, qb: Tensor, scale: float, zero_point: int, relu: bool) -> Tensor:
    """qmul_kernel: (qa - za)(qb - zb) in integers, requantized by float32(sa * sb * (1 / s)); both paths
    round before adding the zero point, so every element gets the same formula."""
    a, b = _binary_inputs(qa, qb, "mul_relu" if relu else "mul", "Mul")
    other = _broadcast_other(qa, qb)
    product = (qa._data.astype(np.int64) - a.zero_point) * (other.astype(np.int64) - b.zero_point)
    multiplier = np.float32(np.float32(a.scale) * np.float32(b.scale)) * (np.float32(1.0) / np.float32(scale))
    integers = qn.quantize_vector(product.astype(np.float32), np.float32(multiplier), zero_point, qa._dtype)
    if relu:
        integers = np.maximum(integers, np.asarray(zero_point).astype(integers.dtype))
    return _result(qn.in_layout_of(integers, qa._data), qa, scale, zero_point)


def mul(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    """torch.ops.quantized.mul(qa, qb, scale, zero_point)."""
    return _mul(qa, qb, float(scale), int(zero_point), relu=False)


def mul_relu(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    """torch.ops.quantized.mul_relu(qa, qb, scale, zero_point)."""
    return _mul(qa, qb, float(scale), int(zero_point), relu=True)


def _scalar_operand(qa: Tensor, op_name: str) -> QParams:
    if not isinstance(qa, Tensor) or qa._qparams is None:
        raise _not_quantized_error(f"quantized::{op_name}")
    if qa._qparams.axis is not None:
        raise RuntimeError("Only per tensor quantization is supported in Add.")
    return qa._qparams


def add_scalar(qa: Tensor, other: float) -> Tensor:
    """torch.ops.quantized.add_scalar(qa, c): shift the zero point by round(c / scale) when it stays in range
    (the integers are unchanged); otherwise saturate the zero point and stretch the scale, requantizing."""
    qparams = _scalar_operand(qa, "add_scalar")
    scale, zero_point = qparams.scale, qparams.zero_point
    low, high = qn._RANGES[qa._dtype.name]
    shift = int(np.rint(float(other) / scale))
    if low <= zero_point - shift <= high:
        return _result(qa._data.copy(order="K"), qa, scale, zero_point - shift)
    if low > zero_point - shift:
        new_scale = (float(high) - (zero_point - shift)) / (float(high) - low) * scale
        new_zero_point = low
    else:
        new_scale = (float(zero_point - shift) - low) / (float(high) - low) * scale
        new_zero_point = high
    multiplier = np.float32(scale) * (np.float32(1.0) / np.float32(new_scale))
    shifted = (qa._data.astype(np.int64) - zero_point + shift).astype(np.float32)
    integers = qn.quantize_vector(shifted, multiplier, new_zero_point, qa._dtype)
    return _result(qn.in_layout_of(integers, qa._data), qa, new_scale, new_zero_point)


def mul_scalar(qa: Tensor, other: float) -> Tensor:
    """torch.ops.quantized.mul_scalar(qa, c): only the parameters change (scale * c); c == 0 gives zeros with
    scale 1, a negative c mirrors the integers (q -> qmax + qmin - q) and the zero point."""
    qparams = _scalar_operand(qa, "mul_scalar")
    other = float(other)
    low, high = qn._RANGES[qa._dtype.name]
    if other > 0.0:
        return _result(qa._data.copy(order="K"), qa, other * qparams.scale, qparams.zero_point)
    if other == 0.0:
        return _result(np.zeros_like(qa._data), qa, 1.0, 0)
    mirrored = (high + low - qa._data.astype(np.int64)).astype(qa._data.dtype)
    return _result(mirrored, qa, abs(other) * qparams.scale, high - (qparams.zero_point - low))


def matmul(qa: Tensor, qb: Tensor, scale: float, zero_point: int) -> Tensor:
    """torch.ops.quantized.matmul on x86 (torch built without ruy): dequantize both, float32 matmul,
    quantize_per_tensor.  The float32 products are NumPy's, not torch's BLAS, so an output within a few ulp
    of a rounding boundary may land one integer away from torch's."""
    for operand in (qa, qb):
        if not isinstance(operand, Tensor) or operand._qparams is None:
            raise _not_quantized_error("quantized::matmul")
    if qa._dtype not in (dt.qint8, dt.quint8):
        raise RuntimeError("MatMul operands should use QInt8 or QUInt8 data types.")
    if qa._dtype is not qb._dtype:
        raise RuntimeError("MatMul operands should have same data type.")
    if qa._qparams.axis is not None:
        raise RuntimeError("Only per-tensor quantization is suported in Matmul.")
    if qb._qparams.axis is not None:
        raise RuntimeError("Both inputs to Matmul must have the same quantization scheme.")
    product = np.matmul(_dequantized_values(qa), _dequantized_values(qb)).astype(np.float32)
    integers = _quantize_array(product, float(scale), int(zero_point), qa._dtype, fused=True)
    return _result(integers, qa, scale, zero_point)


# ---------------------------------------------------------------- quantized batch norm


def _float_values(tensor: Tensor | None, channels: int, default: float) -> np.ndarray:
    if tensor is None:
        return np.full(channels, default, dtype=np.float32)
    return np.asarray(tensor._data, dtype=np.float32).reshape(channels)


def batch_norm2d(qx: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, var: Tensor, eps: float,
                 output_scale: float, output_zero_point: int, relu: bool = False) -> Tensor:
    """torch.ops.quantized.batch_norm2d (qbatch_norm.cpp): per channel
    alpha = float32(float32(w / sqrt(var + eps)) * (s_in / s_out)) and
    beta = float32((b - mean * w / sqrt(var + eps)) / s_out), then q_out = rint(alpha * (q - zp_in) + beta) + zp_out;
    the result is channels-last, as torch's.  On AVX2 / AVX512 (torch runs the AVX2 build) both loops fuse the
    multiply-add; on DEFAULT both round it twice, and the vector channels (the first multiple of 8) then add the
    zero point before rounding (quantize_vec), the others after."""
    qparams = _per_tensor(qx)
    if qx.ndim != 4:
        raise RuntimeError(f"Expecting the input tensor of rank 4, but got {qx.ndim}")
    channels = qx.shape[1]
    weights = _float_values(weight, channels, 1.0)
    biases = _float_values(bias, channels, 0.0)
    means = _float_values(mean, channels, 0.0)
    variances = _float_values(var, channels, 1.0)
    output_scale = float(output_scale)
    inverse_sigma = (1.0 / np.sqrt(variances + np.float32(eps)).astype(np.float64)).astype(np.float32)
    scaled_weight = (inverse_sigma * weights).astype(np.float32)
    alpha = (scaled_weight.astype(np.float64) * (float(qparams.scale) / output_scale)).astype(np.float32)
    shift = (biases - (means * inverse_sigma).astype(np.float32) * weights).astype(np.float32)
    beta = (shift.astype(np.float64) / output_scale).astype(np.float32)
    shape = (1, channels, 1, 1)
    alpha, beta = alpha.reshape(shape), beta.reshape(shape)
    centered = qx._data.astype(np.float64) - qparams.zero_point  # exact: Vectorized::dequantize with scale 1
    zero_point = int(output_zero_point)
    path = qn.vector_path()
    if path.intrinsics:  # vec::fmadd, and the scalar loop's a * b + c contracted to an fma by the compiler
        fused = (alpha.astype(np.float64) * centered + beta).astype(np.float32)
        integers = np.rint(fused).astype(np.float64) + zero_point
    else:
        affine = ((alpha * centered.astype(np.float32)).astype(np.float32) + beta).astype(np.float32)
        vector = qn.quantize_vec(affine, 1.0, zero_point, qx._dtype).astype(np.float64)
        scalar = np.rint(affine).astype(np.float64) + zero_point
        integers = np.where(qn.channel_vector_mask(channels, path.float_lanes), vector, scalar)
    if relu:
        integers = np.maximum(integers, zero_point)
    result = qn.to_channels_last(qn.clamp_to(integers, qx._dtype))
    return _result(result, qx, output_scale, output_zero_point)


# ---------------------------------------------------------------- the table

for _op, _kernel in (
    (nn_ops.RELU, relu),
    (nn_ops.HARDTANH, hardtanh),
    (ternary._CLAMP, clamp),
    (movement._CAT, cat),
    (movement._STACK, stack),
    *((_op, dequantized) for _op in comparison.QUANTIZED_COMPARISONS),
):
    _op.quantized = _kernel
del _op, _kernel

__all__ = ["add", "add_relu", "mul", "mul_relu", "add_scalar", "mul_scalar", "quantized_cat", "matmul",
           "avg_pool2d", "adaptive_avg_pool2d", "max_pool", "batch_norm2d"]
