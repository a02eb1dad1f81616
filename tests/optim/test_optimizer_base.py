"""Optimizer base class: param groups, errors, zero_grad, closures, hooks (compared with torch where it speaks)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember


def _params(lib, n=3):
    return [lib.tensor(np.arange(2, dtype=np.float32) + i, requires_grad=True) for i in range(n)]


def _raises_like_torch(build):
    """build(lib) raises the same exception type and message in both libraries."""
    with pytest.raises(Exception) as torch_error:
        build(torch)
    with pytest.raises(Exception) as ember_error:
        build(ember)
    assert type(ember_error.value) is type(torch_error.value)
    assert str(ember_error.value) == str(torch_error.value)


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: lib.optim.SGD([], lr=0.1),
        lambda lib: lib.optim.SGD(lib.ones(2), lr=0.1),
        lambda lib: lib.optim.SGD([1.0], lr=0.1),
        lambda lib: lib.optim.SGD([{"params": {1}}]),
        lambda lib: lib.optim.SGD([lib.ones(2, requires_grad=True) * 2], lr=0.1),
        lambda lib: lib.optim.SGD(_params(lib), lr=-1.0),
        lambda lib: lib.optim.SGD(_params(lib), lr=0.1, nesterov=True),
        lambda lib: lib.optim.Adam(_params(lib), betas=(1.0, 0.9)),
        lambda lib: lib.optim.Adam(_params(lib), eps=-1.0),
        lambda lib: lib.optim.Adam(_params(lib), fused=True, foreach=True),
        lambda lib: lib.optim.Adam(_params(lib), fused=True, differentiable=True),
        lambda lib: lib.optim.NAdam(_params(lib), momentum_decay=-1.0),
        lambda lib: lib.optim.Rprop(_params(lib), etas=(1.5, 1.2)),
        lambda lib: lib.optim.Adadelta(_params(lib), rho=1.5),
        lambda lib: lib.optim.LBFGS([{"params": _params(lib)[:1]}, {"params": _params(lib)[1:]}]),
        lambda lib: lib.optim.SGD([{"lr": 0.1, "params": _params(lib)}], momentum=-1),
    ],
)
def test_constructor_errors_match_torch(build):
    _raises_like_torch(build)


def test_duplicate_parameter_across_groups():
    for lib in (torch, ember):
        p = _params(lib)
        optimizer = lib.optim.SGD([p[0]], lr=0.1)
        with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
            optimizer.add_param_group({"params": [p[1], p[0]]})


def test_duplicate_parameter_in_group_warns():
    for lib in (torch, ember):
        p = _params(lib)
        with pytest.warns(UserWarning, match="duplicate parameters"):
            lib.optim.SGD([p[0], p[0]], lr=0.1)


def test_required_option_and_group_defaults():
    p = _params(ember)
    optimizer = ember.optim.SGD([{"params": p[:1]}, {"params": p[1:], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in optimizer.param_groups] == [0.1, 0.5]
    assert all(g["momentum"] == 0.9 for g in optimizer.param_groups)
    optimizer.add_param_group({"params": [ember.ones(1, requires_grad=True)], "momentum": 0.0})
    assert optimizer.param_groups[-1]["momentum"] == 0.0 and optimizer.param_groups[-1]["lr"] == 0.1


def test_named_parameters():
    for lib in (torch, ember):
        model = lib.nn.Linear(2, 2)
        optimizer = lib.optim.Adam(model.named_parameters())
        assert optimizer.param_groups[0]["param_names"] == ["weight", "bias"]
        assert optimizer.state_dict()["param_groups"][0]["param_names"] == ["weight", "bias"]
        with pytest.raises(ValueError, match="cannot add param group without names"):
            optimizer.add_param_group({"params": [lib.ones(1, requires_grad=True)]})


def test_zero_grad():
    p = _params(ember)
    optimizer = ember.optim.SGD(p, lr=0.1)
    for each in p:
        each.grad = ember.ones(2)
    optimizer.zero_grad(set_to_none=False)
    assert all(each.grad is not None and float(each.grad.abs().sum()) == 0 for each in p)
    optimizer.zero_grad()
    assert all(each.grad is None for each in p)


def test_step_closure_returns_loss_and_runs_with_grad():
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    optimizer = ember.optim.SGD([p], lr=0.1)

    def closure():
        optimizer.zero_grad()
        assert ember.is_grad_enabled()
        loss = (p * p).sum()
        loss.backward()
        return loss

    loss = optimizer.step(closure)
    assert float(loss) == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, 1.6], rtol=1e-6)
    assert not p.requires_grad or p.grad_fn is None


def test_step_hooks_order_and_removal():
    calls = []
    p = ember.tensor([1.0], requires_grad=True)
    optimizer = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(1)
    handles = [
        ember.optim.register_optimizer_step_pre_hook(lambda o, a, k: calls.append("global pre")),
        ember.optim.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global post")),
        optimizer.register_step_pre_hook(lambda o, a, k: calls.append("pre")),
        optimizer.register_step_post_hook(lambda o, a, k: calls.append("post")),
    ]
    optimizer.step()
    assert calls == ["global pre", "pre", "post", "global post"]
    for handle in handles:
        handle.remove()
    calls.clear()
    optimizer.step()
    assert calls == []


def test_step_pre_hook_can_replace_arguments():
    p = ember.tensor([1.0], requires_grad=True)
    optimizer = ember.optim.SGD([p], lr=0.1)
    p.grad = ember.ones(1)
    optimizer.register_step_pre_hook(lambda o, args, kwargs: (args, {"closure": lambda: ember.tensor(7.0)}))
    assert float(optimizer.step()) == 7.0
    optimizer.register_step_pre_hook(lambda o, args, kwargs: "bad")
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        optimizer.step()


def test_subclass_step_calling_super_runs_hooks_once():
    class Clipped(ember.optim.SGD):
        def step(self, closure=None):
            return super().step(closure)

    calls = []
    p = ember.tensor([1.0], requires_grad=True)
    optimizer = Clipped([p], lr=0.1)
    optimizer.register_step_post_hook(lambda o, a, k: calls.append(1))
    p.grad = ember.ones(1)
    optimizer.step()
    assert calls == [1]


def test_state_dict_hooks():
    p = ember.tensor([1.0], requires_grad=True)
    optimizer = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(1)
    optimizer.step()
    seen = []
    optimizer.register_state_dict_pre_hook(lambda o: seen.append("pre"))
    optimizer.register_state_dict_pre_hook(lambda o: seen.append("first"), prepend=True)

    def post(o, state_dict):
        state_dict["extra"] = 1
        return state_dict

    optimizer.register_state_dict_post_hook(post)
    state_dict = optimizer.state_dict()
    assert seen == ["first", "pre"] and state_dict["extra"] == 1

    def load_pre(o, state_dict):
        state_dict = dict(state_dict)
        state_dict.pop("extra")
        state_dict["param_groups"] = [dict(g, lr=0.25) for g in state_dict["param_groups"]]
        return state_dict

    loaded = []
    optimizer.register_load_state_dict_pre_hook(load_pre)
    optimizer.register_load_state_dict_post_hook(lambda o: loaded.append(o.param_groups[0]["lr"]))
    optimizer.load_state_dict(state_dict)
    assert loaded == [0.25]


def test_load_state_dict_errors():
    for lib in (torch, ember):
        p = _params(lib)
        source = lib.optim.SGD([{"params": p[:1]}, {"params": p[1:]}], lr=0.1).state_dict()
        with pytest.raises(ValueError, match="different number of parameter groups"):
            lib.optim.SGD(p, lr=0.1).load_state_dict(source)
        with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
            lib.optim.SGD([{"params": p[:2]}, {"params": p[2:]}], lr=0.1).load_state_dict(source)


def test_old_checkpoint_with_number_steps():
    """A state whose 'step' is a plain number (pre-1.12 torch) loads as a 0-d tensor."""
    p = ember.tensor([1.0, 2.0], requires_grad=True)
    optimizer = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2)
    optimizer.step()
    state_dict = optimizer.state_dict()
    state_dict["state"][0]["step"] = 1
    fresh = ember.optim.Adam([p], lr=0.1)
    fresh.load_state_dict(state_dict)
    step = fresh.state[p]["step"]
    assert isinstance(step, ember.Tensor) and step.dtype == ember.float32 and step.item() == 1.0


def test_repr_matches_torch():
    reprs = []
    for lib in (torch, ember):
        reprs.append(repr(lib.optim.SGD(_params(lib), lr=0.1, momentum=0.9)))
    assert reprs[0] == reprs[1]


def test_deepcopy_and_pickle_state():
    import copy
    import pickle

    p = ember.tensor([1.0, 2.0], requires_grad=True)
    optimizer = ember.optim.Adam([p], lr=0.1)
    p.grad = ember.ones(2)
    optimizer.step()
    clone = copy.deepcopy(optimizer)
    assert clone.param_groups[0]["lr"] == 0.1 and len(clone.state) == 1
    restored = pickle.loads(pickle.dumps(optimizer.state_dict()))
    assert restored["state"][0]["step"].item() == 1.0


def test_differentiable_step_keeps_graph():
    """differentiable=True runs the step with grad enabled, so the update is part of the graph."""
    weight = ember.tensor([1.0, 2.0], requires_grad=True)
    p = weight.clone()
    optimizer = ember.optim.SGD([p], lr=0.5, differentiable=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf: torch warns the same way
        p.grad = ember.ones(2)
        optimizer.step()
    assert p.grad_fn is not None
    p.sum().backward()
    np.testing.assert_allclose(weight.grad.numpy(), [1.0, 1.0])
