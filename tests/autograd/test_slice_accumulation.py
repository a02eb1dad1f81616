"""NOTE [ Slice gradients added in place ] (ember/_autograd/engine.py): gradients of several slices of one
tensor are added into one buffer; the values must be torch's in every case the fast path can meet."""

import numpy as np
import pytest
import torch

import ember


def _both(fn, shape=(3, 4)):
    results = []
    for lib in (ember, torch):
        x = lib.tensor(np.arange(float(np.prod(shape))).reshape(shape), requires_grad=True)
        fn(lib, x).sum().backward()
        results.append(x.grad.numpy() if lib is ember else x.grad.detach().numpy())
    np.testing.assert_array_equal(*results)


CASES = {
    "split": lambda lib, x: sum(p * (i + 2) for i, p in enumerate(x.split(2, dim=1))).sum(1),
    "chunk_overlap_with_full": lambda lib, x: x.chunk(3, 0)[0].sum() + x.sum() + x.chunk(3, 0)[2].sum(),
    "unbind_and_select": lambda lib, x: x.unbind(0)[0] * 2 + x[1] * 3 + x.select(0, 0),
    "same_slice_twice": lambda lib, x: x[:, 1] + x[:, 1] * 5,
    "strided_slices": lambda lib, x: x[:, ::2].exp().sum(1) + x[:, 1::2].sum(1),
    "narrow_then_view": lambda lib, x: x.narrow(1, 1, 2).reshape(-1) * lib.arange(6.0, dtype=lib.float64),
}


@pytest.mark.parametrize("name", CASES)
def test_slice_gradients_match_torch(name):
    _both(CASES[name])


def test_hooks_see_each_slice_gradient():
    seen = []
    x = ember.ones(2, 4, requires_grad=True)
    a, b = x.split(2, dim=1)
    a.register_hook(lambda g: seen.append(g.clone()))
    b.register_hook(lambda g: g * 10)  # a hook that replaces the gradient: the slow path must apply it
    (a * 2 + b * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 2, 30, 30], [2, 2, 30, 30]])
    np.testing.assert_array_equal(seen[0].numpy(), np.full((2, 2), 2.0))


def test_double_backward_through_slices():
    for lib in (ember, torch):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = x.split(2)
        y = (a ** 3).sum() + (b ** 2).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        if lib is ember:
            mine = (g.detach().numpy(), h.numpy())
        else:
            np.testing.assert_array_equal(mine[0], g.detach().numpy())
            np.testing.assert_array_equal(mine[1], h.numpy())


def test_user_gradient_is_not_written_into():
    x = ember.zeros(4, requires_grad=True)
    a, b = x.split(2)
    upstream = ember.ones(2)
    ember.autograd.backward([a, b, x], [upstream, upstream, ember.ones(4)])
    np.testing.assert_array_equal(upstream.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0, 2.0])


def test_three_slices_make_one_full_size_buffer(monkeypatch):
    """The fast path is taken: one zeros-and-scatter for the first slice, the others add into it."""
    from ember._ops import views

    calls = []
    original = views._VIEW_SCATTER.impl
    monkeypatch.setattr(views._VIEW_SCATTER, "impl", lambda *a, **k: calls.append(1) or original(*a, **k))
    x = ember.ones(4, 6, requires_grad=True)
    a, b, c = x.split(2, dim=1)
    (a * 2 + b * 3 + c).sum().backward()
    assert len(calls) == 1
    np.testing.assert_array_equal(x.grad[0].numpy(), [2, 2, 3, 3, 1, 1])
