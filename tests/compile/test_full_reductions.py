"""Full reductions fused into the pointwise chain they end (fusion.FusionGroup.flatten): loss tails such as
`((x - y) ** 2).mean()` become one kernel, forward and backward, equal to eager; size-generic graphs too."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

TAILS = {
    "mse": lambda x, y: ((x - y) ** 2).mean(),
    "two losses": lambda x, y: F.mse_loss(x.tanh(), y) + F.l1_loss(x, y, reduction="sum"),
    "centered": lambda x, y: ((x - x.mean()) * y).sum(),
    "keepdim": lambda x, y: (x * y).sum(dim=(0, 1, 2), keepdim=True) * 2,
    "negative dims": lambda x, y: (x.sigmoid() * y).sum(dim=(-1, 0, 1)),
    "amax": lambda x, y: (x.exp() * y).amax(dim=(0, 1, 2)),
    "scalar operand": lambda x, y: ((x * y + 0.5) ** 2).mean() * 3.0,
}


def _calls(compiled) -> list:
    return [n.op.name for g in compiled.graphs for n in g.nodes if n.kind in ("call", "fused")]


def _check(eager, compiled, x, y, create_graph=False):
    expected, got = eager(x, y), compiled(x, y)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    want = ember.autograd.grad(expected.sum(), [x, y], create_graph=create_graph)
    have = ember.autograd.grad(got.sum(), [x, y], create_graph=create_graph)
    for a, b in zip(have, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    return have, want


@pytest.mark.parametrize("printer", ["c", "numpy"])
@pytest.mark.parametrize("name", list(TAILS))
def test_tail_is_one_kernel_and_matches_eager(name, printer):
    fn = TAILS[name]
    compiled = ember.compile(fn, options={"printer": printer} if printer == "numpy" else None)
    x = ember.randn(4, 3, 5, requires_grad=True)
    y = ember.randn(4, 3, 5, requires_grad=True)
    _check(fn, compiled, x, y)
    # the tail's reduction is inside the fused kernel (`x.mean()` of an argument, read by no chain, stays NumPy's)
    left = [call for call in _calls(compiled) if call in ("mean", "sum", "amax")]
    assert left == (["mean"] if name == "centered" else []), _calls(compiled)


def test_size_generic_graph_keeps_the_tail_fused():
    fn = TAILS["two losses"]
    compiled = ember.compile(fn)
    for shape in [(2, 3, 5), (4, 3, 5), (6, 3, 5), (3, 7, 5), (6, 3, 5), (5, 2, 5)]:
        x = ember.randn(*shape, requires_grad=True)
        y = ember.randn(*shape, requires_grad=True)
        _check(fn, compiled, x, y)
    assert "size-generic" in compiled.dynamic_status and compiled.recompiles == 0
    assert all(not {"mean", "sum"} & set(_calls_of(g)) for g in compiled.graphs)


def _calls_of(graph) -> list:
    return [n.op.name for n in graph.nodes if n.kind in ("call", "fused")]


def test_double_backward_through_a_fused_tail():
    fn = TAILS["mse"]
    compiled = ember.compile(fn)
    x = ember.randn(3, 4, requires_grad=True)
    y = ember.randn(3, 4, requires_grad=True)
    have, want = _check(fn, compiled, x, y, create_graph=True)
    second_have = ember.autograd.grad(have[0].square().sum(), [x])[0]
    second_want = ember.autograd.grad(want[0].square().sum(), [x])[0]
    np.testing.assert_allclose(second_have.numpy(), second_want.numpy(), rtol=1e-5, atol=1e-6)


def test_broadcast_operands_keep_the_reduction_separate():
    """A bias over the last dim cannot be indexed in one flattened row: the chain stays a kernel of rows and
    the full reduction a NumPy call, still equal to eager."""
    def fn(x, b):
        return ((x + b) ** 2).mean()

    compiled = ember.compile(fn)
    x = ember.randn(4, 3, 5, requires_grad=True)
    b = ember.randn(5, requires_grad=True)
    _check(fn, compiled, x, b)
    assert "mean" in _calls(compiled)


def test_long_tail_sums_accurately():
    """One row of every element: the kernel's blocked float sum with double block totals keeps a large mean
    as accurate as eager's."""
    fn = TAILS["mse"]
    compiled = ember.compile(fn)
    x = ember.randn(64, 128, 64) + 3.0
    y = ember.randn(64, 128, 64)
    np.testing.assert_allclose(compiled(x, y).item(), fn(x, y).item(), rtol=2e-6)
