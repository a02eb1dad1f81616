"""torch.sparse: products and sums whose sparse operands keep sparse gradients.

The sparse COO tensor itself, its construction, conversions and the SparseCPU kernels of dense ops live in
ember/_ops/sparse_ops.py and sparse_kernels.py (see NOTE [ Sparse COO tensors ] there); this module is the
public namespace torch programs call: `torch.sparse.mm`, `torch.sparse.addmm`, `torch.sparse.sum`.
"""

from __future__ import annotations

from .._ops.sparse_kernels import sparse_addmm, sparse_softmax, sparse_sparse_matmul, sparse_sum
from .._ops.sparse_ops import is_sparse
from .._tensor import Tensor

__all__ = ["addmm", "log_softmax", "mm", "softmax", "sum"]


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """mat1 @ mat2 with a sparse mat1: the dense product, whose gradient for mat1 is sparse with mat1's
    (coalesced) pattern (SparseAddmmBackward0), as torch.sparse.mm; with a sparse mat2 too, a sparse product
    whose gradients keep each operand's pattern (SparseSparseMatmulBackward0).

    Example::

        >>> import ember as torch
        >>> a = torch.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> torch.sparse.mm(a, torch.ones(2, 1))
        tensor([[2.],
                [3.]])
    """
    if reduce is not None:
        raise NotImplementedError("ember: torch.sparse.mm(reduce=...) is not supported")
    if is_sparse(mat1) and not is_sparse(mat2):
        return sparse_addmm(None, mat1, mat2, beta=0)
    if is_sparse(mat1) and is_sparse(mat2):
        return sparse_sparse_matmul(mat1, mat2)
    return mat1.mm(mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0) -> Tensor:
    """beta * mat + alpha * (mat1 @ mat2) with a sparse mat1 and dense mat and mat2 (torch.sparse.addmm)."""
    if not is_sparse(mat1):
        return mat.addmm(mat1, mat2, beta=beta, alpha=alpha)
    return sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input: Tensor, dim=None, dtype=None) -> Tensor:  # noqa: A001 - torch.sparse.sum
    """Sum of a sparse tensor over `dim` (all dims by default, a dense 0-d result).  Summing every sparse dim
    gives a dense tensor, else the result is sparse (coalesced); the input's gradient is sparse."""
    if dtype is not None:
        input = input.to(dtype)
    if dim is None:
        return input.coalesce().values().sum()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return sparse_sum(input, dims)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Softmax of a sparse COO tensor over `dim`, taken over its specified entries only (unspecified entries
    count as -inf): a coalesced sparse result with the input's pattern (torch.sparse.softmax)."""
    return sparse_softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Log of torch.sparse.softmax, computed directly (torch.sparse.log_softmax)."""
    return sparse_softmax(input, dim, dtype, log=True)
