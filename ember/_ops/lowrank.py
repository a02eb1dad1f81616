"""torch.svd_lowrank and torch.pca_lowrank: randomized low-rank SVD (Halko, Martinsson and Tropp 2009,
Algorithms 4.4 and 5.1), computed with ember ops so gradients flow through the QR and SVD steps as in torch.
Results depend on random draws (ember's generator), so they match torch's in quality, not bit for bit.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import export


def _linalg():
    from .. import linalg

    return linalg


def _floating(A: Tensor):
    from .. import _dtype as dt

    return A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else dt.get_default_dtype()


def get_approximate_basis(A: Tensor, q: int, niter: int | None = 2, M: Tensor | None = None) -> Tensor:
    """An (m, q) matrix Q with orthonormal columns whose range approximates that of A - M (subspace iteration
    from a Gaussian sketch, re-orthonormalised by QR after each product)."""
    from .random import randn

    niter = 2 if niter is None else niter
    qr = _linalg().qr
    R = randn(A.shape[-1], q, dtype=_floating(A), device=A.device)
    X = A @ R if M is None else A @ R - M @ R
    Q = qr(X).Q
    for _ in range(niter):
        X = A.mH @ Q if M is None else A.mH @ Q - M.mH @ Q
        Q = qr(X).Q
        X = A @ Q if M is None else A @ Q - M @ Q
        Q = qr(X).Q
    return Q


@export(method=False)
def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None) -> tuple:
    """(U, S, V), a rank-q approximation A - M ~ U diag(S) V^H (V, not V^H, as torch); niter subspace
    iterations sharpen it for slowly decaying spectra."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    transposed = m < n
    if transposed:
        A = A.mH
        M = None if M is None else M.mH
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = Q.mH @ A if M is None else Q.mH @ A - Q.mH @ M
    U, S, Vh = _linalg().svd(B, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    if transposed:
        U, V = V, U
    return U, S, V


@export(method=False)
def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """(U, S, V) of a randomized PCA: svd_lowrank of A with its column means removed (center=True)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"pca_lowrank(): argument 'A' must be Tensor, not {type(A).__name__}")
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    return svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter, M=None)
