"""torch.linalg's factorizations and solvers: inv, det, slogdet, solve, cholesky, qr, svd, eigh, pinv.

Each is one `OpDef` whose impl calls `xp.linalg` (batched over leading dims)
and whose backward is torch's formula (torch/csrc/autograd/FunctionsManual.cpp)
written in ember ops, so double backward works.  Only float32/float64 and
complex inputs are accepted, as torch's LAPACK kernels do.  A singular or not
positive-definite input raises `LinAlgError` (a RuntimeError) with torch's
message, found on the host only once the backend has failed.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out

BOTH = SAVE_INPUTS | SAVE_RESULT


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix is singular or not positive-definite."""


def check_matrix(name: str, A: Tensor, square: bool = True, low_precision: str = "message") -> None:
    """torch's argument checks for linalg functions: >= 2 dims, float or complex, square."""
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    dtype = A._dtype
    if dtype.category < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[dtype.name]}")
    if dtype in (dt.float16, dt.bfloat16):
        if low_precision == "lu":
            raise NotImplementedError(f"\"lu_cpu\" not implemented for '{SCALAR_NAMES[dtype.name]}'")
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {SCALAR_NAMES[dtype.name]}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _keep(args, params):
    return args[0]._dtype, args[0]._dtype


def _real_of(dtype):
    return {dt.complex64: dt.float32, dt.complex128: dt.float64}.get(dtype, dtype)


def _conj(x: Tensor) -> Tensor:
    return x.conj() if x._dtype.is_complex else x


def _eye_like(n: int, like: Tensor) -> Tensor:
    from .creation import eye

    return eye(n, dtype=like.dtype, device=like.device)


def diag_embed(values: Tensor) -> Tensor:
    """(..., n) -> (..., n, n) with `values` on the diagonal (a product, so it differentiates)."""
    return values.unsqueeze(-1) * _eye_like(values.shape[-1], values)


def diagonal_of(matrices: Tensor) -> Tensor:
    """The main diagonals of a batch of matrices, through einsum (its backward is einsum too)."""
    from .einsum import einsum

    return einsum("...ii->...i", matrices)


def _tril_mask(n: int, like: Tensor, offset: int = 0) -> Tensor:
    from .creation import arange

    rows = arange(n, device=like.device).unsqueeze(-1)
    return (rows + offset) >= arange(n, device=like.device)


def _matmul(a, b):
    from .linalg import matmul

    return matmul(a, b)


# ---------------------------------------------------------------- singular inputs


def _first_zero_pivot(matrix: np.ndarray):
    """1-based index of the first zero pivot of LU with partial pivoting (LAPACK getrf's info), or None."""
    a = np.array(matrix, dtype=np.complex128 if np.iscomplexobj(matrix) else np.float64)
    n = a.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0:
            return k + 1
        a[[k, p]] = a[[p, k]]
        a[k + 1:, k:] -= np.outer(a[k + 1:, k] / a[k, k], a[k, k:])
    return None


def _batch_prefix(batch_shape, index) -> str:
    return f"(Batch element {index}): " if batch_shape else ""


def _singular_error(name: str, array) -> LinAlgError:
    array = np.asarray(array)
    flat = array.reshape((-1,) + array.shape[-2:])
    for index, matrix in enumerate(flat):
        pivot = _first_zero_pivot(matrix)
        if pivot is not None or not np.all(np.isfinite(matrix)):
            prefix = _batch_prefix(array.shape[:-2], index)
            return LinAlgError(f"{name}: {prefix}The diagonal element {pivot} is zero, the inversion could not be "
                               "completed because the input matrix is singular.")
    return LinAlgError(f"{name}: The inversion could not be completed because the input matrix is singular.")


def _not_positive_definite(array) -> LinAlgError:
    array = np.asarray(array)
    flat = array.reshape((-1,) + array.shape[-2:])
    for index, matrix in enumerate(flat):
        for order in range(1, matrix.shape[-1] + 1):
            try:
                np.linalg.cholesky(matrix[:order, :order])
            except np.linalg.LinAlgError:
                prefix = _batch_prefix(array.shape[:-2], index)
                return LinAlgError(
                    f"linalg.cholesky: {prefix}The factorization could not be completed because the input is not "
                    f"positive-definite (the leading minor of order {order} is not positive-definite)."
                )
    return LinAlgError("linalg.cholesky: The factorization could not be completed because the input is not "
                       "positive-definite.")


def _same_shape(args, params):
    return tuple(args[0].shape)


# ---------------------------------------------------------------- inv, det, slogdet, solve


def _inv_impl(xp, a):
    try:
        return xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _singular_error("linalg.inv", a) from None


def _inv_backward(ctx, g):
    inverse_h = _conj(ctx.result).mT
    return -_matmul(_matmul(inverse_h, g), inverse_h)


_INV = OpDef("linalg_inv", _inv_impl, _inv_backward, dtype_rule=_keep, meta=_same_shape, saves=SAVE_RESULT,
             grad_name="LinalgInvExBackward0")


def inv(A: Tensor, *, out=None) -> Tensor:
    """The inverse of each square matrix in A (torch.linalg.inv); singular matrices raise LinAlgError."""
    check_matrix("linalg.inv", A)
    return finish_out(call(_INV, (A,)), out)


def _det_backward(ctx, g):
    (A,) = ctx.inputs
    scale = (g * _conj(ctx.result)).unsqueeze(-1).unsqueeze(-1)
    return scale * _conj(inv(A)).mT


_DET = OpDef("linalg_det", lambda xp, a: xp.linalg.det(a), _det_backward, dtype_rule=_keep,
             meta=lambda args, p: tuple(args[0].shape[:-2]), saves=BOTH)


def det(A: Tensor, *, out=None) -> Tensor:
    """The determinant of each square matrix in A (torch.linalg.det)."""
    check_matrix("linalg.det", A, low_precision="lu")
    return finish_out(call(_DET, (A,)), out)


def _slogdet_rule(args, params):
    dtype = args[0]._dtype
    return dtype, (dtype, _real_of(dtype))


def _slogdet_backward(ctx, grads):
    (A,) = ctx.inputs
    grad_sign, grad_log = grads
    if A._dtype.is_complex:
        sign = ctx.result[0]
        grad_log = grad_log - 1j * (_conj(grad_sign) * sign).imag
    return grad_log.unsqueeze(-1).unsqueeze(-1) * _conj(inv(A)).mT


def _slogdet_meta(args, params):
    shape = tuple(args[0].shape[:-2])
    return shape, shape


def _slogdet_op(differentiable):
    return OpDef("linalg_slogdet", lambda xp, a: tuple(xp.linalg.slogdet(a)), _slogdet_backward,
                 dtype_rule=_slogdet_rule, meta=_slogdet_meta, saves=BOTH, outputs=2,
                 differentiable_outputs=differentiable)


_SLOGDET_REAL = _slogdet_op((True, True))  # torch marks the sign differentiable (its gradient is zero)
_SLOGDET_COMPLEX = _SLOGDET_REAL


def _return_type(name, fields):
    from .. import return_types

    existing = getattr(return_types, name, None)
    return existing if existing is not None else return_types._make(name, fields)


LinalgSlogdet = _return_type("linalg_slogdet", ("sign", "logabsdet"))


def slogdet(A: Tensor, *, out=None):
    """(sign, log|det|) of each square matrix in A (torch.linalg.slogdet)."""
    check_matrix("linalg.slogdet", A, low_precision="lu")
    op = _SLOGDET_COMPLEX if A._dtype.is_complex else _SLOGDET_REAL
    return finish_out(LinalgSlogdet(*call(op, (A,))), out)


def _solve_impl(xp, a, b):
    try:
        return xp.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is singular.") from None


def _solve_backward(ctx, g):
    A, B = ctx.inputs
    grad_B = solve(_conj(A).mT, g)
    grad_A = -_matmul(grad_B, _conj(ctx.result).mT) if ctx.needs_input_grad[0] else None
    return grad_A, grad_B


def _solve_meta(args, params):
    from ._shapes import broadcast_shapes

    A, B = args[0].shape, args[1].shape
    return broadcast_shapes(A[:-2], B[:-2]) + tuple(B[-2:])


_SOLVE = OpDef("linalg_solve", _solve_impl, _solve_backward, dtype_rule=_keep, meta=_solve_meta, saves=BOTH,
               grad_name="LinalgSolveExBackward0")


def solve(A: Tensor, B: Tensor, *, left: bool = True, out=None) -> Tensor:
    """The solution X of A X = B (or X A = B with left=False); B may be a (batch of) vector(s)."""
    check_matrix("linalg.solve", A)
    if B._dtype is not A._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{SCALAR_NAMES[A._dtype.name]} and B of type {SCALAR_NAMES[B._dtype.name]} instead")
    if not left:
        return finish_out(solve(A.mT, B.mT).mT, out)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x{rhs.shape[-1]})")
    from ._shapes import broadcast_shapes

    broadcast_shapes(A.shape[:-2], rhs.shape[:-2])
    result = call(_SOLVE, (A, rhs))
    return finish_out(result.squeeze(-1) if vector else result, out)


# ---------------------------------------------------------------- cholesky


def _cholesky_impl(xp, a):
    try:
        return xp.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise _not_positive_definite(a) from None


def _cholesky_backward(ctx, g):
    L = ctx.result
    n = L.shape[-1]
    phi = _matmul(_conj(L).mT, g)
    phi = phi * _tril_mask(n, phi) * (1 - 0.5 * _eye_like(n, L).real)
    inverse = inv(L)
    grad = _matmul(_matmul(_conj(inverse).mT, phi), inverse)
    return (grad + _conj(grad).mT) * 0.5


_CHOLESKY = OpDef("linalg_cholesky", _cholesky_impl, _cholesky_backward, dtype_rule=_keep, meta=_same_shape,
                  saves=SAVE_RESULT, grad_name="LinalgCholeskyExBackward0")


def cholesky(A: Tensor, *, upper: bool = False, out=None) -> Tensor:
    """The Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix; U = L^H with upper=True."""
    check_matrix("linalg.cholesky", A)
    L = call(_CHOLESKY, (A,))
    return finish_out(_conj(L).mT.contiguous() if upper else L, out)


from .spectral import (  # noqa: E402  (the SVD-based half of torch.linalg, built on the ops above)
    eigh,
    eigvalsh,
    lstsq,
    matrix_rank,
    pinv,
    qr,
    svd,
    svdvals,
)

__all__ = ["LinAlgError", "cholesky", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_rank", "pinv", "qr",
           "slogdet", "solve", "svd", "svdvals"]
_ = export
