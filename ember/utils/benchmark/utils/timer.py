"""Timer: torch.utils.benchmark.Timer on `timeit.Timer`, with warm-up, thread pinning and replicates.

`stmt` and `setup` are Python source strings run with `globals` (which get `torch` bound to ember, so
benchmarks written for torch run unchanged).  Every measurement runs with ember's thread count set to
`num_threads` (default 1, as torch's) and puts the old count back afterwards.  As in torch, `repeat` and
`autorange` are refused in favour of `blocked_autorange`; only Python statements are supported (torch's
C++ timing needs its compiler toolchain).
"""

from __future__ import annotations

import enum
import textwrap
import timeit
from collections.abc import Callable
from typing import Any, NoReturn

from . import common

__all__ = ["Timer", "timer", "Language"]


def timer() -> float:
    """The default clock: `timeit.default_timer`, after waiting for an accelerator's queued work if there is one."""
    import ember

    if ember.accelerator.is_available():
        ember.accelerator.synchronize()
    return timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Measure a statement's run time; see torch.utils.benchmark.Timer.

    Args:
        stmt: code to time (a string). setup: code run once before timing. globals: the namespace both run in.
        timer: the clock. label, sub_label, description, env: how `Compare` groups and names the result.
        num_threads: ember's thread count while measuring.
    """

    _timer_cls: type = timeit.Timer

    def __init__(
        self,
        stmt: str = "pass",
        setup: str = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        self._globals = dict(globals or {})
        if language in (Language.PYTHON, "py", "python"):
            import ember

            self._globals.setdefault("torch", ember)
            self._language = Language.PYTHON
            if global_setup:
                raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most "
                                 "likely this code can simply be moved to `setup`.")
        elif language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("ember's benchmark Timer times Python statements only (no C++ toolchain).")
        else:
            raise ValueError(f"Invalid language `{language}`.")

        stmt = textwrap.dedent(stmt)
        stmt = (stmt[1:] if stmt and stmt[0] == "\n" else stmt).rstrip()
        setup = textwrap.dedent(setup)
        setup = (setup[1:] if setup and setup[0] == "\n" else setup).rstrip()
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                          sub_label=sub_label, description=description, env=env,
                                          num_threads=num_threads)

    def _timeit(self, number: int) -> float:
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number: int = 1000000) -> common.Measurement:
        """Run `stmt` `number` times (after a warm-up of `number // 100`, at least 2) as one measured block."""
        with common.set_torch_threads(self._task_spec.num_threads):
            self._timeit(number=max(int(number // 100), 2))
            return common.Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                                      task_spec=self._task_spec)

    def repeat(self, repeat: int = -1, number: int = -1) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback: Callable[[int, float], NoReturn] | None = None) -> None:
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _threaded_measurement_loop(self, number: int, time_hook: Callable[[], float],
                                   stop_hook: Callable[[list[float]], bool], min_run_time: float,
                                   max_run_time: float | None = None,
                                   callback: Callable[[int, float], Any] | None = None) -> list[float]:
        total_time = 0.0
        can_stop = False
        times: list[float] = []
        with common.set_torch_threads(self._task_spec.num_threads):
            while total_time < min_run_time or not can_stop:
                time_spent = time_hook()
                times.append(time_spent)
                total_time += time_spent
                if callback:
                    callback(number, time_spent)
                can_stop = stop_hook(times)
                if max_run_time and total_time > max_run_time:
                    break
        return times

    def _estimate_block_size(self, min_run_time: float) -> int:
        """The smallest power of ten of runs per block whose timer overhead is at most 0.01 %."""
        with common.set_torch_threads(self._task_spec.num_threads):
            overheads = sorted(self._timeit(0) for _ in range(5))
            overhead = overheads[2]
            number = 1
            while True:
                time_taken = self._timeit(number)
                if overhead / time_taken <= 1e-4 and time_taken >= min_run_time / 1000:
                    break
                if time_taken > min_run_time or number * 10 > 2147483647:
                    break
                number *= 10
        return number

    def blocked_autorange(self, callback: Callable[[int, float], Any] | None = None,
                          min_run_time: float = 0.2) -> common.Measurement:
        """Time blocks of a self-chosen size until `min_run_time` seconds have been spent in them."""
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), lambda times: True,
                                                min_run_time=min_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01, max_run_time: float = 10.0,
                           callback: Callable[[int, float], Any] | None = None) -> common.Measurement:
        """Like `blocked_autorange`, but keep going until IQR / median < `threshold` or `max_run_time` is spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop_hook(times: list[float]) -> bool:
            if len(times) > 3:
                return common.Measurement(number_per_run=number, raw_times=times,
                                          task_spec=self._task_spec).meets_confidence(threshold=threshold)
            return False

        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), stop_hook, min_run_time,
                                                max_run_time, callback=callback)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def collect_callgrind(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError("ember's benchmark Timer does not collect Callgrind instruction counts.")
