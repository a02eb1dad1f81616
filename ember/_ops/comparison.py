"""Pointwise comparisons, logical and bitwise ops, and dtype predicates (isnan, isinf ...).

Declared as tables on elementwise.py's `pointwise` and `_binary`, so broadcasting, promotion and
the out=/in-place variants are elementwise's: none of these has a gradient except nan_to_num.
"""

from __future__ import annotations

from .. import _dispatch
from .. import _dtype as dt
from .._dispatch import OpDef, call, compare, promote
from .._tensor import SCALAR_NAMES, Tensor
from . import special_math
from ._api import export, finish_out
from .elementwise import _binary, _integral_only, _kernel_missing, _rejecting, pointwise

# the comparisons torch runs on quantized tensors (by dequantizing them): ember/_ops/quantized_ops.py
QUANTIZED_COMPARISONS: list = []


def _comparison(name, impl, aliases=(), tensors_only=False):
    rule = compare
    if name in ("lt", "le", "gt", "ge"):  # complex numbers have no order: torch's kernels have no complex version
        rule = _rejecting(compare, _kernel_missing(f"{name}_cpu", complex_=True))
    op = pointwise(name, impl, None, rule=rule, saves=0)
    if name in ("eq", "ne", "lt", "le", "gt", "ge"):
        QUANTIZED_COMPARISONS.append(op)
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


def _bitwise(name, impl, kernel=None):
    """`kernel`: torch's cpu kernel name where it differs from `name` (the shifts, which reject bool)."""
    rule = _integral_only(name) if kernel is None else _integral_only(kernel, bool_ok=False)
    op = pointwise(name, impl, None, rule=rule, saves=0)
    return _binary(name, op)


bitwise_and = _bitwise("bitwise_and", lambda xp, a, b: a & b)
bitwise_or = _bitwise("bitwise_or", lambda xp, a, b: a | b)
bitwise_xor = _bitwise("bitwise_xor", lambda xp, a, b: a ^ b)
bitwise_left_shift = _bitwise("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b), "lshift")
bitwise_right_shift = _bitwise("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b), "rshift")
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




# ---------------------------------------------------------------- closeness and membership


def _tensor_argument(name: str, argument: str, position: int, value) -> None:
    """torch's TypeError for a non-tensor where its signature takes a Tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


@export
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other|, elementwise: equal elements (and nan pairs with equal_nan) are
    close; otherwise the error must be finite and within tolerance, measured in the input's float dtype (bool and
    integer inputs in the default float dtype, as torch measures them)."""
    _tensor_argument("isclose", "input", 1, input)
    _tensor_argument("isclose", "other", 2, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{SCALAR_NAMES[input._dtype.name]} did not match {SCALAR_NAMES[other._dtype.name]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    input, other = input.detach(), other.detach()  # a bool result: nothing to differentiate
    close = eq(input, other)
    if equal_nan and input._dtype.category >= 2:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    if input._dtype.category < 2:  # bool and integers: torch measures the error in the default float dtype
        input, other = input.to(dt.get_default_dtype()), other.to(dt.get_default_dtype())
    allowed_error = atol + (rtol * other).abs()
    actual_error = (input - other).abs()
    return logical_or(close, logical_and(isfinite(actual_error), le(actual_error, allowed_error)))


def _refuse_under_vmap(name: str, *tensors) -> None:
    """Under vmap (ember/func/_batching.py) these reductions to a Python bool raise for batched tensors, as
    torch's do."""
    refuse = getattr(_dispatch.forward_ad, "refuse_batched", None)
    if refuse is not None:
        refuse(name, *tensors)


@export
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of input is close to other's (see isclose), as a Python bool."""
    _tensor_argument("allclose", "input", 1, input)
    _tensor_argument("allclose", "other", 2, other)
    _refuse_under_vmap("allclose", input, other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


@export
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and equal elements (after type promotion; nan is never equal)."""
    _tensor_argument("equal", "input", 1, input)
    _tensor_argument("equal", "other", 2, other)
    _refuse_under_vmap("equal", input, other)
    if input._qparams is not None:
        return _quantized_equal(input, other)
    if input.shape != other.shape:
        return False
    return bool(eq(input.detach(), other.detach()).all().item())


def _quantized_equal(input: Tensor, other: Tensor) -> bool:
    """torch.equal on QuantizedCPU: the same quantizer (scheme, dtype, parameters), shape and integers."""
    first, second = input._qparams, other._qparams
    if second is None or input._dtype is not other._dtype or first.scheme is not second.scheme:
        return False
    if first.axis is None:
        if (first.scale, first.zero_point) != (second.scale, second.zero_point):
            return False
    elif first.axis != second.axis or not (equal(first.scale, second.scale)
                                           and equal(first.zero_point, second.zero_point)):
        return False
    return input.shape == other.shape and bool((input._data == other._data).all())


def _isin_dtype(value) -> dt.dtype:
    """A tensor's dtype, or the double-width type torch wraps a Python number in (for isin's dtype check)."""
    if isinstance(value, Tensor):
        return value._dtype
    if isinstance(value, bool):
        return dt.bool_
    return {int: dt.int64, float: dt.float64, complex: dt.complex128}.get(type(value), dt.float64)


def _isin_impl(xp, elements, test_elements, invert):
    if not hasattr(elements, "shape"):  # a Python number: a 0-d result
        elements = xp.asarray(elements, dtype=test_elements.dtype)
    if not hasattr(test_elements, "shape"):
        test_elements = xp.asarray(test_elements, dtype=elements.dtype)
    return xp.isin(elements, test_elements, invert=invert)


_ISIN = OpDef("isin", _isin_impl, None, dtype_rule=compare, upcast_half=False,
              meta=lambda args, params: tuple(args[0].shape) if isinstance(args[0], Tensor) else ())


@export(method=False)
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False, out=None) -> Tensor:
    """Whether each element of `elements` occurs in `test_elements` (one of them may be a Python number).

    `assume_unique` only lets torch pick a faster algorithm; the result here is the same either way."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError(
            f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
            f"{type(test_elements).__name__}), but expected one of:\n"
            " * (Tensor elements, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n"
            " * (Number element, Tensor test_elements, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n"
            " * (Tensor elements, Number test_element, *, bool assume_unique = False, bool invert = False, "
            "Tensor out = None)\n"
        )
    for value in (elements, test_elements):
        if not isinstance(value, (Tensor, bool, int, float, complex)):
            raise TypeError(f"isin(): argument 'test_elements' must be Tensor or Number, not {type(value).__name__}")
        dtype = _isin_dtype(value)
        if dtype is dt.bool_ or dtype.is_complex:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {SCALAR_NAMES[dtype.name]}")
    return finish_out(call(_ISIN, (elements, test_elements), {"invert": bool(invert)}), out)
