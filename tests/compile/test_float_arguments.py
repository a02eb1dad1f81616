"""Float arguments of a compiled function: one graph for every value once a second value comes (as torch's
dynamic floats), unless Python did more than arithmetic on them -- then a graph per value, never a wrong one."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _dispatch, nn

VALUES = (0.5, 0.75, 1.5, 0.25, 2.5, 0.9)  # (one class: positive, finite, not integers)
X = ember.randn(4, 5, generator=ember.Generator().manual_seed(0))
Y = ember.randn(4, 5, generator=ember.Generator().manual_seed(1))


def _same(got, want):
    if isinstance(want, ember.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got.detach().float().numpy(), want.detach().float().numpy(), rtol=1e-6,
                                   atol=1e-6)
    elif isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
    else:
        assert got == want and type(got) is type(want)


def _run(fn, values=VALUES, **settings):
    compiled = ember.compile(fn, **settings)
    for value in values:
        _same(compiled(X, value), fn(X, value))
    return compiled


GENERIC = {  # each reads its float only through arithmetic and op calls
    "scale_and_shift": lambda x, a: (x * a + a).sum(),
    "power": lambda x, p: (x.abs() + 1) ** p,
    "reflected": lambda x, a: a ** x + a / (x.abs() + 1) - (1 - a) * x,
    "temperature_softmax": lambda x, t: F.softmax(x / t, dim=-1),
    "alpha": lambda x, a: x.add(Y, alpha=-a) + x.sub(Y, alpha=a * 3),
    "lerp": lambda x, a: x.lerp(Y, a),
    "leaky_relu": lambda x, s: F.leaky_relu(x, s) + F.elu(x, alpha=s),
    "layer_norm_eps": lambda x, eps: F.layer_norm(x, (5,), eps=eps),
    "masked_fill": lambda x, a: x.masked_fill(x > 0.3, a),
    "in_place": lambda x, a: x.clone().mul_(a).add_(a),
    "bfloat16": lambda x, a: (x.bfloat16() * a).float(),
    "integer_tensor": lambda x, a: (x * 10).long() * a,
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_one_graph_serves_every_value(name):
    compiled = _run(GENERIC[name])
    assert compiled.captures == 2, compiled.scalar_status
    assert compiled.scalar_status == "one graph for every value of args[1]"


def test_keyword_argument_and_graph_code():
    def fn(x, *, scale=1.0):
        return (x * scale).exp()

    compiled = ember.compile(fn)
    for value in VALUES:
        _same(compiled(X, scale=value), fn(X, scale=value))
    assert compiled.captures == 2
    generic = compiled.scalar_generic[0][2].compiled
    assert "mul(p0, s0)" in generic.captured_code


def test_many_values_stay_under_the_recompile_limit():
    compiled = ember.compile(lambda x, lr: x - lr * x.sin())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the recompile-limit warning would fail the test)
        for step in range(40):
            lr = 0.1 * 0.97 ** step
            _same(compiled(X, lr), X - lr * X.sin())
    assert compiled.captures == 2 and not compiled.gave_up


SPECIALISED = {  # Python decides something from the float: torch guards it, ember keeps a graph per value
    "branch": lambda x, a: x * 2 if a > 0.8 else x * a,
    "math_exp": lambda x, a: x * math.exp(a),  # (C code reads the float subclass without asking it)
    "int_of_it": lambda x, a: x[: int(a * 2)].sum(0),
    "clamp_bound_checked": lambda x, a: x.clamp(min=a),
    "interpolate_scale": lambda x, s: F.interpolate(x[None, None], scale_factor=s, mode="nearest").sum(),
    "numpy_of_it": lambda x, a: x * np.float32(a),
}


@pytest.mark.parametrize("name", sorted(SPECIALISED))
def test_python_use_keeps_a_graph_per_value(name):
    # (0.5 and 0.75 take the same branch and both give int(a * 2) == 1: a graph fitted to them alone
    # would be wrong at 1.5)
    compiled = _run(SPECIALISED[name], values=(0.5, 0.75, 1.5, 0.6, 1.5))
    assert compiled.scalar_status.startswith("specialised on float arguments"), compiled.scalar_status
    assert compiled.captures == 4


def test_returned_float_is_this_calls_value():
    compiled = _run(lambda x, a: (x * a, a))
    assert compiled.captures == len(VALUES)  # (a returned float keeps the graphs specialised; each is right)


def test_dynamic_false_specialises():
    compiled = _run(lambda x, a: x * a, values=(0.5, 0.75, 1.5), dynamic=False)
    assert compiled.captures == 3 and compiled.scalar_status == ""


def test_training_step_with_a_float_argument_matches_eager():
    torch_like = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    reference = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    reference.load_state_dict(torch_like.state_dict())
    optimizers = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (torch_like, reference)]

    def step(model, optimizer, x, weight):
        optimizer.zero_grad()
        loss = (model(x) * weight).pow(2).mean() + weight * model[0].weight.abs().sum()
        loss.backward()
        optimizer.step()
        return loss

    compiled = ember.compile(step)
    for weight in (0.5, 0.7, 0.01, 2.5, 0.3):
        got = compiled(torch_like, optimizers[0], X, weight)
        want = step(reference, optimizers[1], X, weight)
        _same(got, want)
        for a, b in zip(torch_like.parameters(), reference.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 2, compiled.scalar_status


def test_backward_outside_the_compiled_function():
    model = nn.Linear(5, 3)

    def forward(x, scale):
        return (model(x) * scale).sigmoid().sum()

    compiled = ember.compile(forward)
    for scale in (0.5, 0.7, 1.9):
        model.zero_grad()
        compiled(X, scale).backward()
        got = model.weight.grad.clone()
        model.zero_grad()
        forward(X, scale).backward()
        np.testing.assert_allclose(got.numpy(), model.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 2


_RAMP = _dispatch.OpDef("test_float_ramp", lambda xp, x, *, stop: xp.arange(int(stop), dtype=x.dtype) + x.sum())


def test_a_float_that_changes_a_shape_inside_an_op_drops_the_generic_graph():
    """An op whose result shape follows a float param, with no Python use to see: the replay's shape check
    catches the new shape, and the call is captured for its own value."""
    def fn(x, stop):
        return _dispatch.call(_RAMP, (x,), {"stop": stop}) * 2

    compiled = ember.compile(fn)
    for stop in (2.2, 2.7, 3.5, 2.1, 3.5):
        _same(compiled(X, stop), fn(X, stop))
    assert compiled.scalar_status.startswith("specialised on float arguments (a float argument changed a result's "
                                             "shape from [2] to [3])")
    assert not compiled.scalar_generic


def test_a_value_of_another_class_is_captured_anew():
    """math.isinf(p) reads the float without asking it, so the stand-in cannot see that branch: captures at 2.5
    and 3.5 serve 1.5 (the same class) but not inf, 2.0 (an integer) or -1.5 (a sign), which are captured."""
    def fn(x, p):
        if math.isinf(p):
            return x.abs().amax()
        return (x.abs() ** p).sum() ** (1 / p)

    compiled = ember.compile(fn)
    for p in (2.5, 3.5, 1.5):
        _same(compiled(X, p), fn(X, p))
    assert compiled.captures == 2 and compiled.scalar_status == "one graph for every value of args[1]"
    for p in (math.inf, 2.0, -1.5):
        _same(compiled(X, p), fn(X, p))
    assert compiled.captures == 5
