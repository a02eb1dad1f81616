"""Sampling: statistics of 20k seeded draws, and rsample gradients against torch given the same draw."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from ._cases import CASES
from .test_parity import GivenGamma, assert_close, assert_grads_match

BY_NAME = {case.name: case for case in CASES}
HEAVY_TAILED = {"Cauchy", "HalfCauchy", "StudentT", "Pareto", "FisherSnedecor", "InverseGamma", "LogisticNormal",
                "GeneralizedPareto", "RelaxedBernoulli", "RelaxedOneHotCategorical", "LogNormal",
                "VonMises"}  # VonMises: a circular mean is not the mean of the angles
STATISTIC_CASES = [case for case in CASES if case.name not in HEAVY_TAILED]


@pytest.mark.parametrize("case", STATISTIC_CASES, ids=[c.name for c in STATISTIC_CASES])
def test_sample_mean_and_variance(case):
    dist, _ = case.make(ember, requires_grad=False)
    ember.manual_seed(0)
    samples = dist.sample((20000,)).double().numpy()
    try:
        mean, variance = dist.mean.numpy(), dist.variance.numpy()
    except NotImplementedError:
        pytest.skip("no closed-form mean")
    if not np.isfinite(mean).all():
        pytest.skip("mean undefined (nan), as in torch")
    standard_error = np.sqrt(variance / samples.shape[0])
    assert np.all(np.abs(samples.mean(0) - mean) <= 5 * standard_error + 1e-9), (samples.mean(0), mean)
    np.testing.assert_allclose(samples.var(0), variance, rtol=0.1, atol=1e-9)


def test_samples_are_seeded():
    dist = ember.distributions.Gamma(ember.tensor([0.5, 2.0]), ember.tensor([1.0, 3.0]))
    ember.manual_seed(3)
    first = dist.sample((5,))
    ember.manual_seed(3)
    assert bool((dist.sample((5,)) == first).all())


class _GivenDirichlet(torch.autograd.Function):
    @staticmethod
    def forward(ctx, concentration, sample):
        ctx.save_for_backward(concentration, sample)
        return sample.clone()

    @staticmethod
    def backward(ctx, grad):
        concentration, sample = ctx.saved_tensors
        return torch.distributions.dirichlet._Dirichlet_backward(sample, concentration, grad), None


def _by_inverse_cdf(torch_dist, torch_params, sample):
    return torch_dist.icdf(torch_dist.cdf(torch.tensor(sample)).detach())


def _mvn(torch_dist, torch_params, sample):
    L = torch_dist.scale_tril.detach()
    noise = torch.linalg.solve_triangular(L, (torch.tensor(sample) - torch_dist.loc.detach()).unsqueeze(-1),
                                          upper=False).squeeze(-1)
    return torch_dist.loc + (torch_dist.scale_tril @ noise.unsqueeze(-1)).squeeze(-1)


def _gamma(torch_dist, torch_params, sample):
    rate = torch_dist.rate
    return GivenGamma.apply(torch_dist.concentration, torch.tensor(sample) * rate.detach()) / rate


def _dirichlet(torch_dist, torch_params, sample):
    return _GivenDirichlet.apply(torch_dist.concentration, torch.tensor(sample))


def _beta(torch_dist, torch_params, sample):
    sample = torch.tensor(sample)
    concentration = torch.stack([torch_dist.concentration1, torch_dist.concentration0], -1)
    return _GivenDirichlet.apply(concentration, torch.stack([sample, 1 - sample], -1))[..., 0]


RSAMPLE = [(name, _by_inverse_cdf) for name in ("Normal", "Uniform", "Laplace", "Cauchy", "Exponential", "HalfNormal",
                                                 "HalfCauchy", "LogNormal", "Gumbel", "Weibull", "Pareto",
                                                 "TransformedDistribution")]
RSAMPLE += [("MultivariateNormal_cov", _mvn), ("MultivariateNormal_tril", _mvn), ("MultivariateNormal_precision", _mvn),
            ("Gamma", _gamma), ("Chi2", _gamma), ("Dirichlet", _dirichlet), ("Beta", _beta)]


@pytest.mark.parametrize("name,reconstruct", RSAMPLE, ids=[r[0] for r in RSAMPLE])
def test_rsample_gradients_match_torch_for_the_same_draw(name, reconstruct):
    case = BY_NAME[name]
    torch_dist, torch_params = case.make(torch)
    ember_dist, ember_params = case.make(ember)
    ember.manual_seed(5)
    sample = ember_dist.rsample((4,))
    expected = reconstruct(torch_dist, torch_params, sample.detach().numpy())
    assert_close(sample, expected, rtol=1e-8, atol=1e-9)
    assert_grads_match(expected, torch_params, sample, ember_params, rtol=1e-6, atol=1e-8)
