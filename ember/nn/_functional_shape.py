"""nn.functional ops that move pixels: pad, interpolate/upsample, grid_sample, affine_grid, pixel/channel shuffle.

All are compositions of registry ops (indexing, gather, cat, matmul), so their
gradients come from those ops.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


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
        return _pad_constant(input, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
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
        if new < 0:
            raise RuntimeError(f"The input size {size}, plus negative padding {left} and {right} resulted in a "
                               f"negative output size, which is invalid. Check dimension {dim} of your input.")
        source[dim] = slice(max(-left, 0), size - max(-right, 0))
        target[dim] = slice(max(left, 0), max(left, 0) + size - max(-left, 0) - max(-right, 0))
        shape[dim] = new
    out = input.new_full(tuple(shape), value)
    return _place(out, tuple(target), input[tuple(source)])


def _place(out: Tensor, key: tuple, values: Tensor) -> Tensor:
    """out with out[key] = values, differentiable in values (out is a fresh constant)."""
    out[key] = values
    return out


def _index_dim(input: Tensor, dim: int, index: np.ndarray) -> Tensor:
    return input.index_select(dim, input.new_tensor(index, dtype=dt.int64))


def _pad_dim(input: Tensor, dim: int, left: int, right: int, mode: str) -> Tensor:
    size = input.shape[dim]
    if mode == "reflect" and (left >= size or right >= size):
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but "
                           f"got: padding ({left}, {right}) at dimension {dim} of input {list(input.shape)}")
    if mode == "circular" and (left > size or right > size):
        raise RuntimeError("Padding value causes wrapping around more than once.")
    positions = np.arange(-left, size + right)
    if mode == "reflect":
        period = 2 * (size - 1) if size > 1 else 1
        positions = np.abs(positions) % period
        positions = np.where(positions >= size, period - positions, positions)
    elif mode == "replicate":
        positions = np.clip(positions, 0, size - 1)
    else:
        positions = positions % size
    return _index_dim(input, dim, positions)


# ---------------------------------------------------------------- interpolation


def _output_size(input, size, scale_factor, dims):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        size = (size,) * dims if isinstance(size, int) else tuple(size)
        if len(size) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {list(size)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        return size, None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = (scale_factor,) * dims if not isinstance(scale_factor, (tuple, list)) else tuple(scale_factor)
    return tuple(int(math.floor(input.shape[2 + i] * scales[i])) for i in range(dims)), scales


def _source_coordinates(out_size, in_size, scale, align_corners, mode_cubic=False):
    """torch's area_pixel_compute_source_index for linear/cubic modes."""
    index = np.arange(out_size, dtype=np.float64)
    if align_corners:
        ratio = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
        return index * ratio
    ratio = (1.0 / scale) if scale is not None else in_size / out_size
    source = (index + 0.5) * ratio - 0.5
    return source if mode_cubic else np.maximum(source, 0.0)


def _linear_weights(out_size, in_size, scale, align_corners):
    """(low index, high index, high weight) per output position."""
    source = _source_coordinates(out_size, in_size, scale, align_corners)
    low = np.floor(source).astype(np.int64)
    low = np.minimum(low, in_size - 1)
    high = np.minimum(low + 1, in_size - 1)
    weight = source - low
    return low, high, weight


def _interp_linear_dim(x: Tensor, dim: int, out_size: int, scale, align_corners: bool) -> Tensor:
    in_size = x.shape[dim]
    low, high, weight = _linear_weights(out_size, in_size, scale, align_corners)
    shape = [1] * x.ndim
    shape[dim] = out_size
    w = x.new_tensor(weight.reshape(shape))
    return _index_dim(x, dim, low) * (1 - w) + _index_dim(x, dim, high) * w


def _cubic_coefficients(t, a=-0.75):
    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _interp_cubic_dim(x: Tensor, dim: int, out_size: int, scale, align_corners: bool) -> Tensor:
    in_size = x.shape[dim]
    source = _source_coordinates(out_size, in_size, scale, align_corners, mode_cubic=True)
    base = np.floor(source).astype(np.int64)
    t = source - base
    coefficients = _cubic_coefficients(t)
    shape = [1] * x.ndim
    shape[dim] = out_size
    result = None
    for k in range(4):
        index = np.clip(base - 1 + k, 0, in_size - 1)
        term = _index_dim(x, dim, index) * x.new_tensor(coefficients[k].reshape(shape))
        result = term if result is None else result + term
    return result


def _nearest_index(out_size, in_size, scale, exact):
    ratio = (1.0 / scale) if scale is not None else in_size / out_size
    index = np.arange(out_size, dtype=np.float64)
    if exact:
        source = np.floor((index + 0.5) * ratio)
    else:
        source = np.floor(index * np.float32(ratio))
    return np.minimum(source.astype(np.int64), in_size - 1)


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area)."""
    dims = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                             "bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    expected = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in expected and dims != expected[mode]:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {expected[mode] + 2}D input")
    out_size, scales = _output_size(input, size, scale_factor, dims)
    if recompute_scale_factor:
        scales = None
    if mode == "area":
        from ._functional_pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        return {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[dims](input, out_size)
    result = input
    for i in range(dims):
        scale = scales[i] if scales is not None else None
        dim = 2 + i
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_index(out_size[i], input.shape[dim], scale, mode == "nearest-exact")
            result = _index_dim(result, dim, index)
        elif mode in ("linear", "bilinear", "trilinear"):
            result = _interp_linear_dim(result, dim, out_size[i], scale, align_corners)
        elif mode == "bicubic":
            result = _interp_cubic_dim(result, dim, out_size[i], scale, align_corners)
        else:
            raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) "
                                      f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                      f"nearest-exact (got {mode})")
    return result


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---------------------------------------------------------------- sampling grids


def affine_grid(theta: Tensor, size, align_corners=None) -> Tensor:
    """Sampling grid (N, H, W, 2) or (N, D, H, W, 3) for affine matrices theta."""
    align_corners = bool(align_corners)
    size = tuple(size)
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
    if input.ndim not in (4, 5):
        raise NotImplementedError("ember's grid_sample supports 4-D and 5-D input")
    if mode not in ("bilinear", "nearest"):
        raise NotImplementedError(f"grid_sample mode '{mode}' is not implemented in ember")
    align_corners = bool(align_corners)
    sizes = tuple(input.shape[2:])  # (D,) H, W
    dims = len(sizes)
    # grid component k addresses spatial dim dims-1-k: x -> W, y -> H, z -> D
    coordinates = [_unnormalize(grid[..., dims - 1 - j], sizes[j], align_corners) for j in range(dims)]
    if padding_mode == "border":
        coordinates = [c.clamp(0, size - 1) for c, size in zip(coordinates, sizes)]
    elif padding_mode == "reflection":
        coordinates = [_reflect(c, size, align_corners) for c, size in zip(coordinates, sizes)]
    n, c = input.shape[:2]
    flat = input.reshape(n, c, -1)
    strides = [math.prod(sizes[j + 1:]) for j in range(dims)]

    def sample(indices) -> Tensor:
        inside = None
        index = None
        for ix, size, stride in zip(indices, sizes, strides):
            within = (ix >= 0) & (ix <= size - 1)
            inside = within if inside is None else inside & within
            term = ix.clamp(0, size - 1) * stride
            index = term if index is None else index + term
        index = index.to(dt.int64)
        values = flat.gather(2, index.reshape(n, 1, -1).expand(n, c, -1)).reshape((n, c) + tuple(index.shape[1:]))
        return values * inside.unsqueeze(1).to(input.dtype)

    if mode == "nearest":
        return sample([each.round() for each in coordinates])
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
    reflected = (extra + low).where(even, span - extra + low)
    return reflected.clamp(0, size - 1)


# ---------------------------------------------------------------- shuffles


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
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
    *batch, c, h, w = input.shape
    r = downscale_factor
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)={h}"
                           f" is not divisible by {r}")
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    nb = len(batch)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, groups, c // groups) + rest).transpose(1, 2).reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle
