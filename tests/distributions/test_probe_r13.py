"""Probe round 13: distributions against torch at edge parameters."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def test_chi2_cdf_large_df():
    # Chi2/Gamma cdf is igamma: for a large shape next to x torch uses the uniform asymptotic expansion, where
    # the power series has not converged after its iteration cap (0.4978 for 0.5002 here)
    df = np.array([1e-3, 1.0, 2.0, 1e6])
    x = np.array([1e-3, 1.0, 2.0, 1e6])
    expected = torch.distributions.Chi2(torch.tensor(df)).cdf(torch.tensor(x)).numpy()
    actual = ember.distributions.Chi2(ember.tensor(df)).cdf(ember.tensor(x)).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_igamma_asymptotic_regime(name):
    # both of torch's asymptotic windows: 20 < a < 200 with |x - a| / a < 0.3, and a > 200 with
    # |x - a| / a < 4.5 / sqrt(a); and points just outside them
    a = np.array([21.0, 50.0, 150.0, 199.0, 201.0, 1e3, 1e4, 1e5, 5e5, 1e6, 1e8, 30.0, 25.0, 1e4, 300.0])
    x = np.array([21.0, 60.0, 140.0, 199.0, 201.5, 1.05e3, 1e4 + 50, 1e5, 5e5 + 1e3, 1e6 - 500, 1e8 + 1e3, 39.9,
                  18.0, 1.1e4, 240.0])
    expected = getattr(torch, name)(torch.tensor(a), torch.tensor(x)).numpy()
    actual = getattr(ember, name)(ember.tensor(a), ember.tensor(x)).numpy()
    np.testing.assert_allclose(actual, expected, rtol=1e-13, atol=1e-300)


def test_gamma_cdf_large_concentration():
    concentration = np.array([1e5, 4e5, 2e3])
    rate = np.array([1e5, 2.0, 1.0])
    value = np.array([1.0, 2e5 + 300.0, 2e3 - 40.0])
    expected = torch.distributions.Gamma(torch.tensor(concentration), torch.tensor(rate)).cdf(torch.tensor(value))
    actual = ember.distributions.Gamma(ember.tensor(concentration), ember.tensor(rate)).cdf(ember.tensor(value))
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-12)
