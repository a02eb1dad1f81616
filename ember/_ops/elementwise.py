"""Pointwise ops: arithmetic, math functions and ternary ops (comparisons, logical and bitwise ops: comparison.py).

Declared as tables: each row is an op's impl on the array module and its
backward in ember ops.  Broadcasting, promotion and un-broadcasting of
gradients happen centrally (dispatch and NOTE [ Gradient unbroadcasting ]), so
each formula is for same-shape operands.  Complex gradients follow torch's
convention (conjugate Wirtinger), hence the `conj` calls.
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, promote, promote_float
from .._tensor import Tensor
from . import special_math
from ._api import export, finish_out
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


def _checked(op):
    """Wrap impl so NumPy's broadcast ValueError becomes torch's RuntimeError naming the sizes."""
    impl = op.impl

    def checked(xp, *arrays, **params):
        if int in map(type, arrays):
            arrays = special_math.wrap_int_scalars(arrays)
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
    if op.out_impl is not None:
        op.out_impl = _wrapping_int_scalars(op.out_impl)
    return op


def _wrapping_int_scalars(out_impl):
    """out_impl with impl's treatment of Python ints beside integer arrays (special_math.wrap_int_scalars)."""

    def wrapped(xp, out, *arrays, **params):
        if int in map(type, arrays):
            arrays = special_math.wrap_int_scalars(arrays)
        return out_impl(xp, out, *arrays, **params)

    return wrapped


def pointwise(name, impl, backward=None, *, rule=promote, saves=SAVE_INPUTS, grad_name=None, upcast_half=True,
              out_impl=None):
    """A broadcasting pointwise OpDef; out_impl is impl writing into `out` (NOTE [ In-place ops without a copy ]
    in _dispatch.py), the same operations in the same order so in-place results equal out-of-place ones."""
    return _checked(OpDef(name, impl, backward, dtype_rule=rule, meta=broadcast_meta, saves=saves,
                          grad_name=grad_name, upcast_half=upcast_half, out_impl=out_impl))


def _reusing(ufunc, left, right, temporary, out):
    """ufunc(left, right), one of which is `temporary`, a fresh intermediate of a multi-step out_impl: computed in
    its memory when it has the output's shape and dtype (one full-size temporary, not two).  Operands keep impl's
    order: complex multiplication, for one, is not commutative bit for bit."""
    if type(temporary) is type(out) and temporary.shape == out.shape and temporary.dtype == out.dtype:
        return ufunc(left, right, out=temporary)
    return ufunc(left, right)


def _ufunc_out(ufunc_name):
    """out_impl of an op whose impl is the one ufunc `xp.<ufunc_name>` over its operands."""

    def out_impl(xp, out, *arrays):
        getattr(xp, ufunc_name)(*arrays, out=out)

    return out_impl


def _integral_only(name, bool_ok=True):
    """Integral (and, unless `bool_ok` is False, bool) dtypes only; `name` is torch's cpu kernel's."""
    def rule(args, params):
        compute, _ = promote(args, params)
        if compute.category > 1 or (not bool_ok and compute is dt.bool_):
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_scalar_name(compute)}\'')
        return compute, compute

    return rule


def _scalar_name(d: dt.dtype) -> str:
    from .._tensor import SCALAR_NAMES

    return SCALAR_NAMES[d.name]


def _kernel_missing(kernel, *, bool_=False, integral=False, complex_=False):
    """An error rule for _rejecting: torch's NotImplementedError for a CPU kernel with no version for the
    operands' dtype (bool, the integral dtypes, the complex dtypes, as flagged)."""

    def error(dtype, params):
        if ((bool_ and dtype is dt.bool_) or (integral and dtype.category == 1 and dtype is not dt.bool_)
                or (complex_ and dtype.is_complex)):
            return NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dtype)}\'')
        return None

    return error


def _complex_unsupported(exception, message):
    """An error rule for _rejecting: torch's own check (not its kernel table) refusing complex operands."""

    def error(dtype, params):
        return exception(message) if dtype.is_complex else None

    return error


def _rejecting(rule, *errors):
    """`rule`, after torch's dtype checks: each of `errors` maps the operands' promoted dtype (and the op's
    params) to the exception torch raises for it, or None; the first exception found is raised."""

    def checked(args, params):
        dtype = args[0]._dtype if len(args) == 1 else _promoted(args)
        for error in errors:
            exception = error(dtype, params)
            if exception is not None:
                raise exception
        return rule(args, params)

    return checked


def _promoted(args):
    from .._dispatch import result_type_of_args

    return result_type_of_args(args)


# ---------------------------------------------------------------- unary math

def _unary(name, impl, backward=None, *, rule=promote_float, saves=SAVE_INPUTS, aliases=(), check=None,
           out_impl=None, grad_name=None):
    op = pointwise(name, impl, backward, rule=rule, saves=saves, out_impl=out_impl, grad_name=grad_name)

    def fn(input, *, out=None):
        if check is not None:
            check(input)
        return finish_out(call(op, (input,)), out)

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


_unary("exp", lambda xp, a: xp.exp(a), lambda ctx, g: g * _conj(ctx.result), saves=SAVE_RESULT,
       out_impl=_ufunc_out("exp"))
_unary("exp2", lambda xp, a: xp.exp2(a), lambda ctx, g: g * _conj(ctx.result) * LN2, saves=SAVE_RESULT,
       out_impl=_ufunc_out("exp2"))
_unary("expm1", lambda xp, a: xp.expm1(a), lambda ctx, g: g * (_conj(ctx.result) + 1), saves=SAVE_RESULT,
       out_impl=_ufunc_out("expm1"))
_unary("log", lambda xp, a: xp.log(a), lambda ctx, g: g / _conj(_input(ctx)), out_impl=_ufunc_out("log"))
_unary("log2", lambda xp, a: xp.log2(a), lambda ctx, g: g / (_conj(_input(ctx)) * LN2), out_impl=_ufunc_out("log2"))
_unary("log10", lambda xp, a: xp.log10(a), lambda ctx, g: g / (_conj(_input(ctx)) * LN10),
       out_impl=_ufunc_out("log10"))
_unary("log1p", lambda xp, a: xp.log1p(a), lambda ctx, g: g / (_conj(_input(ctx)) + 1), out_impl=_ufunc_out("log1p"),
       grad_name="Log1PBackward0")
_unary("sin", lambda xp, a: xp.sin(a), lambda ctx, g: g * _conj(_input(ctx).cos()), out_impl=_ufunc_out("sin"))
_unary("cos", lambda xp, a: xp.cos(a), lambda ctx, g: -g * _conj(_input(ctx).sin()), out_impl=_ufunc_out("cos"))
_unary("tan", lambda xp, a: xp.tan(a), lambda ctx, g: g * _conj(1 + ctx.result.square()), saves=SAVE_RESULT,
       out_impl=_ufunc_out("tan"))
_unary("asin", lambda xp, a: xp.arcsin(a), lambda ctx, g: g * _conj((1 - _input(ctx).square()).rsqrt()),
       aliases=("arcsin",))
_unary("acos", lambda xp, a: xp.arccos(a), lambda ctx, g: -g * _conj((1 - _input(ctx).square()).rsqrt()),
       aliases=("arccos",))
_unary("atan", lambda xp, a: xp.arctan(a), lambda ctx, g: g / _conj(1 + _input(ctx).square()), aliases=("arctan",))
_unary("sinh", lambda xp, a: xp.sinh(a), lambda ctx, g: g * _conj(_input(ctx).cosh()), out_impl=_ufunc_out("sinh"))
_unary("cosh", lambda xp, a: xp.cosh(a), lambda ctx, g: g * _conj(_input(ctx).sinh()), out_impl=_ufunc_out("cosh"))
TANH = _unary("tanh", lambda xp, a: xp.tanh(a), lambda ctx, g: g * _conj(1 - ctx.result.square()), saves=SAVE_RESULT,
       out_impl=_ufunc_out("tanh"))
_unary("asinh", lambda xp, a: xp.arcsinh(a), lambda ctx, g: g * _conj((_input(ctx).square() + 1).rsqrt()),
       aliases=("arcsinh",))
_unary("acosh", lambda xp, a: xp.arccosh(a),
       lambda ctx, g: g * _conj(((_input(ctx) - 1) * (_input(ctx) + 1)).rsqrt()), aliases=("arccosh",))
_unary("atanh", lambda xp, a: xp.arctanh(a), lambda ctx, g: g / _conj(1 - _input(ctx).square()),
       aliases=("arctanh",))
_unary("sqrt", lambda xp, a: xp.sqrt(a), lambda ctx, g: g / (2 * _conj(ctx.result)), saves=SAVE_RESULT,
       out_impl=_ufunc_out("sqrt"))


def _rsqrt_out(xp, out, a):
    xp.sqrt(a, out=out)
    xp.divide(1, out, out=out)


_unary("rsqrt", lambda xp, a: 1 / xp.sqrt(a), lambda ctx, g: -0.5 * g * _conj(ctx.result) ** 3, saves=SAVE_RESULT,
       out_impl=_rsqrt_out)
_unary("reciprocal", lambda xp, a: xp.reciprocal(a), lambda ctx, g: -g * _conj(ctx.result.square()),
       saves=SAVE_RESULT, out_impl=_ufunc_out("reciprocal"))
SIGMOID = _unary("sigmoid", lambda xp, a: special_math.sigmoid(xp, a),
                 lambda ctx, g: g * _conj(ctx.result * (1 - ctx.result)), saves=SAVE_RESULT)
TANH.opmath_backward = SIGMOID.opmath_backward = True  # torch's tanh_backward / sigmoid_backward kernels
_unary("erf", lambda xp, a: special_math.erf(xp, a),
       lambda ctx, g: g * TWO_OVER_SQRT_PI * (-_input(ctx).square()).exp(),
       rule=_rejecting(promote_float, _kernel_missing("erf_vml_cpu", complex_=True)))
_unary("erfc", lambda xp, a: special_math.erfc(xp, a),
       lambda ctx, g: -g * TWO_OVER_SQRT_PI * (-_input(ctx).square()).exp(),
       rule=_rejecting(promote_float, _kernel_missing("erfc_vml_cpu", complex_=True)))
_unary("erfinv", lambda xp, a: special_math.erfinv(xp, a),
       lambda ctx, g: g * SQRT_PI_OVER_2 * ctx.result.square().exp(), saves=SAVE_RESULT,
       rule=_rejecting(promote_float, _kernel_missing("erfinv_vml_cpu", complex_=True)))
_unary("deg2rad", lambda xp, a: a * (math.pi / 180), lambda ctx, g: g * (math.pi / 180), saves=0,
       grad_name="Deg2RadBackward0",  # (torch's node names capitalise the unit: Deg2Rad, Rad2Deg, Log1P)
       rule=_rejecting(promote_float, _complex_unsupported(RuntimeError, "deg2rad is not supported for complex "
                                                                         "tensors.")))
_unary("rad2deg", lambda xp, a: a * (180 / math.pi), lambda ctx, g: g * (180 / math.pi), saves=0,
       grad_name="Rad2DegBackward0",
       rule=_rejecting(promote_float, _complex_unsupported(RuntimeError, "rad2deg is not supported for complex "
                                                                         "tensors.")))
_unary("sinc", lambda xp, a: xp.sinc(a), lambda ctx, g: g * _conj(_sinc_grad(_input(ctx))))


def _sinc_grad(x):
    pix = x * math.pi
    value = (pix.cos() * pix - pix.sin()) / (pix * x)
    return value.masked_fill(x == 0, 0.0)


# Ops that keep integral dtypes (torch's "promote" rule) rather than going to float.
_unary("neg", lambda xp, a: xp.negative(a), lambda ctx, g: -g, rule=promote, saves=0, aliases=("negative",),
       check=_no_bool_neg, out_impl=_ufunc_out("negative"))
def _square_rule(args, params):
    """square is pow(x, 2): bool squares to int64 (torch promotes bool with the int exponent)."""
    dtype = args[0]._dtype
    return (dt.int64, dt.int64) if dtype is dt.bool_ else (dtype, dtype)


def _abs_rule(args, params):
    """abs of a complex tensor is its real magnitude; bool is rejected like torch's abs kernel."""
    dtype = args[0]._dtype
    if dtype is dt.bool_:
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return dtype, dtype.to_real()


def _sign_rule(args, params):
    dtype = args[0]._dtype
    if dtype.is_complex:
        raise NotImplementedError("Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                                  "use torch.sgn instead.")
    return dtype, dtype


def _rounding_rule(name):
    """floor/ceil/trunc: integral tensors pass through; torch has no bool kernel and refuses complex."""
    return _rejecting(promote, _kernel_missing(f"{name}_vml_cpu", bool_=True),
                      _complex_unsupported(NotImplementedError, f"{name} is not supported for complex inputs"))


def _round_error(dtype, params):
    """torch.round: decimals=0 passes integral tensors through; any decimals needs torch's float kernel."""
    if params.get("decimals", 0):
        return _kernel_missing("round_cpu", bool_=True, integral=True, complex_=True)(dtype, params)
    return _kernel_missing("round_vml_cpu", bool_=True, complex_=True)(dtype, params)


_unary("square", lambda xp, a: a * a, lambda ctx, g: 2 * g * _conj(_input(ctx)), rule=_square_rule,
       grad_name="PowBackward0")  # torch's square is pow(x, 2)
_unary("abs", lambda xp, a: xp.abs(a), lambda ctx, g: g * _input(ctx).sgn(), rule=_abs_rule,
       aliases=("absolute",), out_impl=_ufunc_out("abs"))


def _abs_inplace(name):
    """Tensor.abs_/absolute_: torch refuses a complex tensor (its real magnitude cannot stay complex)."""
    from ._api import METHODS

    generated = METHODS[name]

    def method(self):
        if self._dtype.is_complex:
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        return generated(self)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = generated.__doc__
    export(method, name=name, function=False)


_abs_inplace("abs_")
_abs_inplace("absolute_")
_unary("sign", special_math.sign_real, lambda ctx, g: _zeros_like(g), rule=_sign_rule, saves=0)
_unary("sgn", lambda xp, a: special_math.sgn(xp, a), lambda ctx, g: special_math.sgn_backward(ctx, g),
       rule=promote, saves=BOTH)
_unary("floor", lambda xp, a: xp.floor(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=_rounding_rule("floor"), saves=0)
_unary("ceil", lambda xp, a: xp.ceil(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=_rounding_rule("ceil"), saves=0)
_unary("trunc", lambda xp, a: xp.trunc(a) if a.dtype.kind in "fc" else a.copy(), lambda ctx, g: _zeros_like(g),
       rule=_rounding_rule("trunc"), saves=0, aliases=("fix",))
_unary("frac", lambda xp, a: a - xp.trunc(a), lambda ctx, g: g, saves=0,
       rule=_rejecting(promote, _kernel_missing("frac_cpu", bool_=True, integral=True, complex_=True)))


@export
def positive(input: Tensor) -> Tensor:
    """The input itself (torch.positive returns its argument); bool is rejected as in torch."""
    if input._dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


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


_ROUND = pointwise("round", special_math.round_half_even, lambda ctx, g: _zeros_like(g),
                   rule=_rejecting(promote, _round_error), saves=0)


@export(inplace=True)
def round(input: Tensor, *, decimals: int = 0, out=None) -> Tensor:
    """Round half to even, optionally to `decimals` places (torch.round)."""
    return finish_out(call(_ROUND, (input,), {"decimals": decimals} if decimals else {}), out)


_LOGIT = pointwise("logit", lambda xp, a, eps=None: special_math.logit(xp, a, eps),
                   lambda ctx, g: special_math.logit_backward(ctx, g),
                   rule=_rejecting(promote_float, _kernel_missing("logit_cpu", complex_=True)))


@export(inplace=True)
def logit(input: Tensor, eps: float | None = None, *, out=None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given."""
    return finish_out(call(_LOGIT, (input,), {"eps": eps} if eps is not None else {}), out)


# ---------------------------------------------------------------- binary arithmetic

def _add_impl(xp, a, b, alpha=1):
    return a + b if alpha == 1 else _scaled_sum(xp, a, b, alpha)


def _sub_impl(xp, a, b, alpha=1):
    return a - b if alpha == 1 else _scaled_sum(xp, a, b, -alpha)


def _add_out(xp, out, a, b, alpha=1):
    if alpha == 1:
        xp.add(a, b, out=out)
    else:
        _scaled_sum(xp, a, b, alpha, out)


def _sub_out(xp, out, a, b, alpha=1):
    if alpha == 1:
        xp.subtract(a, b, out=out)
    else:
        _scaled_sum(xp, a, b, -alpha, out)


def _scaled_sum(xp, a, b, alpha, out=None):
    """a + alpha * b (sub passes -alpha) with torch's rounding: where its kernels fuse multiply-adds
    (special_math.torch_fuses_multiply_add) it computes fma(b, alpha, a), one rounding, where NumPy's
    a + alpha * b rounds twice.  NumPy floats take a C loop (ember/_compile/loops.py), CUDA float32 an emulated
    fma; integers, complex, torch's DEFAULT kernels and the no-compiler case stay unfused."""
    if special_math.torch_fuses_multiply_add(xp) and not isinstance(alpha, complex):
        if xp is np:
            from .._compile.loops import add_scaled

            done = add_scaled(a, b, alpha, out)
            if done is not None:
                return done
        elif getattr(a, "dtype", None) == np.float32 and getattr(b, "dtype", None) == np.float32:
            result = special_math.fused_multiply_add(xp, xp.asarray(alpha, dtype=np.float32), b, a)
            if out is None:
                return result
            out[...] = result
            return out
    scaled = special_math.scalar_like(alpha, b) * b
    if out is None:
        return a + scaled
    xp.add(a, scaled, out=out, casting="unsafe")
    return out


def _alpha(ctx):
    return ctx.params.get("alpha", 1)


_ADD = pointwise("add", _add_impl, lambda ctx, g: (g, g * _conj(_alpha(ctx)) if _alpha(ctx) != 1 else g), saves=0,
                 out_impl=_add_out)
def _sub_backward(ctx, g):
    alpha = _alpha(ctx)
    grad_b = None
    if ctx.needs_input_grad[1]:
        grad_b = -g if alpha == 1 else -g * _conj(alpha)
    return g, grad_b


_SUB = pointwise("sub", _sub_impl, _sub_backward, saves=0, out_impl=_sub_out)


def _mul_backward(ctx, g):
    a, b = ctx.inputs
    need_a, need_b = ctx.needs_input_grad
    return (g * _conj(b) if need_a else None), (g * _conj(a) if need_b else None)


_MUL = pointwise("mul", lambda xp, a, b: a * b, _mul_backward, out_impl=_ufunc_out("multiply"))
_MUL.opmath_scalars = True  # bf16 `x * 1.37` multiplies by 1.37 in float32, as torch (see OpDef)
_MUL.grad_reads = ((1,), (0,))
# Saves the operands only, as torch's DivBackward0: an in-place write to the quotient stays legal.
_DIV = pointwise("div", lambda xp, a, b: a / b, lambda ctx, g: _div_backward(ctx, g), rule=promote_float,
                 out_impl=_ufunc_out("true_divide"))
_DIV.opmath_scalars = True


def _div_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = g / _conj(b) if ctx.needs_input_grad[0] else None
    grad_b = -g * _conj(a / b / b) if ctx.needs_input_grad[1] else None  # torch's div_tensor_other_backward
    return grad_a, grad_b


def _scales(alpha) -> bool:
    """Whether add/sub pass alpha to the kernel.  A number of a type other than int/float (a compiled function's
    float-argument stand-in, ember/_compile/scalars.py) always is: comparing it would specialise the capture."""
    return type(alpha) not in (int, float, bool) or alpha != 1


def _check_alpha(input, other, alpha) -> None:
    if isinstance(alpha, float) and _scales(alpha):
        tensor_dtype = dt.promote_types(_dtype_of(input), _dtype_of(other))
        if tensor_dtype.category < 2:
            raise RuntimeError(
                "For integral input tensors, argument alpha must not be a floating point number."
            )


def _dtype_of(x):
    return x._dtype if isinstance(x, Tensor) else dt.scalar_dtype(x)


def _alpha_for(input, other, alpha):
    """torch converts alpha to the kernel's scalar type before its float math: for float16/bfloat16 operands
    it is rounded to that type (their arithmetic then runs in float32)."""
    dtypes = [x._dtype for x in (input, other) if isinstance(x, Tensor)]
    if not isinstance(alpha, float) or not dtypes:
        return alpha
    kind = dtypes[0] if len(dtypes) == 1 else dt.promote_types(*dtypes)
    if kind in (dt.float16, dt.bfloat16):
        return float(np.asarray(alpha, dtype=kind.np_dtype))
    return alpha


def _deprecated_alpha_first(name, other, rest, alpha):
    """torch's deprecated `add(input, Number alpha, Tensor other)` (and sub's), still written by old programs
    (`p.data.add_(-lr, p.grad.data)`): the (other, alpha) it means, with torch's warning."""
    import numbers
    import warnings

    from ._api import _user_stacklevel

    if len(rest) != 1 or alpha != 1 or not isinstance(other, numbers.Number) or not isinstance(rest[0], Tensor):
        raise TypeError(f"{name}() takes 2 positional arguments but {2 + len(rest)} were given")
    warnings.warn(f"This overload of {name} is deprecated:\n\t{name}(Number alpha, Tensor other)\nConsider using one "
                  f"of the following signatures instead:\n\t{name}(Tensor other, *, Number alpha = 1)",
                  UserWarning, stacklevel=_user_stacklevel())
    return rest[0], other


@export(inplace=True)
def add(input, other, *deprecated, alpha=1, out=None) -> Tensor:
    """input + alpha * other, broadcasting and promoting as torch does."""
    if deprecated:
        other, alpha = _deprecated_alpha_first("add", other, deprecated, alpha)
    if _scales(alpha):
        _check_alpha(input, other, alpha)
        return finish_out(call(_ADD, (input, other), {"alpha": _alpha_for(input, other, alpha)}), out)
    return finish_out(call(_ADD, (input, other)), out)


@export(inplace=True, aliases=("subtract",))
def sub(input, other, *deprecated, alpha=1, out=None) -> Tensor:
    """input - alpha * other."""
    if deprecated:
        other, alpha = _deprecated_alpha_first("sub", other, deprecated, alpha)
    bools = (_dtype_of(input) is dt.bool_) + (_dtype_of(other) is dt.bool_)
    if bools == 2:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    if bools:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
            "mask, use the `~` or `logical_not()` operator instead."
        )
    if _scales(alpha):
        _check_alpha(input, other, alpha)
        return finish_out(call(_SUB, (input, other), {"alpha": _alpha_for(input, other, alpha)}), out)
    return finish_out(call(_SUB, (input, other)), out)


@export
def rsub(input, other, *, alpha=1) -> Tensor:
    """other - alpha * input."""
    result = sub(other, input, alpha=alpha)
    # torch's node names the overload: rsub(Tensor, Scalar) (`1 - x`) is RsubBackward1
    name_node(result, "RsubBackward0" if isinstance(other, Tensor) else "RsubBackward1")
    return result


@export(inplace=True, aliases=("multiply",))
def mul(input, other, *, out=None) -> Tensor:
    """input * other."""
    return finish_out(call(_MUL, (input, other)), out)


def _zero_grads(ctx, g):
    return _zeros_like(g), _zeros_like(g)


def _real_promote(kernel):
    """promote, but torch's kernel has no bool or complex version (NotImplementedError naming it)."""

    def rule(args, params):
        compute, result = promote(args, params)
        if compute is dt.bool_ or compute.is_complex:
            raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{_scalar_name(compute)}\'')
        return compute, result

    return rule


_DIV_TRUNC = pointwise("div", lambda xp, a, b: special_math.int_div(xp, a, b, "trunc"), _zero_grads, saves=0,
                       rule=_real_promote("div_trunc"))
_DIV_FLOOR = pointwise("div", lambda xp, a, b: special_math.int_div(xp, a, b, "floor"), _zero_grads, saves=0,
                       rule=_real_promote("div_floor"))
_DIV_TRUNC.opmath_scalars = _DIV_FLOOR.opmath_scalars = True


@export(inplace=True, aliases=("divide",))
def div(input, other, *, rounding_mode: str | None = None, out=None) -> Tensor:
    """input / other; rounding_mode None (true division), 'trunc' or 'floor'."""
    if rounding_mode is None:
        return finish_out(call(_DIV, (input, other)), out)
    if rounding_mode == "trunc":
        return finish_out(call(_DIV_TRUNC, (input, other)), out)
    if rounding_mode == "floor":
        return finish_out(call(_DIV_FLOOR, (input, other)), out)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


@export(inplace=True)
def true_divide(input, other, *, out=None) -> Tensor:
    return div(input, other, out=out)


def _no_derivative(name):
    def backward(ctx, g):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return backward


_FLOOR_DIVIDE = pointwise("floor_divide", lambda xp, a, b: special_math.int_div(xp, a, b, "floor"),
                          _no_derivative("floor_divide"), saves=0, rule=_real_promote("div_floor"))
_FLOOR_DIVIDE.opmath_scalars = True


@export(inplace=True)
def floor_divide(input, other, *, out=None) -> Tensor:
    """Floor of input / other (torch.floor_divide); like torch, it has no derivative."""
    return finish_out(call(_FLOOR_DIVIDE, (input, other)), out)


def _remainder_backward(ctx, g):
    a, b = ctx.inputs
    if not isinstance(a, Tensor):  # torch has no derivative for remainder(Scalar, Tensor)
        raise RuntimeError("derivative for aten::remainder is not implemented")
    return g, -g * a.div(b, rounding_mode="floor")


_REMAINDER = pointwise("remainder", special_math.remainder, _remainder_backward, rule=_real_promote("remainder"))
_FMOD = pointwise("fmod", special_math.fmod,
                  lambda ctx, g: (g, -g * ctx.inputs[0].div(ctx.inputs[1], rounding_mode="trunc")),
                  rule=_real_promote("fmod"))


@export(inplace=True)
def remainder(input, other, *, out=None) -> Tensor:
    """Python-style modulus: the result has the sign of the divisor."""
    return finish_out(call(_REMAINDER, (input, other)), out)


@export(inplace=True)
def fmod(input, other, *, out=None) -> Tensor:
    """C-style modulus: the result has the sign of the dividend."""
    return finish_out(call(_FMOD, (input, other)), out)


def _pow_rule(args, params):
    compute, result = promote(args, params)
    if compute is dt.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    return compute, result


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
        elif base == 0:
            grad_exponent = _zeros_like(g)
        elif isinstance(base, complex) or exponent.is_complex():
            grad_exponent = g * _conj(result * cmath.log(base))
        else:  # a negative real base: log is nan, as torch's std::log (math.log raised)
            grad_exponent = g * _conj(result * (math.log(base) if base > 0 else math.nan))
    return grad_base, grad_exponent


def _pow_out(xp, out, a, b):
    if out.dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu" and np.any(np.asarray(b) < 0):
        return NotImplemented  # torch's integer pow of negative exponents (special_math.power): out of place
    xp.power(a, b, out=out)


_POW = pointwise("pow", special_math.power, _pow_backward, saves=BOTH, rule=_pow_rule, out_impl=_pow_out)


@export(inplace=True)
def pow(input, exponent, *, out=None) -> Tensor:
    """input ** exponent; either may be a Python scalar."""
    if type(exponent) is int and exponent < 0 and isinstance(input, Tensor) and input._dtype.category < 2:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    if type(exponent) is bool and isinstance(input, Tensor) and input._dtype is dt.bool_:
        # torch's pow short-cuts exponents 1 and 0 (a copy, or ones) before its kernel, which has no bool
        result = input.clone() if exponent else input.new_ones(input.shape)
        return finish_out(result, out)
    return finish_out(call(_POW, (input, exponent)), out)


@export
def float_power(input, exponent, *, out=None) -> Tensor:
    """pow computed in double precision (complex128 for complex operands)."""
    complex_ = any(_dtype_of(x).is_complex for x in (input, exponent))
    target = dt.complex128 if complex_ else dt.float64
    input = input.to(target) if isinstance(input, Tensor) else input
    exponent = exponent.to(target) if isinstance(exponent, Tensor) else exponent
    if not isinstance(input, Tensor):
        input = Tensor._make(np.asarray(input, target.np_dtype), target, exponent._device)
    return pow(input, exponent, out=out)


def _float_power_inplace(self, exponent) -> Tensor:
    """Tensor.float_power_: the base must already be double (complex double), as torch requires."""
    complex_ = any(_dtype_of(x).is_complex for x in (self, exponent))
    target = dt.complex128 if complex_ else dt.float64
    if self._dtype is not target:
        raise RuntimeError(f"the base given to float_power_ has dtype {_scalar_name(self._dtype)} but the "
                           f"operation's result requires dtype {_scalar_name(target)}")
    self._check_inplace()
    return self._inplace_from(float_power(self, exponent))


export(_float_power_inplace, name="float_power_", function=False)


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


def _real_only(name):
    """promote, refusing complex operands with torch's '<name> not implemented for complex tensors.'"""
    return _rejecting(promote, _complex_unsupported(RuntimeError, f"{name} not implemented for complex tensors."))


_MAXIMUM = pointwise("maximum", lambda xp, a, b: xp.maximum(a, b),
                     lambda ctx, g: _max_backward(ctx, g, lambda a, b: a > b), out_impl=_ufunc_out("maximum"),
                     rule=_real_only("maximum"))
_MINIMUM = pointwise("minimum", lambda xp, a, b: xp.minimum(a, b),
                     lambda ctx, g: _max_backward(ctx, g, lambda a, b: a < b), out_impl=_ufunc_out("minimum"),
                     rule=_real_only("minimum"))
_FMAX = pointwise("fmax", lambda xp, a, b: xp.fmax(a, b), lambda ctx, g: _fmax_backward(ctx, g, lambda a, b: a >= b),
                  out_impl=_ufunc_out("fmax"), rule=_real_only("fmax"))
_FMIN = pointwise("fmin", lambda xp, a, b: xp.fmin(a, b), lambda ctx, g: _fmax_backward(ctx, g, lambda a, b: a <= b),
                  out_impl=_ufunc_out("fmin"), rule=_real_only("fmin"))
_HYPOT = pointwise("hypot", lambda xp, a, b: xp.hypot(a, b),
                   lambda ctx, g: (g * ctx.inputs[0] / ctx.result, g * ctx.inputs[1] / ctx.result),
                   rule=_rejecting(promote, _kernel_missing("hypot_cpu", bool_=True, integral=True, complex_=True)),
                   saves=BOTH)
_ATAN2 = pointwise("atan2", lambda xp, a, b: xp.arctan2(a, b), lambda ctx, g: _atan2_backward(ctx, g),
                   rule=_rejecting(promote_float, _kernel_missing("atan2_cpu", complex_=True)))
_COPYSIGN = pointwise("copysign", lambda xp, a, b: xp.copysign(a, b), lambda ctx, g: _copysign_backward(ctx, g),
                      rule=_rejecting(promote_float, _kernel_missing("copysign_cpu", complex_=True)), saves=BOTH)
_XLOGY = pointwise("xlogy", lambda xp, a, b: special_math.xlogy(xp, a, b), lambda ctx, g: _xlogy_backward(ctx, g),
                   rule=_rejecting(promote_float, _kernel_missing("xlogy_cpu", complex_=True)))
_LOGADDEXP = pointwise("logaddexp", special_math.logaddexp,
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
    return g * ratio, _zeros_like(g)


def _xlogy_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = where((a == 0) & ~b.isnan(), 0.0, g * b.log()) if isinstance(b, Tensor) else g * math.log(b)
    if ctx.needs_input_grad[1]:
        grad_b = g * a / b
    return grad_a, grad_b


def _require_tensors(name, input, other, other_too=True):
    """torch's argument parser: these ops take no Python numbers (TypeError naming the argument)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if other_too and not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")


def _binary(name, op, aliases=(), inplace=True, tensors_only=False, tensor_input=False):
    def fn(input, other, *, out=None):
        if tensors_only or tensor_input:
            _require_tensors(name, input, other, tensors_only)
        return finish_out(call(op, (input, other)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} of two tensors (torch.{name})."
    export(fn, inplace=inplace, aliases=aliases)
    return fn


maximum = _binary("maximum", _MAXIMUM, tensors_only=True)
minimum = _binary("minimum", _MINIMUM, tensors_only=True)
fmax = _binary("fmax", _FMAX, tensors_only=True)
fmin = _binary("fmin", _FMIN, tensors_only=True)
hypot = _binary("hypot", _HYPOT, tensors_only=True)
atan2 = _binary("atan2", _ATAN2, aliases=("arctan2",), tensors_only=True)
copysign = _binary("copysign", _COPYSIGN, tensor_input=True)
xlogy = _binary("xlogy", _XLOGY)
logaddexp = _binary("logaddexp", _LOGADDEXP, inplace=False, tensors_only=True)
logaddexp2 = _binary("logaddexp2", _LOGADDEXP2, inplace=False, tensors_only=True)


# ---------------------------------------------------------------- ternary ops


def _where_rule(args, params):
    compute, _ = promote(args[1:], params)
    return compute, compute


def _where_impl(xp, condition, a, b):
    return xp.where(condition, a, b)


def _where_backward(ctx, g):
    condition = ctx.inputs[0]
    return None, where(condition, g, 0.0), where(condition, 0.0, g)


def _where_cast_impl(xp, condition, a, b):
    if hasattr(condition, "astype"):
        condition = condition.astype(bool, copy=False)
    return _where_impl(xp, condition, a, b)


_WHERE = _checked(OpDef("where", _where_cast_impl,
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
    if isinstance(condition, Tensor) and condition._dtype is dt.uint8:
        _warn_uint8_condition()
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        # torch makes a number branch a scalar_tensor of the result dtype: fill_'s checked conversion
        from .creation import cast_fill_value

        compute = _where_rule((condition, input, other), {})[0]
        for value in (input, other):
            if isinstance(value, (int, float, complex, np.generic)):
                cast_fill_value(value, compute)
    return finish_out(call(_WHERE, (condition, input, other)), out)


def _warn_uint8_condition() -> None:
    """torch's TORCH_WARN_ONCE for a uint8 `where` condition (old masks, e.g. pytorch-crf's mask.byte()): once per
    process, or every time under torch.set_warn_always(True)."""
    from .top_level_functions import _WarnAlways

    if _warn_uint8_condition.warned and not _WarnAlways.enabled:
        return
    _warn_uint8_condition.warned = True
    import warnings

    from ._api import _user_stacklevel

    warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                  "future version of PyTorch. Use a boolean condition instead.", UserWarning,
                  stacklevel=_user_stacklevel())


_warn_uint8_condition.warned = False


def _where_method(self, condition, other):
    return where(condition, self, other)


export(_where_method, name="where", function=False)

_HEAVISIDE = pointwise("heaviside", lambda xp, a, v: xp.where(a == 0, v, (a > 0).astype(a.dtype)), None)


@export(inplace=True)
def heaviside(input, values, *, out=None) -> Tensor:
    """0 where input < 0, values where input == 0, 1 where input > 0 (both must share a dtype, as in torch)."""
    _require_tensors("heaviside", input, values)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if input._dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return finish_out(call(_HEAVISIDE, (input, values)), out)
_GCD = pointwise("gcd", lambda xp, a, b: xp.gcd(a, b), None, rule=_integral_only("gcd", bool_ok=False))
_LCM = pointwise("lcm", lambda xp, a, b: xp.lcm(a, b), None, rule=_integral_only("lcm", bool_ok=False))
gcd = _binary("gcd", _GCD, tensors_only=True)
lcm = _binary("lcm", _LCM, tensors_only=True)
