"""Array backends: one array module per device type.

Ops are written once against an array module `xp` (NumPy's API).  The CPU
backend is NumPy itself; the `meta` device has no arrays at all, only
`MetaArray` placeholders carrying a shape and dtype; the `cuda` device uses
CuPy (cupy_backend.py), loaded on first use, or, for CI on machines without a
GPU, NumPy dressed as CuPy (emulated.py, NOTE [ Emulated cuda ]).  Nothing
outside this package imports numpy or cupy for array work except through `xp`
(see DESIGN.md).  Moving arrays between devices goes through `to_host` and
`to_device` here, so no other file needs to know which backend is live.
"""

from __future__ import annotations

import os

import numpy

from . import emulated
from .meta import MetaArray

__all__ = ["MetaArray", "array_module", "array_module_of", "numpy", "emulate_cuda", "cuda_is_emulated",
           "to_host", "to_device", "pinned_empty", "is_pinned"]

_MODULES = {"cpu": numpy}


def array_module(device_type: str):
    """The array module for a device type ('cpu' -> numpy, 'cuda' -> cupy or its emulation)."""
    try:
        return _MODULES[device_type]
    except KeyError:
        if device_type == "cuda":
            if emulated.is_enabled():
                return emulated.module
            from . import cupy_backend

            return cupy_backend.load()
        raise RuntimeError(f"no array backend for device type '{device_type}'") from None


def array_module_of(array):
    """The array module an array belongs to (numpy, cupy or the emulation), without importing cupy."""
    kind = type(array)
    if kind is numpy.ndarray:
        return numpy
    if kind is emulated.DeviceArray:
        return emulated.module
    if kind.__module__.startswith("cupy"):
        from . import cupy_backend

        return cupy_backend.load()
    return numpy


def is_device_array(array) -> bool:
    """True for arrays that live on a cuda device (CuPy's, or the emulation's)."""
    kind = type(array)
    return kind is emulated.DeviceArray or kind.__module__.startswith("cupy")


def emulate_cuda(enabled: bool = True) -> None:
    """Make the 'cuda' device available on NumPy, for CI without a GPU: see NOTE [ Emulated cuda ].

    It validates the backend plumbing and op impls' use of `xp`, not GPU numerics or speed.
    Switch it on before any cuda tensor is made; tensors made under one setting are not valid under the other.
    """
    emulated.set_enabled(enabled)
    from .. import _dispatch

    _dispatch._device_modules.pop("cuda", None)  # the cached array module of the cuda device


def cuda_is_emulated() -> bool:
    return emulated.is_enabled()


def to_host(array):
    """A NumPy array with a device array's values (a copy); NumPy arrays pass through."""
    if type(array) is numpy.ndarray:
        return array
    if hasattr(array, "get"):
        return array.get()
    return numpy.asarray(array)


def to_device(array, device):
    """Copy an array (host or another cuda device's) onto a cuda device; a new buffer, never an alias."""
    xp = array_module("cuda")
    if emulated.is_enabled():
        if type(array) is emulated.DeviceArray:
            return emulated.DeviceArray(array._array.copy())
        return xp.asarray(numpy.array(array, copy=True))
    from . import cupy_backend

    index = device.index
    if index is None:
        from .._device import current_cuda_device

        index = current_cuda_device().index
    return cupy_backend.to_device(array, index)


def pinned_empty(shape, dtype):
    """A page-locked (pinned) host buffer, for fast and asynchronous host-to-device copies.

    With CuPy and a GPU, cupyx.empty_pinned; otherwise an ordinary NumPy array (pinning is then a flag only).
    """
    from . import cupy_backend

    if not emulated.is_enabled() and cupy_backend.available():
        import cupyx

        return cupyx.empty_pinned(shape, dtype)
    return numpy.empty(shape, dtype)


def is_pinned(array) -> bool:
    """Whether a host array's memory is page-locked (only CuPy's pinned memory pool can say yes)."""
    if type(array) is not numpy.ndarray or emulated.is_enabled():
        return False
    from . import cupy_backend

    return cupy_backend.is_pinned(array)


if os.environ.get("EMBER_EMULATE_CUDA") == "1":
    emulated.set_enabled(True)
