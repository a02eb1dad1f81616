"""Array-level kernels of the gamma family: lgamma, digamma, trigamma, the Hurwitz zeta, polygamma and the
regularized incomplete gamma functions (igamma/igammac).

Every kernel is written against the array module `xp` and evaluates all of its branches on every element
(with harmless stand-in arguments where a branch does not apply), choosing per element with `xp.where`;
iterative parts (recurrences, series, continued fractions) run a bounded number of whole-array steps with a
per-element "still active" mask.  Arguments and results are float64: dispatch casts the result back to the
op's dtype, so float32 and the half types are computed in double and rounded once.

lgamma is Cephes' `lgam` (rational approximation on [2, 3) reached by recurrence, Stirling's series beyond
13) with the reflection formula for negative arguments; digamma, trigamma and zeta follow the algorithms
of torch's ATen/native/Math.h (themselves from Cephes), so the results agree with torch to rounding; the
incomplete gamma functions are SciPy's/torch's series and continued fractions (without the uniform
asymptotic expansion torch adds for a > 20, x ~ a, where the series still converges).
"""

from __future__ import annotations

import math

INF = math.inf
NAN = math.nan
LOG_PI = math.log(math.pi)
LOG_SQRT_2PI = 0.91893853320467274178
MACHINE_EPSILON = 1.11022302462515654042e-16
MAX_ITERATIONS = 2000

# Cephes lgam: Stirling's series (A) and the rational approximation of lgamma(2 + t), 0 <= t < 1 (B / C)
_LGAMMA_A = (8.11614167470508450300e-4, -5.95061904284301438324e-4, 7.93650340457716943945e-4,
             -2.77777777730099687205e-3, 8.33333333333331927722e-2)
_LGAMMA_B = (-1.37825152569120859100e3, -3.88016315134637840924e4, -3.31612992738871184744e5,
             -1.16237097492762307383e6, -1.72173700820839662146e6, -8.53555664245765465627e5)
_LGAMMA_C = (-3.51815701436523470549e2, -1.70642106651881159223e4, -2.20528590553854454839e5,
             -1.13933444367982507207e6, -2.53252307177582951285e6, -2.01889141433532773231e6)
_LGAMMA_MAX = 2.556348e305

# Asymptotic series of digamma (Cephes psi), and digamma(10)
_DIGAMMA_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
              -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
              8.33333333333333333333e-2)
_DIGAMMA_10 = 2.25175258906672110764

# Euler-Maclaurin denominators of the Hurwitz zeta (Cephes zeta): (2k)! / B_2k
_ZETA_MAX_TERMS = 200000  # bounds the direct sum for q < -2e5 (torch would sum -q terms)
_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)

# Lanczos approximation (g = 6.0246800407767295837) used by the incomplete gamma's prefactor (Boost/SciPy)
_LANCZOS_G = 6.024680040776729583740234375
_LANCZOS_NUMERATOR = (0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
                      19.51992788247617482847860966235652136208, 449.9445569063168119446858607650988409623,
                      6955.999602515376140356310115515198987526, 75999.29304014542649875303443598909137092,
                      601859.6171681098786670226533699352302507, 3481712.15498064590882071018964774556468,
                      14605578.08768506808414169982791359218571, 43338889.32467613834773723740590533316085,
                      86363131.28813859145546927288977868422342, 103794043.1163445451906271053616070238554,
                      56906521.91347156388090791033559122686859)
_LANCZOS_DENOMINATOR = (1.0, 66.0, 1925.0, 32670.0, 357423.0, 2637558.0, 13339535.0, 45995730.0, 105258076.0,
                        150917976.0, 120543840.0, 39916800.0, 0.0)


def as_float64(xp, value):
    """An operand as a float64 array of the device (Python numbers included)."""
    return xp.asarray(value, dtype=xp.float64)


def polevl(xp, x, coefficients):
    """Horner's rule, highest-degree coefficient first."""
    result = xp.full_like(x, coefficients[0])
    for c in coefficients[1:]:
        result = result * x + c
    return result


def p1evl(xp, x, coefficients):
    """Horner's rule for a polynomial whose (omitted) leading coefficient is 1."""
    result = x + coefficients[0]
    for c in coefficients[1:]:
        result = result * x + c
    return result


# ---------------------------------------------------------------- lgamma


def lgamma(xp, a):
    """log|Gamma(a)|: inf at the poles (0 and the negative integers) and at ±inf."""
    x = as_float64(xp, a)
    negative = x < 0
    result = _lgamma_nonnegative(xp, xp.where(negative, 1.0 - x, x))
    # reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x); x - round(x) is exact, so sin keeps its precision
    sin_pi = xp.abs(xp.sin(math.pi * (x - xp.round(x))))
    reflected = LOG_PI - xp.log(sin_pi) - result
    result = xp.where(negative, reflected, result)
    return xp.where(xp.isinf(x), INF, result)


def _lgamma_nonnegative(xp, x):
    """Cephes lgam for x >= 0 (nan passes through): recurrence onto [2, 3) below 13, Stirling above."""
    small = x < 13.0
    u0 = xp.where(small, x, 2.5)
    # Gamma(x) = scale * Gamma(x + shift), with x + shift in [2, 3); each x + shift is rounded once
    scale = xp.ones_like(u0)
    shift = xp.zeros_like(u0)
    for _ in range(11):
        step = (u0 + shift) >= 3.0
        if not bool(step.any()):
            break
        shift = xp.where(step, shift - 1.0, shift)
        scale = xp.where(step, scale * (u0 + shift), scale)
    for _ in range(2):
        u = u0 + shift
        step = u < 2.0
        scale = xp.where(step, scale / xp.where(step, u, 1.0), scale)  # u == 0 (a pole) makes scale inf
        shift = xp.where(step, shift + 1.0, shift)
    t = u0 + (shift - 2.0)
    near = xp.log(xp.abs(scale)) + t * polevl(xp, t, _LGAMMA_B) / p1evl(xp, t, _LGAMMA_C)
    near = xp.where(u0 < 1e-17, -xp.log(u0), near)  # 1/x would overflow for the tiniest subnormals

    big = xp.where(small, 13.0, x)
    stirling = (big - 0.5) * xp.log(big) - big + LOG_SQRT_2PI
    p = 1.0 / (big * big)
    huge_correction = ((7.9365079365079365079365e-4 * p - 2.7777777777777777777778e-3) * p
                       + 0.0833333333333333333333) / big
    correction = xp.where(big >= 1000.0, huge_correction, polevl(xp, p, _LGAMMA_A) / big)
    stirling = xp.where(big > 1e8, stirling, stirling + correction)
    stirling = xp.where(big > _LGAMMA_MAX, INF, stirling)
    return xp.where(small, near, stirling)


# ---------------------------------------------------------------- digamma, trigamma


def digamma(xp, a):
    """psi(a) = d/da log Gamma(a), as torch's calc_digamma: -inf at +0, +inf at -0, nan at negative integers."""
    x = as_float64(xp, a)
    negative = x < 0
    whole = xp.trunc(x)
    result = _digamma_positive(xp, xp.where(negative, 1.0 - x, x))
    # reflection: psi(1 - x) - psi(x) = pi / tan(pi x), on the fractional part (exact) for precision
    fraction = xp.where(negative, x - whole, 0.5)
    result = xp.where(negative, result - math.pi / xp.tan(math.pi * fraction), result)
    result = xp.where(negative & (x == whole), NAN, result)
    return xp.where(x == 0, xp.copysign(xp.full_like(x, INF), -x), result)


def _digamma_positive(xp, x):
    result = xp.zeros_like(x)
    for _ in range(10):  # upward recurrence psi(x) = psi(x + 1) - 1/x until x >= 10
        step = x < 10.0
        if not bool(step.any()):
            break
        result = xp.where(step, result - 1.0 / xp.where(step, x, 1.0), result)
        x = xp.where(step, x + 1.0, x)
    z = 1.0 / (x * x)
    tail = xp.where(x < 1e17, z * polevl(xp, z, _DIGAMMA_A), 0.0)
    asymptotic = result + xp.log(x) - 0.5 / x - tail
    return xp.where(x == 10.0, result + _DIGAMMA_10, asymptotic)


def trigamma(xp, a):
    """psi'(a), as torch's trigamma: reflection below 1/2, six recurrence steps, then the asymptotic series."""
    x = as_float64(xp, a)
    reflect = x < 0.5
    if getattr(a, "dtype", None) == xp.float32:
        # torch's float kernel reflects with sinf(pi_f * x): match its (finite) values at and near the poles
        sin_pi = xp.sin(a * xp.float32(math.pi)).astype(xp.float64)
    else:
        sin_pi = xp.sin(math.pi * x)
    result = xp.where(reflect, -(math.pi * math.pi) / (sin_pi * sin_pi), 0.0)
    x = xp.where(reflect, 1.0 - x, x)
    for _ in range(6):
        result = result + 1.0 / (x * x)
        x = x + 1.0
    ixx = 1.0 / (x * x)
    result = result + (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
    return xp.where(reflect, -result, result)


# ---------------------------------------------------------------- Hurwitz zeta, polygamma


def zeta(xp, s, q):
    """Hurwitz zeta sum_k (k + q)^-s (Cephes/torch): direct summation until k + q > 9, then Euler-Maclaurin."""
    s, q = xp.broadcast_arrays(as_float64(xp, s), as_float64(xp, q))
    total = xp.power(q, -s)
    a = q
    term = xp.zeros_like(total)
    done = (q <= 0) & (q == xp.floor(q))  # poles (and q = -inf): the result is inf, nothing to sum
    iteration = 0
    while iteration < _ZETA_MAX_TERMS:  # at least 9 terms and until a > 9 (q < 0 needs about -q more)
        active = ~done & ((iteration < 9) | (a <= 9.0))
        if not bool(active.any()):
            break
        iteration += 1
        a = xp.where(active, a + 1.0, a)
        new_term = xp.power(a, -s)
        total = xp.where(active, total + new_term, total)
        term = xp.where(active, new_term, term)
        done = done | (active & (-MACHINE_EPSILON * total < term) & (term < MACHINE_EPSILON * total))
    w = a
    total = xp.where(done, total, total + term * w / (s - 1.0) - 0.5 * term)
    factor = xp.ones_like(total)
    k = 0.0
    for denominator in _ZETA_A:
        factor = factor * (s + k)
        term = term / w
        correction = factor * term / denominator
        updated = total + correction
        total = xp.where(done, total, updated)
        done = done | (xp.abs(correction / updated) < MACHINE_EPSILON)
        k += 1.0
        factor = factor * (s + k)
        term = term / w
        k += 1.0
    total = xp.where(q <= 0, xp.where(s != xp.floor(s), NAN, total), total)
    total = xp.where((q <= 0) & (q == xp.floor(q)), INF, total)
    total = xp.where(s < 1.0, NAN, total)
    return xp.where(s == 1.0, INF, total)


def polygamma(xp, a, n):
    """psi^(n)(a): digamma, trigamma, else (-1)^(n+1) n! zeta(n + 1, a)."""
    if n == 0:
        return digamma(xp, a)
    if n == 1:
        return trigamma(xp, a)
    try:
        factorial = math.exp(math.lgamma(n + 1.0))
    except OverflowError:
        factorial = INF
    sign = 1.0 if n % 2 else -1.0
    return (sign * factorial) * zeta(xp, float(n + 1), a)


# ---------------------------------------------------------------- regularized incomplete gamma


def igamma(xp, a, x):
    """P(a, x), the regularized lower incomplete gamma function."""
    return _incomplete_gamma(xp, a, x, upper=False)


def igammac(xp, a, x):
    """Q(a, x) = 1 - P(a, x), the regularized upper incomplete gamma function."""
    return _incomplete_gamma(xp, a, x, upper=True)


def _incomplete_gamma(xp, a, x, upper):
    a, x = xp.broadcast_arrays(as_float64(xp, a), as_float64(xp, x))
    interior = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    safe_a = xp.where(interior, a, 1.0)
    safe_x = xp.where(interior, x, 1.0)
    # torch's choice of method for Q (calc_igammac), which P reuses through 1 - Q where x > 1 and x > a
    log_x = xp.log(safe_x)
    q_series = xp.where(safe_x > 1.1, False,
                        xp.where(safe_x <= 0.5, -0.4 / xp.where(log_x == 0, -1.0, log_x) >= safe_a,
                                 safe_x * 1.1 >= safe_a))
    continued = (safe_x > 1.1) & (safe_x >= safe_a)
    if upper:
        use_q = interior & (q_series | continued)
    else:
        use_q = interior & (safe_x > 1.0) & (safe_x > safe_a)
    use_p = interior & ~use_q
    prefactor = _igamma_prefactor(xp, safe_a, safe_x)
    p = _lower_series(xp, safe_a, safe_x, prefactor, use_p)
    q = xp.where(continued, _upper_continued_fraction(xp, safe_a, safe_x, prefactor, use_q & continued),
                 _upper_series(xp, safe_a, safe_x, use_q & q_series & ~continued))
    if upper:
        result = xp.where(use_q, q, 1.0 - p)
        boundary_zero, boundary_inf_x = 1.0, 0.0
    else:
        result = xp.where(use_q, 1.0 - q, p)
        boundary_zero, boundary_inf_x = 0.0, 1.0
    # boundary values as SciPy/torch: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, finite) = 0, P(a, inf) = 1
    result = xp.where(interior, result, NAN)
    result = xp.where(xp.isinf(x), boundary_inf_x, result)
    result = xp.where(xp.isinf(a), xp.where(xp.isinf(x), NAN, boundary_zero), result)
    result = xp.where(x == 0, boundary_zero, result)
    result = xp.where(a == 0, xp.where(x > 0, 1.0 - boundary_zero, NAN), result)
    return xp.where((x < 0) | (a < 0), NAN, result)


def _lanczos_sum_expg_scaled(xp, a):
    """Boost's Lanczos sum, scaled by exp(g); a rational function evaluated in 1/a for a > 1 (a > 0)."""
    large = a > 1.0
    inverse = 1.0 / a
    numerator = xp.where(large, polevl(xp, inverse, _LANCZOS_NUMERATOR[::-1]), polevl(xp, a, _LANCZOS_NUMERATOR))
    denominator = xp.where(large, polevl(xp, inverse, _LANCZOS_DENOMINATOR[::-1]),
                           polevl(xp, a, _LANCZOS_DENOMINATOR))
    return numerator / denominator


def _igamma_prefactor(xp, a, x):
    """x^a e^-x / Gamma(a), through the Lanczos approximation where a ~ x (cancellation in the logarithm)."""
    far = xp.abs(a - x) > 0.4 * xp.abs(a)
    log_value = a * xp.log(x) - x - lgamma(xp, a)
    far_value = xp.where(log_value < -7.09782712893383996843e2, 0.0, xp.exp(log_value))
    fac = a + _LANCZOS_G - 0.5
    scaled = xp.sqrt(fac / math.e) / _lanczos_sum_expg_scaled(xp, a)
    moderate = scaled * xp.exp(a - x) * xp.power(x / fac, a)
    ratio = (x - a - _LANCZOS_G + 0.5) / fac
    large = scaled * xp.exp(a * (xp.log1p(ratio) - ratio) + x * (0.5 - _LANCZOS_G) / fac)
    near_value = xp.where((a < 200) & (x < 200), moderate, large)
    return xp.where(far, far_value, near_value)


def _lower_series(xp, a, x, prefactor, active):
    """P(a, x) by DLMF 8.11.4 on the `active` elements."""
    r = a
    c = xp.ones_like(a)
    total = xp.ones_like(a)
    for _ in range(MAX_ITERATIONS):
        if not bool(active.any()):
            break
        r = r + 1.0
        c = xp.where(active, c * x / r, c)
        total = xp.where(active, total + c, total)
        active = active & (c > MACHINE_EPSILON * total)
    return xp.where(prefactor == 0, 0.0, total * prefactor / a)


def _upper_series(xp, a, x, active):
    """Q(a, x) by DLMF 8.7.3 for small x, free of the cancellation in 1 - P."""
    factor = xp.ones_like(a)
    total = xp.zeros_like(a)
    for n in range(1, MAX_ITERATIONS):
        if not bool(active.any()):
            break
        factor = factor * (-x / n)
        term = factor / (a + n)
        total = xp.where(active, total + term, total)
        active = active & (xp.abs(term) > MACHINE_EPSILON * xp.abs(total))
    log_x = xp.log(x)
    leading = -xp.expm1(a * log_x - lgamma(xp, 1.0 + a))
    return leading - xp.exp(a * log_x - lgamma(xp, a)) * total


def _upper_continued_fraction(xp, a, x, prefactor, active):
    """Q(a, x) by the continued fraction DLMF 8.9.2 (Cephes igamc), for x > 1.1 and x >= a."""
    big, big_inverse = 4.503599627370496e15, 2.22044604925031308085e-16
    y = 1.0 - a
    z = x + y + 1.0
    c = 0.0
    p_previous, q_previous = xp.ones_like(x), x
    p_current, q_current = x + 1.0, z * x
    answer = p_current / q_current
    for _ in range(MAX_ITERATIONS):
        if not bool(active.any()):
            break
        c += 1.0
        y = y + 1.0
        z = z + 2.0
        yc = y * c
        p_next = p_current * z - p_previous * yc
        q_next = q_current * z - q_previous * yc
        nonzero = q_next != 0
        ratio = p_next / xp.where(nonzero, q_next, 1.0)
        change = xp.where(nonzero, xp.abs((answer - ratio) / ratio), 1.0)
        answer = xp.where(active & nonzero, ratio, answer)
        p_previous, p_current, q_previous, q_current = p_current, p_next, q_current, q_next
        rescale = xp.where(xp.abs(p_next) > big, big_inverse, 1.0)
        p_previous, p_current = p_previous * rescale, p_current * rescale
        q_previous, q_current = q_previous * rescale, q_current * rescale
        active = active & (change > MACHINE_EPSILON)
    return xp.where(prefactor == 0, 0.0, answer * prefactor)
