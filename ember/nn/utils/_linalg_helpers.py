"""Small linear-algebra pieces the parametrizations need, written in ember ops (so they differentiate).

torch has these as ATen ops (torch.matrix_exp, torch.linalg.householder_product, torch.geqrf,
torch._weight_norm, torch.norm_except_dim); ember's op registry does not, so nn.utils carries
compositions of existing ops.  They are private: nn.utils is their only user.
"""

from __future__ import annotations

import math

from ..._autograd.grad_mode import no_grad


def norm_except_dim(v, pow: float = 2, dim: int = 0):
    """torch.norm_except_dim: the p-norm over every dim but `dim` (kept, size 1 elsewhere); dim=-1: whole tensor."""
    import ember

    if dim == -1:
        return ember.linalg.vector_norm(v, pow)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    return ember.linalg.vector_norm(v, pow, dim=others, keepdim=True)


def weight_norm(v, g, dim: int = 0):
    """torch._weight_norm: v * (g / ||v||) with the norm taken over every dim but `dim`."""
    return v * (g / norm_except_dim(v, 2, dim))


def matrix_exp(A):
    """exp(A) by scaling and squaring a degree-18 Taylor polynomial (accurate to rounding for ||A/2^s|| <= 1/2)."""
    import ember

    with no_grad():
        norm = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    X = A / (2.0 ** squarings)
    identity = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
    result = identity
    term = identity
    for k in range(1, 19):
        term = term @ X / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def householder_product(A, tau):
    """torch.linalg.householder_product: the first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, where v_i is
    column i of A below the diagonal with an implicit 1 on it."""
    import ember

    n, k = A.shape[-2], tau.shape[-1]
    rows = ember.arange(n, device=A.device)
    Q = ember.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    for i in range(k):
        below = (rows > i).to(A.dtype)
        unit = (rows == i).to(A.dtype)
        v = A[..., :, i] * below + unit
        Qv = (Q @ v.unsqueeze(-1))
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * Qv) @ v.conj().unsqueeze(-2)
    return Q[..., :, :A.shape[-1]]


@no_grad()
def geqrf(A):
    """torch.geqrf (LAPACK's Householder QR): R on and above the diagonal, the reflectors below it, and tau."""
    import ember

    if A.ndim > 2:
        parts = [geqrf(a) for a in A.reshape(-1, *A.shape[-2:])]
        X = ember.stack([p[0] for p in parts]).reshape(A.shape)
        tau = ember.stack([p[1] for p in parts]).reshape(*A.shape[:-2], -1)
        return X, tau
    X = A.clone()
    m, n = X.shape
    k = min(m, n)
    taus = []
    for j in range(k):
        alpha = float(X[j, j])
        rest_norm = float(ember.linalg.vector_norm(X[j + 1:, j])) if j + 1 < m else 0.0
        if rest_norm == 0.0:
            taus.append(0.0)
            continue
        beta = -math.copysign(math.hypot(alpha, rest_norm), alpha)
        tau = (beta - alpha) / beta
        v = X[j + 1:, j] / (alpha - beta)
        full_v = ember.cat([ember.ones(1, dtype=X.dtype), v])
        trailing = X[j:, j + 1:]
        X[j:, j + 1:] = trailing - tau * full_v.unsqueeze(1) * (full_v.unsqueeze(0) @ trailing)
        X[j, j] = beta
        X[j + 1:, j] = v
        taus.append(tau)
    return X, ember.tensor(taus, dtype=X.dtype)
