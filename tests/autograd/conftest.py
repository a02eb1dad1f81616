"""Shared helpers for the autograd tests: run one function against ember and torch and compare the results."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def to_plain(value):
    """Tensors to (numpy array, dtype name, requires_grad); containers recursively; the rest unchanged."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        array = value.detach().numpy() if isinstance(value, torch.Tensor) else value.detach().numpy()
        return ("tensor", np.array(array), str(value.dtype).split(".")[-1], value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(to_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    return value


def assert_same(actual, expected, rtol: float = 1e-6, atol: float = 1e-6, path: str = "result") -> None:
    if isinstance(expected, tuple) and expected and expected[0] == "tensor":
        assert isinstance(actual, tuple) and actual[0] == "tensor", f"{path}: {actual!r} is not a tensor"
        _, array, dtype, requires_grad = actual
        _, expected_array, expected_dtype, expected_requires_grad = expected
        assert dtype == expected_dtype, f"{path}: dtype {dtype} != {expected_dtype}"
        assert requires_grad == expected_requires_grad, f"{path}: requires_grad {requires_grad}"
        assert array.shape == expected_array.shape, f"{path}: shape {array.shape} != {expected_array.shape}"
        np.testing.assert_allclose(array, expected_array, rtol=rtol, atol=atol, err_msg=path, equal_nan=True)
        return
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, rtol, atol, f"{path}[{index}]")
        return
    if isinstance(expected, dict):
        assert actual.keys() == expected.keys(), path
        for key in expected:
            assert_same(actual[key], expected[key], rtol, atol, f"{path}[{key!r}]")
        return
    if isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=rtol, abs=atol, nan_ok=True), path
        return
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def catch(fn):
    """Run fn; return ("ok", value) or (exception type name, message)."""
    try:
        return ("ok", fn())
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return (type(error).__name__, str(error))


@pytest.fixture
def compare():
    """compare(fn, rtol=..., atol=...): fn(lib) run with lib=ember and lib=torch must give the same result."""

    def run(fn, rtol: float = 1e-6, atol: float = 1e-6):
        expected = to_plain(fn(torch))
        actual = to_plain(fn(ember))
        assert_same(actual, expected, rtol, atol)
        return actual

    return run
