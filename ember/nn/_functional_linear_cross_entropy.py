"""F.linear_cross_entropy (torch 2.13): cross_entropy(linear(input, linear_weight, linear_bias), target), and its
chunked path that never holds the whole (batch, classes) logits.

The reference path is the two ops.  With `options` (LinearCrossEntropyOptions), class-index targets, no label
smoothing and no K-dim classes, the batch runs `batch_chunk_size` rows at a time in `acc_dtype`.  For "mean" and
"sum" the gradients of input, weight and bias are computed chunk by chunk during forward (each chunk's logits
turned into softmax - one_hot right away, as torch's op does) and backward scales them by the incoming
gradient: consumed in place unless `allow_retain_graph`, so a second backward raises as torch's.  For "none"
backward recomputes each chunk's logits with the per-row gradient.  Rows whose target is ignore_index weigh 0;
"mean" divides by the sum of the class weights of the rows kept, as cross_entropy does.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._autograd.function import Function
from .._tensor import Tensor

__all__ = ["linear_cross_entropy"]

_TWICE = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double backward are not "
          "supported.")


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *, linear_bias: Tensor | None = None,
                         weight: Tensor | None = None, reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...): linear_weight is (C, *out_features,
    in_features) for a K-dim loss; ignore_index None means -100 (and may not be given with probabilities)."""
    from . import functional as F

    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        chunkable = (not out_features and reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                     and target.dtype is dt.int64)
        if not chunkable:
            warnings.warn(
                "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
                "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
                f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
                f"out_features={out_features}, tracing=False, linear_bias.shape="
                f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
        else:
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options)
    if out_features:
        linear_weight = linear_weight.reshape((math.prod(out_features, start=num_classes), in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=num_classes))
    logits = F.linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                           label_smoothing=label_smoothing)


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options):
    from .._autograd.grad_mode import state

    batched = input.dim() == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    options = options._adjust(num_batches=input.shape[0], in_features=input.shape[-1],
                              num_classes=linear_weight.shape[0], dtype=input.dtype, device=input.device)
    if reduction == "none":
        result = _ChunkedRows.apply(input, linear_weight, target, linear_bias, weight, ignore_index,
                                    options.batch_chunk_size, options.acc_dtype)
    else:
        grad = state.enabled
        needs = (grad and input.requires_grad, grad and linear_weight.requires_grad,
                 grad and linear_bias is not None and linear_bias.requires_grad)
        result = _ChunkedReduced.apply(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                                       options.batch_chunk_size, options.acc_dtype, options.allow_retain_graph,
                                       needs)
    return result if batched else result.squeeze(0)


def _chunks(count: int, size: int):
    return ((start, min(start + size, count)) for start in range(0, count, size))


def _chunk_logits(x, weight, bias, target, class_weight, ignore_index):
    """(logits, safe targets, row weights) of one chunk, in the accumulation dtype: ignored rows weigh 0."""
    logits = x @ weight.t()
    if bias is not None:
        logits = logits + bias
    kept = target != ignore_index
    safe = target.where(kept, target.new_zeros(()))
    rows = kept.to(logits.dtype) if class_weight is None else class_weight[safe] * kept.to(logits.dtype)
    return logits, safe, rows


def _row_gradients(logits, safe, rows):
    """d(row loss)/d(logits) = (softmax - one_hot(target)) * row weight."""
    from .. import arange

    probabilities = logits.softmax(-1)
    probabilities[arange(safe.shape[0]), safe] -= 1
    return probabilities * rows.unsqueeze(1)


def _accumulate(g, x, w, start, stop, grad_x, grad_w, grad_b) -> None:
    """One chunk's logits gradient `g` into the input's rows and the summed weight and bias gradients."""
    if grad_x is not None:
        grad_x[start:stop] = g @ w
    if grad_w is not None:
        grad_w += g.t() @ x[start:stop]
    if grad_b is not None:
        grad_b += g.sum(0)


def _cast(values, dtype):
    return None if values is None else values.to(dtype)


class _ChunkedReduced(Function):
    """"mean" / "sum": the loss and, as forward goes, the gradients it will hand out."""

    @staticmethod
    def forward(ctx, input, linear_weight, target, linear_bias, weight, reduction, ignore_index, chunk, acc_dtype,
                allow_retain, needs):
        from .. import zeros

        x, w, b, cw = (_cast(t, acc_dtype) for t in (input, linear_weight, linear_bias, weight))
        grad_x = zeros(x.shape, dtype=acc_dtype) if needs[0] else None
        grad_w = zeros(w.shape, dtype=acc_dtype) if needs[1] else None
        grad_b = zeros(w.shape[0], dtype=acc_dtype) if needs[2] else None
        total = zeros((), dtype=acc_dtype)
        weight_sum = zeros((), dtype=acc_dtype)
        for start, stop in _chunks(x.shape[0], chunk):
            logits, safe, rows = _chunk_logits(x[start:stop], w, b, target[start:stop], cw, ignore_index)
            picked = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
            total += ((logits.logsumexp(-1) - picked) * rows).sum()
            weight_sum += rows.sum()
            if any(needs):
                _accumulate(_row_gradients(logits, safe, rows), x, w, start, stop, grad_x, grad_w, grad_b)
        scale = 1 / weight_sum if reduction == "mean" else None
        loss = total / weight_sum if reduction == "mean" else total
        ctx.grads = [None if g is None else (g * scale if scale is not None else g)
                     for g in (grad_x, grad_w, grad_b)]
        ctx.dtypes = (input.dtype, linear_weight.dtype, None if linear_bias is None else linear_bias.dtype)
        ctx.allow_retain = allow_retain
        return loss.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        if ctx.grads is None:
            raise RuntimeError(_TWICE)
        grads = [None if g is None else (g * grad_output.to(g.dtype)).to(dtype)
                 for g, dtype in zip(ctx.grads, ctx.dtypes)]
        if not ctx.allow_retain:
            ctx.grads = None  # (handed out: torch's op consumes its buffers here)
        return grads[0], grads[1], None, grads[2], None, None, None, None, None, None, None


class _ChunkedRows(Function):
    """"none": one loss per row; backward recomputes each chunk's logits with the rows' incoming gradients."""

    @staticmethod
    def forward(ctx, input, linear_weight, target, linear_bias, weight, ignore_index, chunk, acc_dtype):
        from .. import cat

        x, w, b, cw = (_cast(t, acc_dtype) for t in (input, linear_weight, linear_bias, weight))
        losses = []
        for start, stop in _chunks(x.shape[0], chunk):
            logits, safe, rows = _chunk_logits(x[start:stop], w, b, target[start:stop], cw, ignore_index)
            picked = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
            losses.append((logits.logsumexp(-1) - picked) * rows)
        ctx.save_for_backward(input, linear_weight, target, linear_bias, weight)
        ctx.settings = (ignore_index, chunk, acc_dtype)
        return cat(losses).to(input.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        from .. import zeros

        input, linear_weight, target, linear_bias, weight = ctx.saved_tensors
        ignore_index, chunk, acc_dtype = ctx.settings
        needs = ctx.needs_input_grad
        x, w, b, cw = (_cast(t, acc_dtype) for t in (input, linear_weight, linear_bias, weight))
        upstream = grad_output.to(acc_dtype)
        grad_x = zeros(x.shape, dtype=acc_dtype) if needs[0] else None
        grad_w = zeros(w.shape, dtype=acc_dtype) if needs[1] else None
        grad_b = zeros(w.shape[0], dtype=acc_dtype) if linear_bias is not None and needs[3] else None
        for start, stop in _chunks(x.shape[0], chunk):
            logits, safe, rows = _chunk_logits(x[start:stop], w, b, target[start:stop], cw, ignore_index)
            g = _row_gradients(logits, safe, rows * upstream[start:stop])
            _accumulate(g, x, w, start, stop, grad_x, grad_w, grad_b)
        return (_cast(grad_x, input.dtype), _cast(grad_w, linear_weight.dtype), None,
                None if grad_b is None else grad_b.to(linear_bias.dtype), None, None, None, None)
