"""torch.testing.assert_close for ember tensors."""

from __future__ import annotations

import numpy as np

_DEFAULTS = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def _values(x):
    if hasattr(x, "_data"):
        data = x.detach()
        if data.dtype.name == "bfloat16":
            data = data.float()
        return np.asarray(data._data)
    return np.asarray(x)


def assert_close(actual, expected, *, rtol=None, atol=None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Raise AssertionError unless actual and expected match in shape, dtype and values within tolerance."""
    if isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), msg or f"length {len(actual)} != {len(expected)}"
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg)
        return
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys(), msg or "keys differ"
        for key in expected:
            assert_close(actual[key], expected[key], rtol=rtol, atol=atol, equal_nan=equal_nan, msg=msg)
        return
    if hasattr(expected, "_data") and hasattr(actual, "_data"):
        if tuple(actual.shape) != tuple(expected.shape):
            raise AssertionError(msg or f"The values for attribute 'shape' do not match: {actual.shape} != "
                                 f"{expected.shape}.")
        if check_dtype and actual.dtype is not expected.dtype:
            raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {actual.dtype} != "
                                 f"{expected.dtype}.")
        name = expected.dtype.name
    else:
        name = str(np.asarray(expected).dtype)
    default_rtol, default_atol = _DEFAULTS.get(name, (0.0, 0.0))
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    try:
        np.testing.assert_allclose(_values(actual), _values(expected), rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as error:
        raise AssertionError(msg or f"Tensor-likes are not close!\n{error}") from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, msg=msg or None)
