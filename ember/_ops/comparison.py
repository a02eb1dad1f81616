"""Pointwise comparisons, logical and bitwise ops, and dtype predicates (isnan, isinf ...).

Declared as tables on elementwise.py's `pointwise` and `_binary`, so broadcasting, promotion and
the out=/in-place variants are elementwise's: none of these has a gradient except nan_to_num.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._dispatch import call, compare, promote
from .._tensor import Tensor
from . import special_math
from ._api import export, finish_out
from .elementwise import _binary, _integral_only, pointwise


def _comparison(name, impl, aliases=(), tensors_only=False):
    op = pointwise(name, impl, None, rule=compare, saves=0)
    return _binary(name, op, aliases=aliases, tensors_only=tensors_only, tensor_input=True)


eq = _comparison("eq", lambda xp, a, b: a == b)
ne = _comparison("ne", lambda xp, a, b: a != b, aliases=("not_equal",))
lt = _comparison("lt", lambda xp, a, b: a < b, aliases=("less",))
le = _comparison("le", lambda xp, a, b: a <= b, aliases=("less_equal",))
gt = _comparison("gt", lambda xp, a, b: a > b, aliases=("greater",))
ge = _comparison("ge", lambda xp, a, b: a >= b, aliases=("greater_equal",))
logical_and = _comparison("logical_and", lambda xp, a, b: xp.logical_and(a, b), tensors_only=True)
logical_or = _comparison("logical_or", lambda xp, a, b: xp.logical_or(a, b), tensors_only=True)
logical_xor = _comparison("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), tensors_only=True)

_LOGICAL_NOT = pointwise("logical_not", lambda xp, a: xp.logical_not(a), None, rule=compare, saves=0)


@export(inplace=True)
def logical_not(input, *, out=None) -> Tensor:
    return finish_out(call(_LOGICAL_NOT, (input,)), out)


def _bitwise(name, impl):
    op = pointwise(name, impl, None, rule=_integral_only(name), saves=0)
    return _binary(name, op)


bitwise_and = _bitwise("bitwise_and", lambda xp, a, b: a & b)
bitwise_or = _bitwise("bitwise_or", lambda xp, a, b: a | b)
bitwise_xor = _bitwise("bitwise_xor", lambda xp, a, b: a ^ b)
bitwise_left_shift = _bitwise("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b))
bitwise_right_shift = _bitwise("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b))
_BITWISE_NOT = pointwise("bitwise_not", lambda xp, a: xp.invert(a), None, rule=_integral_only("bitwise_not"),
                         saves=0)


@export(inplace=True)
def bitwise_not(input, *, out=None) -> Tensor:
    return finish_out(call(_BITWISE_NOT, (input,)), out)


def _predicate(name, impl, complex_error=None):
    """A dtype -> bool test; `complex_error` (type, message) for those torch rejects complex input to,
    and these also take out= as torch's do."""
    op = pointwise(name, impl, None, rule=lambda args, params: (None, dt.bool_), saves=0, upcast_half=False)

    def plain(input):
        return call(op, (input,))

    def with_out(input, *, out=None):
        if input._dtype.is_complex:
            raise complex_error[0](complex_error[1])
        return finish_out(call(op, (input,)), out)

    fn = plain if complex_error is None else with_out

    fn.__name__ = fn.__qualname__ = name
    export(fn)
    return fn


def _float_or(impl, otherwise):
    return lambda xp, a: impl(xp, a) if a.dtype.kind in "fcV" or a.dtype.name == "bfloat16" else otherwise(xp, a)


isnan = _predicate("isnan", _float_or(lambda xp, a: xp.isnan(a), lambda xp, a: xp.zeros(a.shape, bool)))
isinf = _predicate("isinf", _float_or(lambda xp, a: xp.isinf(a), lambda xp, a: xp.zeros(a.shape, bool)))
isfinite = _predicate("isfinite", _float_or(lambda xp, a: xp.isfinite(a), lambda xp, a: xp.ones(a.shape, bool)))
isposinf = _predicate("isposinf", _float_or(lambda xp, a: xp.isposinf(a), lambda xp, a: xp.zeros(a.shape, bool)),
                      (RuntimeError, "isposinf does not support complex inputs."))
isneginf = _predicate("isneginf", _float_or(lambda xp, a: xp.isneginf(a), lambda xp, a: xp.zeros(a.shape, bool)),
                      (RuntimeError, "isneginf does not support complex inputs."))
signbit = _predicate("signbit", _float_or(lambda xp, a: xp.signbit(a), lambda xp, a: a < 0),
                     (NotImplementedError, "signbit is not implemented for complex tensors."))
isreal = _predicate("isreal", lambda xp, a: xp.imag(a) == 0 if a.dtype.kind == "c" else xp.ones(a.shape, bool))


_NAN_TO_NUM = pointwise("nan_to_num", special_math.nan_to_num, lambda ctx, g: g * ctx.inputs[0].isfinite(),
                        rule=promote)


@export(inplace=True)
def nan_to_num(input, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *, out=None):
    """Replace nan, +inf and -inf with finite values (default: 0 and the dtype's extremes)."""
    if input._dtype.category >= 2:
        info = dt.finfo(input._dtype)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
    return finish_out(call(_NAN_TO_NUM, (input,), {"nan": nan, "posinf": posinf, "neginf": neginf}), out)


