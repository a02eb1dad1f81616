"""Arithmetic helpers that reproduce how torch's CPU build evaluates the Cephes ports of ATen/native/Math.h.

torch runs those kernels in the input's own precision (float stays float) and its x86 build lets the compiler
contract `a * b + c` into one fused multiply-add (a single rounding).  Matching torch to the last bit therefore
needs both: arrays stay in their dtype, and the contracted sites use `fused_multiply_add`, which is exact for
float32 (the product of two floats is exact in double) and an error-free-transformation emulation for float64
(TwoProduct + TwoSum, correctly rounded but for rare double-rounding ties).

`libm` evaluates a transcendental function for an array of either precision: float32 through float64 and one
rounding, which lands on glibc's float result (what torch calls) far more often than NumPy's own float32 loops.
"""

from __future__ import annotations

_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's split of a double into two 26-bit halves


def is_single(x) -> bool:
    """Whether an array is float32 (everything else these kernels see is float64)."""
    return x.dtype.itemsize == 4


def as_real(xp, value, dtype):
    """An operand as an array of `dtype` (Python numbers included)."""
    return xp.asarray(value, dtype=dtype)


# NumPy's own float64 exp, log and arccos loops differ from glibc's (which torch calls) in the last bit for a few
# percent of arguments; through long double (x87's 64-bit significand) and one rounding they almost never do
_WIDENED_IN_DOUBLE = frozenset({"exp", "log", "arccos"})


def libm(xp, function, x):
    """function(x) (an `xp` ufunc) rounded once to x's precision, as near to glibc's result as NumPy gets."""
    if is_single(x):
        return function(x.astype(xp.float64)).astype(xp.float32)
    if function.__name__ in _WIDENED_IN_DOUBLE and _has_wide_long_double(xp):
        return function(x.astype(xp.longdouble)).astype(xp.float64)
    return function(x)


def _has_wide_long_double(xp) -> bool:
    """Whether `xp` has a long double wider than double (NumPy on x86; not CuPy, not every platform)."""
    long_double = getattr(xp, "longdouble", None)
    return long_double is not None and xp.finfo(long_double).nmant > 52


def _product_error(xp, a, b, product):
    """a * b - product exactly (Dekker's TwoProduct), for a product of two doubles."""
    scaled_a = _SPLITTER * a
    a_high = scaled_a - (scaled_a - a)
    a_low = a - a_high
    scaled_b = _SPLITTER * b
    b_high = scaled_b - (scaled_b - b)
    b_low = b - b_high
    return ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def fused_multiply_add(xp, a, b, c):
    """a * b + c with one rounding, in the precision of the array `a` (numbers b and c are first rounded to it,
    as C++ converts a literal to T)."""
    a = xp.asarray(a)
    b = xp.asarray(b, dtype=a.dtype)
    c = xp.asarray(c, dtype=a.dtype)
    if is_single(a):
        wide = a.astype(xp.float64) * b.astype(xp.float64) + c.astype(xp.float64)
        return wide.astype(xp.float32)
    product = a * b
    error = _product_error(xp, a, b, product)
    total = product + c
    # TwoSum(product, c): the rounding error of total, exactly
    virtual = total - product
    total_error = (product - (total - virtual)) + (c - virtual)
    result = total + (total_error + error)
    # infinite or overflowing intermediates: the plain sum has the right infinity (or nan)
    return xp.where(xp.isfinite(result), result, total)


def horner(xp, x, coefficients):
    """The polynomial with `coefficients` (highest degree first) at x, each step one fused multiply-add, as
    torch's `p = p * x + C[i]` loops compile."""
    result = xp.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        result = fused_multiply_add(xp, result, x, c)
    return result


def chebyshev_series(xp, y, coefficients):
    """Cephes' chbevl (Clenshaw's recurrence b0 = y b1 - b2 + c, contracted as fma(y, b1, -b2) + c), returning
    0.5 (b0 - b2)."""
    b0 = xp.full_like(y, coefficients[0])
    b1 = xp.zeros_like(y)
    b2 = b1
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = fused_multiply_add(xp, y, b1, -b2) + c
    return 0.5 * (b0 - b2)
