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


def _raw_saved(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.exp()
    saved = y.grad_fn._raw_saved_result
    saved.register_hooks(lambda v: v, lambda v: v * 0)
    again = _outcome_of(lambda: saved.register_hooks(lambda v: v, lambda v: v))
    y.sum().backward()
    first = x.grad.clone()
    z = x * x
    z.grad_fn._raw_saved_self.register_hooks(lambda v: v.detach() * 10, lambda v: v)
    z.sum().backward()
    w = x * x
    other = w.grad_fn._raw_saved_other
    other.register_hooks(lambda v: v.detach() + 1, lambda v: v)
    unpacked = other.unpack().tolist()
    w.sum().backward()
    return again, first.tolist(), x.grad.tolist(), unpacked, _outcome_of(
        lambda: x.exp().grad_fn._raw_saved_result.register_hooks(lambda v: v, 5))[0]


def _outcome_of(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return type(error).__name__, str(error).split("\n")[0]
    return ("ok",)


def test_raw_saved_hooks_as_torch():
    assert _raw_saved(ember) == _raw_saved(torch)
