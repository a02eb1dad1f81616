"""Small pieces weight_norm needs, written in ember ops (so they differentiate).

torch has these as ATen ops (torch._weight_norm, torch.norm_except_dim); ember's op registry does not, so
nn.utils carries compositions of existing ops.  They are private: nn.utils is their only user.
"""

from __future__ import annotations


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
