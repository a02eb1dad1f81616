"""nn.functional fractional max pooling (Graham, 2014): pooling windows at pseudo-random, increasing offsets.

For each spatial dimension and each (sample, channel) plane, one number u in [0, 1) (from `_random_samples`, or
drawn from ember's default generator) places the windows: with alpha = (input - kernel) / (output - 1), window
i starts at trunc((i + u) * alpha) - trunc(u * alpha), and the last one at input - kernel.  This is torch's
generate_intervals, computed in the input's dtype so the float32 offsets truncate as torch's do.  The samples'
last dimension is (W, H) for 2-d pooling and (T, H, W) for 3-d, as in torch.

The pooling itself is a gather of every window's elements (in row-major order within the window) and a
max over them, whose first maximum -- or last NaN -- is the one torch's kernel keeps; the values' gradient
flows back through the gather.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor
from ._functional_conv import _tuple

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]

# for each spatial dimension in order, the column of `_random_samples` that places its windows
_SAMPLE_COLUMNS = {2: (1, 0), 3: (0, 1, 2)}


def _window_starts(samples: Tensor, input_size: int, output_size: int, pool_size: int) -> Tensor:
    """(N, C) samples in the input's dtype -> (N, C, output_size) int64 window starts."""
    from .. import arange, cat

    last = samples.new_full(tuple(samples.shape) + (1,), input_size - pool_size, dtype=dt.int64)
    if output_size <= 1:
        return last[..., :output_size]
    alpha = (input_size - pool_size) / (output_size - 1)
    positions = arange(output_size - 1, dtype=samples.dtype, device=samples.device)
    starts = ((positions + samples.unsqueeze(-1)) * alpha).to(dt.int64)
    starts = starts - (samples * alpha).to(dt.int64).unsqueeze(-1)
    return cat([starts, last], -1)


def _window_indices(samples: Tensor, spatial, kernel, out) -> Tensor:
    """(N, C, prod(out), prod(kernel)) flat positions, within each plane, of every window's elements."""
    from .. import arange

    dims = len(spatial)
    n, c = samples.shape[:2]
    index = None
    for i in range(dims):
        starts = _window_starts(samples[:, :, _SAMPLE_COLUMNS[dims][i]], spatial[i], out[i], kernel[i])
        start_shape = [n, c] + [1] * (2 * dims)
        start_shape[2 + i] = out[i]
        offset_shape = [1] * (2 + 2 * dims)
        offset_shape[2 + dims + i] = kernel[i]
        offsets = arange(kernel[i], dtype=dt.int64, device=samples.device).reshape(offset_shape)
        coordinate = starts.reshape(start_shape) + offsets
        index = coordinate if index is None else index * spatial[i] + coordinate
    count, size = 1, 1
    for i in range(dims):
        count *= out[i]
        size *= kernel[i]
    return index.expand([n, c] + list(out) + list(kernel)).reshape(n, c, count, size)


def _check_samples(name, samples, n, c, dims):
    if samples.dim() != 3 or tuple(samples.shape) != (n, c, dims):
        raise RuntimeError(f"{name}(): Expected _random_samples of shape {(n, c, dims)} (batch size, channels, "
                           f"{dims}), but got {tuple(samples.shape)}")


def _fractional_max_pool(dims, name, input, kernel_size, output_size, output_ratio, _random_samples):
    from .. import rand, where

    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but got: {tuple(input.shape)}")
    spatial = tuple(input.shape[-dims:])
    kernel = _tuple(kernel_size, dims, "kernel_size")
    if output_size is None:
        ratio = tuple(output_ratio) if isinstance(output_ratio, (tuple, list)) else (output_ratio,) * dims
        if len(ratio) != dims:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(spatial[i] * ratio[i]) for i in range(dims)]
    out = _tuple(output_size, dims, "output_size")
    names = {2: ("height", "width"), 3: ("time", "height", "width")}[dims]
    for i in range(dims):
        if out[i] + kernel[i] - 1 > spatial[i]:
            raise RuntimeError(f"{name}(): pool {names[i]} {kernel[i]} too large relative to input {names[i]} "
                               f"{spatial[i]}")
    unbatched = input.dim() == dims + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[:2]
    if _random_samples is None:
        _random_samples = rand(n, c, dims, dtype=input.dtype, device=input.device)
    _check_samples(name, _random_samples, n, c, dims)
    index = _window_indices(_random_samples.to(input.dtype), spatial, kernel, out)
    windows = x.reshape(n, c, -1).gather(2, index.reshape(n, c, -1)).reshape(index.shape)
    arg = windows.argmax(-1, keepdim=True)
    if windows.is_floating_point():
        nan = windows.isnan()
        last_nan = (index.shape[-1] - 1) - nan.flip(-1).to(dt.int64).argmax(-1, keepdim=True)
        arg = where(nan.any(-1, keepdim=True), last_nan, arg)
    values = windows.gather(-1, arg).reshape((n, c) + out)
    indices = index.gather(-1, arg).reshape((n, c) + out)
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None):
    """Fractional max pooling over (N, C, H, W) or (C, H, W): (values, indices into each H*W plane)."""
    return _fractional_max_pool(2, "fractional_max_pool2d", input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples: Tensor | None = None):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W): (values, indices into each T*H*W volume)."""
    return _fractional_max_pool(3, "fractional_max_pool3d", input, kernel_size, output_size, output_ratio,
                                _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    result = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    result = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, return_indices,
                                                _random_samples)
    return result if return_indices else result[0]
