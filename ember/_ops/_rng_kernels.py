"""torch's CPU sampling kernels, vectorised over NumPy: the transformations of ATen's DistributionsHelper.h,
TransformationHelper.h and native/cpu/DistributionTemplates.h applied to an Engine's raw words
(NOTE [ Random streams ] in random.py).

Every function returns a flat array of `n` values in the order torch's kernel writes them (TensorIterator
order, see `place`), drawing exactly the words torch draws, so the stream continues where torch's would.

Arithmetic follows torch's to the bit where that is plain IEEE arithmetic: the masks and divisors, the
float32 working type of float/half/bfloat16 kernels, the fused multiply-adds the compiler makes of
`x * (to - from) + from` (emulated exactly, see `fma32` / `fma64`), the float -> half casts.  The
float32 normal fill runs torch's AVX2 kernel (avx_mathfun.h's log256_ps / sincos256_ps polynomials, with the
FMAs GCC contracts them into), which x86 machines with AVX2 or AVX512 use; torch on a CPU without AVX2 (or
with ATEN_CPU_CAPABILITY=default) uses libm there instead and differs from this in the last bits.  The
float64 transcendentals (log, cos, sin, exp, tan) are glibc's in torch: small counts use Python's math
module (the same libm, so exact), large ones NumPy's, which may differ by an ulp.
"""

from __future__ import annotations

import math

import numpy as np

from ._rng_engine import Engine
from .special_fused import fused_multiply_add

__all__ = [
    "place", "uniform", "normal", "serial_normals", "random_from_to", "random_full_64", "random_default",
    "randperm", "bernoulli_scalar", "bernoulli_tensor", "exponential", "geometric", "cauchy", "log_normal",
    "multinomial_with_replacement", "fma32", "fma64", "int64_to", "to_dtype", "memory_order", "uniform32", "uniform64",
]

_F32 = np.float32
_F64 = np.float64
_MASK24 = np.uint32((1 << 24) - 1)
_MASK53 = np.uint64((1 << 53) - 1)
_LIBM_LIMIT = 64  # at most this many values go through Python's math (glibc, as torch) instead of NumPy
_CHUNK = 1 << 16  # lanes per pass of the float32 normal fill: its temporaries stay in cache


# ---------------------------------------------------------------- iteration order


def memory_order(shape, strides) -> list | None:
    """The dims in TensorIterator's order for a nullary kernel (outermost first: descending stride, size-1 dims
    irrelevant), or None when that is C order."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    order = sorted(dims, key=lambda d: -abs(strides[d]))  # stable: equal strides keep their order
    return None if order == dims else order + [d for d in range(len(shape)) if shape[d] == 1]


def place(flat: np.ndarray, shape, strides=None) -> np.ndarray:
    """A C-ordered array of `shape` holding `flat` in the order torch fills a tensor with these strides.  It owns
    its memory (ember.compile tells a factory's new tensor by that)."""
    order = None if strides is None else memory_order(shape, strides)
    if order is None:
        if flat.base is not None:
            flat = flat.copy()
        flat.shape = shape
        return flat
    out = np.empty(shape, flat.dtype)
    np.transpose(out, order)[...] = flat.reshape([shape[d] for d in order])
    return out


# ---------------------------------------------------------------- exact float arithmetic


def fma32(a, b, c) -> np.ndarray:
    """fmaf(a, b, c) for float32 operands: a * b is exact in float64, so only the sum rounds there; the one case
    where rounding that sum to float32 differs from rounding the true sum (a float32 halfway point reached
    with a nonzero error) is redone on the error's side."""
    total = np.multiply(a, b, dtype=_F64)
    total += c
    result = total.astype(_F32)
    low_bits = total.view(np.uint64)
    low_bits &= np.uint64(0x1FFFFFFF)  # the bits float32 drops (total is not needed past this point)
    halfway = low_bits == np.uint64(0x10000000)
    if halfway.any():
        at = np.nonzero(halfway)
        product = np.multiply(np.broadcast_to(a, halfway.shape)[at], np.broadcast_to(b, halfway.shape)[at],
                              dtype=_F64)
        addend = np.broadcast_to(np.asarray(c, _F64), halfway.shape)[at]
        exact_sum = product + addend
        error = _two_sum_error(product, addend, exact_sum)
        rounded = result[at]
        step = np.nextafter(rounded, np.where(error > 0, _F32(np.inf), _F32(-np.inf)))
        wrong_side = (error != 0) & ((rounded.astype(_F64) > exact_sum) != (error > 0))
        result[at] = np.where(wrong_side, step, rounded)
    return result


def _two_sum_error(a, b, s):
    """The rounding error of s = fl(a + b), exactly (Knuth's TwoSum)."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


def fma64(a, b, c) -> np.ndarray:
    """fma(a, b, c) for float64: Dekker's exact product plus c with one final rounding -- special_fused's
    emulation, shared with the Cephes kernels (none of 50,000 checks against exact rational arithmetic missed)."""
    return fused_multiply_add(np, np.asarray(a, _F64), b, c)


def _libm(numpy_function, math_function, x: np.ndarray) -> np.ndarray:
    """A float64 transcendental as glibc computes it for small arrays, NumPy's for large ones."""
    if x.size <= _LIBM_LIMIT:
        return np.array([math_function(v) for v in x.ravel().tolist()], _F64).reshape(x.shape)
    return numpy_function(x)


def _is_half(dtype: np.dtype) -> bool:
    return dtype == np.float16 or dtype.name == "bfloat16"


def to_dtype(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """static_cast<scalar_t>(double or int64): half and bfloat16 convert through float, as c10's constructors
    do (NumPy would round once, directly)."""
    if _is_half(dtype):
        return values.astype(_F32).astype(dtype)
    return values.astype(dtype)


def _is_double(dtype: np.dtype) -> bool:
    return dtype == _F64


# ---------------------------------------------------------------- uniform


def uniform32(engine: Engine, n: int) -> np.ndarray:
    """uniform_real_distribution<float>(0, 1): 24 random bits of one word, times 2**-24."""
    return (engine.random(n) & _MASK24).astype(_F32) * _F32(2.0**-24)


def uniform64(engine: Engine, n: int) -> np.ndarray:
    """uniform_real_distribution<double>(0, 1): 53 random bits of random64(), times 2**-53."""
    return (engine.random64(n) & _MASK53).astype(_F64) * 2.0**-53


def uniform(engine: Engine, n: int, dtype: np.dtype, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """uniform_kernel: x * (to - from) + from (an FMA) in the dtype's opmath type (float for float, half and
    bfloat16), cast down; a value that rounds up to `to` becomes `from`."""
    if _is_double(dtype):
        values = uniform64(engine, n)
        if low != 0.0 or high != 1.0:
            values = fma64(values, high - low, low)
    else:
        values = uniform32(engine, n)
        f, t = _F32(low), _F32(high)
        if f != 0 or t != 1:
            values = fma32(values, _F32(t - f), f)
        values = values.astype(dtype, copy=False)
    clipped = values == to_dtype(np.array(high), dtype)
    if clipped.any():
        values[clipped] = to_dtype(np.array(low), dtype)
    return values


# ---------------------------------------------------------------- normal


def serial_normals(engine: Engine, n: int) -> np.ndarray:
    """n draws of normal_distribution<double>(0, 1): Box-Muller on two uniforms, returning r cos(theta) and
    keeping r sin(theta) in the generator for the next draw (so a leftover half pairs across calls)."""
    out = np.empty(n, _F64)
    start = 0
    if n and engine.next_double_normal is not None:
        out[0] = engine.next_double_normal
        engine.next_double_normal = None
        start = 1
    pairs = (n - start + 1) // 2
    if pairs:
        u = uniform64(engine, 2 * pairs).reshape(pairs, 2)
        radius = np.sqrt(-2.0 * _libm(np.log1p, math.log1p, -u[:, 1]))
        theta = (2.0 * math.pi) * u[:, 0]
        both = np.stack([radius * _libm(np.cos, math.cos, theta), radius * _libm(np.sin, math.sin, theta)], 1)
        both = both.reshape(-1)
        out[start:] = both[: n - start]
        if (n - start) % 2:
            engine.next_double_normal = float(both[-1])
    return out


def _affine64(values: np.ndarray, mean: float, std: float) -> np.ndarray:
    """transformation::normal: val * std + mean, one FMA (with 1 and 0 just + 0, which turns -0 into +0)."""
    if mean == 0.0 and std == 1.0:
        return values + 0.0
    return fma64(values, std, mean)


def normal(engine: Engine, n: int, dtype: np.dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """normal_kernel: 16 or more contiguous values take the block Box-Muller fill (normal_fill), fewer or
    strided ones draw one by one from normal_distribution<double> (serial_normals)."""
    if n >= 16 and contiguous:
        if _is_double(dtype):
            return _normal_fill64(engine, n, mean, std)
        return _normal_fill32(engine, n, dtype, mean, std)
    return to_dtype(_affine64(serial_normals(engine, n), mean, std), dtype)


def _normal_fill64(engine: Engine, n: int, mean: float, std: float) -> np.ndarray:
    """normal_fill<double>: n uniforms; each block of 16 turns (u[j], u[j+8]) into r cos, r sin; when n is not a
    multiple of 16 the last 16 values are recomputed from 16 fresh uniforms."""
    data = uniform64(engine, n)
    full = n - n % 16
    data[:full] = _fill16_double(data[:full], mean, std)
    if n % 16:
        data[n - 16:] = _fill16_double(uniform64(engine, 16), mean, std)
    return data


def _fill16_double(data: np.ndarray, mean: float, std: float) -> np.ndarray:
    blocks = data.reshape(-1, 16)
    radius = np.sqrt(-2 * _libm(np.log, math.log, 1 - blocks[:, :8]))
    theta = (2.0 * math.pi) * blocks[:, 8:]  # 2.0f * c10::pi<double> * u2, in double
    out = np.concatenate([radius * _libm(np.cos, math.cos, theta), radius * _libm(np.sin, math.sin, theta)], 1)
    return _affine64(out.reshape(-1), mean, std)  # std::fma(radius * cos(theta), std, mean)


def _normal_fill32(engine: Engine, n: int, dtype: np.dtype, mean: float, std: float) -> np.ndarray:
    """normal_fill for float, half and bfloat16 (float working type).  float fills all n uniforms first, then
    16 more for the recomputed tail; half and bfloat16 draw block by block, so their partial last block is
    never drawn -- only the 16 of the tail."""
    full = n - n % 16
    if dtype == _F32:
        data = uniform32(engine, n)
    else:
        data = np.empty(n, _F32)
        data[:full] = uniform32(engine, full)
    mean32, std32 = _F32(mean), _F32(std)
    native = _native_fill16() if full >= _NATIVE_MIN else None
    if native is not None:  # the same arithmetic in C (_FILL16_C), ~10x faster than NumPy's emulated FMAs
        native(data.ctypes.data, full // 16, float(mean32), float(std32), int(mean == 0 and std == 1))
    else:
        for start in range(0, full, _CHUNK):
            stop = min(start + _CHUNK, full)
            data[start:stop] = _fill16_avx2(data[start:stop], mean32, std32)
    if n % 16:
        data[n - 16:] = _fill16_avx2(uniform32(engine, 16), mean32, std32)
    return data if dtype == _F32 else data.astype(dtype)


# torch's NormalFill16<float> (AVX2): avx_mathfun.h's Cephes polynomials, with the multiply-adds GCC fuses.
_LOG_P = tuple(_F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                                 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                                 3.3333331174e-1))
_LOG_Q1, _LOG_Q2 = _F32(-2.12194440e-4), _F32(0.693359375)
_SQRTHF = _F32(0.707106781186547524)
_MIN_NORM = np.array(0x00800000, np.int32).view(_F32)
_FOPI = _F32(1.27323954473516)  # 4 / pi
_DP = (_F32(-0.78515625), _F32(-2.4187564849853515625e-4), _F32(-3.77489497744594108e-8))
_SIN_P = (_F32(-1.9515295891e-4), _F32(8.3321608736e-3), _F32(-1.6666654611e-1))
_COS_P = (_F32(2.443315711809948e-005), _F32(-1.388731625493765e-003), _F32(4.166664568298827e-002))
_TWO_PI32 = _F32(2.0 * math.pi)
_SIGN = np.int32(-(2**31))


def _log256(x: np.ndarray) -> np.ndarray:
    """log256_ps for positive float32 x (the fill only takes logs of (0, 1])."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    exponent = (bits >> 23) - 0x7F
    x = ((bits & np.int32(~0x7F800000)) | np.int32(0x3F000000)).view(_F32)  # mantissa in [0.5, 1)
    e = exponent.astype(_F32) + _F32(1)
    small = x < _SQRTHF
    e -= small.astype(_F32)
    x = (x - _F32(1)) + np.where(small, x, _F32(0))
    z = x * x
    x64 = x.astype(_F64)
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = fma32(y, x64, p)
    y = y * x
    y = fma32(y, z.astype(_F64), e * _LOG_Q1)
    y = y - z * _F32(0.5)
    return fma32(e, _LOG_Q2, x + y)


def _sincos256(x: np.ndarray) -> tuple:
    """sincos256_ps for float32 x >= 0 (the fill's angles are in [0, 2 pi))."""
    j = (x * _FOPI).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(_F32)
    sign_sin = (j & 4) << 29
    sign_cos = (~(j - 2) & 4) << 29
    use_sin_poly = (j & 2) == 0
    y64 = y.astype(_F64)
    for dp in _DP:
        x = fma32(y64, dp, x)
    z = x * x
    z64 = z.astype(_F64)
    c = fma32(fma32(np.full_like(x, _COS_P[0]), z64, _COS_P[1]), z64, _COS_P[2]) * z
    c = fma32(c, z64, -(z * _F32(0.5))) + _F32(1)
    s = fma32(fma32(np.full_like(x, _SIN_P[0]), z64, _SIN_P[1]), z64, _SIN_P[2]) * z
    s = fma32(s, x.astype(_F64), x)
    sine = np.where(use_sin_poly, s, c)
    cosine = np.where(use_sin_poly, c, s)
    return (sine.view(np.int32) ^ sign_sin).view(_F32), (cosine.view(np.int32) ^ sign_cos).view(_F32)


def _fill16_avx2(data: np.ndarray, mean, std) -> np.ndarray:
    blocks = data.reshape(-1, 16)
    radius = np.sqrt(_F32(-2) * _log256(_F32(1) - blocks[:, :8]))
    sine, cosine = _sincos256(_TWO_PI32 * blocks[:, 8:])
    out = np.concatenate([radius * cosine, radius * sine], 1).reshape(-1)
    if mean == 0 and std == 1:
        return out + _F32(0)  # the FMA's exact value, -0 made +0
    return fma32(out, std, mean)  # _mm256_fmadd_ps(n, std, mean)


# The fill above in C, for large fills: every operation of _log256 / _sincos256 / _fill16_avx2 in the same
# order, the fused ones as fmaf (exact, one rounding: what fma32 emulates) and contraction off for the rest,
# so the results are bit-identical to the NumPy path's (tests/test_random_torch_streams.py checks both).
_FILL16_C = r"""
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize ("fp-contract=off")
#endif
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline int32_t bits_of(float x) { int32_t b; memcpy(&b, &x, 4); return b; }
static inline float float_of(int32_t b) { float x; memcpy(&x, &b, 4); return x; }

static inline float log256(float x) {
    const float min_norm = float_of(0x00800000);
    if (x < min_norm) x = min_norm;
    int32_t bits = bits_of(x);
    int32_t exponent = (bits >> 23) - 0x7F;
    x = float_of((bits & ~0x7F800000) | 0x3F000000);
    float e = (float)exponent + 1.0f;
    int small = x < 0.707106781186547524f;
    e -= small ? 1.0f : 0.0f;
    x = (x - 1.0f) + (small ? x : 0.0f);
    float z = x * x;
    float y = 7.0376836292e-2f;
    y = fmaf(y, x, -1.1514610310e-1f);
    y = fmaf(y, x, 1.1676998740e-1f);
    y = fmaf(y, x, -1.2420140846e-1f);
    y = fmaf(y, x, 1.4249322787e-1f);
    y = fmaf(y, x, -1.6668057665e-1f);
    y = fmaf(y, x, 2.0000714765e-1f);
    y = fmaf(y, x, -2.4999993993e-1f);
    y = fmaf(y, x, 3.3333331174e-1f);
    y = y * x;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = y - z * 0.5f;
    return fmaf(e, 0.693359375f, x + y);
}

static inline void sincos256(float x, float *sine, float *cosine) {
    int32_t j = (int32_t)(x * 1.27323954473516f);
    j = (j + 1) & ~1;
    float y = (float)j;
    int32_t sign_sin = (j & 4) << 29;
    int32_t sign_cos = (~(j - 2) & 4) << 29;
    int use_sin_poly = (j & 2) == 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float c = fmaf(fmaf(2.443315711809948e-005f, z, -1.388731625493765e-003f), z, 4.166664568298827e-002f) * z;
    c = fmaf(c, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(-1.9515295891e-4f, z, 8.3321608736e-3f), z, -1.6666654611e-1f) * z;
    s = fmaf(s, x, x);
    float sn = use_sin_poly ? s : c, cs = use_sin_poly ? c : s;
    *sine = float_of(bits_of(sn) ^ sign_sin);
    *cosine = float_of(bits_of(cs) ^ sign_cos);
}

void ember_normal_fill16(float *data, long blocks, float mean, float std, int standard) {
    const float two_pi = (float)(2.0 * 3.14159265358979323846);
    for (long b = 0; b < blocks; b++) {
        float *d = data + 16 * b;
        float out[16];
        for (int i = 0; i < 8; i++) {
            float radius = sqrtf(-2.0f * log256(1.0f - d[i]));
            float sine, cosine;
            sincos256(two_pi * d[i + 8], &sine, &cosine);
            out[i] = radius * cosine;
            out[i + 8] = radius * sine;
        }
        for (int i = 0; i < 16; i++)
            d[i] = standard ? out[i] + 0.0f : fmaf(out[i], std, mean);
    }
}
"""
_NATIVE_MIN = 1 << 12  # below this the NumPy path costs less than a ctypes call
_native: list = []


def _native_fill16():
    """The C fill (built once, cached on disk like ember.compile's kernels), or None without a C compiler."""
    if not _native:
        try:
            import ctypes

            from .._compile import codegen

            function = codegen.compile_library(_FILL16_C).ember_normal_fill16
            function.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_float, ctypes.c_float, ctypes.c_int]
            function.restype = None
            _native.append(function)
        except Exception:  # noqa: BLE001 - no compiler, or it failed: the NumPy path is exact too
            _native.append(None)
    return _native[0]


# ---------------------------------------------------------------- integers


def random_from_to(engine: Engine, n: int, span: int, base: int) -> np.ndarray:
    """uniform_int_from_to_distribution: (word % span) + base as int64, from random64() when span >= 2**28."""
    words = engine.random64(n) if span >= 1 << 28 else engine.random(n).astype(np.uint64)
    return (words % np.uint64(span) + np.uint64(base % (1 << 64))).view(np.int64)


def random_full_64(engine: Engine, n: int) -> np.ndarray:
    """random_(from=int64 min, to=None): random64() reinterpreted as int64."""
    return engine.random64(n).view(np.int64)


def random_default(engine: Engine, n: int, dtype: np.dtype) -> np.ndarray:
    """random_() without bounds (uniform_int_distribution), as int64: [0, max] for integers, [0, 2**digits] for
    floats; 64-bit words for int64 and double, 32-bit otherwise."""
    if dtype == np.int64:
        return (engine.random64(n) % np.uint64(1 << 63)).view(np.int64)
    if dtype == _F64:
        return (engine.random64(n) % np.uint64((1 << 53) + 1)).view(np.int64)
    words = engine.random(n).astype(np.uint64)
    if dtype == np.bool_:
        return (words & np.uint64(1)).view(np.int64)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        digits = {2: 11, 4: 24}[dtype.itemsize] if dtype.name != "bfloat16" else 8
        return (words % np.uint64((1 << digits) + 1)).view(np.int64)
    return (words % np.uint64(int(np.iinfo(dtype).max) + 1)).view(np.int64)


def int64_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """static_cast<scalar_t>(int64_t): modular for narrow ints, nearest for floats (half/bfloat16 via float)."""
    return values != 0 if dtype == np.bool_ else to_dtype(values, dtype)


_SWAPS_C = """
/* randperm's Fisher-Yates swaps, in torch's order: r[i] <-> r[targets[i]] for i < n - 1 */
void ember_randperm_swaps(long long* r, const long long* targets, long n)
{
    for (long i = 0; i + 1 < n; i++) {
        long long j = targets[i], t = r[i];
        r[i] = r[j];
        r[j] = t;
    }
}
"""
_swaps: list = []


def _native_swaps():
    """The C swap loop (built once, cached on disk), or None without a C compiler."""
    if not _swaps:
        try:
            import ctypes

            from .._compile import codegen

            function = codegen.compile_library(_SWAPS_C).ember_randperm_swaps
            function.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
            function.restype = None
            _swaps.append(function)
        except Exception:  # noqa: BLE001 - no compiler, or it failed: the vectorised resolution is exact too
            _swaps.append(None)
    return _swaps[0]


def randperm(engine: Engine, n: int) -> np.ndarray:
    """randperm_cpu: r = 0 .. n-1, then for i < n - 1 swap r[i] with r[j_i], j_i = i + random() % (n - i).

    The draws do not depend on r, so they are made at once; the swaps then run in C, in torch's order (a
    million in ~3 ms).  Without a compiler they are resolved at once instead: step i fixes r[i] for good
    (later steps touch only positions > i) to the value position j_i holds then: the value the last earlier
    step that swapped into j_i left there, or j_i itself if none did.  The value a step k leaves at j_k is
    the one position k held when step k ran, found the same way -- a chain of earlier steps, followed to its
    start by pointer jumping."""
    if n < 2:
        return np.arange(n, dtype=np.int64)
    steps = np.arange(n - 1, dtype=np.int64)
    targets = (engine.random(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64) + steps
    swaps = _native_swaps() if n >= _NATIVE_MIN else None
    if swaps is not None:
        result = np.arange(n, dtype=np.int64)
        swaps(result.ctypes.data, targets.ctypes.data, n)
        return result
    order = np.argsort(targets * n + steps)  # steps grouped by target, in time order within a group
    grouped = targets[order]
    repeat = np.zeros(n - 1, bool)
    np.equal(grouped[1:], grouped[:-1], out=repeat[1:])
    source = np.full(n - 1, -1, np.int64)  # per step: the last earlier step that swapped into its target
    source[order[repeat]] = order[np.nonzero(repeat)[0] - 1]
    # per position k: the last step before k that swapped into k (the last of k's group, unless that is k)
    counts = np.bincount(targets, minlength=n)
    ends = np.cumsum(counts) - 1
    last = np.where(counts > 0, order[np.clip(ends, 0, n - 2)], -1)
    before_last = np.where(counts > 1, order[np.clip(ends - 1, 0, n - 2)], -1)
    positions = np.arange(n, dtype=np.int64)
    previous = np.where(last == positions, before_last, last)
    held = np.where(previous < 0, positions, previous)  # the value position k holds when step k runs:
    while True:  # the position at the start of k's chain of earlier steps
        jumped = held[held]
        if np.array_equal(jumped, held):
            break
        held = jumped
    result = np.empty(n, np.int64)
    result[:-1] = np.where(source < 0, targets, held[np.maximum(source, 0)])
    result[-1] = held[-1]
    return result


# ---------------------------------------------------------------- bernoulli and the uniform-based samplers


def bernoulli_scalar(engine: Engine, n: int, p: float) -> np.ndarray:
    """bernoulli_scalar_kernel_default: uniform double < p, one random64() each (torch's MKL path is built only
    for fbcode, so every vendor's CPU draws this)."""
    return uniform64(engine, n) < p


def bernoulli_tensor(engine: Engine, p: np.ndarray) -> np.ndarray:
    """bernoulli_tensor_kernel over p (flat, in fill order): a double p compares a double uniform (random64()),
    any other floating p a float one (random())."""
    if p.dtype == _F64:
        return uniform64(engine, p.size) < p
    return uniform32(engine, p.size) < p.astype(_F32)


def exponential(engine: Engine, n: int, lambd: float) -> np.ndarray:
    """exponential_distribution<double>: -1 / lambda * log1p(-u), in double."""
    u = uniform64(engine, n)
    return (-1.0 / lambd) * _libm(np.log1p, math.log1p, -u)


def geometric(engine: Engine, n: int, p: float) -> np.ndarray:
    """geometric_distribution<double>: ceil(log(u) / log1p(-p)), in double."""
    u = uniform64(engine, n)
    with np.errstate(divide="ignore"):
        return np.ceil(_libm(np.log, _log_or_inf, u) / math.log1p(-p))


def _log_or_inf(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def cauchy(engine: Engine, n: int, median: float, sigma: float) -> np.ndarray:
    """cauchy_distribution<double>: median + sigma * tan(pi * (u - 0.5)) (an FMA), in double."""
    u = uniform64(engine, n)
    return fma64(sigma, _libm(np.tan, math.tan, math.pi * (u - 0.5)), median)


def log_normal(engine: Engine, n: int, mean: float, std: float) -> np.ndarray:
    """lognormal_distribution<double>: exp of a serial normal draw (sharing the cached second sample)."""
    return _libm(np.exp, math.exp, _affine64(serial_normals(engine, n), mean, std))


def multinomial_with_replacement(engine: Engine, rows: np.ndarray, num_samples: int) -> np.ndarray:
    """multinomial_with_replacement_apply: per row a running sum in the row's float type (float for half and
    bfloat16), divided by the total, last bucket set to 1; each sample a double uniform, placed by binary
    search at the first bucket >= it."""
    work = _F32 if rows.dtype.itemsize < 4 else rows.dtype
    cumulative = np.cumsum(rows.astype(work), axis=1, dtype=work)
    cumulative /= cumulative[:, -1:].copy()
    cumulative[:, -1] = 1
    draws = uniform64(engine, rows.shape[0] * num_samples).reshape(rows.shape[0], num_samples)
    return np.stack([np.searchsorted(c.astype(_F64), d, side="left") for c, d in zip(cumulative, draws)])
