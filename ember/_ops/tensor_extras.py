"""Tensor methods torch scripts reach for that are compositions of other ops or storage bookkeeping:
fill_diagonal_, put/put_, resize_/resize_as_, sum_to_size, narrow_copy, apply_/map_, new, dim_order,
nonzero_static, unsafe_chunk/unsafe_split, and the backend flags (is_mps, is_xla, ...) that are always False.

Each computes through existing ops, so autograd, in-place version counters and errors follow from them.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._dispatch import device_module
from .._tensor import Storage, Tensor
from ._api import export
from .creation import _sizes, legacy_construct
from .indexing import _bounds


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (all dims equal for ndim > 2; a tall matrix restarts the diagonal
    every ncols + 1 rows when wrap=True, as torch)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = tuple(self.shape)
    if self.ndim > 2 and len(set(shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    numel = math.prod(shape)
    if self.ndim == 2:
        rows, cols = shape
        step = cols + 1
        stop = numel if wrap and rows > cols + 1 else min(rows, cols) * cols
    else:
        step = sum(math.prod(shape[i + 1:]) for i in range(self.ndim))
        stop = numel
    mask = np.zeros(numel, dtype=bool)
    mask[0:stop:step] = True
    from .creation import tensor

    return self.masked_fill_(tensor(mask.reshape(shape), device=self.device), fill_value)


def _flat_index(self: Tensor, index: Tensor) -> Tensor:
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype}")
    _bounds(index, self.numel(), 0, IndexError, "out of range: tried to access index {value} on a tensor of {size} "
            "elements.", negative=True)
    return index.reshape(-1)  # negative indices count from the end, as index_put's


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of input with source written (or added) at the given indices of its row-major flattening."""
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype} and source.dtype = {source.dtype}")
    flat = input.reshape(-1).index_put((_flat_index(input, index),), source.reshape(-1), accumulate)
    return flat.view(tuple(input.shape))


def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """put() written into self."""
    self._check_inplace()
    return self._inplace_from(put(self, index, source, accumulate))


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give self a new shape over its storage: the first elements keep their values in storage order; growing
    reallocates (new elements are uninitialised, as torch's)."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    self._check_inference_write()
    shape = _sizes(sizes, "resize_")
    count = math.prod(shape)
    data = self._data
    if count <= data.size and data.flags.c_contiguous:
        self._data = data.reshape(-1)[:count].reshape(shape)
    else:
        array = device_module(self._device).empty(count, data.dtype)
        kept = min(count, data.size)
        array[:kept] = data.reshape(-1)[:kept]
        self._take_storage(Storage(array), array.reshape(shape))
    self._bump_version()
    return self


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format=None) -> Tensor:
    return resize_(self, tuple(the_template.shape))


def sum_to_size(self: Tensor, *size) -> Tensor:
    """Sum over the dims where `size` is 1 or missing, so the result has `size` (which self must expand to)."""
    size = _sizes(size, "sum_to_size")
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    result = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, s in enumerate(size) if s == 1 and result.shape[i] != 1)
    return result.sum(dims, keepdim=True) if dims else result


def narrow_copy(self: Tensor, dim: int, start: int, length: int) -> Tensor:
    """narrow() into new memory."""
    return self.narrow(dim, start, length).clone(memory_format=None)


def apply_(self: Tensor, callable) -> Tensor:
    """Replace every element by callable(element), in place (CPU, no autograd: torch's restrictions)."""
    if self._device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    self._check_inplace()
    flat = self._data.reshape(-1)
    values = np.array([callable(v) for v in flat.tolist()], dtype=flat.dtype)
    self._data[...] = values.reshape(self._data.shape)
    self._bump_version()
    return self


def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:
    """self[i] = callable(self[i], tensor[i]) in place, `tensor` broadcast to self's shape (CPU only)."""
    if self._device.type != "cpu" or tensor._device.type != "cpu":
        raise TypeError("map_ is only implemented on CPU tensors")
    self._check_inplace()
    other = np.broadcast_to(tensor._data, self._data.shape).reshape(-1).tolist()
    values = [callable(a, b) for a, b in zip(self._data.reshape(-1).tolist(), other)]
    self._data[...] = np.array(values, dtype=self._data.dtype).reshape(self._data.shape)
    self._bump_version()
    return self


def new(self: Tensor, *args, **kwargs) -> Tensor:
    """Legacy x.new(...): torch.Tensor(...)'s argument forms with x's dtype and device."""
    return legacy_construct(args, self.dtype, kwargs.pop("device", None) or self.device)


def dim_order(self: Tensor, *, ambiguity_check=False) -> tuple:
    """The dims from outermost to innermost in memory (by decreasing stride)."""
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """nonzero() padded with fill_value (or truncated) to exactly `size` rows: a fixed output shape."""
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, but got size: {size}")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    from .creation import full

    pad = full((size - found.shape[0], input.ndim), fill_value, dtype=found.dtype, device=found.device)
    from .movement import cat

    return cat([found, pad])


def unsafe_chunk(self: Tensor, chunks: int, dim: int = 0):
    return self.chunk(chunks, dim)


def unsafe_split(self: Tensor, split_size, dim: int = 0):
    return self.split(split_size, dim)


def unsafe_split_with_sizes(self: Tensor, split_sizes, dim: int = 0):
    return self.split_with_sizes(split_sizes, dim)


def const_data_ptr(self: Tensor) -> int:
    return self.data_ptr()


for _function in (fill_diagonal_, put_, resize_, resize_as_, sum_to_size, apply_, map_, new, dim_order,
                  const_data_ptr):
    export(_function, function=False)
for _function in (put, narrow_copy, nonzero_static, unsafe_chunk, unsafe_split, unsafe_split_with_sizes):
    export(_function)
del _function


def _false(self) -> bool:
    return False


# devices and layouts ember does not have: torch's flags, always False here
for _flag in ("is_mps", "is_xla", "is_xpu", "is_ipu", "is_vulkan", "is_maia", "is_mtia", "is_mkldnn", "is_nested",
              "is_sparse_csr"):
    setattr(Tensor, _flag, property(_false))
