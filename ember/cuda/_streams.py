"""Streams and events: cupy.cuda.Stream / Event behind torch.cuda's classes.

UNVERIFIED on a GPU.  ember's ops enqueue on CuPy's current stream, so `with ember.cuda.stream(s):` orders
work as torch does.  Under emulated cuda every call is a no-op (NumPy runs synchronously).
"""

from __future__ import annotations

import time

from .._backends import cupy_backend, emulated

_sync_debug_mode = 0


def _cupy():
    if emulated.is_enabled():
        return None
    if not cupy_backend.available():
        raise RuntimeError("ember's cuda device needs CuPy and an NVIDIA GPU; ember.cuda.is_available() is False here")
    return cupy_backend.load()


def synchronize(device=None) -> None:
    """Wait for all work on a device to finish."""
    cupy = _cupy()
    if cupy is not None:
        from . import _index

        cupy.cuda.Device(_index(device)).synchronize()


class Stream:
    """A CUDA stream (cupy.cuda.Stream); work inside `with stream:` is enqueued on it."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        cupy = _cupy()
        self._stream = None if cupy is None else cupy.cuda.Stream(non_blocking=True)
        self.device = device
        self.priority = priority

    @property
    def cuda_stream(self) -> int:
        return 0 if self._stream is None else int(self._stream.ptr)

    def synchronize(self) -> None:
        if self._stream is not None:
            self._stream.synchronize()

    def wait_stream(self, other: Stream) -> None:
        if self._stream is not None and other._stream is not None:
            self._stream.wait_event(other._stream.record())

    def wait_event(self, event: Event) -> None:
        if self._stream is not None and event._event is not None:
            self._stream.wait_event(event._event)

    def record_event(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def query(self) -> bool:
        return True if self._stream is None else bool(self._stream.done)

    def __enter__(self):
        if self._stream is not None:
            self._stream.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._stream is not None:
            self._stream.__exit__(*exc)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and self.cuda_stream == other.cuda_stream and self._stream is other._stream

    def __hash__(self) -> int:
        return hash(self.cuda_stream)


class ExternalStream(Stream):
    """A stream made elsewhere, from its raw pointer (cupy.cuda.ExternalStream)."""

    def __init__(self, stream_ptr: int, device=None) -> None:
        cupy = _cupy()
        self._stream = None if cupy is None else cupy.cuda.ExternalStream(stream_ptr)
        self.device = device
        self.priority = 0


class Event:
    """A CUDA event (cupy.cuda.Event): marks a point in a stream, for waiting and timing."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        cupy = _cupy()
        self._event = None if cupy is None else cupy.cuda.Event(block=blocking, disable_timing=not enable_timing)
        self._host_time = None  # emulation: wall-clock time at record()

    def record(self, stream: Stream | None = None) -> None:
        if self._event is None:
            self._host_time = time.perf_counter()
        else:
            self._event.record(None if stream is None else stream._stream)

    def wait(self, stream: Stream | None = None) -> None:
        if self._event is not None:
            target = stream._stream if stream is not None else cupy_backend.load().cuda.get_current_stream()
            target.wait_event(self._event)

    def synchronize(self) -> None:
        if self._event is not None:
            self._event.synchronize()

    def query(self) -> bool:
        return True if self._event is None else bool(self._event.done)

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and `end` (both recorded)."""
        if self._event is None:
            return (end._host_time - self._host_time) * 1000.0
        return float(cupy_backend.load().cuda.get_elapsed_time(self._event, end._event))


class StreamContext:
    """torch.cuda.StreamContext: makes a stream current inside a `with` block (None: no change)."""

    def __init__(self, stream_: Stream | None) -> None:
        self.stream = stream_

    def __enter__(self):
        if self.stream is not None:
            self.stream.__enter__()
        return self.stream

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            self.stream.__exit__(*exc)


def stream(stream_: Stream | None) -> StreamContext:
    return StreamContext(stream_)


def _wrap_stream(raw) -> Stream:
    out = Stream.__new__(Stream)
    out._stream, out.device, out.priority = raw, None, 0
    return out


def current_stream(device=None) -> Stream:
    cupy = _cupy()
    return _wrap_stream(None if cupy is None else cupy.cuda.get_current_stream())


def default_stream(device=None) -> Stream:
    cupy = _cupy()
    return _wrap_stream(None if cupy is None else cupy.cuda.Stream.null)


def set_stream(stream_: Stream) -> None:
    if stream_ is not None and stream_._stream is not None:
        stream_._stream.use()


def get_sync_debug_mode() -> int:
    return _sync_debug_mode


def set_sync_debug_mode(debug_mode) -> None:
    """Accepted and stored ("default"/0, "warn"/1, "error"/2); ember does not yet report synchronizing calls."""
    global _sync_debug_mode
    names = {"default": 0, "warn": 1, "error": 2}
    _sync_debug_mode = names.get(debug_mode, debug_mode) if isinstance(debug_mode, str) else int(debug_mode)
