"""What a benchmark measured: TaskSpec (the statement and its labels) and Measurement (the times and their stats).

The statistics are torch's: per-run times are raw block times divided by the block size; median and quartiles
are linearly interpolated quantiles; a Measurement warns when the IQR is over 10 % (or 25 %) of the median.
They are computed with plain Python floats, so measuring never touches ember's ops.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import math
import statistics
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """Everything that defines a Timer except its globals: what is run and how it is labelled."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or the statement) with the sub-label appended."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as a `setup: ...` line (or block); empty when there is none."""
        if self.setup == "pass" or not self.setup:
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The TaskSpec part of a Measurement's repr."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_TASKSPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


def _quantile(sorted_values: tuple[float, ...], q: float) -> float:
    """The q-quantile of sorted values, interpolating linearly between neighbours (torch's default)."""
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """One or more timed blocks of a statement: `raw_times[i]` is the time of `number_per_run` runs.

    `times`, `median`, `mean` and `iqr` are per run, in seconds.  TaskSpec fields (`label`, `num_threads`, ...)
    read through.  The repr is torch's summary: title, median, IQR, counts and any variance warning.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # reserved for user payloads

    def __post_init__(self) -> None:
        self._sorted_times: tuple[float, ...] = ()
        self._warnings: tuple[str, ...] = ()
        self._median = -1.0
        self._mean = -1.0
        self._p25 = -1.0
        self._p75 = -1.0

    def __getattr__(self, name: str) -> Any:
        if name in _TASKSPEC_FIELDS:  # forward TaskSpec fields for convenience, as torch does
            return getattr(self.task_spec, name)
        return super().__getattribute__(name)

    @property
    def times(self) -> list[float]:
        """Per-run times: each block's time divided by the runs in it."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """The interquartile range (75th minus 25th percentile) of the per-run times."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def significant_figures(self) -> int:
        """A rough count (1 to 4) of trustworthy digits, from the spread of the interquartile times."""
        self._lazy_init()
        n_total = len(self._sorted_times)
        middle = self._sorted_times[n_total // 4:math.ceil(3 * n_total / 4)]
        std = statistics.pstdev(middle) if middle else 0.0
        confidence_interval = max(1.645 * std / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(self._median / confidence_interval))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        self._lazy_init()
        return bool(self._warnings)

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            self._median = _quantile(self._sorted_times, 0.5)
            self._mean = math.fsum(self._sorted_times) / len(self._sorted_times)
            self._p25 = _quantile(self._sorted_times, 0.25)
            self._p75 = _quantile(self._sorted_times, 0.75)

            def add_warning(msg: str) -> None:
                rel_iqr = self.iqr / self.median * 100
                self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% "
                                   f"of the median measurement.\n           {msg}",)

            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                add_warning("This could indicate system fluctuation.")

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is below `threshold`."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        self._lazy_init()
        skip_line = "MEASUREMENT_REPR_SKIP_LINE"
        n = len(self._sorted_times)
        time_unit, time_scale = select_unit(self._median)
        iqr_filter = "" if n >= 4 else skip_line
        threads = self.num_threads
        lines = [
            super().__repr__(),
            self.task_spec.summarize(),
            f"  {'Median: ' if n > 1 else ''}{self._median / time_scale:.2f} {time_unit}",
            f"  {iqr_filter}IQR:    {self.iqr / time_scale:.2f} {time_unit} "
            f"({self._p25 / time_scale:.2f} to {self._p75 / time_scale:.2f})",
            f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
            f"{'per measurement,' if n > 1 else ','} {threads} thread{'s' if threads > 1 else ''}",
            "\n".join(self._warnings),
        ]
        text = "\n".join(lines).strip()
        return "\n".join(line for line in text.splitlines() if skip_line not in line)

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """Pool replicates with the same TaskSpec into one Measurement per spec, at one run per block."""
        groups: collections.defaultdict[TaskSpec, list[Measurement]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].append(m)
        return [Measurement(number_per_run=1, raw_times=[t for m in group for t in m.times], task_spec=spec,
                            metadata=None) for spec, group in groups.items()]


def select_unit(t: float) -> tuple[str, float]:
    """The unit ("ns", "us", "ms" or "s") and its scale in seconds that print `t` seconds with 1-3 digits."""
    time_unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -4, "s")
    return time_unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[time_unit]


def unit_to_english(u: str) -> str:
    """The unit's name: "us" -> "microsecond"."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """`x` rounded to `n` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = math.ceil(math.log10(abs(x)))
    scale = 10 ** (magnitude - n)
    return float(round(x / scale) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements, in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """Run the block with ember's intra-op thread count set to `n`, restoring the previous count after."""
    import ember

    prior_num_threads = ember.get_num_threads()
    try:
        ember.set_num_threads(n)
        yield
    finally:
        ember.set_num_threads(prior_num_threads)
