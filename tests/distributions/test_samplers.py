"""The sampling ops behind ember.distributions: _standard_gamma(_grad), _sample_dirichlet, _dirichlet_grad, binomial."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_parity import assert_close


def test_standard_gamma_grad_matches_torch_on_every_branch():
    rng = np.random.default_rng(0)
    alpha = np.concatenate([rng.uniform(0.01, 1.0, 300), rng.uniform(1.0, 8.0, 300), rng.uniform(8.0, 200.0, 300)])
    torch_alpha = torch.tensor(alpha)
    torch.manual_seed(0)
    sample = torch._standard_gamma(torch_alpha).clamp(min=1e-300)
    expected = torch._standard_gamma_grad(torch_alpha, sample)
    actual = ember._standard_gamma_grad(ember.tensor(alpha), ember.tensor(sample.numpy()))
    assert_close(actual, expected, rtol=1e-9, atol=1e-12)


def test_dirichlet_grad_matches_torch_on_every_branch():
    rng = np.random.default_rng(1)
    alpha = np.concatenate([rng.uniform(0.05, 3.0, 300), rng.uniform(7.0, 40.0, 300)])
    total = alpha + np.concatenate([rng.uniform(0.05, 3.0, 300), rng.uniform(7.0, 40.0, 300)])
    x = torch.distributions.Beta(torch.tensor(alpha), torch.tensor(total - alpha)).sample().clamp(1e-6, 1 - 1e-6)
    expected = torch._dirichlet_grad(x, torch.tensor(alpha), torch.tensor(total))
    actual = ember._dirichlet_grad(ember.tensor(x.numpy()), ember.tensor(alpha), ember.tensor(total))
    assert_close(actual, expected, rtol=1e-9, atol=1e-12)


def test_standard_gamma_backward_is_the_reparameterised_gradient():
    alpha = ember.tensor([0.3, 1.5, 12.0], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    sample = ember._standard_gamma(alpha)
    assert sample.grad_fn.name() == "StandardGammaBackward0"
    sample.sum().backward()
    expected = torch._standard_gamma_grad(torch.tensor(alpha.detach().numpy()), torch.tensor(sample.detach().numpy()))
    assert_close(alpha.grad, expected)


def test_sample_statistics():
    ember.manual_seed(0)
    alpha = ember.tensor([0.5, 4.0]).expand(20000, 2)
    gamma = ember._standard_gamma(alpha).numpy()
    np.testing.assert_allclose(gamma.mean(0), [0.5, 4.0], rtol=0.05)
    dirichlet = ember._sample_dirichlet(ember.tensor([1.0, 2.0, 3.0]).expand(20000, 3)).numpy()
    np.testing.assert_allclose(dirichlet.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(dirichlet.mean(0), [1 / 6, 2 / 6, 3 / 6], atol=0.01)
    counts = ember.binomial(ember.full((20000,), 10.0), ember.full((20000,), 0.3)).numpy()
    assert abs(counts.mean() - 3.0) < 0.05 and counts.dtype == np.float32


def test_errors_match_torch():
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="\"gamma_cpu\" not implemented for 'Long'"):
            lib._standard_gamma(lib.tensor([1, 2]))
        with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for count, got: Long"):
            lib.binomial(lib.tensor([1, 2]), lib.tensor([0.1, 0.2]))


def test_meta_and_broadcast_shapes():
    assert tuple(ember.binomial(ember.ones(2, 1), ember.full((3,), 0.5)).shape) == (2, 3)
    meta = ember._standard_gamma(ember.ones(2, 3, device="meta"))
    assert meta.device.type == "meta" and tuple(meta.shape) == (2, 3)
