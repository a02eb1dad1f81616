"""ember.utils.benchmark: Timer's counts and thread handling, Measurement's stats and repr, Compare's table.

No assertion depends on how long anything took: timed runs are only checked for structure and counts, and the
statistics and tables are checked on hand-made Measurements, against torch.utils.benchmark given the same ones.
"""

from __future__ import annotations

import random
import re

import pytest
import torch.utils.benchmark as tbench

import ember
import ember.utils.benchmark as bench
from ember.utils.benchmark.utils import common


def _measurement(mod, times, number=100, label="add", sub_label="float", description="n=1", num_threads=1,
                 env=None, stmt="x + y", setup="x = 1"):
    spec = mod.TaskSpec(stmt=stmt, setup=setup, label=label, sub_label=sub_label, description=description,
                        num_threads=num_threads, env=env)
    return mod.Measurement(number, list(times), spec)


def test_timeit_runs_the_statement_number_times_plus_warmup():
    calls = []
    timer = bench.Timer("calls.append(1)", globals={"calls": calls}, label="append")
    m = timer.timeit(number=300)
    assert isinstance(m, bench.Measurement)
    assert len(calls) == 300 + 3  # torch warms up with number // 100 (at least 2) runs
    assert m.number_per_run == 300 and len(m.raw_times) == 1 and len(m.times) == 1
    assert m.times[0] == pytest.approx(m.raw_times[0] / 300)
    assert m.median == m.mean == m.times[0] and m.iqr == 0
    assert m.label == "append" and m.stmt == "calls.append(1)" and m.num_threads == 1


def test_setup_runs_once_per_timed_block_and_torch_is_ember():
    log = []
    timer = bench.Timer("y = torch.ones(2) + x", setup="x = torch.zeros(2); log.append('setup')",
                        globals={"log": log})
    timer.timeit(number=5)
    assert log == ["setup", "setup"]  # once for the warm-up block, once for the measured one
    assert timer._globals["torch"] is ember


def test_num_threads_is_set_during_measurement_and_restored():
    before = ember.get_num_threads()
    seen = []
    timer = bench.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=3)
    m = timer.timeit(number=4)
    assert set(seen) == {3} and ember.get_num_threads() == before
    assert m.num_threads == 3 and "3 threads" in repr(m)
    seen.clear()
    m = timer.blocked_autorange(min_run_time=0.002)
    assert set(seen) == {3} and ember.get_num_threads() == before
    with common.set_torch_threads(2):
        assert ember.get_num_threads() == 2
    assert ember.get_num_threads() == before


def test_blocked_and_adaptive_autorange_structure():
    timer = bench.Timer("sum(range(10))", label="sum", description="n=10")
    callbacks = []
    m = timer.blocked_autorange(callback=lambda number, t: callbacks.append((number, t)), min_run_time=0.005)
    assert len(m.raw_times) >= 1 and m.number_per_run >= 1
    assert [n for n, _ in callbacks] == [m.number_per_run] * len(m.raw_times)
    assert [t for _, t in callbacks] == m.raw_times
    assert all(t > 0 for t in m.times)
    assert m.median > 0 and m.iqr >= 0
    m = timer.adaptive_autorange(threshold=0.5, min_run_time=0.001, max_run_time=0.05)
    assert len(m.raw_times) >= 1 and m.number_per_run >= 1 and m.description == "n=10"


def test_timer_argument_errors_match_torch():
    with pytest.raises(ValueError, match="only a `str` stmt"):
        bench.Timer(lambda: None)
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        bench.Timer("pass", global_setup="#include <x>")
    with pytest.raises(ValueError, match="Invalid language"):
        bench.Timer("pass", language="rust")
    timer = bench.Timer("pass")
    for method in (timer.repeat, timer.autorange):
        with pytest.raises(NotImplementedError, match="blocked_autorange"):
            method()


def test_measurement_statistics_match_torch():
    random.seed(1)
    for n in (1, 2, 3, 4, 7, 20):
        times = [random.uniform(1e-4, 5e-4) for _ in range(n)]
        e, t = _measurement(bench, times), _measurement(tbench, times)
        assert e.times == pytest.approx(t.times)
        assert e.median == pytest.approx(t.median, rel=1e-9)
        assert e.mean == pytest.approx(t.mean, rel=1e-9)
        assert e.iqr == pytest.approx(t.iqr, rel=1e-9, abs=1e-15)
        assert e.has_warnings == t.has_warnings
        assert e.significant_figures == t.significant_figures
        assert e.meets_confidence(0.2) == t.meets_confidence(0.2)


def _body(measurement):
    first, _, rest = repr(measurement).partition("\n")
    return first, rest


@pytest.mark.parametrize("times, number", [
    ([1.1e-3, 1.2e-3, 1.0e-3, 2.0e-3, 1.0e-3], 100),  # warning line
    ([1e-3, 1e-3, 1.001e-3, 1e-3], 10),
    ([5e-3], 1),  # one measurement: no "Median:", no IQR line
    ([2e-6, 3e-6], 1000),  # two measurements: no IQR line
])
def test_measurement_repr_matches_torch(times, number):
    e, t = _measurement(bench, times, number), _measurement(tbench, times, number)
    e_first, e_rest = _body(e)
    t_first, t_rest = _body(t)
    assert re.fullmatch(r"<ember\.utils\.benchmark\.utils\.common\.Measurement object at 0x[0-9a-f]+>", e_first)
    assert t_first.startswith("<torch.utils.benchmark.utils.common.Measurement object at")
    assert e_rest == t_rest


def test_measurement_repr_layout():
    m = _measurement(bench, [1.1e-3, 1.2e-3, 1.0e-3, 2.0e-3, 1.0e-3], label="Broadcasting add", sub_label=None,
                     description="4x8", setup="pass")
    lines = repr(m).splitlines()
    assert lines[1:] == [
        "Broadcasting add",
        "4x8",
        "  Median: 11.00 us",
        "  IQR:    2.00 us (10.00 to 12.00)",
        "  5 measurements, 100 runs per measurement, 1 thread",
        "  WARNING: Interquartile range is 18.2% of the median measurement.",
        "           This could indicate system fluctuation.",
    ]


def test_merge_pools_replicates():
    a = _measurement(bench, [1e-3, 2e-3], number=10)
    b = _measurement(bench, [3e-3], number=1)
    c = _measurement(bench, [5e-3], number=1, sub_label="int")
    merged = bench.Measurement.merge([a, b, c])
    assert len(merged) == 2
    assert merged[0].number_per_run == 1 and merged[0].raw_times == pytest.approx([1e-4, 2e-4, 3e-3])
    assert merged[1].raw_times == [5e-3]


def _results(mod, seed=0):
    rng = random.Random(seed)
    out = []
    for label in ("add", "matmul"):
        for sub in ("float", "int"):
            for desc in ("n=1", "n=100", "n=10000"):
                for threads in (1, 4):
                    scale = {"n=1": 1e-6, "n=100": 5e-5, "n=10000": 3e-3}[desc]
                    times = [rng.uniform(scale, scale * 1.3) for _ in range(6)]
                    out.append(_measurement(mod, times, number=10, label=label, sub_label=sub, description=desc,
                                            num_threads=threads))
    return out


@pytest.mark.parametrize("option", ["plain", "trim", "colorize", "rowwise", "warnings", "all"])
def test_compare_table_matches_torch(option):
    tables = []
    for mod in (tbench, bench):
        compare = mod.Compare(_results(mod))
        if option in ("trim", "all"):
            compare.trim_significant_figures()
        if option in ("colorize", "all"):
            compare.colorize()
        if option == "rowwise":
            compare.colorize(rowwise=True)
        if option in ("warnings", "all"):
            compare.highlight_warnings()
        tables.append(str(compare))
    assert tables[1] == tables[0]


def test_compare_layout_and_print(capsys):
    compare = bench.Compare(_results(bench))
    compare.print()
    out = capsys.readouterr().out
    assert out == str(compare) + "\n"
    lines = out.splitlines()
    assert re.fullmatch(r"\[-+ add -+\]", lines[0])
    assert [cell.strip() for cell in lines[1].split("|")] == ["", "n=1", "n=100", "n=10000"]
    assert lines[2].startswith("1 threads: ---") and any(line.startswith("4 threads: ---") for line in lines)
    assert sum(line == "Times are in nanoseconds (ns)." for line in lines) == 2
    assert sum(line.strip().startswith(("float", "int")) for line in lines) == 8  # 2 labels x 2 threads x 2 rows
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        bench.Compare([1.0])


def test_compare_with_envs_matches_torch():
    tables = []
    for mod in (tbench, bench):
        results = [_measurement(mod, [1e-3, 1.01e-3], env=env, sub_label=sub)
                   for env in ("before", "after") for sub in ("a", "b")]
        tables.append(str(mod.Compare(results)))
    assert tables[1] == tables[0]
    assert "(before)" in tables[1] and "(after)" in tables[1]


def test_units_and_helpers_match_torch():
    for t in (3e-9, 2.5e-7, 4e-5, 0.02, 1.5, 300.0):
        assert bench.select_unit(t) == tbench.select_unit(t)
    for u in ("ns", "us", "ms", "s"):
        assert bench.unit_to_english(u) == tbench.unit_to_english(u)
    for x, n in ((3.14159, 2), (123456.0, 3), (0.000123456, 2)):
        assert bench.trim_sigfig(x, n) == pytest.approx(tbench.trim_sigfig(x, n), rel=1e-6)
    assert bench.ordered_unique([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert ember.utils.benchmark is bench
