"""torch.nn.functional: activations, softmax family, linear, dropout, normalisation, losses, embedding, padding.

Composite functions are decompositions into registry ops (their gradients come
for free); a few are primitives in ember/_ops/nn_ops.py for speed or exact
subgradients.  Convolution, pooling, recurrent and attention functions live in
their own modules (ember/nn/_functional_*.py) and are re-exported here.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._backends import MetaArray
from .._dispatch import OpDef, call, keep
from .._ops import nn_ops
from .._ops._shapes import array_order
from .._ops.nn_ops import linear  # noqa: F401  (F.linear is the registry's op)
from .._ops.nn_ops import log_softmax as _log_softmax
from .._ops.nn_ops import softmax as _softmax
from .._tensor import Tensor


def _float_only(input: Tensor, kernel: str) -> None:
    """torch's NotImplementedError for an activation kernel that has no integer version."""
    if not input._dtype.is_floating_point and not input._dtype.is_complex:
        from .._ops._api import not_implemented

        raise not_implemented(kernel, input._dtype)


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


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    result = call(nn_ops.ELU, (input,), {"alpha": alpha, "scale": scale, "input_scale": 1.0})
    return _inplace_result(input, result, inplace)


def selu_(input: Tensor) -> Tensor:
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    result = call(nn_ops.ELU, (input,), {"alpha": alpha, "scale": 1.0, "input_scale": 1.0 / alpha})
    return _inplace_result(input, result, inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), or its tanh approximation."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return call(nn_ops.GELU, (input,), {"approximate": approximate})


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace_result(input, call(nn_ops.SILU, (input,)), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    _float_only(input, "mish_cpu")
    x = input.clone() if inplace else input  # the composite saves x: keep it out of the in-place write's way
    return _inplace_result(input, x * softplus(x).tanh(), inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return call(nn_ops.SOFTPLUS, (input,), {"beta": beta, "threshold": threshold})


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input._dtype is dt.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    return _inplace_result(input, call(nn_ops.HARDTANH, (input,), {"min_val": min_val, "max_val": max_val}), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, True)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    _float_only(input, "hardsigmoid_cpu")
    # torch: grad is 1.0f/6 strictly inside (-3, 3), 0 elsewhere
    return _inplace_result(input, call(nn_ops.HARDSIGMOID, (input,)), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    # torch's hardswish_backward: grad * (x/3 + 0.5) on [-3, 3], 0 below -3, grad above 3.
    from .. import where

    _float_only(input, "hardswish_cpu")
    x = input.clone() if inplace else input  # the composite saves x: keep it out of the in-place write's way
    middle = x * (x + 3) / 6
    result = where(x <= -3, x * 0, where(x >= 3, x, middle))
    return _inplace_result(input, result, inplace)


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    _float_only(input, "log_sigmoid_cpu")
    return -softplus(-input)


def softsign(input: Tensor) -> Tensor:
    return input / (input.abs() + 1)


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    from .. import where

    _float_only(input, "softshrink_check")
    if lambd < 0:
        from .. import finfo
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"lambda must be in range [0, {finfo(input.dtype).max:g}] for input dtype "
                           f"{SCALAR_NAMES[input.dtype.name]}, but found {lambd:g}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0))


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    from .. import where
    from .._ops.extra_forms import check_hardshrink

    check_hardshrink(input)
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
    _float_only(input, "glu_cpu")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or shared."""
    from .. import where
    from .._ops.extra_forms import check_prelu

    check_prelu(input, weight)
    if weight.numel() == 1:  # one shared weight: the result keeps input's shape, 0-d included
        weight = weight.reshape(())
    elif input.ndim >= 2:
        shape = [1] * input.ndim
        shape[1] = weight.numel()
        weight = weight.reshape(shape)
    return where(input > 0, input, weight * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    _float_only(input, "leaky_relu_cpu")
    if training:
        from .._ops.random import rrelu_noise

        x = input.clone() if inplace else input  # input * slopes saves x: keep it out of the in-place write's way
        # torch draws a slope only for each element <= 0, in order, and differentiates through the noise (the
        # subgradient at 0 is that slope); one slope per element, drawn for all, took other numbers
        result = x * rrelu_noise(input, lower, upper)
        name_node(result, "RreluWithNoiseBackward0")
    else:
        result = leaky_relu(input, (lower + upper) / 2)
    return _inplace_result(input, result, inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False) -> Tensor:
    return rrelu(input, lower, upper, training, True)


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
    mask = _bernoulli_like(input, 1 - p)  # torch's _dropout_impl: the same draws, the same factor
    return _inplace_result(input, nn_ops.dropout_with_mask(input, mask, nn_ops.dropout_scale(input.dtype, p)),
                           inplace)


def _bernoulli_like(input: Tensor, p: float) -> Tensor:
    """torch's dropout noise, `empty_like(input).bernoulli_(p)`: empty_like keeps input's layout
    (preserve_format) and bernoulli_ fills in memory order, so a transposed input (a batch-first
    nn.MultiheadAttention's output) gets its draws in that order, not in index order.  Drawn into a fresh
    C-contiguous tensor of the permuted shape and viewed back: the same numbers in the same places, and a
    compiled replay (whose fresh tensors are C order, and which breaks on in-place writes to views) agrees."""
    order = None if isinstance(input._data, MetaArray) else array_order(input._data)
    if order is None:
        return input.new_empty(input.shape).bernoulli_(p)
    outer = order[::-1]
    noise = input.new_empty(tuple(input.shape[d] for d in outer)).bernoulli_(p)
    return noise.permute(tuple(outer.index(d) for d in range(input.ndim)))


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, channel_dims: int = 2):
    """torch's _VF.feature_dropout: one draw per entry of the first `channel_dims` dims (batch and channel; or
    the channel alone for an unbatched input, which torch unsqueezes), broadcast over the rest."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _inplace_result(input, input * 0, inplace)
    if input.ndim < channel_dims:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:channel_dims]) + (1,) * (input.ndim - channel_dims)
    mask = input.new_empty(shape).bernoulli_(1 - p)
    return _inplace_result(input, input * mask * nn_ops.dropout_scale(input.dtype, p), inplace)


def _warn_feature_dropout(name: str, ndim: int, spatial: int) -> None:
    """dropout2d/3d on a rank they were not made for: torch warns (and still drops over dims 0 and 1)."""
    import warnings

    from .._ops._api import _user_stacklevel

    words = {2: "2 spatial dimensions", 3: "3 spatial dimensions"}[spatial]
    warnings.warn(
        f"{name}: Received a {ndim}-D input to {name}, which is deprecated and will result in an error in a future "
        "release. To retain the behavior and silence this warning, please use dropout instead. Note that "
        f"{name} exists to provide channel-wise dropout on inputs with {words}, a channel dimension, and an "
        f"optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).", UserWarning,
        stacklevel=_user_stacklevel())


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, L) or unbatched (C, L) inputs (other ranks raise, even in eval)."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, 2 if input.ndim == 3 else 1)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, H, W) inputs.  As torch, every rank drops over dims 0 and 1: a 3-D input is
    (N, C, L), not an unbatched (C, H, W) (pytorch#77081), and a 2-D (N, C) one is plain dropout, with warnings."""
    import warnings

    from .._ops._api import _user_stacklevel

    _check_p(p)
    if input.ndim not in (3, 4):
        _warn_feature_dropout("dropout2d", input.ndim, 2)
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape (C, H, "
            "W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            UserWarning, stacklevel=_user_stacklevel())
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Channel-wise dropout of (N, C, D, H, W) or unbatched (C, D, H, W) inputs (other ranks: torch's warning,
    then dim 0 taken as the channel)."""
    _check_p(p)
    if input.ndim not in (4, 5):
        _warn_feature_dropout("dropout3d", input.ndim, 3)
    return _feature_dropout(input, p, training, inplace, 2 if input.ndim == 5 else 1)


def _alpha_dropout(input: Tensor, keep: Tensor, p: float) -> Tensor:
    """torch's _dropout_impl for alpha dropout, step by step (each rounded as torch's in-place ops are): SELU's
    saturation value for dropped elements, with the affine correction that keeps mean and variance."""
    alpha = 1.7580993408473766
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    b = (keep - 1) * (alpha * a) + alpha * a * p
    return input * (keep * a) + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace_result(input, input * 0, inplace)
    keep = _bernoulli_like(input, 1 - p)
    return _inplace_result(input, _alpha_dropout(input, keep, p), inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _inplace_result(input, input * 0, inplace)
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = input.new_empty(shape).bernoulli_(1 - p)
    return _inplace_result(input, _alpha_dropout(input, keep, p), inplace)


# ---------------------------------------------------------------- embedding, one_hot, normalize


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` selected by integer `input`; padding_idx rows get no gradient."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
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
    if sparse:  # weight's gradient is a sparse COO tensor (ember/_ops/sparse_kernels.py)
        from .._ops.sparse_kernels import embedding_sparse

        return embedding_sparse(input, weight, padding_idx, scale_grad_by_freq)
    out = weight.index_select(0, input.reshape(-1)).reshape(tuple(input.shape) + (weight.shape[1],))
    if scale_grad_by_freq and weight.requires_grad:
        # each row's gradient divided by how often its index occurs in this batch: the value stays `out`, the
        # gradient flows through out / count only
        flat = input.reshape(-1)
        counts = flat.bincount(minlength=weight.shape[0]).index_select(0, flat).reshape(tuple(input.shape) + (1,))
        scaled = out / counts.to(out.dtype)
        out = scaled + (out - scaled).detach()
    if padding_idx is not None and weight.requires_grad:
        mask = (input != padding_idx).unsqueeze(-1).to(weight.dtype)
        out = out * mask + (out * (1 - mask)).detach()
    name_node(out, "EmbeddingBackward0")  # torch's one kernel (print(embedded) shows it)
    return out


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    from .._autograd.grad_mode import no_grad

    with no_grad():
        # every looked-up row, repeats included (no unique(): its size depends on the values, which would break a
        # compiled graph): a repeated row gets the same scale from the same old values, so the writes agree
        rows = input.reshape(-1)
        selected = weight.index_select(0, rows)
        # torch's kernel: only rows with norm > max_norm change, scaled by max_norm / (norm + 1e-7) in double
        norms = selected.norm(p=norm_type, dim=1, keepdim=True).double()
        # (a 0-d tensor over the norms: a division, as the C++ kernel; `number / tensor` is a reciprocal times
        # the number, as torch's Python operator)
        scale = (norms.new_full((), max_norm) / (norms + 1e-7)).where(norms > max_norm, 1.0).to(weight.dtype)
        weight.index_copy_(0, rows, selected * scale)


def _range_check_impl(xp, a, low, high, below, above, error="RuntimeError", nan_ok=False):
    """Raise `error`(below) if an element is under `low` (or is nan, unless nan_ok), `error`(above) if one is
    over `high`; else pass the array on.  An op, not Python reads of the values (`x.min().item()`), so that a
    compiled graph keeps the check instead of breaking on it every call."""
    if a.size:
        kind = ValueError if error == "ValueError" else RuntimeError
        if bool((a < low).any()) if nan_ok else not bool((a >= low).all()):
            raise kind(below)
        if bool((a > high).any()):
            raise kind(above)
    return a


_RANGE_CHECK = OpDef("range_check", _range_check_impl, lambda ctx, g: g, dtype_rule=keep, view=True,
                     upcast_half=False, meta=lambda args, params: tuple(args[0].shape))


def range_check(tensor: Tensor, low, high, below: str, above: str, error: str = "RuntimeError",
                nan_ok: bool = False) -> Tensor:
    """`tensor` itself (a view, gradients pass through) once its values are checked to lie in [low, high]."""
    return call(_RANGE_CHECK, (tensor,), {"low": low, "high": high, "below": below, "above": above, "error": error,
                                          "nan_ok": nan_ok})


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    if tensor._dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:  # (the result's shape depends on the values: a read, a graph break in ember.compile)
        if not tensor.numel():
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    tensor = range_check(tensor, 0, num_classes - 1, "Class values must be non-negative.",
                         "Class values must be smaller than num_classes.")
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
    """<x1 / max(|x1|, eps), x2 / max(|x2|, eps)> along dim, torch's formula: the inputs broadcast first, and each
    norm is clamped in place under no_grad, so the gradient flows through the unclamped norm."""
    from .. import broadcast_tensors, linalg, result_type
    from .._autograd.grad_mode import no_grad
    from .._tensor import SCALAR_NAMES

    common = result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{SCALAR_NAMES[common.name]}")
    x1 = x1 if x1.is_floating_point() or x1.is_complex() else x1.to(common)
    x2 = x2 if x2.is_floating_point() or x2.is_complex() else x2.to(common)
    x1, x2 = broadcast_tensors(x1, x2)
    norm1 = linalg.vector_norm(x1, 2, dim=dim, keepdim=True).clone()
    norm2 = linalg.vector_norm(x2, 2, dim=dim, keepdim=True).clone()
    with no_grad():
        norm1.clamp_min_(eps)
        norm2.clamp_min_(eps)
    return ((x1 / norm1) * (x2 / norm2)).sum(dim)


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


# ---------------------------------------------------------------- families in their own modules
from ._functional_attention import *  # noqa: E402, F401, F403
from ._functional_attention import get_sdpa_block_size, set_sdpa_block_size  # noqa: E402, F401
from ._functional_conv import *  # noqa: E402, F401, F403
from ._functional_fractional_pool import *  # noqa: E402, F401, F403
from ._functional_linear_cross_entropy import *  # noqa: E402, F401, F403
from ._functional_loss import *  # noqa: E402, F401, F403
from ._functional_loss import _legacy_reduction, _reduce  # noqa: E402, F401
from ._functional_multihead_attention import *  # noqa: E402, F401, F403
from ._functional_norm import *  # noqa: E402, F401, F403
from ._functional_pool import *  # noqa: E402, F401, F403
from ._functional_shape import *  # noqa: E402, F401, F403

# ---------------------------------------------------------------- remaining functional ops


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_k = x1^T W_k x2 + b_k, with torch's shape checks."""
    from .. import einsum

    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for dim, (size1, size2) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if size1 != size2:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: got {size1} and {size2}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected "
                           f"{weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected "
                           f"{weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but expected "
                           f"{weight.shape[0]}")
    out = einsum("...i,kij,...j->...k", input1, weight, input2)
    return out + bias if bias is not None else out


def _scale_bag_grad_by_freq(rows: Tensor, flat: Tensor, num_weights: int) -> Tensor:
    """rows whose gradient is divided the way torch's CPU embedding_bag backward divides it: the k-th distinct
    index (in sorted order) by the count of sorted_indices[k], which is its own count only when every smaller
    index occurs once (a quirk of aten's EmbeddingBag.cpp kept so the numbers match)."""
    from .._autograd.grad_mode import no_grad

    with no_grad():
        counts = flat.bincount(minlength=num_weights)
        rank = ((counts > 0).cumsum(0) - 1).clamp(min=0)  # k for each distinct index
        divisor = counts.index_select(0, flat.sort().values.index_select(0, rank.clamp(max=flat.numel() - 1)))
        factor = divisor.index_select(0, flat).to(rows.dtype).unsqueeze(-1)
    scaled = rows / factor
    return scaled + (rows - scaled).detach()


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None) -> Tensor:
    """Reduce (sum/mean/max) the embeddings of each bag; bags are rows of a 2-D input or offsets into a 1-D one.

    Arguments are checked in torch's order (and max_norm renormalises before the per_sample_weights check)."""
    from .. import stack

    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
        max_norm = None
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if input.ndim == 2:
        bags = [(i * input.shape[1], (i + 1) * input.shape[1]) for i in range(input.shape[0])]
        flat = input.reshape(-1)
        flat_weights = per_sample_weights.reshape(-1) if per_sample_weights is not None else None
    else:
        starts = [int(o) for o in offsets.tolist()]
        if starts and starts[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                               f"position 0. However, got {starts[0]}")
        if starts and starts[-1] > input.shape[0]:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {input.shape[0]} but got "
                               f"offsets[-1] of {starts[-1]}")
        if include_last_offset:
            ends = starts[1:]
            starts = starts[:-1]
        else:
            ends = starts[1:] + [input.shape[0]]
        bags = list(zip(starts, ends))
        flat = input
        flat_weights = per_sample_weights
    _check_bag_indices(flat, weight.shape[0], mode)
    dense_scaled = scale_grad_by_freq and not sparse and weight.requires_grad and flat.numel() > 0
    rows = embedding(flat, weight, padding_idx=padding_idx if sparse else None, max_norm=max_norm,
                     norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq and not dense_scaled, sparse=sparse)
    if dense_scaled:
        rows = _scale_bag_grad_by_freq(rows, flat, weight.shape[0])
    if flat_weights is not None:
        rows = rows * flat_weights.unsqueeze(-1)
    valid = (flat != padding_idx) if padding_idx is not None else None
    outputs = []
    for start, end in bags:
        chunk = rows[start:end]
        if valid is not None:
            keep = valid[start:end]
            chunk = chunk[keep]
        if chunk.shape[0] == 0:  # zeros, still linked to weight so its gradient is zeros rather than None
            outputs.append(chunk.sum(0))
        elif mode == "sum":
            outputs.append(chunk.sum(0))
        elif mode == "mean":
            outputs.append(chunk.mean(0))
        else:
            # torch's kernel keeps the first of equal maxima (a strict `<` update), so its gradient goes to that
            # one row alone; amax would share it among ties
            outputs.append(chunk.max(0).values)
    return stack(outputs, 0) if outputs else weight.new_zeros((0, weight.shape[1]))


def _check_bag_indices(flat: Tensor, rows: int, mode: str) -> None:
    """torch's embedding_bag index check (before any lookup), naming the first index out of range (max mode's
    kernel checks in its own loop, with its own message)."""
    # (on the host array, not through ops: under ember.compile a tensor read would break the graph)
    if flat.numel() == 0 or type(flat._data) is not np.ndarray:
        return
    indices = flat._data.reshape(-1)
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        position = int(bad.argmax())
        value = int(indices[position])
        if mode == "max":
            raise RuntimeError(f"embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {value}")
        raise RuntimeError(f"Index {position} of input takes value {value} which is not in the valid range [0, {rows})")
