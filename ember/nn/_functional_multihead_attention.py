"""nn.functional.multi_head_attention_forward: torch's functional multi-head attention, used by
nn.MultiheadAttention (one implementation for both).

Inputs are (L, N, E) (or unbatched (L, E)).  The queries, keys and values are projected (one GEMM when
query, key and value are the same tensor), split into heads, optionally extended by bias_k/bias_v and a zero
key, masked (key_padding_mask merged into attn_mask as -inf), and attended: with need_weights the scores
are formed explicitly so the (head-averaged) weights can be returned; without, the block-wise
scaled_dot_product_attention runs and no L x S matrix is kept.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["multi_head_attention_forward"]


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Whether the inputs are batched, raising torch's errors for inconsistent ranks."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            expected_shape = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected_shape:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected_shape} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         "tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """Bool masks become float masks of target_type with -inf where True (torch's F._canonical_mask)."""
    if mask is None:
        return None
    is_float = mask.is_floating_point()
    if mask.dtype is not dt.bool_ and not is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      "instead.", stacklevel=3)
    if not is_float:
        from .. import zeros

        mask = zeros(tuple(mask.shape), dtype=target_type, device=mask.device).masked_fill_(mask, float("-inf"))
    return mask


def _in_projection_packed(q, k, v, w, b):
    """q, k, v projected by the stacked (3E, E) weight: one GEMM for self-attention, two when key is value."""
    from .functional import linear

    embed_dim = q.size(-1)
    if k is v:
        if q is k:
            return linear(q, w, b).chunk(3, -1)
        w_q, w_kv = w.split([embed_dim, embed_dim * 2])
        b_q, b_kv = (None, None) if b is None else b.split([embed_dim, embed_dim * 2])
        k_proj, v_proj = linear(k, w_kv, b_kv).chunk(2, -1)
        return linear(q, w_q, b_q), k_proj, v_proj
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _project(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
             k_proj_weight, v_proj_weight):
    from .functional import linear

    if use_separate_proj_weight:
        # different embedding dimensions are allowed when separate projection weights are used
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        return _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    for name, weight in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
        if weight is None:
            raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
    b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
    return linear(query, q_proj_weight, b_q), linear(key, k_proj_weight, b_k), linear(value, v_proj_weight, b_v)


def _check_attn_mask_shape(attn_mask, tgt_len, src_len, bsz, num_heads):
    """A 2-D (L, S) mask becomes (1, L, S); a 3-D one must be (N * heads, L, S)."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                               f"{(bsz * num_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _heads(x, static, name, bsz, num_heads, head_dim):
    """(S, N, E) -> (N * heads, S, head_dim), or the caller's precomputed static keys/values."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


def _extend_keys(k, v, attn_mask, key_padding_mask, bias_k, bias_v, add_zero_attn, static_k, static_v, shape):
    """Append bias_k/bias_v (before the head split) or a zero key/value (after it), padding the masks to match.

    `shape` is (bsz, num_heads, head_dim); k and v are (S, N, E) here and come back (N * heads, S', head_dim)."""
    from .. import cat, zeros
    from .functional import pad

    bsz, num_heads, head_dim = shape
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    k = _heads(k, static_k, "static_k", bsz, num_heads, head_dim)
    v = _heads(v, static_v, "static_v", bsz, num_heads, head_dim)
    if add_zero_attn:
        zero_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zero_shape, dtype=v.dtype, device=v.device)], dim=1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    return k, v, attn_mask, key_padding_mask


def _merge_key_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len):
    if key_padding_mask is None:
        return attn_mask
    if key_padding_mask.shape[0] != bsz:
        raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
    if key_padding_mask.shape[1] != src_len:
        raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                             f"{key_padding_mask.shape[1]}")
    key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
        bsz * num_heads, 1, src_len)
    return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask


def _attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal, shape, average_attn_weights):
    """Explicit softmax(q k^T / sqrt(d) + mask) v, returning the (N * heads, L, d) output and the weights."""
    from .functional import dropout, softmax

    bsz, num_heads, tgt_len, src_len = shape
    q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
    if is_causal and attn_mask is None:
        raise AssertionError("FIXME: is_causal not implemented for need_weights")
    scores = q_scaled.matmul(k.transpose(-2, -1))
    weights = softmax(scores if attn_mask is None else attn_mask + scores, dim=-1)
    if dropout_p > 0.0:
        weights = dropout(weights, p=dropout_p)
    output = weights.matmul(v)
    weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
    return output.transpose(0, 1), weights.mean(dim=1) if average_attn_weights else weights


def _attention_without_weights(q, k, v, attn_mask, dropout_p, is_causal, shape):
    """scaled_dot_product_attention over (N, heads, L, d), returning the output as (L, N, heads, d)."""
    from .functional import scaled_dot_product_attention

    bsz, num_heads, tgt_len, src_len = shape
    if attn_mask is not None:
        # (1, L, S) broadcasts over batch and heads; (N * heads, L, S) is split into them
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, q.shape[-1])
    k = k.reshape(bsz, num_heads, src_len, k.shape[-1])
    v = v.reshape(bsz, num_heads, src_len, v.shape[-1])
    return scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal).permute(2, 0, 1, 3)


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int,
                                 num_heads: int, in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None, add_zero_attn: bool,
                                 dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of (L, N, E) query and (S, N, E) key/value (or unbatched (L, E), (S, E)).

    Returns (attn_output (L, N, E), attn_weights (N, L, S), or (N, heads, L, S) with
    average_attn_weights=False, or None with need_weights=False)."""
    from .functional import linear

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the is_causal hint alone drives scaled_dot_product_attention
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
                       k_proj_weight, v_proj_weight)
    if attn_mask is not None:
        attn_mask = _check_attn_mask_shape(attn_mask, tgt_len, src_len, bsz, num_heads)
    k, v, attn_mask, key_padding_mask = _extend_keys(k, v, attn_mask, key_padding_mask, bias_k, bias_v,
                                                     add_zero_attn, static_k, static_v, (bsz, num_heads, head_dim))
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    src_len = k.size(1)
    attn_mask = _merge_key_padding_mask(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    shape = (bsz, num_heads, tgt_len, src_len)
    if need_weights:
        attn_output, weights = _attention_with_weights(q, k, v, attn_mask, dropout_p, is_causal, shape,
                                                       average_attn_weights)
    else:
        attn_output = _attention_without_weights(q, k, v, attn_mask, dropout_p, is_causal, shape)
        weights = None
    attn_output = linear(attn_output.reshape(tgt_len * bsz, embed_dim), out_proj_weight, out_proj_bias)
    attn_output = attn_output.reshape(tgt_len, bsz, attn_output.shape[1])
    if not is_batched:
        attn_output = attn_output.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return attn_output, weights
