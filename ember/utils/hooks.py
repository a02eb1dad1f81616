"""ember.utils.hooks (torch.utils.hooks): the handle every register_*_hook returns.

RemovableHandle is defined once, in ember/_autograd/hooks.py, and used by
tensors, autograd nodes, nn.Module and optimizers; this module is where torch
code imports it from (`from torch.utils.hooks import RemovableHandle`).
"""

from __future__ import annotations

from .._autograd.hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark a hook as not to be serialized (torch.utils.hooks.unserializable_hook)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warn when a tensor being serialized has backward hooks that will not be saved."""
    import warnings

    hooks = getattr(tensor, "_backward_hooks", None)
    if hooks:
        for hook in hooks.values():
            if not hasattr(hook, "__torch_unserializable__"):
                warnings.warn(
                    f"backward hook {repr(hook)} on tensor will not be serialized.  If this is expected, you can "
                    "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this warning",
                    stacklevel=2,
                )
