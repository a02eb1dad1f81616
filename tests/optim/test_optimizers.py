"""Optimizer parity with torch: 30-step trajectories, state_dict structure, and torch -> ember checkpoints."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import ember

from ._parity import (
    Problem,
    advance,
    initial_arrays,
    make_params,
    plain,
    run,
    to_numpy,
    torch_state_to_ember,
)

CONFIGS = {
    "SGD": [
        dict(lr=0.05),
        dict(lr=0.05, momentum=0.9),
        dict(lr=0.05, momentum=0.9, dampening=0.5, weight_decay=0.1),
        dict(lr=0.05, momentum=0.9, nesterov=True),
        dict(lr=0.01, momentum=0.5, maximize=True),
        dict(lr=0.05, momentum=0.9, foreach=True),
        dict(lr=0.05, momentum=0.9, fused=True),
    ],
    "Adam": [
        dict(lr=0.05),
        dict(lr=0.05, amsgrad=True),
        dict(lr=0.05, weight_decay=0.1),
        dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
        dict(lr=0.05, maximize=True, amsgrad=True),
        dict(lr=0.05, foreach=True),
        dict(lr=0.05, fused=True),
    ],
    "AdamW": [dict(lr=0.05), dict(lr=0.05, amsgrad=True, weight_decay=0.1), dict(lr=0.05, fused=True)],
    "Adamax": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1, maximize=True)],
    "NAdam": [
        dict(lr=0.05),
        dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
        dict(lr=0.05, weight_decay=0.1, momentum_decay=1e-2),
    ],
    "RAdam": [dict(lr=0.05), dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True), dict(lr=0.05, weight_decay=0.1)],
    "RMSprop": [
        dict(lr=0.01),
        dict(lr=0.01, centered=True),
        dict(lr=0.01, momentum=0.9),
        dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1, maximize=True),
    ],
    "Adagrad": [dict(lr=0.1), dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.1)],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, weight_decay=0.1)],
    "ASGD": [dict(lr=0.05), dict(lr=0.05, t0=5, lambd=1e-2, weight_decay=0.1)],
    "Rprop": [dict(lr=0.01), dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.5)), dict(lr=0.01, maximize=True)],
    "LBFGS": [dict(lr=0.5), dict(lr=1, line_search_fn="strong_wolfe"), dict(lr=0.5, history_size=3, max_iter=5)],
}

CASES = [
    pytest.param(name, options, id=f"{name}-{'-'.join(f'{k}={v}' for k, v in options.items()) or 'default'}")
    for name, configs in CONFIGS.items()
    for options in configs
]
# one representative option set per optimizer, for the slower structural tests
FIRST_CASES = [pytest.param(name, configs[-1], id=name) for name, configs in CONFIGS.items()]


def assert_params_close(torch_params, ember_params, rtol, atol):
    for t, e in zip(torch_params, ember_params):
        np.testing.assert_allclose(to_numpy(e), to_numpy(t), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name, options", CASES)
def test_trajectory_float64(name, options):
    arrays = initial_arrays(np.float64)
    torch_params, _ = run(torch, name, options, arrays, 30)
    ember_params, _ = run(ember, name, options, arrays, 30)
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, options", FIRST_CASES)
def test_trajectory_float32(name, options):
    arrays = initial_arrays(np.float32)
    torch_params, _ = run(torch, name, options, arrays, 30)
    ember_params, _ = run(ember, name, options, arrays, 30)
    for p in ember_params:
        assert p.dtype == ember.float32
    # float32 rounding (1 ulp per op, summed in a different order) grows along a 30-step trajectory
    assert_params_close(torch_params, ember_params, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", [n for n in CONFIGS if n != "LBFGS"])
def test_per_group_options(name):
    """A second group with its own lr (and the first group's defaults) steps like torch's."""
    options = dict(CONFIGS[name][0])
    group_lr = 0.02 if name != "Adadelta" else 0.3
    arrays = initial_arrays()
    torch_params, torch_opt = run(torch, name, options, arrays, 10, group_options={"lr": group_lr})
    ember_params, ember_opt = run(ember, name, options, arrays, 10, group_options={"lr": group_lr})
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)
    assert plain(ember_opt.state_dict()["param_groups"]) == plain(torch_opt.state_dict()["param_groups"])


@pytest.mark.parametrize("name, options", FIRST_CASES)
def test_state_dict_structure(name, options):
    arrays = initial_arrays()
    _, torch_opt = run(torch, name, options, arrays, 3)
    _, ember_opt = run(ember, name, options, arrays, 3)
    torch_sd, ember_sd = torch_opt.state_dict(), ember_opt.state_dict()
    assert list(ember_sd) == ["state", "param_groups"]
    assert plain(ember_sd) == plain(torch_sd)
    for key, group in enumerate(ember_sd["param_groups"]):
        assert list(group) == list(torch_sd["param_groups"][key])  # same option order, 'params' last
    for index, state in torch_sd["state"].items():
        for key, value in state.items():
            if isinstance(value, torch.Tensor):
                np.testing.assert_allclose(to_numpy(ember_sd["state"][index][key]), value.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, options", FIRST_CASES)
def test_load_torch_state_dict_and_continue(name, options):
    """10 steps in torch; its state_dict converted to ember tensors and loaded; 10 more steps in both."""
    arrays = initial_arrays()
    problem = Problem(arrays)
    torch_params, torch_opt = run(torch, name, options, arrays, 10, problem=problem)
    checkpoint = copy.deepcopy(torch_opt.state_dict())
    ember_params = make_params(ember, [to_numpy(p).copy() for p in torch_params])
    ember_opt = getattr(ember.optim, name)(ember_params, **{**options, "lr": 123.0})
    ember_opt.load_state_dict(torch_state_to_ember(checkpoint))
    # torch resumes from the same checkpoint (loading casts some state, e.g. ASGD's eta, to the param dtype)
    torch_opt = getattr(torch.optim, name)(torch_params, **options)
    torch_opt.load_state_dict(checkpoint)
    for torch_state, ember_state in zip(torch_opt.state.values(), ember_opt.state.values()):
        for key, value in torch_state.items():
            if isinstance(value, torch.Tensor):
                assert str(ember_state[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
    assert ember_opt.param_groups[0]["lr"] == options.get("lr", torch_opt.defaults["lr"])
    advance(torch, torch_opt, torch_params, problem, 10)
    advance(ember, ember_opt, ember_params, problem, 10)
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, options", FIRST_CASES[:4])
def test_ember_state_dict_round_trip(name, options):
    """An ember state_dict (deep-copied, as a checkpoint would be) loads into a fresh optimizer and continues."""
    arrays = initial_arrays()
    problem = Problem(arrays)
    params, opt = run(ember, name, options, arrays, 5, problem=problem)
    saved = copy.deepcopy(opt.state_dict())
    params2 = make_params(ember, [to_numpy(p).copy() for p in params])
    opt2 = getattr(ember.optim, name)(params2, **options)
    opt2.load_state_dict(saved)
    advance(ember, opt, params, problem, 5)
    advance(ember, opt2, params2, problem, 5)
    for a, b in zip(params, params2):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_step_counters_are_0d_float32_tensors():
    arrays = initial_arrays(np.float32)
    _, opt = run(ember, "Adam", dict(lr=0.1), arrays, 2)
    step = next(iter(opt.state.values()))["step"]
    assert isinstance(step, ember.Tensor) and step.dim() == 0 and step.dtype == ember.float32
    assert step.item() == 2.0


def test_params_without_grad_are_skipped():
    a, b = ember.ones(3, requires_grad=True), ember.ones(2, requires_grad=True)
    opt = ember.optim.Adam([a, b], lr=0.1)
    a.grad = ember.ones(3)
    opt.step()
    assert b not in opt.state and a in opt.state
    np.testing.assert_array_equal(b.detach().numpy(), np.ones(2, np.float32))


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "NAdam", "RAdam", "Adagrad", "RMSprop", "Adamax"])
def test_tensor_lr_with_scheduler(name):
    """A 0-d tensor lr (changed in place by a scheduler) enters the step's scalars with torch's float32 rounding."""
    import warnings

    arrays = initial_arrays()
    results = []
    for lib in (torch, ember):
        problem = Problem(arrays)
        params = make_params(lib, arrays)
        optimizer = getattr(lib.optim, name)(params, lr=lib.tensor(0.05), weight_decay=0.1)
        scheduler = lib.optim.lr_scheduler.StepLR(optimizer, 3, 0.5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(10):
                advance(lib, optimizer, params, problem, 1)
                scheduler.step()
        assert isinstance(optimizer.param_groups[0]["lr"], lib.Tensor)
        results.append(params)
    assert_params_close(results[0], results[1], rtol=1e-12, atol=1e-12)
