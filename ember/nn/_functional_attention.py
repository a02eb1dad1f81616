"""scaled_dot_product_attention, computed block by block (flash-attention style) so memory stays linear.

Forward walks blocks of query rows: scores for one block (block x S), a stable
softmax, the block's output and the row log-sum-exp; the output and the
log-sum-exp (L values) are kept.  Backward recomputes each block's
probabilities from the saved log-sum-exp, so no L x S matrix per head is ever
held beyond one block -- except for short keys (S <= 4 x head dim, see
`_keeps_probabilities`), where keeping the softmax costs at most 4x the
output's memory and saves the recomputation.  With is_causal a block of query
rows only computes the keys it can see (the masked triangle is skipped).  The
block size is `ember.nn.functional.sdpa_block_size` (default 128 query rows;
causal blocks are at most 32).  With dropout_p > 0 the public function runs the
composite (math) form, as torch's CPU dispatch does, so the masks are torch's
draws; the blocked kernel's own dropout (masks regenerated in backward from a
per-call seed) is kept for direct callers.  Like torch's flash and
memory-efficient kernels, this backward is not itself differentiable (no
double backward).
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._ops.random import _factory
from .._tensor import Tensor
from .attention import _flags

__all__ = ["scaled_dot_product_attention", "set_sdpa_block_size", "get_sdpa_block_size"]

_block_size = int(os.environ.get("EMBER_SDPA_BLOCK", "128"))


def set_sdpa_block_size(rows: int) -> None:
    """Query rows per block in scaled_dot_product_attention (memory ~ rows x key length per head)."""
    global _block_size
    if rows <= 0:
        raise ValueError("block size must be positive")
    _block_size = int(rows)


def get_sdpa_block_size() -> int:
    return _block_size


def _mask_block(mask, start, stop):
    if mask is None:
        return None
    if mask.shape[-2] == 1:
        return mask
    return mask[..., start:stop, :]


def _key_stop(causal, stop, key_length):
    """Keys a query block [start, stop) can see: with is_causal (torch's top-left alignment, row i sees keys
    0..i) none past `stop`, so the masked upper triangle of blocks is never computed."""
    return min(stop, key_length) if causal else key_length


def _block_scores(xp, q_block, k_t, mask_block, causal, start, scale):
    """Scores of one query block against the keys it can see: q_block @ k_t[..., :kv] (k_t is K^T), times
    `scale` (None: the softmax kernel scales them), masked.  The scores are scaled, not the queries, as in
    torch's flash kernels.

    Written in place (one pass per step over the block x kv matrix) because attention's time on CPU is
    these elementwise passes more than its two small GEMMs."""
    kv = _key_stop(causal, start + q_block.shape[-2], k_t.shape[-1])
    scores = xp.matmul(q_block, k_t[..., :kv])
    if scale is not None:
        scores *= scale
    if causal and kv > start:
        rows = xp.arange(start, start + q_block.shape[-2])[:, None]
        cols = xp.arange(start, kv)[None, :]
        diagonal = scores[..., start:kv]  # only the block on the diagonal has masked entries
        xp.add(diagonal, xp.where(cols > rows, -np.inf, 0.0).astype(scores.dtype), out=diagonal)
    if mask_block is not None:
        if mask_block.shape[-1] > kv:  # is_causal with a mask too: only the keys the causal block sees
            mask_block = mask_block[..., :kv]
        if mask_block.dtype == np.bool_:
            scores = xp.where(mask_block, scores, -np.inf)
        else:
            scores += mask_block
    return scores


def _transposed(xp, array):
    """array^T (last two dims swapped) for the right-hand side of a GEMM: a contiguous copy for NumPy, whose
    BLAS runs attention's small NN products ~1.6x faster than NT ones (see ember/_compile/loops.py);
    a view elsewhere."""
    if xp is np:
        from .._compile.loops import transposed

        return transposed(array)
    return xp.swapaxes(array, -1, -2)


def _dropout_keep(shape, seed, block_index, p):
    rng = np.random.default_rng([seed, block_index])
    return (rng.random(shape) >= p).astype(np.float32)


def _query_block(causal):
    # Causal attention skips the masked triangle block by block: smaller query blocks skip more of it
    # (32 rows of a 128-token sequence compute 62 % of the scores) at the price of more, smaller GEMMs.
    return min(_block_size, 64) if causal else _block_size


def _keeps_probabilities(query_shape, key_shape) -> bool:
    """Short keys (S <= 4 * head dim): forward keeps the softmax for backward, at most 4x the output's memory,
    instead of backward recomputing Q K^T, the mask and the exponentials (a quarter of attention's time at
    128 tokens).  Longer keys are recomputed block by block, so memory stays linear in the sequence."""
    return key_shape[-2] <= 4 * query_shape[-1]


def _reduced(array):
    """The float16 / bfloat16 dtype an operand came in (torch's flash kernel rounds to it inside), else None."""
    return array.dtype if array.dtype.kind == "f" and array.itemsize < 4 or array.dtype.name == "bfloat16" else None


def _forward_impl(xp, q, k, v, mask, seed, causal, scale, dropout_p, rounded=False):
    # rounded: torch's CPU flash kernel on float16 / bfloat16 operands accumulates in float32 but rounds the
    # unnormalised exponentials to the operands' dtype before multiplying them with V (normalising after);
    # matching that step makes the output agree bit for bit, where a float32 softmax is an ulp off in a
    # third of its entries (nanoGPT under bfloat16 autocast)
    reduced = _reduced(q) if rounded else None
    q, k, v, mask = _widen(q, k, v, mask)
    seed = 0 if seed is None else int(seed)
    length = q.shape[-2]
    out = _like(xp, q.shape[:-1] + (v.shape[-1],), q.dtype, q, xp.empty)
    lse = xp.empty(q.shape[:-1], q.dtype)
    keep = _keeps_probabilities(q.shape, k.shape)
    # only the blocks' visible keys are written (and read back): causal leaves the rest unset
    probabilities = xp.empty(q.shape[:-1] + (k.shape[-2],) if keep else (0,), q.dtype)
    scale = q.dtype.type(scale)
    k_t = _transposed(xp, k)
    block = _query_block(causal)
    for index, start in enumerate(range(0, length, block)):
        stop = min(start + block, length)
        kv = _key_stop(causal, stop, k.shape[-2])
        kernel = None
        if mask is None and dropout_p == 0 and reduced is None:
            kernel = _softmax_kernel(xp, q.shape[:-2] + (stop - start, kv), q.dtype, scale)
        scores = _block_scores(xp, q[..., start:stop, :], k_t, _mask_block(mask, start, stop), causal, start,
                               None if kernel is not None else scale)
        if kernel is not None:  # one generated loop (scale, max, exp, sum, divide) instead of NumPy's passes
            row_max, total, weights = kernel(scores)
            lse[..., start:stop] = (row_max + xp.log(total))[..., 0]
            if keep:
                probabilities[..., start:stop, :kv] = weights
            out[..., start:stop, :] = xp.matmul(weights, v[..., :kv, :])
            continue
        row_max = scores.max(axis=-1, keepdims=True)
        row_max = xp.where(xp.isfinite(row_max), row_max, 0.0)
        weights = xp.exp(xp.subtract(scores, row_max, out=scores), out=scores)
        total = weights.sum(axis=-1, keepdims=True)
        empty = total == 0  # a fully masked row: torch's fused kernels output zeros there, not nan
        total = xp.where(empty, 1.0, total).astype(q.dtype)
        lse[..., start:stop] = xp.where(empty, np.inf, row_max + xp.log(total))[..., 0]
        if reduced is not None:
            if keep:
                probabilities[..., start:stop, :kv] = weights / total
            out[..., start:stop, :] = xp.matmul(weights.astype(reduced).astype(q.dtype), v[..., :kv, :]) / total
            continue
        if keep:  # normalised in place and kept (backward reads them)
            weights /= total
            probabilities[..., start:stop, :kv] = weights
            total = None
        if dropout_p > 0:
            kept = _dropout_keep(weights.shape[:-1] + (k.shape[-2],), seed, index, dropout_p)[..., :kv]
            weights = weights * (kept / (1 - dropout_p)) if keep else _scale_in_place(weights, kept, dropout_p)
        block_out = xp.matmul(weights, v[..., :kv, :])
        # else normalise the block x D output rather than the block x S weights
        out[..., start:stop, :] = block_out if total is None else block_out / total
    return out, lse, probabilities


def _like(xp, shape, dtype, reference, make):
    """An array of the (batch, heads, length, dim) `shape` laid out like `reference`: heads-last, i.e.
    (batch, length, heads, dim) in memory, when the reference is (a q/k/v made by the usual
    `x.view(batch, length, heads, dim).transpose(1, 2)`), else contiguous.  torch's CPU flash kernels lay out
    their output like the query: `out.transpose(1, 2).reshape(batch, length, heads * dim)`, the usual way back
    to one row per token, is then a view, and the gradients coming back through it have the layout of the
    output they are multiplied with in backward."""
    if len(shape) == 4 and reference.ndim == 4 and reference.strides[1] < reference.strides[2] \
            and reference.shape[1] > 1 and reference.shape[2] > 1:
        return make((shape[0], shape[2], shape[1], shape[3]), dtype).swapaxes(1, 2)
    return make(shape, dtype)


def _softmax_rows(scores):
    row_max = scores.amax(-1, keepdim=True)
    weights = (scores - row_max).exp()
    total = weights.sum(-1, keepdim=True)
    return row_max, total, weights / total


def _softmax_kernel(xp, shape, dtype, scale):
    """The generated kernel (ember/_compile/native.py) returning a score block's row max, row sum of
    exponentials and softmax of the scores times `scale`, or None (NumPy passes).  Only for blocks where no
    row is fully masked (no attn_mask: a causal row always sees its own key), since the kernel has no
    all -inf row case."""
    from .._compile import native

    if xp is not np or dtype not in (np.float32, np.float64) or math.prod(shape) < native.MIN_ELEMENTS \
            or shape[-1] == 0 or not scale > 0:  # a negative scale would turn the causal -inf into +inf
        return None
    return native.kernels(f"sdpa_softmax_{float(scale)!r}", lambda scores: _softmax_rows(scores * float(scale)),
                          dt.float32 if dtype == np.float32 else dt.float64)


def _scale_in_place(weights, kept, p):
    weights *= kept / (1 - p)
    return weights


def _backward_impl(xp, g, q, k, v, out, lse, saved, mask, seed, causal, scale, dropout_p, rounded=False):
    # rounded: as torch's flash backward on float16 / bfloat16, the probabilities (for grad V) and the score
    # gradients (for grad Q, grad K, before scaling) are rounded to the operands' dtype before their GEMMs
    reduced = _reduced(q) if rounded else None
    # float16/bfloat16 on torch's math path (not `rounded`): it differentiates a float32 softmax, so each row's
    # sum(dP * P) comes from the probabilities, not from the output rounded to the half type
    exact_delta = not rounded and _reduced(q) is not None
    g, q, k, v, out, lse, mask = _widen(g, q, k, v, out, lse, mask)
    seed = 0 if seed is None else int(seed)
    saved = saved if saved.size else None  # the forward's softmax, when it kept it (_keeps_probabilities)
    length = q.shape[-2]
    grad_q = _like(xp, q.shape, q.dtype, q, xp.empty)
    grad_k, grad_v = (_GradientSum(xp, q, t) for t in (k, v))
    # one fused multiply-and-sum per row: (g * out).sum(-1) builds an L x D temporary, and NumPy multiplies
    # operands of different layouts (g often arrives transposed) several times slower than matching ones
    delta = xp.einsum("...d,...d->...", g, out)[..., None]
    scale = q.dtype.type(scale)
    k_t = _transposed(xp, k) if saved is None else None  # recomputing the scores needs K^T
    v_t = _transposed(xp, v)
    block = _query_block(causal)
    # the last query block first: under is_causal it sees every key, so its products are written straight
    # into the gradients and the earlier blocks add into a prefix of them
    for index, start in reversed(list(enumerate(range(0, length, block)))):
        stop = min(start + block, length)
        q_block = q[..., start:stop, :]
        if saved is not None:
            kv = _key_stop(causal, stop, k.shape[-2])
            probabilities = saved[..., start:stop, :kv]
        else:
            scores = _block_scores(xp, q_block, k_t, _mask_block(mask, start, stop), causal, start, scale)
            kv = scores.shape[-1]
            probabilities = xp.exp(xp.subtract(scores, lse[..., start:stop, None], out=scores), out=scores)
        g_block = g[..., start:stop, :]
        if dropout_p > 0:
            keep = _dropout_keep(probabilities.shape[:-1] + (k.shape[-2],), seed, index, dropout_p)[..., :kv]
            keep = keep / (1 - dropout_p)
            dropped = probabilities * keep
        else:
            keep = None
            dropped = probabilities
        grad_v.add(xp.swapaxes(dropped if reduced is None else dropped.astype(reduced).astype(q.dtype), -1, -2),
                   g_block)
        grad_scores = xp.matmul(g_block, v_t[..., :kv])
        if keep is not None:
            grad_scores *= keep
        grad_scores -= ((grad_scores * probabilities).sum(-1, keepdims=True) if exact_delta
                        else delta[..., start:stop, :])
        grad_scores *= probabilities
        if reduced is not None:
            grad_scores = grad_scores.astype(reduced).astype(q.dtype)
        # the gradient of the scaled scores q k^T * scale: one pass over the block (in cache) instead of
        # scaling the L x D queries and grad_q
        grad_scores *= scale
        xp.matmul(grad_scores, k[..., :kv, :], out=grad_q[..., start:stop, :])
        grad_k.add(xp.swapaxes(grad_scores, -1, -2), q_block)
    return grad_q, grad_k.result(), grad_v.result()


class _GradientSum:
    """grad_k or grad_v summed over query blocks: the first block's product is written into the buffer
    (laid out like k / v, see _like; no zero fill), later ones add into the keys they see."""

    def __init__(self, xp, q, reference) -> None:
        self.xp = xp
        if reference.ndim == q.ndim:
            self.buffer = _like(xp, q.shape[:-2] + reference.shape[-2:], q.dtype, reference, xp.empty)
            self.written = 0  # keys [0, written) hold a sum
        else:
            self.buffer = xp.zeros_like(reference)
            self.written = reference.shape[-2]

    def add(self, a, b) -> None:
        """Add a @ b into the first a.shape[-2] keys."""
        xp, buffer, written, kv = self.xp, self.buffer, self.written, a.shape[-2]
        if written == 0:
            xp.matmul(a, b, out=buffer[..., :kv, :])
        else:
            product = xp.matmul(a, b)
            buffer[..., :min(kv, written), :] += product[..., :written, :]
            if kv > written:
                buffer[..., written:kv, :] = product[..., written:, :]
        self.written = max(written, kv)

    def result(self):
        if self.written < self.buffer.shape[-2]:  # keys no query saw (causal with fewer queries than keys)
            self.buffer[..., self.written:, :] = 0
        return self.buffer


def _sdpa_backward(ctx, grads):
    g = grads[0]
    q, k, v, mask, seed = ctx.inputs
    out, lse, saved = ctx.result
    params = ctx.params
    grad_q, grad_k, grad_v = call(_BACKWARD, (g, q, k, v, out, lse, saved, mask, seed), params)
    return grad_q, grad_k, grad_v, None, None


def _no_double_backward(ctx, grads):
    raise RuntimeError("derivative for scaled_dot_product_attention's backward is not implemented (ember computes "
                       "attention block-wise, like torch's flash attention)")


# Compute dtype None: dispatch must not cast the operands, since a bool mask has to stay bool; the impls
# widen float16/bfloat16 to float32 themselves (torch's CPU kernels accumulate in float32 too).
def _rule(args, params):
    dtype = args[0]._dtype
    widened = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype  # the kept softmax stays float32
    return None, (dtype, dtype, widened)


def _backward_rule(args, params):
    dtype = args[1]._dtype
    return None, (dtype, dtype, dtype)


def _widen(*arrays):
    return tuple(a.astype(np.float32) if a is not None and a.dtype.kind == "f" and a.itemsize < 4
                 or a is not None and a.dtype.name == "bfloat16" else a for a in arrays)


def _meta(args, params):
    q, k, v = args[0], args[1], args[2]
    kept = tuple(q.shape[:-1]) + (k.shape[-2],) if _keeps_probabilities(q.shape, k.shape) else (0,)
    return tuple(q.shape[:-1]) + (v.shape[-1],), tuple(q.shape[:-1]), kept


def _backward_meta(args, params):
    return tuple(args[1].shape), tuple(args[2].shape), tuple(args[3].shape)


SDPA = OpDef("scaled_dot_product_attention", _forward_impl, _sdpa_backward, dtype_rule=_rule,
             saves=SAVE_INPUTS | SAVE_RESULT, outputs=3, differentiable_outputs=(True, False, False), meta=_meta,
             grad_name="ScaledDotProductFlashAttentionForCpuBackward0")
_BACKWARD = OpDef("scaled_dot_product_attention_backward", _backward_impl, _no_double_backward,
                  dtype_rule=_backward_rule, outputs=3, meta=_backward_meta)


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(Q K^T * scale + mask) V, block-wise; see the module docstring."""
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        from .attention.bias import CausalBias

        if isinstance(attn_mask, CausalBias):  # torch routes it by __torch_function__
            return CausalBias._dispatch(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected query, key, and value to have the same embedding dimension, but got query "
                           f"{query.shape[-1]} and key {key.shape[-1]}")
    if query._dtype is not key._dtype or query._dtype is not value._dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if attn_mask is not None and attn_mask._dtype not in (dt.bool_, dt.float32, query._dtype):
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {dt.CPP_TYPE_NAMES.get(attn_mask.dtype.name, attn_mask.dtype.name)} and  "
                           f"query.dtype: {dt.CPP_TYPE_NAMES.get(query.dtype.name, query.dtype.name)} instead.")
    flash_blockers = None if _flags.all_enabled() else _flash_blockers(query, key, value, attn_mask, dropout_p,
                                                                        enable_gqa)
    if is_causal and attn_mask is not None:
        # torch's CPU flash kernel applies both (the causal triangle, then the mask); only its math backend
        # refuses the pair, so raise only where torch would take that backend
        blockers = _flash_blockers(query, key, value, attn_mask, dropout_p, enable_gqa) \
            if _flags.all_enabled() else flash_blockers
        if blockers is not None or _flags.FLASH not in _flags.enabled:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        if key.shape[-3] == 0 or query.shape[-3] % key.shape[-3] or value.shape[-3] != key.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in ")
        repeats = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeats, -3)
        value = value.repeat_interleave(repeats, -3)
    _check_attention_shapes(query, key, value, attn_mask)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if attn_mask is not None and attn_mask._dtype.category >= 2 and attn_mask._dtype is not query._dtype:
        attn_mask = attn_mask.to(query.dtype)
    if not _flags.all_enabled() and _choose_backend(flash_blockers) == _flags.MATH:  # nn.attention.sdpa_kernel
        return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    if dropout_p > 0:
        # torch's fused CPU kernels take no dropout: it runs the math backend, whose dropout is at::dropout on
        # the probabilities (a bernoulli draw of their shape from the default generator).  The same path here
        # draws torch's masks under the same seed, so a model with attention dropout trains as under torch
        # (the blocked kernel's own per-block masks, drawn from a seed, did not)
        return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    # (the blocked kernel still takes a dropout seed: a 0-d tensor drawn by a random factory, an operand of the
    # op, so that under ember.compile the draw is a recorded random node, made anew by each replay)
    seed = _factory((), dt.int64, query._device, False, None, None, ("integers", 0, 2**63 - 1)) \
        if dropout_p > 0 else None
    if key.shape[-2] == 0:  # no keys: torch's output is zeros; the composite form gets there without a row max
        return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    if attn_mask is not None and attn_mask.requires_grad:
        # a learned additive mask: fall back to the composite (math) form so it gets a gradient
        return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale)
    params = {"causal": bool(is_causal), "scale": float(scale), "dropout_p": float(dropout_p)}
    if query._dtype in (dt.float16, dt.bfloat16) and dropout_p == 0:  # torch's flash kernel, not its math path
        params["rounded"] = (_flash_blockers(query, key, value, attn_mask, dropout_p, enable_gqa)
                             if _flags.all_enabled() else flash_blockers) is None
    return call(SDPA, (query, key, value, attn_mask, seed), params)[0]




def _check_attention_shapes(query, key, value, attn_mask) -> None:
    """The batched matmuls' and the mask broadcast's errors, raised before the fused kernel sees the operands."""
    from .._ops._shapes import broadcast_shapes

    batch = tuple(broadcast_shapes(tuple(query.shape[:-2]), tuple(key.shape[:-2])))
    value_batch = tuple(broadcast_shapes(batch, tuple(value.shape[:-2])))
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{math.prod(batch)}, "
                           f"{key.shape[-2]}] but got: [{math.prod(value_batch)}, {value.shape[-2]}].")
    if attn_mask is not None:
        scores = batch + (query.shape[-2], key.shape[-2])
        full = tuple(broadcast_shapes(scores, tuple(attn_mask.shape)))
        if full != scores:
            raise RuntimeError(f"output with shape {list(scores)} doesn't match the broadcast shape {list(full)}")


def _choose_backend(flash_blockers) -> int:
    """torch's CPU choice among the allowed backends: flash when allowed and usable, else math; its errors when
    neither can run (flash_blockers: None when flash can run, else the reasons it cannot)."""
    allowed = _flags.enabled
    if _flags.FLASH not in allowed and _flags.MATH not in allowed:
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
    if _flags.FLASH in allowed and flash_blockers is None:
        return _flags.FLASH
    if _flags.MATH in allowed:
        return _flags.MATH
    warnings.warn("Flash attention kernel not used because:", stacklevel=3)
    for reason in flash_blockers:
        warnings.warn(reason, stacklevel=3)
    raise RuntimeError("No available kernel.  Aborting execution.")


def _flash_blockers(query, key, value, attn_mask, dropout_p, enable_gqa):
    """None when torch's CPU flash kernel accepts these operands (sdp_utils_cpp.cpp use_flash_attention_cpp),
    else the warnings torch gives for the first constraint that fails."""
    if dropout_p > 0:
        return ["Both fused kernels do not support non-zero dropout."]
    if attn_mask is not None and attn_mask.requires_grad:
        return []
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        return [f"All fused kernels requires query, key and value to be 4 dimensional, but got Query dim: "
                f"{query.ndim}, Key dim: {key.ndim}, Value dim: {value.ndim} instead."]
    sizes = (list(query.shape), list(key.shape), list(value.shape))
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        return ["For dense inputs, both fused kernels require query, key and value to have the same batch_size. "
                f"Query.sizes(): {sizes[0]}, Key.sizes(): {sizes[1]}, Value.sizes(): {sizes[2]} instead. To "
                "broadcast dense inputs, try using unsqueeze and expand_to before passing them into the kernel."]
    heads_q, heads_k, heads_v = query.shape[1], key.shape[1], value.shape[1]
    grouped = enable_gqa and heads_k == heads_v and heads_k > 0 and heads_q % heads_k == 0
    if not (heads_q == heads_k == heads_v or grouped):
        return ["For dense input, both fused kernels require query, key and value to have the same num_heads. "
                f"Query.sizes(): {sizes[0]}, Key sizes(): {sizes[1]}, Value sizes(): {sizes[2]} instead. To "
                "broadcast dense inputs, try using unsqueeze and expand_to before passing them into the kernel."]
    if attn_mask is not None:
        full = (query.shape[0], query.shape[1], query.shape[2], key.shape[2])[4 - attn_mask.ndim:]
        if attn_mask.ndim not in (2, 4) or any(m not in (1, f) for m, f in zip(attn_mask.shape, full)):
            return ["Please use the following attn mask shapes: 2d - ({Q_seq_len, 1}  x {KV_seq_len, 1}); 4d - "
                    "({Batch, 1} x {Num_heads, 1} x {Q_seq_len, 1}  x {KV_seq_len, 1})"]
    if not query.shape[-1] == key.shape[-1] == value.shape[-1]:
        return [f"Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "
                f"{query.shape[-1]}, Key.size(-1): {key.shape[-1]}, Value.size(-1): {value.shape[-1]} instead."]
    strides = (query.stride(-1), key.stride(-1), value.stride(-1))
    if strides != (1, 1, 1):
        return [f"All fused kernels require the last dimension of the input to have stride 1. Got "
                f"Query.stride(-1): {strides[0]}, Key.stride(-1): {strides[1]}, Value.stride(-1): {strides[2]}"]
    return None


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale):
    """The composite form (torch's math backend): a row no key may see gets zeros, as torch's _safe_softmax."""
    from .functional import dropout, softmax

    # as torch's math backend: q and k each scaled by sqrt(scale) before the product ("for stability"), which
    # rounds as torch does where scaling the scores would not
    factor = math.sqrt(abs(scale))
    scores = (query * (-factor if scale < 0 else factor)).matmul(key.transpose(-2, -1) * factor)
    if is_causal:
        length, keys = query.shape[-2], key.shape[-2]
        attn_mask = _ops_tril(length, keys, query.device)
    if attn_mask is not None:
        if attn_mask._dtype.category == 0:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
        # softmax of an all -inf row is nan; the composite gives zeros there (and a zero gradient); no data
        # read decides it, so graph capture records it as ops
        blind = (scores == float("-inf")).all(-1, keepdim=True)
        weights = softmax(scores.masked_fill(blind, 0.0), -1).masked_fill(blind, 0.0)
    else:
        weights = softmax(scores, -1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return weights.matmul(value)


def _ops_tril(length: int, keys: int, device) -> Tensor:
    """is_causal's boolean mask: query row i sees keys 0..i (torch's top-left alignment)."""
    from .._ops.creation import ones

    return ones(length, keys, dtype=dt.bool_, device=device).tril()

