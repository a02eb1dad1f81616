"""skip_init: build a module without running its parameter initialisation (torch.nn.utils.skip_init)."""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """Instantiate `module_cls` on the meta device, then give it uninitialised storage on the requested device."""
    from ..modules.module import Module

    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
