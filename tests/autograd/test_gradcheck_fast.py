"""gradcheck(fast_mode=True) as torch's: the same random projections (a fresh Generator's rand in float32,
normalised), the same scalars v^T J u in the failure message, the slow-mode appendix, and the same verdicts."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _wrong(lib, factor):
    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * 2 + y.sin(), (x * y).sum()

        @staticmethod
        def backward(ctx, g, h):
            return g * factor, g * 0 + h

    return Scaled.apply


CASES = {
    "passes": lambda lib: ((lambda t: (t.exp() * t.sin()).sum(0)), (lib.arange(12.0, dtype=lib.float64)
                                                                     .reshape(3, 4) / 7,)),
    "two_inputs": lambda lib: ((lambda t, w: (t @ w).tanh()), (lib.arange(6.0, dtype=lib.float64).reshape(2, 3) / 5,
                                                              lib.arange(6.0, dtype=lib.float64).reshape(3, 2) / 9)),
    "wrong_first_input": lambda lib: (_wrong(lib, 3), (lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64),
                                                       lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64))),
    "slightly_wrong": lambda lib: (_wrong(lib, 2.0001), (lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64),
                                                         lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64))),
}


def _outcome(lib, name):
    fn, inputs = CASES[name](lib)
    inputs = tuple(x.requires_grad_() for x in inputs)
    try:
        return ("ok", lib.autograd.gradcheck(fn, inputs, fast_mode=True))
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return (type(error).__name__, str(error).replace("torch.", "").replace("ember.", ""))


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_mode_as_torch(name):
    assert _outcome(ember, name) == _outcome(torch, name)
