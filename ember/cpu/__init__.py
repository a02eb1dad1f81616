"""ember.cpu: torch.cpu's device-agnostic shims (streams, events, synchronize) for the one CPU device.

Code written against `torch.get_device_module(device)` calls the same functions on every device module; on
the CPU they do nothing, as torch's.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream", "stream",
           "set_device", "device_count", "Stream", "StreamContext", "Event"]


def is_available() -> bool:
    """Always True: there is always a CPU."""
    return True


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU ops run synchronously."""


class Stream:
    """A CPU stream: exists so device-agnostic code can create and wait on streams."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """A CPU event: always complete."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_current_stream = Stream()


def current_stream(device=None) -> Stream:
    return _current_stream


class StreamContext(AbstractContextManager):
    """Makes `stream` the current CPU stream inside a with-block."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.prev_stream = _current_stream

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream = _current_stream
        _current_stream = self.stream

    def __exit__(self, type, value, traceback) -> None:
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream: Stream) -> AbstractContextManager:
    return StreamContext(stream)


def device_count() -> int:
    return 1


def set_device(device) -> None:
    """Accepted and ignored: there is one CPU device."""


def current_device() -> str:
    return "cpu"


def _is_vnni_supported() -> bool:
    """torch.cpu._is_vnni_supported: whether the CPU has AVX512-VNNI (torch checks only that flag)."""
    from .._runtime import cpu_flags

    return "avx512_vnni" in cpu_flags()


def __getattr__(name: str):
    # torch.cpu.amp, the deprecated spelling of torch.amp, loaded on first use (it imports ember.amp)
    if name == "amp":
        import importlib

        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
