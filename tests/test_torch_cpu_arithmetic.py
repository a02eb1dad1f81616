"""Ops whose last bits follow torch's CPU kernels (NOTE [ torch's CPU kernel arithmetic ] in ember/_runtime.py):
linspace's fused multiply-add, histc's binning formula, cumsum/cumprod's double accumulation and bincount's
float32 weights, compared bit for bit with real torch."""

from __future__ import annotations

import fractions
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember._ops.creation import fused_multiply_add_float32

torch = pytest.importorskip("torch")


def test_cpu_capability_matches_torch():
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()


def test_fused_multiply_add_rounds_once():
    # a*b + c lands in float64 exactly halfway between two float32 values although the exact sum does not:
    # rounding the float64 sum again would tie to even (1 + 2**-22), the exact value is nearer 1 + 2**-23
    a, b, c = np.float32(1 + 2**-23), np.float32(2**-24 * (1 - 2**-23)), np.float32(1 + 2**-23)
    exact = fractions.Fraction(float(a)) * fractions.Fraction(float(b)) + fractions.Fraction(float(c))
    naive = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    fused = fused_multiply_add_float32(a, b, c)
    assert float(fused) == 1 + 2**-23 != float(naive)
    neighbours = [float(fused), float(np.nextafter(fused, np.float32(2))), float(np.nextafter(fused, np.float32(0)))]
    assert min(neighbours, key=lambda v: abs(fractions.Fraction(v) - exact)) == float(fused)
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal((3, 10000)) * 10.0 ** rng.integers(-8, 8, (3, 10000))).astype(np.float32)
    fused = fused_multiply_add_float32(a, b, c)
    for i in range(0, 10000, 97):  # against exact rational arithmetic, correctly rounded
        exact = fractions.Fraction(float(a[i])) * fractions.Fraction(float(b[i])) + fractions.Fraction(float(c[i]))
        candidates = [fused[i], np.nextafter(fused[i], np.float32(np.inf)), np.nextafter(fused[i], -np.float32(np.inf))]
        assert min(candidates, key=lambda v: abs(fractions.Fraction(float(v)) - exact)) == fused[i]


@pytest.mark.parametrize("steps", [2, 3, 16, 17, 101, 2049, 32769])
def test_linspace_float32_matches_torch_bitwise(steps):
    rng = np.random.default_rng(steps)
    for _ in range(20):
        start, end = (rng.standard_normal(2) * 10.0 ** rng.uniform(-3, 3, 2)).astype(np.float32)
        expected = torch.linspace(torch.tensor(start), torch.tensor(end), steps).numpy()
        np.testing.assert_array_equal(ember.linspace(ember.tensor(start), ember.tensor(end), steps).numpy(), expected)
        expected = torch.linspace(float(start), float(end), steps).numpy()
        np.testing.assert_array_equal(ember.linspace(float(start), float(end), steps).numpy(), expected)


def test_histogram_edges_match_torch_bitwise():
    rng = np.random.default_rng(3)
    for bins in (5, 64, 257):
        values = (rng.standard_normal(1000) * 7).astype(np.float32)
        hist_e, edges_e = ember.histogram(ember.tensor(values), bins)
        hist_t, edges_t = torch.histogram(torch.tensor(values), bins)
        np.testing.assert_array_equal(edges_e.numpy(), edges_t.numpy())
        np.testing.assert_array_equal(hist_e.numpy(), hist_t.numpy())


def _run_under_default_kernels(body: str) -> None:
    """Run `body` in a process where both libraries use torch's DEFAULT (no AVX2) kernels, which round
    a + b * c twice; both read ATEN_CPU_CAPABILITY."""
    script = ("import numpy as np, torch, ember\n"
              "assert torch.backends.cpu.get_cpu_capability() == ember.backends.cpu.get_cpu_capability() == 'DEFAULT'\n"
              + body + "print('ok')\n")
    env = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=root, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-2000:]


def test_linspace_without_fma_matches_torch_default_kernels():
    _run_under_default_kernels(
        "rng = np.random.default_rng(0)\n"
        "for steps in (17, 2049, 32769):\n"
        "    a, b = (rng.standard_normal(2) * 3).astype(np.float32)\n"
        "    t = torch.linspace(float(a), float(b), steps).numpy()\n"
        "    assert (ember.linspace(float(a), float(b), steps).numpy() == t).all(), steps\n")


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_histc_bins_as_torch_at_the_edges(dtype):
    # values on, just above and just below every bin edge: torch's histc computes each bin as
    # trunc((x - min) * bins / (max - min)) with no correction against the edges (unlike torch.histogram)
    rng = np.random.default_rng(5)
    for bins in (7, 100, 2048):
        low, high = sorted((rng.standard_normal(2) * 4).astype(np.float32))
        edges = torch.linspace(float(low), float(high), bins + 1).numpy()
        values = np.concatenate([rng.uniform(low, high, 300).astype(np.float32), edges,
                                 np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, -np.float32(np.inf))])
        tensor_e = ember.tensor(values).to(getattr(ember, dtype))
        tensor_t = torch.tensor(values).to(getattr(torch, dtype))
        for low_high in ({"min": float(low), "max": float(high)}, {}):
            expected = torch.histc(tensor_t, bins, **low_high).to(torch.float64).numpy()
            actual = ember.histc(tensor_e, bins, **low_high).to(ember.float64).numpy()
            np.testing.assert_array_equal(actual, expected, err_msg=f"{dtype} {bins} {low_high}")


def test_histc_differs_from_edge_search_where_torch_does():
    # guard that the edge cases above matter: somewhere torch's histc and its own histogram disagree
    rng = np.random.default_rng(5)
    disagreements = 0
    for _ in range(20):
        low, high = sorted((rng.standard_normal(2) * 4).astype(np.float32))
        edges = torch.linspace(float(low), float(high), 2049).numpy()
        values = torch.tensor(np.concatenate([edges, np.nextafter(edges, -np.float32(np.inf))]))
        histc = torch.histc(values, 2048, min=float(low), max=float(high))
        disagreements += int((histc != torch.histogram(values, torch.tensor(edges))[0]).sum())
    assert disagreements > 0


SCANS = [(name, dtype) for name in ("cumsum", "cumprod") for dtype in ("float32", "float16", "bfloat16", "float64")]
# complex64 cumprod is left out: torch's complex<double> product is compiled with fused multiply-adds (a*c - b*d
# rounded once), which ember's NumPy product does not emulate


@pytest.mark.parametrize("name,dtype", SCANS + [("cumsum", "complex64")])
def test_scans_accumulate_as_torch(name, dtype):
    rng = np.random.default_rng(7)
    values = (rng.standard_normal((6, 400)) * rng.exponential(3, (6, 400))).astype(np.float32)
    if name == "cumprod":
        values = 1 + values / 40
    if dtype == "complex64":
        values = values + 1j * values[::-1]
    wide = "complex128" if dtype == "complex64" else "float64"
    for dim in (0, 1):
        expected = getattr(torch, name)(torch.tensor(values).to(getattr(torch, dtype)), dim)
        actual = getattr(ember, name)(ember.tensor(values).to(getattr(ember, dtype)), dim)
        np.testing.assert_array_equal(actual.to(getattr(ember, wide)).numpy(),
                                      expected.to(getattr(torch, wide)).numpy())
    # float32 runs in double: 1e8 + 1 + ... + 1 keeps the ones (float32 accumulation would drop them)
    assert ember.cumsum(ember.tensor([1e8] + [1.0] * 8), 0)[-1].item() == 1e8 + 8


def test_bincount_float32_weights_accumulate_in_float32():
    rng = np.random.default_rng(9)
    for count in (0, 1, 50, 5000):
        index = rng.integers(0, 40, count)
        weights = (rng.standard_normal(count) * rng.exponential(100, count)).astype(np.float32)
        for minlength in (0, 60):
            expected = torch.bincount(torch.tensor(index), torch.tensor(weights), minlength=minlength)
            actual = ember.bincount(ember.tensor(index), ember.tensor(weights), minlength=minlength)
            assert str(actual.dtype) == str(expected.dtype).replace("torch", "ember")  # int64 when empty
            assert actual.numpy().dtype == expected.numpy().dtype
            np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    # torch adds in float32, in order: the ones vanish next to 1e8
    ones = ember.bincount(ember.zeros(9, dtype=ember.long), ember.tensor([1e8] + [1.0] * 8))
    assert ones.tolist() == [1e8]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_add_and_sub_with_alpha_round_once_as_torch(dtype):
    """torch's add/sub kernel computes fma(other, alpha, input) on FMA builds: bit-equal here for contiguous,
    in-place (an SGD update), broadcast and out= forms; NumPy's `a + alpha * b` differed in ~18 % of floats."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(100_003).astype(dtype) for _ in range(2))
    for lib_a, lib_b in ((a, b), (a[:, None][:300], b[:7])):
        want = torch.tensor(lib_a).add(torch.tensor(lib_b), alpha=-0.3).numpy()
        assert np.array_equal(ember.tensor(lib_a).add(ember.tensor(lib_b), alpha=-0.3).numpy(), want)
        want = torch.tensor(lib_a).sub(torch.tensor(lib_b), alpha=0.7).numpy()
        assert np.array_equal(ember.tensor(lib_a).sub(ember.tensor(lib_b), alpha=0.7).numpy(), want)
    param, grad = torch.tensor(a), torch.tensor(b)
    param.add_(grad, alpha=-0.01)
    mine = ember.tensor(a)
    mine.add_(ember.tensor(b), alpha=-0.01)
    assert np.array_equal(mine.numpy(), param.numpy())
    scalar = torch.tensor(a[0])
    scalar.add_(torch.tensor(b[0]), alpha=-0.01)
    mine = ember.tensor(a[0])
    mine.add_(ember.tensor(b[0]), alpha=-0.01)  # 0-d params (a scalar model's SGD step) stay 0-d
    assert mine.shape == () and np.array_equal(mine.numpy(), scalar.numpy())
    out = ember.empty(a.shape, dtype=getattr(ember, dtype))
    ember.add(ember.tensor(a), ember.tensor(b), alpha=2.5, out=out)
    assert np.array_equal(out.numpy(), torch.add(torch.tensor(a), torch.tensor(b), alpha=2.5).numpy())


def test_add_with_alpha_without_fma_matches_torch_default_kernels():
    _run_under_default_kernels(
        "a, b = (np.random.default_rng(0).standard_normal(10_001).astype(np.float32) for _ in range(2))\n"
        "t = torch.tensor(a).add(torch.tensor(b), alpha=-0.3).numpy()\n"
        "assert (ember.tensor(a).add(ember.tensor(b), alpha=-0.3).numpy() == t).all()\n")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lerp_and_addcmul_round_as_torch(dtype):
    """torch's lerp is fma(w, end - a, a) for |w| < 0.5 and fma(a - end, 1 - w, end) otherwise; addcmul is
    fma(value * t1, t2, a).  Bit-equal for scalar and tensor weights on both branches, in place (Adam's
    moment updates) and broadcast; the one-branch unfused form differed in up to half of the elements."""
    rng = np.random.default_rng(2)
    a, b, c = (rng.standard_normal(50_001).astype(dtype) for _ in range(3))
    for weight in (0.1, 0.5, 0.7, -0.3, 1.5):
        want = torch.tensor(a).lerp_(torch.tensor(b), weight).numpy()
        assert np.array_equal(ember.tensor(a).lerp_(ember.tensor(b), weight).numpy(), want), weight
    weights = rng.uniform(-1, 2, a.shape).astype(dtype)
    want = torch.lerp(torch.tensor(a), torch.tensor(b), torch.tensor(weights)).numpy()
    assert np.array_equal(ember.lerp(ember.tensor(a), ember.tensor(b), ember.tensor(weights)).numpy(), want)
    want = torch.lerp(torch.tensor(a[:12].reshape(3, 4)), torch.tensor(b[:4]), 0.25).numpy()
    assert np.array_equal(ember.lerp(ember.tensor(a[:12].reshape(3, 4)), ember.tensor(b[:4]), 0.25).numpy(), want)
    for value in (0.001, -2.5, 1):
        want = torch.tensor(a).addcmul_(torch.tensor(b), torch.tensor(c), value=value).numpy()
        assert np.array_equal(ember.tensor(a).addcmul_(ember.tensor(b), ember.tensor(c), value=value).numpy(), want)


def test_lerp_and_addcmul_without_fma_match_torch_default_kernels():
    _run_under_default_kernels(
        "a, b, c = (np.random.default_rng(0).standard_normal(10_001).astype(np.float32) for _ in range(3))\n"
        "for w in (0.1, 0.7):\n"
        "    t = torch.tensor(a).lerp(torch.tensor(b), w).numpy()\n"
        "    assert (ember.tensor(a).lerp(ember.tensor(b), w).numpy() == t).all(), w\n"
        "t = torch.tensor(a).addcmul(torch.tensor(b), torch.tensor(c), value=0.3).numpy()\n"
        "assert (ember.tensor(a).addcmul(ember.tensor(b), ember.tensor(c), value=0.3).numpy() == t).all()\n")
