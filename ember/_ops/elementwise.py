"""Pointwise ops: arithmetic, math functions, comparisons, logical and bitwise ops.

Declared as tables: each row is an op's impl on the array module and its
backward in ember ops.  Broadcasting, promotion and un-broadcasting of
gradients happen centrally (dispatch and NOTE [ Gradient unbroadcasting ]), so
each formula is for same-shape operands.  Complex gradients follow torch's
convention (conjugate Wirtinger), hence the `conj` calls.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, compare, promote, promote_float
from .._tensor import Tensor
from . import special_math
from ._api import export, write_out
from ._shapes import broadcast_meta

np.seterr(all="ignore")  # torch computes inf/nan silently; NumPy would warn on every such element

BOTH = SAVE_INPUTS | SAVE_RESULT


def _conj(x):
    """Conjugate a tensor or Python scalar; a no-op for real values."""
    if isinstance(x, Tensor):
        return x.conj() if x._dtype.is_complex else x
    return x.conjugate() if isinstance(x, complex) else x


def _zeros_like(x):
    return x.new_zeros(x.shape) if isinstance(x, Tensor) else None


def _finish(result, out):
    return result if out is None else write_out(out, result)


def _checked(op):
    """Wrap impl so NumPy's broadcast ValueError becomes torch's RuntimeError naming the sizes."""
    impl = op.impl

    def checked(xp, *arrays, **params):
        try:
            return impl(xp, *arrays, **params)
        except ValueError as error:
            shapes = [np.shape(a) for a in arrays if hasattr(a, "shape")]
            from ._shapes import broadcast_shapes

            broadcast_shapes(*shapes)
            if "negative integer powers" in str(error):
                raise RuntimeError("Integers to negative integer powers are not allowed.") from None
            raise

    op.impl = checked
    return op


def pointwise(name, impl, backward=None, *, rule=promote, saves=SAVE_INPUTS, grad_name=None, upcast_half=True):
    return _checked(OpDef(name, impl, backward, dtype_rule=rule, meta=broadcast_meta, saves=saves,
                          grad_name=grad_name, upcast_half=upcast_half))


# ---------------------------------------------------------------- unary math

def _unary(name, impl, backward=None, *, rule=promote_float, saves=SAVE_INPUTS, aliases=(), check=None):
    op = pointwise(name, impl, backward, rule=rule, saves=saves)

    def fn(input, *, out=None):
        if check is not None:
            check(input)
        return _finish(call(op, (input,)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} (torch.{name})."
    export(fn, inplace=True, aliases=aliases)
    globals()[name] = fn
    return op


LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0


def _input(ctx):
    return ctx.inputs[0]


def _no_bool_neg(x):
    if isinstance(x, Tensor) and x._dtype is dt.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
            "use the `~` or `logical_not()` operator instead."
        )


_unary("exp", lambda xp, a: xp.exp(a), lambda ctx, g: g * _conj(ctx.result), saves=SAVE_RESULT)
_unary("exp2", lambda xp, a: xp.exp2(a), lambda ctx, g: g * _conj(ctx.result) * LN2, saves=SAVE_RESULT)
_unary("expm1", lambda xp, a: xp.expm1(a), lambda ctx, g: g * (_conj(ctx.result) + 1), saves=SAVE_RESULT)
_unary("log", lambda xp, a: xp.log(a), lambda ctx, g: g / _conj(_input(ctx)))
_unary("log2", lambda xp, a: xp.log2(a), lambda ctx, g: g / (_conj(_input(ctx)) * LN2))
_unary("log10", lambda xp, a: xp.log10(a), lambda ctx, g: g / (_conj(_input(ctx)) * LN10))
_unary("log1p", lambda xp, a: xp.log1p(a), lambda ctx, g: g / (_conj(_input(ctx)) + 1))
_unary("sin", lambda xp, a: xp.sin(a), lambda ctx, g: g * _conj(_input(ctx).cos()))
_unary("cos", lambda xp, a: xp.cos(a), lambda ctx, g: -g * _conj(_input(ctx).sin()))
_unary("tan", lambda xp, a: xp.tan(a), lambda ctx, g: g * _conj(1 + ctx.result.square()), saves=SAVE_RESULT)
_unary("asin", lambda xp, a: xp.arcsin(a), lambda ctx, g: g * _conj((1 - _input(ctx).square()).rsqrt()),
       aliases=("arcsin",))
_unary("acos", lambda xp, a: xp.arccos(a), lambda ctx, g: -g * _conj((1 - _input(ctx).square()).rsqrt()),
       aliases=("arccos",))
_unary("atan", lambda xp, a: xp.arctan(a), lambda ctx, g: g / _conj(1 + _input(ctx).square()), aliases=("arctan",))
_unary("sinh", lambda xp, a: xp.sinh(a), lambda ctx, g: g * _conj(_input(ctx).cosh()))
_unary("cosh", lambda xp, a: xp.cosh(a), lambda ctx, g: g * _conj(_input(ctx).sinh()))
_unary("tanh", lambda xp, a: xp.tanh(a), lambda ctx, g: g * _conj(1 - ctx.result.square()), saves=SAVE_RESULT)
_unary("asinh", lambda xp, a: xp.arcsinh(a), lambda ctx, g: g * _conj((_input(ctx).square() + 1).rsqrt()),
       aliases=("arcsinh",))
_unary("acosh", lambda xp, a: xp.arccosh(a),
       lambda ctx, g: g * _conj(((_input(ctx) - 1) * (_input(ctx) + 1)).rsqrt()), aliases=("arccosh",))
_unary("atanh", lambda xp, a: xp.arctanh(a), lambda ctx, g: g / _conj(1 - _input(ctx).square()),
       aliases=("arctanh",))
_unary("sqrt", lambda xp, a: xp.sqrt(a), lambda ctx, g: g / (2 * _conj(ctx.result)), saves=SAVE_RESULT)
_unary("rsqrt", lambda xp, a: 1 / xp.sqrt(a), lambda ctx, g: -0.5 * g * _conj(ctx.result) ** 3, saves=SAVE_RESULT)
_unary("reciprocal", lambda xp, a: xp.reciprocal(a), lambda ctx, g: -g * _conj(ctx.result.square()),
       saves=SAVE_RESULT)
_unary("sigmoid", lambda xp, a: special_math.sigmoid(xp, a),
       lambda ctx, g: g * _conj(ctx.result * (1 - ctx.result)), saves=SAVE_RESULT)
_unary("erf", lambda xp, a: special_math.erf(xp, a),
       lambda ctx, g: g * TWO_OVER_SQRT_PI * (-_input(ctx).square()).exp())
_unary("erfc", lambda xp, a: special_math.erfc(xp, a),
       lambda ctx, g: -g * TWO_OVER_SQRT_PI * (-_input(ctx).square()).exp())
_unary("erfinv", lambda xp, a: special_math.erfinv(xp, a),
       lambda ctx, g: g * SQRT_PI_OVER_2 * ctx.result.square().exp(), saves=SAVE_RESULT)
_unary("deg2rad", lambda xp, a: a * (math.pi / 180), lambda ctx, g: g * (math.pi / 180), saves=0)
_unary("rad2deg", lambda xp, a: a * (180 / math.pi), lambda ctx, g: g * (180 / math.pi), saves=0)
_unary("sinc", lambda xp, a: xp.sinc(a), lambda ctx, g: g * _conj(_sinc_grad(_input(ctx))))


def _sinc_grad(x):
    pix = x * math.pi
    value = (pix.cos() * pix - pix.sin()) / (pix * x)
    return value.masked_fill(x == 0, 0.0)


# Ops that keep integral dtypes (torch's "promote" rule) rather than going to float.
_unary("neg", lambda xp, a: xp.negative(a), lambda ctx, g: -g, rule=promote, saves=0, aliases=("negative",),
       check=_no_bool_neg)
_unary("square", lambda xp, a: a * a, lambda ctx, g: 2 * g * _conj(_input(ctx)), rule=promote)
_unary("abs", lambda xp, a: xp.abs(a), lambda ctx, g: g * _input(ctx).sgn(), rule=promote,
       aliases=("absolute",))
_unary("sign", lambda xp, a: xp.sign(a) if a.dtype != np.bool_ else a.copy(), lambda ctx, g: _zeros_like(g), rule=promote,
       saves=0)
_unary("sgn", lambda xp, a: special_math.sgn(xp, a), lambda ctx, g: special_math.sgn_backward(ctx, g),
       rule=promote, saves=BOTH)
_unary("floor", lambda xp, a: xp.floor(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=promote, saves=0)
_unary("ceil", lambda xp, a: xp.ceil(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=promote, saves=0)
_unary("trunc", lambda xp, a: xp.trunc(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=promote, saves=0, aliases=("fix",))
_unary("frac", lambda xp, a: a - xp.trunc(a), lambda ctx, g: g, rule=promote, saves=0)
_unary("positive", lambda xp, a: a.copy(), lambda ctx, g: g, rule=promote, saves=0)
_unary("conj_physical", lambda xp, a: xp.conj(a), lambda ctx, g: _conj(g), rule=promote, saves=0)


@export
def conj(input: Tensor) -> Tensor:
    """The complex conjugate (a copy; real tensors are returned as they are, like torch's conj)."""
    if not input._dtype.is_complex:
        return input
    return call(_CONJ, (input,))


_CONJ = pointwise("conj", lambda xp, a: xp.conj(a), lambda ctx, g: g.conj(), saves=0)


def resolve_conj(input: Tensor) -> Tensor:
    return input


def resolve_neg(input: Tensor) -> Tensor:
    return input


export(resolve_conj)
export(resolve_neg)


def _round_impl(xp, a, decimals=0):
    if a.dtype.kind not in "fc":
        return a.copy()
    return xp.round(a, decimals)


_ROUND = pointwise("round", _round_impl, lambda ctx, g: _zeros_like(g), rule=promote, saves=0)


@export(inplace=True)
def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """Round half to even, optionally to `decimals` places (torch.round)."""
    return _finish(call(_ROUND, (input,), {"decimals": decimals} if decimals else {}), out)


_LOGIT = pointwise("logit", lambda xp, a, eps=None: special_math.logit(xp, a, eps),
                   lambda ctx, g: special_math.logit_backward(ctx, g), rule=promote_float)


@export(inplace=True)
def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    return _finish(call(_LOGIT, (input,), {"eps": eps} if eps is not None else {}), out)


# ---------------------------------------------------------------- binary arithmetic

def _add_impl(xp, a, b, alpha=1):
    return a + b if alpha == 1 else a + alpha * b


def _sub_impl(xp, a, b, alpha=1):
    return a - b if alpha == 1 else a - alpha * b


def _alpha(ctx):
    return ctx.params.get("alpha", 1)


_ADD = pointwise("add", _add_impl, lambda ctx, g: (g, g * _conj(_alpha(ctx)) if _alpha(ctx) != 1 else g), saves=0)
_SUB = pointwise("sub", _sub_impl, lambda ctx, g: (g, -g * _conj(_alpha(ctx))), saves=0)
_MUL = pointwise("mul", lambda xp, a, b: a * b,
                 lambda ctx, g: (g * _conj(ctx.inputs[1]), g * _conj(ctx.inputs[0])))
_DIV = pointwise("div", lambda xp, a, b: a / b, lambda ctx, g: _div_backward(ctx, g), rule=promote_float,
                 saves=BOTH)


def _div_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = g / _conj(b) if ctx.needs_input_grad[0] else None
    grad_b = -g * _conj(ctx.result) / _conj(b) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _check_alpha(input, other, alpha) -> None:
    if alpha != 1 and isinstance(alpha, float):
        tensor_dtype = dt.promote_types(_dtype_of(input), _dtype_of(other))
        if tensor_dtype.category < 2:
            raise RuntimeError(
                "For integral input tensors, argument alpha must not be a floating point number."
            )


def _dtype_of(x):
    return x._dtype if isinstance(x, Tensor) else dt.scalar_dtype(x)


@export(inplace=True)
def add(input, other, *, alpha=1, out=None) -> Tensor:
    """input + alpha * other, broadcasting and promoting as torch does."""
    if alpha != 1:
        _check_alpha(input, other, alpha)
        return _finish(call(_ADD, (input, other), {"alpha": alpha}), out)
    return _finish(call(_ADD, (input, other)), out)


@export(inplace=True, aliases=("subtract",))
def sub(input, other, *, alpha=1, out=None) -> Tensor:
    """input - alpha * other."""
    if _dtype_of(input) is dt.bool_ and _dtype_of(other) is dt.bool_:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if alpha != 1:
        _check_alpha(input, other, alpha)
        return _finish(call(_SUB, (input, other), {"alpha": alpha}), out)
    return _finish(call(_SUB, (input, other)), out)


@export
def rsub(input, other, *, alpha=1) -> Tensor:
    """other - alpha * input."""
    return sub(other, input, alpha=alpha)


@export(inplace=True, aliases=("multiply",))
def mul(input, other, *, out=None) -> Tensor:
    """input * other."""
    return _finish(call(_MUL, (input, other)), out)


_DIV_TRUNC = pointwise("div", lambda xp, a, b: _int_div(xp, a, b, "trunc"), lambda ctx, g: (_zeros_like(g), _zeros_like(g)),
                       saves=0)
_DIV_FLOOR = pointwise("div", lambda xp, a, b: _int_div(xp, a, b, "floor"), lambda ctx, g: (_zeros_like(g), _zeros_like(g)),
                       saves=0)


def _int_div(xp, a, b, mode):
    integral = np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub"
    if integral:
        if np.any(np.asarray(b) == 0):
            raise RuntimeError("ZeroDivisionError")
        if mode == "floor":
            return xp.floor_divide(a, b)
        quotient = xp.floor_divide(a, b)
        fix = (quotient < 0) & (quotient * b != a)
        return quotient + fix
    quotient = a / b
    return xp.trunc(quotient) if mode == "trunc" else _python_floor_div(xp, a, b, quotient)


def _python_floor_div(xp, a, b, quotient):
    # torch's div_floor: floor of the true quotient, corrected like Python's divmod for exact results.
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    adjust = (mod != 0) & ((b < 0) != (mod < 0))
    div = xp.where(adjust, div - 1, div)
    floor = xp.floor(div)
    floor = xp.where(div - floor > 0.5, floor + 1, floor)
    return xp.where(b == 0, quotient, xp.where(div != 0, floor, xp.copysign(xp.zeros_like(div), quotient)))


@export(inplace=True, aliases=("divide",))
def div(input, other, *, rounding_mode: str | None = None, out=None) -> Tensor:
    """input / other; rounding_mode None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return _finish(call(_DIV, (input, other)), out)
    if rounding_mode == "trunc":
        return _finish(call(_DIV_TRUNC, (input, other)), out)
    if rounding_mode == "floor":
        return _finish(call(_DIV_FLOOR, (input, other)), out)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


@export(inplace=True)
def true_divide(input, other, *, out=None) -> Tensor:
    return div(input, other, out=out)


@export(inplace=True)
def floor_divide(input, other, *, out=None) -> Tensor:
    """Floor of input / other (torch.floor_divide)."""
    return div(input, other, rounding_mode="floor", out=out)


def _remainder_impl(xp, a, b):
    if np.asarray(a).dtype.kind in "iu" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    result = xp.mod(a, b)
    return result


def _fmod_impl(xp, a, b):
    if np.asarray(a).dtype.kind in "iu" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    return xp.fmod(a, b)


_REMAINDER = pointwise("remainder", _remainder_impl,
                       lambda ctx, g: (g, -g * ctx.inputs[0].div(ctx.inputs[1], rounding_mode="floor")))
_FMOD = pointwise("fmod", _fmod_impl,
                  lambda ctx, g: (g, -g * ctx.inputs[0].div(ctx.inputs[1], rounding_mode="trunc")))


@export(inplace=True)
def remainder(input, other, *, out=None) -> Tensor:
    """Python-style modulus: the result has the sign of the divisor."""
    return _finish(call(_REMAINDER, (input, other)), out)


@export(inplace=True)
def fmod(input, other, *, out=None) -> Tensor:
    """C-style modulus: the result has the sign of the dividend."""
    return _finish(call(_FMOD, (input, other)), out)


def _pow_impl(xp, a, b):
    if np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iub" and np.any(np.asarray(b) < 0):
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return xp.power(a, b)


def _pow_backward(ctx, g):
    base, exponent = ctx.inputs
    grad_base = grad_exponent = None
    if ctx.needs_input_grad[0]:
        if isinstance(exponent, Tensor):
            grad_base = where(exponent == 0, 0.0, g * _conj(exponent * base.pow(exponent - 1)))
        elif exponent == 0:
            grad_base = _zeros_like(g)
        else:
            grad_base = g * _conj(exponent * base.pow(exponent - 1))
    if ctx.needs_input_grad[1]:
        result = ctx.result
        if isinstance(base, Tensor):
            grad_exponent = where((base == 0) & (exponent >= 0) if isinstance(exponent, Tensor) else (base == 0),
                                  0.0, g * _conj(result * base.log()))
        else:
            grad_exponent = g * _conj(result * math.log(base)) if base != 0 else _zeros_like(g)
    return grad_base, grad_exponent


_POW = pointwise("pow", _pow_impl, _pow_backward, saves=BOTH)


@export(inplace=True)
def pow(input, exponent, *, out=None) -> Tensor:
    """input ** exponent; either may be a Python scalar."""
    return _finish(call(_POW, (input, exponent)), out)


@export(inplace=True)
def float_power(input, exponent, *, out=None) -> Tensor:
    """pow computed in double precision (complex128 for complex operands)."""
    complex_ = any(_dtype_of(x).is_complex for x in (input, exponent))
    target = dt.complex128 if complex_ else dt.float64
    input = input.to(target) if isinstance(input, Tensor) else input
    exponent = exponent.to(target) if isinstance(exponent, Tensor) else exponent
    if not isinstance(input, Tensor):
        input = Tensor._make(np.asarray(input, target.np_dtype), target, exponent._device)
    return pow(input, exponent, out=out)


# ---------------------------------------------------------------- binary math


def _max_backward(ctx, g, chooses_self):
    a, b = ctx.inputs
    mask_a = chooses_self(a, b)
    tie = (a == b)
    half = g / 2
    grad_a = where(tie, half, where(mask_a, g, 0.0)) if ctx.needs_input_grad[0] else None
    grad_b = where(tie, half, where(mask_a, 0.0, g)) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _fmax_backward(ctx, g, comparison):
    a, b = ctx.inputs
    takes_a = comparison(a, b) | b.isnan()
    return where(takes_a, g, 0.0), where(takes_a, 0.0, g)


_MAXIMUM = pointwise("maximum", lambda xp, a, b: xp.maximum(a, b),
                     lambda ctx, g: _max_backward(ctx, g, lambda a, b: a > b))
_MINIMUM = pointwise("minimum", lambda xp, a, b: xp.minimum(a, b),
                     lambda ctx, g: _max_backward(ctx, g, lambda a, b: a < b))
_FMAX = pointwise("fmax", lambda xp, a, b: xp.fmax(a, b), lambda ctx, g: _fmax_backward(ctx, g, ge))
_FMIN = pointwise("fmin", lambda xp, a, b: xp.fmin(a, b), lambda ctx, g: _fmax_backward(ctx, g, le))
_HYPOT = pointwise("hypot", lambda xp, a, b: xp.hypot(a, b),
                   lambda ctx, g: (g * ctx.inputs[0] / ctx.result, g * ctx.inputs[1] / ctx.result),
                   rule=promote_float, saves=BOTH)
_ATAN2 = pointwise("atan2", lambda xp, a, b: xp.arctan2(a, b), lambda ctx, g: _atan2_backward(ctx, g),
                   rule=promote_float)
_COPYSIGN = pointwise("copysign", lambda xp, a, b: xp.copysign(a, b), lambda ctx, g: _copysign_backward(ctx, g),
                      rule=promote_float, saves=BOTH)
_XLOGY = pointwise("xlogy", lambda xp, a, b: special_math.xlogy(xp, a, b), lambda ctx, g: _xlogy_backward(ctx, g),
                   rule=promote_float)
_LOGADDEXP = pointwise("logaddexp", lambda xp, a, b: xp.logaddexp(a, b),
                       lambda ctx, g: (g * (ctx.inputs[0] - ctx.result).exp(), g * (ctx.inputs[1] - ctx.result).exp()),
                       rule=promote_float, saves=BOTH)
_LOGADDEXP2 = pointwise("logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b),
                        lambda ctx, g: (g * ((ctx.inputs[0] - ctx.result) * LN2).exp(),
                                        g * ((ctx.inputs[1] - ctx.result) * LN2).exp()),
                        rule=promote_float, saves=BOTH)


def _atan2_backward(ctx, g):
    a, b = ctx.inputs
    denominator = a.square() + b.square()
    return g * b / denominator, -g * a / denominator


def _copysign_backward(ctx, g):
    a, _ = ctx.inputs
    ratio = (ctx.result / a).masked_fill(a == 0, 0.0)
    return g * ratio, None


def _xlogy_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = where((a == 0) & ~b.isnan(), 0.0, g * b.log()) if isinstance(b, Tensor) else g * math.log(b)
    if ctx.needs_input_grad[1]:
        grad_b = g * a / b
    return grad_a, grad_b


def _binary(name, op, aliases=(), inplace=True):
    def fn(input, other, *, out=None):
        return _finish(call(op, (input, other)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of two tensors (torch.{name})."
    export(fn, inplace=inplace, aliases=aliases)
    return fn


maximum = _binary("maximum", _MAXIMUM)
minimum = _binary("minimum", _MINIMUM)
fmax = _binary("fmax", _FMAX)
fmin = _binary("fmin", _FMIN)
hypot = _binary("hypot", _HYPOT)
atan2 = _binary("atan2", _ATAN2, aliases=("arctan2",))
copysign = _binary("copysign", _COPYSIGN)
xlogy = _binary("xlogy", _XLOGY)
logaddexp = _binary("logaddexp", _LOGADDEXP, inplace=False)
logaddexp2 = _binary("logaddexp2", _LOGADDEXP2, inplace=False)


# ---------------------------------------------------------------- comparisons, logical, bitwise


def _comparison(name, impl, aliases=()):
    op = pointwise(name, impl, None, rule=compare, saves=0)
    return _binary(name, op, aliases=aliases)


eq = _comparison("eq", lambda xp, a, b: a == b)
ne = _comparison("ne", lambda xp, a, b: a != b, aliases=("not_equal",))
lt = _comparison("lt", lambda xp, a, b: a < b, aliases=("less",))
le = _comparison("le", lambda xp, a, b: a <= b, aliases=("less_equal",))
gt = _comparison("gt", lambda xp, a, b: a > b, aliases=("greater",))
ge = _comparison("ge", lambda xp, a, b: a >= b, aliases=("greater_equal",))
logical_and = _comparison("logical_and", lambda xp, a, b: xp.logical_and(a, b))
logical_or = _comparison("logical_or", lambda xp, a, b: xp.logical_or(a, b))
logical_xor = _comparison("logical_xor", lambda xp, a, b: xp.logical_xor(a, b))

_LOGICAL_NOT = pointwise("logical_not", lambda xp, a: xp.logical_not(a), None, rule=compare, saves=0)


@export(inplace=True)
def logical_not(input, *, out=None) -> Tensor:
    return _finish(call(_LOGICAL_NOT, (input,)), out)


def _integral_only(name):
    def rule(args, params):
        compute, _ = promote(args, params)
        if compute.category > 1:
            raise RuntimeError(f'"{name}_cpu" not implemented for \'{_scalar_name(compute)}\'')
        return compute, compute

    return rule


def _scalar_name(d: dt.dtype) -> str:
    from .._tensor import SCALAR_NAMES

    return SCALAR_NAMES[d.name]


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
    return _finish(call(_BITWISE_NOT, (input,)), out)


def _predicate(name, impl):
    op = pointwise(name, impl, None, rule=lambda args, params: (None, dt.bool_), saves=0, upcast_half=False)

    def fn(input):
        return call(op, (input,))

    fn.__name__ = fn.__qualname__ = name
    export(fn)
    return fn


def _float_or(impl, otherwise):
    return lambda xp, a: impl(xp, a) if a.dtype.kind in "fcV" or a.dtype.name == "bfloat16" else otherwise(xp, a)


isnan = _predicate("isnan", _float_or(lambda xp, a: xp.isnan(a), lambda xp, a: xp.zeros(a.shape, bool)))
isinf = _predicate("isinf", _float_or(lambda xp, a: xp.isinf(a), lambda xp, a: xp.zeros(a.shape, bool)))
isfinite = _predicate("isfinite", _float_or(lambda xp, a: xp.isfinite(a), lambda xp, a: xp.ones(a.shape, bool)))
isposinf = _predicate("isposinf", _float_or(lambda xp, a: xp.isposinf(a), lambda xp, a: xp.zeros(a.shape, bool)))
isneginf = _predicate("isneginf", _float_or(lambda xp, a: xp.isneginf(a), lambda xp, a: xp.zeros(a.shape, bool)))
signbit = _predicate("signbit", _float_or(lambda xp, a: xp.signbit(a), lambda xp, a: a < 0))
isreal = _predicate("isreal", lambda xp, a: xp.imag(a) == 0 if a.dtype.kind == "c" else xp.ones(a.shape, bool))


def _nan_to_num_impl(xp, a, nan=0.0, posinf=None, neginf=None):
    if a.dtype.kind not in "fc":
        return a.copy()
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


_NAN_TO_NUM = pointwise("nan_to_num", _nan_to_num_impl, lambda ctx, g: g * ctx.inputs[0].isfinite(),
                        rule=promote)


@export(inplace=True)
def nan_to_num(input, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *, out=None):
    """Replace nan, +inf and -inf with finite values (default: 0 and the dtype's extremes)."""
    if input._dtype.category >= 2:
        info = dt.finfo(input._dtype)
        posinf = info.max if posinf is None else posinf
        neginf = info.min if neginf is None else neginf
    return _finish(call(_NAN_TO_NUM, (input,), {"nan": nan, "posinf": posinf, "neginf": neginf}), out)


# ---------------------------------------------------------------- ternary ops


def _where_rule(args, params):
    compute, _ = promote(args[1:], params)
    return compute, compute


def _where_impl(xp, condition, a, b):
    return xp.where(condition, a, b)


def _where_backward(ctx, g):
    condition = ctx.inputs[0]
    return None, where(condition, g, 0.0), where(condition, 0.0, g)


_WHERE = _checked(OpDef("where", lambda xp, c, a, b: _where_impl(xp, c.astype(bool, copy=False) if hasattr(c, "astype") else c, a, b),
                        _where_backward, dtype_rule=_where_rule, meta=broadcast_meta, saves=SAVE_INPUTS,
                        upcast_half=False))


@export(method=False)
def where(condition, input=None, other=None, *, out=None):
    """where(condition, input, other): elementwise select; where(condition): nonzero(as_tuple=True)."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if isinstance(condition, Tensor) and condition._dtype is not dt.bool_ and condition._dtype is not dt.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                           f"{_scalar_name(condition._dtype)}")
    return _finish(call(_WHERE, (condition, input, other)), out)


def _where_method(self, condition, other):
    return where(condition, self, other)


export(_where_method, name="where", function=False)

_LERP = pointwise("lerp", lambda xp, a, b, w: a + w * (b - a), lambda ctx, g: _lerp_backward(ctx, g))


def _lerp_backward(ctx, g):
    a, b, w = ctx.inputs
    return g * _conj(1 - w), g * _conj(w), (g * _conj(b - a) if isinstance(w, Tensor) else None)


@export(inplace=True)
def lerp(input, end, weight, *, out=None) -> Tensor:
    """input + weight * (end - input)."""
    return _finish(call(_LERP, (input, end, weight)), out)


def _addcmul_backward(ctx, g):
    _, t1, t2 = ctx.inputs
    value = ctx.params.get("value", 1)
    return g, g * _conj(t2 * value), g * _conj(t1 * value)


def _addcdiv_backward(ctx, g):
    _, t1, t2 = ctx.inputs
    value = ctx.params.get("value", 1)
    return g, g * _conj(value / t2), -g * _conj(value * t1 / t2.square())


_ADDCMUL = pointwise("addcmul", lambda xp, a, t1, t2, value=1: a + value * t1 * t2, _addcmul_backward)
_ADDCDIV = pointwise("addcdiv", lambda xp, a, t1, t2, value=1: a + value * t1 / t2, _addcdiv_backward)


@export(inplace=True)
def addcmul(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 * tensor2."""
    return _finish(call(_ADDCMUL, (input, tensor1, tensor2), {"value": value} if value != 1 else {}), out)


@export(inplace=True)
def addcdiv(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 / tensor2 (integer division is an error, as in torch)."""
    if tensor1._dtype.category < 2 and tensor2._dtype.category < 2:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    return _finish(call(_ADDCDIV, (input, tensor1, tensor2), {"value": value} if value != 1 else {}), out)


def _clamp_impl(xp, a, low, high):
    if low is not None:
        a = xp.maximum(a, low)
    if high is not None:
        a = xp.minimum(a, high)
    return a


def _clamp_backward(ctx, g):
    a, low, high = ctx.inputs
    inside = None
    grad_low = grad_high = None
    if low is not None:
        inside = a >= low
        if isinstance(low, Tensor) and ctx.needs_input_grad[1]:
            grad_low = where(a < low, g, 0.0)
    if high is not None:
        below = a <= high
        inside = below if inside is None else inside & below
        if isinstance(high, Tensor) and ctx.needs_input_grad[2]:
            grad_high = where(a > high, g, 0.0)
    return where(inside, g, 0.0), grad_low, grad_high


_CLAMP = pointwise("clamp", _clamp_impl, _clamp_backward, grad_name=None)


@export(inplace=True, aliases=("clip",))
def clamp(input, min=None, max=None, *, out=None) -> Tensor:
    """Clamp into [min, max]; bounds may be scalars or tensors; nan propagates."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _finish(call(_CLAMP, (input, min, max)), out)


@export(inplace=True)
def clamp_min(input, min, *, out=None) -> Tensor:
    return clamp(input, min=min, out=out)


@export(inplace=True)
def clamp_max(input, max, *, out=None) -> Tensor:
    return clamp(input, max=max, out=out)


_HEAVISIDE = pointwise("heaviside", lambda xp, a, v: xp.where(a == 0, v, (a > 0).astype(a.dtype)), None)
heaviside = _binary("heaviside", _HEAVISIDE)
_GCD = pointwise("gcd", lambda xp, a, b: xp.gcd(a, b), None, rule=_integral_only("gcd"))
_LCM = pointwise("lcm", lambda xp, a, b: xp.lcm(a, b), None, rule=_integral_only("lcm"))
gcd = _binary("gcd", _GCD)
lcm = _binary("lcm", _LCM)
