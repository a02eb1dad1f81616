"""torch.linalg: matrix products, factorizations, solvers and norms (re-exports of ember._ops)."""

from __future__ import annotations

import numpy as np

from .._ops.creation import eye as ember_eye
from .._ops.decompositions import LinAlgError, cholesky, det, finish_out_exact, inv, slogdet, solve
from .._ops.einsum import tensordot
from .._ops.ldl import ldl_factor, ldl_factor_ex, ldl_solve
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
from .._tensor import SCALAR_NAMES, Tensor


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """The cross product of 3-vectors along `dim` (default the last), operands broadcast."""
    return finish_out_exact(_cross_product(input, other, dim, "linalg.cross"), out)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """sum(conj(x) * y) over `dim`, operands broadcast; float or complex operands of one dtype, as torch's."""
    if not (x.is_floating_point() or x.is_complex()):
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[x.dtype.name]}")
    if x.dtype is not y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{SCALAR_NAMES[x.dtype.name]} and y of type {SCALAR_NAMES[y.dtype.name]} instead")
    result = (x.conj() * y).sum(dim)
    return finish_out_exact(result, out, "linalg.vecdot: Expected out of dtype{want} but found {got}")


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """A view of the diagonals of (a batch of) matrices: Tensor.diagonal with torch's matrix defaults."""
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


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False, out=None):
    """(L, info): info is 0 where A is positive-definite, else the order of its first leading minor that is not;
    L of such a matrix is what LAPACK's potrf leaves, as torch's (see decompositions.potf2).  upper=True reads
    A's upper triangle and returns U = L^H.  check_errors=True raises as cholesky does."""
    from .. import tensor, where
    from .._ops.decompositions import _conj, check_matrix, cholesky_with_info
    from ..return_types import _make

    check_matrix("linalg.cholesky", A, low_precision="cholesky_cpu")
    lower = _conj(A).mT if upper else A  # the triangle potrf reads, as a lower one
    if A.device.type == "meta" or not A.numel():  # shapes only (or nothing to factor): nothing can fail
        failed = np.zeros(tuple(A.shape[:-2]), np.int32)
    else:
        partial, failed = cholesky_with_info(np.asarray(lower.detach().cpu().numpy()))
    info = tensor(failed, device=A.device)
    if not failed.any() or check_errors:
        result = cholesky(A, upper=upper)  # raises torch's error when check_errors and a matrix failed
    else:
        bad = tensor(failed != 0, device=A.device)[..., None, None]
        eye = ember_eye(A.shape[-1], dtype=A.dtype, device=A.device)
        factor = where(bad, tensor(partial, dtype=A.dtype, device=A.device), cholesky(where(bad, eye, lower)))
        result = _conj(factor).mT.contiguous() if upper else factor
    result = _make("linalg_cholesky_ex", ("L", "info"))(result, info)
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return out
    return result


__all__ = ["LinAlgError", "lu", "lu_factor", "lu_factor_ex", "matrix_exp", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "cholesky", "cholesky_ex", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "inv_ex",
           "lstsq", "matmul", "matrix_norm", "matrix_rank", "matrix_power", "multi_dot", "norm", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals", "tensordot", "vecdot", "vector_norm",
           "cond", "eig", "eigvals", "householder_product", "lu_solve", "solve_ex", "solve_triangular",
           "tensorinv", "tensorsolve", "vander"]
_ = _vdot
