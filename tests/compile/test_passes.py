"""Graph passes before fusion: constant folding and common-subexpression elimination (runtime.py)."""

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F


def _graph(compiled):
    return compiled._compiled_graphs()[0]


def test_common_subexpressions_compute_once():
    def fn(x):
        return (x.exp() + x.exp()).sum() + x.sin().mean() * x.sin().mean()

    compiled = ember.compile(fn)
    for _ in range(2):
        x = ember.randn(3, 4, requires_grad=True)
        out = compiled(x)
        out.backward()
        expected = x.detach().requires_grad_()
        fn(expected).backward()
        np.testing.assert_allclose(out.item(), fn(expected).item(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert _graph(compiled).merged == 3  # exp, sin, mean


def test_outputs_and_random_draws_are_not_merged():
    """Two equal outputs stay two tensors (the caller may write one); two dropouts are two draws."""
    compiled = ember.compile(lambda x: (x.sin(), x.sin(), F.dropout(x, 0.5) + F.dropout(x, 0.5)))
    x = ember.ones(4, 4)
    for seed in range(2):
        ember.manual_seed(seed)
        first, second, dropped = compiled(x)
        ember.manual_seed(seed)
        expected = F.dropout(x, 0.5) + F.dropout(x, 0.5)
        np.testing.assert_array_equal(dropped.numpy(), expected.numpy())
        first.add_(1)
        np.testing.assert_array_equal(second.numpy(), x.sin().numpy())
    assert _graph(compiled).merged == 0


def test_constants_fold_and_returned_ones_are_each_calls_own():
    """A causal mask and position scales made from numbers are computed at compile time by the same ops;
    a folded value returned to the caller is copied for each call."""
    def fn(x):
        T = x.shape[1]
        mask = ember.ones(T, T).tril() == 0
        scale = ember.arange(T).float().div(T).exp()
        return (x + scale).masked_fill(mask, 0.0), scale * 2

    compiled = ember.compile(fn)
    x = ember.randn(4, 4)
    for _ in range(3):
        out, doubled = compiled(x)
        expected, expected_doubled = fn(x)
        np.testing.assert_array_equal(out.numpy(), expected.numpy())
        np.testing.assert_array_equal(doubled.numpy(), expected_doubled.numpy())
        doubled.zero_()  # the next call's copy is untouched
    graph = _graph(compiled)
    assert graph.folded >= 5 and "tril" not in graph.code and "arange" not in graph.code


def test_what_is_not_constant_is_not_folded():
    """Parameters (an optimizer changes them), random draws, a made leaf that requires grad, and tensors
    remade at each call's sizes in a size-generic graph are computed at every call."""
    linear = nn.Linear(4, 4)

    def fn(x):
        w = ember.ones(4).requires_grad_()
        T = x.shape[0]
        return linear(x) * linear.weight.sum() + ember.rand(4) * 0 + (x * w).sum() + ember.arange(T)[:, None]

    compiled = ember.compile(fn)
    for T in (3, 5, 7):
        x = ember.randn(T, 4)
        np.testing.assert_allclose(compiled(x).detach().numpy(), fn(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        with ember.no_grad():
            linear.weight.mul_(1.5)
    first, generic = compiled._compiled_graphs()
    assert first.folded == 1  # arange(3)[:, None]: a constant of the graph for size 3 only
    assert generic.folded == 0 and generic.graph.generic  # arange(T) is remade at each call's T


def test_passes_can_be_turned_off():
    compiled = ember.compile(lambda x: x.exp() + x.exp() + ember.ones(3).exp(), options={"passes": False})
    compiled(ember.ones(3))
    graph = _graph(compiled)
    assert graph.folded == graph.merged == 0


def test_signed_zero_constants_are_not_merged():
    """0.0 == -0.0 in Python: CSE keyed floats by value, so x + -0.0 and x + 0.0 became one op."""
    def fn(x):
        return ember.signbit(x + -0.0), ember.signbit(x + 0.0)

    compiled = ember.compile(fn)
    x = -ember.zeros(3)
    for _ in range(3):
        assert [t.tolist() for t in compiled(x)] == [[True] * 3, [False] * 3]
