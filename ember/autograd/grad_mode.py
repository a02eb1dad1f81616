"""torch.autograd.grad_mode (implemented in ember/_autograd/grad_mode.py)."""

from .._autograd.grad_mode import (  # noqa: F401
    _force_original_view_tracking,
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled",
           "enforce_grad_layout_policy"]
