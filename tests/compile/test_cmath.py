"""ember's own float exp and erf for C kernels (ember/_compile/cmath.py) against float64 references.

The module docstring's bounds (1.01 / 1.15 ulp) were measured over every float32; here a dense sample of
each range, the special values and the boundaries between the formulas' branches are checked in every run.
"""

import ctypes
import math

import numpy as np
import pytest

from ember._compile import cmath, codegen

pytestmark = pytest.mark.skipif(codegen.find_compiler() is None, reason="needs a C compiler")

_TEST_SOURCE = """
void run_exp(const float* restrict x, float* restrict out, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) out[i] = ember_expf(x[i]);
}
void run_erf(const float* restrict x, float* restrict out, long n) {
    #pragma omp simd
    for (long i = 0; i < n; i++) out[i] = ember_erff(x[i]);
}
"""


def _run(function, x):
    library = codegen.compile_library(codegen.C_HEADER + cmath.SOURCE + _TEST_SOURCE)
    fn = getattr(library, f"run_{function}")
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    x = np.ascontiguousarray(x, np.float32)
    out = np.empty_like(x)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


def _ulps(got, reference):
    """|got - reference| in units of the float32 spacing at the (float32-rounded) reference."""
    rounded = reference.astype(np.float32)
    spacing = np.spacing(np.abs(rounded)).astype(np.float64)
    return np.abs(got.astype(np.float64) - reference) / spacing


def _sample(low, high, n=200_000):
    rng = np.random.default_rng(0)
    return np.concatenate([np.linspace(low, high, n, dtype=np.float32),
                           rng.uniform(low, high, n).astype(np.float32)])


def test_exp_within_bound_over_its_whole_range():
    x = _sample(-103.9, 88.7)  # results from the denormal range up to the largest float
    reference = np.exp(x.astype(np.float64))
    assert _ulps(_run("exp", x), reference).max() <= 1.02


def test_exp_special_values_and_limits():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.73, 89.0, 1e30, -104.0, -110.0, -1e30,
                  np.float32(88.72283), -87.33654], np.float32)
    got = _run("exp", x)
    with np.errstate(over="ignore"):
        expected = np.exp(x.astype(np.float64)).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    assert np.all((got[finite] == expected[finite]) | (_ulps(got[finite], np.exp(x[finite].astype(np.float64)))
                                                       <= 1.02))
    assert got[2] == np.inf and got[3] == 0.0 and got[5] == np.inf


def test_erf_within_bound_over_both_branches():
    erf = np.vectorize(math.erf)
    x = np.concatenate([_sample(-4.5, 4.5, 100_000), _sample(-1e-3, 1e-3, 20_000),
                        np.array([0.921875, np.nextafter(np.float32(0.921875), np.float32(1)), 3.92, 1e-30],
                                 np.float32)])
    assert _ulps(_run("erf", x), erf(x.astype(np.float64))).max() <= 1.16


def test_erf_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 10.0, -10.0], np.float32)
    got = _run("erf", x)
    assert np.isnan(got[4])
    np.testing.assert_array_equal(got[[0, 2, 3, 5, 6]], [0.0, 1.0, -1.0, 1.0, -1.0])
    assert np.signbit(got[1])


def test_kernels_call_ember_functions_for_float_only():
    from ember._compile.lowering import POINTWISE

    c_exp = POINTWISE["exp"][0]
    literal = repr
    assert c_exp(["x"], {}, "f", literal) == "ember_expf(x)"
    assert c_exp(["x"], {}, "", literal) == "exp(x)"
