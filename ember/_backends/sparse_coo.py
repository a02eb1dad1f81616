"""The array of a sparse COO tensor: what `Tensor._data` holds when `tensor.layout is ember.sparse_coo`.

A `SparseCOOArray` is a plain record of NumPy arrays, never computed on by NumPy itself: the op kernels
in ember/_ops/sparse_ops.py read its fields (see NOTE [ Sparse COO tensors ] there).  It carries what
`Tensor` reads of any array -- shape, ndim, size, dtype -- so a sparse tensor's metadata methods work
unchanged, and NumPy refuses it as an operand (`__array_ufunc__ = None`, `__array__` raises), so a dense
kernel handed one by mistake fails loudly instead of computing on an object array.

Fields are never written in place: an op that changes a sparse tensor (`add_`, `mul_`) swaps in a new
SparseCOOArray (Tensor._inplace_from), so arrays may be shared between tensors (detach, .grad).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["SparseCOOArray"]


class SparseCOOArray:
    """indices: int64 (sparse_dim, nnz); values: (nnz, *dense_shape); shape: the full tensor shape;
    coalesced: torch's is_coalesced() flag (indices sorted and unique, as far as ember knows)."""

    __slots__ = ("indices", "values", "shape", "coalesced")

    base = None  # never a view of another array (checked by dispatch's overlap test)
    flags = None  # no strides or memory order: AccumulateGrad and the engine test for this
    __array_ufunc__ = None  # NumPy operators return NotImplemented: no silent object-array arithmetic

    def __init__(self, indices: np.ndarray, values: np.ndarray, shape: tuple, coalesced: bool) -> None:
        self.indices = indices
        self.values = values
        self.shape = tuple(int(n) for n in shape)
        self.coalesced = bool(coalesced)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    @property
    def dense_dim(self) -> int:
        return self.values.ndim - 1

    @property
    def nnz(self) -> int:
        return self.indices.shape[1]

    @property
    def nbytes(self) -> int:
        return self.indices.nbytes + self.values.nbytes

    def copy(self) -> SparseCOOArray:
        return SparseCOOArray(self.indices.copy(), self.values.copy(), self.shape, self.coalesced)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() first.")

    def __repr__(self) -> str:
        return f"SparseCOOArray(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"


def is_sparse_array(array) -> bool:
    return type(array) is SparseCOOArray


def empty_indices(sparse_dim: int) -> np.ndarray:
    return np.zeros((sparse_dim, 0), np.int64)
