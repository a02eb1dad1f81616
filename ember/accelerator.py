"""torch.accelerator: device-generic queries for the current accelerator.

ember's one accelerator is its cuda device (CuPy on an NVIDIA GPU, or the
NumPy emulation under EMBER_EMULATE_CUDA=1): where `ember.cuda.is_available()`
these calls forward to ember.cuda, as torch's forward to its device module.
Elsewhere they answer as torch's CPU-only build does: no accelerator
(`current_accelerator()` is None, `device_count()` 0), and anything that
needs a device raises torch's RuntimeError.  torch reports the accelerator
it was compiled with even when no device is visible; ember's "compiled with"
is "CuPy can see a GPU", so both questions have one answer here.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from . import _device

__all__ = [
    "Graph", "current_accelerator", "current_device_idx", "current_device_index", "get_device_capability",
    "current_stream", "device_count", "device_index", "empty_cache", "empty_host_cache", "get_memory_info",
    "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats", "set_device_idx",
    "set_device_index", "set_stream", "synchronize",
]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _cuda():
    """ember.cuda when it is the accelerator, else None."""
    from . import cuda

    return cuda if cuda.is_available() else None


def _require():
    cuda = _cuda()
    if cuda is None:
        raise RuntimeError(_NONE_AVAILABLE)
    return cuda


def _device_index(device, optional: bool = False) -> int:
    """torch.accelerator._utils._get_device_index: an int as is; a device must be the accelerator's type."""
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _device.device(device)
    index = None
    if isinstance(device, _device.device):
        accelerator = current_accelerator()
        if accelerator is None:
            raise RuntimeError("Accelerator expected")
        if accelerator.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {accelerator}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return current_device_index()
    return index


def is_available() -> bool:
    """Whether an accelerator (ember's cuda device) is usable now."""
    return _cuda() is not None


def current_accelerator(check_available: bool = False) -> _device.device | None:
    """The accelerator's device type (index None), or None when there is none."""
    return _device.device("cuda") if is_available() else None


def device_count() -> int:
    """How many accelerator devices are visible (0 without one)."""
    cuda = _cuda()
    return 0 if cuda is None else cuda.device_count()


def current_device_index() -> int:
    """The index of the current accelerator device."""
    return _require().current_device()


def current_device_idx() -> int:
    """Deprecated alias of current_device_index (torch warns with a FutureWarning)."""
    import warnings

    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make `device` the current accelerator device; a negative index is a no-op, as in torch."""
    index = _device_index(device, optional=False)
    if index < 0:
        return
    _require().set_device(index)


def set_device_idx(device, /) -> None:
    """Deprecated alias of set_device_index."""
    import warnings

    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


class device_index:
    """Context manager: make a device index current inside the block and restore the previous one after.
    `device_index(None)` changes nothing."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            cuda = _require()
            self.prev_idx = cuda.current_device()
            if self.idx >= 0:
                cuda.set_device(self.idx)

    def __exit__(self, *exc_info: object) -> None:
        if self.idx is not None and self.prev_idx >= 0:
            _require().set_device(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on the accelerator device."""
    index = _device_index(device, optional=True)
    _require().synchronize(index)


def current_stream(device=None, /):
    """The current stream of an accelerator device."""
    index = _device_index(device, optional=True)
    return _require().current_stream(index)


def set_stream(stream) -> None:
    """Make `stream` current on its device."""
    cuda = _require()
    if not isinstance(stream, cuda.Stream):
        raise TypeError(f"_accelerator_setStream(): incompatible function arguments. The following argument types "
                        f"are supported:\n    1. (arg0: torch.Stream) -> None\n\nInvoked with: {stream!r}")
    cuda.set_stream(stream)


def get_device_capability(device=None, /) -> dict[str, Any]:
    """{"supported_dtypes": the dtypes tensors on the device may have}."""
    index = _device_index(device, optional=True)
    _require()
    del index
    from . import _dtype as dt

    names = ("bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128")
    return {"supported_dtypes": {getattr(dt, name) for name in names}}


def memory_stats(device_index=None, /) -> OrderedDict[str, Any]:
    """The accelerator's allocator statistics, flattened and sorted by name."""
    cuda = _require()
    index = _device_index(device_index, optional=True)
    return OrderedDict(sorted(cuda.memory_stats(index).items()))


def memory_allocated(device_index=None, /) -> int:
    cuda = _require()
    return cuda.memory_allocated(_device_index(device_index, optional=True))


def max_memory_allocated(device_index=None, /) -> int:
    cuda = _require()
    return cuda.max_memory_allocated(_device_index(device_index, optional=True))


def memory_reserved(device_index=None, /) -> int:
    cuda = _require()
    return cuda.memory_reserved(_device_index(device_index, optional=True))


def max_memory_reserved(device_index=None, /) -> int:
    cuda = _require()
    return cuda.max_memory_reserved(_device_index(device_index, optional=True))


def reset_peak_memory_stats(device_index=None, /) -> None:
    cuda = _require()
    cuda.reset_peak_memory_stats(_device_index(device_index, optional=True))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    cuda = _require()
    cuda.reset_accumulated_memory_stats(_device_index(device_index, optional=True))


def empty_cache() -> None:
    """Release the accelerator allocator's cached, unused memory."""
    _require().empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory (ember's cuda keeps none beyond CuPy's pool)."""
    _require()


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """(free, total) bytes of the accelerator device."""
    cuda = _require()
    return cuda.mem_get_info(_device_index(device_index, optional=True))


class Graph:
    """torch.accelerator.Graph: capture and replay of device work.  ember has no graph capture on devices."""

    def __init__(self, keep_graph: bool = False, *, pool=None, capture_error_mode: str = "default") -> None:
        _require()
        raise RuntimeError("ember's cuda device does not support graph capture (torch.accelerator.Graph)")
