"""Array-level kernels of the error-function and Bessel families: erf/erfc (on `xp`), erfcx, ndtr, log_ndtr,
ndtri, the modified Bessel functions i0/i0e/i1/i1e, the spherical Bessel function j0, entr and xlog1py
(torch.special's J, Y, K and Airy kernels, computed in the input's precision, are special_bessel_yk.py).

Written against `xp` with every branch evaluated on every element and chosen with `xp.where` (see
special_gamma.py); arguments and results are float64 and dispatch rounds the result to the op's dtype.
The coefficient tables are Cephes' (via torch's ATen/native/Math.h, whose algorithms these follow so the
values agree with torch to rounding); erf/erfc are Cephes' rational approximations, with exp(-x^2) split
into an exact square and a small correction so erfc keeps full relative precision far into the tail.
"""

from __future__ import annotations

import math

from .special_gamma import INF, NAN, as_float64, p1evl, polevl
from .special_math import _ERF_T, _ERF_U, _ERFC_P, _ERFC_Q, _ERFC_R, _ERFC_S

SQRT_2PI = 2.50662827463100050242
INVERSE_SQRT_PI = 0.56418958354775628694807945156
SQRT1_2 = math.sqrt(0.5)

# ---------------------------------------------------------------- erf family


def _exp_minus_square(xp, z):
    """exp(-z^2) to full precision: z = m + f with m a multiple of 1/128 (m^2 exact), as Cephes' expx2."""
    m = xp.floor(z * 128.0 + 0.5) / 128.0
    return xp.exp(-m * m) * xp.exp(-(z - m) * (z + m))


def _erfc_ratio(xp, z):
    """erfc(z) * exp(z^2) for z >= 1 (Cephes' rational approximations; R/S beyond 8)."""
    z = xp.clip(z, 1.0, 1e50)
    small = z < 8.0
    numerator = xp.where(small, polevl(xp, z, _ERFC_P), polevl(xp, z, _ERFC_R))
    denominator = xp.where(small, p1evl(xp, z, _ERFC_Q), p1evl(xp, z, _ERFC_S))
    return numerator / denominator


def _erf_small(xp, x):
    """erf(x) for |x| < 1 (other elements give finite garbage)."""
    x = xp.where(xp.abs(x) < 1.0, x, 0.0)
    z = x * x
    return x * polevl(xp, z, _ERF_T) / p1evl(xp, z, _ERF_U)


def _erfc_tail(xp, x):
    """erfc(|x|) for |x| >= 1, 0 once it underflows."""
    z = xp.abs(x)
    clipped = xp.clip(z, 1.0, 27.5)
    value = _exp_minus_square(xp, clipped) * _erfc_ratio(xp, clipped)
    return xp.where(z > 27.5, 0.0, value)


def erf(xp, x):
    x = as_float64(xp, x)
    small = xp.abs(x) < 1.0
    outer = xp.copysign(1.0 - _erfc_tail(xp, x), x)
    return xp.where(small, _erf_small(xp, x), xp.where(xp.isnan(x), x, outer))


def erfc(xp, x):
    x = as_float64(xp, x)
    small = xp.abs(x) < 1.0
    tail = _erfc_tail(xp, x)
    outer = xp.where(x < 0, 2.0 - tail, tail)
    return xp.where(small, 1.0 - _erf_small(xp, x), xp.where(xp.isnan(x), x, outer))


def erfcx(xp, a):
    """exp(x^2) erfc(x) without overflow (torch's branches: continued fraction beyond 50, 2 exp(x^2) below)."""
    x = as_float64(xp, a)
    small = xp.abs(x) < 1.0
    inner = xp.exp(x * x) * (1.0 - _erf_small(xp, x))
    middle = _erfc_ratio(xp, x)
    y = xp.where(x > 50.0, x, 60.0)
    y2 = y * y
    far = INVERSE_SQRT_PI * (y2 * (y2 + 4.5) + 2.0) / (y * (y2 * (y2 + 5.0) + 3.75))
    far = xp.where(x > 5e7, INVERSE_SQRT_PI / y, far)
    positive = xp.where(x > 50.0, far, middle)
    doubled = 2.0 * xp.exp(x * x)
    negative = xp.where(x < -6.1, doubled, doubled - _erfc_ratio(xp, -x))
    negative = xp.where(x < -26.7, INF, negative)
    result = xp.where(small, inner, xp.where(x > 0, positive, negative))
    return xp.where(xp.isnan(x), x, result)


def ndtr(xp, a):
    """The standard normal CDF as torch computes it: (1 + erf(x / sqrt(2))) / 2."""
    x = as_float64(xp, a)
    return (1.0 + erf(xp, x * SQRT1_2)) * 0.5


def log_ndtr(xp, a):
    """log of the normal CDF: through erfcx below -1 (no underflow), log1p above (torch/SciPy)."""
    x = as_float64(xp, a)
    t = x * SQRT1_2
    lower = xp.log(erfcx(xp, -t) / 2.0) - t * t
    upper = xp.log1p(-erfc(xp, t) / 2.0)
    return xp.where(x < -1.0, lower, upper)


_NDTRI_P0 = (-5.99633501014107895267e1, 9.80010754185999661536e1, -5.66762857469070293439e1,
             1.39312609387279679503e1, -1.23916583867381258016e0)
_NDTRI_Q0 = (1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
             -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
             1.59056225126211695515e1, -1.18331621121330003142e0)
_NDTRI_P1 = (4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
             4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
             -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4)
_NDTRI_Q1 = (1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
             1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
             -3.80806407691578277194e-2, -9.33259480895457427372e-4)
_NDTRI_P2 = (3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
             1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
             3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9)
_NDTRI_Q2 = (1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
             2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
             2.89247864745380683936e-6, 6.79019408009981274425e-9)
_EXP_MINUS_2 = 0.13533528323661269189


def ndtri(xp, a):
    """The inverse normal CDF (Cephes ndtri, as torch): rational in y - 1/2 centrally, in 1/sqrt(-2 log y) in
    the tails (the upper tail through 1 - y, exact there)."""
    y0 = as_float64(xp, a)
    upper = y0 > 1.0 - _EXP_MINUS_2
    y = xp.where(upper, 1.0 - y0, y0)
    central = y > _EXP_MINUS_2
    c = xp.where(central, y, 0.5) - 0.5
    c2 = c * c
    x_central = (c + c * (c2 * polevl(xp, c2, _NDTRI_P0) / polevl(xp, c2, _NDTRI_Q0))) * SQRT_2PI
    tail_y = xp.where(central | ~(y > 0), 0.01, y)
    x = xp.sqrt(-2.0 * xp.log(tail_y))
    x0 = x - xp.log(x) / x
    z = 1.0 / x
    near = z * polevl(xp, z, _NDTRI_P1) / polevl(xp, z, _NDTRI_Q1)
    far = z * polevl(xp, z, _NDTRI_P2) / polevl(xp, z, _NDTRI_Q2)
    x_tail = x0 - xp.where(x < 8.0, near, far)
    x_tail = xp.where(upper, x_tail, -x_tail)
    result = xp.where(central, x_central, x_tail)
    result = xp.where((y0 < 0) | (y0 > 1), NAN, result)
    result = xp.where(y0 == 1, INF, result)
    result = xp.where(y0 == 0, -INF, result)
    return xp.where(xp.isnan(y0), y0, result)


# ---------------------------------------------------------------- entr, xlog1py


def entr(xp, a):
    """-x log x for x > 0, 0 at 0, -inf below (torch)."""
    x = as_float64(xp, a)
    positive = xp.where(x > 0, x, 1.0)
    result = xp.where(x > 0, -positive * xp.log(positive), xp.where(x == 0, 0.0, -INF))
    return xp.where(xp.isnan(x), x, result)


def xlog1py(xp, a, b):
    """x * log1p(y), 0 where x == 0 unless y is nan (torch)."""
    x, y = as_float64(xp, a), as_float64(xp, b)
    result = x * xp.log1p(y)
    return xp.where(xp.isnan(y), NAN, xp.where(x == 0, 0.0, result))


# ---------------------------------------------------------------- modified Bessel functions I0, I1


def _chbevl(xp, x, coefficients):
    """Clenshaw's recurrence for a Chebyshev series (Cephes chbevl)."""
    b0 = xp.full_like(x, coefficients[0])
    b1 = xp.zeros_like(x)
    b2 = b1
    for c in coefficients[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


# exp(-x) I0(x) on [0, 8] and exp(-x) sqrt(x) I0(x) on [8, inf) (inverted interval)
_I0E_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
          1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
          -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
          9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
          -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
          1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
          -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
          1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
          -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
          1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
          3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
          1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
          -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
          7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
          -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
          3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
          2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
          8.04490411014108831608e-1)
# exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on [8, inf)
_I1E_A = (2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
          -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
          3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
          -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
          9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
          -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
          4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
          -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
          2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
          -1.76416518357834055153e-1, 2.52587186443633654823e-1)
_I1E_B = (7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
          -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
          -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
          4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
          -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
          3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
          -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
          -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
          7.78576235018280120474e-1)


def _scaled_bessel_i(xp, x, small_table, large_table, order):
    """exp(-|x|) I_order(|x|) for both Chebyshev intervals."""
    z = xp.abs(x)
    near = _chbevl(xp, xp.minimum(z, 8.0) / 2.0 - 2.0, small_table)
    if order == 1:
        near = near * z
    far_z = xp.where(z > 8.0, z, 8.0)
    far = _chbevl(xp, 32.0 / far_z - 2.0, large_table) / xp.sqrt(far_z)
    # z = inf: the series' limit over sqrt(inf) is 0 (torch), not inf/inf
    far = xp.where(xp.isinf(z), 0.0, far)
    return xp.where(z <= 8.0, near, xp.where(xp.isnan(z), z, far))


def i0e(xp, a):
    x = as_float64(xp, a)
    return _scaled_bessel_i(xp, x, _I0E_A, _I0E_B, 0)


def i0(xp, a):
    x = as_float64(xp, a)
    z = xp.abs(x)
    near = xp.exp(z) * _chbevl(xp, xp.minimum(z, 8.0) / 2.0 - 2.0, _I0E_A)
    far_z = xp.where(z > 8.0, z, 8.0)
    far = xp.exp(far_z) * _chbevl(xp, 32.0 / far_z - 2.0, _I0E_B) / xp.sqrt(far_z)
    far = xp.where(xp.isnan(z), z, xp.where(xp.isinf(z), NAN, far))  # torch: exp(inf) / sqrt(inf) is nan
    return xp.where(z <= 8.0, near, far)


def i1e(xp, a):
    x = as_float64(xp, a)
    value = _scaled_bessel_i(xp, x, _I1E_A, _I1E_B, 1)
    return xp.where(x < 0, -value, value)


def i1(xp, a):
    x = as_float64(xp, a)
    z = xp.abs(x)
    near = xp.exp(z) * z * _chbevl(xp, xp.minimum(z, 8.0) / 2.0 - 2.0, _I1E_A)
    far_z = xp.where(z > 8.0, z, 8.0)
    far = xp.exp(far_z) * _chbevl(xp, 32.0 / far_z - 2.0, _I1E_B) / xp.sqrt(far_z)
    value = xp.where(z <= 8.0, near, xp.where(xp.isinf(z) | xp.isnan(z), NAN, far))
    return xp.where(x < 0, -value, value)


# ---------------------------------------------------------------- spherical Bessel function j0


def spherical_bessel_j0(xp, a):
    """sin(x) / x: torch's Taylor series (to x^12) below |x| = 1/2, 0 at +-inf."""
    x = as_float64(xp, a)
    x2 = x * x
    series = 1.0 + x2 * (-1.0 / 6.0 + x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (
        1.0 / 362880.0 + x2 * (-1.0 / 39916800.0 + x2 * (1.0 / 6227020800.0))))))
    safe = xp.where(xp.abs(x) < 0.5, 1.0, x)
    result = xp.where(xp.abs(x) < 0.5, series, xp.sin(safe) / safe)
    return xp.where(xp.isinf(x), 0.0, result)

