"""The recorder: the `profiler` hook of ember/_dispatch.py's `call()`, and `record_function` ranges.

While a profile records, `_dispatch.profiler` is a `Recorder`; every op call
goes through `Recorder.__call__`, which reads perf_counter_ns, runs the call
through `_dispatch.call` with the hook cleared (so the call is the same one the
unprofiled path makes, and cannot re-enter the recorder), reads the clock again
and closes the event.  When no profile records the hook is None and dispatch
pays one global `is not None` test.  The backward engine calls
`evaluate_function` / `apply_node` for each node, named as torch names them.

Ranges nest per thread: an event opened while another is open on the same
thread becomes its child, which is what self time (total minus children) and
the tree in `prof.events()` are built from.  Ops run inside another op's call
(autocast's casts, for one) are not recorded separately: their time is the
outer op's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import traceback
from time import perf_counter_ns

import numpy as np

from .. import _dispatch
from ._events import EventList, FunctionEvent

active: Recorder | None = None  # the recording Recorder, also installed as _dispatch.profiler

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Recorder:
    """Collects FunctionEvents for one recording window (one trace)."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list[FunctionEvent] = []
        self._open_events: dict[int, list[FunctionEvent]] = {}  # thread id -> stack of open ranges

    # ------------------------------------------------------------ switching on and off
    def install(self) -> None:
        global active
        if active is not None:
            raise RuntimeError("Profiler is already enabled: stop the running ember.profiler.profile first")
        active = self
        _dispatch.profiler = self

    def uninstall(self) -> None:
        global active
        if active is self:
            active = None
            _dispatch.profiler = None

    def event_list(self) -> EventList:
        return EventList(sorted(self.events, key=lambda event: event.start_ns), profile_memory=self.profile_memory)

    # ------------------------------------------------------------ ranges
    def open(self, name: str, input_shapes=None, sequence_nr: int = -1, user: bool = False) -> FunctionEvent:
        thread = threading.get_ident()
        stack = self._open_events.get(thread)
        if stack is None:
            stack = self._open_events[thread] = []
        event = FunctionEvent(len(self.events), name, thread, 0, input_shapes,
                              _python_stack() if self.with_stack else None, sequence_nr, user)
        if stack:
            event.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(event)
        stack.append(event)
        self.events.append(event)
        event.start_ns = perf_counter_ns()
        return event

    def close(self, event: FunctionEvent, allocated: int = 0, end_ns: int | None = None) -> None:
        event.end_ns = perf_counter_ns() if end_ns is None else end_ns
        stack = self._open_events.get(event.thread)
        if stack and stack[-1] is event:
            stack.pop()
        elif stack and event in stack:  # ranges closed out of order (a record_function left open): unwind
            del stack[stack.index(event):]
        event.cpu_memory_usage = allocated + sum(child.cpu_memory_usage for child in event.cpu_children)

    # ------------------------------------------------------------ hooks
    def __call__(self, op, args: tuple, params: dict):
        """_dispatch.call's profiler hook: time one op call."""
        name = "aten::" + op.name
        target = _dispatch.inplace_target
        if target is not None and args and args[0] is target:
            name += "_"
        shapes = _input_shapes(args, params) if self.record_shapes else None
        event = self.open(name, shapes)
        _dispatch.profiler = None
        results = None
        try:
            results = _dispatch.call(op, args, params)
        finally:
            end_ns = perf_counter_ns()
            _dispatch.profiler = active  # self, unless the profile was stopped meanwhile
            self.close(event, _allocated(results, args) if self.profile_memory else 0, end_ns)
        return results

    def evaluate_function(self, node, run, *args):
        """The backward engine's step for one node: hooks and apply, as torch's evaluate_function range."""
        event = self.open("autograd::engine::evaluate_function: " + node.name(), sequence_nr=node._sequence_nr)
        try:
            return run(*args)
        finally:
            self.close(event)

    def apply_node(self, node, grads):
        """One backward node's apply, named as its grad_fn ("AddBackward0")."""
        event = self.open(node.name(), sequence_nr=node._sequence_nr)
        try:
            return node.apply(grads)
        finally:
            self.close(event)


def _input_shapes(args: tuple, params: dict) -> list:
    """torch's "Input Shapes": a tensor's sizes, [] for each scalar and option."""
    shapes = [list(a._data.shape) if isinstance(a, _dispatch.Tensor) else [] for a in args]
    return shapes + [[] for _ in params]


def _allocated(results, args: tuple) -> int:
    """Bytes of new buffers among an op's results (views and operands returned, as in-place ops do, own none)."""
    if isinstance(results, _dispatch.Tensor):
        array = results._data
        if type(array) is not np.ndarray or not array.flags.owndata or any(results is a for a in args):
            return 0
        return array.nbytes
    if isinstance(results, tuple):
        return sum(_allocated(r, args) for r in results)
    return 0


def _python_stack() -> list[str]:
    """The user's frames, innermost first, as torch's `stack` entries ("file.py(12): fn")."""
    frames = traceback.extract_stack()
    return [f"{frame.filename}({frame.lineno}): {frame.name}" for frame in reversed(frames)
            if not frame.filename.startswith(_EMBER_DIR)]


class record_function(contextlib.ContextDecorator):
    """Label a range of code in the profile (torch.autograd.profiler.record_function); a no-op when off.

    Usable as `with record_function("name"):` and as a decorator `@record_function("name")`.
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._open: list = []  # (recorder, event) per entry: a decorated function may recurse

    def __enter__(self) -> record_function:
        recorder = active
        self._open.append((recorder, recorder.open(self.name, user=True) if recorder is not None else None))
        return self

    def __exit__(self, *exc) -> bool:
        recorder, event = self._open.pop()
        if event is not None:
            recorder.close(event)
        return False
