"""nn.functional normalisation: batch_norm, layer_norm, group_norm, instance_norm, rms_norm, local_response_norm.

One primitive, `normalize` (mean and variance over some axes, then an
optional affine), serves batch, layer, group and instance norm: it makes one
pass for the statistics and writes the textbook backward once, in ember ops:
    dx = rstd / m * (m * dxhat - sum(dxhat) - xhat * sum(dxhat * xhat))
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import no_grad
from .._autograd.grad_mode import state as grad_state
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, promote
from .._dispatch import keep as keep_first
from .._tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm"]


class _NormRows:
    """A norm's arrays as the rows the generated kernels normalise (NOTE [ Eager ops on generated kernels ],
    ember/_compile/native.py): layer norm's input already is rows of its last dim, weight and bias one value per
    column; batch norm's becomes the (C, N * spatial) transpose (one copy each way), weight and bias one value
    per row (channel)."""

    def __init__(self, kernels, channel: bool) -> None:
        self.kernels = kernels
        self.channel = channel

    def rows(self, x):
        return np.ascontiguousarray(np.moveaxis(x, 1, 0)).reshape(x.shape[1], -1) if self.channel else x

    def unrows(self, rows, shape):
        if not self.channel:
            return rows
        return np.ascontiguousarray(np.moveaxis(rows.reshape((shape[1], shape[0]) + tuple(shape[2:])), 0, 1))

    def affine(self, weight, bias) -> list:
        return [t.reshape(-1, 1) if self.channel else t.reshape(-1) for t in (weight, bias) if t is not None]

    def stat(self, array, x):
        return array.reshape((1, x.shape[1]) + (1,) * (x.ndim - 2)) if self.channel else array


def _norm_rows(x, weight, bias, axes, eps) -> _NormRows | None:
    """The generated kernels of a norm over the last dim (layer norm) or over all but dim 1 (training batch
    norm) of a large float array, with per-position weight and bias of x's dtype or none; else None."""
    from .. import _dtype as dt
    from .._compile import native

    if x.ndim == 0 or x.dtype not in (np.float32, np.float64) or type(x) is not np.ndarray or (
            x.size < native.MIN_ELEMENTS or x.shape[-1] == 0 or not native.enabled()):
        return None
    if axes == (x.ndim - 1,):
        channel, size = False, x.shape[-1]
    elif x.ndim >= 2 and axes == (0,) + tuple(range(2, x.ndim)):
        channel, size = True, x.shape[1]
    else:
        return None
    if any(t is not None and (t.size != size or t.dtype != x.dtype) for t in (weight, bias)):
        return None
    present = [t is not None for t in (weight, bias)]

    def traced(rows, *affine):
        parts = iter(affine)
        w, b = (next(parts) if flag else None for flag in present)
        return normalize(rows, w, b, (1,), eps)

    count = sum(present)
    kernels = native.kernels(f"{'channel' if channel else 'layer'}_norm_{eps!r}_{present[0]:d}{present[1]:d}", traced,
                             dt.float32 if x.dtype == np.float32 else dt.float64, 1, True,
                             vectors=0 if channel else count, columns=count if channel else 0)
    return None if kernels is None else _NormRows(kernels, channel)


def _normalize_impl(xp, x, weight, bias, axes, eps):
    rows = _norm_rows(x, weight, bias, axes, eps)
    if rows is not None and rows.channel:  # a training batch norm: NCHW in place (ember/_compile/loops.py)
        from .._compile.loops import batch_norm_forward

        done = batch_norm_forward(x, weight, bias, eps)
        if done is not None:
            return done
    if rows is not None:
        y, mean, rstd = rows.kernels(rows.rows(x), *rows.affine(weight, bias))
        return rows.unrows(y, x.shape), rows.stat(mean, x), rows.stat(rstd, x)
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(axis=axes, keepdims=True)
    rstd = 1.0 / xp.sqrt(var + eps)
    if weight is not None and _constant_over(weight.shape, axes, x.ndim):
        y = centered * (rstd * weight)  # batch norm: fold the per-channel weight into rstd, one pass fewer
    else:
        y = centered * rstd
        if weight is not None:
            y *= weight
    if bias is not None:
        y += bias
    return y, mean, rstd


def _norm_grad_impl(xp, x, weight, bias, g, mean, rstd, axes, eps):
    """x's, weight's and bias's gradients (empty arrays for absent ones): a training batch norm's from a C loop
    over NCHW with the forward's mean and rstd (ember/_compile/loops.py), else from one generated backward
    kernel that recomputes them."""
    if axes == (0,) + tuple(range(2, x.ndim)):
        from .._compile.loops import batch_norm_backward

        done = batch_norm_backward(x, g, mean, rstd, weight)
        if done is not None:
            grad_x, grad_w, grad_b = done
            return (grad_x, grad_w.reshape(weight.shape) if weight is not None else np.empty(0, x.dtype),
                    grad_b.reshape(bias.shape) if bias is not None else np.empty(0, x.dtype))
    rows = _norm_rows(x, weight, bias, axes, eps)
    x_rows = rows.rows(x)
    stats_grad = np.zeros(x_rows.shape[:-1] + (1,), x.dtype)  # mean and rstd are not differentiable outputs
    grads = iter(rows.kernels.gradients([x_rows] + rows.affine(weight, bias), [rows.rows(g), stats_grad, stats_grad]))
    grad_x = rows.unrows(next(grads), x.shape)
    grad_w, grad_b = (next(grads).reshape(t.shape) if t is not None else np.empty(0, x.dtype) for t in (weight, bias))
    return grad_x, grad_w, grad_b


def _norm_grad_backward(ctx, grads):
    raise RuntimeError("the norm gradient kernel is used only when no graph is being recorded")


_NORM_GRAD = OpDef("native_norm_backward", _norm_grad_impl, _norm_grad_backward,
                   dtype_rule=lambda args, params: (None, (args[0]._dtype,) * 3), outputs=3,
                   meta=lambda args, params: tuple(tuple(a.shape) if a is not None else (0,) for a in args[:3]))


def _normalize_backward(ctx, grads):
    g = grads[0]
    x, weight, bias = ctx.inputs
    axes = ctx.params["axes"]
    if (not grad_state.enabled and g._dtype is x._dtype and tuple(g.shape) == tuple(x.shape)
            and _norm_rows(x._data, _data(weight), _data(bias), axes, ctx.params["eps"]) is not None):
        gx, gw, gb = call(_NORM_GRAD, (x, weight, bias, g, ctx.saved_output(1), ctx.saved_output(2)),
                          dict(ctx.params))
        return gx, (gw if weight is not None else None), (gb if bias is not None else None)
    # Not ctx.result: y itself is not needed and may have been modified in place since (a ReLU(inplace=True)).
    mean, rstd = ctx.saved_output(1), ctx.saved_output(2)
    axes = ctx.params["axes"]
    if grad_state.enabled and x.requires_grad:
        # create_graph=True: mean and rstd are non-differentiable outputs, so recompute them from x in ember
        # ops for the double backward to see their dependence on x.
        mean = x.mean(axes, keepdim=True)
        rstd = 1.0 / ((x - mean).square().mean(axes, keepdim=True) + ctx.params["eps"]).sqrt()
    count = math.prod(x.shape[a] for a in axes)
    xhat = (x - mean) * rstd
    if all(t is None or _constant_over(t.shape, axes, x.ndim) for t in (weight, bias)):
        return _per_channel_backward(ctx, g, xhat, rstd, weight, axes, count)
    grad_x = grad_w = grad_b = None
    dxhat = g * weight if weight is not None else g
    if ctx.needs_input_grad[0]:
        sum_dxhat = dxhat.sum(axes, keepdim=True)
        sum_dxhat_xhat = (dxhat * xhat).sum(axes, keepdim=True)
        grad_x = rstd / count * (count * dxhat - sum_dxhat - xhat * sum_dxhat_xhat)
    # weight and bias broadcast against x: the engine sums these back to their shapes
    # (NOTE [ Gradient unbroadcasting ]).
    if weight is not None and ctx.needs_input_grad[1]:
        grad_w = g * xhat
    if bias is not None and ctx.needs_input_grad[2]:
        grad_b = g
    return grad_x, grad_w, grad_b


def _data(tensor):
    return None if tensor is None else tensor._data


def _constant_over(shape, axes, ndim) -> bool:
    """Whether a tensor of `shape`, broadcast against ndim dims, is constant along every normalised axis."""
    lead = ndim - len(shape)
    return all(a < lead or shape[a - lead] == 1 for a in axes)


def _per_channel_backward(ctx, g, xhat, rstd, weight, axes, count):
    """The backward when weight and bias are constant along the normalised axes (batch, instance, group norm).

    Then sum(g) and sum(g * xhat) over `axes` are already bias's and weight's gradients (up to summing the
    other axes), so the reductions are shared and the full-size passes drop from ~10 to ~7.
    """
    sum_g = g.sum(axes, keepdim=True)
    sum_g_xhat = (g * xhat).sum(axes, keepdim=True)
    grad_x = None
    if ctx.needs_input_grad[0]:
        scale = rstd if weight is None else rstd * weight
        grad_x = scale * (g - sum_g / count - xhat * (sum_g_xhat / count))
    grad_w = sum_g_xhat if weight is not None and ctx.needs_input_grad[1] else None
    grad_b = sum_g if ctx.needs_input_grad[2] else None
    return grad_x, grad_w, grad_b


def _normalize_rule(args, params):
    compute, _ = promote(args[:1], params)
    return compute, (compute, compute, compute)


def _normalize_meta(args, params):
    shape = tuple(args[0].shape)
    stat = tuple(1 if d in params["axes"] else n for d, n in enumerate(shape))
    return shape, stat, stat


NORMALIZE = OpDef("native_layer_norm", _normalize_impl, _normalize_backward, dtype_rule=_normalize_rule,
                  saves=SAVE_INPUTS | SAVE_RESULT, outputs=3, differentiable_outputs=(True, False, False),
                  meta=_normalize_meta, grad_name="NativeLayerNormBackward0")
NORMALIZE_BATCH = OpDef("native_batch_norm", _normalize_impl, _normalize_backward, dtype_rule=_normalize_rule,
                        saves=SAVE_INPUTS | SAVE_RESULT, outputs=3, differentiable_outputs=(True, False, False),
                        meta=_normalize_meta, grad_name="NativeBatchNormBackward0")
# one backward kernel in torch (native_layer_norm_backward, ...): float16/bfloat16 gradients rounded once
NORMALIZE.opmath_backward = NORMALIZE_BATCH.opmath_backward = True


def normalize(x: Tensor, weight, bias, axes: tuple, eps: float, op=NORMALIZE):
    """(y, mean, rstd): x normalised over `axes`, then * weight + bias (both broadcast against x)."""
    return call(op, (x, weight, bias), {"axes": tuple(axes), "eps": eps})


def _check_param_dtypes(input: Tensor, params: tuple, kernel: str) -> None:
    """torch's CPU norm kernels take floating input only, and a float32/float64 input wants its parameters in its
    own dtype (ATen's mixed_type.h: the first parameter present decides which error a mismatch gets)."""
    if not input.dtype.is_floating_point:
        from .._ops._api import not_implemented

        raise not_implemented(kernel, input.dtype)
    present = [p for p in params if p is not None]
    if input.dtype not in (dt.float32, dt.float64) or not present:
        return
    if present[0].dtype != input.dtype:
        if any(p.dtype != dt.float32 for p in present):
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    for p in present:
        if p.dtype != input.dtype:
            from .._tensor import SCALAR_NAMES

            raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype.name]} but found "
                               f"{SCALAR_NAMES[p.dtype.name]}")


def _check_normalized_shape(input: Tensor, normalized_shape: tuple, params: dict, star: str = "*, ") -> None:
    """layer_norm/rms_norm: the input ends in normalized_shape, and weight/bias have exactly that shape
    (torch's rms_norm message writes the shape as [*3], layer_norm's as [*, 3])."""
    k = len(normalized_shape)
    for name, param in params.items():
        if param is not None and tuple(param.shape) != normalized_shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(param.shape)} and normalized_shape = {list(normalized_shape)}")
    if tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(
            f"Given normalized_shape={list(normalized_shape)}, expected input with shape [{star}"
            f"{', '.join(map(str, normalized_shape))}], but got input of size{list(input.shape)}"
        )


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(normalized_shape)
    _check_normalized_shape(input, normalized_shape, {"weight": weight, "bias": bias})
    _check_param_dtypes(input, (weight, bias), "LayerNormKernelImpl")
    axes = tuple(range(input.ndim - k, input.ndim))
    return normalize(input, weight, bias, axes, eps)[0]


def _channel_shape(input: Tensor) -> tuple:
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _unbiased_impl(xp, biased, input, axes):
    count = math.prod(input.shape[axis] for axis in axes)
    return biased * biased.dtype.type(count / max(count - 1, 1))


# The running variance's n / (n - 1), computed from the input's shape when the op runs: as a Python float
# it would be a literal of a compiled graph, which then could not serve another batch size (symbolic.py).
_UNBIASED = OpDef("unbiased_var", _unbiased_impl, None, dtype_rule=keep_first,
                  meta=lambda args, params: tuple(args[0].shape))


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Batch statistics in training (updating running stats with the unbiased variance), running stats in eval."""
    if input.ndim < 2:  # (torch's kernel reads the channel dim 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.ndim, 1)}, "
                         f"{max(input.ndim, 1) - 1}], but got 1)")
    if not training:
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    _check_param_dtypes(input, (weight, bias, running_mean, running_var), "batch_norm")
    channels = input.shape[1]
    shape = _channel_shape(input)
    if training:
        count = input.numel() // channels
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
        axes = (0,) + tuple(range(2, input.ndim))
        w = weight.reshape(shape) if weight is not None else None
        b = bias.reshape(shape) if bias is not None else None
        y, mean, rstd = normalize(input, w, b, axes, eps, NORMALIZE_BATCH)
        if running_mean is not None or running_var is not None:
            check = getattr(_dispatch.forward_ad, "check_running_stats", None)  # under vmap (func/_batching.py)
            if check is not None:
                check(input, running_mean, running_var)
            with no_grad():
                batch_mean = mean.reshape(channels)
                biased_var = (1.0 / rstd.square() - eps).reshape(channels)
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(batch_mean.to(running_mean.dtype) * momentum)
                if running_var is not None:
                    unbiased = call(_UNBIASED, (biased_var, input), {"axes": axes})
                    running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        return y
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t.numel() != channels:
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    inv = (running_var + eps).rsqrt()
    scale = inv if weight is None else inv * weight
    shift = -running_mean * scale if bias is None else bias - running_mean * scale
    return input * scale.reshape(shape).to(input.dtype) + shift.reshape(shape).to(input.dtype)


def instance_norm(input: Tensor, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    shape = _channel_shape(input)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if math.prod(input.shape[2:]) <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    _check_param_dtypes(input, (weight, bias, running_mean, running_var), "batch_norm")
    axes = tuple(range(2, input.ndim))
    w = weight.reshape(shape) if weight is not None else None
    b = bias.reshape(shape) if bias is not None else None
    y, mean, rstd = normalize(input, w, b, axes, eps)
    if running_mean is not None or running_var is not None:
        with no_grad():
            batch_mean = mean.mean(0).reshape(-1)
            var = call(_UNBIASED, (1.0 / rstd.square() - eps, input), {"axes": axes}).mean(0).reshape(-1)
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(batch_mean * momentum)
            if running_var is not None:
                running_var.mul_(1 - momentum).add_(var * momentum)
    return y


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and (param.ndim != 1 or param.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(param.shape)} and input of shape {list(input.shape)}")
    _check_param_dtypes(input, (weight, bias), "GroupNormKernelImpl")
    # float16/bfloat16: normalised and scaled in float32 and rounded once, as torch's GroupNormKernelImpl (its
    # backward kernel too), not rounded after the normalisation, the scale and the shift each
    half = input.dtype in (dt.float16, dt.bfloat16)
    x = input.float() if half else input
    # (-1 cannot be inferred for an empty batch)
    grouped = x.reshape(n, num_groups, -1 if n else math.prod(input.shape[1:]) // num_groups)
    y = normalize(grouped, None, None, (2,), eps)[0].reshape(input.shape)
    shape = _channel_shape(input)
    if weight is not None:
        y = y * (weight.float() if half else weight).reshape(shape)
    if bias is not None:
        y = y + (bias.float() if half else bias).reshape(shape)
    return y.to(input.dtype) if half else y


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    _check_normalized_shape(input, normalized_shape, {"weight": weight}, star="*")
    dims = tuple(range(input.ndim - len(normalized_shape), input.ndim))
    if eps is None:
        from .. import finfo

        # the epsilon of the type it computes in (float32 for float16/bfloat16), as ATen's rms_norm
        eps = finfo(dt.float32 if input.dtype in (dt.float16, dt.bfloat16) else input.dtype).eps
    # computed in float32 for float16/bfloat16, weight included, and rounded once, as ATen's rms_norm kernel
    half = input.dtype in (dt.float16, dt.bfloat16)
    x = input.float() if half else input
    y = x * (x.square().mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        y = y * (weight.float() if half and weight.dtype == input.dtype else weight)
    return y.to(input.dtype)  # (torch's type_as(input), also for a weight of a wider dtype)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    from ._functional_pool import avg_pool2d, avg_pool3d
    from .functional import pad

    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div
