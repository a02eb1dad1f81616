"""Python operators on Tensor (+, @, [], ==, ~ ...) mapped onto the registered ops."""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor
from . import comparison, indexing, linalg, reduction, views
from . import elementwise as ew


def _reflected(fn):
    return lambda self, other: fn(other, self)


def _rtruediv(self, other):
    """`number / tensor` is `tensor.reciprocal() * number`, as torch's Tensor.__rtruediv__ (its values differ
    from a division in the last bit in about a quarter of the elements)."""
    return ew.mul(self.reciprocal(), other)


def _inplace(name):
    def method(self, other):
        return getattr(self, name)(other)

    return method


def _invert(self):
    if self._dtype.category > 1:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    if self._dtype is dt.bool_:
        return comparison.logical_not(self)
    return comparison.bitwise_not(self)


def _matmul(self, other):
    return linalg.matmul(self, other)


def _rmatmul(self, other):
    return linalg.matmul(other, self)


OPERATORS = {
    "__add__": ew.add,
    "__radd__": _reflected(ew.add),
    "__iadd__": _inplace("add_"),
    "__sub__": ew.sub,
    "__rsub__": ew.rsub,  # `number - tensor`: torch's rsub (RsubBackward1)
    "__isub__": _inplace("sub_"),
    "__mul__": ew.mul,
    "__rmul__": _reflected(ew.mul),
    "__imul__": _inplace("mul_"),
    "__truediv__": ew.div,
    "__rtruediv__": _rtruediv,
    "__itruediv__": _inplace("div_"),
    "__floordiv__": ew.floor_divide,
    "__rfloordiv__": _reflected(ew.floor_divide),
    "__ifloordiv__": _inplace("floor_divide_"),
    "__mod__": ew.remainder,
    "__rmod__": _reflected(ew.remainder),
    "__imod__": _inplace("remainder_"),
    "__pow__": ew.pow,
    "__rpow__": _reflected(ew.pow),
    "__ipow__": _inplace("pow_"),
    "__matmul__": _matmul,
    "__rmatmul__": _rmatmul,
    "__neg__": ew.neg,
    "__pos__": ew.positive,
    "__abs__": ew.abs,
    "__invert__": _invert,
    "__and__": comparison.bitwise_and,
    "__rand__": _reflected(comparison.bitwise_and),
    "__iand__": _inplace("bitwise_and_"),
    "__or__": comparison.bitwise_or,
    "__ror__": _reflected(comparison.bitwise_or),
    "__ior__": _inplace("bitwise_or_"),
    "__xor__": comparison.bitwise_xor,
    "__rxor__": _reflected(comparison.bitwise_xor),
    "__ixor__": _inplace("bitwise_xor_"),
    "__lshift__": comparison.bitwise_left_shift,
    "__rshift__": comparison.bitwise_right_shift,
    "__eq__": comparison.eq,
    "__ne__": comparison.ne,
    "__lt__": comparison.lt,
    "__le__": comparison.le,
    "__gt__": comparison.gt,
    "__ge__": comparison.ge,
    "__getitem__": indexing.getitem,
    "__setitem__": indexing.setitem,
}


def _logical_bitwise(name, logical, bitwise):
    def method(self, other):
        return bitwise(self, other)

    return method


def _matrices_only(name: str, tensor):
    raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got "
                       f"{tensor.ndim}-D tensor.")


PROPERTIES = {
    "T": lambda self: views.permute(self, tuple(range(self.ndim - 1, -1, -1))),
    "mT": lambda self: views.transpose(self, -2, -1) if self.ndim >= 2 else _matrices_only("mT", self),
    "H": lambda self: views.permute(self, tuple(range(self.ndim - 1, -1, -1))).conj(),
    "mH": lambda self: views.transpose(self, -2, -1).conj() if self.ndim >= 2 else _matrices_only("mH", self),
}


def _real_get(self):
    return views.real(self)


def _real_set(self, value):
    views.real(self).copy_(value)


def _imag_get(self):
    return views.imag(self)


def _imag_set(self, value):
    views.imag(self).copy_(value)


def install() -> None:
    for name, fn in OPERATORS.items():
        setattr(Tensor, name, fn)
    Tensor.__hash__ = lambda self: id(self)
    for name, fn in PROPERTIES.items():
        setattr(Tensor, name, property(fn))
    Tensor.real = property(_real_get, _real_set)
    Tensor.imag = property(_imag_get, _imag_set)
    _ = reduction
