"""Distributions built the same way in torch and ember, from the same float64 parameters, for parity tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

import ember

RNG = np.random.default_rng(1234)


def positive(*shape):
    return RNG.uniform(0.5, 2.5, shape)


def real(*shape):
    return RNG.normal(0.0, 1.0, shape)


def unit(*shape):
    return RNG.uniform(0.1, 0.9, shape)


def simplex(*shape):
    values = RNG.uniform(0.2, 1.0, shape)
    return values / values.sum(-1, keepdims=True)


def spd(n, batch=()):
    a = RNG.normal(size=batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def lower(n, batch=()):
    return np.linalg.cholesky(spd(n, batch))


@dataclass
class Case:
    """name: test id; build(lib, **params) -> distribution; params: float64 arrays (differentiable unless listed)."""

    name: str
    build: object
    params: dict
    constant: tuple = ()
    kl_others: list = field(default_factory=list)

    def make(self, lib, requires_grad: bool = True):
        """(distribution, {name: leaf tensor}) in torch or ember."""
        tensors = {}
        for key, value in self.params.items():
            if isinstance(value, np.ndarray):
                differentiable = requires_grad and key not in self.constant
                tensors[key] = lib.tensor(value, dtype=lib.float64, requires_grad=differentiable)
            else:
                tensors[key] = value
        return self.build(lib, **tensors), tensors


def D(lib):
    return lib.distributions


CASES = [
    Case("Normal", lambda lib, loc, scale: D(lib).Normal(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("LogNormal", lambda lib, loc, scale: D(lib).LogNormal(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("Uniform", lambda lib, low, width: D(lib).Uniform(low, low + width), {"low": real(3), "width": positive(3)}),
    Case("Bernoulli_probs", lambda lib, p: D(lib).Bernoulli(probs=p), {"p": unit(3)}),
    Case("Bernoulli_logits", lambda lib, logits: D(lib).Bernoulli(logits=logits), {"logits": real(3)}),
    Case("Binomial", lambda lib, p: D(lib).Binomial(10, probs=p), {"p": unit(3)}),
    Case("Binomial_logits", lambda lib, n, logits: D(lib).Binomial(n, logits=logits),
         {"n": np.array([3.0, 5.0, 8.0]), "logits": real(3)}, constant=("n",)),
    Case("Categorical_probs", lambda lib, p: D(lib).Categorical(probs=p), {"p": simplex(2, 4)}),
    Case("Categorical_logits", lambda lib, logits: D(lib).Categorical(logits=logits), {"logits": real(2, 4)}),
    Case("OneHotCategorical", lambda lib, p: D(lib).OneHotCategorical(probs=p), {"p": simplex(2, 3)}),
    Case("Multinomial", lambda lib, p: D(lib).Multinomial(6, probs=p), {"p": simplex(2, 3)}),
    Case("Beta", lambda lib, a, b: D(lib).Beta(a, b), {"a": positive(3), "b": positive(3)}),
    Case("Gamma", lambda lib, a, rate: D(lib).Gamma(a, rate), {"a": positive(3), "rate": positive(3)}),
    Case("Chi2", lambda lib, df: D(lib).Chi2(df), {"df": positive(3) + 2}),
    Case("Dirichlet", lambda lib, c: D(lib).Dirichlet(c), {"c": positive(2, 3)}),
    Case("Exponential", lambda lib, rate: D(lib).Exponential(rate), {"rate": positive(3)}),
    Case("Laplace", lambda lib, loc, scale: D(lib).Laplace(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("Cauchy", lambda lib, loc, scale: D(lib).Cauchy(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("Poisson", lambda lib, rate: D(lib).Poisson(rate), {"rate": positive(3) * 2}),
    Case("Geometric", lambda lib, p: D(lib).Geometric(probs=p), {"p": unit(3)}),
    Case("Geometric_logits", lambda lib, logits: D(lib).Geometric(logits=logits), {"logits": real(3)}),
    Case("StudentT", lambda lib, df, loc, scale: D(lib).StudentT(df, loc, scale),
         {"df": positive(3) + 2, "loc": real(3), "scale": positive(3)}),
    Case("HalfNormal", lambda lib, scale: D(lib).HalfNormal(scale), {"scale": positive(3)}),
    Case("HalfCauchy", lambda lib, scale: D(lib).HalfCauchy(scale), {"scale": positive(3)}),
    Case("MultivariateNormal_cov", lambda lib, loc, cov: D(lib).MultivariateNormal(loc, covariance_matrix=cov),
         {"loc": real(2, 3), "cov": spd(3)}),
    Case("MultivariateNormal_precision", lambda lib, loc, prec: D(lib).MultivariateNormal(loc, precision_matrix=prec),
         {"loc": real(3), "prec": spd(3, (2,))}),
    Case("MultivariateNormal_tril", lambda lib, loc, tril: D(lib).MultivariateNormal(loc, scale_tril=tril),
         {"loc": real(2, 3), "tril": lower(3, (2,))}),
    Case("LowRankMultivariateNormal",
         lambda lib, loc, factor, diag: D(lib).LowRankMultivariateNormal(loc, factor, diag),
         {"loc": real(2, 3), "factor": real(2, 3, 2), "diag": positive(2, 3)}),
    Case("Independent", lambda lib, loc, scale: D(lib).Independent(D(lib).Normal(loc, scale), 1),
         {"loc": real(2, 3), "scale": positive(2, 3)}),
    Case("MixtureSameFamily",
         lambda lib, logits, loc, scale: D(lib).MixtureSameFamily(D(lib).Categorical(logits=logits),
                                                                  D(lib).Normal(loc, scale)),
         {"logits": real(2, 3), "loc": real(2, 3), "scale": positive(2, 3)}),
    Case("TransformedDistribution",
         lambda lib, loc, scale, shift: D(lib).TransformedDistribution(
             D(lib).Normal(loc, scale), [D(lib).transforms.ExpTransform(),
                                         D(lib).transforms.AffineTransform(shift, 2.0)]),
         {"loc": real(3), "scale": positive(3), "shift": real(3)}),
    Case("RelaxedBernoulli", lambda lib, t, p: D(lib).RelaxedBernoulli(t, probs=p),
         {"t": np.array(0.7), "p": unit(3)}),
    Case("RelaxedOneHotCategorical", lambda lib, t, p: D(lib).RelaxedOneHotCategorical(t, probs=p),
         {"t": np.array(0.7), "p": simplex(2, 3)}),
    Case("Gumbel", lambda lib, loc, scale: D(lib).Gumbel(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("VonMises", lambda lib, loc, c: D(lib).VonMises(loc, c), {"loc": real(3), "c": positive(3)}),
    Case("Pareto", lambda lib, scale, alpha: D(lib).Pareto(scale, alpha), {"scale": positive(3), "alpha": positive(3) + 2}),
    Case("Weibull", lambda lib, scale, c: D(lib).Weibull(scale, c), {"scale": positive(3), "c": positive(3)}),
    Case("Kumaraswamy", lambda lib, a, b: D(lib).Kumaraswamy(a, b), {"a": positive(3), "b": positive(3)}),
    Case("FisherSnedecor", lambda lib, d1, d2: D(lib).FisherSnedecor(d1, d2), {"d1": positive(3) + 3, "d2": positive(3) + 5}),
    Case("InverseGamma", lambda lib, a, rate: D(lib).InverseGamma(a, rate), {"a": positive(3) + 2, "rate": positive(3)}),
    Case("NegativeBinomial", lambda lib, p: D(lib).NegativeBinomial(4.0, probs=p), {"p": unit(3)}),
    Case("ContinuousBernoulli", lambda lib, p: D(lib).ContinuousBernoulli(probs=p), {"p": unit(3)}),
    Case("LogisticNormal", lambda lib, loc, scale: D(lib).LogisticNormal(loc, scale), {"loc": real(3), "scale": positive(3)}),
    Case("GeneralizedPareto", lambda lib, loc, scale, c: D(lib).GeneralizedPareto(loc, scale, c),
         {"loc": real(3), "scale": positive(3), "c": RNG.uniform(0.05, 0.3, 3)}),
]

CASE_IDS = [case.name for case in CASES]


def to_ember(value):
    """A torch tensor (or nested tuple) as an ember float64/int tensor with the same values."""
    if isinstance(value, torch.Tensor):
        return ember.tensor(value.detach().numpy())
    return value


def to_numpy(value):
    if isinstance(value, ember.Tensor):
        return value.detach().numpy()
    return value.detach().numpy()
