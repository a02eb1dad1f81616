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
from .._backends import to_host
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out

BOTH = SAVE_INPUTS | SAVE_RESULT


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix is singular or not positive-definite."""


def check_matrix(name: str, A: Tensor, square: bool = True, low_precision: str = "message",
                 integer_kernel: bool = False) -> None:
    """torch's argument checks for linalg functions: >= 2 dims, float or complex, square.  `low_precision` is
    "message" (torch's "Low precision dtypes not supported" RuntimeError) or the name of the CPU kernel whose
    dispatch fails for half/bfloat16 (torch 2.13's NotImplementedError, e.g. "lu_cpu"); `integer_kernel` makes
    integer and bool inputs fail at that kernel too, as linalg.eigh's do (it has no float check of its own)."""
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    dtype = A._dtype
    kernel_error = NotImplementedError(f"\"{low_precision}\" not implemented for '{SCALAR_NAMES[dtype.name]}'")
    if dtype.category < 2:
        if integer_kernel:
            raise kernel_error
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[dtype.name]}")
    if dtype in (dt.float16, dt.bfloat16):
        if low_precision != "message":
            raise kernel_error
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {SCALAR_NAMES[dtype.name]}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def finish_out_exact(result: Tensor, out, message: str | None = None):
    """`out=` for the linalg ops whose out tensor must already have the result's dtype: torch raises instead of
    casting there.  `message` may name {want}/{got} (Double, Float) or {want_c}/{got_c} (double, float)."""
    if isinstance(out, Tensor) and out._dtype is not result._dtype:
        names = {"want": SCALAR_NAMES[result._dtype.name], "got": SCALAR_NAMES[out._dtype.name],
                 "want_c": dt.CPP_TYPE_NAMES[result._dtype.name], "got_c": dt.CPP_TYPE_NAMES[out._dtype.name]}
        raise RuntimeError((message or "Expected out tensor to have dtype {want_c}, but got {got_c} instead")
                           .format(**names))
    return finish_out(result, out)


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


def potf2(matrix: np.ndarray) -> tuple:
    """LAPACK's unblocked Cholesky (potf2, lower triangle read): (L, info).  info is 0, or the order of the first
    leading minor that is not positive-definite (NaN counts as not positive, as LAPACK's `ajj <= 0 or isnan`);
    then L holds the finished columns, that pivot's a_jj - |l_j|^2 on the diagonal and A's own entries below
    it, which is the L torch's cholesky_ex returns for a failed matrix."""
    a = np.tril(matrix).astype(matrix.dtype, copy=True)
    for j in range(a.shape[-1]):
        row = a[j, :j]
        pivot = (a[j, j] - np.vdot(row, row)).real
        if not pivot > 0:
            a[j, j] = pivot
            return a, j + 1
        pivot = np.sqrt(pivot)
        a[j, j] = pivot
        a[j + 1:, j] = (a[j + 1:, j] - a[j + 1:, :j] @ row.conj()) / pivot
    return a, 0


def cholesky_with_info(array: np.ndarray) -> tuple:
    """(L, info) over a batch of matrices (lower triangles read), as LAPACK's potrf reports them: NumPy's
    Cholesky where it succeeds with finite values, potf2 (to find the failing minor) elsewhere."""
    array = np.asarray(array)
    batch = array.shape[:-2]
    try:
        with np.errstate(all="ignore"):
            factor = np.linalg.cholesky(array) if array.size else array.copy()
        if np.isfinite(factor).all():
            return factor, np.zeros(batch, np.int32)
    except np.linalg.LinAlgError:
        pass
    flat = array.reshape((-1,) + array.shape[-2:])
    with np.errstate(all="ignore"):
        results = [potf2(matrix) for matrix in flat]
    factor = np.stack([each[0] for each in results]).reshape(array.shape) if results else array.copy()
    return factor, np.array([each[1] for each in results], np.int32).reshape(batch)


def _not_positive_definite(info) -> LinAlgError:
    flat = np.asarray(info).reshape(-1)
    index = int(np.argmax(flat > 0))
    prefix = _batch_prefix(np.shape(info), index)
    return LinAlgError(f"linalg.cholesky: {prefix}The factorization could not be completed because the input is not "
                       f"positive-definite (the leading minor of order {flat[index]} is not positive-definite).")


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
    return finish_out_exact(call(_INV, (A,)), out)


def _det_backward(ctx, g):
    """g conj(det) A^{-H}; for a batch with a singular matrix, torch's linalg_det_backward: the SVD cofactor
    formula when recording a graph (create_graph), else its perturbed-LU solve, which is zero where det is 0."""
    from .._autograd.grad_mode import state

    (A,) = ctx.inputs
    scale = (g * _conj(ctx.result)).unsqueeze(-1).unsqueeze(-1)
    try:
        return scale * _conj(inv(A)).mT
    except LinAlgError:
        pass
    if state.enabled:
        return _det_backward_singular(A, g)
    singular = (ctx.result == 0).unsqueeze(-1).unsqueeze(-1)
    regular = A.detach().where(~singular, _eye_like(A.shape[-1], A))
    return (scale * _conj(inv(regular)).mT).masked_fill(singular, 0)


def _det_backward_singular(A: Tensor, g: Tensor) -> Tensor:
    """The cofactor matrix through the SVD: U diag(g alpha prod_{j != i} S_j) Vh, alpha = conj(det U det Vh)."""
    from .reduction import _products_of_others

    U, S, Vh = svd(A)
    alpha = _conj(det(U) * det(Vh))
    D = (g * alpha).unsqueeze(-1) * _products_of_others(S, S.ndim - 1).to(U.dtype)
    return _matmul(U * D.unsqueeze(-2), Vh)


_DET = OpDef("linalg_det", lambda xp, a: xp.linalg.det(a), _det_backward, dtype_rule=_keep,
             meta=lambda args, p: tuple(args[0].shape[:-2]), saves=BOTH)


def det(A: Tensor, *, out=None) -> Tensor:
    """The determinant of each square matrix in A (torch.linalg.det)."""
    check_matrix("linalg.det", A, low_precision="lu_cpu")
    return finish_out_exact(call(_DET, (A,)), out)


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


def _slogdet_impl(xp, a):
    sign, logabsdet = xp.linalg.slogdet(a)
    return xp.where(xp.isnan(logabsdet), 0, sign).astype(sign.dtype), logabsdet  # torch's sign of a NaN matrix: 0


def _slogdet_op(differentiable):
    return OpDef("linalg_slogdet", _slogdet_impl, _slogdet_backward,
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
    check_matrix("linalg.slogdet", A)
    op = _SLOGDET_COMPLEX if A._dtype.is_complex else _SLOGDET_REAL
    return finish_out(LinalgSlogdet(*call(op, (A,))), out)


def _solve_impl(xp, a, b):
    try:
        return xp.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _solver_error("torch.linalg.solve", a, b.shape[:-2]) from None


def _solver_error(name: str, a, other_batch=()) -> LinAlgError:
    """torch's singular-solver error, naming the first singular matrix of the broadcast batch."""
    batch = np.broadcast_shapes(a.shape[:-2], tuple(other_batch))
    flat = np.broadcast_to(to_host(a), batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:])  # (a cuda array too)
    index = next((i for i, matrix in enumerate(flat) if _first_zero_pivot(matrix) is not None), 0)
    return LinAlgError(f"{name}: {_batch_prefix(batch, index)}The solver failed because the input matrix is "
                       "singular.")


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
    check_matrix("linalg.solve", A, low_precision="lu_cpu")
    if B._dtype is not A._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{SCALAR_NAMES[A._dtype.name]} and B of type {SCALAR_NAMES[B._dtype.name]} instead")
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = B.unsqueeze(-1) if vector else B
    if rhs.shape[-2 if left else -1] != A.shape[-1]:  # a vector B is a column even with left=False, as torch's
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {'AX' if left else 'XA'}"
                           f" = B ({A.shape[-2]}x{A.shape[-1]} and {rhs.shape[-2]}x{rhs.shape[-1]})")
    if not left:
        result = solve(A.mT, rhs.mT).mT
        return finish_out_exact(result.squeeze(-1) if vector else result, out)
    from ._shapes import broadcast_shapes

    broadcast_shapes(A.shape[:-2], rhs.shape[:-2])
    result = call(_SOLVE, (A, rhs))
    return finish_out_exact(result.squeeze(-1) if vector else result, out)


# ---------------------------------------------------------------- cholesky


def _cholesky_impl(xp, a):
    if xp is not np:
        return xp.linalg.cholesky(a)
    factor, info = cholesky_with_info(a)
    if info.any():
        raise _not_positive_definite(info)
    return factor


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
    check_matrix("linalg.cholesky", A, low_precision="cholesky_cpu")
    if upper:  # torch reads A's upper triangle then: U = chol(A^H)^H, with A^H's lower triangle read
        return finish_out_exact(_conj(call(_CHOLESKY, (_conj(A).mT,))).mT.contiguous(), out)
    return finish_out_exact(call(_CHOLESKY, (A,)), out)


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
