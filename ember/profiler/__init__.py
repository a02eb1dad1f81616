"""ember.profiler (torch.profiler): an op-level profiler on ember's one dispatch path.

    with ember.profiler.profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        model(x).sum().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

Every op call ("aten::add"), backward node ("autograd::engine::evaluate_function:
AddBackward0") and `record_function` range is timed with perf_counter_ns; see
_recorder.py for how it hooks into `_dispatch.call` at the cost of one global
test when off.
"""

from __future__ import annotations

from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._recorder import record_function
from .profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "supported_activities", "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]
