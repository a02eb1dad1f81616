"""dtypes: promotion tables, casting rules, finfo/iinfo, default dtype, aliases, result_type with weak scalars."""

from __future__ import annotations

import copy
import itertools
import pickle

import pytest

import ember

torch = pytest.importorskip("torch")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
         "complex64", "complex128"]
PAIRS = list(itertools.product(NAMES, NAMES))


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


@pytest.fixture
def default_float64():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    yield
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


def test_promote_types_all_pairs():
    for a, b in PAIRS:
        expected = torch.promote_types(getattr(torch, a), getattr(torch, b))
        actual = ember.promote_types(getattr(ember, a), getattr(ember, b))
        assert _name(actual) == _name(expected), (a, b)


def test_can_cast_all_pairs():
    for a, b in PAIRS:
        assert ember.can_cast(getattr(ember, a), getattr(ember, b)) == torch.can_cast(getattr(torch, a),
                                                                                     getattr(torch, b)), (a, b)


FLOAT_FIELDS = ["bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"]


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo(name):
    expected, actual = torch.finfo(getattr(torch, name)), ember.finfo(getattr(ember, name))
    for field in FLOAT_FIELDS:
        assert getattr(actual, field) == getattr(expected, field), (name, field)


def test_finfo_default_and_errors():
    assert ember.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError):
        torch.finfo(torch.int32)


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    if name == "bool":
        with pytest.raises(TypeError):
            torch.iinfo(torch.bool)
        with pytest.raises(TypeError):
            ember.iinfo(ember.bool)
        return
    expected, actual = torch.iinfo(getattr(torch, name)), ember.iinfo(getattr(ember, name))
    for field in ("bits", "min", "max", "dtype"):
        assert getattr(actual, field) == getattr(expected, field), (name, field)
    with pytest.raises(TypeError):
        ember.iinfo(ember.float32)


def test_dtype_attributes_match_torch():
    for name in NAMES:
        expected, actual = getattr(torch, name), getattr(ember, name)
        assert actual.is_floating_point == expected.is_floating_point, name
        assert actual.is_complex == expected.is_complex, name
        assert actual.is_signed == expected.is_signed, name
        assert actual.itemsize == expected.itemsize, name
        assert repr(actual) == repr(expected).replace("torch.", "ember."), name
        assert str(actual) == str(expected).replace("torch.", "ember."), name
        assert _name(actual.to_real()) == _name(expected.to_real()), name
        if name not in ("bool", "uint8", "int8", "int16", "int32", "int64"):
            assert _name(actual.to_complex()) == _name(expected.to_complex()) or name in ("float16", "bfloat16"), name


def test_dtype_pickle_and_copy_keep_identity():
    for name in NAMES:
        dtype = getattr(ember, name)
        assert pickle.loads(pickle.dumps(dtype)) is dtype
        assert copy.deepcopy(dtype) is dtype and copy.copy(dtype) is dtype


ALIASES = ["half", "float", "double", "short", "int", "long", "cfloat", "cdouble", "bool", "uint8", "int8"]


@pytest.mark.parametrize("alias", ALIASES)
def test_aliases(alias):
    assert _name(getattr(ember, alias)) == _name(getattr(torch, alias))


def test_dtype_equality_and_hash():
    assert ember.float32 == ember.float
    assert ember.float32 != ember.float64
    assert len({ember.float32, ember.float, ember.int64, ember.long}) == 2


def test_default_dtype_effects(default_float64):
    assert ember.get_default_dtype() is ember.float64
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.tensor([1]).dtype is ember.int64
    assert ember.tensor(1j).dtype is ember.complex128
    assert ember.arange(0.0, 1.0, 0.5).dtype is ember.float64
    assert ember.arange(3).dtype is ember.int64
    assert ember.zeros(2).dtype is ember.float64
    assert ember.ones(1).dtype is ember.float64
    assert ember.full((1,), 2.0).dtype is ember.float64
    assert ember.rand(2).dtype is ember.float64
    assert ember.linspace(0, 1, 3).dtype is ember.float64
    assert (ember.tensor([1, 2]) / 2).dtype is ember.float64
    assert (ember.tensor([1, 2], dtype=ember.float32) * 2.5).dtype is ember.float32


def test_set_default_dtype_errors():
    for bad in (ember.int64, ember.complex64, ember.bool):
        with pytest.raises(TypeError):
            ember.set_default_dtype(bad)
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    ember.set_default_dtype(ember.float16)
    try:
        assert ember.tensor([1.5]).dtype is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)


SCALARS = [True, 2, -3, 2.5, 1j]


def _tensor_pair(name, shape):
    return ember.ones(shape, dtype=getattr(ember, name)), torch.ones(shape, dtype=getattr(torch, name))


@pytest.mark.parametrize("name", NAMES)
def test_result_type_with_python_scalars(name):
    for dims in ((2,), ()):
        ember_tensor, torch_tensor = _tensor_pair(name, dims)
        for scalar in SCALARS:
            expected = torch.result_type(torch_tensor, scalar)
            if _name(expected) == "complex32":
                continue  # ember has no complex32 (chalf): float16 with a complex operand gives complex64
            assert _name(ember.result_type(ember_tensor, scalar)) == _name(expected), (name, dims, scalar)


@pytest.mark.parametrize("name", NAMES)
def test_result_type_with_zero_dim_tensors(name):
    ember_tensor, torch_tensor = _tensor_pair(name, (2,))
    for other in NAMES:
        ember_zero, torch_zero = _tensor_pair(other, ())
        expected = torch.result_type(torch_tensor, torch_zero)
        if _name(expected) == "complex32":
            continue  # no complex32 in ember, as above
        assert _name(ember.result_type(ember_tensor, ember_zero)) == _name(expected), (name, other)
        expected = torch.result_type(torch_zero, torch_tensor)
        assert _name(ember.result_type(ember_zero, ember_tensor)) == _name(expected), (other, name)
        ember_zero_2, torch_zero_2 = _tensor_pair(name, ())
        expected = torch.result_type(torch_zero_2, torch_zero)
        assert _name(ember.result_type(ember_zero_2, ember_zero)) == _name(expected), (name, other)


def test_result_type_of_two_scalars_and_default_dtype(default_float64):
    for a, b in itertools.product(SCALARS, SCALARS):
        assert _name(ember.result_type(a, b)) == _name(torch.result_type(a, b)), (a, b)
    assert _name(ember.result_type(ember.ones(2, dtype=ember.int32), 2.5)) == "float64"
