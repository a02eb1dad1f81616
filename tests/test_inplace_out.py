"""In-place ops written straight into their tensor (NOTE [ In-place ops without a copy ] in ember/_dispatch.py):
the same values as computing out of place and copying in, the version counter, the cases that must keep the
general path (autograd, graph capture, aliasing, half types, meta), and no full-size temporary."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ember
from ember import _dispatch
from ember._ops import elementwise, random

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "int8", "complex64", "float16", "bfloat16", "bool"]


def _positive(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.5, 3.0, size=shape)
    if dtype == "bool":
        return ember.tensor(values > 1.5)
    if dtype.startswith("complex"):
        values = values + 1j * rng.uniform(-1, 1, size=shape)
    return ember.tensor(values).to(getattr(ember, dtype))


def _mixed(shape, dtype, seed):
    """Signed values with a nan, inf and -0.0 where the dtype holds them."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(-3.0, 3.0, size=shape)
    if dtype in ("bool",):
        return ember.tensor(values > 0)
    if dtype == "uint8":
        values = np.abs(values) * 40
    if dtype.startswith(("float", "bfloat", "complex")):
        flat = values.reshape(-1)
        flat[:3] = [np.nan, np.inf, -0.0]
    if dtype.startswith("complex"):
        values = values + 1j * rng.uniform(-1, 1, size=shape)
    return ember.tensor(values).to(getattr(ember, dtype))


S = (3, 5)


def p(dtype, seed=1, shape=S):
    return _positive(shape, dtype, seed)


def m(dtype, seed=1, shape=S):
    return _mixed(shape, dtype, seed)


# (op name in the registry, method, self builder, argument builders, kwargs): every op with an out_impl appears
CASES = [
    ("add", "add_", m, [lambda d: m(d, 2)], {}),
    ("add", "add_", m, [lambda d: m(d, 2, (5,))], {"alpha": 2}),
    ("add", "add_", m, [lambda d: 3], {}),
    ("sub", "sub_", m, [lambda d: m(d, 2)], {"alpha": 3}),
    ("sub", "sub_", m, [lambda d: 1], {}),
    ("mul", "mul_", m, [lambda d: m(d, 2)], {}),
    ("mul", "mul_", m, [lambda d: 0.5 if d[0] in "fbc" else 3], {}),
    ("div", "div_", m, [lambda d: p(d, 2, (1, 5))], {}),
    ("div", "true_divide_", m, [lambda d: 3.0], {}),
    ("addcmul", "addcmul_", m, [lambda d: m(d, 2), lambda d: m(d, 3, (5,))], {"value": 2}),
    ("addcmul", "addcmul_", m, [lambda d: m(d, 2), lambda d: m(d, 3)], {}),
    ("addcdiv", "addcdiv_", m, [lambda d: m(d, 2), lambda d: p(d, 3)], {"value": -0.25}),
    ("addcdiv", "addcdiv_", m, [lambda d: m(d, 2), lambda d: p(d, 3)], {}),
    ("lerp", "lerp_", m, [lambda d: m(d, 2), lambda d: 0.3], {}),
    ("lerp", "lerp_", m, [lambda d: m(d, 2), lambda d: p(d, 3, (5,))], {}),
    ("maximum", "maximum_", m, [lambda d: m(d, 2)], {}),
    ("minimum", "minimum_", m, [lambda d: m(d, 2, (5,))], {}),
    ("fmax", "fmax_", m, [lambda d: m(d, 2)], {}),
    ("fmin", "fmin_", m, [lambda d: m(d, 2)], {}),
    ("pow", "pow_", p, [lambda d: 2], {}),
    ("pow", "pow_", p, [lambda d: 0.5 if d[0] in "fbc" else 3], {}),
    ("pow", "pow_", p, [lambda d: p(d, 2)], {}),
    ("clamp", "clamp_", m, [lambda d: -1, lambda d: 2], {}),
    ("clamp", "clamp_min_", m, [lambda d: 0], {}),
    ("clamp", "clamp_max_", m, [lambda d: m(d, 2, (5,))], {}),
    ("fill", "fill_", m, [lambda d: 2], {}),
    ("zero", "zero_", m, [], {}),
    ("rsqrt", "rsqrt_", p, [], {}),
    ("neg", "neg_", m, [], {}),
    ("abs", "abs_", m, [], {}),
] + [(name, name + "_", p, [], {}) for name in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sqrt",
    "reciprocal",
)]


def _ops_with_out_impl():
    names = set()
    for module in (elementwise, random):
        for value in vars(module).values():
            if isinstance(value, _dispatch.OpDef) and value.out_impl is not None:
                names.add(value.name)
    return names


def test_every_out_impl_is_covered():
    assert _ops_with_out_impl() <= {case[0] for case in CASES}


def _run(method, build_self, builders, kwargs, dtype, fast):
    target = build_self(dtype)
    args = [b(dtype) for b in builders]
    previous = _dispatch.INPLACE_OUT
    _dispatch.INPLACE_OUT = fast
    try:
        version = target._version
        result = getattr(target, method)(*args, **kwargs)
    except (RuntimeError, NotImplementedError, TypeError) as error:
        return error
    finally:
        _dispatch.INPLACE_OUT = previous
    assert result is target
    assert target._version == version + 1
    return target


def _same_bits(a, b) -> bool:
    return a._dtype is b._dtype and a.shape == b.shape and a._data.tobytes() == b._data.tobytes()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case[1] + str(case[4] or ""))
def test_fast_path_matches_out_of_place(case, dtype, monkeypatch):
    """Bit for bit the values of out of place + copy, the same errors, and no copy when the dtype allows."""
    _, method, build_self, builders, kwargs = case
    slow = _run(method, build_self, builders, kwargs, dtype, fast=False)
    copies = []
    original = ember.Tensor._inplace_from

    def counting(self, *args, **kw):
        copies.append(1)
        return original(self, *args, **kw)

    monkeypatch.setattr(ember.Tensor, "_inplace_from", counting)
    fast = _run(method, build_self, builders, kwargs, dtype, fast=True)
    if isinstance(slow, Exception):
        assert type(fast) is type(slow) and str(fast) == str(slow)
        return
    assert not isinstance(fast, Exception), fast
    assert _same_bits(fast, slow), (fast, slow)
    # Writes in place unless half types compute in float32 (not fill/zero) or the result's dtype is not self's
    # (abs of complex is real; a float-only op on an integral tensor failed above).
    general = (dtype in ("float16", "bfloat16") and method not in ("fill_", "zero_")) or (method, dtype) == (
        "abs_", "complex64")
    assert len(copies) == general


def test_half_types_compute_in_float32_and_copy(monkeypatch):
    x = ember.ones(4, dtype=ember.float16)
    copies = []
    original = ember.Tensor._inplace_from
    monkeypatch.setattr(ember.Tensor, "_inplace_from", lambda self, r, *a: copies.append(1) or original(self, r, *a))
    x.add_(ember.full((4,), 1e-3, dtype=ember.float16), alpha=3)
    assert copies == [1]


def test_version_counter_and_views():
    base = ember.zeros(4, 6)
    view = base[:, ::2]  # non-contiguous
    other_view = base[1]
    view.add_(1.5)
    assert base._version == view._version == other_view._version == 1
    expected = np.zeros((4, 6), np.float32)
    expected[:, ::2] = 1.5
    np.testing.assert_array_equal(base.numpy(), expected)
    other_view.mul_(2)
    expected[1] *= 2
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base._version == 2


def test_self_alias_and_overlapping_operands():
    """x op x works in place; an operand overlapping self at another offset takes the general path."""
    x = ember.arange(6.0)
    x.add_(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0) * 2)
    for fast in (True, False):
        base = ember.arange(8.0)
        previous, _dispatch.INPLACE_OUT = _dispatch.INPLACE_OUT, fast
        try:
            base[1:].add_(base[:-1])
            base[:4].lerp_(base[2:6], 0.5)
            base[2:].clamp_(min=base[:-2])
        finally:
            _dispatch.INPLACE_OUT = previous
        if fast:
            fast_values = base.numpy().copy()
    np.testing.assert_array_equal(fast_values, base.numpy())


def test_autograd_takes_the_recording_path():
    a = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a * 1
    x.mul_(a)  # records: x = a * a
    assert x.grad_fn is not None and x.grad_fn.name() == "MulBackward0"
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 4.0, 6.0])

    y = ember.ones(3)
    y.add_(a)  # self doesn't require grad, an operand does: y joins the graph
    assert y.requires_grad and y.grad_fn is not None

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a.add_(1)
    with ember.no_grad():
        a.add_(1)  # the optimizer's case: in place, no node
    assert a.grad_fn is None and a.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), [2.0, 3.0, 4.0])


def test_in_place_through_a_view_of_a_graph_tensor():
    a = ember.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = a * 2
    b[:2].mul_(3)
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [6.0, 6.0, 2.0, 2.0])


def test_saved_tensor_modified_in_place_still_raises():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = a.detach().clone()
    c = a * b  # saves b
    with ember.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_meta_device():
    x = ember.empty(3, 4, device="meta")
    assert x.add_(ember.empty(4, device="meta"), alpha=2) is x
    assert x.lerp_(ember.empty(3, 4, device="meta"), 0.5).shape == (3, 4)
    assert x._version == 2


def test_errors_are_the_general_paths():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ember.arange(3).add_(1.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.ones(3).add_(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.ones(1).expand(3).add_(1)


def test_graph_capture_sees_an_op_call_and_an_inplace():
    seen = []

    class Recorder:
        def record(self, op, args, params, results):
            seen.append(("op", op.name))

        def inplace(self, target, result):
            seen.append(("inplace", target is x))

    x = ember.ones(3)
    previous, _dispatch.tracer = _dispatch.tracer, Recorder()
    try:
        x.mul_(2)
    finally:
        _dispatch.tracer = previous
    assert seen == [("op", "mul"), ("inplace", True)]


def test_add_allocates_no_output_sized_temporary():
    n = 1_000_000
    x, y = ember.zeros(n), ember.ones(n)
    x.add_(y)  # warm up
    tracemalloc.start()
    try:
        x.add_(y)
        x.mul_(0.5)
        x.sqrt_()
        x.clamp_(0.1, 0.9)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * 4 // 10
    np.testing.assert_allclose(x.numpy()[:3], [0.9, 0.9, 0.9])


def test_multi_step_ops_keep_one_temporary():
    n = 1_000_000
    x, y, z = ember.zeros(n), ember.ones(n), ember.full((n,), 2.0)
    x.addcdiv_(y, z, value=0.5)
    tracemalloc.start()
    try:
        x.addcdiv_(y, z, value=0.5)
        x.lerp_(y, 0.25)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * 4 * 1.5
