"""Array backends: one array module per device type.

Ops are written once against an array module `xp` (NumPy's API).  The CPU
backend is NumPy itself; the `meta` device has no arrays at all, only
`MetaArray` placeholders carrying a shape and dtype; a CuPy backend for `cuda`
plugs in here without touching any op.  Nothing outside this package imports
numpy or cupy for array work except through `xp` (see DESIGN.md).
"""

from __future__ import annotations

import numpy

from .meta import MetaArray

__all__ = ["MetaArray", "array_module", "numpy"]

_MODULES = {"cpu": numpy}


def array_module(device_type: str):
    """The array module for a device type ('cpu' -> numpy)."""
    try:
        return _MODULES[device_type]
    except KeyError:
        if device_type == "cuda":
            from . import cupy_backend

            return cupy_backend.load()
        raise RuntimeError(f"no array backend for device type '{device_type}'") from None
