"""torch.linalg's orthogonal factorizations: qr, svd, svdvals, eigh, eigvalsh, and pinv, lstsq,
matrix_rank built on them.

Backward formulas are torch's (FunctionsManual.cpp: linalg_qr_backward,
svd_backward, linalg_eig_backward for the Hermitian case, pinv_backward).
They hold for full-rank inputs with distinct singular values / eigenvalues;
the sign (phase) of singular and eigen vectors is arbitrary, as in LAPACK.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import Tensor
from ._api import finish_out
from .decompositions import (
    BOTH,
    LinAlgError,
    _conj,
    _eye_like,
    _keep,
    _matmul,
    _real_of,
    _return_type,
    _tril_mask,
    check_matrix,
    diag_embed,
    diagonal_of,
    finish_out_exact,
    inv,
)

LinalgQR = _return_type("linalg_qr", ("Q", "R"))
LinalgSVD = _return_type("linalg_svd", ("U", "S", "Vh"))
LinalgEigh = _return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
LinalgLstsq = _return_type("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


def _right_solve_h(B: Tensor, R: Tensor) -> Tensor:
    """B R^{-H}, by solving R X^H = B^H."""
    from .decompositions import solve

    return _conj(solve(R, _conj(B).mT)).mT


# ---------------------------------------------------------------- qr


def _qr_impl(xp, a, mode):
    if mode == "r":
        r = xp.linalg.qr(a, mode="r")
        return xp.zeros((0,), a.dtype), r
    return tuple(xp.linalg.qr(a, mode=mode))


def _qr_meta(args, params):
    *batch, m, n = args[0].shape
    k = min(m, n)
    mode = params["mode"]
    if mode == "r":
        return (0,), tuple(batch) + (k, n)
    if mode == "complete":
        return tuple(batch) + (m, m), tuple(batch) + (m, n)
    return tuple(batch) + (m, k), tuple(batch) + (k, n)


def _syminvadj(X: Tensor) -> Tensor:
    """X + X^H with its (real) diagonal halved."""
    result = X + _conj(X).mT
    return result * (1 - 0.5 * _eye_like(X.shape[-1], X).real)


def _qr_square_backward(gQ, gR, Q, R):
    """m >= n: gA = (gQ + Q syminvadj(triu(gR R^H - Q^H gQ))) R^{-H}."""
    n = R.shape[-1]
    inner = _matmul(gR, _conj(R).mT) - _matmul(_conj(Q).mT, gQ)
    upper = inner * _tril_mask(n, inner).mT
    return _right_solve_h(gQ + _matmul(Q, _syminvadj(upper)), R)


def _qr_backward(ctx, grads):
    mode = ctx.params["mode"]
    if mode == "r":  # checked before reading Q's shape: mode 'r' returns an empty Q
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    Q, R = ctx.result
    gQ, gR = grads
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_square_backward(gQ, gR, Q, R)
    # m < n: A = [X | Y] with X = Q R_X square and R_Y = Q^H Y; R_Y's gradient reaches Q through Y.
    X_R, Y_R = R[..., :, :m], R[..., :, m:]
    gX_R, gY_R = gR[..., :, :m], gR[..., :, m:]
    Y = _matmul(Q, Y_R)
    grad_X = _qr_square_backward(gQ + _matmul(Y, _conj(gY_R).mT), gX_R, Q, X_R)
    grad_Y = _matmul(Q, gY_R)
    from .creation import eye

    first = eye(m, n, dtype=grad_X.dtype, device=grad_X.device)
    rest = eye(n, dtype=grad_X.dtype, device=grad_X.device)[m:]
    return _matmul(grad_X, first) + _matmul(grad_Y, rest)


_QR = OpDef("linalg_qr", _qr_impl, _qr_backward, dtype_rule=_keep, meta=_qr_meta, saves=SAVE_RESULT, outputs=2)


def qr(A: Tensor, mode: str = "reduced", *, out=None):
    """A = Q R with Q orthonormal columns and R upper triangular; mode 'reduced', 'complete' or 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    check_matrix("linalg.qr", A, square=False, low_precision="geqrf_cpu")
    return finish_out(LinalgQR(*call(_QR, (A,), {"mode": mode})), out)


# ---------------------------------------------------------------- svd


def _svd_rule(args, params):
    dtype = args[0]._dtype
    return dtype, (dtype, _real_of(dtype), dtype)


def _svd_meta(args, params):
    *batch, m, n = args[0].shape
    batch = tuple(batch)
    k = min(m, n)
    if params["full_matrices"]:
        return batch + (m, m), batch + (k,), batch + (n, n)
    return batch + (m, k), batch + (k,), batch + (k, n)


def svd_backward(gU, gS, gVh, U, S, Vh) -> Tensor:
    """torch's svd_backward for the reduced SVD (None gradients for unused outputs)."""
    if gU is None and gVh is None:
        return _matmul(U * gS.unsqueeze(-2).to(U.dtype), Vh)
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    V, gV = _conj(Vh).mT, None if gVh is None else _conj(gVh).mT
    S_c = S.to(U.dtype)
    UhgU = _skew(_matmul(_conj(U).mT, gU)) if gU is not None else None
    VhgV = _skew(_matmul(Vh, gV)) if gV is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_like(k, S)
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S_c.unsqueeze(-2) + S_c.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU / E) * S_c.unsqueeze(-2)
    else:
        gA = S_c.unsqueeze(-1) * (VhgV / E)
    if gS is not None:
        gA = gA + diag_embed(gS.to(U.dtype))
    if U._dtype.is_complex and UhgU is not None:
        gA = gA + diag_embed(diagonal_of(UhgU) / (2 * S_c))
    if m > k and gU is not None:
        gA = _matmul(U, gA)
        gUSinv = gU / S_c.unsqueeze(-2)
        gA = gA + gUSinv - _matmul(U, _matmul(_conj(U).mT, gUSinv))
        return _matmul(gA, Vh)
    if n > k and gV is not None:
        gA = _matmul(gA, Vh)
        SinvgVh = gVh / S_c.unsqueeze(-1)
        gA = gA + SinvgVh - _matmul(_matmul(SinvgVh, V), Vh)
        return _matmul(U, gA)
    return _matmul(_matmul(U, gA), Vh)


def _skew(X: Tensor) -> Tensor:
    return X - _conj(X).mT


def _svd_op_backward(ctx, grads):
    U, S, Vh = ctx.result
    gU, gS, gVh = grads
    k = S.shape[-1]
    if ctx.params["full_matrices"]:
        U, Vh, gU, gVh = U[..., :, :k], Vh[..., :k, :], gU[..., :, :k], gVh[..., :k, :]
    return svd_backward(gU, gS, gVh, U, S, Vh)


def _svd_impl(xp, a, full_matrices):
    with _converging():
        return tuple(xp.linalg.svd(a, full_matrices=full_matrices))


def _svdvals_impl(xp, a):
    with _converging():
        return xp.linalg.svd(a, compute_uv=False)


class _converging:
    """Turns NumPy's LinAlgError (a ValueError) from gesdd into torch's LinAlgError (a RuntimeError)."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if kind is not None and issubclass(kind, np.linalg.LinAlgError):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.") from None
        return False


def _check_svd_driver(A: Tensor, driver) -> None:
    if driver is not None and A.device.type != "cuda":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


_SVD = OpDef("linalg_svd", _svd_impl,
             _svd_op_backward, dtype_rule=_svd_rule, meta=_svd_meta, saves=SAVE_RESULT, outputs=3)


def svd(A: Tensor, full_matrices: bool = True, *, driver=None, out=None):
    """A = U diag(S) Vh, singular values descending (torch.linalg.svd)."""
    check_matrix("linalg.svd", A, square=False, low_precision="linalg_svd_cpu")
    _check_svd_driver(A, driver)
    return finish_out(LinalgSVD(*call(_SVD, (A,), {"full_matrices": bool(full_matrices)})), out)


def _svdvals_backward(ctx, g):
    (A,) = ctx.inputs
    U, _, Vh = svd(A, full_matrices=False)
    return svd_backward(None, g, None, U, None, Vh)


_SVDVALS = OpDef("linalg_svdvals", _svdvals_impl, _svdvals_backward,
                 dtype_rule=lambda args, p: (args[0]._dtype, _real_of(args[0]._dtype)),
                 meta=lambda args, p: tuple(args[0].shape[:-2]) + (min(args[0].shape[-2:]),), saves=SAVE_INPUTS)


def svdvals(A: Tensor, *, driver=None, out=None) -> Tensor:
    """The singular values of A, descending (torch.linalg.svdvals)."""
    check_matrix("linalg.svd", A, square=False, low_precision="linalg_svd_cpu")  # torch's names svd
    _check_svd_driver(A, driver)
    return finish_out_exact(call(_SVDVALS, (A,)), out)


# ---------------------------------------------------------------- eigh


def _eigh_backward(ctx, grads):
    L, V = ctx.result
    gL, gV = grads
    n = L.shape[-1]
    VhgV = _matmul(_conj(V).mT, gV)
    VhgV = 0.5 * (VhgV - _conj(VhgV).mT)
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye_like(n, L)
    inner = VhgV / E.to(V.dtype) + diag_embed(gL.to(V.dtype))
    return _matmul(V, _matmul(inner, _conj(V).mT))


def _eigh_meta(args, params):
    shape = tuple(args[0].shape)
    return shape[:-1], shape


_EIGH = OpDef("linalg_eigh", lambda xp, a, UPLO: tuple(xp.linalg.eigh(a, UPLO=UPLO)), _eigh_backward,
              dtype_rule=lambda args, p: (args[0]._dtype, (_real_of(args[0]._dtype), args[0]._dtype)),
              meta=_eigh_meta, saves=SAVE_RESULT, outputs=2)


def _check_uplo(UPLO: str) -> None:
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A: Tensor, UPLO: str = "L", *, out=None):
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices, reading one triangle (UPLO)."""
    check_matrix("linalg.eigh", A, low_precision="linalg_eigh_cpu", integer_kernel=True)
    _check_uplo(UPLO)
    return finish_out(LinalgEigh(*call(_EIGH, (A,), {"UPLO": UPLO})), out)


def _eigvalsh_backward(ctx, g):
    (A,) = ctx.inputs
    _, V = eigh(A, ctx.params["UPLO"])
    return _matmul(V * g.unsqueeze(-2).to(V.dtype), _conj(V).mT)


_EIGVALSH = OpDef("linalg_eigvalsh", lambda xp, a, UPLO: xp.linalg.eigvalsh(a, UPLO=UPLO), _eigvalsh_backward,
                  dtype_rule=lambda args, p: (args[0]._dtype, _real_of(args[0]._dtype)),
                  meta=lambda args, p: tuple(args[0].shape[:-1]), saves=SAVE_INPUTS)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out=None) -> Tensor:
    """Eigenvalues (ascending) of Hermitian matrices (torch.linalg.eigvalsh)."""
    check_matrix("linalg.eigh", A, low_precision="linalg_eigh_cpu", integer_kernel=True)  # torch's names eigh
    _check_uplo(UPLO)
    return finish_out_exact(call(_EIGVALSH, (A,), {"UPLO": UPLO}), out)


# ---------------------------------------------------------------- pinv, matrix_rank, lstsq


def _tolerance(xp, S, atol, rtol, m, n):
    """max(atol, rtol * largest singular value); rtol defaults to eps * max(m, n) unless atol > 0 is given."""
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else float(dt.finfo(_real_numpy(S)).eps) * max(m, n)
    largest = S.max(axis=-1, keepdims=True) if S.shape[-1] else xp.zeros(S.shape[:-1] + (1,), S.dtype)
    return xp.maximum(atol or 0.0, rtol * largest)


def _real_numpy(array):
    return dt.float64 if array.dtype.itemsize == 8 else dt.float32


def _pinv_impl(xp, a, atol=None, rtol=None, hermitian=False):
    m, n = a.shape[-2:]
    if hermitian:
        values, vectors = xp.linalg.eigh(a)
        S = xp.abs(values)
        keep = S > _tolerance(xp, S, atol, rtol, m, n)
        scaled = xp.where(keep, 1 / xp.where(keep, values, 1), 0)
        return xp.matmul(vectors * scaled[..., None, :], xp.conj(xp.swapaxes(vectors, -1, -2)))
    with _converging():
        U, S, Vh = xp.linalg.svd(a, full_matrices=False)
    keep = S > _tolerance(xp, S, atol, rtol, m, n)
    S_inverse = xp.where(keep, 1 / xp.where(keep, S, 1), 0)
    return xp.matmul(xp.conj(xp.swapaxes(Vh, -1, -2)) * S_inverse[..., None, :], xp.conj(xp.swapaxes(U, -1, -2)))


def _pinv_backward(ctx, g):
    (A,) = ctx.inputs
    pinvA = ctx.result
    m, n = A.shape[-2], A.shape[-1]
    pinvAh, gradh = _conj(pinvA).mT, _conj(g).mT
    if m <= n:
        K = _matmul(gradh, pinvA)
        KpinvAh = _matmul(K, pinvAh)
        grad = (-_conj(_matmul(pinvA, K)).mT + KpinvAh - _matmul(_matmul(A, pinvA), KpinvAh)
                + _matmul(_matmul(pinvAh, pinvA), gradh - _matmul(K, A)))
    else:
        K = _matmul(pinvA, gradh)
        pinvAhK = _matmul(pinvAh, K)
        grad = (-_conj(_matmul(K, pinvA)).mT + _matmul(_matmul(gradh - _matmul(A, K), pinvA), pinvAh) + pinvAhK
                - _matmul(_matmul(pinvAhK, pinvA), A))
    return grad


_PINV = OpDef("linalg_pinv", _pinv_impl, _pinv_backward, dtype_rule=_keep,
              meta=lambda args, p: tuple(args[0].shape[:-2]) + (args[0].shape[-1], args[0].shape[-2]), saves=BOTH)


def _value(x):
    return x.item() if isinstance(x, Tensor) else x


def _is_batched(x) -> bool:
    return isinstance(x, Tensor) and x.numel() != 1


def _tolerance_tensor(S: Tensor, atol, rtol, m: int, n: int) -> Tensor:
    """torch's max(atol, rtol * sigma_max) with per-matrix (tensor) atol/rtol, shaped (..., 1) against S; rtol
    defaults to eps * max(m, n) where atol is absent or <= 0, else 0 (torch's get_atol_rtol)."""
    real = S.dtype
    eps = float(dt.finfo(real).eps) * max(m, n)
    atol_t = atol.to(real) if isinstance(atol, Tensor) else S.new_tensor(0.0 if atol is None else float(atol))
    if rtol is None:
        rtol_t = S.new_tensor(eps) if atol is None else (atol_t <= 0).to(real) * eps
    else:
        rtol_t = rtol.to(real) if isinstance(rtol, Tensor) else S.new_tensor(float(rtol))
    largest = S.amax(-1, keepdim=True) if S.shape[-1] else S.new_zeros(tuple(S.shape[:-1]) + (1,))
    return (rtol_t.unsqueeze(-1) * largest).maximum(atol_t.unsqueeze(-1))


def pinv(A: Tensor, rcond=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The Moore-Penrose pseudo-inverse, singular values <= max(atol, rtol * sigma_max) treated as zero.
    torch's older overload pinv(A, rcond, hermitian) takes rcond as rtol with atol 0 (NumPy's meaning)."""
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg_pinv() received an invalid combination of arguments: rcond cannot be given "
                            "with atol or rtol")
        atol, rtol = 0.0, rcond
    if A.ndim < 2 or A._dtype.category < 2 or A._dtype in (dt.float16, dt.bfloat16):
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"linalg.pinv({SCALAR_NAMES[A._dtype.name]}{{[{', '.join(map(str, A.shape))}]}}): "
                           "expected a tensor with 2 or more dimensions of float, double, cfloat or cdouble types")
    if _is_batched(atol) or _is_batched(rtol):  # per-matrix tolerances: torch's composite, in ember ops
        m, n = A.shape[-2:]
        if hermitian:
            values, vectors = eigh(A)
            keep = values.abs() > _tolerance_tensor(values.abs(), atol, rtol, m, n)
            scaled = values.reciprocal().where(keep, 0).to(A.dtype)
            return finish_out(_matmul(vectors * scaled.unsqueeze(-2), _conj(vectors).mT), out)
        U, S, Vh = svd(A, full_matrices=False)
        keep = S > _tolerance_tensor(S, atol, rtol, m, n)
        scaled = S.reciprocal().where(keep, 0).to(A.dtype)
        return finish_out(_matmul(_conj(Vh).mT * scaled.unsqueeze(-2), _conj(U).mT), out)
    params = {"atol": _value(atol), "rtol": _value(rtol), "hermitian": bool(hermitian)}
    return finish_out(call(_PINV, (A,), params), out)


def matrix_rank(A: Tensor, tol=None, hermitian: bool = False, *, atol=None, rtol=None, out=None) -> Tensor:
    """The number of singular values above max(atol, rtol * sigma_max) (torch.linalg.matrix_rank); atol and
    rtol may be tensors broadcasting against the batch."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if A._dtype.category < 2 or A._dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    from .._autograd.grad_mode import no_grad

    m, n = A.shape[-2:]
    with no_grad():
        S = eigvalsh(A).abs() if hermitian else svdvals(A)
        rank = (S > _tolerance_tensor(S, atol, rtol, m, n)).sum(-1)
    return finish_out(rank, out)


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None):
    """The least-squares solution of A X = B (torch.linalg.lstsq), with residuals, rank and singular values
    filled in as torch's drivers do ('gelsy' by default on CPU)."""
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A._dtype.category < 2 or A._dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if B._dtype is not A._dtype:
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {SCALAR_NAMES[A._dtype.name]} and other's dtype "
                           f"{SCALAR_NAMES[B._dtype.name]}")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    driver = driver or "gelsy"
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    from ._shapes import broadcast_shapes

    broadcast_shapes(A.shape[:-2], rhs.shape[:-2])
    if rhs.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    m, n = A.shape[-2:]
    rtol = rcond if rcond is not None and rcond > 0 else None
    solution = _matmul(pinv(A, rtol=rtol), rhs)
    from .._autograd.grad_mode import no_grad
    from .creation import empty

    real = _real_of(A._dtype)
    # torch's residuals are differentiable (an empty one too): keep them on the solution's graph
    residuals = solution.reshape(-1)[:0].abs()
    if m > n and driver != "gelsy":
        if driver == "gels" and n == 0:  # gels' quick return zeroes B, whose trailing rows are the residuals
            residuals = rhs.abs().sum(-2) * 0
        else:
            with no_grad():
                full_rank = driver == "gels" or bool((matrix_rank(A) == n).all())
            if full_rank:
                residuals = (_matmul(A, solution) - rhs).abs().square().sum(-2)
    with no_grad():
        rank = empty(0, dtype=dt.int64, device=A.device)
        values = empty(0, dtype=real, device=A.device)
        if driver != "gels":
            rank = matrix_rank(A, rtol=rtol)
        if driver in ("gelsd", "gelss"):
            values = svdvals(A)
    if vector:  # the residuals keep their last dim (one column), as torch's
        solution = solution.squeeze(-1)
    return LinalgLstsq(solution, residuals, rank, values)


_ = (BOTH, SAVE_INPUTS, inv)
