"""torch's CPU rejection samplers, draw for draw: gamma (and so Dirichlet, Beta, Chi2), Poisson and binomial.

ATen samples these one element at a time (cpu_serial_kernel over aten/src/ATen/native/Distributions.h's
sample_gamma, sample_binomial and Distributions.cpp's sample_poisson), each element drawing as many uniform
and normal doubles from the generator as its rejection loop needs.  This module runs the same loops in
Python on the same engine (`_rng_engine.Engine`), with the same arithmetic: C++'s float and double
promotions are spelled out (`_f32` rounds where ATen's expression is float arithmetic: a float32 tensor's
scalar_t), and the transcendental functions are the C library's (CPython's math module calls them, except
lgamma, which is loaded from libm).  So after `manual_seed` these give torch's numbers and leave the
generator where torch leaves it.  The loops are per element: ~5 us a sample.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math

import numpy as np

from ._rng_engine import Engine

_MASK53 = (1 << 53) - 1
_F32 = np.float32
_THIRD_F = float(_F32(1.0) / _F32(3.0))  # 1.0f / 3.0f, a float constant in double expressions
_C0331_F = float(_F32(0.0331))  # 0.0331f
_FLT_MIN = float(np.finfo(np.float32).tiny)
_DBL_MIN = float(np.finfo(np.float64).tiny)


def _libm_lgamma():
    """glibc's lgamma (CPython's math.lgamma is its own Lanczos sum, which can differ in the last bit)."""
    name = ctypes.util.find_library("m")
    try:
        function = ctypes.CDLL(name).lgamma if name else None
    except (OSError, AttributeError):
        function = None
    if function is None:
        return math.lgamma
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_double]
    return function


_lgamma = _libm_lgamma()


def _f32(value) -> float:
    """Round to float32 (a float expression's result in C++), kept as a Python float."""
    return float(_F32(value))


class Draws:
    """The generator's doubles handed out one at a time: raw random64 words fetched in blocks, the engine then
    left exactly after the words used (`finish`).  uniform() is uniform_real_distribution<double>(0, 1),
    normal() normal_distribution<double>(0, 1) with the generator's cached second Box-Muller value."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.start = engine.state
        self.words: list = []
        self.position = 0

    def _next64(self) -> int:
        if self.position == len(self.words):
            self.words.extend(self.engine.random64(max(64, len(self.words))).tolist())
        word = self.words[self.position]
        self.position += 1
        return word

    def uniform(self) -> float:
        return (self._next64() & _MASK53) * 2.0**-53

    def normal(self) -> float:
        cached = self.engine.next_double_normal
        if cached is not None:
            self.engine.next_double_normal = None
            return cached
        u1, u2 = self.uniform(), self.uniform()
        radius = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        self.engine.next_double_normal = radius * math.sin(theta)
        return radius * math.cos(theta)

    def finish(self) -> None:
        """Rewind the words fetched ahead and draw exactly the ones used (the cached normal is kept)."""
        cached = self.engine.next_double_normal
        self.engine.state = self.start
        self.engine.next_double_normal = cached
        if self.position:
            self.engine.random64(self.position)


# ---------------------------------------------------------------- gamma


def gamma_one(alpha: float, draws: Draws, single: bool) -> float:
    """sample_gamma<scalar_t, double>: Marsaglia and Tsang, alpha < 1 boosted by U^(1/alpha).  `single`:
    scalar_t is float, so alpha's own arithmetic rounds to float.  Returns the double before the cast."""
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        exponent = _f32(1.0 / alpha) if single else 1.0 / alpha
        scale *= math.pow(1 - draws.uniform(), exponent)
        alpha = _f32(alpha + 1.0) if single else alpha + 1.0
    d = _f32(alpha - _THIRD_F) if single else alpha - _THIRD_F
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        while True:
            x = draws.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1 - draws.uniform()
        xx = x * x
        if u < 1.0 - _C0331_F * xx * xx:
            return scale * d * v
        if math.log(u) < 0.5 * xx + d * (1.0 - v + math.log(v)):
            return scale * d * v


def standard_gamma(engine: Engine, alpha: np.ndarray) -> np.ndarray:
    """_s_gamma_cpu over alpha (float32 or float64), in memory order: max(tiny, (scalar_t) sample)."""
    single = alpha.dtype == np.float32
    draws = Draws(engine)
    values = [gamma_one(a, draws, single) for a in alpha.ravel().tolist()]
    draws.finish()
    out = np.array(values, np.float64).astype(alpha.dtype).reshape(alpha.shape)
    return np.maximum(out, np.finfo(alpha.dtype).tiny)


def dirichlet(engine: Engine, alpha: np.ndarray) -> np.ndarray:
    """_s_dirichlet_cpu: double gammas (alpha cast to double), each row divided by its sum, clamped to
    [tiny, nexttoward(1, 0)] in alpha's dtype."""
    draws = Draws(engine)
    gammas = np.array([max(_DBL_MIN, gamma_one(a, draws, False)) for a in alpha.ravel().tolist()], np.float64)
    draws.finish()
    gammas = gammas.reshape(alpha.shape)
    totals = np.zeros(alpha.shape[:-1] + (1,), np.float64)
    for k in range(alpha.shape[-1]):  # left to right, as ATen's sum of a short row
        totals[..., 0] += gammas[..., k]
    ratios = (gammas / totals).astype(alpha.dtype)
    info = np.finfo(alpha.dtype)
    return np.clip(ratios, info.tiny, np.nextafter(alpha.dtype.type(1), alpha.dtype.type(0)))


# ---------------------------------------------------------------- poisson


def poisson_one(lam: float, draws: Draws) -> int:
    """sample_poisson (Distributions.cpp): Hoermann's transformed rejection for lambda >= 10, else products of
    uniforms against exp(-lambda)."""
    if not lam >= 0:
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if lam >= 10:
        slam = math.sqrt(lam)
        loglam = math.log(lam)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        invalpha = 1.1239 + 1.1328 / (b - 3.4)
        vr = 0.9277 - 3.6224 / (b - 2)
        while True:
            U = draws.uniform() - 0.5
            V = draws.uniform()
            us = 0.5 - abs(U)
            k = math.floor((2 * a / us + b) * U + lam + 0.43)
            if us >= 0.07 and V <= vr:
                return k
            if k < 0 or (us < 0.013 and V > us):
                continue
            if (math.log(V) + math.log(invalpha) - math.log(a / (us * us) + b)) <= \
                    (-lam + k * loglam - _lgamma(float(k) + 1)):
                return k
    if lam == 0:
        return 0
    enlam = math.exp(-lam)
    count, product = 0, 1.0
    while True:
        product *= draws.uniform()
        if product > enlam:
            count += 1
        else:
            return count


def poisson(engine: Engine, rates: np.ndarray) -> np.ndarray:
    draws = Draws(engine)
    try:
        values = [poisson_one(r, draws) for r in rates.astype(np.float64).ravel().tolist()]
    finally:
        draws.finish()
    return np.array(values, np.float64).astype(rates.dtype).reshape(rates.shape)


# ---------------------------------------------------------------- binomial

_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983, 0.02079067210376509, 0.0166446911898211,
         0.0138761288230707, 0.0118967099458917, 0.0104112652619720, 0.00925546218271273, 0.00833056343336287)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_inversion(count: float, prob: float, draws: Draws, r) -> float:
    geom_sum = 0.0
    num_geom = 0.0
    logprob = r(math.log1p(-prob))  # std::log1p(scalar_t): logf for float
    while True:
        geom = math.ceil(math.log(draws.uniform()) / logprob)
        geom_sum += geom
        if geom_sum > count:
            return num_geom
        num_geom = r(num_geom + 1)


def _btrs(count: float, prob: float, draws: Draws, r) -> float:
    """Hoermann's BTRS (TensorFlow's form); r rounds scalar_t arithmetic (float32 for a float tensor)."""
    stddev = r(math.sqrt(r(r(count * prob) * r(1 - prob))))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = r(count * prob) + 0.5
    v_r = 0.92 - 4.2 / b
    ratio = r(prob / r(1 - prob))
    alpha = (2.83 + 5.1 / b) * stddev
    m = math.floor(r(r(count + 1) * prob))
    while True:
        U = draws.uniform() - 0.5
        V = draws.uniform()
        us = 0.5 - abs(U)
        k = r(math.floor((2 * a / us + b) * U + c))
        if k < 0 or k > count:
            continue
        if us >= 0.07 and V <= v_r:
            return k
        V = math.log(V * alpha / (a / (us * us) + b))
        upperbound = ((m + 0.5) * math.log((m + 1) / (ratio * (count - m + 1)))
                      + (count + 1) * math.log((count - m + 1) / (count - k + 1))
                      + (k + 0.5) * math.log(ratio * (count - k + 1) / (k + 1))
                      + _stirling_tail(m) + _stirling_tail(count - m) - _stirling_tail(k) - _stirling_tail(count - k))
        if V <= upperbound:
            return k


def binomial_one(count: float, prob: float, draws: Draws, single: bool) -> float:
    """sample_binomial<scalar_t, double>."""
    r = _f32 if single else float
    if count <= 0.0 or prob <= 0.0:
        return 0.0
    if prob >= 1.0:
        return count
    if prob <= 0.5:
        if r(count * prob) >= 10.0:
            return _btrs(count, prob, draws, r)
        return _binomial_inversion(count, prob, draws, r)
    if prob > 0.5:
        qprob = r(1.0 - prob)
        if r(count * qprob) >= 10.0:
            return r(count - _btrs(count, qprob, draws, r))
        return r(count - _binomial_inversion(count, qprob, draws, r))
    return math.nan


def binomial(engine: Engine, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    single = count.dtype == np.float32
    draws = Draws(engine)
    values = [binomial_one(n, p, draws, single) for n, p in zip(count.ravel().tolist(), prob.ravel().tolist())]
    draws.finish()
    return np.array(values, np.float64).astype(count.dtype).reshape(count.shape)
