"""ember.utils: torch.utils's public pieces.

Subpackages load on first attribute access (PEP 562), so `import ember` stays
cheap and a sibling module (utils.checkpoint, ...) can be added without
touching this file's import order.
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("data", "checkpoint", "safetensors", "hooks", "dlpack", "_pytree", "benchmark", "tensorboard",
               "model_zoo")


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
