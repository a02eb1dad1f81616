"""ember's generators are torch's CPU generator: under the same seed every sampler draws torch's numbers.

Each check runs the same expression under torch and under ember after the same `manual_seed`, and compares
the values (bit for bit: integers, uniforms, permutations, bernoulli, float32/half/bfloat16 normals ...; to
an ulp where torch uses libm on doubles) and then the generator states, byte for byte, so the streams also
continue together (NOTE [ Random streams ] in ember/_ops/random.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _numpy(value):
    if hasattr(value, "detach"):
        value = value.detach()
        if "bfloat16" in str(value.dtype):
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _draw(module, source: str, seed: int):
    module.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = eval(source, {"torch": module, "F": module.nn.functional})
    values = result if isinstance(result, (tuple, list)) else (result,)
    return [_numpy(v) for v in values], module.get_rng_state().numpy()


def _check(source: str, seed: int = 0, rtol: float = 0.0) -> None:
    """ember's values and final generator state equal torch's (values within rtol when it is not 0)."""
    expected, expected_state = _draw(torch, source, seed)
    actual, actual_state = _draw(ember, source, seed)
    assert len(actual) == len(expected), source
    for a, e in zip(actual, expected):
        assert a.shape == e.shape and a.dtype.kind == e.dtype.kind, (source, a.dtype, e.dtype, a.shape, e.shape)
        if rtol:
            np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol, err_msg=source)
        else:
            np.testing.assert_array_equal(a, e, err_msg=source)
    np.testing.assert_array_equal(actual_state, expected_state, err_msg=f"generator state after {source}")


# ---------------------------------------------------------------- the generator's state


@pytest.mark.parametrize("seed", [0, 1, 42, 2**32 + 5, 2**63 + 11, 2**64 - 1, -7])
def test_seeded_state_is_torchs(seed):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ember.initial_seed() == torch.initial_seed()
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())
    assert ember.get_rng_state().shape == (5056,) and ember.get_rng_state().dtype == ember.uint8


def test_fresh_generator_state_is_torchs():
    np.testing.assert_array_equal(ember.Generator().get_state().numpy(), torch.Generator().get_state().numpy())
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721


@pytest.mark.parametrize("source", ["torch.rand(624)", "torch.rand(625)", "torch.randn(3)", "torch.randn(3, dtype=torch.float64)",
                                    "(torch.randn(1), torch.rand(700))", "torch.randint(0, 2**40, (5,))"])
def test_state_after_draws_is_torchs(source):
    """Position, `left`/`next`, the cached double normal: every byte of CPUGeneratorImplState."""
    _check(source, seed=3)


def test_state_moves_between_ember_and_torch():
    torch.manual_seed(5)
    torch.randn(3)  # a cached second Box-Muller sample travels in the state too
    ember.set_rng_state(ember.tensor(torch.get_rng_state().numpy()))
    np.testing.assert_array_equal(ember.randn(5).numpy(), torch.randn(5).numpy())
    np.testing.assert_array_equal(ember.rand(700).numpy(), torch.rand(700).numpy())

    ember.manual_seed(9)
    ember.randn(7)
    torch.set_rng_state(torch.from_numpy(ember.get_rng_state().numpy().copy()))
    np.testing.assert_array_equal(ember.randint(0, 100, (9,)).numpy(), torch.randint(0, 100, (9,)).numpy())
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), torch.get_rng_state().numpy())


def test_explicit_generator_state_round_trip():
    theirs = torch.Generator().manual_seed(77)
    torch.rand(5, generator=theirs)
    ours = ember.Generator().set_state(ember.tensor(theirs.get_state().numpy()))
    assert ours.initial_seed() == theirs.initial_seed() == 77
    np.testing.assert_array_equal(ember.rand(4, generator=ours).numpy(), torch.rand(4, generator=theirs).numpy())
    saved = ours.get_state()
    first = ember.randn(20, generator=ours).numpy()
    np.testing.assert_array_equal(ember.randn(20, generator=ours.set_state(saved)).numpy(), first)


@pytest.mark.parametrize("state", ["torch.zeros(5056, dtype=torch.uint8)", "torch.zeros(10, dtype=torch.uint8)",
                                   "torch.zeros(5056)", "[1, 2]", "torch.zeros(10112, dtype=torch.uint8)[::2]"])
def test_set_state_errors_are_torchs(state):
    errors = []
    for module in (torch, ember):
        with pytest.raises(Exception) as info:
            module.set_rng_state(eval(state, {"torch": module}))
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]) and str(errors[1]) == str(errors[0])


# ---------------------------------------------------------------- samplers


UNIFORM = [
    "torch.rand(5)", "torch.rand(3, 17, dtype=torch.float64)", "torch.rand(100, dtype=torch.float16)",
    "torch.rand(100, dtype=torch.bfloat16)", "torch.rand(4, dtype=torch.complex64)", "torch.rand_like(torch.empty(3, 4))",
    "torch.empty(100003).uniform_(-3.7, 11.3)", "torch.empty(1000, dtype=torch.float64).uniform_(-0.1, 0.3)",
    "torch.empty(1000, dtype=torch.half).uniform_(1, 2)", "torch.empty(1000, dtype=torch.bfloat16).uniform_(-100, 100)",
    "torch.empty(8, 7).t().uniform_()",
]
NORMAL = [f"torch.randn({n}, dtype=torch.{dtype})" for n in (1, 3, 15, 16, 17, 32, 33, 1000)
          for dtype in ("float32", "float16", "bfloat16")] + [
    "torch.randn(7, dtype=torch.float64)", "torch.randn(16, dtype=torch.float64)", "torch.randn(40, dtype=torch.float64)",
    "torch.randn(100003)", "torch.randn(4, dtype=torch.complex64)", "torch.randn(40, dtype=torch.complex128)",
    "torch.randn_like(torch.empty(3, 4))", "torch.empty(100).normal_(0.5, 2)", "torch.empty(7).normal_(-5, 0.01)",
    "torch.empty(8, 7).t().normal_()", "torch.empty(2, 8, 7).transpose(0, 2).normal_()",
    "torch.empty(8, 7)[:, ::2].normal_(2, 3)", "torch.empty(8, 7, dtype=torch.complex64).t().normal_()",
    "torch.normal(torch.zeros(5), 2.0)", "torch.normal(torch.zeros(20), 2.0)", "torch.normal(1.5, torch.ones(20) * 3)",
    "torch.normal(torch.arange(20.), torch.arange(20.) / 7)", "torch.normal(torch.zeros(3), torch.ones(3, dtype=torch.float64))",
    "torch.normal(2., 3., (4, 5))", "torch.normal(torch.zeros(2, 1), torch.ones(3))",
    "(torch.randn(3), torch.randn(20), torch.randn(1))",
    "(torch.rand(3), torch.randn(3), torch.randint(0, 10, (5,)), torch.randn(5))",
    "(torch.randn(1), torch.empty(3).log_normal_(), torch.randn(1))",
]
INTEGERS = [
    "torch.randint(0, 10, (20,))", "torch.randint(-5, 2**40, (20,))", "torch.randint(3, (4, 4), dtype=torch.int32)",
    "torch.randint(0, 2, (9,), dtype=torch.bool)", "torch.randint(0, 300, (9,), dtype=torch.float32)",
    "torch.randint(-100, 100, (9,), dtype=torch.int8)", "torch.randint(0, 2**28, (9,))", "torch.randint(0, 2**28 - 1, (9,))",
    "torch.randint(-2**63, 2**63 - 1, (9,))", "torch.randint_like(torch.empty(3, 4), 10)",
    "torch.empty(10, dtype=torch.int64).random_()", "torch.empty(10, dtype=torch.int32).random_()",
    "torch.empty(10, dtype=torch.int32).random_(0, None)", "torch.empty(10, dtype=torch.float32).random_()",
    "torch.empty(10, dtype=torch.float64).random_()", "torch.empty(10, dtype=torch.half).random_()",
    "torch.empty(10, dtype=torch.bfloat16).random_()", "torch.empty(10, dtype=torch.bool).random_()",
    "torch.empty(10, dtype=torch.uint8).random_()", "torch.empty(10, dtype=torch.int16).random_(5)",
    "torch.empty(10, dtype=torch.int64).random_(-2**63, None)", "torch.empty(10, dtype=torch.float32).random_(-2**63, None)",
    "torch.empty(10, dtype=torch.float64).random_(-7, None)", "torch.empty(10).random_(2**25 + 1, 2**26 + 3)",
    "torch.empty(6, 5, dtype=torch.int64).t().random_(0, 1000)",
]
PERMUTATIONS = [f"torch.randperm({n})" for n in (0, 1, 2, 3, 10, 1000, 4097, 100003)] + [
    "torch.randperm(1000, dtype=torch.int32)", "torch.randperm(50, dtype=torch.float32)",
]
BERNOULLI = [
    "torch.bernoulli(torch.full((20,), 0.3))", "torch.bernoulli(torch.full((20,), 0.3, dtype=torch.float64))",
    "torch.bernoulli(torch.rand(4, 5).half())", "torch.bernoulli(torch.rand(5, 4).t())",
    "torch.bernoulli(torch.full((4, 5), 0.3), 0.7)", "torch.empty(3, 7).bernoulli_(0.25)",
    "torch.empty(3, 7, dtype=torch.bool).bernoulli_(0.25)", "torch.empty(3, 7).bernoulli_(torch.full((7,), 0.5))",
    "torch.empty(8, 7).t().bernoulli_(0.5)",
    "F.dropout(torch.ones(50), 0.3)", "F.dropout(torch.randn(5, 10), 0.5)", "F.dropout(torch.ones(50, dtype=torch.float64), 0.1)",
    "F.dropout(torch.ones(50, dtype=torch.half), 0.1)", "F.dropout2d(torch.ones(2, 3, 4, 4), 0.4)",
    "F.dropout1d(torch.ones(2, 3, 4), 0.4)", "F.alpha_dropout(torch.randn(50), 0.3, True)",
    "F.feature_alpha_dropout(torch.randn(2, 3, 4), 0.3, True)", "torch.dropout(torch.ones(20), 0.2, True)",
    "torch.native_dropout(torch.ones(20), 0.2, True)", "torch.nn.Dropout(0.25)(torch.randn(6, 9))",
]
OTHERS = [
    "torch.multinomial(torch.tensor([0.1, 0.2, 0.7]), 1)", "torch.multinomial(torch.rand(4, 10), 5)",
    "torch.multinomial(torch.rand(4, 10), 7, True)", "torch.multinomial(torch.rand(10, dtype=torch.float64), 10)",
    "torch.multinomial(torch.rand(3, 6), 1, True)", "torch.multinomial(torch.tensor([0., 1., 2., 0.]), 4)",
    "torch.multinomial(torch.rand(3, 6).half(), 20, True)",
    "torch.empty(20).exponential_()", "torch.empty(20, dtype=torch.float64).exponential_(2.5)",
    "torch.empty(20, dtype=torch.half).exponential_()", "torch.empty(20).geometric_(0.3)",
    "torch.empty(20, dtype=torch.int64).geometric_(0.3)", "torch.empty(20).cauchy_()",
    "torch.empty(20, dtype=torch.float64).cauchy_(1.5, 2.)", "torch.empty(20).log_normal_()",
]


@pytest.mark.parametrize("source", UNIFORM + NORMAL + INTEGERS + PERMUTATIONS + BERNOULLI + OTHERS)
def test_sampler_draws_torchs_values(source):
    _check(source)


@pytest.mark.parametrize("source", ["torch.randn(100003, dtype=torch.float64)",
                                    "torch.empty(10000, dtype=torch.float64).normal_(1, 3)",
                                    "torch.empty(1000, dtype=torch.float64).exponential_()",
                                    "torch.empty(1000, dtype=torch.float64).log_normal_()"])
def test_large_double_transcendentals_agree_to_an_ulp(source):
    """Large float64 fills take NumPy's log/cos/sin/exp, not glibc's: an ulp apart at most, the same stream."""
    _check(source, rtol=1e-14)


def test_explicit_generators_are_independent_streams():
    ours = ember.Generator().manual_seed(123)
    theirs = torch.Generator().manual_seed(123)
    ember.manual_seed(0)
    torch.manual_seed(0)
    for draw in ("rand(3, generator=g)", "randn(20, generator=g)", "randint(0, 9, (4,), generator=g)",
                 "randperm(30, generator=g)", "rand(2)", "multinomial(rand(5), 3, generator=g)"):
        a = eval(draw, {"g": ours, "rand": ember.rand, "randn": ember.randn, "randint": ember.randint,
                        "randperm": ember.randperm, "multinomial": ember.multinomial})
        b = eval(draw, {"g": theirs, "rand": torch.rand, "randn": torch.randn, "randint": torch.randint,
                        "randperm": torch.randperm, "multinomial": torch.multinomial})
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=draw)
    np.testing.assert_array_equal(ours.get_state().numpy(), theirs.get_state().numpy())


def test_fork_rng_restores_torchs_stream():
    ember.manual_seed(1)
    torch.manual_seed(1)
    with ember.random.fork_rng():
        ember.randn(10)
    np.testing.assert_array_equal(ember.randn(10).numpy(), torch.randn(10).numpy())


# ---------------------------------------------------------------- what is built on them


@pytest.mark.parametrize("source", [
    "torch.nn.Linear(20, 30)", "torch.nn.Linear(20, 30, dtype=torch.float64)", "torch.nn.Conv2d(3, 8, 3)",
    "torch.nn.Conv1d(3, 8, 5)", "torch.nn.ConvTranspose2d(4, 6, 3)", "torch.nn.Embedding(100, 16)",
    "torch.nn.LSTM(10, 20, 2)", "torch.nn.GRU(8, 16)", "torch.nn.MultiheadAttention(16, 4)",
    "torch.nn.TransformerEncoderLayer(16, 4, 32)", "torch.nn.Bilinear(3, 4, 5)",
])
def test_module_initialisation_is_torchs(source):
    """Default initialisation under manual_seed gives torch's parameters."""
    _check(f"list({source}.parameters())")


@pytest.mark.parametrize("source", [
    "torch.nn.init.xavier_uniform_(torch.empty(5, 7))", "torch.nn.init.xavier_normal_(torch.empty(5, 7))",
    "torch.nn.init.kaiming_normal_(torch.empty(50, 7))", "torch.nn.init.kaiming_uniform_(torch.empty(5, 7), a=0.1)",
    "torch.nn.init.trunc_normal_(torch.empty(50, 7))", "torch.nn.init.sparse_(torch.empty(6, 7), 0.3)",
    "torch.nn.init.uniform_(torch.empty(5, 7), -2, 3)", "torch.nn.init.normal_(torch.empty(50, 7), 1, 2)",
])
def test_init_functions_are_torchs(source):
    _check(source)


def _epochs(module, **loader):
    data = module.utils.data.DataLoader(list(range(23)), batch_size=5, **loader)
    return [batch.tolist() for _ in range(2) for batch in data]


def test_dataloader_shuffle_order_is_torchs():
    for module in (torch, ember):
        module.manual_seed(0)
    assert _epochs(ember, shuffle=True) == _epochs(torch, shuffle=True)
    ours = _epochs(ember, shuffle=True, generator=ember.Generator().manual_seed(5))
    assert ours == _epochs(torch, shuffle=True, generator=torch.Generator().manual_seed(5))


@pytest.mark.parametrize("source", [
    "list(torch.utils.data.RandomSampler(range(10), num_samples=25))",
    "list(torch.utils.data.RandomSampler(range(50), replacement=True, num_samples=70))",
    "list(torch.utils.data.RandomSampler(range(50), generator=torch.Generator().manual_seed(3)))",
    "list(torch.utils.data.SubsetRandomSampler([3, 9, 12, 40, 41]))",
    "list(torch.utils.data.SubsetRandomSampler([3, 9, 12, 40], generator=torch.Generator().manual_seed(8)))",
    "list(torch.utils.data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 12))",
    "list(torch.utils.data.WeightedRandomSampler([0.1, 0.9, 0.4, 0.3], 3, replacement=False))",
    "[list(s) for s in torch.utils.data.random_split(range(30), [10, 15, 5], generator=torch.Generator().manual_seed(42))]",
    "[list(s) for s in torch.utils.data.random_split(range(30), [0.3, 0.7])]",
    "list(torch.utils.data.DistributedSampler(range(20), num_replicas=2, rank=1, shuffle=True, seed=3))",
])
def test_samplers_draw_torchs_indices(source):
    results = []
    for module in (torch, ember):
        module.manual_seed(0)
        results.append(eval(source, {"torch": module}))
    assert results[0] == results[1]


@pytest.mark.parametrize("source", ["torch.randn(100_003)", "torch.empty(70_000).normal_(0.5, 3.0)",
                                    "torch.randn(4096 * 3, dtype=torch.bfloat16)"])
def test_large_float_normals_through_the_native_fill_are_torchs(source):
    """Large float32 fills run the C version of the AVX2 fill (_FILL16_C): still torch's bits."""
    _check(source)


def test_native_and_numpy_normal_fills_agree_bit_for_bit():
    from ember._ops import _rng_kernels

    native = _rng_kernels._native_fill16()
    if native is None:
        pytest.skip("no C compiler: only the NumPy fill runs")
    data = np.random.default_rng(0).random(1 << 16).astype(np.float32)
    data[:6] = [0.0, 1e-38, 1e-45, 0.5, 0.99999994, 0.25]  # denormal and edge uniforms
    for mean, std in ((0.0, 1.0), (0.3, 2.5), (-1.0, 1e-3)):
        expected = _rng_kernels._fill16_avx2(data.copy(), np.float32(mean), np.float32(std))
        got = data.copy()
        native(got.ctypes.data, got.size // 16, float(np.float32(mean)), float(np.float32(std)),
               int(mean == 0 and std == 1))
        np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("n", [4096, 50_000])
def test_randperm_large_swaps_in_c_and_resolved_vectorised(n, native, monkeypatch):
    """Large permutations run torch's swaps in C; without a compiler the vectorised resolution gives the same."""
    from ember._ops import _rng_kernels

    if not native:
        monkeypatch.setattr(_rng_kernels, "_native_swaps", lambda: None)
    torch.manual_seed(9)
    ember.manual_seed(9)
    assert np.array_equal(ember.randperm(n).numpy(), torch.randperm(n).numpy())
    assert np.array_equal(ember.rand(3).numpy(), torch.rand(3).numpy())
