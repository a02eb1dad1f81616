"""Special functions: the gamma family (lgamma, digamma, polygamma, mvlgamma, igamma/igammac, zeta), the
modified Bessel functions (i0, i0e, i1, i1e), torch.special's Bessel family (J0/J1, Y0/Y1, modified I0/I1 and
K0/K1, scaled K0/K1, Airy Ai; kernels in special_bessel_yk.py), and the normal-distribution and
entropy helpers of torch.special (ndtr, log_ndtr, ndtri, erfcx, entr, xlog1py).

The array-level kernels are special_gamma.py and special_bessel.py; this module declares the ops (dtype
rules, backward formulas as in torch's derivatives.yaml) and their public functions.  lgamma, digamma,
polygamma, mvlgamma, i0, igamma and igammac are top-level functions and Tensor methods with in-place
variants, as in torch; the rest live in ember.special only.
"""

from __future__ import annotations

import math

from .._dispatch import SAVE_INPUTS, SAVE_RESULT, call, promote, promote_float
from .._tensor import Tensor
from . import special_bessel as bessel
from . import special_bessel_yk as bessel_yk
from . import special_gamma as gamma
from ._api import export, finish_out
from .elementwise import BOTH, _require_tensors, pointwise, where

SQRT_2PI = math.sqrt(2.0 * math.pi)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _scalar_name(dtype) -> str:
    from .._tensor import SCALAR_NAMES

    return SCALAR_NAMES[dtype.name]


def _real(kernel: str, rule=promote_float, integral: bool = True, half: bool = True):
    """A dtype rule for real-only kernels: complex (and, with integral=False, integral; with half=False, float16
    and bfloat16) types raise torch's NotImplementedError naming the kernel."""

    def dtype_rule(args, params):
        compute, result = rule(args, params)
        if compute.is_complex or (not integral and compute.category < 2) or (
                not half and compute.name in ("float16", "bfloat16")):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(compute)}\'')
        return compute, result

    return dtype_rule


def _unary_op(name: str, kernel: str, impl, backward=None, saves=SAVE_INPUTS, half=True):
    return pointwise(name, lambda xp, a: impl(xp, a), backward, rule=_real(kernel, half=half), saves=saves)


def _unary_function(name: str, op, doc: str):
    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        return finish_out(call(op, (input,)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# ---------------------------------------------------------------- gamma family


def _lgamma_backward(ctx, g):
    return g * digamma(ctx.inputs[0])


def _digamma_backward(ctx, g):
    return g * polygamma(1, ctx.inputs[0])


def _polygamma_backward(ctx, g):
    return g * polygamma(ctx.params["n"] + 1, ctx.inputs[0])


_LGAMMA = _unary_op("lgamma", "lgamma_vml_cpu", gamma.lgamma, _lgamma_backward)
_DIGAMMA = _unary_op("digamma", "digamma", gamma.digamma, _digamma_backward)
_POLYGAMMA = pointwise("polygamma", lambda xp, a, n: gamma.polygamma(xp, a, n), _polygamma_backward,
                       rule=_real("polygamma"))

lgamma = export(_unary_function("lgamma", _LGAMMA, "log|Gamma(input)| elementwise (torch.lgamma)."), inplace=True)
digamma = export(_unary_function("digamma", _DIGAMMA, "The logarithmic derivative of Gamma (torch.digamma)."),
                 inplace=True)


def _check_polygamma_order(n) -> None:
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


@export(method=False)
def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, input) for n >= 2."""
    _check_polygamma_order(n)
    return finish_out(call(_POLYGAMMA, (input,), {"n": int(n)}), out)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """Tensor.polygamma(n): polygamma(n, self) (the order comes first in the function, last in the method)."""
    return polygamma(n, self)


export(_polygamma_method, name="polygamma", function=False, inplace=True)


@export(inplace=True)
def mvlgamma(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The multivariate log-gamma of dimension p: sum_j lgamma(input - j/2) + p(p-1)/4 log(pi)."""
    if input._dtype.name == "bool":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input._dtype.is_complex:
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{_scalar_name(input._dtype)}\'')
    # lgamma(input) first: an in-place call's first op must not be one that could write into input
    # (NOTE [ In-place ops without a copy ] in _dispatch.py); integral inputs become the default float dtype
    result = lgamma(input)
    half = result._dtype.name in ("float16", "bfloat16")
    if half:  # torch's sum accumulates half terms in float and rounds once
        result = result.float()
    for j in range(1, p):
        term = lgamma(input - j / 2)
        result = result + (term.float() if half else term)
    if half:
        result = result.to(input._dtype)
    return finish_out(result + p * (p - 1) * math.log(math.pi) / 4, out)


def _igamma_backward(name, sign):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); torch has no derivative in a."""

    def backward(ctx, g):
        a, x = ctx.inputs
        if ctx.needs_input_grad[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        density = ((a - 1) * x.log() - x - lgamma(a)).exp()
        return None, g * density if sign > 0 else -g * density

    return backward


_IGAMMA = pointwise("igamma", lambda xp, a, x: gamma.igamma(xp, a, x), _igamma_backward("igamma", 1),
                    rule=_real("igamma_cpu", promote, integral=False))
_IGAMMAC = pointwise("igammac", lambda xp, a, x: gamma.igammac(xp, a, x), _igamma_backward("igammac", -1),
                     rule=_real("igammac_cpu", promote, integral=False))


@export(inplace=True)
def igamma(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    _require_tensors("igamma", input, other)
    return finish_out(call(_IGAMMA, (input, other)), out)


@export(inplace=True)
def igammac(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other)."""
    _require_tensors("igammac", input, other)
    return finish_out(call(_IGAMMAC, (input, other)), out)


def _zeta_backward(ctx, g):
    """torch differentiates zeta(x, q) in q only: d/dq = -x zeta(x + 1, q); in x it raises."""
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    s, q = ctx.inputs
    return None, g * -s * zeta(s + 1, q)


_ZETA = pointwise("zeta", lambda xp, s, q: gamma.zeta(xp, s, q), _zeta_backward, rule=_real("zeta_cpu", half=False),
                  grad_name="SpecialZetaBackward0")


def zeta(input, other, *, out: Tensor | None = None) -> Tensor:
    """The Hurwitz zeta function sum_k (k + other)^-input (torch.special.zeta)."""
    return finish_out(call(_ZETA, (input, other)), out)


# ---------------------------------------------------------------- Bessel functions


def _i0_backward(ctx, g):
    return g * i1(ctx.inputs[0])


def _i0e_backward(ctx, g):
    x = ctx.inputs[0]
    return g * (i1e(x) - x.sgn() * ctx.result)


def _tiny_safe(x):
    """torch's i1/i1e backward: |x| <= eps uses the limit 0.5, on a safe stand-in argument."""
    eps = x.new_tensor(_epsilon(x))
    not_tiny = x.abs() > eps
    return not_tiny, where(not_tiny, x, eps)


def _epsilon(x) -> float:
    import numpy as np

    return float(np.finfo(np.float64 if x._dtype.name == "float64" else np.float32).eps)


def _i1_backward(ctx, g):
    not_tiny, safe = _tiny_safe(ctx.inputs[0])
    return g * where(not_tiny, i0(safe) - ctx.result * safe.reciprocal(), 0.5)


def _i1e_backward(ctx, g):
    not_tiny, safe = _tiny_safe(ctx.inputs[0])
    return g * where(not_tiny, i0e(safe) - ctx.result * (safe.sgn() + safe.reciprocal()), 0.5)


_I0 = _unary_op("i0", "i0_vml_cpu", bessel.i0, _i0_backward)
_I0E = _unary_op("special_i0e", "i0e_cpu", bessel.i0e, _i0e_backward, saves=BOTH)
_I1 = _unary_op("special_i1", "i1_cpu", bessel.i1, _i1_backward, saves=BOTH)
_I1E = _unary_op("special_i1e", "i1e_cpu", bessel.i1e, _i1e_backward, saves=BOTH)
# torch.special's Bessel family proper (J, Y, the modified I and K, Airy Ai): no gradient, no half kernels, float
# computed in float (special_bessel_yk.py)
_J0 = _unary_op("special_bessel_j0", "bessel_j0_cpu", bessel_yk.bessel_j0, half=False)
_J1 = _unary_op("special_bessel_j1", "bessel_j1_cpu", bessel_yk.bessel_j1, half=False)
_Y0 = _unary_op("special_bessel_y0", "bessel_y0_cpu", bessel_yk.bessel_y0, half=False)
_Y1 = _unary_op("special_bessel_y1", "bessel_y1_cpu", bessel_yk.bessel_y1, half=False)
_MODIFIED_I0 = _unary_op("special_modified_bessel_i0", "modified_bessel_i0_cpu", bessel_yk.modified_bessel_i0,
                         half=False)
_MODIFIED_I1 = _unary_op("special_modified_bessel_i1", "modified_bessel_i1_cpu", bessel_yk.modified_bessel_i1,
                         half=False)
_MODIFIED_K0 = _unary_op("special_modified_bessel_k0", "modified_bessel_k0_cpu", bessel_yk.modified_bessel_k0,
                         half=False)
_MODIFIED_K1 = _unary_op("special_modified_bessel_k1", "modified_bessel_k1_cpu", bessel_yk.modified_bessel_k1,
                         half=False)
_SCALED_K0 = _unary_op("special_scaled_modified_bessel_k0", "scaled_modified_bessel_k0_cpu",
                       bessel_yk.scaled_modified_bessel_k0, half=False)
_SCALED_K1 = _unary_op("special_scaled_modified_bessel_k1", "scaled_modified_bessel_k1_cpu",
                       bessel_yk.scaled_modified_bessel_k1, half=False)
_AIRY_AI = _unary_op("special_airy_ai", "airy_ai_cpu", bessel_yk.airy_ai, half=False)
_SPHERICAL_J0 = _unary_op("special_spherical_bessel_j0", "spherical_bessel_j0_cpu", bessel.spherical_bessel_j0,
                          half=False)

i0 = export(_unary_function("i0", _I0, "The modified Bessel function of the first kind, order 0 (torch.i0)."),
            inplace=True)
i0e = _unary_function("i0e", _I0E, "exp(-|x|) i0(x), the exponentially scaled i0 (torch.special.i0e).")
i1 = _unary_function("i1", _I1, "The modified Bessel function of the first kind, order 1 (torch.special.i1).")
i1e = _unary_function("i1e", _I1E, "exp(-|x|) i1(x), the exponentially scaled i1 (torch.special.i1e).")
bessel_j0 = _unary_function("bessel_j0", _J0, "The Bessel function of the first kind, order 0 (no gradient).")
bessel_j1 = _unary_function("bessel_j1", _J1, "The Bessel function of the first kind, order 1 (no gradient).")
modified_bessel_i0 = _unary_function("modified_bessel_i0", _MODIFIED_I0,
                                     "The modified Bessel function of the first kind, order 0 (no gradient).")
modified_bessel_i1 = _unary_function("modified_bessel_i1", _MODIFIED_I1,
                                     "The modified Bessel function of the first kind, order 1 (no gradient).")
bessel_y0 = _unary_function("bessel_y0", _Y0, "The Bessel function of the second kind, order 0 (no gradient).")
bessel_y1 = _unary_function("bessel_y1", _Y1, "The Bessel function of the second kind, order 1 (no gradient).")
modified_bessel_k0 = _unary_function("modified_bessel_k0", _MODIFIED_K0,
                                     "The modified Bessel function of the second kind, order 0 (no gradient).")
modified_bessel_k1 = _unary_function("modified_bessel_k1", _MODIFIED_K1,
                                     "The modified Bessel function of the second kind, order 1 (no gradient).")
scaled_modified_bessel_k0 = _unary_function("scaled_modified_bessel_k0", _SCALED_K0,
                                            "exp(x) K0(x), the scaled modified Bessel function K0 (no gradient).")
scaled_modified_bessel_k1 = _unary_function("scaled_modified_bessel_k1", _SCALED_K1,
                                            "exp(x) K1(x), the scaled modified Bessel function K1 (no gradient).")
airy_ai = _unary_function("airy_ai", _AIRY_AI, "The Airy function Ai (no gradient).")
spherical_bessel_j0 = _unary_function("spherical_bessel_j0", _SPHERICAL_J0,
                                      "The spherical Bessel function of the first kind, order 0: sin(x) / x "
                                      "(no gradient).")


# ---------------------------------------------------------------- normal distribution, entropy


def _ndtr_backward(ctx, g):
    x = ctx.inputs[0]
    return g * (-0.5 * x.square()).exp() / SQRT_2PI


def _log_ndtr_backward(ctx, g):
    x = ctx.inputs[0]
    return g / SQRT_2PI * (-(ctx.result + x.square() / 2)).exp()


def _ndtri_backward(ctx, g):
    return g * SQRT_2PI * (ctx.result.square() / 2).exp()


def _erfcx_backward(ctx, g):
    return (2.0 * ctx.inputs[0] * ctx.result - TWO_OVER_SQRT_PI) * g


def _entr_backward(ctx, g):
    return g * (-(1 + ctx.inputs[0].log()))


_NDTR = _unary_op("special_ndtr", "erf_vml_cpu", bessel.ndtr, _ndtr_backward)
_LOG_NDTR = _unary_op("special_log_ndtr", "log_ndtr_cpu", bessel.log_ndtr, _log_ndtr_backward, saves=BOTH, half=False)
_NDTRI = _unary_op("special_ndtri", "ndtri_cpu", bessel.ndtri, _ndtri_backward, saves=SAVE_RESULT, half=False)
_ERFCX = _unary_op("special_erfcx", "erfcx_cpu", bessel.erfcx, _erfcx_backward, saves=BOTH, half=False)
_ENTR = _unary_op("special_entr", "entr_cpu", bessel.entr, _entr_backward)

ndtr = _unary_function("ndtr", _NDTR, "The standard normal CDF (torch.special.ndtr).")
log_ndtr = _unary_function("log_ndtr", _LOG_NDTR, "log of the standard normal CDF, accurate in the lower tail.")
ndtri = _unary_function("ndtri", _NDTRI, "The inverse of the standard normal CDF (torch.special.ndtri).")
erfcx = _unary_function("erfcx", _ERFCX, "exp(x^2) erfc(x), the scaled complementary error function.")
entr = _unary_function("entr", _ENTR, "The elementwise entropy -x log(x) (torch.special.entr).")


def _xlog1py_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = xlog1py(g, b)
        zero = a == 0
        if isinstance(b, Tensor):
            grad_a = grad_a.masked_fill(zero & (b <= -1), 0.0)
        elif b <= -1:
            grad_a = grad_a.masked_fill(zero, 0.0)
    if ctx.needs_input_grad[1]:
        grad_b = g * a / (b + 1)
    return grad_a, grad_b


_XLOG1PY = pointwise("special_xlog1py", lambda xp, a, b: bessel.xlog1py(xp, a, b), _xlog1py_backward,
                     rule=_real("xlog1py_cpu"))


def xlog1py(input, other, *, out: Tensor | None = None) -> Tensor:
    """input * log1p(other), 0 where input is 0 (unless other is nan) (torch.special.xlog1py)."""
    return finish_out(call(_XLOG1PY, (input, other)), out)
