"""ember.autograd: backward, grad, grad modes, Function, gradcheck, functional, anomaly detection, graph."""

from __future__ import annotations

from .._autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from .._autograd.function import Function, InplaceFunction, once_differentiable
from .._autograd.functions import backward, grad
from .._autograd.grad_mode import (
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_multithreading_enabled,
    is_view_replay_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .._autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from . import anomaly_mode, forward_ad, function, functional, grad_mode, graph, profiler, variable  # noqa: F401  (torch's submodules)
from .variable import Variable

__all__ = ["backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "Function", "InplaceFunction", "once_differentiable",
           "detect_anomaly", "set_detect_anomaly", "functional", "graph", "Variable", "forward_ad",
           "set_multithreading_enabled", "enforce_grad_layout_policy", "is_multithreading_enabled",
           "is_view_replay_enabled"]


def _is_checkpoint_valid() -> bool:
    """False while a backward runs for autograd.grad or backward(inputs=...) (torch's private helper)."""
    from .._autograd import engine

    return engine.checkpoint_valid
