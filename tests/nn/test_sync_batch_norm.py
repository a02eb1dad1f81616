"""nn.SyncBatchNorm without a process group (torch's API and fallback, compared with torch), and the
batch_norm_* pieces it is built from, which torch has for CUDA only: checked here against the statistics of
the concatenated batch and against autograd through F.batch_norm (the MPI runs are in tests/distributed)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)


def _net(lib):
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Sequential(nn.BatchNorm1d(5, affine=False)))
    with lib.no_grad():
        model[1].weight.fill_(2)
        model[1].running_mean.fill_(0.5)
        model[1].num_batches_tracked.fill_(3)
    model[2].eval()
    return model


def test_convert_sync_batchnorm_matches_torch():
    converted = [lib.nn.SyncBatchNorm.convert_sync_batchnorm(_net(lib), process_group=None) for lib in (ember, torch)]
    assert repr(converted[0]) == repr(converted[1])
    for model in converted:
        assert model[1].weight[0].item() == 2.0 and model[1].running_mean[0].item() == 0.5
        assert model[1].num_batches_tracked.item() == 3 and not model[2][0].training and model[2][0].bias is None
    original = _net(ember)
    converted = ember.nn.SyncBatchNorm.convert_sync_batchnorm(original)
    assert converted[1].weight is original[1].weight and converted[1].running_var is original[1].running_var


def test_without_a_process_group_it_is_batch_norm():
    x = RNG.standard_normal((5, 4, 3, 3)).astype(np.float32)
    outs = []
    for lib in (ember, torch):
        layer = lib.nn.SyncBatchNorm(4, momentum=None)
        inputs = lib.tensor(x, requires_grad=True)
        out = layer(inputs)
        out.pow(2).sum().backward()
        outs.append([out.detach().numpy(), inputs.grad.numpy(), layer.running_var.numpy(), layer.weight.grad.numpy()])
    for ours, theirs in zip(*outs):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call", ["one_dim", "no_channels"])
def test_input_errors_match_torch(call):
    make = {"one_dim": lambda lib: lib.nn.SyncBatchNorm(4)(lib.ones(3)),
            "no_channels": lambda lib: lib.nn.SyncBatchNorm(0)(lib.ones(3, 0))}[call]
    errors = []
    for lib in (ember, torch):
        with pytest.raises(ValueError) as info:
            make(lib)
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_pieces_combine_per_rank_statistics_into_the_whole_batchs():
    parts = [RNG.standard_normal((n, 3, 4)) * 3 + 1 for n in (2, 5, 1)]
    whole = np.concatenate(parts)
    eps = 1e-5
    stats = [ember.batch_norm_stats(ember.tensor(p), eps) for p in parts]
    mean, invstd = ember.batch_norm_stats(ember.tensor(whole), eps)
    np.testing.assert_allclose(mean.numpy(), whole.mean((0, 2)))
    np.testing.assert_allclose(invstd.numpy(), 1 / np.sqrt(whole.var((0, 2)) + eps))
    running_mean, running_var = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    counts = ember.tensor([p.shape[0] * p.shape[2] for p in parts], dtype=ember.float64)
    gathered = ember.batch_norm_gather_stats_with_counts(
        ember.tensor(parts[0]), ember.stack([m for m, _ in stats]), ember.stack([i for _, i in stats]), running_mean,
        running_var, 0.25, eps, counts)
    np.testing.assert_allclose(gathered[0].numpy(), mean.numpy())
    np.testing.assert_allclose(gathered[1].numpy(), invstd.numpy())
    np.testing.assert_allclose(running_mean.numpy(), 0.25 * whole.mean((0, 2)))
    np.testing.assert_allclose(running_var.numpy(), 0.75 + 0.25 * whole.var((0, 2), ddof=1))


def test_pieces_give_batch_norms_gradients():
    x = RNG.standard_normal((4, 3, 5))
    g = RNG.standard_normal((4, 3, 5))
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    inputs, weight, bias = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    out = F.batch_norm(inputs, None, None, weight, bias, training=True, eps=1e-5)
    out.backward(ember.tensor(g))
    mean, invstd = ember.batch_norm_stats(ember.tensor(x), 1e-5)
    elemt = ember.batch_norm_elemt(ember.tensor(x), ember.tensor(w), ember.tensor(b), mean, invstd, 1e-5)
    np.testing.assert_allclose(elemt.numpy(), out.detach().numpy(), atol=1e-12)
    sum_dy, sum_dy_xmu, grad_w, grad_b = ember.batch_norm_backward_reduce(ember.tensor(g), ember.tensor(x), mean,
                                                                         invstd, ember.tensor(w), True, True, True)
    grad_x = ember.batch_norm_backward_elemt(ember.tensor(g), ember.tensor(x), mean, invstd, ember.tensor(w), sum_dy,
                                             sum_dy_xmu, ember.tensor([20], dtype=ember.int32))
    np.testing.assert_allclose(grad_x.numpy(), inputs.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(grad_w.numpy(), weight.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(grad_b.numpy(), bias.grad.numpy(), atol=1e-12)
    assert ember.batch_norm_backward_reduce(ember.tensor(g), ember.tensor(x), mean, invstd, None, False, False,
                                            True)[:3] == (None, None, None)
    update_mean, update_var = ember.batch_norm_update_stats(ember.tensor(x), None, None, 0.1)
    np.testing.assert_allclose(update_var.numpy(), x.var((0, 2)))
