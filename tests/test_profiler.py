"""ember.profiler / ember.autograd.profiler: op names and counts, nesting, timing invariants, traces, schedules."""

from __future__ import annotations

import json
import os

import pytest

import ember
from ember import _dispatch
from ember.autograd.profiler import profile as autograd_profile
from ember.profiler import ProfilerAction, ProfilerActivity, profile, record_function, schedule


def _program(x, w):
    y = (x @ w).relu()
    return (y + 1).sum()


def _names(prof):
    return [event.name for event in prof.events()]


def test_op_names_and_call_counts():
    x = ember.randn(4, 3)
    w = ember.randn(3, 2, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _program(x, w).backward()
    counts = {average.key: average.count for average in prof.key_averages()}
    assert counts["aten::mm"] == 2  # forward, and MmBackward0's grad of w
    assert counts["aten::relu"] == 1
    assert counts["aten::add"] == 1
    assert counts["aten::sum"] == 1
    assert counts["autograd::engine::evaluate_function: SumBackward0"] == 1
    assert counts["AddBackward0"] == 1
    assert counts["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"] == 1
    assert counts["torch::autograd::AccumulateGrad"] == 1


def test_in_place_ops_carry_the_underscore():
    t = ember.zeros(3)
    with profile() as prof:
        t.add_(1)
    assert _names(prof) == ["aten::add_"]


def test_backward_node_nests_inside_evaluate_function():
    x = ember.randn(3, requires_grad=True)
    with profile() as prof:
        (x * 2).sum().backward()
    node = next(e for e in prof.events() if e.name == "MulBackward0")
    assert node.cpu_parent.name == "autograd::engine::evaluate_function: MulBackward0"
    assert any(child.name == "aten::mul" for child in node.cpu_children)


def test_record_function_nesting_and_times():
    x = ember.randn(8, 8)
    with profile() as prof:
        with record_function("outer"):
            x.exp()
            with record_function("inner"):
                x.sin()
                x.cos()
    events = {e.name: e for e in prof.events()}
    outer, inner = events["outer"], events["inner"]
    assert inner.cpu_parent is outer
    assert [c.name for c in outer.cpu_children] == ["aten::exp", "inner"]
    assert [c.name for c in inner.cpu_children] == ["aten::sin", "aten::cos"]
    assert outer.time_range[0] <= inner.time_range[0] <= inner.time_range[1] <= outer.time_range[1]
    for event in prof.events():
        assert event.cpu_time_total >= event.self_cpu_time_total >= 0
    assert outer.cpu_time_total >= inner.cpu_time_total + events["aten::exp"].cpu_time_total
    for average in prof.key_averages():
        assert average.cpu_time_total >= average.self_cpu_time_total


def test_record_function_as_decorator_and_when_off():
    @record_function("step")
    def step(t):
        return t + 1

    step(ember.ones(2))  # no profile: nothing recorded, nothing raised
    with profile() as prof:
        step(ember.ones(2))
        step(ember.ones(2))
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["step"].count == 2
    assert averages["aten::add"].count == 2


def test_record_shapes_and_memory():
    x = ember.ones(4, 5)
    with profile(record_shapes=True, profile_memory=True) as prof:
        x.mul(2)
        x.view(20)
    mul, view = prof.events()
    assert mul.input_shapes[0] == [4, 5]
    assert mul.cpu_memory_usage == 4 * 5 * 4
    assert view.cpu_memory_usage == 0
    grouped = prof.key_averages(group_by_input_shape=True)
    assert any(a.key == "aten::mul" and a.input_shapes[0] == [4, 5] for a in grouped)
    table = grouped.table(row_limit=5)
    assert "Input Shapes" in table and "CPU Mem" in table


def test_table_layout():
    x = ember.randn(4)
    with profile() as prof:
        for _ in range(3):
            x.exp()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    lines = table.splitlines()
    header = lines[1].split()
    assert header[:2] == ["Name", "Self"]
    for column in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert column in lines[1]
    row = next(line for line in lines if "aten::exp" in line)
    assert row.split()[-1] == "3" and row.split()[1] == "100.00%"
    assert lines[-1].startswith("Self CPU time total:")


def test_chrome_trace(tmp_path):
    x = ember.randn(3, requires_grad=True)
    with profile() as prof:
        with record_function("forward"):
            y = (x * x).sum()
        y.backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = [event["name"] for event in trace["traceEvents"]]
    assert names == _names(prof)
    assert "forward" in names and "aten::mul" in names
    for event in trace["traceEvents"]:
        assert event["ph"] == "X" and event["dur"] >= 0 and "ts" in event and "pid" in event


def test_schedule_actions():
    fn = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [fn(i) for i in range(6)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE,
        ProfilerAction.NONE, ProfilerAction.NONE,
    ]


def test_schedule_steps_and_on_trace_ready(tmp_path):
    traces = []

    def ready(prof):
        traces.append([(e.name, e.cpu_parent.name if e.cpu_parent else None) for e in prof.events()])

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for step in range(10):
            with record_function(f"step{step}"):
                ember.ones(1).add(step)
            prof.step()
    assert len(traces) == 2
    assert [name for name, parent in traces[0] if parent is None] == ["step2", "step3"]
    assert [name for name, parent in traces[1] if parent is None] == ["step6", "step7"]
    assert _dispatch.profiler is None


def test_tensorboard_trace_handler_writes_chrome_traces(tmp_path):
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "logs"), worker_name="w")
    with pytest.warns(UserWarning, match="warmup"):
        every_step = schedule(wait=0, warmup=0, active=1)
    with profile(schedule=every_step, on_trace_ready=handler) as prof:
        for _ in range(2):
            ember.ones(2).exp()
            prof.step()
    files = sorted(os.listdir(tmp_path / "logs"))
    # as torch: a trace per step, and the window still open at exit is saved too
    assert len(files) == 3 and all(f.startswith("w.") and f.endswith(".pt.trace.json") for f in files)
    trace = json.loads((tmp_path / "logs" / files[0]).read_text())
    assert [e["name"] for e in trace["traceEvents"]] == ["aten::exp"]


def test_profiling_off_records_nothing():
    with profile() as prof:
        pass
    assert _dispatch.profiler is None
    ember.ones(3).exp().sum()
    assert len(prof.events()) == 0
    with profile() as prof:
        ember.ones(3).exp()
    ember.ones(3).sin()  # after the profile: not recorded
    assert _names(prof) == ["aten::exp"]


def test_errors_leave_the_profiler_off_and_close_the_event():
    with pytest.raises(RuntimeError):
        with profile() as prof:
            ember.ones(2) + ember.ones(3)
    assert _dispatch.profiler is None
    assert _names(prof) == ["aten::add"] and prof.events()[0].cpu_time_total >= 0


def test_autograd_profiler():
    x = ember.randn(2, 2, requires_grad=True)
    with autograd_profile(record_shapes=True) as prof:
        with ember.autograd.profiler.record_function("label"):
            x.sum().backward()
    names = [e.name for e in prof.function_events]
    assert names[0] == "label" and "aten::sum" in names
    assert "SumBackward0" in prof.key_averages().table()
    with autograd_profile(enabled=False) as off:
        x.exp()
    with pytest.raises(RuntimeError):
        off.events()


def test_nested_profiles_are_refused():
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    assert _dispatch.profiler is None
