"""OpInfos for the special functions: lgamma, digamma, polygamma, mvlgamma, i0, igamma/igammac and the
torch.special-only ops (i0e, i1, i1e, ndtr, log_ndtr, ndtri, erfcx, entr, the Bessel family J/Y/I/K and Airy Ai,
the orthogonal polynomials, xlog1py, zeta).

Besides the usual shapes, samples go near the poles (the non-positive integers), through negative
non-integers and out to large arguments, where these functions switch between approximations.
"""

from __future__ import annotations

import numpy as np

from ..core import ALL_TYPES, FLOATING, NUMPY_TYPES, ErrorSample, OpInfo, Sample, make_array
from .elementwise import _array, _binary_sampler, _caller, _ordered, _unary_sampler

REAL = ALL_TYPES  # bool, integral and floating: integral inputs compute in the default float dtype


def _special(name):
    """lib.special.<name>(...)."""

    def run(lib, *args, **kwargs):
        return getattr(lib.special, name)(*args, **kwargs)

    return run


def _values(values, dtype, grad=False, name="special values"):
    """A fixed set of floating arguments (skipped for integral dtypes, which can't hold them)."""
    if dtype not in FLOATING:
        return []
    return [Sample((_array(values, dtype),), name=name, grad=grad)]


def _sampler(low=None, high=None, extra=(), extra_grad=(), edge=True):
    """The usual unary samples in [low, high), plus fixed `extra` values (no gradient) and `extra_grad` ones."""

    def samples(dtype, rng):
        result = _unary_sampler(low, high, edge=edge)(dtype, rng)
        if len(extra_grad):
            result += _values(extra_grad, dtype, grad=True, name="gradient values")
        if len(extra):
            result += _values(extra, dtype)
        return result

    return samples


def _top_level(name, sampler, dtypes=REAL, **options):
    """A top-level op with method, in-place and out= variants."""
    options.setdefault("max_samples", 14)
    return OpInfo(name, sampler, call=_caller(name), dtypes=_ordered(dtypes), method=name, inplace=name + "_",
                  supports_out=True, **options)


def _special_only(name, sampler, dtypes=REAL, **options):
    """An op of ember.special only (no method or in-place variant)."""
    options.setdefault("max_samples", 14)
    return OpInfo("special." + name, sampler, call=_special(name), dtypes=_ordered(dtypes), supports_out=True,
                  **options)


POLES = [0.0, -0.0, -1.0, -2.0, -7.0, -1e-9, 1e-9, -2.0 + 1e-6, -3.0 - 1e-7, 1e-300, 5e-324]
GAMMA_VALUES = POLES + [0.5, 1.0, 2.0, 1.0 + 1e-8, 2.0 - 1e-8, 1.4616321, -0.5, -2.5, -33.3, -40.7, 12.99, 13.0,
                        1e3, 1e8, 1e15, 1e300, 3e305, 1e308, np.inf, -np.inf, np.nan]
GAMMA_GRAD = [0.3, 1.5, 2.5, 7.5, 15.0, 60.0, -0.5, -1.5, -2.7, -10.3]


def _polygamma_samples(dtype, rng):
    samples = []
    for n, low, high in ((0, -5, 5), (1, -5, 9), (2, 0.2, 9), (3, -4, 4), (5, 0.5, 30)):
        samples.append(Sample((make_array((3, 4), dtype, rng, low, high),), {"n": n}, name=f"n={n}"))
    samples.append(Sample((make_array((), dtype, rng, 0.5, 4),), {"n": 4}, name="0-d"))
    samples.append(Sample((make_array((0,), dtype, rng, 0.5, 4),), {"n": 2}, name="empty"))
    if dtype in FLOATING:
        values = GAMMA_VALUES[:-3] + [np.nan, np.inf, -np.inf, -408.49992, 1e-3, 40.0]
        for n in (1, 2, 3):
            samples.append(Sample((_array(values, dtype),), {"n": n}, name=f"special values n={n}", grad=False))
        samples.append(Sample((_array(GAMMA_GRAD, dtype),), {"n": 2}, name="gradient values"))
    return samples


def _polygamma_errors():
    return [ErrorSample(Sample((np.ones(3, np.float32),), {"n": -1}), RuntimeError,
                        r"polygamma\(n, x\) does not support negative n.")]


def _mvlgamma_samples(dtype, rng):
    samples = []
    for p in (1, 2, 3, 5):
        low = (p - 1) / 2 + 0.1
        samples.append(Sample((make_array((3, 4), dtype, rng, low, low + 9),), {"p": p}, name=f"p={p}"))
    samples.append(Sample((make_array((), dtype, rng, 2, 5),), {"p": 2}, name="0-d"))
    samples.append(Sample((make_array((0, 2), dtype, rng, 2, 5),), {"p": 3}, name="empty"))
    samples.append(Sample((make_array((4, 3), dtype, rng, 2, 9),), {"p": 4}, noncontiguous=True, name="noncontig"))
    return samples


def _mvlgamma_errors():
    return [
        ErrorSample(Sample((np.ones(3, np.float32),), {"p": 0}), RuntimeError,
                    "p has to be greater than or equal to 1"),
        ErrorSample(Sample((np.ones(3, bool),), {"p": 1}), RuntimeError,
                    "The input tensor may not be a boolean tensor."),
    ]


def _complex_error(name, kernel, call_kwargs=None):
    """A complex input: torch's NotImplementedError naming the kernel."""
    sample = Sample((np.ones(3, np.complex64),), call_kwargs or {})
    return ErrorSample(sample, NotImplementedError, f'"{kernel}" not implemented for \'ComplexFloat\'')


def _igamma_samples(dtype, rng):
    """a in (0, 12], x in (0, 25]: every method (series, continued fraction, the small-x upper series)."""
    samples = _binary_sampler(0.05, 12, edge=False, scalars=False, promotion=False)(dtype, rng)
    samples = [s for s in samples if s.name != "python scalar"]
    samples.append(Sample((make_array((3, 4), dtype, rng, 0.01, 3), make_array((3, 4), dtype, rng, 0.01, 1.2)),
                          name="small a, small x"))
    samples.append(Sample((make_array((6,), dtype, rng, 20, 150), make_array((6,), dtype, rng, 15, 180)),
                          name="large a ~ x"))
    if dtype in FLOATING:
        edges = np.array([0.0, 1e-3, 0.5, 1.0, 3.0, 50.0, np.inf, np.nan, -1.0])
        samples.append(Sample((_array(edges[:, None], dtype), _array(edges[None, :], dtype)), name="edge values",
                              grad=False))
    return samples


def _igamma_call(name):
    """lib.<name>(a, x) with `a` detached: torch has no derivative in a (tests/test_special.py checks the error,
    and runs gradcheck in x alone, which the generic gradcheck, perturbing a too, can't)."""

    def run(lib, a, x, variant=None, **kwargs):
        if variant == "inplace":
            return getattr(a, name + "_")(x)
        return getattr(lib, name)(a.detach(), x, **kwargs)

    return run


def _igamma_errors(name):
    return [
        ErrorSample(Sample((np.ones(3, np.int64), np.ones(3, np.int64))), NotImplementedError,
                    f"\"{name}_cpu\" not implemented for 'Long'"),
        ErrorSample(Sample((np.ones(3, np.float32), np.ones(3, np.complex64))), NotImplementedError,
                    f"\"{name}_cpu\" not implemented for 'ComplexFloat'"),
    ]


def _zeta_samples(dtype, rng):
    samples = _binary_sampler(1.1, 9, edge=False, scalars=True, promotion=True, scalar_lhs=True)(dtype, rng)
    if dtype in FLOATING:
        s = np.array([1.0, 0.5, 2.0, 3.0, 2.5, 4.0, 2.0, np.inf, np.nan, 30.0])
        q = np.array([1.0, 1.0, -1.0, -1.5, -1.5, -20.25, 1e-5, 2.0, 1.0, 0.5])
        samples.append(Sample((_array(s, dtype), _array(q, dtype)), name="special values"))
        samples.append(Sample((_array(s[:, None], dtype), _array(np.array([0.0, 3.0, np.inf, -np.inf]), dtype)),
                              name="edge values"))
    return samples


def _xlog1py_extra(dtype, rng):
    if dtype not in FLOATING:
        return []
    x = np.array([0.0, 0.0, 0.0, 1.5, -2.0, 0.0, np.nan, 2.0])
    y = np.array([-1.0, -3.0, np.nan, -1.0, np.inf, 0.5, 0.5, 1e-20])
    return [Sample((_array(x, dtype), _array(y, dtype)), name="zeros and poles", grad=False)]


BESSEL_VALUES = [0.0, -0.0, 1e-320, 1e-6, -1e-6, 3.0, 7.99, 8.0, 8.01, -8.01, 30.0, -45.0, 700.0, 720.0, 1e4, 1e8,
                 np.inf, -np.inf, np.nan]
# (not 1e8: in float32 torch reduces cos(x - pi/4) of a number whose ulp is 8, the result is noise)
J_VALUES = [v for v in BESSEL_VALUES if v != 1e8]
NORMAL_VALUES = [0.0, -0.5, -1.0, -1.01, -5.0, -8.0, -20.0, -37.0, -38.5, -40.0, 5.0, 8.5, 40.0, 1e5, -1e5, np.inf,
                 -np.inf, np.nan]
ERFCX_VALUES = [0.0, -0.0, 0.3, -0.7, 0.999, 1.0, 1.5, -1.5, 7.9, 8.1, 26.0, -6.0, -6.2, -26.6, -26.8, 49.0, 51.0,
                1e3, 4e7, 6e7, 1e300, np.inf, -np.inf, np.nan]
PROBABILITIES = [0.0, 1.0, -0.1, 1.1, 0.5, 0.1, 0.135, 0.136, 0.9, 0.8647, 0.8648, 1e-10, 1e-20, 1e-100, 1e-300,
                 1 - 1e-10, 1 - 1e-16, np.nan]

# the Bessel family's branch points: 0, 2 (K), 2.09 (Ai), 5 (J, Y), 8 (I), 8.32 and 103.892 (Ai)
BESSEL_FAMILY_VALUES = [0.0, -0.0, 1e-6, -1e-6, 1.99, 2.0, 2.01, 2.09, -2.09, 2.1, -2.1, 4.99, 5.0, 5.01, -5.01, 7.99,
                        8.0, 8.01, 8.3, 8.33, 30.0, -30.0, 103.8, 104.0, np.inf, -np.inf, np.nan]
BESSEL_FAMILY = ["bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                 "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "airy_ai"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


def _polynomial_samples(dtype, rng):
    """x around [-1, 1] (where the Chebyshev trigonometric forms apply) against orders 0..12; the |x| == 1 and
    x == 0 closed forms, negative orders and a Python-number order."""
    def orders(shape):
        return rng.integers(0, 13, size=shape).astype(NUMPY_TYPES[dtype])

    samples = [
        Sample((make_array((3, 4), dtype, rng, -1.2, 1.2), orders((3, 4))), name="grid"),
        Sample((make_array((3, 1), dtype, rng, -1.2, 1.2), orders((4,))), name="broadcast"),
        Sample((make_array((), dtype, rng, -1, 1), orders((5,))), name="0-d x"),
        Sample((make_array((0, 3), dtype, rng, -1, 1), orders((3,))), name="empty"),
        Sample((make_array((4, 3), dtype, rng, -1, 1), orders((4, 3))), noncontiguous=True, name="noncontig"),
        Sample((make_array((5,), dtype, rng, -1, 1), 3), name="python order"),
    ]
    if dtype in FLOATING:
        x = np.array([-1.0, 1.0, 0.0, -0.0, 0.5, -0.5, 2.0, -2.0, np.inf])
        n = np.array([-1.0, 0.0, 1.0, 2.0, 7.0, 9.0, 2.5, np.nan])
        samples.append(Sample((_array(x[:, None], dtype), _array(n[None, :], dtype)), name="edge values"))
    return samples


OPS = [
    _top_level("lgamma", _sampler(extra=GAMMA_VALUES, extra_grad=GAMMA_GRAD),
               error_inputs=lambda: [_complex_error("lgamma", "lgamma_vml_cpu")]),
    _top_level("digamma", _sampler(extra=GAMMA_VALUES + [10.0, 9.999, 1e17, 2e17], extra_grad=GAMMA_GRAD),
               error_inputs=lambda: [_complex_error("digamma", "digamma")]),
    OpInfo("polygamma", _polygamma_samples, call=lambda lib, x, n, **kwargs: lib.polygamma(n, x, **kwargs),
           dtypes=_ordered(REAL),
           method="polygamma", inplace="polygamma_", supports_out=True, max_samples=14,
           error_inputs=_polygamma_errors),
    OpInfo("mvlgamma", _mvlgamma_samples, call=_caller("mvlgamma"), dtypes=_ordered(FLOATING + ("int64",)),
           method="mvlgamma", inplace="mvlgamma_", supports_out=True, error_inputs=_mvlgamma_errors),
    _top_level("i0", _sampler(-20, 20, extra=BESSEL_VALUES), error_inputs=lambda: [_complex_error("i0", "i0_vml_cpu")]),
    OpInfo("igamma", _igamma_samples, call=_igamma_call("igamma"), dtypes=_ordered(FLOATING + ("int64",)),
           method="igamma", inplace="igamma_", supports_out=True, max_samples=14,
           gradcheck=False, gradgradcheck=False,
           error_inputs=lambda: _igamma_errors("igamma")),
    OpInfo("igammac", _igamma_samples, call=_igamma_call("igammac"), dtypes=_ordered(FLOATING + ("int64",)),
           method="igammac", inplace="igammac_", supports_out=True, max_samples=14,
           gradcheck=False, gradgradcheck=False,
           error_inputs=lambda: _igamma_errors("igammac")),
    _special_only("i0e", _sampler(-20, 20, extra=BESSEL_VALUES)),
    _special_only("i1", _sampler(-20, 20, extra=BESSEL_VALUES)),
    _special_only("i1e", _sampler(-20, 20, extra=BESSEL_VALUES)),
    _special_only("bessel_j0", _sampler(-30, 30, extra=J_VALUES), grad=False),
    _special_only("bessel_j1", _sampler(-30, 30, extra=J_VALUES), grad=False),
    *[_special_only(name, _sampler(-12, 12, extra=BESSEL_FAMILY_VALUES), grad=False) for name in BESSEL_FAMILY],
    # float32: the trigonometric forms cos(n acos x) & co. amplify a one-ulp acos difference (NumPy's vs glibc's
    # acosf) by the order (tests/test_special_polynomials_bessel.py)
    *[OpInfo("special." + name, _polynomial_samples, call=_special(name), dtypes=_ordered(REAL), supports_out=True,
             grad=False, max_samples=8, tolerances={"float32": (1e-5, 1e-4)}) for name in POLYNOMIALS],
    _special_only("ndtr", _sampler(-6, 6, extra=NORMAL_VALUES)),
    _special_only("log_ndtr", _sampler(-30, 8, extra=NORMAL_VALUES)),
    _special_only("ndtri", _sampler(0.02, 0.98, extra=PROBABILITIES, extra_grad=[1e-5, 0.01, 0.3, 0.999])),
    _special_only("erfcx", _sampler(-5, 30, extra=ERFCX_VALUES)),
    _special_only("entr", _sampler(0.05, 9, extra=[0.0, -0.0, -1.0, 1e-300, 1.0, 1e300, np.inf, -np.inf, np.nan])),
    OpInfo("special.xlog1py", _binary_sampler(-0.9, 5, edge=False, scalar_lhs=True, extra=_xlog1py_extra),
           call=_special("xlog1py"), dtypes=_ordered(REAL), supports_out=True, max_samples=20),
    OpInfo("special.zeta", _zeta_samples, call=_special("zeta"), dtypes=_ordered(REAL), supports_out=True,
           grad=False, max_samples=20),
]
