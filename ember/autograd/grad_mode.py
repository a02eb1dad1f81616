"""torch.autograd.grad_mode (implemented in ember/_autograd/grad_mode.py)."""

from .._autograd.grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]
