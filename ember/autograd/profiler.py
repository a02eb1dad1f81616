"""ember.autograd.profiler (torch.autograd.profiler): the older profiler API over ember.profiler's recorder.

    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("forward"):
            y = model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))
"""

from __future__ import annotations

from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg
from ..profiler._recorder import record_function
from ..profiler.profiler import _KinetoProfile

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]


class profile(_KinetoProfile):
    """torch.autograd.profiler.profile: records while the context is open (nothing at all when enabled=False)."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None) -> None:
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
        self.enabled = enabled

    def __enter__(self) -> profile:
        if self.enabled:
            self._start_trace()
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._stop_trace()

    def __str__(self) -> str:
        return self.key_averages().table()
