"""ember.cuda: torch.cuda's API over CuPy.

Without CuPy or without an NVIDIA GPU, the queries answer as torch's CPU build
does (is_available() is False, device_count() is 0) and anything that needs a
device raises a RuntimeError that says what is missing.  `import ember` never
imports CuPy; it is loaded on first use.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
    "get_device_properties", "get_device_capability", "synchronize", "Stream", "Event", "stream", "current_stream",
    "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved", "empty_cache",
    "mem_get_info", "manual_seed", "manual_seed_all", "is_bf16_supported", "is_initialized", "init",
]

_current = 0
_peak = 0


@lru_cache(maxsize=1)
def _cupy():
    """CuPy if it imports and sees a device, else None."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        if cupy.cuda.runtime.getDeviceCount() <= 0:
            return None
    except Exception:  # no driver
        return None
    return cupy


def _require():
    cupy = _cupy()
    if cupy is None:
        raise RuntimeError(
            "ember's cuda device needs CuPy and an NVIDIA GPU with its driver (pip install 'ember[cuda12]'); "
            "ember.cuda.is_available() is False here"
        )
    return cupy


def is_available() -> bool:
    return _cupy() is not None


def is_initialized() -> bool:
    return is_available()


def init() -> None:
    _require()


def device_count() -> int:
    cupy = _cupy()
    return 0 if cupy is None else int(cupy.cuda.runtime.getDeviceCount())


def current_device() -> int:
    _require()
    return _current


def set_device(device) -> None:
    global _current
    cupy = _require()
    index = device if isinstance(device, int) else (getattr(device, "index", None) or 0)
    if isinstance(device, str):
        index = int(device.split(":")[1]) if ":" in device else 0
    cupy.cuda.Device(index).use()
    _current = index


@contextlib.contextmanager
def device(index):
    """Context manager that makes `index` the current device."""
    previous = _current
    set_device(index)
    try:
        yield
    finally:
        set_device(previous)


def get_device_properties(device=None):
    cupy = _require()
    return cupy.cuda.runtime.getDeviceProperties(device if isinstance(device, int) else _current)


def get_device_name(device=None) -> str:
    name = get_device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else name


def get_device_capability(device=None) -> tuple:
    properties = get_device_properties(device)
    return properties["major"], properties["minor"]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available() and get_device_capability()[0] >= 8


def synchronize(device=None) -> None:
    _require().cuda.Device(_current if device is None else device).synchronize()


class Stream:
    """A CUDA stream (cupy.cuda.Stream); ops enqueue on the current stream."""

    def __init__(self, device=None, priority: int = 0) -> None:
        self._stream = _require().cuda.Stream(non_blocking=True)

    def synchronize(self) -> None:
        self._stream.synchronize()

    def wait_stream(self, other: Stream) -> None:
        event = other._stream.record()
        self._stream.wait_event(event)

    def query(self) -> bool:
        return self._stream.done

    def __enter__(self):
        self._stream.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._stream.__exit__(*exc)


class Event:
    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self._event = _require().cuda.Event(block=blocking, disable_timing=not enable_timing)

    def record(self, stream: Stream | None = None) -> None:
        self._event.record(None if stream is None else stream._stream)

    def synchronize(self) -> None:
        self._event.synchronize()

    def query(self) -> bool:
        return self._event.done

    def elapsed_time(self, end: Event) -> float:
        return float(_require().cuda.get_elapsed_time(self._event, end._event))


@contextlib.contextmanager
def stream(stream_: Stream | None):
    if stream_ is None:
        yield
        return
    with stream_:
        yield


def current_stream(device=None):
    return _require().cuda.get_current_stream()


def memory_allocated(device=None) -> int:
    cupy = _cupy()
    return 0 if cupy is None else int(cupy.get_default_memory_pool().used_bytes())


def memory_reserved(device=None) -> int:
    cupy = _cupy()
    return 0 if cupy is None else int(cupy.get_default_memory_pool().total_bytes())


def max_memory_allocated(device=None) -> int:
    global _peak
    _peak = max(_peak, memory_allocated(device))
    return _peak


def reset_peak_memory_stats(device=None) -> None:
    global _peak
    _peak = memory_allocated(device)


def empty_cache() -> None:
    cupy = _cupy()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


def mem_get_info(device=None) -> tuple:
    free, total = _require().cuda.runtime.memGetInfo()
    return int(free), int(total)


def manual_seed(seed: int) -> None:
    """Seed the GPU generator (a no-op without a GPU, like torch's, which defers it)."""
    cupy = _cupy()
    if cupy is not None:
        cupy.random.seed(int(seed) % (2**32))


def manual_seed_all(seed: int) -> None:
    manual_seed(seed)
