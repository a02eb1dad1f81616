"""Probe round 24 (ember.compile vs torch.compile on realistic snippets): the cases whose compiled results
differed from eager, each against eager ember over several calls (torch.compile gets them right)."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_plain_tensor_attribute_read_then_rebound_is_read_anew_each_call():
    class Diff(nn.Module):
        def __init__(self):
            super().__init__()
            self.prev = ember.zeros(3)  # a plain attribute, not a buffer

        def forward(self, x):
            out = x - self.prev
            self.prev = x * 1
            return out

    eager, compiled = Diff(), ember.compile(Diff())
    for step in range(5):
        x = ember.full((3,), float(step * step))
        _close(compiled(x), eager(x))
    assert compiled._compiled.captures <= 2  # (the first write is taken as setup: captured again once)


def test_recurrent_state_kept_in_an_attribute():
    class Stateful(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(3, 4)
            self.h = None

        def forward(self, x):
            h = self.cell(x, self.h)
            self.h = h.detach()
            return h

    ember.manual_seed(0)
    eager = Stateful()
    module = Stateful()
    module.load_state_dict(eager.state_dict())
    compiled = ember.compile(module)
    for _ in range(5):
        x = ember.randn(2, 3)
        _close(compiled(x), eager(x))
        _close(module.h, eager.h)


def test_padding_row_zeroed_through_data_inside_the_function():
    ember.manual_seed(0)
    emb = nn.Embedding(6, 3)

    def fn(ids):
        emb.weight.data[0] = 0  # old-style code re-zeroing the padding row
        return emb(ids).sum(1)

    compiled = ember.compile(fn)
    ids = ember.tensor([[0, 1, 2, 3], [0, 0, 4, 5]])
    for _ in range(3):
        emb.weight.data.fill_(5.0)
        emb.weight.grad = None
        out = compiled(ids)
        assert out.requires_grad
        out.sum().backward()
        got_grad = emb.weight.grad.clone()
        emb.weight.data.fill_(5.0)
        emb.weight.grad = None
        expected = fn(ids)
        expected.sum().backward()
        _close(out, expected)
        _close(got_grad, emb.weight.grad)


def test_parameter_read_through_data_first_keeps_its_gradient():
    ember.manual_seed(0)
    emb = nn.Embedding(6, 3)
    ids = ember.tensor([[0, 1, 2], [0, 4, 5]])

    def fn(ids):
        scale = emb.weight.data.norm()  # the .data alias is seen before the parameter itself
        return emb(ids).sum(1) * scale

    compiled = ember.compile(fn)
    for _ in range(3):
        emb.weight.grad = None
        compiled(ids).sum().backward()
        got = emb.weight.grad.clone()
        emb.weight.grad = None
        fn(ids).sum().backward()
        _close(got, emb.weight.grad)


def test_detached_alias_of_a_written_buffer_reads_the_written_values():
    def fn(x):
        buf = ember.zeros(3)
        buf[0] = x.sum()
        return buf.detach() * 1

    compiled = ember.compile(fn)
    for seed in range(3):
        x = ember.from_numpy(np.random.default_rng(seed).standard_normal(4).astype(np.float32))
        _close(compiled(x), fn(x))


def test_masked_scatter_checks_its_count_without_a_graph_break():
    def fn(x, mask, source):
        return x.masked_scatter(mask, source) * 2

    x = ember.zeros(2, 3)
    explained = ember.compiler.explain(fn, x, ember.rand(2, 3) > 0.5, ember.randn(6))
    assert explained.graph_break_count == 0  # (the count check read .item() before)
    compiled = ember.compile(fn)
    for _ in range(3):
        mask, source = ember.rand(2, 3) > 0.5, ember.randn(6)
        _close(compiled(x, mask, source), fn(x, mask, source))
    full = ember.ones(2, 3, dtype=ember.bool)
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(2, 3).masked_scatter(torch.ones(2, 3, dtype=torch.bool), torch.ones(3))
    with pytest.raises(RuntimeError, match=str(expected.value)):
        compiled(x, full, ember.ones(3))


def test_explain_counts_a_backward_inside_once():
    layer = nn.Linear(3, 1)

    def fn(x):
        loss = layer(x).sum()
        loss.backward()
        return loss

    explained = ember.compiler.explain(fn, ember.randn(2, 3))
    assert (explained.graph_count, explained.graph_break_count) == (1, 1), explained.break_reasons
    assert layer.weight.grad is not None


def test_explain_reports_python_writes_that_make_compile_run_eagerly():
    logs = []

    def logged(x):
        logs.append(1)
        return x * 2

    reasons = [str(r) for r in ember.compiler.explain(logged, ember.randn(3)).break_reasons]
    assert len(reasons) == 1 and "global logs" in reasons[0]

    class Counter(nn.Module):
        def __init__(self):
            super().__init__()
            self.steps = 0
            self.layer = nn.Linear(3, 3)

        def forward(self, x):
            self.steps += 1  # a replay would not count: compile runs it eagerly
            self.last = self.layer(x)  # a tensor the graph computes: replayed, not a break
            return self.last * 2

    reasons = [str(r) for r in ember.compiler.explain(Counter(), ember.randn(2, 3)).break_reasons]
    assert len(reasons) == 1 and "attribute steps" in reasons[0] and "last" not in reasons[0]


_MASK = ember.ones(3)


def _times_global_mask(x):
    return x * _MASK + 1


def test_a_global_tensor_rebound_between_calls_replays_reading_the_new_one():
    global _MASK
    compiled = ember.compile(_times_global_mask)
    for step in range(6):
        _MASK = ember.full((3,), float(step))
        x = ember.randn(3)
        _close(compiled(x), _times_global_mask(x))
    assert compiled.captures == 1 and compiled.recompiles == 0
    _MASK = ember.ones(3, dtype=ember.float64)  # another dtype: a recapture, not a stale replay
    x = ember.randn(3)
    _close(compiled(x), _times_global_mask(x))
    assert compiled.captures == 2


def test_a_closure_tensor_rebound_between_calls_replays_reading_the_new_one():
    scale = ember.ones(3)

    def fn(x):
        return x * scale

    compiled = ember.compile(fn)
    for step in range(6):
        scale = ember.full((3,), float(step))  # noqa: F841 - read through the closure cell
        x = ember.randn(3)
        _close(compiled(x), fn(x))
    assert compiled.captures == 1
