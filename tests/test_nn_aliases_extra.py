"""Top-level ATen loss/norm aliases (ember/_ops/nn_aliases_extra.py), segment_reduce and svd/pca_lowrank
against real PyTorch: values, gradients, errors; the randomized ones by reconstruction quality."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:at..(nuclear|frobenius)_norm is deprecated:UserWarning")

_RNG = np.random.default_rng(3)


def _run(lib, name, arrays, rest, kwargs, grad_indices):
    tensors = [lib.tensor(a, requires_grad=i in grad_indices) if isinstance(a, np.ndarray) else a
               for i, a in enumerate(arrays)]
    out = getattr(lib, name)(*tensors, *rest, **kwargs)
    return tensors, out


def _compare(name, arrays, *rest, grad_indices=(0,), tolerance=1e-10, **kwargs):
    mine_in, mine = _run(ember, name, arrays, rest, kwargs, grad_indices)
    theirs_in, theirs = _run(torch, name, arrays, rest, kwargs, grad_indices)
    mine_list = list(mine) if isinstance(mine, tuple) else [mine]
    theirs_list = list(theirs) if isinstance(theirs, tuple) else [theirs]
    for a, e in zip(mine_list, theirs_list):
        assert tuple(a.shape) == tuple(e.shape), name
        assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], name
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=tolerance, atol=tolerance)
        assert (a.grad_fn is None) == (e.grad_fn is None), name
    if not grad_indices:
        return
    weights = [_RNG.standard_normal(tuple(e.shape)) for e in theirs_list]
    sum((a * ember.tensor(w)).sum() for a, w, e in zip(mine_list, weights, theirs_list)
        if e.grad_fn is not None).backward()
    sum((e * torch.tensor(w)).sum() for e, w in zip(theirs_list, weights) if e.grad_fn is not None).backward()
    for i in grad_indices:
        np.testing.assert_allclose(mine_in[i].grad.numpy(), theirs_in[i].grad.numpy(), rtol=1e-8, atol=1e-10)


_X = _RNG.standard_normal(5)
_P = _RNG.uniform(0.1, 0.9, 5)
_SIGN = np.array([1.0, -1.0, 1.0, 1.0, -1.0])
_A = _RNG.standard_normal((5, 3))
_B = _RNG.standard_normal((5, 3))


@pytest.mark.parametrize("reduction", [None, 0, 1, 2])
def test_losses(reduction):
    extra = () if reduction is None else (reduction,)
    _compare("binary_cross_entropy_with_logits", [_X, _P, _P + 0.5, _P * 2], *extra, grad_indices=(0, 1))
    _compare("cosine_embedding_loss", [_A, _B, _SIGN], 0.1, *extra, grad_indices=(0, 1))
    _compare("hinge_embedding_loss", [_X, _SIGN], 0.5, *extra)
    _compare("kl_div", [np.log(_P), _P], *extra, grad_indices=(0, 1))
    _compare("kl_div", [np.log(_P), np.log(_P[::-1].copy())], *extra, log_target=True, grad_indices=(0, 1))
    _compare("margin_ranking_loss", [_X, _P, _SIGN], 0.2, *extra, grad_indices=(0, 1))
    if reduction is not None:
        _compare("poisson_nll_loss", [_X, _P * 3], True, True, 1e-8, reduction)
        _compare("poisson_nll_loss", [_P, _P * 3], False, False, 1e-8, reduction)
        # full=True with targets of 0 and 1: the Stirling term is masked to 0 there (it was nan at 0)
        _compare("poisson_nll_loss", [_X, np.floor(_P * 3)], True, True, 1e-8, reduction)


def test_loss_errors_and_out():
    for lib in (ember, torch):
        with pytest.raises(TypeError):
            lib.poisson_nll_loss(lib.ones(2), lib.ones(2))
    out = ember.empty(0, dtype=ember.float64)
    assert ember.binary_cross_entropy_with_logits(ember.tensor(_X), ember.tensor(_P), out=out) is out
    np.testing.assert_allclose(out.numpy(), torch.binary_cross_entropy_with_logits(torch.tensor(_X),
                                                                                    torch.tensor(_P)).numpy())


def test_norms_and_padding():
    image = _RNG.standard_normal((2, 4, 3))
    _compare("rms_norm", [image], [3])
    _compare("rms_norm", [image], [4, 3], None, 1e-3)
    _compare("constant_pad_nd", [image], [1, -1, 2, 0], 3.5)
    _compare("frobenius_norm", [image], [1, 2])
    _compare("frobenius_norm", [image], [0], True)
    _compare("frobenius_norm", [image], [])
    _compare("nuclear_norm", [image[0]])
    _compare("nuclear_norm", [image], True)
    _compare("nuclear_norm", [image], [0, 2], True)
    for lib in (ember, torch):
        x = lib.tensor(image)
        with pytest.raises(RuntimeError, match="Expected at most 2 dimensions, but got 3 dimensions instead."):
            lib.frobenius_norm(x, [0, 1, 2])
        with pytest.raises(RuntimeError, match="input dtype should be either floating point or complex. Got Long"):
            lib.frobenius_norm(lib.arange(4), [0])
        with pytest.raises(RuntimeError, match="Length of pad must be even"):
            lib.constant_pad_nd(x, [1])


def test_native_normalizations():
    image = _RNG.standard_normal((4, 3, 2))
    weight, bias = _RNG.standard_normal(3), _RNG.standard_normal(3)
    for training in (True, False):
        stats = {lib: (lib.tensor(np.zeros(3)), lib.tensor(np.ones(3))) for lib in (ember, torch)}
        results = {}
        for lib in (ember, torch):
            x = lib.tensor(image, requires_grad=True)
            results[lib] = x, lib.native_batch_norm(x, lib.tensor(weight), lib.tensor(bias), *stats[lib], training,
                                                    0.1, 1e-5)
        (_, mine), (_, theirs) = results[ember], results[torch]
        for a, e in zip(mine, theirs):
            assert tuple(a.shape) == tuple(e.shape) and (a.grad_fn is None) == (e.grad_fn is None)
            np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-10, atol=1e-10)
        for a, e in zip(stats[ember], stats[torch]):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)
    _compare("native_group_norm", [_RNG.standard_normal((2, 4, 3)), weight[:2].repeat(2), bias[:2].repeat(2)],
             2, 4, 3, 2, 1e-5, grad_indices=(0, 1, 2))
    with pytest.raises(RuntimeError):
        ember.native_group_norm(ember.ones(2, 4, 3), None, None, 2, 4, 2, 2, 1e-5)


def test_native_dropout_and_grid_sampler():
    x = ember.ones(1000, requires_grad=True)
    output, mask = ember.native_dropout(x, 0.25, True)
    assert mask.dtype == ember.bool and 0.6 < mask.float().mean().item() < 0.9
    np.testing.assert_allclose(output.detach().numpy(), mask.numpy() / 0.75)
    output.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), mask.numpy() / 0.75)
    assert ember.native_dropout(x, 0.25, None)[1].logical_not().any().item()
    kept, all_true = ember.native_dropout(x, 0.5, False)
    assert all_true.all().item() and kept.tolist() == x.tolist() and kept.grad_fn is not None
    zeros, none_kept = ember.native_dropout(ember.ones(3), 1.0, True)
    assert zeros.tolist() == [0.0, 0.0, 0.0] and not none_kept.any().item()
    image = _RNG.standard_normal((1, 2, 4, 4))
    grid = _RNG.uniform(-1.2, 1.2, (1, 3, 3, 2))
    for mode in (0, 1):  # ember's grid_sample has no bicubic mode (2)
        for padding in (0, 1, 2):
            _compare("grid_sampler", [image, grid], mode, padding, mode == 1, grad_indices=(0,) if mode else (0, 1))


def test_segment_reduce():
    data = _RNG.standard_normal((6, 2))
    lengths = np.array([2, 0, 4])
    for reduce in ("sum", "mean", "max", "min", "prod", "amax"):
        for initial in (None, 0.5):
            mine = ember.segment_reduce(ember.tensor(data), reduce, lengths=ember.tensor(lengths), initial=initial)
            theirs = torch.segment_reduce(torch.tensor(data), reduce, lengths=torch.tensor(lengths),
                                          initial=initial)
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)
    x = ember.tensor(data, requires_grad=True)
    ember.segment_reduce(x, "sum", offsets=ember.tensor([0, 2, 2, 6])).sum().backward()
    assert x.grad.tolist() == np.ones((6, 2)).tolist()
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
            lib.segment_reduce(lib.tensor(data), "foo", lengths=lib.tensor(lengths))
        with pytest.raises(RuntimeError, match="Either lengths or offsets must be defined"):
            lib.segment_reduce(lib.tensor(data), "sum")
        with pytest.raises(RuntimeError, match="to sum to data.size"):
            lib.segment_reduce(lib.tensor(data), "sum", lengths=lib.tensor([1, 2]))


def test_svd_and_pca_lowrank():
    ember.manual_seed(0)
    left, right = _RNG.standard_normal((30, 4)), _RNG.standard_normal((4, 20))
    low_rank = left @ right
    for matrix in (low_rank, low_rank.T.copy()):
        A = ember.tensor(matrix)
        U, S, V = ember.svd_lowrank(A, q=6)
        assert tuple(U.shape) == (matrix.shape[0], 6) and tuple(V.shape) == (matrix.shape[1], 6)
        np.testing.assert_allclose((U * S) @ V.mT, matrix, atol=1e-8)
        np.testing.assert_allclose(S[:4].numpy(), np.linalg.svd(matrix, compute_uv=False)[:4], rtol=1e-8)
    offset = ember.tensor(_RNG.standard_normal(20)).expand(30, 20)
    U, S, V = ember.svd_lowrank(ember.tensor(low_rank) + offset, q=5, M=offset)
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), low_rank, atol=1e-8)
    centered = low_rank - low_rank.mean(0, keepdims=True)
    U, S, V = ember.pca_lowrank(ember.tensor(low_rank))
    np.testing.assert_allclose(((U * S) @ V.mT).numpy(), centered, atol=1e-8)
    np.testing.assert_allclose(S[:4].numpy(), torch.pca_lowrank(torch.tensor(low_rank))[1][:4].numpy(), rtol=1e-8)
    A = ember.tensor(low_rank, requires_grad=True)
    ember.svd_lowrank(A, q=4)[1].sum().backward()
    assert A.grad is not None and tuple(A.grad.shape) == (30, 20)
    for lib in (ember, torch):
        with pytest.raises(ValueError, match=r"q\(=40\) must be non-negative integer and not greater than"):
            lib.pca_lowrank(lib.tensor(low_rank), q=40)
