"""Shared helper for the round-21 autograd probe: run one snippet `fn(lib)` in torch and in ember, compare.

The outcome is the snippet's return value (tensors as dtype, shape and values rounded to 8 decimals; NaN and
-0.0 normalised) or its exception (type and the start of its message), plus the warnings it raised (category
and the start of the message; DeprecationWarnings, which torch's internals raise, are left out).  The library
name ("torch." / "ember.") is masked in every string.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


# warned once per process (torch's TORCH_WARN_ONCE): which snippet sees it depends on the test order
_ONCE = "Using backward() with create_graph=True"


def _mask(text: str) -> str:
    return text.replace("torch.", "LIB.").replace("ember.", "LIB.")


def _number(value: float):
    return "nan" if math.isnan(value) else round(value, 8) + 0.0  # + 0.0 turns -0.0 into 0.0


def _normalise(value):
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        array = value.detach().numpy()
        values = (
            array.tolist()
            if array.dtype == bool
            else np.vectorize(_number, otypes=[object])(array.astype(float)).tolist()
            if array.size
            else []
        )
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape), values)
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _mask(value)
    return value


def outcome(fn, lib, chars: int):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", _normalise(fn(lib)))
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            result = ("error", type(error).__name__, _mask(str(error))[:chars])
    seen = sorted(
        {
            (w.category.__name__, _mask(str(w.message))[:40])
            for w in caught
            if not issubclass(w.category, DeprecationWarning) and not str(w.message).startswith(_ONCE)
        }
    )
    return result, seen


def assert_parity(fn, chars: int = 300) -> None:
    got, expected = outcome(fn, ember, chars), outcome(fn, torch, chars)
    assert got == expected, f"\nember: {got}\ntorch: {expected}"
