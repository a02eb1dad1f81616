"""ember.utils.checkpoint: gradients equal the unchecked run's (dropout included, via the RNG replay), and
peak memory drops."""

import gc
import tracemalloc

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def make_model(seed=0, width=8, depth=4, dropout=0.0):
    ember.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.Tanh()]
        if dropout:
            layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


def grads(model, x):
    return [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]


def run(use_checkpoint, use_reentrant=False, dropout=0.0, sequential=False):
    model = make_model(dropout=dropout)
    ember.manual_seed(1)
    x = ember.randn(5, 8, requires_grad=True)
    ember.manual_seed(2)
    if not use_checkpoint:
        out = model(x)
    elif sequential:
        out = checkpoint_sequential(model, 3, x, use_reentrant=use_reentrant)
    else:
        out = checkpoint(model, x, use_reentrant=use_reentrant)
    (out ** 2).sum().backward()
    return out.detach().numpy(), grads(model, x)


@pytest.mark.parametrize("use_reentrant", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
@pytest.mark.parametrize("sequential", [False, True])
def test_gradients_equal_unchecked(use_reentrant, dropout, sequential):
    out_ref, grads_ref = run(False, dropout=dropout)
    out, got = run(True, use_reentrant, dropout, sequential)
    np.testing.assert_allclose(out, out_ref, rtol=1e-6)
    for a, b in zip(got, grads_ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_rng_not_preserved_changes_dropout_masks():
    model = make_model(dropout=0.5)
    x = ember.randn(5, 8, requires_grad=True)
    ember.manual_seed(2)
    out = checkpoint(model, x, use_reentrant=False, preserve_rng_state=False)
    (out ** 2).sum().backward()
    _, grads_ref = run(False, dropout=0.5)
    assert any(not np.allclose(a, b) for a, b in zip(grads(model, x), grads_ref))


def test_rng_state_after_backward_is_callers():
    model = make_model(dropout=0.5)
    x = ember.randn(5, 8, requires_grad=True)
    out = checkpoint(model, x, use_reentrant=False)
    state = ember.get_rng_state()
    out.sum().backward()
    assert (ember.get_rng_state() == state).all()


def test_kwargs_non_tensor_args_and_no_grad():
    lin = nn.Linear(3, 3)
    x = ember.randn(2, 3, requires_grad=True)

    def f(a, scale, *, shift):
        return lin(a) * scale + shift

    out = checkpoint(f, x, 2.0, shift=1.0, use_reentrant=False)
    out.sum().backward()
    ref_x = x.detach().requires_grad_()
    lin_grad = lin.weight.grad.clone()
    lin.weight.grad = None
    f(ref_x, 2.0, shift=1.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(lin_grad.numpy(), lin.weight.grad.numpy(), rtol=1e-6)
    with ember.no_grad():
        assert not checkpoint(f, x, 2.0, shift=1.0, use_reentrant=False).requires_grad
    with pytest.raises(ValueError, match="Unexpected keyword"):
        checkpoint(f, x, 2.0, shift=1.0, use_reentrant=True)


def test_default_use_reentrant_warns_like_torch():
    x = ember.randn(2, 2, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda a: a * 2, x)


def test_nondeterministic_recompute_raises():
    calls = []

    def f(a):
        calls.append(1)
        return a.exp().exp() if len(calls) == 1 else a.exp()  # (torch's early stop ignores extra saves)

    x = ember.randn(3, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError):
        out.sum().backward()


def peak_bytes(use_checkpoint, depth=32, width=128, batch=1024, segments=6, train_weights=False):
    """Peak traced bytes of one forward + backward; numpy's buffers are traced by tracemalloc.  With frozen
    weights the activations dominate (with trained ones the weight gradients, which checkpointing keeps)."""
    model = make_model(depth=depth, width=width)
    model.requires_grad_(train_weights)
    x = ember.randn(batch, width, requires_grad=True)
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    if use_checkpoint:
        out = checkpoint_sequential(model, segments, x, use_reentrant=False)
    else:
        out = model(x)
    out.sum().backward()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_checkpoint_reduces_peak_memory():
    plain = peak_bytes(False)
    checked = peak_bytes(True)
    assert checked < 0.6 * plain, (checked, plain)
