"""Op benchmarks: per-op overhead on tiny tensors and throughput on mid-size ones, ember vs torch.

The issue's targets: an op on a tiny tensor within 3x of torch (there the time
is all framework overhead: argument handling, dispatch, tensor creation,
autograd recording), and a mid-size op within 1.3x (there the time should be
the array library's kernel, and ember adds only a constant per call).

Each workload is written once, against a library namespace `lib` (ember and
torch share the API), and instantiated for both; so the two sides run the same
Python code and differ only in the library.  Every callable is a closure over
inputs built at import time, so only the op calls are timed; the closure call
itself (~50 ns) is paid by both sides alike.  Where it means something, a
NumPy version of the same math is timed too: ember runs on NumPy, so NumPy's
time is the floor ember can reach, and (ember - numpy) is ember's own overhead.
"""

from __future__ import annotations

import numpy as np
import torch

import ember

from .common import Workload

TINY_TARGET = 3.0
MID_TARGET = 1.3

_rng = np.random.default_rng(0)


def _random(*shape, dtype=np.float32) -> np.ndarray:
    return _rng.standard_normal(shape).astype(dtype)


def _convert(lib, arrays, requires_grad: bool):
    """The NumPy inputs as `lib` tensors: shared memory without grad (from_numpy), fresh leaves with grad."""
    if requires_grad:
        return [lib.tensor(a, requires_grad=True) for a in arrays]
    return [lib.from_numpy(a) for a in arrays]


def _both(name, build, arrays, *, target, numpy_fn=None, requires_grad=False, note="") -> Workload:
    """One Workload from one `build(lib, *tensors) -> callable`, instantiated for ember and for torch."""
    return Workload(
        name=name,
        ember_fn=build(ember, *_convert(ember, arrays, requires_grad)),
        torch_fn=build(torch, *_convert(torch, arrays, requires_grad)),
        numpy_fn=numpy_fn,
        target=target,
        note=note,
    )


# ---------------------------------------------------------------- tiny tensors: per-op overhead


def _tiny_workloads() -> list[Workload]:
    """Shape (4,) float32 (4x4 for matmul): the time is all framework overhead, the arithmetic is ~nothing."""
    a, b, c = _random(4), _random(4), _random(4)
    m, n = _random(4, 4), _random(4, 4)

    def chain(lib, x, y, z):
        return lambda: (x * y + z).sum()

    def chain_backward(lib, x, y, z):
        def step():
            (x * y + z).sum().backward()
            return x.grad

        return step

    return [
        _both("tiny add a+b", lambda lib, x, y: lambda: x + y, [a, b], target=TINY_TARGET, numpy_fn=lambda: a + b),
        _both("tiny mul a*b", lambda lib, x, y: lambda: x * y, [a, b], target=TINY_TARGET, numpy_fn=lambda: a * b),
        _both("tiny exp", lambda lib, x: lambda: lib.exp(x), [a], target=TINY_TARGET, numpy_fn=lambda: np.exp(a)),
        _both("tiny sum", lambda lib, x: lambda: x.sum(), [a], target=TINY_TARGET, numpy_fn=lambda: a.sum()),
        _both(
            "tiny view(2,2)",
            lambda lib, x: lambda: x.view(2, 2),
            [a],
            target=TINY_TARGET,
            numpy_fn=lambda: a.reshape(2, 2),
        ),
        _both(
            "tiny reshape(2,2)",
            lambda lib, x: lambda: x.reshape(2, 2),
            [a],
            target=TINY_TARGET,
            numpy_fn=lambda: a.reshape(2, 2),
        ),
        _both("tiny index t[1]", lambda lib, x: lambda: x[1], [a], target=TINY_TARGET, numpy_fn=lambda: a[1]),
        _both(
            "tiny matmul 4x4",
            lambda lib, x, y: lambda: lib.matmul(x, y),
            [m, n],
            target=TINY_TARGET,
            numpy_fn=lambda: m @ n,
        ),
        _both(
            "tiny chain (a*b+c).sum() no grad", chain, [a, b, c], target=TINY_TARGET, numpy_fn=lambda: (a * b + c).sum()
        ),
        _both(
            "tiny chain fwd, requires_grad",
            chain,
            [a, b, c],
            target=TINY_TARGET,
            requires_grad=True,
            note="forward + graph recording",
        ),
        _both("tiny chain fwd+backward", chain_backward, [a, b, c], target=TINY_TARGET, requires_grad=True),
    ]


# ---------------------------------------------------------------- mid-size tensors: throughput


def _elementwise_chain(lib, x):
    """Ten elementwise ops on 1M floats: each allocates its result, so this measures ops + allocation."""

    def run():
        y = x * 1.1
        y = y + 0.5
        y = y.tanh()
        y = y.exp()
        y = y * y
        y = y - 0.1  # y*y >= exp(-1)**2 = 0.135, so sqrt(abs(.)) below stays away from its singularity at 0
        y = y.abs()
        y = y.sqrt()
        y = y.sigmoid()
        return y / 2.0

    return run


def _elementwise_chain_backward(lib, x):
    """The ten-op chain, then backward: ten backward formulas and the gradient accumulation, on 1M floats."""
    forward = _elementwise_chain(lib, x)

    def run():
        forward().sum().backward()
        return x.grad

    return run


def _elementwise_chain_numpy(x):
    def run():
        y = x * np.float32(1.1)
        y = y + np.float32(0.5)
        y = np.tanh(y)
        y = np.exp(y)
        y = y * y
        y = y - np.float32(0.1)
        y = np.abs(y)
        y = np.sqrt(y)
        y = 1.0 / (1.0 + np.exp(-y))  # sigmoid: NumPy has none, so three ops here
        return y / np.float32(2.0)

    return run


def _softmax_composite(lib, x):
    """Softmax over rows written in ops, as a user (or a decomposition) would: max, subtract, exp, sum, divide."""

    def run():
        shifted = x - x.amax(-1, keepdim=True)
        e = shifted.exp()
        return e / e.sum(-1, keepdim=True)

    return run


def _softmax_numpy(x):
    def run():
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    return run


def _mid_workloads() -> list[Workload]:
    """Sizes where the kernel should dominate: ember's per-call constant should vanish into the NumPy time."""
    a, b = _random(1024, 1024), _random(1024, 1024)
    vector = _random(1 << 20)
    rows = _random(4096, 1024)
    source = _random(4 << 20)
    index = _rng.integers(0, source.size, size=1 << 20, dtype=np.int64)
    return [
        _both(
            "mid matmul 1024x1024",
            lambda lib, x, y: lambda: lib.matmul(x, y),
            [a, b],
            target=MID_TARGET,
            numpy_fn=lambda: a @ b,
        ),
        _both(
            "mid 10 elementwise ops, 1M",
            _elementwise_chain,
            [vector],
            target=MID_TARGET,
            numpy_fn=_elementwise_chain_numpy(vector),
        ),
        _both(
            "mid 10 elementwise ops, 1M, fwd+backward",
            _elementwise_chain_backward,
            [vector],
            target=MID_TARGET,
            requires_grad=True,
            note="grad accumulates across calls, as in training without zero_grad",
        ),
        _both(
            "mid softmax composite 4096x1024",
            _softmax_composite,
            [rows],
            target=MID_TARGET,
            numpy_fn=_softmax_numpy(rows),
        ),
        _both(
            "mid softmax (library) 4096x1024",
            lambda lib, x: lambda: lib.softmax(x, -1),
            [rows],
            target=MID_TARGET,
            numpy_fn=_softmax_numpy(rows),
        ),
        _both(
            "mid index_select 1M of 4M",
            lambda lib, x, i: lambda: lib.index_select(x, 0, i),
            [source, index],
            target=MID_TARGET,
            numpy_fn=lambda: np.take(source, index),
        ),
        _both(
            "mid gather 1M of 4M",
            lambda lib, x, i: lambda: lib.gather(x, 0, i),
            [source, index],
            target=MID_TARGET,
            numpy_fn=lambda: np.take_along_axis(source, index, 0),
        ),
    ]


WORKLOADS = _tiny_workloads() + _mid_workloads()
