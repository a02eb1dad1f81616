"""torch.special's Bessel family (J, Y, modified I and K, scaled K, Airy Ai) and orthogonal polynomials against
real torch: every branch boundary of the Cephes ports, float32 and float64, broadcasting, scalar operands, out=,
dtype support and the absence of gradients.

Tolerances are in units of the dtype's machine epsilon.  ember evaluates these kernels the way torch's build does
(in the input's precision, with its fused multiply-adds), so nearly every value is bit-identical; what remains is
the transcendental functions: NumPy's exp/log/sin/cos/acos can differ from glibc's (which torch calls) in the last
bit.  Such a one-ulp difference is amplified where the result is computed by cancellation (near a zero of J, Y or
Ai the relative error is unbounded, so values are compared with an absolute floor of a few eps at the function's
scale, which is 1) and, for the Chebyshev trigonometric forms cos(n acos x) and the like, by the order: a one-ulp
acos error becomes ~n ulps of the angle and ~n^2 eps of U/V/W (whose scale is n).  float32 is hit hardest, as
glibc's acosf is not correctly rounded and ember's is; the tolerances below say so per test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
          "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
          "airy_ai"]
CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w"]
POLYNOMIALS = CHEBYSHEV + ["hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
                           "legendre_polynomial_p"]
DTYPES = ["float64", "float32"]

# every branch point of the Bessel/Airy kernels, each with its neighbours: 0 (poles, the tiny-x J0 branch at 1e-5),
# 2 (K), 2.09 (Ai), 5 (J, Y), 8 (I), 8.32 and 103.892 (Ai), the first zeros of J0, J1, Y0, Y1, large, inf, nan
_EDGES = [0.0, 1e-5, 2.0, 2.09, 5.0, 8.0, 8.3203353, 103.892, 2.404825557695773, 3.831705970207512,
          0.8935769662791675, 2.197141326031017, 1e-300, 1e-30, 0.5, 1.0, 30.0, 100.0, 700.0, 1e4, 1e10]
BESSEL_POINTS = sorted({v for e in _EDGES for v in (e, -e, np.nextafter(e, np.inf), np.nextafter(e, -np.inf),
                                                    -np.nextafter(e, np.inf))}) + [np.inf, -np.inf, np.nan]
ORDERS = [-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50, 100]
POLYNOMIAL_X = [-5.0, -1.5, -1.0, -0.999, -0.7, -0.5, -0.3, -1e-3, 0.0, -0.0, 1e-3, 0.2, 0.25, 0.5, 0.75, 0.999,
                1.0, 1.001, 1.5, 3.0, 10.0, np.inf, -np.inf]


def _eps(dtype: str) -> float:
    return float(np.finfo(dtype).eps)


def _compare(got, expected, rtol, atol):
    """Values (nan where torch's are), dtype and shape."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape, expected.dtype,
                                                                         expected.shape)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


def _assert_within(got, expected, rtol, atol):
    """Equal (inf and nan included), or |got - expected| <= atol + rtol max(|expected|, 1), elementwise."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    with np.errstate(invalid="ignore"):
        scale = np.maximum(np.abs(expected), 1.0)
        close = same | (np.abs(got - expected) <= atol + rtol * scale)
    bad = np.nonzero(~close)
    assert close.all(), (bad, got[bad], expected[bad])


def _run(lib, name, *args, **kwargs):
    def convert(value):
        return lib.tensor(value) if isinstance(value, np.ndarray) else value

    return getattr(lib.special, name)(*[convert(a) for a in args], **kwargs)


def _both(name, *args, **kwargs):
    """(ember's, torch's) results as NumPy arrays."""
    return tuple(_run(lib, name, *args, **kwargs).numpy() for lib in (ember, torch))


# ---------------------------------------------------------------- Bessel family


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_branch_points(name, dtype):
    """Each side of every branch boundary: 4 eps relative, 4 eps absolute (the scale of J, Y, Ai is 1)."""
    x = np.array(BESSEL_POINTS, dtype=dtype)
    got, expected = _both(name, x)
    _compare(got, expected, rtol=4 * _eps(dtype), atol=4 * _eps(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dense_sweep(name, dtype):
    """Thousands of points over [-40, 40] and around the branch points: almost all bit-identical to torch, every
    one within a few eps (near zeros of J/Y/Ai: an absolute few eps, the cancellation that makes it relative)."""
    rng = np.random.default_rng(hash(name) % 2**32)
    x = np.concatenate([rng.uniform(-40, 40, 4000), rng.uniform(-0.05, 0.05, 500), rng.uniform(1.9, 2.2, 500),
                        rng.uniform(4.9, 5.1, 500), rng.uniform(7.9, 8.4, 500), rng.uniform(-120, 120, 500)])
    x = x.astype(dtype)
    got, expected = _both(name, x)
    identical = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert identical.mean() > 0.97, identical.mean()
    _compare(got, expected, rtol=8 * _eps(dtype), atol=8 * _eps(dtype))


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_and_errors(name):
    """Integral and bool inputs compute in the default float dtype; half and complex raise torch's error."""
    for dtype in ("int64", "bool", "int8"):
        got, expected = _both(name, np.array([0, 1, 3]).astype(dtype))
        _compare(got, expected, rtol=4e-7, atol=4e-7)
    for dtype in ("float16", "bfloat16", "complex64"):
        errors = []
        for lib in (ember, torch):
            with pytest.raises(NotImplementedError) as info:
                getattr(lib.special, name)(lib.ones(2, dtype=getattr(lib, dtype)))
            errors.append(str(info.value))
        assert errors[0] == errors[1]


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_out_and_no_gradient(name):
    x = np.array([[0.5, 1.5], [3.0, 7.0]])
    results = []
    for lib in (ember, torch):
        out = lib.empty(2, 2, dtype=lib.float64)
        returned = getattr(lib.special, name)(lib.tensor(x), out=out)
        assert returned is out
        source = lib.tensor(x, requires_grad=True)
        assert getattr(lib.special, name)(source).requires_grad is False
        results.append(out.numpy())
    _compare(results[0], results[1], rtol=4 * _eps("float64"), atol=0)


def test_bessel_0d_and_empty():
    for shape in ((), (0,), (2, 0, 3)):
        for name in BESSEL:
            got, expected = _both(name, np.full(shape, 1.25))
            _compare(got, expected, rtol=4 * _eps("float64"), atol=0)


# ---------------------------------------------------------------- orthogonal polynomials


def _polynomial_tolerance(name, dtype, x, n):
    """(rtol, atol) per element: 4 eps, and for the Chebyshev trigonometric forms an absolute (n + 1)^2 * 8 eps
    (a one-ulp acos difference times the order, at U/V/W's scale n)."""
    eps = _eps(dtype)
    atol = np.full(np.broadcast(x, n).shape, 4 * eps)
    if name in CHEBYSHEV:
        y = 2 * x - 1 if name.startswith("shifted") else x
        orders = np.nan_to_num(n, nan=-1, posinf=-1, neginf=-1)
        trig = (np.abs(y) < 1) & (orders > 4)
        atol = np.where(trig, 8 * eps * (np.abs(orders) + 1) ** 2, atol)
    return 4 * eps, atol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_grid(name, dtype):
    """Every x of POLYNOMIAL_X against every order (negative, 0, 1, the trigonometric thresholds 4/6/8, large)."""
    x = np.array(POLYNOMIAL_X, dtype=dtype)[:, None]
    n = np.array(ORDERS, dtype=dtype)[None, :]
    got, expected = _both(name, x, n)
    _assert_within(got, expected, *_polynomial_tolerance(name, dtype, x, n))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_dense_sweep(name, dtype):
    """Random x in [-1.2, 1.2] (and [-0.1, 1.1] for the shifted ones) against orders up to 50: the recurrences
    are bit-identical to torch, the trigonometric forms within their (n + 1)^2 eps."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-1.2, 1.2, 600), rng.uniform(-0.1, 1.1, 300)]).astype(dtype)
    n = rng.integers(0, 51, x.size).astype(dtype)
    got, expected = _both(name, x, n)
    rtol, atol = _polynomial_tolerance(name, dtype, x, n)
    y = 2 * x - 1 if name.startswith("shifted") else x
    recurrence = ~((np.abs(y) < 1) & (n > 4)) if name in CHEBYSHEV else np.ones(x.shape, bool)
    np.testing.assert_array_equal(got[recurrence], expected[recurrence])
    _assert_within(got, expected, rtol, atol)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_non_integer_and_non_finite_orders(name):
    """n is truncated toward zero in the common dtype; nan and +-inf orders (and 1e30) give 0, as torch's cast."""
    x = np.array([0.3, -0.6, 1.0, 2.0, 0.75])[:, None]
    n = np.array([2.5, 3.99, -0.5, 6.9, 9.5, np.nan, np.inf, -np.inf, 1e30])[None, :]
    for dtype in DTYPES:
        got, expected = _both(name, x.astype(dtype), n.astype(dtype))
        _assert_within(got, expected, *_polynomial_tolerance(name, dtype, x, n))


@pytest.mark.parametrize("name", ["hermite_polynomial_h", "hermite_polynomial_he"])
def test_hermite_order_limit(name):
    """Orders beyond 128 (float32) / 512 (float64) are nan in torch; just below they are computed."""
    for dtype, limit in (("float32", 128), ("float64", 512)):
        x = np.array([0.1, -0.7, 1.3], dtype=dtype)[:, None]
        n = np.array([limit - 1, limit, limit + 1, 1000], dtype=dtype)[None, :]
        got, expected = _both(name, x, n)
        _compare(got, expected, rtol=4 * _eps(dtype), atol=0)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_broadcasting_and_scalars(name):
    """(3, 1) x (1, 4) broadcasting; a Python number for x or for n (int or float); 0-d operands."""
    x = np.array([[-0.4], [0.3], [0.9]])
    n = np.array([[0, 2, 5, 11]])
    cases = [(x, n), (0.3, n), (x, 3), (x, 7.0), (np.array(0.6), n), (x, np.array(4)), (True, n), (x, np.array([]))]
    for first, second in cases:
        if isinstance(second, np.ndarray) and second.size == 0 and isinstance(first, np.ndarray):
            first = first[:0, :0].reshape(0)
        got, expected = _both(name, first, second)
        _compare(got, expected, rtol=64 * _eps(expected.dtype.name), atol=64 * _eps(expected.dtype.name))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_dtypes_and_errors(name):
    """Promotion as torch's binary float ops; half and complex raise; two Python numbers are a TypeError."""
    int_x, int_n = np.array([2, -1, 0]), np.array([3, 2, 5])
    pairs = [(int_x, int_n), (int_x.astype(np.float32), int_n.astype(np.float64)), (int_x.astype(bool), int_n),
             (int_x.astype(np.int8), int_n.astype(np.float32)), (int_x.astype(np.float64), int_n.astype(np.int32))]
    for x, n in pairs:
        got, expected = _both(name, x, n)
        _compare(got, expected, rtol=4e-7, atol=0)
    for dtype in ("float16", "bfloat16", "complex64"):
        errors = []
        for lib in (ember, torch):
            with pytest.raises(NotImplementedError) as info:
                getattr(lib.special, name)(lib.ones(2, dtype=getattr(lib, dtype)), lib.tensor([1, 2]))
            errors.append(str(info.value))
        assert errors[0] == errors[1]
    messages = []
    for lib in (ember, torch):
        with pytest.raises(TypeError) as info:
            getattr(lib.special, name)(0.5, 3)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_out_and_no_gradient(name):
    x, n = np.array([0.25, 0.5, 1.5]), np.array([3, 4, 9])
    results = []
    for lib in (ember, torch):
        out = lib.empty(3, dtype=lib.float64)
        assert getattr(lib.special, name)(lib.tensor(x), lib.tensor(n), out=out) is out
        results.append(out.numpy())
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(lib.special, name)(lib.tensor(x), lib.tensor(n), out=lib.empty(3, dtype=lib.int64))
        assert getattr(lib.special, name)(lib.tensor(x, requires_grad=True), lib.tensor(n)).requires_grad is False
    _compare(results[0], results[1], rtol=64 * _eps("float64"), atol=64 * _eps("float64"))


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "hermite_polynomial_h",
                                  "legendre_polynomial_p", "laguerre_polynomial_l"])
def test_polynomial_nan_x(name):
    """x = nan gives nan (where torch's recurrence would start on a nan it returns an uninitialised variable,
    so only the well-defined orders are compared)."""
    x = np.array([math.nan, math.nan, math.nan])
    n = np.array([-1.0, 0.0, 1.0])
    got, expected = _both(name, x, n)
    _compare(got, expected, rtol=0, atol=0)
    assert np.isnan(getattr(ember.special, name)(ember.tensor([math.nan]), ember.tensor([5])).numpy()).all()
