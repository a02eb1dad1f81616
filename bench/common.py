"""The benchmark harness: time ember against torch in one run, alternating, and print ratios.

Why this shape:

- Ratios, not absolute times.  The issues set targets as "within N x of torch",
  and an absolute time means nothing across machines; a ratio measured in the
  same process, on the same inputs, minutes apart at most, does.
- Alternation.  Each round times every library once, in a rotating order, so a
  burst of machine noise (another process, a frequency change, a page-cache
  flush) lands on all of them instead of on whichever happened to run second.
- Median and spread.  The median of the rounds is the number reported; the
  spread, (max - min) / median, says how far to trust it.  A spread above ~20%
  means the ratio is noise-limited: rerun, or raise `rounds`.
- Thread counts are left at their defaults (that is what users get) and
  printed in the header, with the BLAS NumPy uses, so a reader can tell a
  threading difference from an overhead difference.
- The garbage collector stays on (unlike `timeit`): collecting the reference
  cycles an autograd graph creates is a cost ember's users pay too.

No test asserts a time: these are programs for people, run as
`python -m bench` (see bench/run.py).
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

LIBRARIES = ("torch", "ember", "numpy")


@dataclass
class Timing:
    """One function's result: seconds per call (median over rounds), the relative spread, and the best round.

    `best` (the fastest round) is what a round costs with the least interference; on a busy machine the
    ratio of bests is steadier than the ratio of medians, so the table shows both.
    """

    median: float
    spread: float
    loops: int
    samples: list[float]

    @property
    def best(self) -> float:
        return min(self.samples)


@dataclass
class Workload:
    """The same computation written for each library, as zero-argument callables.

    Inputs are built once, outside the callables, so only the op calls are
    timed.  `numpy_fn` is optional: give it where plain NumPy is the bound
    ember can at best reach (ember runs on NumPy), so the table shows how much
    of the gap to torch is ember's own overhead and how much is NumPy's.
    `target` is the issue's ratio goal (ember/torch), shown next to the result.
    """

    name: str
    ember_fn: Callable | None
    torch_fn: Callable
    numpy_fn: Callable | None = None
    target: float | None = None
    note: str = ""


@dataclass
class Result:
    """A workload's row in the table; `timings` maps library name to Timing (absent when skipped)."""

    workload: Workload
    timings: dict
    note: str = ""


# ---------------------------------------------------------------- timing


def _calibrate(fn: Callable, min_time: float) -> int:
    """How many back-to-back calls make one timed block last at least `min_time` seconds (timeit's autorange)."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return loops
        # Aim a little past min_time from the rate seen so far, at least doubling.
        if elapsed > 0:
            loops = max(loops * 2, int(loops * 1.2 * min_time / elapsed) + 1)
        else:
            loops *= 10


def _time_block(fn: Callable, loops: int) -> float:
    """Seconds per call over `loops` consecutive calls."""
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def measure_interleaved(
    fns: Sequence[Callable], *, rounds: int = 7, min_time: float = 0.05, warmup: int = 2
) -> list[Timing]:
    """Time several functions, alternating between them in every round.

    Each function is warmed up (`warmup` calls, then calibration, which runs it
    for about `min_time` more) and gets its own loop count, so a 2 µs op and a
    20 ms op are both timed over blocks of about `min_time` seconds.  Round r
    runs the functions in an order rotated by r, so none is always first.
    """
    loops = []
    for fn in fns:
        for _ in range(warmup):
            fn()
        loops.append(_calibrate(fn, min_time))
    samples: list[list[float]] = [[] for _ in fns]
    count = len(fns)
    for round_index in range(rounds):
        for offset in range(count):
            i = (round_index + offset) % count
            samples[i].append(_time_block(fns[i], loops[i]))
    timings = []
    for each, n in zip(samples, loops):
        median = statistics.median(each)
        spread = (max(each) - min(each)) / median if median > 0 else 0.0
        timings.append(Timing(median, spread, n, each))
    return timings


def measure(fn: Callable, *, rounds: int = 7, min_time: float = 0.05) -> Timing:
    """Time one function: warm up, calibrate a loop count, then take the median of `rounds` blocks."""
    return measure_interleaved([fn], rounds=rounds, min_time=min_time)[0]


# ---------------------------------------------------------------- running workloads


def _to_numpy(value):
    """A workload's return value as a NumPy array, for the sanity check that both libraries did the same math."""
    if value is None:
        return None
    if hasattr(value, "detach"):
        value = value.detach()
    if hasattr(value, "numpy"):
        return value.numpy()
    return np.asarray(value)


def _probe(fn: Callable):
    """Call `fn` once: (result, None) when it runs, (None, "ExcType: message") when it doesn't."""
    try:
        return fn(), None
    except Exception as error:  # noqa: BLE001 - a missing op must skip the row, whatever it raises
        message = str(error).splitlines()[0] if str(error) else ""
        return None, f"{type(error).__name__}: {message}"[:90]


def _same_values(ember_value, torch_value) -> bool:
    """Loose agreement: float32 kernels sum in different orders, so near-zero entries of a long reduction
    (a 1024-long matmul row) differ by ~1e-6 of the result's scale; the absolute tolerance follows that scale."""
    a, b = _to_numpy(ember_value), _to_numpy(torch_value)
    if a is None or b is None:
        return True
    if a.shape != b.shape:
        return False
    finite = np.abs(b[np.isfinite(b)]) if b.size else b
    scale = float(finite.max()) if finite.size else 1.0
    return bool(np.allclose(a, b, rtol=1e-3, atol=1e-5 * max(scale, 1.0), equal_nan=True))


def run_workload(workload: Workload, *, rounds: int, min_time: float) -> Result:
    """Probe each library's function once (skipping the ones that raise), check values agree, then time them."""
    fns = {"torch": workload.torch_fn, "ember": workload.ember_fn, "numpy": workload.numpy_fn}
    notes = [workload.note] if workload.note else []
    values = {}
    for library, fn in list(fns.items()):
        if fn is None:
            del fns[library]
            continue
        value, error = _probe(fn)
        if error is not None:
            notes.append(f"{library} skipped ({error})")
            del fns[library]
        else:
            values[library] = value
    if "ember" in values and "torch" in values and not _same_values(values["ember"], values["torch"]):
        notes.append("VALUES DIFFER from torch")
    values.clear()  # free probe results (large for mid-size workloads) before timing
    names = list(fns)
    timings = measure_interleaved([fns[n] for n in names], rounds=rounds, min_time=min_time) if names else []
    return Result(workload, dict(zip(names, timings)), "; ".join(notes))


# ---------------------------------------------------------------- printing


def format_seconds(seconds: float) -> str:
    """A time per call in the unit that keeps three significant digits readable (ns, µs, ms, s)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _blas_description() -> str:
    """NumPy's BLAS and its thread count: threadpoolctl when installed, else NumPy's build config (no count)."""
    try:
        import threadpoolctl
    except ImportError:
        threadpoolctl = None
    if threadpoolctl is not None:
        pools = threadpoolctl.threadpool_info()
        blas = [
            f"{p.get('internal_api')} {p.get('version')} ({p.get('num_threads')} threads)"
            for p in pools
            if p.get("user_api") == "blas"
        ]
        if blas:
            return ", ".join(blas)
    try:
        config = np.show_config(mode="dicts")
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')} (threads: install threadpoolctl to see)"
    except Exception:  # noqa: BLE001 - older NumPy has no mode="dicts"; the header line is optional
        return "unknown (install threadpoolctl to see)"


def load_average() -> float | None:
    """The 1-minute load average (None where the OS has none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def load_line(at_start: float | None, at_end: float | None) -> str:
    """A header line for the load during the run: other processes competing for the CPUs skew timings."""
    if at_start is None or at_end is None:
        return "load:    unknown"
    cpus = os.cpu_count() or 1
    busy = ""
    if max(at_start, at_end) > 0.5 * cpus:
        busy = "  BUSY: other processes compete for the CPUs; multi-threaded ratios are unreliable"
    return f"load:    {at_start:.2f} at start, {at_end:.2f} at end (1-minute average, {cpus} CPUs){busy}"


def header_lines() -> list[str]:
    """Machine, date, library versions, thread counts and load: what a reader needs to compare two tables."""
    import torch

    import ember

    return [
        f"date:    {datetime.datetime.now().isoformat(timespec='seconds')}",
        f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        f"python:  {platform.python_version()}  numpy {np.__version__}  torch {torch.__version__}  "
        f"ember {getattr(ember, '__version__', '?')}",
        f"threads: torch.get_num_threads()={torch.get_num_threads()}  numpy BLAS: {_blas_description()}",
        f"ember:   {os.path.dirname(ember.__file__)}",
    ]


def _ratio_cell(result: Result, statistic: str) -> str:
    """ember/torch of the `statistic` ("median" or "best") of each, flagged with '!' when over the target."""
    ember_timing, torch_timing = result.timings.get("ember"), result.timings.get("torch")
    if ember_timing is None or torch_timing is None:
        return "-"
    ratio = getattr(ember_timing, statistic) / getattr(torch_timing, statistic)
    target = result.workload.target
    flag = " !" if target is not None and ratio > target else ""
    return f"{ratio:.2f}x{flag}"


def _row(result: Result) -> list[str]:
    timings = result.timings

    def time_cell(library):
        return format_seconds(timings[library].median) if library in timings else "-"

    spreads = [f"{timings[n].spread:.0%}" for n in ("ember", "torch") if n in timings]
    target = result.workload.target
    return [
        result.workload.name,
        time_cell("torch"),
        time_cell("ember"),
        _ratio_cell(result, "median"),
        _ratio_cell(result, "best"),
        "/".join(spreads) or "-",
        f"<={target:g}x" if target is not None else "",
        time_cell("numpy"),
        result.note,
    ]


COLUMNS = ["workload", "torch", "ember", "ratio (ember/torch)", "best ratio", "spread (e/t)", "target", "numpy", "note"]


def format_table(results: Sequence[Result]) -> str:
    """The results as an aligned text table; '!' marks a ratio over its target."""
    rows = [COLUMNS] + [_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    right = {1, 2, 3, 4, 5, 7}  # numbers align right
    lines = []
    for index, row in enumerate(rows):
        cells = [cell.rjust(w) if i in right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append(" | ".join(cells).rstrip())
        if index == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def print_table(results: Sequence[Result], extra_header: Sequence[str] = ()) -> None:
    """Print the header lines (and the caller's extra ones), then the table, then a one-line legend."""
    print("\n".join(header_lines() + list(extra_header)))
    print()
    print(format_table(results))
    print()
    print(
        "times are per call (median of rounds); ratio = of medians; best ratio = of fastest rounds "
        "(steadier on a busy machine);\nspread = (max-min)/median per library (ember/torch); '!' = ratio over the "
        "issue's target"
    )
