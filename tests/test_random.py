"""Random numbers: seeding, generator state, distributions (by statistics), dtype/shape/error parity with torch."""

from __future__ import annotations

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

N = 20000  # samples per statistical check


def _run(source: str, module):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(source, {"torch": module, "np": np}), None
    except Exception as error:  # noqa: BLE001 - compared with torch's exception below
        return None, error


def check_meta(source: str, message: bool = True) -> None:
    """Same dtype, shape, device and requires_grad (values are random), or the same error, as torch."""
    expected, expected_error = _run(source, torch)
    actual, actual_error = _run(source, ember)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), (source, actual_error, expected_error)
        if message:
            assert str(actual_error) == str(expected_error), source
        return
    assert str(actual.dtype).replace("ember.", "torch.") == str(expected.dtype), source
    assert tuple(actual.shape) == tuple(expected.shape), source
    assert str(actual.device) == str(expected.device), source
    assert actual.requires_grad == expected.requires_grad, source


def _ks_statistic(samples: np.ndarray, cdf) -> float:
    samples = np.sort(samples.astype(np.float64))
    n = len(samples)
    theoretical = cdf(samples)
    upper = np.arange(1, n + 1) / n - theoretical
    lower = theoretical - np.arange(0, n) / n
    return float(max(upper.max(), lower.max()))


KS_LIMIT = 1.95 / math.sqrt(N)  # 0.1% critical value of the Kolmogorov distribution


def _normal_cdf(x, mean=0.0, std=1.0):
    erf = np.vectorize(math.erf)
    return 0.5 * (1 + erf((x - mean) / (std * math.sqrt(2))))


def _assert_mean(samples, mean, std):
    """Sample mean within 5 standard errors of the expected mean."""
    samples = np.asarray(samples, np.float64).ravel()
    assert abs(samples.mean() - mean) < 5 * std / math.sqrt(samples.size), (samples.mean(), mean)


# ---------------------------------------------------------------- seeding and generator state


def test_manual_seed_reproduces_every_sampler():
    def draw():
        return [ember.rand(5), ember.randn(5), ember.randint(0, 100, (5,)), ember.randperm(7),
                ember.normal(0.0, 1.0, (3,)), ember.bernoulli(ember.full((6,), 0.5)),
                ember.multinomial(ember.ones(10), 4), ember.poisson(ember.full((4,), 3.0)),
                ember.empty(4).uniform_(), ember.empty(4).exponential_(), ember.empty(4).cauchy_()]

    ember.manual_seed(123)
    first = draw()
    ember.manual_seed(123)
    second = draw()
    for a, b in zip(first, second):
        assert a.tolist() == b.tolist()
    assert ember.initial_seed() == 123
    ember.manual_seed(124)
    assert ember.rand(5).tolist() != first[0].tolist()


def test_manual_seed_returns_default_generator_and_wraps_negative():
    assert ember.manual_seed(5) is ember.default_generator
    assert ember.Generator().manual_seed(-1).initial_seed() == 2**64 - 1
    with pytest.raises(RuntimeError, match="manual_seed expected a long, but got float"):
        ember.Generator().manual_seed(1.5)
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        ember.Generator().manual_seed(2**64)


def test_seed_is_random_and_reported():
    first = ember.seed()
    assert ember.initial_seed() == first
    assert ember.seed() != first
    generator = ember.Generator()
    assert generator.initial_seed() == 67280421310721  # torch's seed for a new Generator
    new = generator.seed()
    assert generator.initial_seed() == new and 0 <= new < 2**64


def test_generators_are_independent_and_reproducible():
    g1 = ember.Generator().manual_seed(7)
    g2 = ember.Generator().manual_seed(7)
    ember.manual_seed(0)
    a = ember.rand(4, generator=g1)
    ember.rand(100)
    b = ember.rand(4, generator=g2)
    assert a.tolist() == b.tolist()
    assert g1.device == ember.device("cpu")


def test_generator_state_round_trip():
    generator = ember.Generator().manual_seed(3)
    ember.rand(3, generator=generator)
    state = generator.get_state()
    assert state.dtype is ember.uint8 and state.shape == torch.Generator().get_state().shape
    first = [ember.randn(5, generator=generator).tolist(), ember.randint(10, (4,), generator=generator).tolist()]
    generator.set_state(state)
    second = [ember.randn(5, generator=generator).tolist(), ember.randint(10, (4,), generator=generator).tolist()]
    assert first == second
    assert generator.set_state(state) is generator
    other = ember.Generator().set_state(state)
    assert other.initial_seed() == 3
    assert ember.randn(5, generator=other).tolist() == first[0]


def test_global_rng_state_round_trip():
    state = ember.get_rng_state()
    a = ember.rand(6)
    ember.set_rng_state(state)
    assert ember.rand(6).tolist() == a.tolist()
    assert ember.random.get_rng_state().shape == state.shape


def test_set_state_errors_match_torch():
    for source in ("torch.Generator().set_state(torch.zeros(3, dtype=torch.uint8))",
                   "torch.Generator().set_state(torch.zeros(5056))", "torch.Generator().set_state([1])",
                   "torch.Generator('meta')"):
        expected, expected_error = _run(source, torch)
        actual, actual_error = _run(source, ember)
        assert type(actual_error) is type(expected_error) and str(actual_error) == str(expected_error), source


def test_generator_pickle_and_deepcopy_continue_the_stream():
    generator = ember.Generator().manual_seed(11)
    ember.rand(2, generator=generator)
    for clone in (pickle.loads(pickle.dumps(generator)), copy.deepcopy(generator)):
        assert ember.rand(3, generator=clone).tolist() == ember.rand(3, generator=copy.deepcopy(generator)).tolist()


def test_fork_rng_restores_state():
    ember.manual_seed(1)
    expected = ember.rand(3)
    ember.manual_seed(1)
    with ember.random.fork_rng():
        ember.rand(100)
    assert ember.rand(3).tolist() == expected.tolist()
    ember.manual_seed(1)
    with ember.random.fork_rng(enabled=False):
        ember.rand(100)
    assert ember.rand(3).tolist() != expected.tolist()


def test_random_module_names():
    for name in ("manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "Generator",
                 "default_generator"):
        assert hasattr(ember.random, name), name
    assert ember.random.default_generator is ember.default_generator


def test_meta_device_draws_nothing():
    ember.manual_seed(9)
    expected = ember.rand(3)
    ember.manual_seed(9)
    meta = ember.rand(1000, device="meta")
    ember.empty(10, device="meta").normal_()
    assert meta.is_meta and meta.shape == (1000,)
    assert ember.rand(3).tolist() == expected.tolist()


# ---------------------------------------------------------------- distributions


def _seeded(seed: int = 0):
    return ember.Generator().manual_seed(seed)


def test_rand_uniform_distribution():
    samples = ember.rand(N, generator=_seeded()).numpy()
    assert samples.min() >= 0 and samples.max() < 1
    _assert_mean(samples, 0.5, math.sqrt(1 / 12))
    assert _ks_statistic(samples, lambda x: x) < KS_LIMIT


def test_randn_normal_distribution():
    samples = ember.randn(N, generator=_seeded(1), dtype=ember.float64).numpy()
    _assert_mean(samples, 0.0, 1.0)
    assert abs(samples.std() - 1) < 5 * math.sqrt(0.5 / N)
    assert _ks_statistic(samples, _normal_cdf) < KS_LIMIT


def test_complex_randn_splits_variance():
    samples = ember.randn(N, dtype=ember.complex64, generator=_seeded(2)).numpy()
    assert abs(samples.real.var() - 0.5) < 0.05 and abs(samples.imag.var() - 0.5) < 0.05
    uniform = ember.rand(N, dtype=ember.complex128, generator=_seeded(2)).numpy()
    assert 0 <= uniform.real.min() and uniform.imag.max() < 1


def test_randint_frequencies():
    samples = ember.randint(-3, 4, (N,), generator=_seeded(3)).numpy()
    counts = np.bincount(samples + 3, minlength=7)
    assert samples.min() == -3 and samples.max() == 3
    expected = N / 7
    chi_square = ((counts - expected) ** 2 / expected).sum()
    assert chi_square < 24  # 6 degrees of freedom, p ~ 0.0005


def test_randperm_is_a_permutation():
    permutation = ember.randperm(1000, generator=_seeded(4))
    assert sorted(permutation.tolist()) == list(range(1000))
    assert permutation.tolist() != list(range(1000))


def test_normal_overloads_statistics():
    generator = _seeded(5)
    mean = ember.full((N,), 3.0)
    std = ember.full((N,), 2.0)
    for samples in (ember.normal(mean, std, generator=generator), ember.normal(mean, 2.0, generator=generator),
                    ember.normal(3.0, std, generator=generator), ember.normal(3.0, 2.0, (N,), generator=generator)):
        values = samples.numpy()
        _assert_mean(values, 3.0, 2.0)
        assert _ks_statistic(values, lambda x: _normal_cdf(x, 3.0, 2.0)) < KS_LIMIT
    per_element = ember.normal(ember.tensor([0.0, 100.0]).repeat(N // 2), ember.tensor([1.0, 0.0]).repeat(N // 2))
    assert (per_element.numpy()[1::2] == 100).all()
    _assert_mean(per_element.numpy()[0::2], 0.0, 1.0)


def test_bernoulli_statistics():
    p = ember.rand(N, generator=_seeded(6))
    draws = ember.bernoulli(p, generator=_seeded(7))
    # E[draw - p] = 0 with variance p(1-p)
    difference = (draws - p).numpy()
    _assert_mean(difference, 0.0, 0.5)
    assert set(np.unique(draws.numpy()).tolist()) <= {0.0, 1.0}
    fixed = ember.empty(N, dtype=ember.int64).bernoulli_(0.3, generator=_seeded(8)).numpy()
    _assert_mean(fixed, 0.3, math.sqrt(0.21))
    assert ember.bernoulli(ember.zeros(5), 1.0).tolist() == [1.0] * 5


def test_multinomial_frequencies():
    probabilities = ember.tensor([0.1, 0.2, 0.3, 0.4])
    draws = ember.multinomial(probabilities, N, replacement=True, generator=_seeded(9)).numpy()
    counts = np.bincount(draws, minlength=4)
    expected = N * probabilities.numpy()
    assert ((counts - expected) ** 2 / expected).sum() < 20
    without = ember.multinomial(ember.tensor([[1.0, 1.0, 1.0, 0.0]] * 200), 3, generator=_seeded(10)).numpy()
    assert all(sorted(row) == [0, 1, 2] for row in without.tolist())
    firsts = ember.multinomial(ember.tensor([[8.0, 1.0, 1.0]] * N), 1, generator=_seeded(11)).numpy().ravel()
    _assert_mean(firsts == 0, 0.8, 0.4)
    assert ember.multinomial(ember.tensor([1.0, 0.0]), 2).tolist() == [0, 1]


def test_poisson_exponential_geometric_lognormal_cauchy():
    generator = _seeded(12)
    rates = ember.full((N,), 4.0)
    _assert_mean(ember.poisson(rates, generator).numpy(), 4.0, 2.0)
    exponential = ember.empty(N, dtype=ember.float64).exponential_(2.0, generator=generator).numpy()
    _assert_mean(exponential, 0.5, 0.5)
    assert _ks_statistic(exponential, lambda x: 1 - np.exp(-2 * x)) < KS_LIMIT
    geometric = ember.empty(N).geometric_(0.25, generator=generator).numpy()
    assert geometric.min() == 1
    _assert_mean(geometric, 4.0, math.sqrt(0.75) / 0.25)
    log_normal = ember.empty(N, dtype=ember.float64).log_normal_(1.0, 0.5, generator=generator).numpy()
    _assert_mean(np.log(log_normal), 1.0, 0.5)
    cauchy = ember.empty(N, dtype=ember.float64).cauchy_(2.0, 3.0, generator=generator).numpy()
    assert _ks_statistic(cauchy, lambda x: 0.5 + np.arctan((x - 2.0) / 3.0) / np.pi) < KS_LIMIT


def test_uniform_and_normal_fills():
    generator = _seeded(13)
    uniform = ember.empty(N, dtype=ember.float64).uniform_(-2.0, 6.0, generator=generator).numpy()
    assert uniform.min() >= -2 and uniform.max() < 6
    assert _ks_statistic(uniform, lambda x: (x + 2) / 8) < KS_LIMIT
    normal = ember.empty(N).normal_(-1.0, 0.5, generator=generator).numpy()
    _assert_mean(normal, -1.0, 0.5)
    assert abs(normal.std() - 0.5) < 0.02
    assert ember.zeros(3).uniform_(1, 1).tolist() == [1.0, 1.0, 1.0]
    assert ember.zeros(3).uniform_(**{"from": 2, "to": 3}).min().item() >= 2


def test_random_fill_ranges():
    generator = _seeded(14)
    small = ember.empty(N, dtype=ember.int8).random_(generator=generator).numpy()
    assert small.min() >= 0 and small.max() == 127
    bounded = ember.empty(N).random_(3, 7, generator=generator).numpy()
    assert set(np.unique(bounded).tolist()) == {3.0, 4.0, 5.0, 6.0}
    upper = ember.empty(N, dtype=ember.int64).random_(5, generator=generator).numpy()
    assert set(np.unique(upper).tolist()) == {0, 1, 2, 3, 4}
    floats = ember.empty(N).random_(generator=generator).numpy()
    assert floats.min() >= 0 and floats.max() <= 2**24 and (floats == np.round(floats)).all()
    booleans = ember.empty(N, dtype=ember.bool).random_(generator=generator).numpy()
    _assert_mean(booleans, 0.5, 0.5)
    keyword = ember.empty(100, dtype=ember.int16).random_(**{"from": -5, "to": 5}).numpy()
    assert keyword.min() >= -5 and keyword.max() < 5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_are_float32_draws(dtype):
    ember_dtype = getattr(ember, dtype)
    a = ember.rand(1000, dtype=ember_dtype, generator=_seeded(15))
    b = ember.rand(1000, dtype=ember.float32, generator=_seeded(15))
    assert a.dtype is ember_dtype
    assert a.float().tolist() == b.to(ember_dtype).float().tolist()
    normal = ember.empty(1000, dtype=ember_dtype).normal_(generator=_seeded(16))
    assert normal.dtype is ember_dtype and abs(normal.float().mean().item()) < 0.2


def test_fill_and_zero():
    x = ember.zeros(2, 3)
    assert x.fill_(2.5) is x and x.tolist() == [[2.5] * 3] * 2
    assert ember.zeros(2, dtype=ember.int64).fill_(1.7).tolist() == [1, 1]
    assert ember.zeros(2, dtype=ember.uint8).fill_(-1).tolist() == [255, 255]
    assert ember.zeros(2).fill_(ember.tensor(4, dtype=ember.int64)).tolist() == [4.0, 4.0]
    assert ember.ones(3).zero_().tolist() == [0.0] * 3
    assert ember.fill(ember.zeros(2), 3).tolist() == [3.0, 3.0]
    view = ember.zeros(2, 4)
    view[:, 1].fill_(5)
    assert view.tolist() == [[0, 5, 0, 0], [0, 5, 0, 0]]
    assert ember.zero_(ember.ones(2)).tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- autograd


@pytest.mark.parametrize("method, grad_fn", [
    ("uniform_()", "UniformBackward0"), ("normal_()", "NormalBackward0"), ("random_(0, 5)", "RandomBackward0"),
    ("bernoulli_(0.5)", "BernoulliBackward2"), ("bernoulli_(torch.full((3,), 0.5))", "BernoulliBackward1"),
    ("exponential_()", "ExponentialBackward0"), ("geometric_(0.5)", "GeometricBackward0"),
    ("log_normal_()", "LogNormalBackward0"), ("cauchy_()", "CauchyBackward0"), ("fill_(2.0)", "FillBackward2"),
    ("fill_(torch.tensor(2.0))", "FillBackward3"), ("zero_()", "ZeroBackward0"),
])
def test_inplace_fills_have_zero_gradient(method, grad_fn):
    for module in (torch, ember):
        x = module.ones(3, requires_grad=True)
        y = x * 2
        eval(f"y.{method}", {"torch": module, "y": y})
        assert type(y.grad_fn).__name__ == grad_fn
        y.sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_fill_with_tensor_value_passes_gradient_to_value():
    for module in (torch, ember):
        x = module.ones(3, requires_grad=True)
        value = module.tensor(3.0, requires_grad=True)
        y = (x * 2).fill_(value)
        (y * module.arange(3.0)).sum().backward()
        assert value.grad.item() == 3.0
        assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_sampling_ops_gradients():
    for module in (torch, ember):
        mean = module.zeros(3, requires_grad=True)
        std = module.ones(3, requires_grad=True)
        names = []
        for sample in (module.normal(mean, std), module.normal(mean, 1.0), module.normal(1.0, std)):
            names.append(type(sample.grad_fn).__name__)
            sample.sum().backward()
        assert names == ["NormalBackward3", "NormalBackward1", "NormalBackward2"]
        assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3
        p = module.full((3,), 0.5, requires_grad=True)
        assert type(module.bernoulli(p).grad_fn).__name__ == "BernoulliBackward0"
        assert type(module.poisson(p).grad_fn).__name__ == "PoissonBackward0"
        assert not module.multinomial(p, 2).requires_grad
        leaf = module.rand(3, requires_grad=True)
        assert leaf.is_leaf and leaf.requires_grad


def test_inplace_fill_on_leaf_requiring_grad_errors():
    for source in ("torch.ones(3, requires_grad=True).uniform_()", "torch.ones(3, requires_grad=True).fill_(1)",
                   "torch.ones(3, requires_grad=True).zero_()"):
        check_meta(source)
    x = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        x.normal_()
        x.fill_(1.0)
    assert x.tolist() == [1.0, 1.0, 1.0] and x.requires_grad and x.is_leaf


# ---------------------------------------------------------------- dtypes, shapes and errors like torch

META_CASES = [
    "torch.rand(3)", "torch.rand(2, 3)", "torch.rand((2, 3))", "torch.rand([])", "torch.rand(size=(2,))",
    "torch.rand(2, dtype=torch.float64)", "torch.rand(2, dtype=torch.complex64)", "torch.rand(2, dtype=torch.int64)",
    "torch.rand(2, dtype=torch.bool)", "torch.rand(2, -1)", "torch.rand(2, requires_grad=True)",
    "torch.rand(2, device='meta')", "torch.rand(2, dtype=torch.float16)", "torch.randn(2, dtype=torch.int64)",
    "torch.randn(2, 2, dtype=torch.bfloat16)", "torch.randn(0)", "torch.randn(2, dtype=torch.complex128)",
    "torch.randint(5, (3,))", "torch.randint(2, 5, (3,))", "torch.randint(5, 5, (3,))", "torch.randint(3, 2, (3,))",
    "torch.randint(0, 300, (3,), dtype=torch.uint8)", "torch.randint(-1, 3, (3,), dtype=torch.uint8)",
    "torch.randint(0, 2, (3,), dtype=torch.bool)", "torch.randint(0, 3, (3,), dtype=torch.bool)",
    "torch.randint(0, 3, (3,), dtype=torch.float32)", "torch.randint(0, 3, (3,), dtype=torch.complex64)",
    "torch.randint(3, size=(2,))", "torch.randint(2**70, (3,))", "torch.randint(0, 3, (2, 2), device='meta')",
    "torch.randint(0, 3, (2,), requires_grad=True)", "torch.randint(-200, 3, (2,), dtype=torch.int8)",
    "torch.randperm(5)", "torch.randperm(5, dtype=torch.float32)", "torch.randperm(-1)", "torch.randperm(0)",
    "torch.randperm(300, dtype=torch.uint8)", "torch.randperm(3, dtype=torch.bool)", "torch.randperm(4, device='meta')",
    "torch.normal(torch.zeros(2), -1.0)", "torch.normal(0., -1., (2,))", "torch.normal(torch.zeros(2), torch.ones(3))",
    "torch.normal(torch.zeros(2, 3), torch.ones(3))", "torch.normal(torch.zeros(2, 3), torch.ones(6))",
    "torch.normal(0, 1, (2,))", "torch.normal(torch.zeros(2, dtype=torch.int64), 1.)",
    "torch.normal(torch.zeros(2), torch.tensor(-1.))", "torch.normal(torch.zeros(2, dtype=torch.float64), torch.ones(2))",
    "torch.normal(0., torch.ones(2, dtype=torch.float64))", "torch.normal(torch.zeros(2), torch.tensor([1., -1.]))",
    "torch.normal(0., 1., (2, 3), dtype=torch.float64)", "torch.normal(torch.zeros(2, device='meta'), 1.0)",
    "torch.normal(torch.zeros(2, dtype=torch.float16), 1.0)", "torch.normal(0., 1., (2,), requires_grad=True)",
    "torch.bernoulli(torch.tensor([2.]))", "torch.bernoulli(torch.tensor([1, 0]))", "torch.bernoulli(torch.zeros(3), 2.)",
    "torch.bernoulli(torch.zeros(3), 0.5)", "torch.bernoulli(torch.zeros(3, dtype=torch.int64), 0.5)",
    "torch.bernoulli(torch.full((2, 2), 0.5, dtype=torch.float64))", "torch.zeros(3).bernoulli_(2)",
    "torch.zeros(3, dtype=torch.bool).bernoulli_(torch.tensor([0.5, 1, 0]))", "torch.zeros(3).bernoulli_(torch.ones(2))",
    "torch.zeros(3).bernoulli_(torch.tensor([2., 0, 0]))", "torch.zeros(2, 3).bernoulli()",
    "torch.multinomial(torch.tensor([1., 2.]), 3)", "torch.multinomial(torch.tensor([-1., 2.]), 1)",
    "torch.multinomial(torch.tensor([0., 0.]), 1)", "torch.multinomial(torch.tensor([1., 2.]), 0)",
    "torch.multinomial(torch.ones(2, 2, 2), 1)", "torch.multinomial(torch.tensor(1.), 1)",
    "torch.multinomial(torch.tensor([1, 2]), 1)", "torch.multinomial(torch.tensor([1., float('inf')]), 1)",
    "torch.multinomial(torch.tensor([1., float('nan')]), 1)", "torch.multinomial(torch.tensor([0., 0.]), 1, True)",
    "torch.multinomial(torch.tensor([1., 1.]), 3, True)", "torch.multinomial(torch.ones(3, 4), 2)",
    "torch.multinomial(torch.tensor([1., 1.]), -1)", "torch.multinomial(torch.ones(4, dtype=torch.float64), 4)",
    "torch.ones(2, 3).multinomial(2, replacement=True)", "torch.multinomial(torch.ones(2, 3, device='meta'), 2)",
    "torch.poisson(torch.tensor([-1.]))", "torch.poisson(torch.tensor([1]))", "torch.poisson(torch.ones(2, 3))",
    "torch.poisson(torch.tensor([1.], dtype=torch.float16))", "torch.zeros(2).exponential_(0)",
    "torch.zeros(2).exponential_(-1)", "torch.zeros(2, dtype=torch.int64).exponential_()", "torch.zeros(2).geometric_(0)",
    "torch.zeros(2).geometric_(1)", "torch.zeros(2, dtype=torch.int64).geometric_(0.5)", "torch.zeros(2).log_normal_(1, 0)",
    "torch.zeros(2).log_normal_(1, -1)", "torch.zeros(2, dtype=torch.int64).log_normal_()", "torch.zeros(2).cauchy_(0, 0)",
    "torch.zeros(2, dtype=torch.int64).cauchy_()", "torch.zeros(2).uniform_(2, 1)", "torch.zeros(2).uniform_(1, 1)",
    "torch.zeros(2, dtype=torch.int64).uniform_()", "torch.zeros(2, dtype=torch.bool).uniform_()",
    "torch.zeros(2, dtype=torch.complex64).uniform_()", "torch.zeros(2).normal_(0, -1)", "torch.zeros(2).normal_(0, 0)",
    "torch.zeros(2, dtype=torch.int64).normal_()", "torch.zeros(2, dtype=torch.complex64).normal_()",
    "torch.zeros(2).random_(5, 3)", "torch.zeros(2, dtype=torch.uint8).random_(0, 300)",
    "torch.zeros(2, dtype=torch.bool).random_()", "torch.zeros(2, dtype=torch.int8).random_(-200, 3)",
    "torch.zeros(2, dtype=torch.complex64).random_()", "torch.zeros(2, dtype=torch.float16).random_(0, 2**20)",
    "torch.zeros(1, dtype=torch.int64).random_(0, 2**63)", "torch.zeros(2, dtype=torch.int16).random_(0, 2**15)",
    "torch.zeros(2).fill_(torch.tensor([1., 2.]))", "torch.zeros(2, dtype=torch.uint8).fill_(300)",
    "torch.zeros(2, dtype=torch.int8).fill_(1000)", "torch.zeros(2).fill_(1 + 2j)", "torch.zeros(2).fill_('a')",
    "torch.zeros(2, dtype=torch.int64).fill_(float('nan'))", "torch.zeros(2, dtype=torch.uint8).fill_(-300)",
    "torch.zeros(1, dtype=torch.float32).fill_(1e300)", "torch.zeros(1, dtype=torch.float16).fill_(1e300)",
    "torch.zeros(1, dtype=torch.complex64).fill_(1e300)", "torch.zeros(2, dtype=torch.int32).fill_(2**40)",
    "torch.rand_like(torch.zeros(2, dtype=torch.int64))", "torch.rand_like(torch.zeros(2, 3, dtype=torch.float64))",
    "torch.randint_like(torch.zeros(2), 5)", "torch.randint_like(torch.zeros(2), 2, 5)",
    "torch.randn_like(torch.zeros(2), dtype=torch.float64)", "torch.randn_like(torch.zeros(2), requires_grad=True)",
    "torch.rand_like(torch.zeros(2, device='meta'))", "torch.randint_like(torch.zeros(2, dtype=torch.int32), 3)",
    "torch.zeros(2, device='meta').uniform_()", "torch.rand(2, out=torch.empty(0, dtype=torch.float64))",
    "torch.randint(3, (4,), out=torch.empty(0, dtype=torch.int32))",
]


@pytest.mark.parametrize("source", META_CASES)
def test_dtype_shape_and_errors_like_torch(source):
    check_meta(source)


def test_generator_device_mismatch():
    with pytest.raises(RuntimeError, match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ember.rand(2, generator=ember.Generator("cuda"))
    with pytest.raises(TypeError):
        ember.rand(2, generator=5)
