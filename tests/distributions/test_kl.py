"""kl_divergence against torch for every pair torch registers, and register_kl's dispatch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from ._cases import CASES, Case
from .test_parity import assert_close, assert_grads_match

FIRST_CASE = {}
for _case in CASES:
    FIRST_CASE.setdefault(_case.build(torch, **_case.make(torch)[1]).__class__.__name__, _case)


def perturbed(case: Case) -> Case:
    """The same family with other valid parameters: batch entries rolled, unbatched matrices scaled."""
    params = {}
    for key, value in case.params.items():
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            params[key] = value
        elif key in ("cov", "prec", "tril") and value.ndim == 2:
            params[key] = value * 1.5
        elif value.shape[0] > 1:
            params[key] = np.roll(value, 1, axis=0) * (1.2 if key in ("scale", "rate", "a", "b", "c") else 1.0)
        else:
            params[key] = value
    return Case(case.name + "_q", case.build, params, case.constant)


PAIRS = sorted((p.__name__, q.__name__) for p, q in torch.distributions.kl._KL_REGISTRY)
TESTED = [(p, q) for p, q in PAIRS if p in FIRST_CASE and q in FIRST_CASE]


def test_registered_pairs_match_torch():
    ember_pairs = sorted((p.__name__, q.__name__) for p, q in ember.distributions.kl._KL_REGISTRY)
    assert ember_pairs == PAIRS


@pytest.mark.parametrize("pair", TESTED, ids=[f"{p}-{q}" for p, q in TESTED])
def test_kl_divergence(pair):
    case_p, case_q = FIRST_CASE[pair[0]], perturbed(FIRST_CASE[pair[1]])
    torch_p, torch_params = case_p.make(torch)
    torch_q, _ = case_q.make(torch, requires_grad=False)
    try:
        expected = torch.distributions.kl_divergence(torch_p, torch_q)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ember.distributions.kl_divergence(case_p.make(ember)[0], case_q.make(ember, requires_grad=False)[0])
        return
    except (RuntimeError, ValueError) as error:
        pytest.skip(f"torch raises for {pair}: {type(error).__name__} {error}")
    ember_p, ember_params = case_p.make(ember)
    ember_q, _ = case_q.make(ember, requires_grad=False)
    actual = ember.distributions.kl_divergence(ember_p, ember_q)
    assert_close(actual, expected, rtol=1e-8, atol=1e-9)
    if expected.requires_grad and torch.isfinite(expected).all():
        assert_grads_match(expected, torch_params, actual, ember_params, rtol=1e-7, atol=1e-8)


def test_register_kl_and_missing_pair():
    distributions = ember.distributions

    class MyNormal(distributions.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), distributions.Normal(1.0, 2.0)
    assert_close(distributions.kl_divergence(p, q),
                 torch.distributions.kl_divergence(torch.distributions.Normal(0.0, 1.0),
                                                   torch.distributions.Normal(1.0, 2.0)).double(), rtol=1e-6)

    @distributions.register_kl(MyNormal, distributions.Normal)
    def _kl_mine(p, q):
        return ember.tensor(42.0)

    assert float(distributions.kl_divergence(p, q)) == 42.0
    with pytest.raises(NotImplementedError):
        distributions.kl_divergence(distributions.Categorical(ember.ones(3) / 3), distributions.Normal(0.0, 1.0))
