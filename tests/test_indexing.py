"""__getitem__ / __setitem__ against real PyTorch: values, shapes, dtypes, views, errors, gradients, versions.

Keys are written once with NumPy arrays standing for index tensors (`_key` turns them into either
library's tensors), so ember and torch see the same key.  See NOTE [ torch's indexing, in two stages ]
in ember/_ops/indexing.py for the semantics being checked.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing.opdb.core import to_numpy

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

BASE = np.arange(60, dtype=np.float64).reshape(3, 4, 5) - 20.5
MASK_2D = BASE[:, :, 0] > -10  # (3, 4)
MASK_3D = BASE > 10


def _key(lib, key):
    """A key with NumPy arrays replaced by lib tensors (np.int64/np.int32/bool/uint8 keep their dtype)."""
    if isinstance(key, np.ndarray):
        return lib.tensor(key)
    if isinstance(key, tuple):
        return tuple(_key(lib, k) for k in key)
    if isinstance(key, list):
        return [_key(lib, k) for k in key]
    return key


def _i(*values):
    return np.array(values, np.int64)


GET_KEYS = {
    "int": 1, "negative int": -1, "int tuple": (0, 1), "all ints": (2, 3, 4), "negative ints": (-1, -2, -3),
    "out of range": 5, "negative out of range": -4, "out of range later dim": (0, 9), "out of range after None": (None, 3),
    "out of range after ellipsis": (Ellipsis, 7), "too many": (0, 0, 0, 0), "slice": slice(1, None),
    "slice step": slice(None, None, 2), "slice step 3": (slice(None), slice(None, None, 3)),
    "slice past end": slice(-100, 100), "empty slice": slice(5, 1), "negative step": slice(None, None, -1),
    "zero step": slice(None, None, 0), "None": None, "Ellipsis": Ellipsis, "ellipsis int": (Ellipsis, 0),
    "None int None": (None, 0, None), "trailing None": (Ellipsis, None), "slice None int": (slice(None), None, 1),
    "two ellipses": (Ellipsis, 0, Ellipsis), "empty tuple": (), "True": True, "False": False, "int True": (0, True),
    "None False": (None, False), "all ints True": (0, 0, 0, True),
    "tensor": _i(0, 2), "tensor 2d": np.array([[0, 1], [2, 0]]), "tensor negative": _i(0, -1),
    "tensor repeated": _i(1, 1, 0), "tensor int32": np.array([2, 0], np.int32), "tensor empty": _i(),
    "tensor out of range": _i(0, 3), "tensor out of range neg": _i(0, -5), "tensor float": np.array([1.0]),
    "tensor int16": np.array([1], np.int16), "list": [0, 2], "list negative": [0, -1], "empty list": [],
    "list of bools": [True, False, True], "list mixed bool int": [True, 1], "list float": [1.0], "list negative float": [-1.5], "list complex": [1 + 0j], "list float in tuple": (0, [2.7]),
    "nested list as tuple": [[0, 1], [1, 2]], "list with None": [0, None], "list with slice": [slice(None), 0],
    "list int list": [0, [1]], "two tensors": (_i(0, 1), _i(1, 2)),
    "tensors around slice": (_i(0, 1), slice(None), _i(1, 2)), "adjacent after slice": (slice(None), _i(0, 1), _i(1, 2)),
    "tensor int": (_i(0, 1), 1), "int slice tensor": (1, slice(None), _i(0, 4)),
    "broadcast tensors": (np.array([[0], [1]]), _i(1, 2)), "broadcast mismatch": (_i(0, 1), _i(0, 1, 2)),
    "tensor None tensor": (_i(0, 1), None, _i(1, 2)), "tensor ellipsis tensor": (_i(0, 1), Ellipsis, _i(1, 2)),
    "None tensor None tensor": (None, _i(0, 1), None, _i(1, 2)), "ellipsis tensor None": (Ellipsis, _i(0, 1), None),
    "tensor slice tensor out of range": (_i(0, 1), slice(None), _i(0, 7)), "int list int": (0, [0, 1], 0),
    "mask 1d": BASE[:, 0, 0] > -10, "mask 2d": MASK_2D, "mask 3d": MASK_3D, "mask then int": (MASK_2D, 0),
    "mask then slice": (MASK_2D, slice(1, 3)), "slice mask": (slice(None), BASE[0, :, 0] > -15),
    "int slice mask": (0, slice(None), np.array([True, False, True, False, True])),
    "mask wrong shape": np.array([True, False]), "mask wrong later": (0, np.array([[True, False]])),
    "mask and tensor": (np.array([True, False, True]), _i(1, 3)), "mask tensor mismatch": (MASK_2D, _i(0, 1)),
    "uint8 mask": np.array([1, 0, 1], np.uint8), "all false mask": BASE[:, 0, 0] > 100,
    "0-d tensor": np.array(1), "0-d tensors": (np.array(1), np.array(2)), "0-d int32": np.array(2, np.int32),
    "0-d tensor out of range": np.array(7), "0-d bool": np.array(True), "0-d false": np.array(False),
    "0-d uint8": np.array(1, np.uint8), "int then 0-d": (0, np.array(1), slice(None)), "float": 1.5,
    "tensor slice bounds": slice(np.array(0), np.array(2)), "numpy int": np.int64(1),
}

ZERO_D_KEYS = {"int": 0, "None": None, "ellipsis": Ellipsis, "True": True, "False": False, "0-d tensor": np.array(0),
               "tensor": _i(0), "0-d bool": np.array(True), "slice": slice(None), "list": [0], "tuple int": (0,),
               "empty tuple": ()}


def _outcome(lib, source, key, action):
    tensor = lib.tensor(source)
    try:
        return action(tensor, _key(lib, key)), tensor
    except Exception as error:  # compared with the other library's
        return error, tensor


def _same_error(actual, expected):
    if isinstance(expected, Exception) or isinstance(actual, Exception):
        assert type(actual) is type(expected), f"ember: {actual!r} torch: {expected!r}"
        assert str(actual) == str(expected), f"ember: {actual} torch: {expected}"
        return True
    return False


def _same_values(actual, expected):
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_numpy(actual), to_numpy(expected))


def _check_getitem(source, key):
    expected, torch_input = _outcome(torch, source, key, lambda t, k: t[k])
    actual, ember_input = _outcome(ember, source, key, lambda t, k: t[k])
    if _same_error(actual, expected):
        return
    _same_values(actual, expected)
    torch_view = expected._base is not None
    assert (actual._base is not None) == torch_view, f"view: torch {torch_view}"
    if torch_view and expected.numel():  # an empty view's offset is not observable through NumPy
        assert actual.untyped_storage().data_ptr() == ember_input.untyped_storage().data_ptr()
        assert actual.storage_offset() == expected.storage_offset()
        sizes = expected.shape  # strides of size-1 dims are unobservable (NumPy gives 0 where torch computes one)
        assert [s for s, n in zip(actual.stride(), sizes) if n > 1] == [s for s, n in zip(expected.stride(), sizes)
                                                                        if n > 1]
    else:
        assert actual.data_ptr() != ember_input.data_ptr() or actual.numel() == 0


@pytest.mark.parametrize("key", GET_KEYS.values(), ids=GET_KEYS.keys())
def test_getitem(key):
    _check_getitem(BASE, key)


@pytest.mark.parametrize("key", ZERO_D_KEYS.values(), ids=ZERO_D_KEYS.keys())
def test_getitem_zero_dim(key):
    _check_getitem(np.array(2.5), key)


def test_getitem_noncontiguous_and_dtypes():
    for dtype in ("float32", "int64", "bool", "float16", "uint8"):
        source = BASE.astype(dtype)
        for key in (1, (slice(None), _i(0, 2)), (MASK_2D,), (Ellipsis, slice(None, None, 2), _i(1))):
            _check_getitem(source, key)
    ember_x, torch_x = ember.tensor(BASE).transpose(0, 2), torch.tensor(BASE).transpose(0, 2)
    for key in ((1, slice(None)), (_i(0, 4), 1), (slice(None), slice(1, 3), _i(0, 2))):
        _same_values(ember_x[_key(ember, key)], torch_x[_key(torch, key)])


def test_basic_index_view_writes_reach_base():
    ember_x, torch_x = ember.tensor(BASE), torch.tensor(BASE)
    for lib_x in (ember_x, torch_x):
        view = lib_x[1, :, ::2]
        view.mul_(-1)
        lib_x[None, 0, 1][...] = 7.0
    _same_values(ember_x, torch_x)


# ---------------------------------------------------------------- setitem

SET_CASES = {
    "int scalar": (1, 7.5), "int tensor value": (0, np.full((4, 5), 2.0)), "broadcast row": ((0, slice(None)), _i(1, 2, 3, 4, 5) * 1.0),
    "bad broadcast": (0, np.array([1.0, 2.0])), "extra dims": (slice(None), np.zeros((2, 3, 4, 5))),
    "leading ones basic": (0, np.ones((1, 1, 4, 5))), "leading ones advanced": ((0, [0, 1]), np.ones((1, 1, 2, 5))),
    "advanced scalar": (_i(0, 2), -1.0), "advanced tensor": ((_i(0, 2), slice(None), _i(1, 4)), np.ones((2, 4))),
    "advanced mismatch": ((0, [0, 1]), np.array([1.0, 2.0])), "repeated indices": (_i(1, 1), np.ones((2, 4, 5))),
    "mask scalar": (MASK_3D, 0.0), "mask tensor": (MASK_3D, np.arange(int(MASK_3D.sum())) * 1.0),
    "mask wrong count": (MASK_3D, np.array([1.0, 2.0])), "mask 0-d value": (MASK_2D, np.array(3.0)),
    "mask 0-d other dtype": (MASK_2D, np.array(3, np.int64)), "mask one-element other dtype": (MASK_2D, _i(3)),
    "advanced other dtype": (_i(0), np.ones((1, 4, 5), np.float32)), "basic other dtype": (0, np.ones((4, 5), np.int64)),
    "basic complex scalar": (0, 1 + 1j), "True": (True, 2.0), "0-d True tensor": (np.array(True), 2.0),
    "0-d True tensor other dtype": (np.array(True), np.array(2, np.int64)), "False": (False, np.ones(7)),
    "None": (None, 1.0), "ellipsis": (Ellipsis, 4.0), "negative step": (slice(None, None, -1), 1.0),
    "out of range": (9, 1.0), "advanced out of range": ((0, _i(0, 9)), 1.0), "string value": (0, "a"),
    "list value": (0, [1.0, 2.0]), "none value": (0, None), "int slice tensor": ((1, slice(None), _i(0, 4)), np.ones((4, 2))),
}


def _set(tensor, key, value):
    value = _key(ember if isinstance(tensor, ember.Tensor) else torch, value)
    tensor[key] = value
    return tensor


@pytest.mark.parametrize("key,value", SET_CASES.values(), ids=SET_CASES.keys())
def test_setitem(key, value):
    expected, torch_x = _outcome(torch, BASE, key, lambda t, k: _set(t, k, value))
    actual, ember_x = _outcome(ember, BASE, key, lambda t, k: _set(t, k, value))
    if not _same_error(actual, expected):
        _same_values(actual, expected)
        assert ember_x._version == torch_x._version


SCALAR_CASES = [("uint8", -1), ("uint8", 300), ("uint8", 2.7), ("uint8", float("nan")), ("int8", 200),
                ("int32", 2**40), ("int64", 1e300), ("float16", 1e6), ("bfloat16", 1e6), ("float32", 1e300),
                ("float32", float("inf")), ("bool", 5), ("bool", 0.0), ("int64", 2.9), ("int64", -2.9),
                ("float32", 1 + 1j), ("float32", 2 + 0j), ("complex64", 1 + 2j)]


@pytest.mark.parametrize("dtype,value", SCALAR_CASES, ids=[f"{d}-{v}" for d, v in SCALAR_CASES])
def test_setitem_scalar_conversion(dtype, value):
    for key in (0, [0], slice(0, 1)):
        outcomes = []
        for lib in (ember, torch):
            tensor = lib.zeros(3, dtype=getattr(lib, dtype))
            try:
                tensor[key] = value
                outcomes.append(tensor.float() if dtype == "bfloat16" else tensor)
            except Exception as error:
                outcomes.append(error)
        if not _same_error(*outcomes):
            _same_values(*outcomes)


# ---------------------------------------------------------------- gradients

GRAD_KEYS = {k: GET_KEYS[k] for k in (
    "int", "slice step", "ellipsis int", "None int None", "True", "tensor repeated", "tensor 2d", "two tensors",
    "tensors around slice", "int slice tensor", "broadcast tensors", "mask 2d", "mask then slice", "0-d tensor",
    "tensor None tensor", "list of bools", "nested list as tuple",
)}


def _pair(array, requires_grad=True):
    return (ember.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad))


@pytest.mark.parametrize("key", GRAD_KEYS.values(), ids=GRAD_KEYS.keys())
def test_getitem_grad(key):
    ember_x, torch_x = _pair(BASE)
    expected = torch_x[_key(torch, key)]
    actual = ember_x[_key(ember, key)]
    weight = np.random.default_rng(0).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weight)).sum().backward()
    (actual * ember.tensor(weight)).sum().backward()
    np.testing.assert_allclose(to_numpy(ember_x.grad), to_numpy(torch_x.grad))


SET_GRAD_CASES = {k: SET_CASES[k] for k in (
    "int tensor value", "broadcast row", "leading ones advanced", "advanced tensor", "repeated indices",
    "mask tensor", "mask 0-d value", "ellipsis", "int slice tensor",
)}


@pytest.mark.parametrize("key,value", SET_GRAD_CASES.values(), ids=SET_GRAD_CASES.keys())
def test_setitem_grad(key, value):
    """y = x.clone(); y[key] = v * 2; (y * w).sum().backward(): gradients to x and to v."""
    grads = []
    for lib, x in zip((ember, torch), _pair(BASE)):
        v = lib.tensor(value, requires_grad=True)
        y = x.clone()
        y[_key(lib, key)] = v * 2
        weight = lib.tensor(np.random.default_rng(1).standard_normal(BASE.shape))
        (y * weight).sum().backward()
        grads.append((x.grad, v.grad))
    (ember_x_grad, ember_v_grad), (torch_x_grad, torch_v_grad) = grads
    np.testing.assert_allclose(to_numpy(ember_x_grad), to_numpy(torch_x_grad))
    np.testing.assert_allclose(to_numpy(ember_v_grad), to_numpy(torch_v_grad))


def test_setitem_through_view_grad():
    """Writing through a view of a non-leaf reaches the base's gradient (CopySlices)."""
    grads = []
    for lib, x in zip((ember, torch), _pair(BASE)):
        v = lib.tensor(np.ones(5), requires_grad=True)
        y = x * 1
        row = y[1]
        row[[0, 2]] = v * 3
        (y * y).sum().backward()
        grads.append((x.grad, v.grad))
    np.testing.assert_allclose(to_numpy(grads[0][0]), to_numpy(grads[1][0]))
    np.testing.assert_allclose(to_numpy(grads[0][1]), to_numpy(grads[1][1]))


def test_setitem_double_backward():
    x = ember.tensor(BASE[:, :2, :3].copy(), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: _set(t.clone(), (_i(0, 2), slice(None), 1), t[0, :, :2] ** 2), (x,))
    assert ember.autograd.gradgradcheck(lambda t: t[_i(0, 0, 1)][:, [1, 1]] ** 2, (ember.tensor(BASE[:2, :3, :2],
                                                                                              requires_grad=True),))


# ---------------------------------------------------------------- version counter


def test_setitem_bumps_version_once_and_views_share_it():
    for lib in (ember, torch):
        x = lib.tensor(BASE)
        view = x[0]
        before = x._version
        x[_key(lib, _i(0, 1))] = 1.0
        assert x._version == before + 1 and view._version == x._version
        view[1:3] = 2.0
        assert x._version == before + 2
        x[False] = 5.0
        assert x._version == before + 2
        copy = x[_key(lib, _i(0))]
        copy[0] = 3.0
        assert x._version == before + 2


def test_setitem_on_leaf_requiring_grad_raises():
    for lib in (ember, torch):
        x = lib.tensor(BASE, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            x[0] = 1.0
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            x[0][1] = 1.0


def test_setitem_modifies_saved_tensor_raises():
    for lib in (ember, torch):
        x = lib.tensor(BASE, requires_grad=True)
        y = x.exp()  # saves its result
        y[_key(lib, _i(0))] = 0.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_index_put_accumulate_rows_with_repeated_and_negative_indices():
    """The row fast path (sort + add.reduceat) adds repeats, including -1 and n-1 naming one row, as torch."""
    import torch

    rng = np.random.default_rng(5)
    index = np.array([0, 0, 4, -1, 2, -5, 4, 0])
    values = rng.standard_normal((8, 3))
    mine = ember.zeros(5, 3, dtype=ember.float64).index_put_((ember.tensor(index),), ember.tensor(values),
                                                             accumulate=True)
    theirs = torch.zeros(5, 3, dtype=torch.float64).index_put_((torch.tensor(index),), torch.tensor(values),
                                                              accumulate=True)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12)


def test_index_put_accumulate_with_a_boolean_mask_of_rows():
    import torch

    values = np.arange(6.0).reshape(2, 3)
    mask = np.array([True, False, True])
    mine = ember.ones(3, 3, dtype=ember.float64).index_put_((ember.tensor(mask),), ember.tensor(values),
                                                            accumulate=True)
    theirs = torch.ones(3, 3, dtype=torch.float64).index_put_((torch.tensor(mask),), torch.tensor(values),
                                                             accumulate=True)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    every = np.array([True, True])  # a mask as long as the values: must not be read as indices 1, 1
    mine = ember.zeros(2, 3, dtype=ember.float64).index_put_((ember.tensor(every),), ember.tensor(values),
                                                             accumulate=True)
    np.testing.assert_array_equal(mine.numpy(), values)


def test_index_tensors_overwritten_before_backward_keep_the_forward_gradient():
    """x[mask], x[idx] and a[mask] = v keep copies of their index arrays for backward, so writing the mask or
    index tensor afterwards cannot misroute the gradient (torch raises at backward instead; found in Wishart's
    resampling of singular draws)."""
    x = ember.randn(5, requires_grad=True)
    mask = ember.tensor([True, False, True, False, False])
    y = x[mask]
    mask.fill_(False)
    (y * ember.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 2, 0, 0])

    x.grad = None
    index = ember.tensor([0, 3])
    y = x[index]
    index[0] = 1
    (y * ember.tensor([1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 0, 0, 2, 0])

    a = ember.zeros(5)
    v = ember.tensor([1.0, 2.0], requires_grad=True)
    where = ember.tensor([False, True, False, True, False])
    a[where] = v
    where.fill_(True)
    (a * ember.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [1, 3])
