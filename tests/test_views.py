"""Views against PyTorch: which results share storage, their strides and offsets, writes through views,
version counters, and gradients through in-place ops on views (NOTE [ In-place ops and views ])."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _base(lib, shape=(4, 6), dtype="float32"):
    return lib.arange(float(np.prod(shape)), dtype=getattr(lib, dtype)).reshape(shape)


def _layout(result, base):
    """What a result looks like relative to its base: storage sharing, element offset, strides, contiguity."""
    if isinstance(result, (tuple, list)):
        return [_layout(r, base) for r in result]
    shares = result.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    return {
        "shape": tuple(result.shape),
        "shares_storage": shares,
        "offset": (result.data_ptr() - base.data_ptr()) // result.element_size() if shares else None,
        "storage_offset": result.storage_offset() if shares else 0,
        "stride": tuple(result.stride()),
        "contiguous": result.is_contiguous(),
    }


# (name, base shape, function of (lib, base)); the base is arange(...).reshape(shape) in float32
LAYOUT_CASES = [
    ("view", (4, 6), lambda lib, a: a.view(2, 12)),
    ("view -1", (4, 6), lambda lib, a: a.view(-1)),
    ("reshape view", (4, 6), lambda lib, a: a.reshape(8, 3)),
    ("reshape copy", (4, 6), lambda lib, a: a.t().reshape(24)),
    ("reshape of a view", (4, 6), lambda lib, a: a[1:].reshape(-1)),
    ("reshape noncontiguous view", (4, 6), lambda lib, a: a[:, ::2].reshape(4, 3, 1)),
    ("transpose", (4, 6), lambda lib, a: a.transpose(0, 1)),
    ("transpose negative", (2, 3, 4), lambda lib, a: a.transpose(-1, 0)),
    ("t", (4, 6), lambda lib, a: a.t()),
    ("t 1-D", (6,), lambda lib, a: a.t()),
    ("permute", (2, 3, 4), lambda lib, a: a.permute(2, 0, 1)),
    ("movedim", (2, 3, 4), lambda lib, a: a.movedim(0, -1)),
    ("slice", (4, 6), lambda lib, a: a[1:, ::2]),
    ("slice step", (4, 6), lambda lib, a: a[::3, 1:5:2]),
    ("int index", (4, 6), lambda lib, a: a[2]),
    ("int index 1-D", (6,), lambda lib, a: a[3]),
    ("int pair index", (4, 6), lambda lib, a: a[2, 3]),
    ("ellipsis", (2, 3, 4), lambda lib, a: a[..., 1]),
    ("select", (4, 6), lambda lib, a: a.select(1, -2)),
    ("expand", (4, 1), lambda lib, a: a.expand(4, 5)),
    ("expand new dims", (1, 6), lambda lib, a: a.expand(3, 2, 6)),
    ("expand_as", (1, 6), lambda lib, a: a.expand_as(lib.ones(3, 6))),
    ("broadcast_to", (4, 1), lambda lib, a: lib.broadcast_to(a, (2, 4, 3))),
    ("narrow", (4, 6), lambda lib, a: a.narrow(1, 2, 3)),
    ("narrow dim 0", (4, 6), lambda lib, a: a.narrow(0, 1, 2)),
    ("diagonal", (4, 6), lambda lib, a: a.diagonal()),
    ("diagonal offset", (4, 6), lambda lib, a: a.diagonal(2)),
    ("diagonal negative offset", (4, 6), lambda lib, a: a.diagonal(-1)),
    ("diagonal 3-D", (2, 3, 4), lambda lib, a: a.diagonal(1, 0, 2)),
    ("unsqueeze", (4, 6), lambda lib, a: a.unsqueeze(1)),
    ("unsqueeze last", (4, 6), lambda lib, a: a.unsqueeze(-1)),
    ("squeeze", (4, 1, 6), lambda lib, a: a.squeeze()),
    ("squeeze dim", (4, 1, 6), lambda lib, a: a.squeeze(1)),
    ("flatten", (2, 3, 4), lambda lib, a: a.flatten(1)),
    ("flatten copy", (2, 3, 4), lambda lib, a: a.transpose(0, 2).flatten()),
    ("unflatten", (4, 6), lambda lib, a: a.unflatten(1, (2, 3))),
    ("as_strided", (4, 6), lambda lib, a: a.as_strided((3, 3), (6, 2), 1)),
    ("as_strided overlapping", (4, 6), lambda lib, a: a.as_strided((4, 3), (1, 1))),
    ("as_strided of a view", (4, 6), lambda lib, a: a[1].as_strided((2, 2), (1, 2))),
    ("unfold", (4, 6), lambda lib, a: a.unfold(1, 2, 2)),
    ("unbind", (4, 6), lambda lib, a: a.unbind(1)),
    ("split", (5, 6), lambda lib, a: a.split(2)),
    ("split sections", (5, 6), lambda lib, a: a.split([1, 5], 1)),
    ("chunk", (5, 6), lambda lib, a: a.chunk(3, 1)),
    ("tensor_split", (7, 2), lambda lib, a: a.tensor_split(3)),
    ("hsplit", (4, 6), lambda lib, a: a.hsplit(3)),
    ("meshgrid", (4,), lambda lib, a: lib.meshgrid(a, a[:3], indexing="xy")),
    ("atleast_3d", (4, 6), lambda lib, a: lib.atleast_3d(a)),
    ("view_as", (4, 6), lambda lib, a: a.view_as(lib.ones(24))),
    # copies, though NumPy's equivalents are views
    ("flip copies", (4, 6), lambda lib, a: a.flip(0)),
    ("rot90", (4, 6), lambda lib, a: a.rot90()),
    ("repeat", (4, 6), lambda lib, a: a.repeat(1, 1)),
    ("cat one", (4, 6), lambda lib, a: lib.cat([a])),
    ("diag copies", (4, 6), lambda lib, a: lib.diag(a)),
    ("tril", (4, 6), lambda lib, a: a.tril()),
]


@pytest.mark.parametrize("name,shape,fn", LAYOUT_CASES, ids=[case[0] for case in LAYOUT_CASES])
def test_layout_matches_torch(name, shape, fn):
    expected_base, actual_base = _base(torch, shape), _base(ember, shape)
    expected, actual = fn(torch, expected_base), fn(ember, actual_base)
    assert _layout(actual, actual_base) == _layout(expected, expected_base)
    actual_list = actual if isinstance(actual, tuple) else (actual,)
    expected_list = expected if isinstance(expected, tuple) else (expected,)
    assert len(actual_list) == len(expected_list)
    for a, e in zip(actual_list, expected_list):
        np.testing.assert_array_equal(a.numpy(), e.numpy())


def test_real_imag_are_views_of_complex():
    for lib in (torch, ember):
        z = lib.tensor(np.array([1 + 0j, 1 + 0j, 1 + 0j], np.complex64))
        assert z.real.stride() == (2,) and z.real.storage_offset() == 0 and z.imag.storage_offset() == 1
        z.real.mul_(3)
        z.imag.add_(2)
        assert z.real.tolist() == [3.0, 3.0, 3.0] and z.imag.tolist() == [2.0, 2.0, 2.0]
        assert z.imag.stride() == (2,)


# ---------------------------------------------------------------- writes through views


WRITE_CASES = [
    ("row mul_", lambda lib, a: a[1].mul_(2)),
    ("column fill_", lambda lib, a: a[:, 2].fill_(-1)),
    ("1-D element", lambda lib, a: a.view(-1)[5].fill_(100)),
    ("diagonal zero_", lambda lib, a: a.diagonal().zero_()),
    ("transpose add_", lambda lib, a: a.t()[0].add_(10)),
    ("narrow copy_", lambda lib, a: a.narrow(1, 1, 2).copy_(lib.ones(4, 2))),
    ("split piece", lambda lib, a: a.split(2, 1)[1].mul_(-1)),
    ("unbind piece", lambda lib, a: a.unbind(0)[3].fill_(9)),
    ("chunk piece", lambda lib, a: a.chunk(2)[1].sub_(1)),
    ("as_strided", lambda lib, a: a.as_strided((2, 2), (6, 1), 3).fill_(0)),
    ("setitem slice", lambda lib, a: a.__setitem__((slice(1, None), slice(None, None, 2)), 7.0)),
    ("setitem through view", lambda lib, a: a[1:].__setitem__(0, 5.0)),
    ("reshape view", lambda lib, a: a.reshape(2, 12)[1].fill_(3)),
    ("squeeze_ then write", lambda lib, a: a[1:2].squeeze_(0).fill_(8)),
    ("unsqueeze_ then write", lambda lib, a: a[1].unsqueeze_(0).fill_(4)),
    ("t_ then write", lambda lib, a: a[:2, :2].t_()[0].fill_(1)),
]


@pytest.mark.parametrize("name,fn", WRITE_CASES, ids=[case[0] for case in WRITE_CASES])
def test_writes_reach_the_base(name, fn):
    expected, actual = _base(torch), _base(ember)
    fn(torch, expected)
    fn(ember, actual)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    assert actual._version == expected._version


def test_base_writes_show_in_older_views():
    for lib in (torch, ember):
        a = _base(lib)
        row, column, diagonal = a[2], a[:, 1], a.diagonal()
        a.mul_(-1)
        assert row.tolist() == [-12.0, -13.0, -14.0, -15.0, -16.0, -17.0]
        assert column.tolist() == [-1.0, -7.0, -13.0, -19.0]
        assert diagonal.tolist() == [-0.0, -7.0, -14.0, -21.0]


def test_expanded_write_is_rejected():
    message = "more than one element of the written-to tensor refers to a single memory location"
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match=message):
            lib.ones(3, 1).expand(3, 4).add_(1)


# ---------------------------------------------------------------- version counters


def _version_trace(lib):
    a = lib.zeros(3, 4)
    trace = [a._version]
    view = a[1]
    view.add_(1)
    trace += [a._version, view._version]
    a.mul_(2)
    trace += [a._version, view._version]
    a[0] = 3.0
    trace += [a._version, view._version]
    other = a.t()
    other.unsqueeze_(0)
    trace += [a._version, other._version]
    detached = a.detach()
    detached.zero_()
    trace += [a._version, detached._version]
    clone = a.clone()
    clone.add_(1)
    trace += [a._version, clone._version]
    out = lib.zeros(2)
    lib.add(lib.ones(2), 1, out=out)
    trace += [out._version]
    return trace


def test_version_counter_shared_by_views():
    assert _version_trace(ember) == _version_trace(torch)


# ---------------------------------------------------------------- gradients through in-place ops on views


def _leaf(lib, values, **kwargs):
    return lib.tensor(values, dtype=lib.float64, requires_grad=True, **kwargs)


def _row_mul(lib):
    a = _leaf(lib, np.arange(6.0).reshape(2, 3))
    b = a.clone()
    v = b[1]
    v.mul_(2)
    (b * lib.arange(6.0, dtype=lib.float64).reshape(2, 3)).sum().backward()
    return [a.grad]


def _element_exp(lib):
    leaf = _leaf(lib, [0.5, -1.0, 2.0])
    x = leaf * 1
    x[0].exp_()
    (x * x).sum().backward()
    return [leaf.grad]


def _buffer_setitem(lib):
    w = _leaf(lib, [1.5])
    buffer = lib.zeros(3, dtype=lib.float64)
    buffer[1] = (w * 2)[0]
    (buffer * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
    return [w.grad]


def _buffer_slice_setitem(lib):
    w = _leaf(lib, [1.0, 2.0])
    buffer = lib.zeros(2, 3, dtype=lib.float64)
    buffer[:, 1] = w.exp()
    buffer[0, 2] = w[1] * 3
    (buffer ** 2).sum().backward()
    return [w.grad]


def _old_view_after_base_write(lib):
    leaf = _leaf(lib, np.arange(1.0, 7.0).reshape(2, 3))
    base = leaf * 2
    view = base[:, 1]
    base.mul_(3)
    (view * lib.tensor([1.0, 10.0], dtype=lib.float64)).sum().backward()
    return [leaf.grad]


def _view_written_then_base_used(lib):
    leaf = _leaf(lib, np.arange(1.0, 7.0).reshape(2, 3))
    other = _leaf(lib, [0.5, 1.5, 2.5])
    base = leaf.clone()
    base[0].mul_(other)
    base.diagonal().add_(1)
    (base.sin()).sum().backward()
    return [leaf.grad, other.grad]


def _two_views_of_one_base(lib):
    leaf = _leaf(lib, np.arange(1.0, 13.0).reshape(3, 4))
    base = leaf + 0
    first, second = base.t(), base[1:]
    first[1].mul_(2)
    second.add_(first.t()[:2] + 0.5)
    (base * base).sum().backward()
    return [leaf.grad]


def _copy_into_view(lib):
    leaf = _leaf(lib, [1.0, 2.0, 3.0])
    target = lib.zeros(2, 3, dtype=lib.float64)
    target[1].copy_(leaf * leaf)
    target.narrow(1, 0, 2).mul_(3)
    target.sum().backward()
    return [leaf.grad]


def _inplace_on_narrowed_piece(lib):
    leaf = _leaf(lib, np.arange(1.0, 7.0))
    base = leaf * 1
    first, second = base.tensor_split(2)
    second.mul_(first.exp())
    (base * base).sum().backward()
    return [leaf.grad]


def _double_backward_through_view(lib):
    leaf = _leaf(lib, [1.0, 2.0, 3.0])
    base = leaf * 1
    base[1:].pow_(3)
    (grad,) = lib.autograd.grad(base.sum(), leaf, create_graph=True)
    grad.sum().backward()
    return [leaf.grad]


def _grad_fn_of_view_after_write(lib):
    leaf = _leaf(lib, [1.0, 2.0, 3.0, 4.0])
    base = leaf.clone()
    view = base[:2]
    base.add_(1)
    view.sum().backward()
    return [leaf.grad, lib.tensor(float(view.grad_fn is not None))]


GRAD_CASES = [_row_mul, _element_exp, _buffer_setitem, _buffer_slice_setitem, _old_view_after_base_write,
              _view_written_then_base_used, _two_views_of_one_base, _copy_into_view, _inplace_on_narrowed_piece,
              _double_backward_through_view, _grad_fn_of_view_after_write]


@pytest.mark.parametrize("fn", GRAD_CASES, ids=[fn.__name__.strip("_") for fn in GRAD_CASES])
def test_grad_through_inplace_on_views(fn):
    expected, actual = fn(torch), fn(ember)
    for a, e in zip(actual, expected):
        assert a is not None
        np.testing.assert_allclose(a.detach().numpy(), e.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_view_grad_fn_names():
    for lib in (torch, ember):
        x = lib.ones(2, 3, requires_grad=True)
        names = [type(y.grad_fn).__name__ for y in (x.view(6), x.t(), x.transpose(0, 1), x.permute(1, 0),
                                                     x.expand(2, 2, 3), x.unsqueeze(0), x.select(0, 1),
                                                     x.narrow(1, 1, 2))]
        assert names[:3] == ["ViewBackward0", "TBackward0", "TransposeBackward0"]
        assert names[3:] == ["PermuteBackward0", "ExpandBackward0", "UnsqueezeBackward0", "SelectBackward0",
                             "SliceBackward0"]


# ---------------------------------------------------------------- errors


def _raises_like_torch(fn):
    with pytest.raises(RuntimeError) as expected:
        fn(torch)
    with pytest.raises(RuntimeError) as actual:
        fn(ember)
    return str(actual.value), str(expected.value)


def test_inplace_on_leaf_requiring_grad():
    actual, expected = _raises_like_torch(lambda lib: lib.ones(3, requires_grad=True).mul_(2))
    assert actual == expected


def test_inplace_on_view_of_leaf():
    actual, expected = _raises_like_torch(lambda lib: lib.ones(3, 2, requires_grad=True)[0].mul_(2))
    assert actual.startswith("a view of a leaf Variable that requires grad is being used in an in-place operation")
    assert expected.startswith(actual)


def test_setitem_on_leaf():
    def fn(lib):
        x = lib.ones(3, requires_grad=True)
        x[0] = 2.0

    actual, expected = _raises_like_torch(fn)
    assert "leaf Variable that requires grad is being used in an in-place operation" in actual
    assert "leaf Variable that requires grad is being used in an in-place operation" in expected


@pytest.mark.parametrize("make", [lambda x: x.split(2), lambda x: x.split([1, 3]), lambda x: x.chunk(2),
                                  lambda x: x.unbind(0)], ids=["split", "split_with_sizes", "chunk", "unbind"])
def test_inplace_on_multi_view_output(make):
    def fn(lib):
        x = lib.ones(4, 2, requires_grad=True) * 1
        make(x)[1].mul_(2)

    actual, expected = _raises_like_torch(fn)
    assert actual == expected
    for lib in (torch, ember):  # allowed without grad
        make(lib.ones(4, 2))[1].mul_(2)
        with lib.no_grad():
            make(lib.ones(4, 2, requires_grad=True) * 1)[1].mul_(2)


def test_inplace_view_ops_on_leaf():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.ones(2, 1, requires_grad=True).squeeze_()


def test_inplace_view_ops_gradient():
    def fn(lib):
        leaf = _leaf(lib, np.arange(6.0).reshape(2, 3))
        x = leaf * 1
        x.t_().unsqueeze_(0)
        (x * lib.arange(6.0, dtype=lib.float64).reshape(1, 3, 2)).sum().backward()
        return leaf.grad, tuple(x.shape), x.stride(), x._version

    (actual, *actual_layout), (expected, *expected_layout) = fn(ember), fn(torch)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
    assert actual_layout == expected_layout


def test_modified_saved_tensor():
    def fn(lib):
        leaf = lib.ones(3, requires_grad=True)
        x = leaf * 2
        y = x.exp()  # saves its result
        y.add_(1)
        y.sum().backward()

    actual, expected = _raises_like_torch(fn)
    pattern = r"one of the variables needed for gradient computation has been modified by an inplace operation"
    assert re.match(pattern, actual) and re.match(pattern, expected)
    assert "is at version 1; expected version 0 instead" in actual


def test_saved_sibling_view_modified():
    """mul_ saves `other`; writing into a sibling view of the same storage bumps its version too."""

    def fn(lib):
        base = _leaf(lib, np.arange(1.0, 7.0)) * 1
        first, second = base.tensor_split(2)
        second.mul_(first)
        base.sum().backward()

    actual, expected = _raises_like_torch(fn)
    assert "modified by an inplace operation" in actual and "modified by an inplace operation" in expected


def test_modified_saved_input_through_view():
    def fn(lib):
        leaf = lib.ones(2, 3, requires_grad=True)
        x = leaf * 2
        y = x * x  # saves x
        x[0].mul_(3)  # a write through a view of x bumps x's version
        y.sum().backward()

    actual, expected = _raises_like_torch(fn)
    assert "modified by an inplace operation" in actual and "modified by an inplace operation" in expected


def test_no_grad_write_to_leaf_view_is_allowed():
    for lib in (torch, ember):
        x = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            x[1:].mul_(2)
        assert x.tolist() == [1.0, 2.0, 2.0]
        assert x.is_leaf and x._version == 1


def test_mul_by_scalar_does_not_save_self():
    """mul's gradient for self reads only the other operand (OpDef.grad_reads): a later write to self is fine."""
    def fn(lib):
        leaf = _leaf(lib, [1.0, 2.0, 3.0])
        base = leaf * 1
        scaled = base[:2] * 0.5
        base.add_(1)
        scaled.sum().backward()
        return leaf.grad

    np.testing.assert_array_equal(fn(ember).numpy(), fn(torch).numpy())


def test_inplace_through_a_dtype_changing_view_under_autograd_raises():
    """Position maps cannot express view_as_real's two floats per complex: refuse instead of a wrong gradient."""
    z = ember.randn(3, dtype=ember.complex64, requires_grad=True)
    with pytest.raises(RuntimeError, match="reinterprets its base's dtype"):
        ember.view_as_real(z * 1).mul_(2)
    with ember.no_grad():
        w = z * 1
        ember.view_as_real(w).mul_(2)
    np.testing.assert_allclose(w.numpy(), 2 * z.detach().numpy(), rtol=1e-6)
