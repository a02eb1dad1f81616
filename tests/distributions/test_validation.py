"""validate_args: torch's ValueError messages for bad parameters and out-of-support values."""

from __future__ import annotations

import pytest
import torch

import ember

BAD_PARAMETERS = [
    ("Normal", lambda lib: (lib.tensor([0.0, 1.0]), lib.tensor([1.0, -1.0])), {}),
    ("Normal", lambda lib: (0.0, -2.0), {}),
    ("Uniform", lambda lib: (lib.tensor(1.0), lib.tensor(0.0)), {}),
    ("Bernoulli", lambda lib: (lib.tensor([0.5, 1.5]),), {}),
    ("Categorical", lambda lib: (lib.tensor([-0.5, 1.5]),), {}),
    ("Gamma", lambda lib: (lib.tensor([-1.0]), lib.tensor([1.0])), {}),
    ("Beta", lambda lib: (lib.tensor([1.0]), lib.tensor([0.0])), {}),
    ("Dirichlet", lambda lib: (lib.tensor([1.0, -1.0]),), {}),
    ("Exponential", lambda lib: (lib.tensor([0.0]),), {}),
    ("Poisson", lambda lib: (lib.tensor([-1.0]),), {}),
    ("Binomial", lambda lib: (lib.tensor([-2.0]), lib.tensor([0.5])), {}),
    ("Geometric", lambda lib: (lib.tensor([0.0]),), {}),
    ("StudentT", lambda lib: (lib.tensor([-1.0]),), {}),
    ("MultivariateNormal", lambda lib: (lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]])), {}),
    ("Laplace", lambda lib: (lib.tensor([0.0]), lib.tensor([0.0])), {}),
]


def _error(build):
    with pytest.raises(Exception) as info:
        build()
    return info.value


@pytest.mark.parametrize("name,arguments,keywords", BAD_PARAMETERS, ids=[b[0] + str(i) for i, b in enumerate(BAD_PARAMETERS)])
def test_bad_parameters(name, arguments, keywords):
    expected = _error(lambda: getattr(torch.distributions, name)(*arguments(torch), validate_args=True, **keywords))
    actual = _error(lambda: getattr(ember.distributions, name)(*arguments(ember), validate_args=True, **keywords))
    assert type(actual) is type(expected)
    assert str(actual).replace("ember", "torch") == str(expected)


OUT_OF_SUPPORT = [
    ("Normal", lambda lib: (0.0, 1.0), lambda lib: lib.tensor(float("nan"))),
    ("Exponential", lambda lib: (lib.tensor([1.0]),), lambda lib: lib.tensor([-1.0])),
    ("Bernoulli", lambda lib: (lib.tensor([0.3]),), lambda lib: lib.tensor([0.5])),
    ("Categorical", lambda lib: (lib.tensor([0.3, 0.7]),), lambda lib: lib.tensor(2)),
    ("Beta", lambda lib: (lib.tensor([1.0]), lib.tensor([2.0])), lambda lib: lib.tensor([1.5])),
    ("Dirichlet", lambda lib: (lib.tensor([1.0, 2.0]),), lambda lib: lib.tensor([0.5, 0.6])),
]


@pytest.mark.parametrize("name,arguments,value", OUT_OF_SUPPORT, ids=[o[0] for o in OUT_OF_SUPPORT])
def test_value_outside_support(name, arguments, value):
    expected = _error(lambda: getattr(torch.distributions, name)(*arguments(torch), validate_args=True)
                      .log_prob(value(torch)))
    actual = _error(lambda: getattr(ember.distributions, name)(*arguments(ember), validate_args=True)
                    .log_prob(value(ember)))
    assert type(actual) is type(expected)
    assert str(actual).replace("ember", "torch") == str(expected)


def test_shape_mismatch_and_value_type():
    for lib in (torch, ember):
        dist = lib.distributions.Normal(lib.zeros(3), lib.ones(3), validate_args=True)
        with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
            lib.distributions.MultivariateNormal(lib.zeros(3), lib.eye(3), validate_args=True).log_prob(lib.zeros(2))
        with pytest.raises(ValueError, match="Value is not broadcastable with batch_shape"):
            dist.log_prob(lib.zeros(2))
        with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
            dist.log_prob(1.0)


def test_validation_off_allows_invalid_parameters():
    dist = ember.distributions.Normal(ember.tensor([0.0]), ember.tensor([-1.0]), validate_args=False)
    assert dist.scale.item() == -1.0
    with pytest.raises(ValueError, match="Expected parameter probs"):
        ember.distributions.Bernoulli(probs=ember.tensor([2.0]), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        ember.distributions.Bernoulli()
