"""Horizontal fusion (runtime.fuse_horizontally): independent fused nodes that run one shared flat C function
become one node calling its `_each` loop once."""

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.filterwarnings("error:ember.compile:RuntimeWarning")


def _fused(compiled):
    return [n for n in compiled.graphs[-1].nodes if n.kind == "fused"]


def _run_twice(fn, *args, **options):
    compiled = ember.compile(fn, options=options or None)
    compiled(*args)  # the capturing call runs eagerly
    return compiled, compiled(*args)


def test_independent_kernels_of_one_function_run_as_one_node():
    g = ember.Generator().manual_seed(0)
    tensors = [ember.randn(*shape, generator=g) for shape in ((3, 5), (7,), (2, 2, 4))]

    def fn(a, b, c):
        return tuple((t * 2 + 1).tanh() for t in (a, b, c))

    compiled, out = _run_twice(fn, *tensors)
    (node,) = _fused(compiled)
    assert node.op.name.endswith("_x3") and len(node.members) == 3
    for actual, expected in zip(out, fn(*tensors)):
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    off, plain = _run_twice(fn, *tensors, horizontal=False)
    assert len(_fused(off)) == 3
    for actual, expected in zip(out, plain):
        assert np.array_equal(actual.numpy(), expected.numpy())


def test_a_kernel_reading_another_through_a_matmul_is_not_merged():
    """y's kernel reads x's kernel's output (through a matmul): one node cannot compute both."""
    g = ember.Generator().manual_seed(1)
    a, w = ember.randn(4, 6, generator=g), ember.randn(6, 6, generator=g)

    def fn(a, w):
        x = (a * 2 + 1).tanh()
        return ((x @ w) * 2 + 1).tanh()

    compiled, out = _run_twice(fn, a, w)
    fused = _fused(compiled)
    assert len(fused) == 2 and all(n.members is None for n in fused), compiled.graphs[-1].code
    np.testing.assert_allclose(out.numpy(), fn(a, w).numpy(), rtol=1e-5, atol=1e-6)


def test_sets_split_over_threads_by_size():
    """Large members of different sizes: the sets are split over the kernel threads in contiguous runs."""
    previous = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        g = ember.Generator().manual_seed(2)
        tensors = [ember.randn(n, generator=g) for n in (300_000, 1_000, 90_000, 250_000, 7)]

        def fn(*ts):
            return tuple(t * 0.5 - 1 for t in ts)

        compiled, out = _run_twice(fn, *tensors)
        (node,) = _fused(compiled)
        assert len(node.members) == 5
        for actual, t in zip(out, tensors):
            assert np.array_equal(actual.numpy(), t.numpy() * np.float32(0.5) - np.float32(1))
    finally:
        ember.set_num_threads(previous)


def test_recorded_kernels_are_not_merged():
    """Kernels autograd records keep their own nodes (a horizontal node has no backward)."""
    a, b = ember.randn(3, 4, requires_grad=True), ember.randn(5, requires_grad=True)

    def fn(a, b):
        return (a * 2 + 1).tanh().sum() + (b * 2 + 1).tanh().sum()

    compiled, out = _run_twice(fn, a, b)
    assert all(n.members is None for n in _fused(compiled))
    out.backward()
    assert a.grad is not None and b.grad is not None
