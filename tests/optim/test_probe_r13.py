"""Probe round 13: optimizer paths compared with torch (complex params, differentiable steps, capturable on the
CPU, step hooks' args)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember

COMPLEX_CASES = [
    ("SGD", {"momentum": 0.9, "nesterov": True}),
    ("Adam", {"amsgrad": True}),
    ("AdamW", {}),
    ("Adamax", {}),
    ("NAdam", {}),
    ("RAdam", {}),
    ("Adagrad", {"initial_accumulator_value": 0.1}),
    ("Adadelta", {}),
    ("RMSprop", {"centered": True, "momentum": 0.5}),
    ("Rprop", {}),
    ("ASGD", {}),
]


def _complex_run(lib, name, options, foreach):
    p = lib.nn.Parameter(lib.tensor([1 + 2j, -2 + 0.5j, 3 - 1j], dtype=lib.complex64))
    optimizer = getattr(lib.optim, name)([p], lr=0.01, foreach=foreach, **options)

    def closure():
        optimizer.zero_grad()
        loss = (p.abs() ** 2).sum() + (p.real * 0.3).sum()
        loss.backward()
        return loss

    for _ in range(3):
        optimizer.step(closure)
    state = {k: v.detach().numpy() for k, v in optimizer.state[p].items() if v.dim() > 0}
    return p.detach().numpy(), state


@pytest.mark.parametrize("foreach", [False, True])
@pytest.mark.parametrize("name,options", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_params_update_as_torch(name, options, foreach):
    # torch updates a complex param as two independent reals (view_as_real); its state stays complex
    expected, expected_state = _complex_run(torch, name, options, foreach)
    actual, actual_state = _complex_run(ember, name, options, foreach)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)
    assert sorted(actual_state) == sorted(expected_state)
    for key, value in expected_state.items():
        assert actual_state[key].dtype == value.dtype, key
        np.testing.assert_allclose(actual_state[key], value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_params(line_search_fn):
    def run(lib):
        p = lib.nn.Parameter(lib.tensor([1 + 2j, -2 + 0.5j], dtype=lib.complex128))
        optimizer = lib.optim.LBFGS([p], lr=0.5, max_iter=4, line_search_fn=line_search_fn)

        def closure():
            optimizer.zero_grad()
            loss = ((p - (0.5 - 1j)).abs() ** 2).sum() + (p.imag**4).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        return p.detach().numpy()

    np.testing.assert_allclose(run(ember), run(torch), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,options", [
    ("Adam", {}), ("Adam", {"amsgrad": True}), ("AdamW", {"weight_decay": 0.1}), ("NAdam", {}), ("Rprop", {}),
    ("SGD", {"momentum": 0.9}), ("RMSprop", {"centered": True}),
])
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_differentiable_step_matches_torch(name, options):
    # the param is a non-leaf clone: a differentiable step keeps the graph back to the leaf across steps
    def run(lib):
        w = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        p = w.clone()
        optimizer = getattr(lib.optim, name)([p], lr=0.1, differentiable=True, **options)
        for i in range(3):
            p.grad = lib.tensor([0.3, -0.1, 0.2], dtype=lib.float64) * (i + 1)
            optimizer.step()
        (grad,) = lib.autograd.grad((p * p).sum(), w)
        return p.detach().numpy(), grad.numpy()

    (expected, expected_grad), (actual, actual_grad) = run(torch), run(ember)
    np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=0)
    np.testing.assert_allclose(actual_grad, expected_grad, rtol=1e-12, atol=0)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv", "addcmul_", "addcdiv_"])
@pytest.mark.parametrize("written", [1, 2])
def test_addcmul_addcdiv_save_what_torch_saves(op, written):
    # with only `input` needing a gradient, addcmul saves neither operand (writing to them afterwards is
    # legal); addcdiv keeps its divisor
    outcomes = []
    for lib in (torch, ember):
        w = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        operands = [lib.tensor([1.0, 2.0], dtype=lib.float64), lib.tensor([3.0, 4.0], dtype=lib.float64)]
        out = getattr(w.clone(), op)(*operands)
        operands[written - 1].mul_(2)
        try:
            (grad,) = lib.autograd.grad(out.sum(), w)
            outcomes.append(grad.tolist())
        except RuntimeError as error:
            outcomes.append(str(error).split(":")[0])
    assert outcomes[1] == outcomes[0]


@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adadelta", "RMSprop", "Rprop",
                                  "ASGD"])
def test_capturable_on_cpu_raises_like_torch(name, foreach):
    errors = []
    for lib in (torch, ember):
        p = lib.nn.Parameter(lib.ones(2))
        optimizer = getattr(lib.optim, name)([p], capturable=True, foreach=foreach)
        p.grad = lib.ones(2)
        with pytest.raises(AssertionError) as error:
            optimizer.step()
        errors.append(str(error.value))
    assert errors[1] == errors[0]


def test_step_hooks_see_self_in_args():
    def run(lib):
        seen = []
        p = lib.nn.Parameter(lib.ones(2))
        optimizer = lib.optim.SGD([p], lr=0.1)
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: seen.append(("pre", args[0] is opt, len(args))))
        optimizer.register_step_post_hook(lambda opt, args, kwargs: seen.append(("post", args[0] is opt, len(args))))
        p.grad = lib.ones(2)
        optimizer.step()
        # a pre hook's new args replace the whole call's, self included
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: ((opt,), {"closure": lambda: 7.0}))
        seen.append(optimizer.step())
        return seen

    assert run(ember) == run(torch)


def test_addcdiv_integer_message_matches_torch():
    messages = []
    for lib in (torch, ember):
        a = lib.ones(2, dtype=lib.int64)
        with pytest.raises(RuntimeError) as error:
            a.addcdiv(a, a)
        messages.append(str(error.value))
    assert messages[1] == messages[0]


def test_swa_utils_multi_avg_integer_buffer_error():
    # use_buffers averages num_batches_tracked too: torch's integer addcdiv error, word for word
    messages = []
    for lib in (torch, ember):
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        averaged = lib.optim.swa_utils.AveragedModel(
            model, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn(), use_buffers=True
        )
        averaged.update_parameters(model)
        with warnings.catch_warnings(), pytest.raises(RuntimeError) as error:
            warnings.simplefilter("ignore")
            averaged.update_parameters(model)
        messages.append(str(error.value))
    assert messages[1] == messages[0]
