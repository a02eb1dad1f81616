"""torch's rejection samplers (gamma, Dirichlet, Poisson, binomial) draw for draw: after manual_seed ember gives
torch's numbers and leaves the generator in torch's state (ember/_ops/_rng_samplers.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

ALPHAS = [0.05, 0.3, 0.9, 1.0, 1.5, 2.0, 7.3, 30.0, 0.0, 1e-3, 250.0]
RATES = [0.0, 0.5, 3.0, 9.9, 10.0, 25.0, 300.0, 1e4, 1e-3]
COUNTS = [0, 1, 5, 20, 100, 1000, 37, 50, 3, 7, -2, 12]
PROBS = [0.5, 0.3, 0.9, 0.05, 0.5, 0.7, 0.99, 0.2, 1.0, 0.0, 0.4, float("nan")]

CASES = {
    "standard_gamma": lambda lib, d: lib._standard_gamma(lib.tensor(ALPHAS * 3, dtype=d)),
    "standard_gamma_2d_transposed": lambda lib, d: lib._standard_gamma(lib.tensor([ALPHAS[:6]] * 4, dtype=d).t()),
    "poisson": lambda lib, d: lib.poisson(lib.tensor(RATES * 3, dtype=d)),
    "binomial": lambda lib, d: lib.binomial(lib.tensor(COUNTS * 2, dtype=d), lib.tensor(PROBS * 2, dtype=d)),
    "binomial_broadcast": lambda lib, d: lib.binomial(lib.full((3, 4), 40.0, dtype=d), lib.tensor([0.1, 0.5, 0.8, 0.95],
                                                                                                   dtype=d)),
    "dirichlet": lambda lib, d: lib._sample_dirichlet(lib.tensor([[0.5, 1.0, 2.0], [3.0, 0.1, 0.2], [10.0, 20.0, 30.0],
                                                                  [1e-3, 1e-3, 1e-3]], dtype=d)),
    "generator": lambda lib, d: lib._standard_gamma(lib.tensor(ALPHAS, dtype=d),
                                                    generator=lib.Generator().manual_seed(11)),
}

DISTRIBUTIONS = {
    "beta": lambda lib: lib.distributions.Beta(lib.tensor([0.4, 2.0]), lib.tensor([0.4, 5.0])).sample((5,)),
    "gamma_rsample": lambda lib: lib.distributions.Gamma(lib.tensor([2.0, 0.5]), lib.tensor([1.0, 3.0])).rsample((4,)),
    "chi2": lambda lib: lib.distributions.Chi2(lib.tensor([3.0, 0.7])).sample((4,)),
    "student_t": lambda lib: lib.distributions.StudentT(lib.tensor([3.0, 30.0])).sample((4,)),
    "dirichlet": lambda lib: lib.distributions.Dirichlet(lib.tensor([1.0, 2.0, 0.5])).sample((3,)),
    "poisson": lambda lib: lib.distributions.Poisson(lib.tensor([4.0, 40.0])).sample((4,)),
    "binomial": lambda lib: lib.distributions.Binomial(10, lib.tensor([0.3, 0.8])).sample((4,)),
    "fisher_snedecor": lambda lib: lib.distributions.FisherSnedecor(lib.tensor([3.0]), lib.tensor([5.0])).sample((4,)),
    "mixup_lambda": lambda lib: lib.distributions.Beta(lib.tensor(0.2), lib.tensor(0.2)).sample(),
}


def _run(lib, fn, seed):
    lib.manual_seed(seed)
    result = fn(lib)
    return result, lib.rand(4), lib.get_rng_state()  # the state after: the next draws and the state bytes


def _equal(actual, expected) -> bool:
    return np.array_equal(actual.numpy(), expected.numpy(), equal_nan=True)


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_samplers_equal_torchs(name, dtype, seed):
    expected = _run(torch, lambda lib: CASES[name](lib, getattr(lib, dtype)), seed)
    actual = _run(ember, lambda lib: CASES[name](lib, getattr(lib, dtype)), seed)
    assert str(actual[0].dtype).split(".")[-1] == dtype
    assert all(_equal(a, e) for a, e in zip(actual, expected))


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_distribution_samples_equal_torchs(name):
    expected = _run(torch, DISTRIBUTIONS[name], 3)
    actual = _run(ember, DISTRIBUTIONS[name], 3)
    assert all(_equal(a, e) for a, e in zip(actual, expected))


def test_cached_normal_carries_across_calls():
    """A gamma draw that leaves a Box-Muller half in the generator: torch.randn(1, dtype=float64) then uses it."""
    def run(lib):
        lib.manual_seed(5)
        first = lib._standard_gamma(lib.tensor([3.0], dtype=lib.float64))
        return first, lib.randn(3, dtype=lib.float64), lib._standard_gamma(lib.tensor([0.5, 4.0], dtype=lib.float64))

    assert all(_equal(a, e) for a, e in zip(run(ember), run(torch)))


def test_half_dtypes_refused_as_torch():
    for lib in (torch, ember):
        with pytest.raises(NotImplementedError, match="gamma_cpu"):
            lib._standard_gamma(lib.ones(2, dtype=lib.bfloat16))
        with pytest.raises(NotImplementedError, match="binomial_cpu"):
            lib.binomial(lib.ones(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16))
