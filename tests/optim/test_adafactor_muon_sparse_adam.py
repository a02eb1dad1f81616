"""Adafactor, Muon, SparseAdam and swap_in_optimizer_params_and_state against torch: trajectories, state_dicts,
argument errors."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

import ember

from ._parity import Problem, advance, initial_arrays, make_params, plain, run, to_numpy, torch_state_to_ember

CONFIGS = {
    "Adafactor": [
        dict(),
        dict(lr=0.05, weight_decay=0.1),
        dict(lr=0.05, beta2_decay=-0.5, eps=(1e-10, 1e-2), d=2.0),
        dict(maximize=True, eps=(None, 1e-1)),
        dict(lr=0.1, foreach=True, weight_decay=0.05),
    ],
    "Muon": [
        dict(lr=0.02),
        dict(lr=0.02, nesterov=False),
        dict(lr=0.02, ns_steps=3, weight_decay=0.0),
        dict(lr=0.02, adjust_lr_fn="match_rms_adamw"),
        dict(lr=0.05, adjust_lr_fn="original", momentum=0.5, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3),
    ],
}
CASES = [
    pytest.param(name, options, id=f"{name}-{'-'.join(f'{k}={v}' for k, v in options.items()) or 'default'}")
    for name, configs in CONFIGS.items()
    for options in configs
]
LAST_CASES = [pytest.param(name, configs[-1], id=name) for name, configs in CONFIGS.items()]


def arrays_for(name, dtype=np.float64):
    """Adafactor: a matrix, a vector and a 3-d tensor (factored over its last two dims); Muon: matrices only,
    wide, tall and square (the Newton-Schulz iteration transposes tall ones)."""
    if name != "Muon":
        return initial_arrays(dtype)
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape).astype(dtype) for shape in [(3, 4), (5, 2), (4, 4)]]


def assert_params_close(torch_params, ember_params, rtol, atol):
    for t, e in zip(torch_params, ember_params):
        np.testing.assert_allclose(to_numpy(e), to_numpy(t), rtol=rtol, atol=atol)


def _raises_like_torch(build):
    with pytest.raises(Exception) as torch_error:
        build(torch)
    with pytest.raises(Exception) as ember_error:
        build(ember)
    assert type(ember_error.value) is type(torch_error.value)
    assert str(ember_error.value) == str(torch_error.value).replace("torch.Size", "ember.Size")


# ---------------------------------------------------------------- trajectories and state_dicts


@pytest.mark.parametrize("name, options", CASES)
def test_trajectory_float64(name, options):
    arrays = arrays_for(name)
    torch_params, _ = run(torch, name, options, arrays, 30)
    ember_params, _ = run(ember, name, options, arrays, 30)
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, options", LAST_CASES)
def test_trajectory_float32(name, options):
    arrays = arrays_for(name, np.float32)
    torch_params, _ = run(torch, name, options, arrays, 30)
    ember_params, _ = run(ember, name, options, arrays, 30)
    for p in ember_params:
        assert p.dtype == ember.float32
    assert_params_close(torch_params, ember_params, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_per_group_options(name):
    arrays = arrays_for(name)
    options = dict(CONFIGS[name][1])
    torch_params, torch_opt = run(torch, name, options, arrays, 10, group_options={"lr": 0.03})
    ember_params, ember_opt = run(ember, name, options, arrays, 10, group_options={"lr": 0.03})
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)
    assert plain(ember_opt.state_dict()["param_groups"]) == plain(torch_opt.state_dict()["param_groups"])


@pytest.mark.parametrize("name, options", LAST_CASES)
def test_state_dict_structure(name, options):
    arrays = arrays_for(name)
    _, torch_opt = run(torch, name, options, arrays, 3)
    _, ember_opt = run(ember, name, options, arrays, 3)
    torch_sd, ember_sd = torch_opt.state_dict(), ember_opt.state_dict()
    assert plain(ember_sd) == plain(torch_sd)
    for key, group in enumerate(ember_sd["param_groups"]):
        assert list(group) == list(torch_sd["param_groups"][key])
    for index, state in torch_sd["state"].items():
        assert list(ember_sd["state"][index]) == list(state)
        for key, value in state.items():
            np.testing.assert_allclose(to_numpy(ember_sd["state"][index][key]), value.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, options", LAST_CASES)
def test_load_torch_state_dict_and_continue(name, options):
    arrays = arrays_for(name)
    problem = Problem(arrays)
    torch_params, torch_opt = run(torch, name, options, arrays, 10, problem=problem)
    checkpoint = copy.deepcopy(torch_opt.state_dict())
    ember_params = make_params(ember, [to_numpy(p).copy() for p in torch_params])
    ember_opt = getattr(ember.optim, name)(ember_params, **{**options, "lr": 123.0})
    ember_opt.load_state_dict(torch_state_to_ember(checkpoint))
    torch_opt = getattr(torch.optim, name)(torch_params, **options)
    torch_opt.load_state_dict(checkpoint)
    assert list(ember_opt.param_groups[0]) == list(torch_opt.param_groups[0])  # no 'differentiable' gained
    assert ember_opt.param_groups[0]["lr"] == options.get("lr", torch_opt.defaults["lr"])
    advance(torch, torch_opt, torch_params, problem, 10)
    advance(ember, ember_opt, ember_params, problem, 10)
    assert_params_close(torch_params, ember_params, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name, options", LAST_CASES)
def test_ember_state_dict_round_trip(name, options):
    arrays = arrays_for(name)
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


@pytest.mark.parametrize("name", list(CONFIGS))
def test_tensor_lr_with_scheduler(name):
    arrays = arrays_for(name)
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
        results.append(params)
    assert_params_close(results[0], results[1], rtol=1e-12, atol=1e-12)


def test_muon_nesterov_differs_from_plain_momentum():
    arrays = arrays_for("Muon")
    nesterov, _ = run(ember, "Muon", dict(lr=0.02), arrays, 3)
    plain_momentum, _ = run(ember, "Muon", dict(lr=0.02, nesterov=False), arrays, 3)
    assert not np.allclose(to_numpy(nesterov[0]), to_numpy(plain_momentum[0]))


# ---------------------------------------------------------------- argument errors


def _vec(lib, shape=(2, 3)):
    return [lib.ones(*shape, requires_grad=True)]


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: lib.optim.Adafactor(_vec(lib), lr=-1.0),
        lambda lib: lib.optim.Adafactor(_vec(lib), lr=lib.tensor([0.1, 0.2])),
        lambda lib: lib.optim.Adafactor(_vec(lib), beta2_decay=0.5),
        lambda lib: lib.optim.Adafactor(_vec(lib), eps=(-1.0, 1e-3)),
        lambda lib: lib.optim.Adafactor(_vec(lib), eps=(None, -1e-3)),
        lambda lib: lib.optim.Adafactor(_vec(lib), d=0.5),
        lambda lib: lib.optim.Adafactor(_vec(lib), weight_decay=-0.1),
        lambda lib: lib.optim.Muon(_vec(lib), lr=-1.0),
        lambda lib: lib.optim.Muon(_vec(lib), momentum=-0.1),
        lambda lib: lib.optim.Muon(_vec(lib), weight_decay=-0.1),
        lambda lib: lib.optim.Muon(_vec(lib), adjust_lr_fn="sqrt"),
        lambda lib: lib.optim.Muon(_vec(lib, (3,))),
        lambda lib: lib.optim.Muon(_vec(lib) + _vec(lib, (2, 3, 4))),
        lambda lib: lib.optim.SparseAdam(_vec(lib), lr=0.0),
        lambda lib: lib.optim.SparseAdam(_vec(lib), eps=0.0),
        lambda lib: lib.optim.SparseAdam(_vec(lib), betas=(1.0, 0.9)),
        lambda lib: lib.optim.SparseAdam(_vec(lib), betas=(0.9, -0.1)),
        lambda lib: lib.optim.SparseAdam([lib.ones(2, dtype=lib.complex64, requires_grad=True)]),
    ],
)
def test_constructor_errors_match_torch(build):
    _raises_like_torch(build)


def _step_with_grad(lib, name, shape=(2, 3), dtype=None, **options):
    param = lib.ones(*shape, dtype=dtype or lib.float64, requires_grad=True)
    optimizer = getattr(lib.optim, name)([param], **options)
    param.grad = lib.ones(*shape, dtype=param.dtype)
    optimizer.step()


def _muon_step_on_a_vector_added_later(lib):
    optimizer = lib.optim.Muon(_vec(lib))
    vector = lib.ones(3, requires_grad=True)
    optimizer.add_param_group({"params": [vector]})
    vector.grad = lib.ones(3)
    optimizer.step()


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: _step_with_grad(lib, "Muon", ns_steps=100),
        lambda lib: _step_with_grad(lib, "Muon", ns_coefficients=(1.0, 2.0)),
        lambda lib: _muon_step_on_a_vector_added_later(lib),
        lambda lib: _step_with_grad(lib, "Muon", dtype=lib.complex128),
        lambda lib: _step_with_grad(lib, "Adafactor", dtype=lib.complex128),
        lambda lib: _step_with_grad(lib, "SparseAdam"),
    ],
)
def test_step_errors_match_torch(build):
    _raises_like_torch(build)


def test_muon_checks_dimensions_only_at_construction():
    """As torch: a param group added later is not checked until its gradient reaches the step."""
    for lib in (torch, ember):
        optimizer = lib.optim.Muon(_vec(lib))
        optimizer.add_param_group({"params": _vec(lib, (4,))})
        assert len(optimizer.param_groups) == 2


# ---------------------------------------------------------------- SparseAdam


def test_sparse_adam_rejects_dense_gradients_without_touching_state():
    param = ember.ones(4, 3, requires_grad=True)
    optimizer = ember.optim.SparseAdam([param])
    embedding = ember.nn.Embedding(4, 3)  # a dense embedding gradient (sparse=True gives a sparse one)
    embedding(ember.tensor([1, 2])).sum().backward()
    param.grad = embedding.weight.grad
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        optimizer.step()
    assert len(optimizer.state) == 0
    np.testing.assert_array_equal(param.detach().numpy(), np.ones((4, 3), np.float32))


def test_sparse_adam_without_grads_and_closure():
    for lib in (torch, ember):
        optimizer = lib.optim.SparseAdam(_vec(lib))
        assert optimizer.step(lambda: lib.tensor(2.0)).item() == 2.0
        assert len(optimizer.state) == 0


@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_masked_update_matches_torch_sparse_gradients(maximize):
    """ember's masked update, fed the coalesced indices and values of torch's sparse gradients, follows torch's
    SparseAdam over 30 steps (rows of an embedding-like table: some touched twice, some never)."""
    from ember.optim.sparse_adam import _masked_update

    rng = np.random.default_rng(0)
    start = rng.standard_normal((6, 3))
    torch_param = torch.tensor(start.copy(), requires_grad=True)
    torch_opt = torch.optim.SparseAdam([torch_param], lr=0.05, betas=(0.8, 0.95), eps=1e-6, maximize=maximize)
    param = ember.tensor(start.copy())
    exp_avg, exp_avg_sq = ember.zeros(6, 3, dtype=ember.float64), ember.zeros(6, 3, dtype=ember.float64)
    for step in range(1, 31):
        rows = rng.integers(0, 5, size=3)  # row 5 is never touched
        grad = torch.sparse_coo_tensor(rows[None], rng.standard_normal((3, 3)), (6, 3), check_invariants=True)
        torch_param.grad = grad
        torch_opt.step()
        coalesced = (-grad if maximize else grad).coalesce()
        _masked_update(param, exp_avg, exp_avg_sq, ember.tensor(coalesced.indices().numpy()),
                       ember.tensor(coalesced.values().numpy()), step, lr=0.05, beta1=0.8, beta2=0.95, eps=1e-6)
    np.testing.assert_allclose(param.numpy(), torch_param.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(exp_avg.numpy(), torch_opt.state[torch_param]["exp_avg"].numpy(), rtol=1e-12)
    np.testing.assert_array_equal(param.numpy()[5], start[5])


def test_sparse_adam_state_dict_keeps_an_int_step():
    torch_param = torch.ones(4, 3, requires_grad=True)
    torch_opt = torch.optim.SparseAdam([torch_param])
    torch_param.grad = torch.sparse_coo_tensor([[1]], torch.ones(1, 3), (4, 3), check_invariants=True)
    torch_opt.step()
    checkpoint = torch_state_to_ember(torch_opt.state_dict())
    optimizer = ember.optim.SparseAdam([ember.ones(4, 3, requires_grad=True)], lr=0.5)
    optimizer.load_state_dict(checkpoint)
    assert plain(optimizer.state_dict()) == plain(torch_opt.state_dict())
    assert type(next(iter(optimizer.state.values()))["step"]) is int


# ---------------------------------------------------------------- swap_in_optimizer_params_and_state


def _swap_run(lib):
    """An Adam with state, stepped once inside the context on other params and a copy of its state."""
    arrays = initial_arrays()
    problem = Problem(arrays)
    params, optimizer = run(lib, "Adam", dict(lr=0.1), arrays, 2, problem=problem)
    others = make_params(lib, [a + 1.0 for a in arrays])
    other_state = copy.deepcopy(optimizer.state_dict())
    other_state["param_groups"][0]["lr"] = 0.5
    before = [to_numpy(p).copy() for p in params]
    with lib.optim.swap_in_optimizer_params_and_state(optimizer, {str(i): p for i, p in enumerate(others)},
                                                       other_state):
        assert optimizer.param_groups[0]["params"][0] is others[0] and optimizer.param_groups[0]["lr"] == 0.5
        for p, g in zip(others, problem.loss_and_grads([to_numpy(p) for p in others])[1]):
            p.grad = lib.tensor(g)
        optimizer.step()
    assert optimizer.param_groups[0]["params"][0] is params[0] and optimizer.param_groups[0]["lr"] == 0.1
    for p, b in zip(params, before):
        np.testing.assert_array_equal(to_numpy(p), b)
    assert next(iter(optimizer.state.values()))["step"].item() == 2.0
    return others, other_state


def test_swap_in_optimizer_params_and_state_matches_torch():
    torch_others, torch_state = _swap_run(torch)
    ember_others, ember_state = _swap_run(ember)
    assert_params_close(torch_others, ember_others, rtol=1e-12, atol=1e-12)
    for index, state in torch_state["state"].items():
        for key, value in state.items():  # stepped in place: the swap-in state dict sees the update
            np.testing.assert_allclose(to_numpy(ember_state["state"][index][key]), value.numpy(), rtol=1e-12)
    assert ember_state["state"][0]["step"].item() == 3.0


def _swap_error(lib, edit, steps=1):
    arrays = initial_arrays()
    _, optimizer = run(lib, "Adam", dict(lr=0.1), arrays, steps)
    state = copy.deepcopy(optimizer.state_dict())
    params = {str(i): p for i, p in enumerate(make_params(lib, arrays))}
    params, state = edit(params, state)
    with lib.optim.swap_in_optimizer_params_and_state(optimizer, params, state):
        pass


@pytest.mark.parametrize(
    "build",
    [
        lambda lib: _swap_error(lib, lambda p, s: (p, s), steps=0),
        lambda lib: _swap_error(lib, lambda p, s: (p, [s])),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "state": [1]})),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "state": {0: 1}})),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "param_groups": {}})),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "param_groups": s["param_groups"] * 2})),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "param_groups": [{**s["param_groups"][0], "x": 1}]})),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "param_groups": [{**s["param_groups"][0],
                                                                                  "params": [0]}]})),
        lambda lib: _swap_error(lib, lambda p, s: (dict(list(p.items())[:1]), s)),
        lambda lib: _swap_error(lib, lambda p, s: (p, {**s, "state": {**s["state"], 7: {}}})),
    ],
)
def test_swap_in_errors_match_torch(build):
    _raises_like_torch(build)


def test_optim_and_lr_scheduler_names_match_torch():
    public = {n for n in dir(torch.optim) if not n.startswith("_")}
    assert public <= set(dir(ember.optim))
    assert set(torch.optim.lr_scheduler.__all__) <= set(dir(ember.optim.lr_scheduler))


def test_load_state_dict_adds_no_options_an_optimizer_lacks():
    """torch's base __setstate__ puts 'differentiable' in the defaults only, not in the groups of an optimizer
    without that option (LBFGS, Adafactor, Muon, SparseAdam)."""
    for name in ("LBFGS", "Adafactor", "Muon", "SparseAdam"):
        keys = []
        for lib in (torch, ember):
            optimizer = getattr(lib.optim, name)(_vec(lib))
            optimizer.load_state_dict(optimizer.state_dict())
            keys.append(list(optimizer.param_groups[0]))
        assert keys[0] == keys[1], name
