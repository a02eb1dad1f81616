"""nn.functional losses: every loss of torch.nn.functional, as decompositions into registry ops.

Reductions follow torch (`reduction` 'none'/'mean'/'sum' and the legacy size_average/reduce); class targets are
range-checked by an op (so a compiled graph keeps the check without reading values into Python).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._autograd.grad_mode import no_grad
from .._autograd.grad_mode import state as _grad_state
from .._autograd.node import name_node
from .._dispatch import SAVE_INPUTS, OpDef, call, keep
from .._tensor import SCALAR_NAMES, Tensor
from .functional import log_softmax, logsigmoid, one_hot, pairwise_distance, range_check, softplus

__all__ = [
    "mse_loss", "l1_loss", "huber_loss", "smooth_l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "multilabel_soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "multi_margin_loss", "multilabel_margin_loss",
    "ctc_loss",
]

def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else "mean" if size_average else "sum"
    # torch's _Reduction.legacy_get_string warns each time (old VAE / GAN code still passes size_average=False)
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def _check_same_size(input: Tensor, target: Tensor, name: str) -> None:
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). This will "
            "likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def _weighted_reduce(loss: Tensor, weight: Tensor | None, input: Tensor, reduction: str,
                     weight_mean: bool = True) -> Tensor:
    """torch's optional `weight` of mse/l1/huber: the input's exact size, and 'mean' divides by sum(weight)
    (huber_loss, weight_mean=False, takes a plain mean of the weighted losses)."""
    if weight is None:
        return _reduce(loss, reduction)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / weight.sum() if weight_mean else loss.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def _kernel_named(loss: Tensor, grad_name: str) -> Tensor:
    """`loss` with torch's node name for the one kernel its loss runs (print(loss) reads
    `grad_fn=<MseLossBackward0>`), where ember's decomposition ends in another op."""
    name_node(loss, grad_name)
    return loss


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    _check_same_size(input, target, "mse_loss")
    loss = (input - target).square()
    loss = _weighted_reduce(loss, weight, input, _legacy_reduction(size_average, reduce, reduction))
    return loss if weight is not None else _kernel_named(loss, "MseLossBackward0")  # (weighted: a composite)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    return _weighted_reduce(loss, weight, input, _legacy_reduction(size_average, reduce, reduction))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    from .. import where

    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    diff = (input - target).abs()
    loss = where(diff < delta, 0.5 * diff.square(), delta * (diff - 0.5 * delta))
    loss = _weighted_reduce(loss, weight, input, reduction, weight_mean=False)
    return loss if weight is not None else _kernel_named(loss, "HuberLossBackward0")


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    from .. import where

    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    diff = (input - target).abs()
    if beta == 0.0:
        loss = diff
    else:
        loss = where(diff < beta, 0.5 * diff.square() / beta, diff - 0.5 * beta)
    loss = _reduce(loss, _legacy_reduction(size_average, reduce, reduction))
    return loss if beta == 0.0 else _kernel_named(loss, "SmoothL1LossBackward0")  # (beta 0: torch's l1_loss)


def _reject_weight_grad(weight: Tensor | None, kernel: str, name: str = "weight") -> None:
    """torch's loss kernels have no derivative for their class/element weights and refuse one that needs it."""
    if weight is not None and weight.requires_grad and _grad_state.enabled:
        raise RuntimeError(f"The function '{kernel}' is not differentiable with respect to argument '{name}'. This "
                           "input cannot have requires_grad True.")


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of class indices over input of shape (N, C, d1, ...) or (C,)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    unbatched = input.ndim == 1
    if unbatched:
        if target.ndim != 0:
            raise ValueError(f"Expected input batch_size ({1}) to match target batch_size ({target.shape[0]}).")
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    elif input.shape[0] != (target.shape[0] if target.ndim else 1):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.ndim else 1}).")
    if input.ndim == 2 and target.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim > 2 and tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0], *input.shape[2:]]}, got {list(target.shape)}")
    scalar_name = target.type().split(".")[-1][:-6]
    if target._dtype not in (dt.int64, dt.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {scalar_name}")
    if target._dtype is dt.uint8:  # torch's 1-D/2-D kernel takes Byte targets; its N-D path wants Long
        if input.ndim > 2:
            raise RuntimeError("expected scalar type Long but found Byte")
        target = target.long()
    classes = input.shape[1]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")
    _reject_weight_grad(weight, "nll_loss2d_forward" if input.ndim > 2 else "nll_loss_forward")
    target = call(_TARGET_CHECK, (target,), {"ignore_index": ignore_index, "classes": classes})
    valid = target != ignore_index
    safe_target = target.masked_fill(~valid, 0)
    picked = input.gather(1, safe_target.unsqueeze(1)).squeeze(1)
    if weight is not None:
        w = weight.gather(0, safe_target.reshape(-1)).reshape(safe_target.shape) * valid
    else:
        w = valid.to(input.dtype)
    loss = -picked * w
    if reduction == "none":
        loss = loss.squeeze(0) if unbatched else loss
    elif reduction == "sum":
        loss = loss.sum()
    elif reduction == "mean":
        loss = call(_WEIGHTED_MEAN, (loss.sum(), w.sum()))
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    # torch's kernels: nll_loss for (N, C) / (C,), nll_loss2d for (N, C, H, W); other N-D input is reshaped to
    # 4-D around nll_loss2d, the unreduced result viewed back
    if input.ndim <= 2:
        return _kernel_named(loss, "NllLossBackward0")
    return _kernel_named(loss, "NllLoss2DBackward0" if input.ndim == 4 or reduction != "none" else "ViewBackward0")


def _weighted_mean_backward(ctx, grad):
    total, count = ctx.inputs
    needs_total, needs_count = ctx.needs_input_grad
    empty = count == 0
    safe = count.masked_fill(empty, 1)
    return ((grad / safe).masked_fill(empty, 0) if needs_total else None,
            (-grad * total / (safe * safe)).masked_fill(empty, 0) if needs_count else None)


# total / count for reduction="mean" over the targets not ignored: nan when every target is ignored (0 / 0, as
# torch), with zero gradients there (as torch's nll_loss backward; the quotient's own gives 0 * inf = nan)
_WEIGHTED_MEAN = OpDef("nll_weighted_mean", lambda xp, total, count: total / count, _weighted_mean_backward,
                       saves=SAVE_INPUTS, grad_name="DivBackward0")


def _target_check_impl(xp, target, ignore_index, classes):
    """Raise torch's IndexError for class targets out of range; an op (not Python reads of values) so that a
    compiled graph keeps the check and does not break on it."""
    labels = target[target != ignore_index]
    if labels.size:
        low, high = int(labels.min()), int(labels.max())
        if low < 0 or high >= classes:
            raise IndexError(f"Target {high if high >= classes else low} is out of bounds.")
    return target


_TARGET_CHECK = OpDef("nll_target_check", _target_check_impl, None, dtype_rule=keep, view=True, upcast_half=False,
                      meta=lambda args, params: tuple(args[0].shape))


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """log_softmax over dim 1 (or 0 for unbatched input) followed by NLL, with class-probability targets too."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if label_smoothing > 1.0:  # (torch lets a negative value through)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype.name]} but found "
                           f"{SCALAR_NAMES[weight.dtype.name]}")
    if tuple(target.shape) == tuple(input.shape) and target.is_floating_point() and ignore_index != -100:
        raise RuntimeError("ignore_index is not supported for floating point target")
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    # torch reads a float target as class probabilities only when it has the input's shape; otherwise it goes
    # down the class-index path, whose checks then reject it
    if target.is_floating_point() and tuple(target.shape) == tuple(input.shape):
        classes = input.shape[class_dim]
        if weight is not None and (weight.ndim != 1 or weight.shape[0] != classes):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {classes} classes or "
                               f"no classes but got weight tensor of shape: {list(weight.shape)}")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        if weight is not None:
            shape = [1] * input.ndim
            shape[class_dim] = classes
            logp = logp * weight.reshape(shape)
        loss = -(logp * target).sum(class_dim)
        if reduction == "mean":  # torch: the negated sum divided by a number (DivBackward1), else NegBackward0
            return _kernel_named(loss.sum() / (input.numel() // classes if input.ndim > 1 else 1), "DivBackward1")
        return _kernel_named(_reduce(loss, reduction), "NegBackward0")
    if label_smoothing <= 0:
        return nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    classes = input.shape[class_dim]
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction="none")
    valid = (target != ignore_index)
    if weight is not None:
        shape = [1] * input.ndim
        shape[class_dim] = classes
        smooth = -(logp * weight.reshape(shape)).sum(class_dim)
    else:
        smooth = -logp.sum(class_dim)
    smooth = smooth * valid
    if reduction == "none":
        return nll * (1 - label_smoothing) + smooth * (label_smoothing / classes)
    if reduction == "sum":
        return nll.sum() * (1 - label_smoothing) + smooth.sum() * (label_smoothing / classes)
    if weight is not None:
        denominator = weight.gather(0, target.masked_fill(~valid, 0).reshape(-1)).reshape(target.shape)
        denominator = (denominator * valid).sum()
    else:
        denominator = valid.sum()
    loss = call(_WEIGHTED_MEAN, (nll.sum() * (1 - label_smoothing) + smooth.sum() * (label_smoothing / classes),
                                 denominator))
    return _kernel_named(loss, "AddBackward0")  # torch: (1 - ls) * nll + ls * smooth / classes, both divided


def _bce_impl(xp, p, y):
    with np.errstate(divide="ignore"):  # log(0) = -inf, clamped at -100 as torch does
        return (y - 1) * xp.maximum(xp.log1p(-p), -100) - y * xp.maximum(xp.log(p), -100)


def _bce_backward(ctx, grad):
    """torch's derivative: (p - y) / max(p (1 - p), 1e-12) for the input -- finite at p = 0 and 1, where the
    clamped logs' own derivative is 0 * inf -- and log(1 - p) - log(p) for the target (infinite at 0 and 1)."""
    p, y = ctx.inputs
    needs_p, needs_y = ctx.needs_input_grad
    grad_p = grad * (p - y) / ((1 - p) * p).clamp_min(1e-12) if needs_p else None
    grad_y = grad * ((-p).log1p() - p.log()) if needs_y else None
    return grad_p, grad_y


_BCE = OpDef("binary_cross_entropy", _bce_impl, _bce_backward, saves=SAVE_INPUTS,
             grad_name="BinaryCrossEntropyBackward0")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {SCALAR_NAMES[target.dtype.name]} but expected "
                           f"{SCALAR_NAMES[input.dtype.name]}")
    if weight is not None and tuple(np.broadcast_shapes(tuple(weight.shape), tuple(input.shape))) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape "
                           f"{list(np.broadcast_shapes(tuple(weight.shape), tuple(input.shape)))}")
    _reject_weight_grad(weight, "binary_cross_entropy")
    message = "all elements of input should be between 0 and 1"
    input = range_check(input, 0, 1, message, message)
    message = "all elements of target should be between 0 and 1"
    target = range_check(target, 0, 1, message, message)
    # torch clamps the log terms at -100 so that 0 and 1 give finite losses
    loss = call(_BCE, (input, target))
    if weight is not None:
        loss = loss * weight
    return _kernel_named(_reduce(loss, reduction), "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if not target.is_floating_point():
        raise RuntimeError(f"result type {SCALAR_NAMES[input.dtype.name]} can't be cast to the desired output type "
                           f"{SCALAR_NAMES[target.dtype.name]}")
    _reject_weight_grad(weight, "binary_cross_entropy_with_logits")
    _reject_weight_grad(pos_weight, "binary_cross_entropy_with_logits", "pos_weight")
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * logsigmoid(input)
    else:
        loss = (1 - target) * input - logsigmoid(input)
    if weight is not None:
        loss = loss * weight
    return _kernel_named(_reduce(loss, reduction), "BinaryCrossEntropyWithLogitsBackward0")


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if not input.is_floating_point() or not target.is_floating_point():
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    loss = softplus(-target * input)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:

    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + stirling.masked_fill(target <= 1, 0)  # (as torch: the term is nan or -inf at target 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    if not isinstance(var, Tensor):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * input.new_ones(input.shape)
    else:
        var = range_check(var, 0, math.inf, "var has negative entry/entries", "", "ValueError", nan_ok=True)
    if var.shape != input.shape:  # torch's rules: var one dim short, or one mismatched dim (homoscedastic)
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError("var is of incorrect size")
    # clamped for stability without touching the gradient (torch clamps a clone under no_grad)
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:
    from .. import where

    margin_clamp = (margin - input).clamp_min(0)
    output_margin = where(target != 1, margin_clamp, margin_clamp * 0)
    output_self = where(target != -1, input, input * 0)
    return _reduce(output_margin + output_self, _legacy_reduction(size_average, reduce, reduction))


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:
    from .. import where

    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise RuntimeError(f"{target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found inputs "
                           f"with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod_sum = (input1 * input2).sum(-1)
    mag_square1 = (input1 * input1).sum(-1) + eps
    mag_square2 = (input2 * input2).sum(-1) + eps
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    loss = where(target == 1, pos, pos * 0) + where(target == -1, neg, neg * 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(-1) / input.shape[-1]
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def _check_margin(margin: float) -> None:
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    _check_margin(margin)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        from .. import minimum

        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    loss = (d_pos - d_neg + margin).clamp_min(0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_margin(margin)
    distance = distance_function or pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        from .. import minimum

        d_neg = minimum(d_neg, distance(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def _check_margin_input(input: Tensor, target: Tensor) -> None:
    """The input checks of torch's multi_margin_loss / multilabel_margin_loss kernels."""
    if not (input.ndim == 1 and input.numel() > 0 or input.ndim == 2 and input.shape[1] > 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target._dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.type().split('.')[-1][:-6]}")


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """sum_j max(0, margin - x[y] + x[j])^p / C over j != y (torch.nn.MultiMarginLoss)."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    from .. import where

    _check_margin_input(input, target)
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _reject_weight_grad(weight, "multi_margin_loss")
    unbatched = input.ndim == 1
    x = input.unsqueeze(0) if unbatched else input
    if target.ndim > 1 or target.numel() != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{x.shape[0]}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    y = range_check(target.reshape(-1), 0, x.shape[1] - 1, "target out of range", "target out of range")
    picked = x.gather(1, y.unsqueeze(1))
    losses = margin - picked + x
    losses = where(losses > 0, losses, 0.0)  # (torch's kernel: no gradient where the margin is exactly met)
    if p == 2:
        losses = losses.square()
    if weight is not None:
        losses = losses * weight.gather(0, y).unsqueeze(1)
    classes = x.shape[1]
    mask = one_hot(y, classes).to(losses.dtype)
    loss = (losses * (1 - mask)).sum(1) / classes
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """sum over target classes j (until the first -1) and non-target i of max(0, 1 - (x[j] - x[i])) / C."""
    _check_margin_input(input, target)
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.numel() and (int(target.min()) < -1 or int(target.max()) >= input.shape[-1]):
        raise RuntimeError("argument #2 'target' is out of range")
    unbatched = input.ndim == 1
    x = input.unsqueeze(0) if unbatched else input
    t = target.unsqueeze(0) if unbatched else target
    classes = x.shape[1]
    losses = []
    for row in range(x.shape[0]):
        labels = []
        for value in t[row].tolist():
            if value < 0:
                break
            labels.append(int(value))
        if not labels:
            losses.append(x[row].sum() * 0)
            continue
        from .. import tensor

        is_target = [False] * classes
        for j in labels:
            is_target[j] = True
        target_index = tensor(labels, dtype=dt.int64)
        others = tensor([i for i in range(classes) if not is_target[i]], dtype=dt.int64)
        xj = x[row].index_select(0, target_index).unsqueeze(1)
        xi = x[row].index_select(0, others).unsqueeze(0)
        losses.append((1 - (xj - xi)).clamp_min(0).sum() / classes)
    from .. import stack

    loss = stack(losses) if losses else x.sum(1)
    if unbatched:
        loss = loss.squeeze(0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def _int_list(values) -> list:
    if isinstance(values, Tensor):
        return [int(v) for v in values.reshape(-1).tolist()]
    if isinstance(values, int):
        return [values]
    return [int(v) for v in values]


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss (ember/_ops/ctc.py: ATen's alpha-beta recursion, one op).

    log_probs: (T, N, C) or (T, C); targets: (N, S) padded or 1-D concatenated; lengths: tensors or sequences.
    """
    from .. import tensor
    from .._ops.ctc import CTC_LOSS

    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    # lengths as int64 tensor operands, read by the kernel when it runs (so a compiled graph takes new ones)
    lengths = []
    for values in (input_lengths, target_lengths):
        if not isinstance(values, Tensor):
            values = tensor(_int_list(values), dtype=dt.int64)
        lengths.append(values.reshape(-1))
    if not 0 <= blank < log_probs.shape[2]:
        raise RuntimeError("blank must be in label range")
    batch = log_probs.shape[1]
    if lengths[0].shape[0] != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if lengths[1].shape[0] != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    loss = call(CTC_LOSS, (log_probs, targets, lengths[0], lengths[1]),
                {"blank": int(blank), "zero_infinity": bool(zero_infinity)})
    if reduction == "mean":
        return (loss / lengths[1].clamp_min(1).to(loss.dtype)).mean()
    if unbatched and reduction == "none":
        return loss.squeeze(0)
    return _reduce(loss, reduction)
