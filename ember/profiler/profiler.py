"""torch.profiler's front end: `profile`, `schedule`, `ProfilerActivity`, `tensorboard_trace_handler`.

A `profile` owns the recording windows: without a schedule it records from
`start()` (or `__enter__`) to `stop()`; with one, `step()` moves through the
schedule's actions (NONE, WARMUP, RECORD, RECORD_AND_SAVE) and every finished
recording window is handed to `on_trace_ready(prof)`.  ember has no separate
warm-up cost to absorb (no kernel tracer to start), so WARMUP steps are not
recorded.  The autograd profiler (`ember.autograd.profiler.profile`) is the
same recorder without schedules.
"""

from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable

from ._events import EventList
from ._recorder import Recorder


class ProfilerActivity(enum.Enum):
    """What to profile: ember records the host (CPU) side of every op, whatever the tensor's device."""

    CPU = 0
    CUDA = 2
    XPU = 1
    MTIA = 3
    PrivateUse1 = 4


class ProfilerAction(enum.Enum):
    """What a profile does during a step (torch.profiler.ProfilerAction)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set:
    return {ProfilerActivity.CPU}


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """torch.profiler.schedule: skip `skip_first` steps, then cycle wait -> warmup -> active, `repeat` times
    (0: forever); the last active step of a cycle is RECORD_AND_SAVE, which hands the trace to on_trace_ready."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0)."
        )

    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:  # the first cycle starts with its warmup
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None,
                              use_gzip: bool = False) -> Callable[[profile], None]:
    """An on_trace_ready that writes each trace as `<worker>.<time_ns>.pt.trace.json[.gz]` into dir_name."""

    def handler(prof: profile) -> None:
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json")
        if use_gzip:
            import gzip
            import shutil

            prof.export_chrome_trace(path)
            with open(path, "rb") as source, gzip.open(path + ".gz", "wb") as target:
                shutil.copyfileobj(source, target)
            os.remove(path)
        else:
            prof.export_chrome_trace(path)

    return handler


class _KinetoProfile:
    """The recording core shared by torch.profiler.profile and torch.autograd.profiler.profile."""

    def __init__(self, *, record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False, with_modules: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self._recorder: Recorder | None = None  # the window being recorded
        self._events: EventList | None = None  # the last finished window

    def _start_trace(self) -> None:
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack)
        self._recorder.install()

    def _stop_trace(self) -> None:
        if self._recorder is not None:
            self._recorder.uninstall()
            self._events = self._recorder.event_list()
            self._recorder = None

    def events(self) -> EventList:
        """Every recorded range of the last finished window, in start order."""
        if self._events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self._events

    @property
    def function_events(self) -> EventList:
        return self.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        if group_by_input_shape and not self.record_shapes:
            raise RuntimeError("group_by_input_shape needs record_shapes=True")
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def table(self, **kwargs) -> str:
        return self.key_averages().table(**kwargs)

    def total_average(self):
        return self.events().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self.events().self_cpu_time_total

    def export_chrome_trace(self, path: str) -> None:
        self.events().export_chrome_trace(path)

    def add_metadata(self, key: str, value: str) -> None:
        """Accepted for compatibility; the Chrome trace ember writes carries no metadata section."""

    add_metadata_json = add_metadata


class profile(_KinetoProfile):
    """torch.profiler.profile: record op calls, backward nodes and record_function ranges on the CPU."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[profile], None] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config=None, execution_trace_observer=None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback=None) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.activities = set(activities) if activities is not None else supported_activities()
        self.schedule = schedule if schedule is not None else _always_record
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._running = False

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self._running = True
        if self.current_action in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            self._start_trace()

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        if self._recorder is not None:
            self._finish_window()

    def step(self) -> None:
        """Mark the end of a training step: advance the schedule, saving a window that just ended."""
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if not self._running:
            return
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if previous == ProfilerAction.RECORD_AND_SAVE or (previous in recording
                                                          and self.current_action not in recording):
            self._finish_window()
        if self.current_action in recording and self._recorder is None:
            self._start_trace()

    def _finish_window(self) -> None:
        self._stop_trace()
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)
