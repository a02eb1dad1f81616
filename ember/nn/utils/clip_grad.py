"""Gradient clipping: clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_.

As torch's: the total norm is the norm of the per-tensor norms (as if all gradients were one vector),
computed and applied without recording autograd history.  `foreach` is accepted and means the same
computation here (DESIGN: "fused" or "foreach" is a mode, not a copy).
"""

from __future__ import annotations

import functools
import types
import warnings

from ..._autograd.grad_mode import no_grad
from ..._tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)

    return wrapper


def _check_foreach(foreach, tensors) -> None:
    if foreach:
        for t in tensors:
            if t.device.type not in ("cpu", "cuda"):
                raise RuntimeError(
                    f"foreach=True was passed, but can't use the foreach API on {t.device.type} tensors"
                )


@_no_grad
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The norm of the norms of `tensors`, as if they were concatenated into one vector."""
    import ember

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return ember.tensor(0.0)
    _check_foreach(foreach, tensors)
    first_device = tensors[0].device
    norms = [ember.linalg.vector_norm(t, norm_type) for t in tensors]
    total_norm = ember.linalg.vector_norm(ember.stack([n.to(first_device) for n in norms]), norm_type)
    if error_if_nonfinite and bool(ember.logical_or(total_norm.isnan(), total_norm.isinf())):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach: bool | None = None) -> None:
    """Scale gradients in place by min(max_norm / (total_norm + 1e-6), 1)."""
    import ember

    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    _check_foreach(foreach, grads)
    clip_coef = max_norm / (total_norm + 1e-6)
    clip_coef_clamped = ember.clamp(clip_coef, max=1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Clip the gradient norm of `parameters` in place; returns the total norm before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    from ... import _dispatch

    if _dispatch.tracer is not None:  # in a compiled training step, after backward(): replayed after the graph
        handled, norm = _dispatch.run_as_action(
            "clip", clip_grad_norm_, (parameters, max_norm, norm_type, error_if_nonfinite, foreach))
        if handled:
            return norm
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """Deprecated alias of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient in place to [-clip_value, clip_value]."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    from ... import _dispatch

    if _dispatch.tracer is not None:  # in a compiled training step, after backward(): replayed after the graph
        parameters = list(parameters)
        if _dispatch.run_as_action("clip", clip_grad_value_, (parameters, clip_value, foreach))[0]:
            return None
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    _check_foreach(foreach, grads)
    for g in grads:
        g.clamp_(min=-clip_value, max=clip_value)


