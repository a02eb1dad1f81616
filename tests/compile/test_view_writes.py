"""In-place writes through views and boolean-mask fills inside a compiled function: recorded into one graph
(tracer.Tracer._write_through, _mask_fill) instead of breaking it, with values, gradients and input
mutations equal to eager's at every call."""

import numpy as np
import pytest

import ember


def _calls(fn, make_args, calls=3, grad=False):
    """Run fn eagerly and compiled on fresh arguments `calls` times; assert equal results (and grads)."""
    compiled = ember.compile(fn)
    for seed in range(calls):
        eager_args, compiled_args = make_args(seed), make_args(seed)
        expected = fn(*eager_args)
        got = compiled(*compiled_args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-6, atol=1e-6)
        for e, g in zip(eager_args, compiled_args):  # inputs written in place: written alike
            if isinstance(e, ember.Tensor):
                np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-6, atol=1e-6)
        if grad:
            sum(o.sum() for o in expected).backward()
            sum(o.sum() for o in got).backward()
            for e, g in zip(eager_args, compiled_args):
                if isinstance(e, ember.Tensor) and e.requires_grad:
                    np.testing.assert_allclose(g.grad.numpy(), e.grad.numpy(), rtol=1e-5, atol=1e-6)
    return compiled


def _one_graph(fn, *args):
    explained = ember.compiler.explain(fn, *args)
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained.break_reasons


def _x(shape=(4, 6), grad=False):
    def make(seed):
        x = ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
        return (x.requires_grad_(grad),)
    return make


def test_write_into_a_slice_of_an_intermediate():
    def f(x):
        y = x * 2
        y[:, :2] *= 3
        return y + 1

    _one_graph(f, *_x()(0))
    compiled = _calls(f, _x(grad=True), grad=True)
    assert compiled.captures == 1


def test_diagonal_add_and_other_views_read_after_the_write():
    def f(x):
        y = x @ x.t()
        row = y[1]  # a view made before the write: read after it, it sees the write
        y.diagonal().add_(1)
        flat = y.view(-1)
        flat[0] = 5
        return y * 2, row + 0, flat.sum()

    _one_graph(f, *_x()(0))
    _calls(f, _x(grad=True), grad=True)


def test_write_to_a_base_that_has_views():
    def f(x):
        y = x + 1
        column = y[:, 2]
        y.mul_(3)  # the base itself: its views read the new values
        return column * 1, y

    _one_graph(f, *_x()(0))
    _calls(f, _x(grad=True), grad=True)


def test_input_written_through_a_view_is_written_back():
    def f(x):
        x[:, 0].mul_(2)
        x.t()[1].add_(1)  # row 1 of the transpose: column 1
        return x.sum()

    _one_graph(f, *_x()(0))
    _calls(f, _x())


def test_buffer_made_in_the_function_filled_through_views():
    def f(x):
        buf = ember.zeros(4, 12)
        buf[:, :6].copy_(x)
        buf.narrow(1, 6, 6).copy_(x * 2)
        return buf

    _one_graph(f, *_x()(0))
    _calls(f, _x(grad=True), grad=True)


def test_rotary_style_halves_written_in_place():
    def f(x):
        out = x.clone()
        first, second = out[..., :3], out[..., 3:]
        first.mul_(0.5)
        second.add_(first)
        return out

    _one_graph(f, *_x((2, 3, 6))(0))
    _calls(f, _x((2, 3, 6), grad=True), grad=True)


@pytest.mark.parametrize("value", [0.0, "tensor"])
def test_boolean_mask_fill_follows_each_call_mask(value):
    def f(x):
        y = x * 1.5
        y[y > 0.5] = value if value != "tensor" else ember.tensor(-1.0)
        return y

    _one_graph(f, *_x()(0))
    compiled = _calls(f, _x(grad=True), calls=4, grad=True)
    assert compiled.captures == 1  # masks of other counts replay the one graph


def test_mask_over_trailing_dims_and_a_mask_argument():
    def f(x, mask):
        y = x + 0
        y[:, mask] = 1.0
        return y

    def make(seed):
        rng = np.random.default_rng(seed)
        return (ember.from_numpy(rng.standard_normal((4, 6)).astype(np.float32)),
                ember.from_numpy(rng.random(6) > 0.5))

    _one_graph(f, *make(0))
    compiled = _calls(f, make, calls=4)
    assert compiled.captures == 1


def test_mask_with_several_values_still_breaks():
    def f(x):
        y = x + 0
        mask = y > 0
        y[mask] = y[mask] * 2  # the values' count is the mask's: data-dependent
        return y

    explained = ember.compiler.explain(f, *_x()(0))
    assert explained.graph_break_count >= 1
    _calls(f, _x())


def test_aliased_inputs_and_dtype_reinterpretation_still_break():
    def aliased(x, row):
        row.add_(1)
        return x * 2

    x = ember.randn(3, 4)
    explained = ember.compiler.explain(aliased, x, x[0])
    assert any("in-place write to a view" in str(reason) for reason in explained.break_reasons)
    compiled = ember.compile(aliased)
    a, b = ember.randn(3, 4), None
    b = a.clone()
    np.testing.assert_allclose(compiled(a, a[0]).numpy(), aliased(b, b[0]).numpy())

    def reinterpreted(x):
        y = x * 1
        y.view(ember.int32)[0] = 0
        return y

    explained = ember.compiler.explain(reinterpreted, ember.randn(4))
    assert any("in-place write to a view" in str(reason) for reason in explained.break_reasons)
    _calls(reinterpreted, _x((4,)))


def test_new_sizes_get_correct_graphs():
    def f(x):
        y = x * 2
        y[:, -1:].zero_()
        return y.sum(1)

    compiled = ember.compile(f)
    for n in (3, 5, 7, 9):
        x = ember.randn(n, 4)
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-6)
