"""The fused eager optimizer loops (ember/_compile/loops.py ADAM, SGD_MOMENTUM) give the unfused ops' bits, fall
back where they do not apply, and bump versions as the in-place ops do; torch's trajectories are checked
in the other optim tests."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.optim._multi_tensor as multi_tensor
from ember._compile import codegen

pytestmark = pytest.mark.skipif(codegen.find_compiler() is None, reason="the fused loops need a C compiler")

CASES = [
    ("Adam", {}), ("AdamW", {}), ("AdamW", {"weight_decay": 0.3, "lr": 0.05}), ("Adam", {"weight_decay": 0.1}),
    ("Adam", {"betas": (0.3, 0.9), "lr": 0.1}), ("Adam", {"betas": (0.7, 0.99), "lr": 0.1, "eps": 1e-3}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}), ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "dampening": 0.3, "weight_decay": 1e-2}),
]
SHAPES = [(50, 40), (40,), (7, 3, 5), (300, 500)]  # the last is split over two threads


def _trajectory(name, kwargs, dtype, fused, monkeypatch, steps=12):
    calls = []
    real = multi_tensor.fused_step

    def spy(kernel, lists, arguments):
        calls.append(kernel.__name__)
        return real(kernel, lists, arguments) if fused else False

    for module in ("adam", "sgd"):
        monkeypatch.setattr(f"ember.optim.{module}.fused_step", spy)
    rng = np.random.default_rng(0)
    params = [ember.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True) for s in SHAPES]
    optimizer = getattr(ember.optim, name)(params, **kwargs)
    for _ in range(steps):
        for p in params:
            p.grad = ember.tensor(rng.standard_normal(p.shape).astype(dtype))
        optimizer.step()
    states = [optimizer.state[p][key].numpy().copy() for p in params for key in optimizer.state[p]]
    return [p.detach().numpy().copy() for p in params] + states, calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CASES)
def test_fused_steps_give_the_unfused_bits(name, kwargs, dtype, monkeypatch):
    previous = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        fused, calls = _trajectory(name, kwargs, dtype, True, monkeypatch)
        unfused, _ = _trajectory(name, kwargs, dtype, False, monkeypatch)
    finally:
        ember.set_num_threads(previous)
    assert calls, "the fused loop was never tried"
    assert all(np.array_equal(a, b) for a, b in zip(fused, unfused))


def test_versions_bumped_and_non_contiguous_params_fall_back():
    weight = ember.randn(6, 4).t().requires_grad_()  # not contiguous: the unfused ops run
    bias = ember.randn(4, requires_grad=True)
    optimizer = ember.optim.Adam([weight, bias], lr=0.1)
    weight.grad, bias.grad = ember.ones(4, 6), ember.ones(4)
    reference = ember.optim.Adam([w := weight.detach().clone().requires_grad_(), b := bias.detach().clone()
                                  .requires_grad_()], lr=0.1)
    w.grad, b.grad = ember.ones(4, 6), ember.ones(4)
    version = bias._version
    optimizer.step()
    reference.step()
    assert bias._version > version
    assert ember.equal(weight, w) and ember.equal(bias, b)


def test_compiled_step_keeps_its_own_fusion():
    """Under ember.compile the step's ops are captured (the fused eager loop would hide them)."""
    param = ember.randn(8, requires_grad=True)
    optimizer = ember.optim.AdamW([param], lr=0.1)
    param.grad = ember.ones(8)
    step = ember.compile(optimizer.step)
    expected = param.detach().clone()
    twin = ember.optim.AdamW([expected.requires_grad_()], lr=0.1)
    expected.grad = ember.ones(8)
    for _ in range(3):
        step()
        twin.step()
    assert ember.allclose(param, expected, rtol=1e-6, atol=1e-7)
