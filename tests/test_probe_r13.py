"""Op-level regressions found by the modern-architecture probe (tests/programs/test_architectures_r13.py)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------- hardsigmoid's float64 gradient


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hardsigmoid_gradient_is_torchs_float_one_sixth(dtype):
    """torch's hardsigmoid_backward multiplies by 1.0f / 6.0f at every precision: float64 grads were 3e-8 off."""
    x = np.linspace(-4, 4, 33)
    grads = []
    for lib in (torch, ember):
        t = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
        y = lib.nn.functional.hardsigmoid(t)
        (y * lib.arange(33)).sum().backward()
        grads.append((y.detach().numpy(), t.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-15 if dtype == "float64" else 1e-7)
    np.testing.assert_array_equal(grads[1][1], grads[0][1])


def test_hardsigmoid_compiled_gradient_matches_eager():
    def f(x):
        return (ember.nn.functional.hardsigmoid(x * 2) * x).sum()

    for dtype in (ember.float32, ember.float64):
        x = ember.linspace(-4, 4, 50, dtype=dtype, requires_grad=True)
        compiled = ember.compile(f)
        compiled(x).backward()
        got = x.grad.clone()
        x.grad = None
        f(x).backward()
        np.testing.assert_array_equal(got.numpy(), x.grad.numpy())
        assert not compiled.graph_breaks


# ---------------------------------------------------------------- ctc_loss as one op


def _ctc(lib, log_probs, targets, il, tl, reduction, zero_infinity, dtype, as_tensor):
    x = lib.tensor(log_probs.astype(dtype), requires_grad=True)
    il = lib.tensor(il) if as_tensor else [int(v) for v in il]
    tl = lib.tensor(tl) if as_tensor else [int(v) for v in tl]
    loss = lib.nn.functional.ctc_loss(x.log_softmax(-1), lib.tensor(targets), il, tl, reduction=reduction,
                                      zero_infinity=zero_infinity)
    weights = lib.tensor(np.arange(1, loss.numel() + 1, dtype=dtype).reshape(tuple(loss.shape)))
    (loss * weights).sum().backward()
    return loss.detach().numpy(), x.grad.numpy()


def test_ctc_loss_matches_torch_on_random_cases():
    """Random shapes, padded and concatenated targets, repeats, empty targets, zero-length inputs, impossible
    alignments (inf, or 0 with zero_infinity): values and gradients as torch's to float64 rounding."""
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for trial in range(24):
            T, N, C = rng.integers(1, 9), rng.integers(1, 4), rng.integers(2, 6)
            S = int(rng.integers(0, 5))
            tl = rng.integers(0, S + 1, N) if S else np.zeros(N, np.int64)
            il = rng.integers(0, T + 1, N)
            if trial % 3 == 0:
                targets = rng.integers(1, C, int(tl.sum()))
            else:
                targets = rng.integers(1, C, (N, max(S, 1)))
            if trial % 5 == 0:
                targets = np.ones_like(targets)  # repeated labels need a blank between them
            log_probs = rng.standard_normal((T, N, C))
            for reduction, zero_infinity, dtype in itertools.product(["none", "mean", "sum"], [False, True],
                                                                     ["float32", "float64"]):
                args = (log_probs, targets, il, tl, reduction, zero_infinity, dtype, trial % 2 == 0)
                want, got = _ctc(torch, *args), _ctc(ember, *args)
                tight = dtype == "float64"
                for a, b in zip(got, want):
                    np.testing.assert_allclose(a, b, rtol=1e-12 if tight else 1e-5, atol=1e-13 if tight else 1e-6,
                                               equal_nan=True, err_msg=str((trial, reduction, zero_infinity, dtype)))


def test_ctc_loss_compiles_to_one_graph():
    """The lengths and labels are operands of one op: no graph break, and new labels replay the graph (the
    composite read them into Python, so each batch of labels was a new capture and then ran eagerly)."""
    def step(log_probs, targets, il, tl):
        return ember.nn.functional.ctc_loss(log_probs.log_softmax(-1), targets, il, tl, zero_infinity=True)

    compiled = ember.compile(step)
    rng = np.random.default_rng(1)
    for _ in range(4):
        x = ember.tensor(rng.standard_normal((10, 3, 5)), dtype=ember.float32, requires_grad=True)
        args = (ember.tensor(rng.integers(1, 5, (3, 4))), ember.tensor(rng.integers(6, 11, 3)),
                ember.tensor(rng.integers(1, 5, 3)))
        loss = compiled(x, *args)
        loss.backward()
        got = x.grad.clone()
        x.grad = None
        want = step(x, *args)
        want.backward()
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
        np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert compiled.captures == 1 and not compiled.graph_breaks


def test_ctc_loss_length_errors_come_from_the_kernel():
    log_probs = ember.randn(6, 2, 4).log_softmax(-1)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, but got value 7"):
        ember.nn.functional.ctc_loss(log_probs, ember.tensor([[1, 2], [1, 1]]), ember.tensor([7, 6]),
                                     ember.tensor([2, 2]))
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        ember.nn.functional.ctc_loss(log_probs, ember.tensor([[1, 2], [1, 1]]), [6], [2, 2])


# ---------------------------------------------------------------- nll_loss's weight has no gradient


@pytest.mark.parametrize("shape, target", [((3, 4), (3,)), ((4,), ()), ((2, 4, 3, 3), (2, 3, 3))])
def test_nll_loss_refuses_a_weight_that_requires_grad(shape, target):
    messages = []
    for lib in (torch, ember):
        weight = lib.rand(4, requires_grad=True)
        x, t = lib.randn(*shape), lib.zeros(target, dtype=lib.long)
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.nll_loss(x, t, weight=weight)
        messages.append(str(info.value))
        with pytest.raises(RuntimeError):  # cross_entropy with class indices goes through nll_loss
            lib.nn.functional.cross_entropy(x, t, weight=weight, label_smoothing=0.1)
        with lib.no_grad():
            lib.nn.functional.nll_loss(x, t, weight=weight)
    assert messages[0] == messages[1]
