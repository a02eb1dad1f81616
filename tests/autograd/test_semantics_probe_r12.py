"""Tensor and autograd semantics found by comparing ember with torch: version counters (`.data`, set_, resize_,
out=), preserve_format copies, the layout of accumulated gradients, retain_grad across in-place ops, tensor
hook results, inference tensors, grad-mode decorators, autograd.grad(is_grads_batched=True) and the names of
in-place view backward nodes.  Each test runs the same code on both libraries and compares what they report."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def outcome(fn, lib):
    """fn(lib)'s value with tensors as lists and torch/ember names unified, or (error type, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plain(fn(lib))
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        return type(error).__name__, str(error).replace("ember.", "torch.")


def plain(value):
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return value.detach().tolist()
    if isinstance(value, (tuple, list)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, (ember.Size, torch.Size)):
        return tuple(value)
    return value


def same(fn):
    expected = outcome(fn, torch)
    actual = outcome(fn, ember)
    assert actual == expected


# ---------------------------------------------------------------- version counters


def test_writes_through_data_do_not_trip_saved_tensor_checks():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        y = (w * w).sum()
        w.data.mul_(2)
        y.backward()
        return w.grad, w._version

    same(fn)


def test_writes_through_detach_still_trip_saved_tensor_checks():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        y = (w * w).sum()
        w.detach().mul_(2)
        y.backward()

    same(fn)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        fn(ember)


def test_data_has_a_fresh_version_counter_shared_with_its_views():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            w.add_(1)
        d = w.data
        first = d._version
        d[0:2].add_(1)
        return first, d._version, w._version, w.detach()._version, w.data._version

    same(fn)


def test_a_saved_result_written_through_data_is_not_checked():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y.data.mul_(2)
        y.sum().backward()
        return [round(v, 4) for v in x.grad.tolist()]

    same(fn)


def test_a_saved_result_written_in_place_raises():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        y = x.exp()
        y.mul_(2)
        y.sum().backward()

    same(fn)


def test_data_assignment_keeps_the_tensors_own_version_counter():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        z = lib.zeros(3)
        z.add_(1)
        z.add_(1)
        w.data = z
        before = (w._version, z._version)
        with lib.no_grad():
            w.add_(1)
        return before, w._version, z._version, z

    same(fn)


def test_data_assignment_of_a_non_tensor_is_a_type_error():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        w.data = [1.0, 2.0]

    same(fn)


def test_data_assignment_of_integers_to_a_tensor_requiring_grad_raises():
    def fn(lib):
        w = lib.ones(3, requires_grad=True)
        w.data = lib.ones(3, dtype=lib.int64)

    same(fn)


def test_set_resize_and_out_keep_and_bump_the_version_counter():
    def fn(lib):
        x = lib.ones(2)
        x.add_(1)
        y = lib.ones(3)
        y.add_(1)
        y.add_(1)
        x.set_(y)
        after_set = (x._version, y._version)
        x.add_(1)
        after_write = (x._version, y._version)
        r = lib.ones(2)
        r.add_(1)
        r.resize_(10)
        out = lib.empty(0)
        lib.add(lib.ones(3), 1, out=out)
        return after_set, after_write, r._version, out._version

    same(fn)


def test_out_resize_of_a_non_empty_tensor_warns():
    for lib in (ember, torch):
        out = lib.ones(3)
        with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
            lib.add(lib.ones(2, 2), 1, out=out)


# ---------------------------------------------------------------- preserve_format


LAYOUTS = {
    "transposed": lambda lib: lib.arange(12.0).reshape(3, 4).t(),
    "permuted": lambda lib: lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1),
    "channels_last": lambda lib: lib.arange(48.0).reshape(2, 3, 2, 4).contiguous(memory_format=lib.channels_last),
    "permuted_with_gaps": lambda lib: lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[::2],
    "expanded_transposed": lambda lib: lib.arange(3.0).reshape(3, 1).expand(3, 4).t(),
    "expanded_mixed": lambda lib: lib.arange(6.0).reshape(2, 3).t().unsqueeze(0).expand(4, 3, 2),
}

COPIES = {
    "clone": lambda lib, x: x.clone(),
    "clone_contiguous": lambda lib, x: x.clone(memory_format=lib.contiguous_format),
    "empty_like": lambda lib, x: lib.empty_like(x),
    "zeros_like": lambda lib, x: lib.zeros_like(x),
    "ones_like": lambda lib, x: lib.ones_like(x),
    "full_like": lambda lib, x: lib.full_like(x, 2.0),
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randn_like": lambda lib, x: lib.randn_like(x),
    "randint_like": lambda lib, x: lib.randint_like(x, 5),
    "to_double": lambda lib, x: x.to(lib.float64),
    "double": lambda lib, x: x.double(),
    "to_copy": lambda lib, x: x.to(lib.float32, copy=True),
    "contiguous": lambda lib, x: x.contiguous(),
}


@pytest.mark.parametrize("copy", sorted(COPIES))
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_copies_keep_the_layout_torch_keeps(layout, copy):
    def fn(lib):
        x = LAYOUTS[layout](lib)
        y = COPIES[copy](lib, x)
        values = y.tolist() == x.tolist() if copy in ("clone", "to_copy", "contiguous") else None
        return tuple(y.shape), y.stride(), y.is_contiguous(), values

    same(fn)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_view_of_a_clone_fails_where_torch_fails(layout):
    same(lambda lib: tuple(LAYOUTS[layout](lib).clone().view(-1).shape))


def test_clone_of_a_transposed_tensor_cannot_be_flattened_by_view():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        ember.arange(12.0).reshape(3, 4).t().clone().view(-1)


@pytest.mark.parametrize("form", ["contiguous_format", "channels_last", "preserve_format"])
def test_to_and_contiguous_with_a_memory_format(form):
    def fn(lib):
        fmt = getattr(lib, form)
        results = []
        for x in (lib.arange(12.0).reshape(3, 4).t(), lib.arange(48.0).reshape(2, 3, 2, 4),
                  lib.arange(48.0).reshape(2, 3, 2, 4).contiguous(memory_format=lib.channels_last)):
            for convert in (lambda t: t.to(memory_format=fmt), lambda t: t.to(lib.float64, memory_format=fmt),
                            lambda t: t.contiguous(memory_format=fmt), lambda t: lib.zeros_like(t, memory_format=fmt)):
                results.append(outcome(lambda _: (lambda y: (y.stride(), y is x))(convert(x)), lib))
        return results

    same(fn)


def test_copy_into_a_tensor_without_grad_records_copy_backwards():
    def fn(lib):
        a = lib.zeros(2, 3)
        s = lib.ones(3, requires_grad=True)
        a.copy_(s)
        a.sum().backward()
        return a.grad_fn.name(), s.grad

    same(fn)


# ---------------------------------------------------------------- accumulated gradient layout


@pytest.mark.parametrize("case", ["fresh_transposed", "transposed_leaf", "transposed_leaf_contiguous_use",
                                  "leaf_with_gaps", "clone_of_transposed"])
def test_leaf_gradients_follow_the_leafs_layout(case):
    def fn(lib):
        if case == "fresh_transposed":
            w = lib.ones(2, 3, requires_grad=True)
            (w.t() * lib.arange(6.0).reshape(3, 2)).sum().backward()
        elif case == "transposed_leaf":
            w = lib.ones(3, 2).t().requires_grad_()
            (w * 2).sum().backward()
        elif case == "transposed_leaf_contiguous_use":
            w = lib.ones(3, 2).t().requires_grad_()
            (w.contiguous() * 2).sum().backward()
        elif case == "leaf_with_gaps":
            w = lib.ones(4, 2)[::2].requires_grad_()
            (w * 2).sum().backward()
        else:
            w = lib.ones(2, 3, requires_grad=True)
            (w.t().clone() * lib.arange(6.0).reshape(3, 2)).sum().backward()
        return w.grad, w.grad.stride()

    same(fn)


def test_create_graph_gradient_is_a_copy():
    def fn(lib):
        w = lib.ones(2, 3, requires_grad=True)
        (w * w).sum().backward(create_graph=True)
        return w.grad.grad_fn.name(), w.grad

    same(fn)


# ---------------------------------------------------------------- retain_grad and hooks


def test_retain_grad_follows_an_in_place_op():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        y.sum().backward()
        return y.grad, x.grad

    same(fn)


def test_retain_grad_on_a_base_follows_an_in_place_op_on_its_view():
    def fn(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y[1:3].mul_(5)
        (y * y).sum().backward()
        return y.grad, x.grad

    same(fn)


@pytest.mark.parametrize("written", ["base", "view"])
def test_retain_grad_on_a_view_follows_its_regenerated_grad_fn(written):
    def fn(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 2
        v = y[1:3]
        v.retain_grad()
        (y if written == "base" else v).mul_(3)
        (v * v if written == "base" else y * y).sum().backward()
        return v.grad, x.grad

    same(fn)


def test_retain_grad_follows_an_in_place_view_op():
    def fn(lib):
        x = lib.ones(2, 3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.t_()
        (y * lib.arange(6.0).reshape(3, 2)).sum().backward()
        return y.grad, x.grad

    same(fn)


@pytest.mark.parametrize("returned", ["wrong_size", "wrong_dtype", "not_a_tensor"])
def test_a_tensor_hook_result_is_checked(returned):
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 2

        def hook(grad):
            return {"wrong_size": lib.ones(4), "wrong_dtype": grad.double(), "not_a_tensor": 5}[returned]

        y.register_hook(hook)
        y.sum().backward()

    same(fn)


# ---------------------------------------------------------------- grad modes and inference tensors


def test_set_grad_enabled_as_a_decorator_restores_the_mode_at_once():
    def fn(lib):
        @lib.set_grad_enabled(False)
        def f(x):
            return x * 2

        after_decorating = lib.is_grad_enabled()
        return f(lib.ones(3, requires_grad=True)).requires_grad, after_decorating, lib.is_grad_enabled()

    same(fn)


@pytest.mark.parametrize("mode", ["no_grad", "enable_grad"])
def test_grad_modes_decorate_without_parentheses(mode):
    def fn(lib):
        @getattr(lib, mode)
        def f(x):
            return (x * 2).requires_grad, lib.is_grad_enabled()

        with lib.no_grad() if mode == "enable_grad" else lib.enable_grad():
            return f(lib.ones(3, requires_grad=True))

    same(fn)


def test_inference_mode_false_inside_inference_mode():
    def fn(lib):
        with lib.inference_mode():
            with lib.inference_mode(False):
                t = lib.ones(1)
                return t.is_inference(), lib.is_grad_enabled(), lib.is_inference_mode_enabled()

    same(fn)


INFERENCE_USES = {
    "saved_for_backward": lambda lib, t: lib.ones(3, requires_grad=True) * t,
    "added_ok": lambda lib, t: (lib.ones(3, requires_grad=True) + t).requires_grad,
    "requires_grad_": lambda lib, t: t.requires_grad_(),
    "requires_grad_setter": lambda lib, t: setattr(t, "requires_grad", True),
    "parameter": lambda lib, t: lib.nn.Parameter(t),
    "add_": lambda lib, t: t.add_(1),
    "setitem": lambda lib, t: t.__setitem__(0, 2.0),
    "t_": lambda lib, t: t.t_(),
    "resize_": lambda lib, t: t.resize_(4),
    "out": lambda lib, t: lib.add(t, 1, out=t),
    "version": lambda lib, t: t._version,
    "view_is_view": lambda lib, t: (t[0:2].is_inference(), t[0:2]._is_view()),
}


@pytest.mark.parametrize("use", sorted(INFERENCE_USES))
def test_inference_tensors_outside_inference_mode(use):
    def fn(lib):
        with lib.inference_mode():
            t = lib.ones(3)
        return INFERENCE_USES[use](lib, t)

    same(fn)


@pytest.mark.parametrize("make", ["no_grad", "inference_mode"])
def test_a_view_made_without_grad_of_a_tensor_requiring_grad_requires_grad(make):
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        with getattr(lib, make)():
            v = x[0:2]
        flags = (v.requires_grad, v.grad_fn is None, v.is_leaf, v.retains_grad)
        y = v * 2
        y.sum().backward()
        return flags, y.requires_grad, y.grad_fn.name(), x.grad, v.grad

    same(fn)


# ---------------------------------------------------------------- errors and names


@pytest.mark.parametrize("key", ["0", "slice(0, 2)", "...", "None", "(slice(None),)", "[0, 1]", "lib.tensor(1)",
                                 "slice(0, 3)"])
def test_assigning_into_a_leaf_names_the_view_as_torch_does(key):
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        x[eval(key, {"lib": lib})] = 2.0  # noqa: S307 - the key's source is the test's own

    same(fn)


def test_backward_of_a_tensor_without_grad_names_it_before_the_scalar_rule():
    same(lambda lib: lib.ones(3).backward())


@pytest.mark.parametrize("value", ["double", "bigger", "an_int"])
def test_grad_assignment_errors(value):
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        x.grad = {"double": lib.zeros(3, dtype=lib.float64), "bigger": lib.zeros(4), "an_int": 5}[value]

    same(fn)


def test_autograd_grad_with_batched_grad_outputs():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        z = lib.ones(2, requires_grad=True)
        y = x * lib.tensor([1.0, 2.0, 3.0])
        jacobian, unused = lib.autograd.grad(y, [x, z], lib.eye(3), is_grads_batched=True, allow_unused=True)
        return jacobian, unused

    same(fn)
    same(lambda lib: lib.autograd.grad(lib.ones(3, requires_grad=True) * 2, lib.ones(3, requires_grad=True),
                                       lib.ones(3), is_grads_batched=True))


def test_a_modified_saved_view_is_named_by_its_regenerated_node():
    def fn(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.clone()
        y[1:] = y[1:] * x[:2]
        lib.autograd.grad((y * y).sum(), x)

    same(fn)


@pytest.mark.parametrize("call", ["squeeze_()", "squeeze_(0)", "squeeze_((0, 1))", "squeeze()", "squeeze(0)",
                                  "squeeze(dim=0)", "squeeze((0, 1))", "unsqueeze_(0)", "t_()", "transpose_(0, 1)",
                                  "swapaxes_(0, 1)", "swapdims_(0, 1)", "as_strided_((2,), (1,))"])
def test_view_backward_names_per_overload(call):
    def fn(lib):
        x = lib.ones(1, 1, 2, requires_grad=True) if "squeeze" in call else lib.ones(2, 2, requires_grad=True)
        return eval(f"y.{call}", {"y": x * 1}).grad_fn.name()  # noqa: S307 - the call's source is the test's own

    same(fn)


def test_strides_of_preserved_copies_match_numpy_views():
    """ember's preserve_format copy of a permuted array is the permutation of a C-ordered buffer."""
    x = ember.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)
    y = x.clone()
    assert y.stride() == (1, 12, 4)
    np.testing.assert_array_equal(y.numpy(), x.numpy())
