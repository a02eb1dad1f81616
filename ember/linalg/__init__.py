"""torch.linalg: matrix products, factorizations, solvers and norms (re-exports of ember._ops)."""

from __future__ import annotations

import numpy as np

from .._ops.creation import eye as ember_eye
from .._ops.decompositions import LinAlgError, cholesky, det, inv, slogdet, solve
from .._ops.einsum import tensordot
from .._ops.linalg import cross_product as _cross_product
from .._ops.linalg import matmul, multi_dot
from .._ops.linalg import vdot as _vdot
from .._ops.matrix_functions import linalg_matrix_exp as matrix_exp
from .._ops.matrix_functions import lu, lu_factor, lu_factor_ex
from .._ops.norms import matrix_norm, matrix_power, norm, vector_norm
from .._ops.solvers import (
    cond,
    eig,
    eigvals,
    householder_product,
    lu_solve,
    solve_ex,
    solve_triangular,
    tensorinv,
    tensorsolve,
    vander,
)
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
    """(inverse, info): info (int32) is 0 for an invertible matrix, else LU's first zero pivot; a singular batch
    is solved against the identity through LU, so its inverse holds inf/nan as torch's (which is solve_ex(A, I))
    instead of raising, unless check_errors=True."""
    from .. import int32
    from ..return_types import _make

    try:
        result = inv(A)
        info = result.new_zeros(A.shape[:-2], dtype=int32)
    except LinAlgError as error:
        if check_errors:
            raise LinAlgError(str(error).replace("linalg.inv:", "linalg.inv_ex:", 1)) from None
        identity = ember_eye(A.shape[-1], dtype=A.dtype, device=A.device)
        result, info = solve_ex(A, identity.expand(A.shape))
    result = _make("linalg_inv_ex", ("inverse", "info"))(result, info)
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return out
    return result


def _cholesky_info(A) -> np.ndarray:
    """LAPACK's potrf info per matrix: 0, or the order of the first leading minor that is not positive-definite."""
    matrices = np.asarray(A.detach().cpu().numpy()).reshape((-1,) + tuple(A.shape[-2:]))
    info = np.zeros(len(matrices), np.int32)
    for index, matrix in enumerate(matrices):
        try:
            np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            info[index] = next(k for k in range(1, matrix.shape[-1] + 1) if not _positive_definite(matrix[:k, :k]))
    return info.reshape(tuple(A.shape[:-2]))


def _positive_definite(matrix) -> bool:
    try:
        np.linalg.cholesky(matrix)
        return True
    except np.linalg.LinAlgError:
        return False


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """(L, info): info is 0 where A is positive-definite, else the order of its first leading minor that is not
    (L is then undefined there: ember leaves zeros); check_errors=True raises as cholesky does."""
    from .. import tensor, where
    from ..return_types import _make

    if A.device.type == "meta" or not A.numel():  # shapes only (or nothing to factor): nothing can fail
        failed = np.zeros(tuple(A.shape[:-2]), np.int32)
    else:
        failed = _cholesky_info(A)
    info = tensor(failed, device=A.device)
    if not failed.any() or check_errors:
        result = cholesky(A, upper=upper)  # raises torch's error when check_errors and a matrix failed
    else:
        bad = tensor(failed != 0, device=A.device)[..., None, None]
        eye = ember_eye(A.shape[-1], dtype=A.dtype, device=A.device)
        result = where(bad, 0.0, cholesky(where(bad, eye, A), upper=upper))
    return _make("linalg_cholesky_ex", ("L", "info"))(result, info)


__all__ = ["LinAlgError", "lu", "lu_factor", "lu_factor_ex", "matrix_exp",
           "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex",
           "lstsq", "matmul", "matrix_norm", "matrix_rank", "matrix_power", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensordot", "vecdot", "vector_norm",
           "cond", "eig", "eigvals", "householder_product", "lu_solve", "solve_ex", "solve_triangular",
           "tensorinv", "tensorsolve", "vander"]
_ = _vdot
