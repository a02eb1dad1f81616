"""Gradients and checks at the edges training code reaches (found by comparing with torch): a saturated sigmoid
into BCE, an all-padding batch, an overwritten activation, a clamped variance, half-precision RMSNorm."""

import numpy as np
import pytest
import torch

import ember


def _both(fn):
    """fn(lib) for ember and torch, as NumPy (tensors) or the raised exception's type."""
    out = []
    for lib in (ember, torch):
        try:
            result = fn(lib)
        except Exception as error:  # noqa: BLE001 - the type is compared
            out.append(type(error))
            continue
        out.append([r.detach().float().numpy() if hasattr(r, "detach") else r for r in result])
    return out


def _assert_same(fn, rtol=1e-6, atol=1e-7):
    ours, theirs = _both(fn)
    if isinstance(theirs, type):
        assert ours is theirs
        return
    assert not isinstance(ours, type), ours
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_copy_replaces_the_history():
    def overwritten(lib):
        w = lib.ones(2, 3, requires_grad=True)
        x = w * 2
        x.copy_(lib.zeros(2, 3))
        y = w * 3
        y[:, 1].copy_(lib.zeros(2))
        s = lib.full((3,), 2.0, requires_grad=True)
        z = w[0] * 2
        z.copy_(s * 3)
        (x.sum() + y.sum() + z.sum()).backward()
        return w.grad, s.grad

    _assert_same(overwritten)


def test_bce_gradient_is_finite_at_zero_and_one():
    def saturated(lib):
        p = lib.tensor([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30], requires_grad=True)
        y = lib.tensor([0.0, 1.0, 1.0, 0.0, 1.0, 0.0])
        lib.nn.functional.binary_cross_entropy(p, y, reduction="sum").backward()
        logits = lib.tensor([17.0, -3.0], requires_grad=True)
        lib.nn.functional.binary_cross_entropy(logits.sigmoid(), lib.tensor([1.0, 0.0])).backward()
        return p.grad, logits.grad

    _assert_same(saturated)
    _assert_same(lambda lib: [lib.nn.functional.binary_cross_entropy(lib.tensor([0.5]), lib.tensor([2.0]))])


@pytest.mark.parametrize("kwargs", [{}, {"label_smoothing": 0.1}, {"weight": [1.0, 2.0, 3.0]}])
def test_cross_entropy_with_every_target_ignored_has_zero_gradients(kwargs):
    def padded(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]], requires_grad=True)
        options = {k: lib.tensor(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        loss = lib.nn.functional.cross_entropy(x, lib.tensor([-100, -100]), **options)
        loss.backward()
        return loss, x.grad

    _assert_same(padded)


def test_nll_loss_checks_the_target_size():
    _assert_same(lambda lib: [lib.nn.functional.nll_loss(lib.zeros(2, 4, 5), lib.zeros(2, 3, dtype=lib.int64))])
    _assert_same(lambda lib: [lib.nn.functional.nll_loss(lib.zeros(2, 4), lib.zeros(2, dtype=lib.uint8))])


@pytest.mark.parametrize("var_shape", [(4, 3, 5), (4, 1, 5), (1, 3, 5), (4, 3), (4, 3, 1), (1,), (4, 2, 5)])
def test_gaussian_nll_var_shapes(var_shape):
    _assert_same(lambda lib: [lib.nn.functional.gaussian_nll_loss(lib.zeros(4, 3, 5), lib.ones(4, 3, 5),
                                                                   lib.ones(*var_shape))])


def test_gaussian_nll_gradient_through_the_clamp():
    def clamped(lib):
        inp = lib.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
        var = lib.tensor([[1e-8, 0.5], [2.0, 1e-9]], requires_grad=True)
        lib.nn.functional.gaussian_nll_loss(inp, lib.zeros(2, 2), var, reduction="sum").backward()
        return inp.grad, var.grad

    _assert_same(clamped)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_rms_norm_computes_half_precision_in_float32(dtype):
    data = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)

    def normed(lib):
        d = getattr(lib, dtype)
        x = lib.tensor(data, dtype=d, requires_grad=True)
        w = lib.tensor(data[0], dtype=d, requires_grad=True)
        y = lib.nn.functional.rms_norm(x, (8,), w)
        y.float().sum().backward()
        small = lib.nn.functional.rms_norm(lib.full((2, 4), 1e-3, dtype=d), (4,))
        return y, small, x.grad, w.grad

    # (x's gradient cancels to ~1e-7 in places: an absolute tolerance)
    _assert_same(normed, rtol=1e-6 if dtype == "float32" else 1e-2, atol=1e-6 if dtype == "float32" else 1e-3)


def test_pooling_int64_averages_and_empty_outputs():
    data = [[[[8, 2, 4, 11], [9, -4, 4, 0], [0, 2, 0, 7], [3, 0, 2, 1]]]]
    _assert_same(lambda lib: [lib.nn.functional.avg_pool2d(lib.tensor(data), 2),
                              lib.nn.functional.avg_pool1d(lib.tensor(data)[0], 2)])
    _assert_same(lambda lib: [lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 4, 4), (0, 2)),
                              *lib.nn.functional.adaptive_max_pool2d(lib.ones(1, 2, 4, 4), 0, return_indices=True)])
