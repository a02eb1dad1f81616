"""torch.nn.attention.bias: causal biases that scaled_dot_product_attention understands.

`causal_upper_left(L, S)` is is_causal=True's mask (row i sees keys 0..i);
`causal_lower_right(L, S)` aligns the triangle to the bottom-right corner
(row i sees keys 0..i + S - L), the mask for decoding with a KV cache.
Passed as attn_mask, an upper-left bias (or a square one) runs as is_causal=True;
a lower-right one is materialised into a boolean mask, which is what torch
does on the CPU.

In torch CausalBias is a Tensor subclass routed by __torch_function__; ember
has no __torch_function__, so it is a plain object that
scaled_dot_product_attention recognises (isinstance(bias, Tensor) is False).
"""

from __future__ import annotations

import warnings
from enum import IntEnum, auto

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """UPPER_LEFT: tril(ones(L, S)); LOWER_RIGHT: tril(ones(L, S), diagonal=S - L)."""

    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


class CausalBias:
    """A causal (triangular) attention bias of a query length and a key/value length."""

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)

    def _materialize(self, device=None):
        """The bias as a boolean (seq_len_q, seq_len_kv) mask (True: attend)."""
        import ember

        ones = ember.ones(self.seq_len_q, self.seq_len_kv, device=device or "cpu", dtype=ember.bool)
        if self.variant == CausalVariant.UPPER_LEFT:
            return ember.tril(ones)
        return ember.tril(ones, diagonal=self.seq_len_kv - self.seq_len_q)

    @staticmethod
    def _dispatch(query, key, value, attn_mask: CausalBias, dropout_p: float = 0.0, is_causal: bool = False,
                  scale: float | None = None, enable_gqa: bool = False):
        """scaled_dot_product_attention with this bias as its mask."""
        from .. import functional as F

        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=dropout_p,
                                                  is_causal=True, scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask._materialize(query.device),
                                                  dropout_p=dropout_p, is_causal=False, scale=scale,
                                                  enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")

    def __repr__(self) -> str:
        return repr(self._materialize())


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal bias of size (seq_len_q, seq_len_kv): is_causal=True's mask."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal bias of size (seq_len_q, seq_len_kv): the triangle ends in the bottom-right corner."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
