"""Top-level aliases of nn.functional ops (torch.dropout, torch.batch_norm, ...) with torch's ATen signatures:
values and gradients against real PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _array(rng, *shape, low=-2.0, high=2.0):
    return rng.uniform(low, high, shape)


def _compare(name, arrays, *rest, grad=True, tolerance=1e-10, build=None, constant=(), select=None, **kwargs):
    """Call lib.<name>(*tensors, *rest, **kwargs) in both libraries; compare outputs and input gradients."""
    results = {}
    for lib in (ember, torch):
        tensors = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f" and i not in constant)
                   if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]
        args = build(lib, tensors) if build else tensors
        out = getattr(lib, name)(*args, *rest, **kwargs)
        out = select(out) if select else out
        results[lib.__name__] = tensors, out
    (mine_in, mine), (theirs_in, theirs) = results["ember"], results["torch"]
    mine_list = list(mine) if isinstance(mine, tuple) else [mine]
    theirs_list = list(theirs) if isinstance(theirs, tuple) else [theirs]
    assert len(mine_list) == len(theirs_list)
    for a, e in zip(mine_list, theirs_list):
        assert tuple(a.shape) == tuple(e.shape), name
        assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], name
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=tolerance, atol=tolerance,
                                   err_msg=name)
    if not grad:
        return
    leaves = [(m, t) for m, t in zip(mine_in, theirs_in) if isinstance(t, torch.Tensor) and t.requires_grad]
    rng = np.random.default_rng(7)
    cotangent = rng.standard_normal(tuple(theirs_list[0].shape))
    mine_grads = ember.autograd.grad([mine_list[0]], [m for m, _ in leaves], [ember.tensor(cotangent)],
                                     allow_unused=True)
    theirs_grads = torch.autograd.grad([theirs_list[0]], [t for _, t in leaves], [torch.tensor(cotangent)],
                                       allow_unused=True)
    for a, e in zip(mine_grads, theirs_grads):
        if e is None:
            assert a is None or not np.any(a.numpy())
            continue
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=tolerance, atol=tolerance, err_msg=f"{name} grad")


RNG = np.random.default_rng(0)


def test_normalization_aliases():
    x = _array(RNG, 4, 3, 5)
    weight, bias = _array(RNG, 3), _array(RNG, 3)
    mean, var = _array(RNG, 3), _array(RNG, 3, low=0.5, high=1.5)
    _compare("batch_norm", [x, weight, bias, mean, var], False, 0.1, 1e-5, True, constant=(3, 4))
    _compare("batch_norm", [x, weight, bias], None, None, True, 0.1, 1e-5, True)
    _compare("instance_norm", [x, weight, bias], None, None, True, 0.1, 1e-5, False)
    _compare("layer_norm", [x], [5])
    _compare("layer_norm", [x, _array(RNG, 3, 5), _array(RNG, 3, 5)], tolerance=1e-9,
             build=lambda lib, t: [t[0], [3, 5], t[1], t[2], 1e-3, True])
    _compare("group_norm", [_array(RNG, 2, 4, 3), _array(RNG, 4), _array(RNG, 4)],
             build=lambda lib, t: [t[0], 2, t[1], t[2], 1e-5, True])
    _compare("native_layer_norm", [x, _array(RNG, 5), _array(RNG, 5)],
             build=lambda lib, t: [t[0], [5], t[1], t[2], 1e-5])
    _compare("native_layer_norm", [x], build=lambda lib, t: [t[0], [3, 5], None, None, 1e-5])
    out, mean_out, rstd_out = ember.native_layer_norm(ember.tensor(x, requires_grad=True), [5], None, None, 1e-5)
    assert out.requires_grad and mean_out.grad_fn is None and rstd_out.grad_fn is None


def test_layer_norm_positional_signature():
    with pytest.raises(TypeError):
        ember.layer_norm(ember.ones(2, 3), [3], None, None, 1e-5, True, 3)


def test_convolution_aliases():
    _compare("conv1d", [_array(RNG, 2, 3, 7), _array(RNG, 4, 3, 3), _array(RNG, 4)], 2, 1)
    _compare("conv2d", [_array(RNG, 1, 2, 5, 5), _array(RNG, 4, 1, 3, 3)], None, 1, 1, 1, 2)
    _compare("conv3d", [_array(RNG, 1, 2, 4, 4, 4), _array(RNG, 3, 2, 2, 2, 2)])
    _compare("conv_transpose1d", [_array(RNG, 2, 3, 5), _array(RNG, 3, 2, 3), _array(RNG, 2)], 2, 1, 1)
    _compare("conv_transpose2d", [_array(RNG, 1, 2, 4, 4), _array(RNG, 2, 3, 3, 3)], None, 2)
    _compare("conv_transpose3d", [_array(RNG, 1, 2, 3, 3, 3), _array(RNG, 2, 2, 2, 2, 2)])


def test_pooling_aliases():
    _compare("max_pool1d", [_array(RNG, 2, 3, 9)], 3)
    _compare("max_pool1d", [_array(RNG, 2, 3, 9)], 3, [], 1, 1, True)
    _compare("max_pool2d", [_array(RNG, 1, 2, 6, 6)], 2, 2)
    _compare("max_pool3d", [_array(RNG, 1, 1, 4, 4, 4)], 2)
    _compare("avg_pool1d", [_array(RNG, 2, 3, 8)], 3, 2, 1, False, False)
    _compare("adaptive_avg_pool1d", [_array(RNG, 2, 3, 8)], 3)
    _compare("adaptive_max_pool1d", [_array(RNG, 2, 3, 8)], 3)


def test_activation_aliases():
    x = _array(RNG, 3, 4)
    _compare("selu", [x])
    _compare("celu", [x])
    _compare("celu", [x], 0.5)
    _compare("hardshrink", [x], 0.7)
    _compare("threshold", [x], 0.1, -3.0)
    _compare("prelu", [_array(RNG, 2, 3, 4), _array(RNG, 3)])
    _compare("rrelu", [x])  # training=False: the deterministic slope (lower + upper) / 2
    for name in ("selu_", "celu_", "threshold_", "rrelu_"):
        extra = (0.1, 2.0) if name == "threshold_" else ()
        mine, theirs = ember.tensor(x), torch.tensor(x)
        assert getattr(ember, name)(mine, *extra) is mine
        getattr(torch, name)(theirs, *extra)
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)


def test_shape_and_distance_aliases():
    _compare("pixel_shuffle", [_array(RNG, 1, 8, 2, 3)], 2)
    _compare("pixel_unshuffle", [_array(RNG, 1, 2, 4, 6)], 2)
    _compare("channel_shuffle", [_array(RNG, 1, 6, 2, 2)], 3, grad=False)
    _compare("cosine_similarity", [_array(RNG, 3, 4), _array(RNG, 3, 4)])
    _compare("cosine_similarity", [_array(RNG, 3, 4), _array(RNG, 3, 4)], 0, 1e-6)
    _compare("pairwise_distance", [_array(RNG, 3, 4), _array(RNG, 3, 4)], 1.0, 1e-6, True)
    _compare("bilinear", [_array(RNG, 2, 3), _array(RNG, 2, 4), _array(RNG, 5, 3, 4), _array(RNG, 5)])


def test_embedding_aliases():
    weight = _array(RNG, 10, 3)
    indices = np.array([[1, 2, 4], [4, 3, 9]])
    _compare("embedding", [weight, indices])
    _compare("embedding", [weight, indices], 4)
    _compare("embedding", [weight, indices], -1, False, False)
    flat, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3])
    for mode in (0, 1, 2):
        _compare("embedding_bag", [weight, flat, offsets], False, mode)
    _compare("embedding_bag", [weight, flat, np.array([0, 3, 8])], False, 1, False, None, True)
    per_sample = _array(RNG, 8)
    _compare("embedding_bag", [weight, flat, offsets, per_sample],
             build=lambda lib, t: [t[0], t[1], t[2], False, 0, False, t[3]], select=lambda result: result[0])
    _compare("embedding_bag", [weight, flat, np.array([0, 3, 3])], False, 2)


def test_loss_aliases():
    a, p, n = _array(RNG, 4, 5), _array(RNG, 4, 5), _array(RNG, 4, 5)
    _compare("triplet_margin_loss", [a, p, n])  # torch's binding defaults reduction to 0 (none)
    _compare("triplet_margin_loss", [a, p, n], 0.5, 1.0, 1e-6, True, 0)
    _compare("triplet_margin_loss", [a, p, n], 1.0, 2.0, 1e-6, False, 2)
    log_probs = np.log(RNG.dirichlet(np.ones(5), size=(6, 2)))
    targets = np.array([[1, 2, 3], [2, 2, 0]])
    for reduction in (0, 1, 2):
        _compare("ctc_loss", [log_probs, targets], [6, 5], [3, 2], 0, reduction, tolerance=1e-8)
    _compare("ctc_loss", [log_probs, targets], [6, 5], [3, 2], tolerance=1e-8)


def test_dropout_aliases():
    x = ember.ones(200, 50)
    for name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"):
        fn = getattr(ember, name)
        assert fn(x, 0.3, False) is x or np.array_equal(fn(x, 0.3, False).numpy(), x.numpy())
        out = fn(x, 0.3, True)
        assert tuple(out.shape) == (200, 50)
        assert np.array_equal(fn(x, 0.0, True).numpy(), x.numpy())
    kept = ember.dropout(x, 0.3, True).numpy()
    assert np.all(np.isclose(kept, 0.0) | np.isclose(kept, 1 / 0.7))
    assert abs(kept.mean() - 1.0) < 0.05
    channels = ember.feature_dropout(ember.ones(8, 300, 4), 0.5, True).numpy()
    assert np.all(channels.min(axis=2) == channels.max(axis=2))  # one draw per (batch, channel)
    assert abs((channels[..., 0] == 0).mean() - 0.5) < 0.05
    # alpha dropout keeps zero mean / unit variance for standard normal input
    z = ember.randn(400, 400)
    alpha = ember.alpha_dropout(z, 0.2, True).numpy()
    assert abs(alpha.mean()) < 0.05 and abs(alpha.std() - 1.0) < 0.05
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        ember.feature_dropout(ember.ones(3), 0.5, True)
    y = ember.ones(10, 10)
    assert ember.dropout_(y, 0.5, True) is y
    # gradients flow through the mask
    leaf = ember.ones(20, 30, requires_grad=True)
    ember.feature_dropout(leaf, 0.5, True).sum().backward()
    assert set(np.unique(leaf.grad.numpy())) <= {0.0, 2.0}
