"""torch.special's orthogonal polynomials: Chebyshev T, U, V, W and their shifted forms on [0, 1], the physicists'
and probabilists' Hermite H and He, Laguerre L and Legendre P, each a function of (x, n).

The kernels follow torch's ATen/native/Math.h case by case: n is the common floating dtype's value truncated to
an integer (negative, and nan or infinite, give 0), |x| == 1 (x in {0, 1} when shifted) has closed forms, the
Chebyshev families switch to their trigonometric forms (cos(n acos x), ...) for |x| < 1 once n passes a small
threshold, Hermite orders beyond 128 (float) / 512 (double) give nan, and everything else runs the three-term
recurrence, which torch stops early once a value is nan.  The recurrence is vectorised: each pass advances every
element that still has steps to take, and finished elements drop out of the working arrays.

Deliberate difference: where x is nan and the recurrence would start on a nan, torch returns an uninitialised
variable (0, denormals or huge numbers, depending on the build); these kernels return nan.  torch has no
derivative for any of these functions (the results never require grad).
"""

from __future__ import annotations

from .._dispatch import call, promote_float
from .._tensor import Tensor
from ._api import finish_out
from .elementwise import pointwise
from .special_functions import _real as _real_only
from .special_fused import fused_multiply_add, libm

_HERMITE_LIMIT = {4: 128, 8: 512}  # torch's getHermitianLimit, by the itemsize of T


def _orders(xp, n):
    """static_cast<int64_t>(n): truncation toward zero; nan, infinities and out-of-range values become the
    most negative int64, as x86's conversion gives."""
    finite = xp.isfinite(n) & (xp.abs(n) < 9.2e18)
    return xp.where(finite, xp.trunc(xp.where(finite, n, 0.0)), -(2.0 ** 63)).astype(xp.int64)


def _recurrence(xp, x, n, q, step, needed, stop_on_nan=True):
    """q after n - 1 steps of (p, q) -> (q, step(xp, k, x, p, q)), k = 1, 2, ..., from p = 1, for the `needed`
    elements (the others keep q); with stop_on_nan an element stops as soon as its q is nan (torch's
    `k <= n && !isnan(q)`)."""
    result = q.copy()
    start = needed & (n >= 2)
    if stop_on_nan:
        start = start & ~xp.isnan(q)
    positions = xp.nonzero(start.ravel())[0]
    x, n, q = x.ravel()[positions], n.ravel()[positions], q.ravel()[positions]
    p = xp.ones_like(q)
    k = 1
    while positions.size:
        p, q = q, step(xp, k, x, p, q)
        k += 1
        running = n > k
        if stop_on_nan:
            running = running & ~xp.isnan(q)
        finished = ~running
        result.ravel()[positions[finished]] = q[finished]
        positions, x, n, p, q = positions[running], x[running], n[running], p[running], q[running]
    return result


def _prepare(xp, x, n):
    """x and the integer orders, broadcast together as fresh contiguous arrays (results are written through
    ravel).  Dispatch hands tensors over in the compute dtype and Python numbers as they are, so the array
    operand sets the dtype the number is rounded to."""
    dtype = (x if hasattr(x, "dtype") else n).dtype
    x, n = xp.broadcast_arrays(xp.asarray(x, dtype=dtype), xp.asarray(n, dtype=dtype))
    return xp.ascontiguousarray(x), xp.ascontiguousarray(_orders(xp, n))


def _real(integers, like):
    """int64 values converted to x's floating type (C++'s implicit conversion of `n + 1` and the like)."""
    return integers.astype(like.dtype)


def _signed(xp, positive, value):
    """value where `positive`, -value elsewhere."""
    return xp.where(positive, value, -value)


def _two_x_step(xp, k, x, p, q):
    """The Chebyshev step r = (x + x) q - p (one fused multiply-add in torch's build)."""
    return fused_multiply_add(xp, x + x, q, -p)


# ---------------------------------------------------------------- Chebyshev T, U, V, W


def _chebyshev(xp, x, n, kind, trig_from, first, edge, fallback=None):
    """The common shape of the four Chebyshev kinds, in the variable `x` (already shifted for the shifted
    families): n < 0 -> 0, `edge` values where they apply, the trigonometric form for |x| < 1 and n > trig_from
    (W's falls back to `fallback` where its denominator vanishes), else the recurrence from (1, first)."""
    inside = xp.abs(x) < 1.0
    trig_used = inside & (n > trig_from)
    angle = libm(xp, xp.arccos, xp.where(inside, x, 0.0))
    trig = _TRIG_FORMS[kind](xp, x, n, angle, fallback)
    edge_used, edge_value = edge
    needed = ~(trig_used | edge_used)
    result = _recurrence(xp, x, n, first, _two_x_step, needed)
    result = xp.where(n == 0, 1.0, result)
    result = xp.where(trig_used, trig, result)
    result = xp.where(edge_used, edge_value, result)
    return xp.where(n < 0, 0.0, result)


def _trig_t(xp, x, n, angle, fallback):
    return libm(xp, xp.cos, _real(n, x) * angle)


def _trig_u(xp, x, n, angle, fallback):
    """sin((n + 1) t) / sin t, or (n + 1) cos((n + 1) t) / x where sin t is 0."""
    sine = libm(xp, xp.sin, angle)
    multiple = _real(n + 1, x) * angle
    ratio = libm(xp, xp.sin, multiple) / xp.where(sine != 0, sine, 1.0)
    return xp.where(sine != 0, ratio, _real(n + 1, x) * libm(xp, xp.cos, multiple) / x)


def _trig_v(xp, x, n, angle, fallback):
    """cos((n + 1/2) t) / cos(t / 2), or +-(2n + 1) where sin(t / 2) is 1."""
    half = angle / 2.0
    value = libm(xp, xp.cos, (_real(n, x) + 0.5) * angle) / libm(xp, xp.cos, half)
    return xp.where(libm(xp, xp.sin, half) != 1.0, value, _signed(xp, n % 2 == 0, _real(n + n + 1, x)))


def _trig_w(xp, x, n, angle, fallback):
    """sin((n + 1/2) t) / sin(t / 2), or `fallback` where cos(t / 2) is 1."""
    half = angle / 2.0
    sine = libm(xp, xp.sin, half)
    value = libm(xp, xp.sin, (_real(n, x) + 0.5) * angle) / xp.where(sine != 0, sine, 1.0)
    return xp.where(libm(xp, xp.cos, half) != 1.0, value, fallback)


_TRIG_FORMS = {"t": _trig_t, "u": _trig_u, "v": _trig_v, "w": _trig_w}


def chebyshev_polynomial_t(xp, x, n):
    x, n = _prepare(xp, x, n)
    at_one = xp.abs(x) == 1.0
    edge = (at_one, _signed(xp, (x > 0) | (n % 2 == 0), xp.ones_like(x)))
    return _chebyshev(xp, x, n, "t", 6, x, edge)


def chebyshev_polynomial_u(xp, x, n):
    x, n = _prepare(xp, x, n)
    at_one = xp.abs(x) == 1.0
    edge = (at_one, _signed(xp, (x > 0) | (n % 2 == 0), _real(n + 1, x)))
    return _chebyshev(xp, x, n, "u", 8, x + x, edge)


def chebyshev_polynomial_v(xp, x, n):
    x, n = _prepare(xp, x, n)
    at_one = xp.abs(x) == 1.0
    edge = (at_one, xp.where(x > 0, xp.ones_like(x), _signed(xp, n % 2 == 0, _real(n + n + 1, x))))
    return _chebyshev(xp, x, n, "v", 8, x + x - 1.0, edge)


def _w_edge(xp, x, n, positive):
    """W's value where cos(t / 2) is 1: 2n + 1 on the positive side, else +-1 by the parity of n."""
    return xp.where(positive, _real(n + n + 1, x), _signed(xp, n % 2 == 0, xp.ones_like(x)))


def chebyshev_polynomial_w(xp, x, n):
    x, n = _prepare(xp, x, n)
    at_one = xp.abs(x) == 1.0
    edge_value = _w_edge(xp, x, n, x > 0)
    return _chebyshev(xp, x, n, "w", 8, x + x + 1.0, (at_one, edge_value), fallback=edge_value)


def _shifted(xp, x, n, kind, trig_from, first, at_one, at_zero, fallback=None):
    """A shifted Chebyshev polynomial: the kind's polynomial in y = 2x - 1, with torch's values at x = 1 and 0."""
    y = x + x - 1.0
    edge_used = (x == 1.0) | (x == 0.0)
    edge_value = xp.where(x == 1.0, at_one, at_zero)
    return _chebyshev(xp, y, n, kind, trig_from, first(y), (edge_used, edge_value), fallback)


def shifted_chebyshev_polynomial_t(xp, x, n):
    x, n = _prepare(xp, x, n)
    ones = xp.ones_like(x)
    return _shifted(xp, x, n, "t", 6, lambda y: y, ones, _signed(xp, n % 2 == 0, ones))


def shifted_chebyshev_polynomial_u(xp, x, n):
    x, n = _prepare(xp, x, n)
    count = _real(n + 1, x)
    return _shifted(xp, x, n, "u", 6, lambda y: y + y, count, _signed(xp, n % 2 == 0, count))


def shifted_chebyshev_polynomial_v(xp, x, n):
    x, n = _prepare(xp, x, n)
    return _shifted(xp, x, n, "v", 6, lambda y: y + y - 1.0, xp.ones_like(x),
                    _signed(xp, n % 2 == 0, _real(n + n + 1, x)))


def shifted_chebyshev_polynomial_w(xp, x, n):
    x, n = _prepare(xp, x, n)
    parity = _signed(xp, n % 2 == 0, xp.ones_like(x))
    # where cos(t / 2) is 1 inside (-1, 1), torch returns the parity sign (no 2n + 1 here, unlike W)
    return _shifted(xp, x, n, "w", 4, lambda y: y + y + 1.0, _real(n + n + 1, x), parity, fallback=parity)


# ---------------------------------------------------------------- Hermite, Laguerre, Legendre


def _hermite_h_step(xp, k, x, p, q):
    """r = (x + x) q - 2k p (torch's k runs over even numbers)."""
    return fused_multiply_add(xp, x + x, q, -((k + k) * p))


def _hermite_he_step(xp, k, x, p, q):
    return fused_multiply_add(xp, x, q, -(k * p))


def _hermite(xp, x, n, first, step):
    """H or He: 0 for n < 0, nan beyond torch's order limit, else the recurrence (which never stops early)."""
    x, n = _prepare(xp, x, n)
    limit = _HERMITE_LIMIT[x.dtype.itemsize]
    result = _recurrence(xp, x, n, first(x), step, n <= limit, stop_on_nan=False)
    result = xp.where(n > limit, xp.nan, result)
    result = xp.where(n == 0, 1.0, result)
    return xp.where(n < 0, 0.0, result)


def hermite_polynomial_h(xp, x, n):
    return _hermite(xp, x, n, lambda x: x + x, _hermite_h_step)


def hermite_polynomial_he(xp, x, n):
    return _hermite(xp, x, n, lambda x: x.copy(), _hermite_he_step)


def _laguerre_step(xp, k, x, p, q):
    """r = ((2k + 1 - x) q - k p) / (k + 1)."""
    return fused_multiply_add(xp, (k + k) + (1.0 - x), q, -(k * p)) / (k + 1)


def laguerre_polynomial_l(xp, x, n):
    x, n = _prepare(xp, x, n)
    result = _recurrence(xp, x, n, 1.0 - x, _laguerre_step, x != 0)
    result = xp.where((n == 0) | (x == 0), 1.0, result)
    return xp.where(n < 0, 0.0, result)


def _legendre_step(xp, k, x, p, q):
    """r = ((2k + 1) x q - k p) / (k + 1)."""
    return fused_multiply_add(xp, (k + k + 1) * x, q, -(k * p)) / (k + 1)


def legendre_polynomial_p(xp, x, n):
    x, n = _prepare(xp, x, n)
    at_one = xp.abs(x) == 1.0
    result = _recurrence(xp, x, n, x.copy(), _legendre_step, ~at_one)
    result = xp.where(n == 0, 1.0, result)
    result = xp.where(at_one, _signed(xp, (x > 0) | (n % 2 == 0), xp.ones_like(x)), result)
    return xp.where(n < 0, 0.0, result)


# ---------------------------------------------------------------- ops and public functions

_SIGNATURES = (" * (Tensor x, Tensor n, *, Tensor out = None)\n * (Number x, Tensor n, *, Tensor out = None)\n"
               " * (Tensor x, Number n, *, Tensor out = None)\n")


def _polynomial(name: str, kernel, doc: str):
    """torch.special.<name>(input, n, *, out=None): a broadcasting op of (x, n) in their promoted floating type
    (float and double only, as torch's kernels), with no gradient."""
    op = pointwise("special_" + name, lambda xp, x, n: kernel(xp, x, n),
                   rule=_real_only(name + "_cpu", promote_float, half=False))

    def fn(input, n, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(n).__name__}), but expected one of:\n" + _SIGNATURES)
        return finish_out(call(op, (input, n)), out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", chebyshev_polynomial_t,
                                     "The Chebyshev polynomial of the first kind T_n(input).")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", chebyshev_polynomial_u,
                                     "The Chebyshev polynomial of the second kind U_n(input).")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", chebyshev_polynomial_v,
                                     "The Chebyshev polynomial of the third kind V_n(input).")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", chebyshev_polynomial_w,
                                     "The Chebyshev polynomial of the fourth kind W_n(input).")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", shifted_chebyshev_polynomial_t,
                                             "T_n(2 input - 1), the Chebyshev polynomial T shifted to [0, 1].")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", shifted_chebyshev_polynomial_u,
                                             "U_n(2 input - 1), the Chebyshev polynomial U shifted to [0, 1].")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", shifted_chebyshev_polynomial_v,
                                             "V_n(2 input - 1), the Chebyshev polynomial V shifted to [0, 1].")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", shifted_chebyshev_polynomial_w,
                                             "W_n(2 input - 1), the Chebyshev polynomial W shifted to [0, 1].")
hermite_polynomial_h = _polynomial("hermite_polynomial_h", hermite_polynomial_h,
                                   "The physicists' Hermite polynomial H_n(input).")
hermite_polynomial_he = _polynomial("hermite_polynomial_he", hermite_polynomial_he,
                                    "The probabilists' Hermite polynomial He_n(input).")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", laguerre_polynomial_l,
                                    "The Laguerre polynomial L_n(input).")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", legendre_polynomial_p,
                                    "The Legendre polynomial P_n(input).")
