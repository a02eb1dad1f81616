"""The `meta` device: tensors with a shape and dtype but no data."""

from __future__ import annotations

import math

import numpy as np


class MetaArray:
    """Stands in for an ndarray on the meta device: shape, dtype and C-contiguous strides only."""

    __slots__ = ("shape", "dtype", "strides")

    def __init__(self, shape, dtype, strides=None) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        if strides is None:
            strides = contiguous_strides(self.shape, self.dtype.itemsize)
        self.strides = tuple(strides)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __add__(self, other):  # gradient accumulation adds arrays: on meta, only the shape is kept
        return MetaArray(np.broadcast_shapes(self.shape, getattr(other, "shape", ())), self.dtype)

    __radd__ = __iadd__ = __add__

    def dummy(self):
        """A zero-stride NumPy array of this shape and dtype that owns one element: for abstract evaluation."""
        return np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape, (0,) * len(self.shape))


def contiguous_strides(shape, itemsize: int = 1) -> tuple:
    """Row-major strides of a shape, in units of `itemsize`."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))
