"""torch.linalg: matrix products, factorizations, solvers and norms (re-exports of ember._ops)."""

from __future__ import annotations

from .._ops.decompositions import LinAlgError, cholesky, det, inv, slogdet, solve
from .._ops.einsum import tensordot
from .._ops.linalg import cross_product as _cross_product
from .._ops.linalg import matmul, multi_dot
from .._ops.linalg import vdot as _vdot
from .._ops.matrix_functions import linalg_matrix_exp as matrix_exp
from .._ops.matrix_functions import lu, lu_factor, lu_factor_ex
from .._ops.norms import matrix_norm, matrix_power, norm, vector_norm
from .._ops.spectral import eigh, eigvalsh, lstsq, matrix_rank, pinv, qr, svd, svdvals


def cross(input, other, *, dim: int = -1, out=None):
    """The cross product of 3-vectors along `dim` (default the last), operands broadcast."""
    result = _cross_product(input, other, dim, "linalg.cross")
    return result if out is None else out.copy_(result)


def vecdot(x, y, *, dim: int = -1, out=None):
    """sum(conj(x) * y) over `dim`, operands broadcast."""
    result = (x.conj() * y).sum(dim)
    return result if out is None else out.copy_(result)


def diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    return A.diagonal(offset, dim1, dim2)


def inv_ex(A, *, check_errors: bool = False, out=None):
    from ..return_types import _make

    result = inv(A)
    info = result.new_zeros(A.shape[:-2]).long()
    return _make("linalg_inv_ex", ("inverse", "info"))(result, info)


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    from ..return_types import _make

    result = cholesky(A, upper=upper)
    info = result.new_zeros(A.shape[:-2]).long()
    return _make("linalg_cholesky_ex", ("L", "info"))(result, info)


__all__ = ["LinAlgError", "lu", "lu_factor", "lu_factor_ex", "matrix_exp",
           "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex",
           "lstsq", "matmul", "matrix_norm", "matrix_rank", "matrix_power", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensordot", "vecdot", "vector_norm"]
_ = _vdot
