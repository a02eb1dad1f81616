"""ember.signal.windows against torch.signal.windows: values, dtypes and shapes for every window, length
(0, 1, even, odd), symmetry and parameter; torch's errors and messages; requires_grad.

The windows are composites of linspace and exp/sin/cos/i0 in both libraries, so values agree to the last bit or
two: float64 to 4 eps, float32 to 8 eps (torch's vectorised float32 exp/cos and its float i0 may round
differently from NumPy's by an ulp).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

WINDOWS = {
    "bartlett": [{}],
    "blackman": [{}],
    "cosine": [{}],
    "hamming": [{}],
    "hann": [{}],
    "nuttall": [{}],
    "exponential": [{}, {"tau": 0.5}, {"tau": 3.0}],
    "gaussian": [{}, {"std": 0.5}, {"std": 7.0}],
    "general_cosine": [{"a": [0.5, 0.5]}, {"a": [1.0]}, {"a": (0.3635819, 0.4891775, 0.1365995, 0.0106411)}],
    "general_hamming": [{}, {"alpha": 0.7}],
    "kaiser": [{}, {"beta": 0.0}, {"beta": 3.5}, {"beta": 30.0}],
}
CASES = [(name, kwargs) for name, options in WINDOWS.items() for kwargs in options]
LENGTHS = [0, 1, 2, 5, 6, 17]


def _both(fn):
    """fn(lib) for ember and torch: the result, or (exception type name, message with dtypes spelt torch.)."""
    results = []
    for lib in (ember, torch):
        try:
            results.append(fn(lib))
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            results.append((type(error).__name__, str(error).replace("ember.", "torch.")))
    return results


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("sym", [True, False])
@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_window_values(name, kwargs, sym, dtype):
    eps = float(np.finfo(dtype).eps)
    for M in LENGTHS:
        got, expected = _both(lambda lib: getattr(lib.signal.windows, name)(M, sym=sym, dtype=getattr(lib, dtype),
                                                                            **kwargs))
        got, expected = got.numpy(), expected.numpy()
        assert got.dtype == expected.dtype and got.shape == expected.shape == (M,)
        tolerance = 4 * eps if dtype == "float64" else 8 * eps
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_exponential_center():
    for center in (0.0, 2.5, 7.0):
        got, expected = _both(lambda lib: lib.signal.windows.exponential(8, center=center, sym=False, tau=2.0,
                                                                         dtype=lib.float64))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-15, atol=1e-15)


def test_default_dtype():
    try:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float64)
        got, expected = _both(lambda lib: lib.signal.windows.hann(7))
        assert got.numpy().dtype == expected.numpy().dtype == np.float64
    finally:
        for lib in (ember, torch):
            lib.set_default_dtype(lib.float32)
    got, expected = _both(lambda lib: lib.signal.windows.kaiser(7))
    assert got.numpy().dtype == expected.numpy().dtype == np.float32


ERRORS = [
    ("hann", -1, {}), ("blackman", -2, {}), ("kaiser", -1, {}), ("nuttall", -3, {}),
    ("gaussian", 5, {"dtype": "float16"}), ("cosine", 5, {"dtype": "int64"}), ("bartlett", 5, {"dtype": "complex64"}),
    ("hamming", 5, {"dtype": "bfloat16"}),
    ("gaussian", 5, {"layout": "sparse_coo"}), ("exponential", 5, {"layout": "sparse_coo"}),
    ("gaussian", 5, {"std": 0.0}), ("gaussian", 5, {"std": -1.0}),
    ("exponential", 5, {"tau": 0.0}), ("exponential", 5, {"center": 1.0}),
    ("kaiser", 5, {"beta": -0.5}),
    ("general_cosine", 5, {"a": []}), ("general_cosine", 5, {"a": 3}),
    ("general_cosine", 1, {"a": []}), ("general_cosine", 0, {"a": 3}),
]


@pytest.mark.parametrize("name,M,kwargs", ERRORS, ids=[f"{n}-{M}-{k}" for n, M, k in ERRORS])
def test_window_errors(name, M, kwargs):
    def fn(lib):
        options = dict(kwargs)
        for key in ("dtype", "layout"):
            if key in options:
                options[key] = getattr(lib, options[key])
        return getattr(lib.signal.windows, name)(M, **options)

    got, expected = _both(fn)
    if isinstance(expected, tuple):
        assert got == expected
    else:
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("name,kwargs", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_window_requires_grad(name, kwargs):
    """requires_grad=True: a non-leaf with a graph back to the window's phases (a leaf for M <= 1)."""
    for M in (0, 1, 6):
        got, expected = _both(lambda lib: getattr(lib.signal.windows, name)(M, requires_grad=True, **kwargs))
        assert got.requires_grad == expected.requires_grad
        assert got.is_leaf == expected.is_leaf
        if not got.is_leaf:
            got.sum().backward()  # runs through to the internal linspace, as torch's does
