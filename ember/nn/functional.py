"""torch.nn.functional: activations, softmax family, linear, dropout, normalisation, losses, embedding, padding.

Composite functions are decompositions into registry ops (their gradients come
for free); a few are primitives in ember/_ops/nn_ops.py for speed or exact
subgradients.  Convolution, pooling, recurrent and attention functions live in
their own modules (ember/nn/_functional_*.py) and are re-exported here.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .._dispatch import OpDef, call, keep
from .._ops import nn_ops
from .._ops.nn_ops import linear
from .._ops.nn_ops import log_softmax as _log_softmax
from .._ops.nn_ops import softmax as _softmax
from .._tensor import Tensor

__all__ = ["linear", "relu", "softmax", "log_softmax", "dropout", "cross_entropy", "mse_loss"]


def _inplace_result(input: Tensor, result: Tensor, inplace: bool) -> Tensor:
    if inplace:
        input._check_inplace()
        return input._inplace_from(result)
    return result


# ---------------------------------------------------------------- activations


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0)."""
    return _inplace_result(input, call(nn_ops.RELU, (input,)), inplace)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _inplace_result(input, call(nn_ops.LEAKY_RELU, (input,), {"negative_slope": negative_slope}), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    result = call(nn_ops.ELU, (input,), {"alpha": alpha, "scale": 1.0, "input_scale": 1.0})
    return _inplace_result(input, result, inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    result = call(nn_ops.ELU, (input,), {"alpha": alpha, "scale": scale, "input_scale": 1.0})
    return _inplace_result(input, result, inplace)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    result = call(nn_ops.ELU, (input,), {"alpha": alpha, "scale": 1.0, "input_scale": 1.0 / alpha})
    return _inplace_result(input, result, inplace)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return call(nn_ops.GELU, (input,), {"approximate": approximate})


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace_result(input, call(nn_ops.SILU, (input,)), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace_result(input, input * softplus(input).tanh(), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return call(nn_ops.SOFTPLUS, (input,), {"beta": beta, "threshold": threshold})


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _inplace_result(input, call(nn_ops.HARDTANH, (input,), {"min_val": min_val, "max_val": max_val}), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    result = _hardsigmoid(input)
    return _inplace_result(input, result, inplace)


def _hardsigmoid(x: Tensor) -> Tensor:
    # torch: grad is 1/6 strictly inside (-3, 3), 0 elsewhere (hardtanh's open-interval rule gives exactly that).
    return call(nn_ops.HARDTANH, (x / 6 + 0.5,), {"min_val": 0.0, "max_val": 1.0})


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    # torch's hardswish_backward: grad * (x/3 + 0.5) on [-3, 3], 0 below -3, grad above 3.
    from .. import where

    x = input
    middle = x * (x + 3) / 6
    result = where(x <= -3, x * 0, where(x >= 3, x, middle))
    return _inplace_result(input, result, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -softplus(-input)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    from .. import where

    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    from .. import where

    return where((input > lambd) | (input < -lambd), input, input * 0)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    from .. import where

    return _inplace_result(input, where(input > threshold, input, value), inplace)


def threshold_(input: Tensor, threshold_: float, value: float) -> Tensor:
    return threshold(input, threshold_, value, True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or shared."""
    from .. import where

    if weight.numel() != 1 and input.ndim >= 2:
        shape = [1] * input.ndim
        shape[1] = weight.numel()
        weight = weight.reshape(shape)
    return where(input > 0, input, weight * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    from .. import where

    if training:
        slopes = input.new_empty(input.shape).uniform_(lower, upper)
        result = where(input >= 0, input, input * slopes)
    else:
        result = leaky_relu(input, (lower + upper) / 2)
    return _inplace_result(input, result, inplace)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim, _stacklevel)
    return _softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim, _stacklevel)
    return _softmax(-input if dtype is None else -input.to(dtype), dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype)


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1) -> Tensor:
    gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = logits.new_zeros(logits.shape).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------- dropout


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero elements with probability p and scale the rest by 1/(1-p), in training only."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace_result(input, input * 0, inplace)
    mask = input.new_empty(input.shape).bernoulli_(1 - p)
    return _inplace_result(input, nn_ops.dropout_with_mask(input, mask, 1.0 / (1 - p)), inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched_ndim: int, name: str):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise RuntimeError(f"{name}: Expected {batched_ndim - 1}D or {batched_ndim}D input, but received a "
                           f"{input.ndim}D input.")
    channel_dims = 1 if input.ndim == batched_ndim - 1 else 2
    shape = tuple(input.shape[:channel_dims]) + (1,) * (input.ndim - channel_dims)
    mask = input.new_empty(shape).bernoulli_(1 - p)
    scale = 1.0 / (1 - p) if p < 1 else 0.0
    return _inplace_result(input, input * mask * scale, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 4, "dropout2d")


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    return _feature_dropout(input, p, training, inplace, 5, "dropout3d")


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_prime = -1.7580993408473766
    keep = input.new_empty(input.shape).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_prime ** 2)) ** -0.5
    b = -a * alpha_prime * p
    result = (input * keep + alpha_prime * (1 - keep)) * a + b
    return _inplace_result(input, result, inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    alpha_prime = -1.7580993408473766
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = input.new_empty(shape).bernoulli_(1 - p)
    a = ((1 - p) * (1 + p * alpha_prime ** 2)) ** -0.5
    b = -a * alpha_prime * p
    return _inplace_result(input, (input * keep + alpha_prime * (1 - keep)) * a + b, inplace)


# ---------------------------------------------------------------- embedding, one_hot, normalize


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` selected by integer `input`; padding_idx rows get no gradient."""
    if input._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
            f"got {input.type()} instead (while checking arguments for embedding)"
        )
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -weight.shape[0]:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = weight.shape[0] + padding_idx
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    out = weight.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.shape[1],))
    if padding_idx is not None and weight.requires_grad:
        mask = (input != padding_idx).unsqueeze(-1).to(weight.dtype)
        out = out * mask + (out * (1 - mask)).detach()
    return out


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    from .._autograd.grad_mode import no_grad

    with no_grad():
        rows = input.reshape(-1).unique()
        selected = weight.index_select(0, rows)
        norms = selected.norm(p=norm_type, dim=1, keepdim=True)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight.index_copy_(0, rows, selected * scale)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if tensor._dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and (int(tensor.min().item()) < 0):
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = tensor.new_zeros(tuple(tensor.shape) + (num_classes,))
    return out.scatter(-1, tensor.unsqueeze(-1), 1)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None) -> Tensor:
    denominator = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    result = input / denominator
    if out is not None:
        out.copy_(result)
        return out
    return result


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """x1.x2 / max(|x1| |x2|, eps) along dim (torch's formula: each norm clamped by sqrt(eps))."""
    dot = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim)
    n2 = (x2 * x2).sum(dim)
    return dot / (n1 * n2).clamp_min(eps * eps).sqrt()


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    return (x1 - x2 + eps).norm(p, dim=-1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    n = input.shape[0]
    rows, cols = [], []
    for i in range(n):
        for j in range(i + 1, n):
            rows.append(i)
            cols.append(j)
    from .. import tensor

    index_i = tensor(rows, dtype=dt.int64)
    index_j = tensor(cols, dtype=dt.int64)
    return (input.index_select(0, index_i) - input.index_select(0, index_j)).norm(p, dim=-1)


# ---------------------------------------------------------------- losses


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
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_same_size(input: Tensor, target: Tensor, name: str) -> None:
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). This will "
            "likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    _check_same_size(input, target, "mse_loss")
    loss = (input - target).square()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    from .. import where

    diff = (input - target).abs()
    loss = where(diff < delta, 0.5 * diff.square(), delta * (diff - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    from .. import where

    diff = (input - target).abs()
    if beta == 0.0:
        loss = diff
    else:
        loss = where(diff < beta, 0.5 * diff.square() / beta, diff - 0.5 * beta)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


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
    if target._dtype is not dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.type().split('.')[-1][:-6]}")
    classes = input.shape[1]
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
        return loss.squeeze(0) if unbatched else loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


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
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    if target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                               f"({target.shape[0]}).")
        classes = input.shape[class_dim]
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        if weight is not None:
            shape = [1] * input.ndim
            shape[class_dim] = classes
            logp = logp * weight.reshape(shape)
        loss = -(logp * target).sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes if input.ndim > 1 else 1)
        return _reduce(loss, reduction)
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
    return (nll.sum() * (1 - label_smoothing) + smooth.sum() * (label_smoothing / classes)) / denominator


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                         reduce=None, reduction: str = "mean") -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if input.numel() and (float(input.min().item()) < 0 or float(input.max().item()) > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    # torch clamps the log terms at -100 so that 0 and 1 give finite losses.
    loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log().clamp_min(-100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average=None, reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input - log_weight * logsigmoid(input)
    else:
        loss = (1 - target) * input - logsigmoid(input)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    reduction = _legacy_reduction(size_average, reduce, reduction)
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
    from .. import where

    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + where(target > 1, stirling, stirling * 0)
    return _reduce(loss, _legacy_reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    if not isinstance(var, Tensor):
        var = input.new_full((), float(var))
    if var.shape != input.shape:
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        elif var.numel() != 1:
            raise ValueError("var is of incorrect size")
    if (var < 0).any().item():
        raise ValueError("var has negative entry/entries")
    var = var.clamp(min=eps)
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:
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


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
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
    distance = distance_function or pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        from .. import minimum

        d_neg = minimum(d_neg, distance(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


# ---------------------------------------------------------------- families in their own modules
from ._functional_attention import *  # noqa: E402, F401, F403
from ._functional_attention import get_sdpa_block_size, set_sdpa_block_size  # noqa: E402, F401
from ._functional_conv import *  # noqa: E402, F401, F403
from ._functional_norm import *  # noqa: E402, F401, F403
from ._functional_pool import *  # noqa: E402, F401, F403
from ._functional_shape import *  # noqa: E402, F401, F403

# ---------------------------------------------------------------- remaining functional ops


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1^T W_k x2 + b_k."""
    from .. import einsum

    out = einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None) -> Tensor:
    """Reduce (sum/mean/max) the embeddings of each bag; bags are rows of a 2-D input or offsets into a 1-D one."""
    from .. import stack

    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences.")
        bags = [(i * input.shape[1], (i + 1) * input.shape[1]) for i in range(input.shape[0])]
        flat = input.reshape(-1)
        flat_weights = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    else:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        starts = [int(o) for o in offsets.tolist()]
        if include_last_offset:
            ends = starts[1:]
            starts = starts[:-1]
        else:
            ends = starts[1:] + [input.shape[0]]
        bags = list(zip(starts, ends))
        flat = input
        flat_weights = per_sample_weights
    rows = embedding(flat, weight, max_norm=max_norm, norm_type=norm_type)
    if flat_weights is not None:
        rows = rows * flat_weights.unsqueeze(-1)
    valid = (flat != padding_idx) if padding_idx is not None else None
    outputs = []
    for start, end in bags:
        chunk = rows[start:end]
        if valid is not None:
            keep = valid[start:end]
            chunk = chunk[keep]
        if chunk.shape[0] == 0:
            outputs.append(weight.new_zeros(weight.shape[1]))
        elif mode == "sum":
            outputs.append(chunk.sum(0))
        elif mode == "mean":
            outputs.append(chunk.mean(0))
        else:
            outputs.append(chunk.amax(0))
    return stack(outputs, 0) if outputs else weight.new_zeros((0, weight.shape[1]))


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """sum_j max(0, margin - x[y] + x[j])^p / C over j != y (torch.nn.MultiMarginLoss)."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    unbatched = input.ndim == 1
    x = input.unsqueeze(0) if unbatched else input
    y = target.reshape(-1)
    picked = x.gather(1, y.unsqueeze(1))
    losses = (margin - picked + x).clamp_min(0)
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

    loss = stack(losses)
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
    """Connectionist temporal classification loss by the forward (alpha) recursion in log space.

    log_probs: (T, N, C) or (T, C); targets: (N, S) padded or 1-D concatenated.  Written with ember ops
    (logsumexp over the allowed transitions), so the gradient is the recursion's own.
    """
    from .. import cat, full, stack, tensor

    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    input_lengths = _int_list(input_lengths)
    target_lengths = _int_list(target_lengths)
    batch = log_probs.shape[1]
    if targets.ndim == 2 and target_lengths and max(target_lengths) > targets.shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {max(target_lengths)} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets' (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    losses = []
    offset = 0
    # A finite stand-in for log(0): logsumexp's gradient over all-(-inf) entries would be nan.
    negative_inf = -1e30
    for b in range(batch):
        length = target_lengths[b]
        if targets.ndim == 2:
            labels = [int(v) for v in targets[b, :length].tolist()]
        else:
            labels = [int(v) for v in targets[offset:offset + length].tolist()]
            offset += length
        extended = [blank]
        for label in labels:
            extended += [label, blank]
        states = len(extended)
        index = tensor(extended, dtype=dt.int64)
        allow_skip = [False, False] + [extended[s] != blank and extended[s] != extended[s - 2]
                                       for s in range(2, states)]
        skip_mask = tensor(allow_skip)
        steps = input_lengths[b]
        emissions = log_probs[:steps, b].index_select(1, index)
        start = full((states,), negative_inf, dtype=log_probs.dtype)
        alpha = cat([emissions[0, :min(2, states)], start[min(2, states):]])
        for t in range(1, steps):
            stay = alpha
            step = cat([full((1,), negative_inf, dtype=alpha.dtype), alpha[:-1]])
            skip = cat([full((2,), negative_inf, dtype=alpha.dtype), alpha[:-2]]).masked_fill(~skip_mask,
                                                                                             negative_inf)
            alpha = stack([stay, step, skip]).logsumexp(0) + emissions[t]
        tail = alpha[-2:] if states > 1 else alpha[-1:]
        loss = -tail.logsumexp(0)
        # torch's ctc backward returns exp(log_probs) - posterior, i.e. it assumes log_probs came from
        # log_softmax (through which the extra exp(log_probs) term cancels).  Add a zero-valued term with
        # exactly that gradient so direct gradients w.r.t. log_probs match torch's too.
        normaliser = log_probs[:steps, b].exp().sum()
        loss = loss + (normaliser - normaliser.detach())
        loss = loss.masked_fill(loss > 1e29, float("inf"))  # no valid alignment: torch's inf
        if zero_infinity:
            loss = loss.masked_fill(loss == float("inf"), 0.0)
        losses.append(loss)
    loss = stack(losses)
    if reduction == "mean":
        lengths = tensor([max(n, 1) for n in target_lengths], dtype=loss.dtype)
        return (loss / lengths).mean()
    if unbatched and reduction == "none":
        return loss.squeeze(0)
    return _reduce(loss, reduction)
