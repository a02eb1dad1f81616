"""ember.autograd: backward, grad, grad modes, Function, gradcheck, functional, anomaly detection."""

from __future__ import annotations

from .._autograd.functions import backward, grad
from .._autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from .._autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
