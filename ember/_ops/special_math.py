"""Array-level math NumPy lacks or computes differently from torch: erf family, sigmoid, sgn, logit, xlogy,
and the array-level bodies of pointwise ops with torch-specific rules (integer division, integer pow,
complex logaddexp, sign of nan, scalar wraparound).

erf/erfc are Cephes' rational approximations (as used by SciPy), accurate to
double precision; erfinv is torch's rational initial guess refined by
Newton steps (on erfc in the tails, to stay accurate next to ±1).
"""

from __future__ import annotations

import math

import numpy as np

_ERF_T = (9.60497373987051638749e0, 9.00260197203842689217e1, 2.23200534594684319226e3,
          7.00332514112805075473e3, 5.55923013010394962768e4)
_ERF_U = (3.35617141647503099647e1, 5.21357949780152679795e2, 4.59432382970980127987e3,
          2.26290000613890934246e4, 4.92673942608635921086e4)
_ERFC_P = (2.46196981473530512524e-10, 5.64189564831068821977e-1, 7.46321056442269912687e0,
           4.86371970985681366614e1, 1.96520832956077098242e2, 5.26445194995477358631e2,
           9.34528527171957607540e2, 1.02755188689515710272e3, 5.57535335369399327526e2)
_ERFC_Q = (1.32281951154744992508e1, 8.67072140885989742329e1, 3.54937778887819891062e2,
           9.75708501743205489753e2, 1.82390916687909736289e3, 2.24633760818710981792e3,
           1.65666309194161350182e3, 5.57535340817727675546e2)
_ERFC_R = (5.64189583547755073984e-1, 1.27536670759978104416e0, 5.01905042251180477414e0,
           6.16021097993053585195e0, 7.40974269950448939160e0, 2.97886665372100240670e0)
_ERFC_S = (2.26052863220117276590e0, 9.39603524938001434673e0, 1.20489539808096656605e1,
           1.70814450747565897222e1, 9.60896809063285878198e0, 3.36907645100081516050e0)


def torch_fuses_multiply_add(xp) -> bool:
    """Whether torch's kernels round a multiply-add once here: CUDA always (nvcc contracts a * b + c), the CPU
    on FMA builds (NOTE [ torch's CPU kernel arithmetic ] in ember/_runtime.py)."""
    from .. import _runtime

    return xp is not np or _runtime.kernels_fuse_multiply_add()


def fused_multiply_add(xp, x, y, z):
    """x * y + z rounded once where the operands are float32 (the product of two floats is exact in float64,
    so the float64 sum rounded to float32 is the fused result except in double-rounding ties): how torch's
    FMA-built CPU kernels and CUDA (nvcc contracts a * b + c) round their multiply-adds.  Other dtypes are
    rounded twice (an array module without fma)."""
    x, y, z = (xp.asarray(v) if not hasattr(v, "dtype") else v for v in (x, y, z))
    if all(v.dtype == np.float32 for v in (x, y, z)):
        wide = xp.float64
        return (x.astype(wide) * y.astype(wide) + z.astype(wide)).astype(np.float32)
    return x * y + z


def _polevl(x, coefficients):
    """Horner's rule, in place on one buffer (these run over every element of large activations)."""
    result = np.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        result *= x
        result += c
    return result


def _p1evl(x, coefficients):
    result = x + coefficients[0]
    for c in coefficients[1:]:
        result *= x
        result += c
    return result


def _erfc_large(x):
    """erfc for |x| >= 1 (x may be negative), computed in float64."""
    z = np.abs(x)
    exp_term = np.exp(-z * z)
    small = z < 8.0
    p = np.where(small, _polevl(z, _ERFC_P), _polevl(z, _ERFC_R))
    q = np.where(small, _p1evl(z, _ERFC_Q), _p1evl(z, _ERFC_S))
    y = np.where(np.isinf(z), 0.0, exp_term * p / q)  # inf/inf in the rational part at |x| = inf
    return np.where(x < 0, 2.0 - y, y)


def _erf64(x):
    """erf in float64, each Cephes branch evaluated only on the elements that need it."""
    x = np.asarray(x, np.float64)
    result = np.array(x, copy=True)  # nan stays nan
    small = np.abs(x) < 1.0
    if small.any():
        xs = x[small]
        z = xs * xs
        result[small] = xs * _polevl(z, _ERF_T) / _p1evl(z, _ERF_U)
    large = ~small & ~np.isnan(x)
    if large.any():
        result[large] = 1.0 - _erfc_large(x[large])
    return result


# Float32 erf: the rational approximation of Eigen/XLA (x * P(x^2) / Q(x^2) on [-4, 4], within a few ulp
# of torch's), an order of magnitude faster than the float64 Cephes path that GELU would otherwise take.
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)


def _erf32(x):
    x = np.clip(x, np.float32(-4.0), np.float32(4.0))
    x2 = x * x
    p = _polevl(x2, tuple(np.float32(c) for c in _ERF32_P))
    p *= x
    return p / _polevl(x2, tuple(np.float32(c) for c in _ERF32_Q))


def _erfc64(x):
    x = np.asarray(x, np.float64)
    small = np.abs(x) < 1.0
    inner = 1.0 - _erf64(np.where(small, x, 0.0))
    outer = _erfc_large(np.where(small, 1.0, x))
    result = np.where(small, inner, outer)
    return np.where(np.isnan(x), x, result)


def erf(xp, a):
    if a.dtype == np.float64:
        return _erf64(a)
    if a.dtype == np.float32:
        return _erf32(a)
    return _erf64(a).astype(a.dtype)


def erfc(xp, a):
    if a.dtype == np.float64:
        return _erfc64(a)
    return _erfc64(a).astype(a.dtype)


_ERFINV_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_ERFINV_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_ERFINV_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_ERFINV_D = (3.543889200, 1.637067800)


def erfinv(xp, a):
    """Inverse error function: torch's calc_erfinv initial guess, then Newton steps to double precision."""
    y = np.asarray(a, np.float64)
    absy = np.abs(y)
    central = absy <= 0.7
    z = y * y
    num = ((_ERFINV_A[3] * z + _ERFINV_A[2]) * z + _ERFINV_A[1]) * z + _ERFINV_A[0]
    dem = (((_ERFINV_B[3] * z + _ERFINV_B[2]) * z + _ERFINV_B[1]) * z + _ERFINV_B[0]) * z + 1.0
    x_central = y * num / dem
    w = np.sqrt(-np.log(np.clip((1.0 - absy) / 2.0, 1e-300, None)))
    num = ((_ERFINV_C[3] * w + _ERFINV_C[2]) * w + _ERFINV_C[1]) * w + _ERFINV_C[0]
    dem = (_ERFINV_D[1] * w + _ERFINV_D[0]) * w + 1.0
    x_tail = np.copysign(num / dem, y)
    x = np.where(central, x_central, x_tail)
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    # Newton steps on erf(x) = y in the centre; in the tails on erfc(|x|) = 1 - |y|, which is exact there
    # (Sterbenz), where erf(x) - y would cancel catastrophically near |y| = 1.
    magnitude = np.abs(x)
    tail = 1.0 - absy
    for _ in range(3):
        x = x - (_erf64(x) - y) / (two_over_sqrt_pi * np.exp(-x * x))
        magnitude = magnitude + (_erfc64(magnitude) - tail) / (two_over_sqrt_pi * np.exp(-magnitude * magnitude))
    x = np.where(central, x, np.copysign(magnitude, y))
    x = np.where(absy == 1.0, np.copysign(np.inf, y), x)
    x = np.where(absy > 1.0, np.nan, x)
    return x.astype(a.dtype) if a.dtype != np.float64 else x


def sigmoid(xp, a):
    """1 / (1 + exp(-a)), without overflow warnings for large |a|."""
    if a.dtype.kind == "c":
        return 1 / (1 + xp.exp(-a))
    positive = a >= 0
    exp_neg = xp.exp(-xp.abs(a))
    return xp.where(positive, 1 / (1 + exp_neg), exp_neg / (1 + exp_neg)).astype(a.dtype, copy=False)


def sgn(xp, a):
    """sign for real, a/|a| for complex (0 at 0)."""
    if a.dtype.kind != "c":
        if a.dtype == np.bool_:
            return a.copy()
        result = xp.sign(a)
        return xp.where(xp.isnan(a), 0, result).astype(a.dtype, copy=False) if a.dtype.kind == "f" else result
    magnitude = xp.abs(a)
    return xp.where(magnitude == 0, 0, a / xp.where(magnitude == 0, 1, magnitude)).astype(a.dtype)


def sgn_backward(ctx, g):
    """torch's sgn_backward: zero for real; (g - Re(g conj(sgn)) sgn) / |x| for complex."""
    x = ctx.inputs[0]
    if not x.is_complex():
        return g.new_zeros(g.shape)
    sign = ctx.result
    magnitude = x.abs()
    projected = g - (g * sign.conj()).real * sign
    return (projected / magnitude.masked_fill(magnitude == 0, 1.0)).masked_fill(magnitude == 0, 0.0)


def logit(xp, a, eps=None):
    """log(a / (1 - a)), a clamped to [eps, 1 - eps] first; torch treats a negative eps as no eps."""
    if eps is not None and eps >= 0:  # torch's x < lo ? lo : (x > hi ? hi : x), also when eps > 1/2
        a = xp.where(a < eps, eps, xp.where(a > 1 - eps, 1 - eps, a)).astype(a.dtype, copy=False)
    return xp.log(a / (1 - a))


def logit_backward(ctx, g):
    """torch's: g / (x (1 - x)) inside the domain; outside it nan without eps, 0 (the clamp's) with eps."""
    x = ctx.inputs[0]
    eps = ctx.params.get("eps")
    grad = g / (x * (1 - x))
    from .elementwise import where

    if eps is None or eps < 0:
        return where((x < 0) | (x > 1), math.nan, grad)
    return where((x < eps) | (x > 1 - eps), 0.0, grad)


def xlogy(xp, a, b):
    result = a * xp.log(b)
    return xp.where((a == 0) & ~xp.isnan(b), xp.zeros_like(result), result)


# ---------------------------------------------------------------- array-level pieces of pointwise ops


def wrap_int_scalars(arrays):
    """Python ints beside an integer array take its dtype with wraparound, as torch casts a wrapped
    number to the common dtype (uint8 tensor + (-1) subtracts one modulo 256); NumPy would raise."""
    integral = None
    for a in arrays:
        if hasattr(a, "dtype") and a.dtype.kind in "iu":
            integral = a.dtype
            break
    if integral is None:
        return arrays
    return tuple(np.asarray(a).astype(integral) if type(a) is int else a for a in arrays)


def sign_real(xp, a):
    if a.dtype == np.bool_:
        return a.copy()
    result = xp.sign(a)
    if a.dtype.kind == "f":
        result = xp.where(xp.isnan(a), 0, result).astype(a.dtype, copy=False)  # torch: sign(nan) == 0
    return result


def round_half_even(xp, a, decimals=0):
    if a.dtype.kind not in "fc":
        return a.copy()
    return xp.round(a, decimals)


def scalar_like(value, array):
    """A scalar parameter (alpha, value) in an integer computation takes the array's dtype, as torch converts
    it to the kernel's scalar type (so -1 wraps for uint8 and 0.5 truncates to 0)."""
    if getattr(array, "dtype", None) is not None and array.dtype.kind in "iub":
        return np.asarray(value).astype(array.dtype)
    return value


def int_div(xp, a, b, mode):
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
    return xp.trunc(quotient) if mode == "trunc" else python_floor_div(xp, a, b, quotient)


def python_floor_div(xp, a, b, quotient):
    # torch's div_floor: floor of the true quotient, corrected like Python's divmod for exact results.
    mod = xp.fmod(a, b)
    div = (a - mod) / b
    adjust = (mod != 0) & ((b < 0) != (mod < 0))
    div = xp.where(adjust, div - 1, div)
    floor = xp.floor(div)
    floor = xp.where(div - floor > 0.5, floor + 1, floor)
    return xp.where(b == 0, quotient, xp.where(div != 0, floor, xp.copysign(xp.zeros_like(div), quotient)))


def remainder(xp, a, b):
    if np.asarray(a).dtype.kind in "iu" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    if np.asarray(a).dtype.kind != "f":
        return xp.mod(a, b)
    # torch's float remainder: fmod, shifted by b when the signs differ; a zero keeps fmod's sign (a's),
    # where NumPy's mod gives it b's sign
    mod = xp.fmod(a, b)
    return xp.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)


def fmod(xp, a, b):
    if np.asarray(a).dtype.kind in "iu" and np.any(np.asarray(b) == 0):
        raise RuntimeError("ZeroDivisionError")
    return xp.fmod(a, b)


def power(xp, a, b):
    if np.asarray(a).dtype.kind in "iub" and np.asarray(b).dtype.kind in "iu" and np.any(np.asarray(b) < 0):
        a = np.asarray(a).astype(np.asarray(b).dtype)
        # torch's integer pow: x ** -n is 1 for x == 1, ±1 for x == -1, 0 otherwise (truncated 1 / x ** n)
        negative = b < 0
        magnitude = xp.power(a, xp.where(negative, 0, b))
        odd = (xp.abs(b) % 2) == 1
        inverse = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0))
        return xp.where(negative, inverse, magnitude).astype(magnitude.dtype, copy=False)
    return xp.power(a, b)


def logaddexp(xp, a, b):
    if np.asarray(a).dtype.kind != "c":
        return xp.logaddexp(a, b)
    # complex: log(exp(a) + exp(b)) around the operand of larger real part, as torch's kernel
    larger = xp.where(xp.real(a) >= xp.real(b), a, b)
    smaller = xp.where(xp.real(a) >= xp.real(b), b, a)
    return larger + xp.log1p(xp.exp(smaller - larger))


def nan_to_num(xp, a, nan=0.0, posinf=None, neginf=None):
    if a.dtype.kind not in "fc":
        return a.copy()
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


def clamp(xp, a, low, high):
    if low is not None:
        a = xp.maximum(a, low)
    if high is not None:
        a = xp.minimum(a, high)
    return a
