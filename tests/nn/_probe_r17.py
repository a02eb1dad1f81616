"""Shared helpers for the round-17 nn.functional probes: run one snippet in torch and in ember, compare.

A snippet is `fn(lib, make)`: `make(array, grad=False, dtype=None)` wraps a NumPy array as a `lib` tensor
(a leaf requiring grad when `grad`).  `assert_parity` compares the results (values, dtypes, shapes; Python
values as they are) and then the leaves' gradients of sum(output * fixed cotangent), or, when torch raises,
the exception type and the start of its message (torch.Size printed as ember.Size).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def rnd(*shape, seed=0, low=None, high=None) -> np.ndarray:
    """float64 draws, the same for both libraries: standard normal, or uniform in [low, high)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) if low is None else rng.uniform(low, high, shape)


def ints(high, *shape, seed=0, low=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(low, high, shape).astype(np.int64)


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [item for part in value for item in _flatten(part)]
    return [value]


def _outcome(lib, fn, grad: bool):
    """("error", type name, message), or (outputs, gradients): outputs as (dtype name, shape, array) or
    ("py", value); gradients one array (or None) per leaf, None when no output needs grad."""
    leaves = []

    def make(array, grad=False, dtype=None):
        array = np.asarray(array)
        tensor = lib.tensor(array) if dtype is None else lib.tensor(array, dtype=getattr(lib, dtype))
        if grad:
            tensor.requires_grad_(True)
            leaves.append(tensor)
        return tensor

    try:
        results = _flatten(fn(lib, make))
    except Exception as error:  # noqa: BLE001 - the exception is what is compared
        return ("error", type(error).__name__, str(error))
    outputs = []
    for value in results:
        if isinstance(value, (torch.Tensor, ember.Tensor)):
            detached = value.detach()
            outputs.append((str(detached.dtype).split(".")[-1], tuple(detached.shape), detached.numpy().copy()))
        else:
            outputs.append(("py", value))
    differentiable = [v for v in results if isinstance(v, (torch.Tensor, ember.Tensor)) and v.requires_grad]
    if not grad or not differentiable:
        return outputs, None
    total = 0
    for index, value in enumerate(differentiable):
        cotangent = lib.tensor(rnd(*value.shape, seed=100 + index)).to(value.dtype)
        total = total + (value * cotangent).sum()
    total.backward()
    return outputs, [None if leaf.grad is None else leaf.grad.numpy().copy() for leaf in leaves]


def assert_parity(fn, grad: bool = True, rtol: float = 1e-6, atol: float = 1e-8, message_chars: int = 30):
    """fn agrees in torch and ember: the same exception (type and message start), or the same outputs and
    gradients."""
    expected = _outcome(torch, fn, grad)
    got = _outcome(ember, fn, grad)
    if expected[0] == "error" or got[0] == "error":
        assert got[0] == "error" and expected[0] == "error", (expected, got)
        assert got[1] == expected[1], (expected, got)
        expected_message = expected[2].replace("torch.Size", "ember.Size")  # the one intended difference
        assert got[2][:message_chars] == expected_message[:message_chars], (expected_message, got[2])
        return
    (expected_outputs, expected_grads), (got_outputs, got_grads) = expected, got
    assert len(got_outputs) == len(expected_outputs)
    for e, g in zip(expected_outputs, got_outputs):
        if e[0] == "py":
            assert g == e
            continue
        assert g[:2] == e[:2], (e[:2], g[:2])
        np.testing.assert_allclose(g[2], e[2], rtol=rtol, atol=atol, equal_nan=True)
    assert (got_grads is None) == (expected_grads is None)
    for e, g in zip(expected_grads or [], got_grads or []):
        assert (g is None) == (e is None)
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=rtol * 10, atol=atol * 10, equal_nan=True)
