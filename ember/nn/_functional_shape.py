"""nn.functional ops that move pixels: pad, interpolate/upsample, grid_sample, affine_grid, pixel/channel shuffle.

All are compositions of registry ops (indexing, gather, cat, matmul), so their
gradients come from those ops.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._tensor import Tensor
from ._functional_pool import keep_suggested_layout

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def _table(fn, *args, dtype=dt.int64, device=None) -> Tensor:
    """A host table (the source positions of padding, the indices and weights of interpolation): `fn(*args)`,
    an array computed from Python numbers alone.  Noted as a recipe, so that a graph ember.compile captures
    makes it again at each call's sizes instead of keeping one size's table (Tracer.recipes): a padded or
    upsampled conv net serves every image size with one size-generic graph."""
    from .. import _dispatch

    # (a copy that owns its memory: only such a tensor is noted as made in the call, which the recipe needs; a
    # float32 weight table is a reshaped view of fn's array)
    array = np.array(fn(*args), dtype.np_dtype)
    tensor = Tensor._make(array, dtype, device) if device is not None else Tensor._make(array, dtype)
    _dispatch.note_recipe(tensor, _table, (fn, *args), {"dtype": dtype, "device": tensor.device})
    return tensor


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (left_last, right_last, left_prev, right_prev, ...)."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    dims = len(pad) // 2
    if dims > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode == "constant":
        result = _pad_constant(input, pad, 0.0 if value is None else value)
        name_node(result, "ConstantPadNdBackward0")  # torch's one kernel, where ember writes into a new tensor
        return result
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if not (len(pad) in (2, 4, 6) and input.ndim in (dims + 1, dims + 2)):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode != "circular" and 0 in tuple(input.shape)[input.ndim - dims - 1:]:
        raise RuntimeError(f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(input.shape)}")
    result = input
    for i in range(dims):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        result = _pad_dim(result, dim, left, right, mode)
    return result


def _pad_constant(input: Tensor, pad: tuple, value) -> Tensor:
    dims = len(pad) // 2
    shape = list(input.shape)
    source = [slice(None)] * input.ndim
    target = [slice(None)] * input.ndim
    for i in range(dims):
        dim = input.ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        size = shape[dim]
        new = size + left + right
        if new < 0:  # torch narrows off each negative pad before its own size check, so narrow's error wins
            raise RuntimeError("narrow(): length must be non-negative.")
        source[dim] = slice(max(-left, 0), size - max(-right, 0))
        target[dim] = slice(max(left, 0), max(left, 0) + size - max(-left, 0) - max(-right, 0))
        shape[dim] = new
    out = input.new_full(tuple(shape), value)
    return _place(out, tuple(target), input[tuple(source)])


def _place(out: Tensor, key: tuple, values: Tensor) -> Tensor:
    """out with out[key] = values, differentiable in values (out is a fresh constant)."""
    out[key] = values
    return out


def _index_dim(input: Tensor, dim: int, index) -> Tensor:
    if not isinstance(index, Tensor):
        index = input.new_tensor(index, dtype=dt.int64)
    return input.index_select(dim, index.to(input.device))


def _pad_dim(input: Tensor, dim: int, left: int, right: int, mode: str) -> Tensor:
    size = input.shape[dim]
    if mode == "reflect" and (left >= size or right >= size):
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({left}, {right}) at dimension {dim} of input {list(input.shape)}")
    if mode == "circular" and (left > size or right > size):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    return _index_dim(input, dim, _table(_pad_positions, size, left, right, mode))


def _pad_positions(size: int, left: int, right: int, mode: str) -> np.ndarray:
    """The source position of each padded position along one dim."""
    positions = np.arange(-left, size + right)
    if mode == "reflect":
        period = 2 * (size - 1) if size > 1 else 1
        positions = np.abs(positions) % period
        positions = np.where(positions >= size, period - positions, positions)
    elif mode == "replicate":
        positions = np.clip(positions, 0, size - 1)
    else:  # torch crops the negative pads first, then wraps around what is left
        low, kept = max(-left, 0), size - max(-left, 0) - max(-right, 0)
        positions = low + (np.arange(kept + max(left, 0) + max(right, 0)) - max(left, 0)) % max(kept, 1)
    return positions


# ---------------------------------------------------------------- interpolation


def _output_size(input, size, scale_factor, dims):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        size = (size,) * dims if isinstance(size, int) else tuple(size)
        if any(isinstance(v, (bool, float)) or not hasattr(v, "__index__") for v in size) and len(size) == dims:
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                            f"but got size with types {[type(v) for v in size]}")
        if len(size) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {list(size)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        return tuple(int(v) for v in size), None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = (scale_factor,) * dims if not isinstance(scale_factor, (tuple, list)) else tuple(scale_factor)
    return tuple(int(math.floor(input.shape[2 + i] * scales[i])) for i in range(dims)), scales


def _source_coordinates(out_size, in_size, scale, align_corners, mode_cubic=False, ft=np.float64):
    """torch's area_pixel_compute_source_index for linear/cubic modes, in its opmath type ft (float for float32
    and half inputs, double for float64): the float rounding of the scale and of each position is torch's."""
    index = np.arange(out_size).astype(ft)
    ratio = _area_scale(in_size, out_size, scale, align_corners, ft)
    if align_corners:
        return index * ratio
    if ft is np.float32:
        # torch's compiled kernel contracts `scale * (i + 0.5) - 0.5` to one fused multiply-add (one rounding):
        # the float32 product is exact in double, so rounding the double result once is that fma
        source = (ratio.astype(np.float64) * (index + ft(0.5)) - 0.5).astype(ft)
    else:
        source = ratio * (index + ft(0.5)) - ft(0.5)
    return source if mode_cubic else np.maximum(source, ft(0))


def _linear_weights(out_size, in_size, scale, align_corners, ft=np.float64):
    """(low index, high index, high weight) per output position: torch's compute_source_index_and_lambda."""
    if out_size == in_size:  # torch copies: lambda 0
        index = np.arange(out_size, dtype=np.int64)
        return index, index, np.zeros(out_size, dtype=ft)
    source = _source_coordinates(out_size, in_size, scale, align_corners, ft=ft)
    low = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    weight = np.clip(source - low.astype(ft), ft(0), ft(1))
    return low, high, weight


def _linear_table(part: int, out_size, in_size, scale, align_corners, ndim: int, dim: int,
                  ft=np.float64) -> np.ndarray:
    """One of _linear_weights's arrays (0 low, 1 high, 2 the weight shaped to broadcast along dim)."""
    table = _linear_weights(out_size, in_size, scale, align_corners, ft)[part]
    return table if part < 2 else table.reshape([out_size if d == dim else 1 for d in range(ndim)])


def _interp_linear_dim(x: Tensor, dim: int, out_size: int, scale, align_corners: bool) -> Tensor:
    in_size = x.shape[dim]
    ft = _opmath(x)
    low, high = (_table(_linear_table, part, out_size, in_size, scale, align_corners, x.ndim, dim, ft)
                 for part in (0, 1))
    w = _table(_linear_table, 2, out_size, in_size, scale, align_corners, x.ndim, dim, ft, dtype=x.dtype,
               device=x.device)
    return _index_dim(x, dim, low) * (1 - w) + _index_dim(x, dim, high) * w


def _cubic_coefficients(t, a=-0.75):
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_table(tap: int, weight: bool, out_size, in_size, scale, align_corners, ndim: int, dim: int):
    """Tap `tap` (0-3) of the cubic filter: its source indices, or its weights shaped to broadcast along dim."""
    source = _source_coordinates(out_size, in_size, scale, align_corners, mode_cubic=True)
    base = np.floor(source).astype(np.int64)
    if not weight:
        return np.clip(base - 1 + tap, 0, in_size - 1)
    return _cubic_coefficients(source - base)[tap].reshape([out_size if d == dim else 1 for d in range(ndim)])


def _interp_cubic_dim(x: Tensor, dim: int, out_size: int, scale, align_corners: bool) -> Tensor:
    in_size = x.shape[dim]
    result = None
    for k in range(4):
        index = _table(_cubic_table, k, False, out_size, in_size, scale, align_corners, x.ndim, dim)
        weight = _table(_cubic_table, k, True, out_size, in_size, scale, align_corners, x.ndim, dim, dtype=x.dtype,
                        device=x.device)
        term = _index_dim(x, dim, index) * weight
        result = term if result is None else result + term
    return result


def _opmath(input: Tensor):
    """The numpy float type torch computes interpolation indices in: double for float64, float otherwise."""
    return np.float64 if input.dtype == dt.float64 else np.float32


def _nearest_index(out_size, in_size, scale, exact, ft):
    """torch's HelperInterpNearest(Exact): the source index is computed in opmath ft and floored as a float."""
    ratio = ft(1.0 / scale) if scale is not None and scale > 0 else ft(in_size) / ft(out_size)
    index = np.arange(out_size)
    if exact:  # area_pixel_compute_source_index (in double, stored as ft, clamped at 0), then floorf(src + 0.5)
        source = np.maximum((np.float64(ratio) * (index + 0.5) - 0.5).astype(ft), 0)
        source = np.floor((source.astype(np.float64) + 0.5).astype(np.float32))
    else:  # floorf(scale * i), the product in ft
        source = np.floor((index.astype(ft) * ratio).astype(np.float32))
    return np.minimum(source.astype(np.int64), in_size - 1)


def _filter_linear(x):
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def _filter_cubic(x, a=-0.5):
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _filter_lanczos(x):
    x = abs(x)
    if x < 3.0:
        return float(np.sinc(x) * np.sinc(x / 3.0))
    return 0.0


# mode -> (filter, interp_size) for torch's separable (antialias / uint8) kernels
_SEPARABLE_FILTERS = {"bilinear": (_filter_linear, 2), "bicubic": (_filter_cubic, 4), "lanczos": (_filter_lanczos, 6)}


def _area_scale(in_size, out_size, scale, align_corners, ft):
    """torch's area_pixel_compute_scale in ft."""
    if align_corners:
        return ft(in_size - 1) / ft(out_size - 1) if out_size > 1 else ft(0)
    return ft(1.0 / scale) if scale is not None and scale > 0 else ft(in_size) / ft(out_size)


def _separable_weights(in_size, out_size, scale, align_corners, mode, antialias, ft):
    """Dense (out_size, in_size) weights of torch's separable kernel for one dim
    (_compute_indices_min_size_weights[_aa] in UpSampleKernel.cpp), in ft arithmetic."""
    fn, interp_size = _SEPARABLE_FILTERS[mode]
    scale_v = _area_scale(in_size, out_size, scale, align_corners, ft)
    weights = np.zeros((out_size, in_size), dtype=ft)
    if antialias:
        support = ft(interp_size * 0.5) * scale_v if scale_v >= 1.0 else ft(interp_size * 0.5)
        max_interp = int(math.ceil(support)) * 2 + 1
        invscale = ft(1.0) / scale_v if scale_v >= 1.0 else ft(1.0)
        for i in range(out_size):
            center = ft(scale_v * ft(i + 0.5))
            xmin = max(int(float(ft(center - support)) + 0.5), 0)
            xsize = min(max(min(int(float(ft(center + support)) + 0.5), in_size) - xmin, 0), max_interp)
            row = np.array([fn(ft((float(ft(j + xmin) - center) + 0.5) * float(invscale))) for j in range(xsize)],
                           dtype=ft)
            total = row.sum(dtype=ft) if xsize else ft(0)
            if total != 0:
                row = row / total
            weights[i, xmin:xmin + xsize] = row
        return weights
    # antialias=False (torch routes only uint8 here): the fixed-size filter, out-of-range taps folded onto the edge
    cubic = interp_size > 2
    support = interp_size // 2
    taps = (lambda v: _filter_cubic(v, -0.75)) if mode == "bicubic" else fn  # torch keeps -0.75 without antialias
    for i in range(out_size):
        if align_corners:
            real = scale_v * ft(i)
        else:
            real = ft(scale_v * (i + 0.5) - 0.5)
            if not cubic and real < 0:
                real = ft(0)
        index = min(int(math.floor(real)), in_size - 1)
        lam = min(max(real - index, 0.0), 1.0)
        for j in range(interp_size):
            weights[i, min(max(index - support + 1 + j, 0), in_size - 1)] += taps(float(j + 1 - support) - lam)
    return weights


def _resample_dim(x: Tensor, dim: int, weights: np.ndarray) -> Tensor:
    """Apply (out, in) weights along dim: a matmul, so autograd gives the adjoint torch's backward computes."""
    moved = x.movedim(dim, -1)
    return moved.matmul(moved.new_tensor(weights.T)).movedim(-1, dim)


def _resample_dim_uint8(x: Tensor, dim: int, weights: np.ndarray) -> Tensor:
    """torch's uint8 path: weights rescaled to int16 with a precision chosen from the largest weight, integer
    accumulation, rounding by +half and a right shift, clamped to [0, 255] after each dim."""
    wt_max = float(weights.max()) if weights.size else 0.0
    precision = 0
    while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    scaled = weights * (1 << precision)
    int_weights = np.where(scaled < 0, np.trunc(scaled - 0.5), np.trunc(scaled + 0.5)).astype(np.int64)
    moved = x.movedim(dim, -1).to(dt.int64)
    total = moved.matmul(moved.new_tensor(int_weights.T)) + (1 << (precision - 1))
    return total.bitwise_right_shift(precision).clamp(0, 255).to(dt.uint8).movedim(-1, dim)


def _check_interp_dtype(input: Tensor, mode: str, antialias: bool) -> None:
    name = input.dtype.name
    allowed = input.dtype.is_floating_point
    if name == "uint8":
        allowed = mode in ("nearest", "nearest-exact", "bilinear", "bicubic", "lanczos")
    elif antialias and name not in ("float32", "float64"):
        allowed = False
    if not allowed:
        from .._tensor import SCALAR_NAMES

        kernel = {"nearest": "compute_indices_weights_nearest", "nearest-exact": "compute_indices_weights_nearest",
                  "linear": "compute_indices_weights_linear", "bilinear": "compute_indices_weights_linear",
                  "trilinear": "compute_indices_weights_linear", "bicubic": "compute_indices_weights_cubic",
                  "area": f"adaptive_avg_pool{input.ndim - 2}d"}.get(mode, "compute_index_ranges_weights")
        if antialias:
            kernel = "compute_index_ranges_weights"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES.get(name, name)}\'')


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area, lanczos)."""
    dims = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if isinstance(scale_factor, (tuple, list)) and size is None and len(scale_factor) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                         f"{tuple(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         "scale_factor in (s1, s2, ...,sK) format.")
    out_size, scales = _output_size(input, size, scale_factor, dims)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor:
        scales = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    expected = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
    if dims not in (1, 2, 3) or (mode in expected and dims != expected[mode]):
        if mode == "lanczos" or dims not in (1, 2, 3) or mode not in expected:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                      "for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                      f"area | nearest-exact (got {mode})")
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {expected[mode] + 2}D input")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    _check_interp_dtype(input, mode, antialias)
    if mode != "area" and min(tuple(input.shape[2:]) + out_size) <= 0:
        names = "DHW"[3 - dims:]
        sizes_in = ", ".join(f"{name}: {v}" for name, v in zip(names, input.shape[2:]))
        sizes_out = ", ".join(f"{name}: {v}" for name, v in zip(names, out_size))
        joiner = " and" if dims == 1 else ""
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({sizes_in}){joiner} "
                           f"output ({sizes_out})")
    if mode == "area":
        from ._functional_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        return {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[dims](input, out_size)
    ft = _opmath(input)
    if mode in _SEPARABLE_FILTERS and (antialias or input.dtype == dt.uint8):
        # torch's separable kernel: last dim first, skipping dims whose size does not change
        if input.dtype == dt.uint8:
            ft = np.float64
        result = input
        for i in reversed(range(dims)):
            dim = 2 + i
            if out_size[i] == input.shape[dim]:
                continue
            weights = _separable_weights(input.shape[dim], out_size[i], scales[i] if scales is not None else None,
                                         align_corners, mode, antialias, ft)
            if input.dtype == dt.uint8:
                result = _resample_dim_uint8(result, dim, weights)
            else:
                result = _resample_dim(result, dim, weights)
        return keep_suggested_layout(result, input)
    result = input
    for i in range(dims):
        scale = scales[i] if scales is not None else None
        dim = 2 + i
        if mode in ("nearest", "nearest-exact"):
            index = _table(_nearest_index, out_size[i], input.shape[dim], scale, mode == "nearest-exact", ft)
            result = _index_dim(result, dim, index)
        elif mode in ("linear", "bilinear", "trilinear"):
            result = _interp_linear_dim(result, dim, out_size[i], scale, align_corners)
        elif mode == "bicubic":
            result = _interp_cubic_dim(result, dim, out_size[i], scale, align_corners)
        else:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                      f"for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                                      f"area | nearest-exact (got {mode})")
    return keep_suggested_layout(result, input)  # torch's upsample kernels keep a channels-last input's layout


def _warn_upsample(name: str) -> None:
    """torch's deprecation warning for the upsample* functions (interpolate replaced them)."""
    import warnings

    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=3)


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    _warn_upsample("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    _warn_upsample("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    _warn_upsample("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- sampling grids


def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """Sampling grid (N, H, W, 2) or (N, D, H, W, 3) for affine matrices theta."""
    align_corners = bool(align_corners)
    size = tuple(size)
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) in (4, 5):
        rows = len(size) - 2
        if theta.ndim != 3 or theta.shape[-2] != rows or theta.shape[-1] != rows + 1:
            raise ValueError(f"Expected a batch of {rows}D affine matrices of shape Nx{rows}x{rows + 1} for size "
                             f"{size}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.shape[0] != size[0]:  # (torch's bmm of the base grid by theta^T reports it)
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {rows + 1}] "
                           f"but got: [{theta.shape[0]}, {rows + 1}].")
    if not (align_corners and min(size[2:]) == 1) and min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    spatial = size[2:]

    def base(n):
        steps = np.linspace(-1, 1, n) if n > 1 else np.zeros(1)
        return steps if align_corners else steps * (n - 1) / n

    if len(spatial) == 2:
        h, w = spatial
        ys, xs = np.meshgrid(base(h), base(w), indexing="ij")
        grid = np.stack([xs, ys, np.ones_like(xs)], -1).reshape(1, h * w, 3)
        out = theta.new_tensor(grid).to(theta.dtype).matmul(theta.transpose(1, 2))
        return out.reshape(size[0], h, w, 2)
    d, h, w = spatial
    zs, ys, xs = np.meshgrid(base(d), base(h), base(w), indexing="ij")
    grid = np.stack([xs, ys, zs, np.ones_like(xs)], -1).reshape(1, d * h * w, 4)
    out = theta.new_tensor(grid).to(theta.dtype).matmul(theta.transpose(1, 2))
    return out.reshape(size[0], d, h, w, 3)


def _unnormalize(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coordinate + 1) / 2 * (size - 1)
    return ((coordinate + 1) * size - 1) / 2


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners=None) -> Tensor:
    """Sample input (N, C, H, W) or (N, C, D, H, W) at grid (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3) locations in
    [-1, 1] (bilinear -- trilinear for 5-D -- or nearest); grid's last dim lists x (width) first."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.dtype != grid.dtype:
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype.name]} but found "
                           f"{SCALAR_NAMES[grid.dtype.name]}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.ndim - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or input.ndim != grid.ndim:
        raise RuntimeError(f"grid_sampler(): expected {'4D' if input.ndim == 4 else '5D'} input and grid with same "
                           f"number of dimensions, but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    align_corners = bool(align_corners)
    sizes = tuple(input.shape[2:])  # (D,) H, W
    dims = len(sizes)
    # grid component k addresses spatial dim dims-1-k: x -> W, y -> H, z -> D
    coordinates = [_unnormalize(grid[..., dims - 1 - j], sizes[j], align_corners) for j in range(dims)]

    def pad_coordinates(coordinates):
        if padding_mode == "border":
            return [_clip(c, size) for c, size in zip(coordinates, sizes)]
        if padding_mode == "reflection":
            return [_clip(_reflect(c, size, align_corners), size) for c, size in zip(coordinates, sizes)]
        return coordinates

    if mode != "bicubic":  # bicubic pads each integer tap instead (torch's get_value_bounded)
        coordinates = pad_coordinates(coordinates)
    n, c = input.shape[:2]
    flat = input.reshape(n, c, -1)
    strides = [math.prod(sizes[j + 1:]) for j in range(dims)]

    def sample(indices) -> Tensor:
        inside = None
        index = None
        for ix, size, stride in zip(indices, sizes, strides):
            within = (ix >= 0) & (ix <= size - 1)
            inside = within if inside is None else inside & within
            term = ix.clamp(0, size - 1).nan_to_num(0) * stride  # a nan coordinate reads any cell, weighted nan
            index = term if index is None else index + term
        index = index.to(dt.int64)
        values = flat.gather(2, index.reshape(n, 1, -1).expand(n, c, -1)).reshape((n, c) + tuple(index.shape[1:]))
        return values * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        result = sample([each.round() for each in coordinates])
        if grid.requires_grad:  # torch's grid gradient is zeros here, not None: link grid in with a zero weight
            component = grid[..., 0].unsqueeze(1)
            result = result + component.where(component.new_zeros(component.shape, dtype=dt.bool_), 0.0)
        return result
    if mode == "bicubic":  # 4x4 taps, Keys' cubic with A = -0.75 (torch's grid_sampler_2d bicubic)
        iy, ix = coordinates
        y0, x0 = iy.floor(), ix.floor()
        wy = _cubic_coefficients((iy - y0).unsqueeze(1))
        wx = _cubic_coefficients((ix - x0).unsqueeze(1))
        result = None
        for i in range(4):
            row = None
            for j in range(4):
                tap = sample(pad_coordinates([y0 + (i - 1), x0 + (j - 1)])) * wx[j]
                row = tap if row is None else row + tap
            term = row * wy[i]
            result = term if result is None else result + term
        return result
    lows = [each.floor() for each in coordinates]
    upper_weights = [(each - low).unsqueeze(1) for each, low in zip(coordinates, lows)]
    result = None
    for corner in itertools.product((0, 1), repeat=dims):
        term = sample([low + offset for low, offset in zip(lows, corner)])
        for j in reversed(range(dims)):  # x's weight first, as the 2-D formula
            term = term * (upper_weights[j] if corner[j] else 1 - upper_weights[j])
        result = term if result is None else result + term
    return result


def _reflect(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        low, span = 0.0, float(size - 1)
    else:
        low, span = -0.5, float(size)
    if span <= 0:
        return coordinate * 0
    shifted = (coordinate - low).abs()
    flips = (shifted / span).floor()
    extra = shifted - flips * span
    even = (flips.remainder(2) == 0)
    return (extra + low).where(even, span - extra + low)


def _clip(coordinate: Tensor, size: int) -> Tensor:
    """clamp to [0, size - 1] with torch's clip_coordinates_set_grad: zero gradient at and beyond the edges."""
    inside = (coordinate > 0) & (coordinate < size - 1)
    return coordinate.where(inside, coordinate.detach().clamp(0, size - 1))


# ---------------------------------------------------------------- shuffles


def _check_shuffle(input: Tensor, name: str, what: str, factor: int) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input with {input.ndim} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects a positive {what}, but got {factor}")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    _check_shuffle(input, "pixel_shuffle", "upscale_factor", upscale_factor)
    *batch, c, h, w = input.shape
    r = upscale_factor
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    out_c = c // (r * r)
    x = input.reshape(*batch, out_c, r, r, h, w)
    nb = len(batch)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, out_c, h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    _check_shuffle(input, "pixel_unshuffle", "downscale_factor", downscale_factor)
    *batch, c, h, w = input.shape
    r = downscale_factor
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)={w}"
                           f" is not divisible by {r}")
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    nb = len(batch)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle
