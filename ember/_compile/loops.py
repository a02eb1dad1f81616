"""Small hand-written C loops for eager steps that NumPy runs slowly or rounds unlike torch: a transposing copy,
a row scatter-add, `a + alpha * b`, lerp and addcmul with torch's fused multiply-adds, a 2-D convolution's
im2col and col2im, and a training batch norm's forward and backward over NCHW in place.

- `transposed`: attention multiplies by K^T and V^T, and K and V usually arrive (batch, heads, length, dim)
  with dim innermost, so the product is a transposed ("NT") GEMM; OpenBLAS runs those small batched NT
  products at about 65 GFLOP/s on one core where the plain ("NN") ones reach 105.  Copying K^T out first
  pays only if the copy is cheap: NumPy's strided copy of a 16x4x128x64 float K takes 0.49 ms, the 16x16
  tiled loop here 0.14 ms (reads and writes both stay within cache lines).
- `add_rows`: rows of values added into the rows an index picks, repeated indices adding up in index order
  (an embedding's backward): NumPy's add.at takes 4.5 ms for 2048 rows of 256, a stable sort and add.reduceat
  0.7 ms, this loop ~0.1 ms, adding in the same order, so the sums are the same bits.
- `add_scaled`: `add(a, b, alpha=...)` (an SGD update `p.add_(g, alpha=-lr)`): torch's CPU kernel computes
  fma(b, alpha, a), one rounding; NumPy's `a + alpha * b` rounds twice and differed from torch in 18 % of
  float32 elements.  One pass instead of two, with torch's bits.
- `lerp` / `addcmul`: torch's kernels compute lerp as fma(w, end - a, a) for |w| < 0.5 and
  fma(a - end, 1 - w, end) otherwise, and addcmul as fma(value * t1, t2, a); NumPy's unfused forms (one
  branch only, for lerp) differed from torch in up to half of the elements (Adam's moment updates use both).
- `im2col2d`: a convolution's columns (N, C*KH*KW, OH*OW) straight from the unpadded input, zeros written
  where a window leaves it: NumPy needed a padded copy and a strided-window copy (~10 GB/s); this writes
  each output row once, the in-range middle as a plain (vectorised) copy when the stride is 1.  `col2im2d`
  is its adjoint (a strided convolution's input gradient): columns added back into the input's shape in
  the same kernel-offset order as NumPy's strided adds (same bits), 4.0 -> ~1 ms for a 16->32 stride-2 layer.
- `adam_step` / `sgd_momentum_step`: an eager Adam/AdamW step is seven in-place passes per parameter (lerp_,
  mul_, addcmul_, sqrt, div_, add_, addcdiv_), SGD with momentum three; these loops make one, rounding each
  step as those ops do (the same bits), 30 -> 9 ms for an Adam step over 10M float32 parameters.
- `batch_norm_forward` / `batch_norm_backward`: the generated channel-norm kernels work on (C, N * spatial)
  rows, so each call copied its arrays across layouts, and backward recomputed mean and variance (five
  passes); these read NCHW in place, backward with the forward's saved mean and rstd (two passes):
  backward 3.3 -> 0.8 ms for 64x16x32x32.  Sums add float blocks of <= 1024 in double, as the generated
  kernels do.

Built once through the compiler's disk-cached `codegen.compile_library`; without a C compiler the callers
fall back to NumPy (`transposed` copies with NumPy, `add_rows` returns False).
"""

from __future__ import annotations

import ctypes
import numbers
import threading

import numpy as np

from . import codegen

_SOURCE = """\
/* dst[n][c][r] = src[n0 * s0 + n1 * s1 + r * sr + c], n = n0 * N1 + n1: 16x16 tiles */
#define TRANSPOSE(NAME, T) \\
void NAME(const T* restrict src, T* restrict dst, long N0, long N1, long R, long C, long s0, long s1, long sr) \\
{ \\
    for (long n0 = 0; n0 < N0; n0++) \\
        for (long n1 = 0; n1 < N1; n1++) { \\
            const T* s = src + n0 * s0 + n1 * s1; \\
            T* d = dst + (n0 * N1 + n1) * R * C; \\
            for (long r0 = 0; r0 < R; r0 += 16) \\
                for (long c0 = 0; c0 < C; c0 += 16) { \\
                    long r1 = r0 + 16 < R ? r0 + 16 : R, c1 = c0 + 16 < C ? c0 + 16 : C; \\
                    for (long c = c0; c < c1; c++) \\
                        for (long r = r0; r < r1; r++) \\
                            d[c * R + r] = s[r * sr + c]; \\
                } \\
        } \\
}
/* out[index[i]][k] += values[i][k], i in order */
#define ADD_ROWS(NAME, T) \\
void NAME(T* restrict out, const long* restrict index, const T* restrict values, long N, long K) \\
{ \\
    for (long i = 0; i < N; i++) { \\
        T* row = out + index[i] * K; \\
        const T* v = values + i * K; \\
        _Pragma("omp simd") \\
        for (long k = 0; k < K; k++) row[k] += v[k]; \\
    } \\
}
/* out[i] = fma(b[i], alpha, a[i]); out may be a (in place), so no restrict on them */
#define ADD_SCALED(NAME, T, FMA) \
void NAME(const T* a, const T* restrict b, T* out, double alpha, long n) \
{ \
    T scale = (T)alpha; \
    _Pragma("omp simd") \
    for (long i = 0; i < n; i++) out[i] = FMA(b[i], scale, a[i]); \
}
/* cols[n][(c*KH + kh)*KW + kw][oh*OW + ow] = x[n, c, oh*SH - PH + kh*DH, ow*SW - PW + kw*DW] or 0 outside;
   x strides (sn, sc, sh, sw) in elements */
#define IM2COL(NAME, T) \
void NAME(const T* restrict x, T* restrict cols, long N, long C, long H, long W, long KH, long KW, \
          long SH, long SW, long PH, long PW, long DH, long DW, long OH, long OW, \
          long sn, long sc, long sh, long sw) \
{ \
    for (long n = 0; n < N; n++) \
    for (long c = 0; c < C; c++) \
    for (long kh = 0; kh < KH; kh++) \
    for (long kw = 0; kw < KW; kw++) { \
        T* row = cols + (((n * C + c) * KH + kh) * KW + kw) * OH * OW; \
        long shift = kw * DW - PW; /* iw = ow * SW + shift */ \
        long lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW; \
        long hi = W - 1 - shift < 0 ? 0 : (W - 1 - shift) / SW + 1; \
        if (hi > OW) hi = OW; \
        if (lo > hi) lo = hi; \
        for (long oh = 0; oh < OH; oh++) { \
            T* out = row + oh * OW; \
            long ih = oh * SH - PH + kh * DH; \
            if (ih < 0 || ih >= H) { \
                for (long ow = 0; ow < OW; ow++) out[ow] = 0; \
                continue; \
            } \
            const T* in = x + n * sn + c * sc + ih * sh + shift * sw; \
            for (long ow = 0; ow < lo; ow++) out[ow] = 0; \
            if (SW == 1 && sw == 1) { \
                _Pragma("omp simd") \
                for (long ow = lo; ow < hi; ow++) out[ow] = in[ow]; \
            } else { \
                for (long ow = lo; ow < hi; ow++) out[ow] = in[ow * SW * sw]; \
            } \
            for (long ow = hi; ow < OW; ow++) out[ow] = 0; \
        } \
    } \
}
/* x[n, c, ih, iw] += cols[n][(c*KH + kh)*KW + kw][oh*OW + ow] over the windows, x zeroed by the caller */
#define COL2IM(NAME, T) \
void NAME(const T* restrict cols, T* restrict x, long N, long C, long H, long W, long KH, long KW, \
          long SH, long SW, long PH, long PW, long DH, long DW, long OH, long OW) \
{ \
    for (long n = 0; n < N; n++) \
    for (long c = 0; c < C; c++) { \
        T* plane = x + (n * C + c) * H * W; \
        for (long kh = 0; kh < KH; kh++) \
        for (long kw = 0; kw < KW; kw++) { \
            const T* row = cols + (((n * C + c) * KH + kh) * KW + kw) * OH * OW; \
            long shift = kw * DW - PW; \
            long lo = shift >= 0 ? 0 : (-shift + SW - 1) / SW; \
            long hi = W - 1 - shift < 0 ? 0 : (W - 1 - shift) / SW + 1; \
            if (hi > OW) hi = OW; \
            if (lo > hi) lo = hi; \
            for (long oh = 0; oh < OH; oh++) { \
                long ih = oh * SH - PH + kh * DH; \
                if (ih < 0 || ih >= H) continue; \
                T* out = plane + ih * W + shift; \
                const T* in = row + oh * OW; \
                for (long ow = lo; ow < hi; ow++) out[ow * SW] += in[ow]; \
            } \
        } \
    } \
}
/* batch norm backward over x, g (N, C, M) contiguous: sums per channel (float blocks of <= 1024 added in
   double), then gx = rstd * w * (g - sum(g) / count - xhat * sum(g * xhat) / count); gw = sum(g * xhat),
   gb = sum(g).  w may be NULL (1). */
#define BN_BACKWARD(NAME, T) \
void NAME(const T* restrict x, const T* restrict g, const T* restrict mean, const T* restrict rstd, \
          const T* restrict w, T* restrict gx, T* restrict gw, T* restrict gb, long N, long C, long M, \
          long c0, long c1) \
{ \
    double count = (double)N * (double)M; \
    for (long c = c0; c < c1; c++) { \
        T m = mean[c], r = rstd[c]; \
        double sum_g = 0, sum_gx = 0; \
        for (long n = 0; n < N; n++) { \
            const T* xr = x + (n * C + c) * M; \
            const T* gr = g + (n * C + c) * M; \
            for (long k0 = 0; k0 < M; k0 += 1024) { \
                long k1 = M - k0 < 1024 ? M : k0 + 1024; \
                T bg = 0, bgx = 0; \
                _Pragma("omp simd reduction(+:bg) reduction(+:bgx)") \
                for (long k = k0; k < k1; k++) { \
                    bg += gr[k]; \
                    bgx += gr[k] * ((xr[k] - m) * r); \
                } \
                sum_g += bg; \
                sum_gx += bgx; \
            } \
        } \
        T wc = w ? w[c] : (T)1; \
        if (gw) gw[c] = (T)sum_gx; \
        if (gb) gb[c] = (T)sum_g; \
        if (!gx) continue; \
        T mean_g = (T)(sum_g / count) * wc, mean_gx = (T)(sum_gx / count) * wc; \
        for (long n = 0; n < N; n++) { \
            const T* xr = x + (n * C + c) * M; \
            const T* gr = g + (n * C + c) * M; \
            T* out = gx + (n * C + c) * M; \
            _Pragma("omp simd") \
            for (long k = 0; k < M; k++) { \
                T xhat = (xr[k] - m) * r; \
                out[k] = r * ((gr[k] * wc - mean_g) - xhat * mean_gx); \
            } \
        } \
    } \
}
/* out = lerp(a, b, w) as torch's kernel rounds it; w[i * ws] (ws = 0: one weight) */
#define LERP(NAME, T, FMA, ABS) \
void NAME(const T* a, const T* b, const T* w, T* out, long ws, long n) \
{ \
    _Pragma("omp simd") \
    for (long i = 0; i < n; i++) { \
        T wi = w[i * ws], x = a[i], y = b[i]; \
        out[i] = ABS(wi) < (T)0.5 ? FMA(wi, y - x, x) : FMA(x - y, (T)1 - wi, y); \
    } \
}
/* out = a + value * t1 * t2 as torch's kernel rounds it: fma(value * t1, t2, a) */
#define ADDCMUL(NAME, T, FMA) \
void NAME(const T* a, const T* t1, const T* t2, T* out, double value, long n) \
{ \
    T v = (T)value; \
    _Pragma("omp simd") \
    for (long i = 0; i < n; i++) out[i] = FMA(v * t1[i], t2[i], a[i]); \
}
/* One Adam/AdamW step over n elements, rounded exactly as the eager step's in-place ops round it (so the same
   bits, one pass instead of seven): p *= decay (AdamW's decoupled decay, when decoupled), exp_avg as lerp_
   (above), exp_avg_sq as mul_(beta2) then addcmul_(g, g, 1 - beta2), then p as addcdiv_(exp_avg,
   sqrt(exp_avg_sq) / correction + eps, step): (step * m) / denom added.  Contraction is off here: the decay's
   product must round before the update adds to it, as two separate ops round. */
#if defined(__clang__)
#define EMBER_UNFUSED_OPS _Pragma("clang fp contract(off)")
#define EMBER_NO_CONTRACTION
#elif defined(__GNUC__)
#define EMBER_UNFUSED_OPS
#define EMBER_NO_CONTRACTION __attribute__((optimize("fp-contract=off")))
#else
#define EMBER_UNFUSED_OPS
#define EMBER_NO_CONTRACTION
#endif
#define ADAM(NAME, T, FMA, ABS, SQRT) \
EMBER_NO_CONTRACTION void NAME(T* p, const T* g, T* m, T* v, long n, double weight1, double beta2, double weight2, \
          double correction, double eps, double step, double decay, long decoupled) \
{ \
    EMBER_UNFUSED_OPS \
    T w = (T)weight1, b2 = (T)beta2, w2 = (T)weight2, c = (T)correction, e = (T)eps, s = (T)step, d = (T)decay; \
    int small = ABS(w) < (T)0.5; \
    _Pragma("omp simd") \
    for (long i = 0; i < n; i++) { \
        T gi = g[i], mi = m[i], vi = v[i] * b2, pi = p[i]; \
        mi = small ? FMA(w, gi - mi, mi) : FMA(mi - gi, (T)1 - w, gi); \
        vi = FMA(w2 * gi, gi, vi); \
        T denom = SQRT(vi) / c + e; \
        if (decoupled) pi = pi * d; \
        T q = s * mi; \
        p[i] = pi + q / denom; \
        m[i] = mi; \
        v[i] = vi; \
    } \
}
/* One SGD step with momentum over n elements, as the eager step's in-place ops round it: buf = buf * momentum
   then fma(g, 1 - dampening, buf) (add_ with alpha); nesterov: g = fma(buf, momentum, g); p = fma(g', step, p)
   (step = -lr) where g' is buf (or the nesterov g).  `first`: the buffer is a copy of g (torch's first step). */
#define SGD_MOMENTUM(NAME, T, FMA) \
EMBER_NO_CONTRACTION void NAME(T* p, const T* g, T* buf, long n, double momentum, double keep, double step, \
                               long nesterov, long first) \
{ \
    T mu = (T)momentum, k = (T)keep, s = (T)step; \
    _Pragma("omp simd") \
    for (long i = 0; i < n; i++) { \
        T gi = g[i]; \
        T bi = first ? gi : FMA(gi, k, buf[i] * mu); \
        T di = nesterov ? FMA(bi, mu, gi) : bi; \
        buf[i] = bi; \
        p[i] = FMA(di, s, p[i]); \
    } \
}
/* TOTAL += TERM(v) over channel c's values v of x (N, C, M): float blocks of <= 1024 added in double */
#define CHANNEL_SUM(T, TOTAL, TERM) \
    for (long n = 0; n < N; n++) { \
        const T* xr = x + (n * C + c) * M; \
        for (long k0 = 0; k0 < M; k0 += 1024) { \
            long k1 = M - k0 < 1024 ? M : k0 + 1024; \
            T block = 0; \
            _Pragma("omp simd reduction(+:block)") \
            for (long k = k0; k < k1; k++) { T v = xr[k]; block += (TERM); } \
            TOTAL += block; \
        } \
    }
/* batch norm forward over x (N, C, M) contiguous: per channel mean, then the variance of the deviations
   (two passes), y = (x - mean) * rstd * w + b; w, b may be NULL */
#define BN_FORWARD(NAME, T, SQRT) \
void NAME(const T* restrict x, const T* restrict w, const T* restrict b, T* restrict y, T* restrict mean, \
          T* restrict rstd, double eps, long N, long C, long M, long c0, long c1) \
{ \
    double count = (double)N * (double)M; \
    for (long c = c0; c < c1; c++) { \
        double total = 0, squares = 0; \
        CHANNEL_SUM(T, total, v) \
        T m = (T)(total / count); \
        CHANNEL_SUM(T, squares, (v - m) * (v - m)) \
        T var = (T)(squares / count); \
        T r = (T)1 / SQRT(var + (T)eps); \
        T wc = w ? w[c] : (T)1, bc = b ? b[c] : (T)0; \
        mean[c] = m; \
        rstd[c] = r; \
        for (long n = 0; n < N; n++) { \
            const T* xr = x + (n * C + c) * M; \
            T* out = y + (n * C + c) * M; \
            _Pragma("omp simd") \
            for (long k = 0; k < M; k++) out[k] = (xr[k] - m) * r * wc + bc; \
        } \
    } \
}
TRANSPOSE(ember_transpose_f32, float)
TRANSPOSE(ember_transpose_f64, double)
ADD_ROWS(ember_add_rows_f32, float)
ADD_ROWS(ember_add_rows_f64, double)
ADD_SCALED(ember_add_scaled_f32, float, fmaf)
ADD_SCALED(ember_add_scaled_f64, double, fma)
IM2COL(ember_im2col2d_f32, float)
IM2COL(ember_im2col2d_f64, double)
COL2IM(ember_col2im2d_f32, float)
COL2IM(ember_col2im2d_f64, double)
BN_BACKWARD(ember_batch_norm_backward_f32, float)
BN_BACKWARD(ember_batch_norm_backward_f64, double)
BN_FORWARD(ember_batch_norm_forward_f32, float, sqrtf)
BN_FORWARD(ember_batch_norm_forward_f64, double, sqrt)
LERP(ember_lerp_f32, float, fmaf, fabsf)
LERP(ember_lerp_f64, double, fma, fabs)
ADDCMUL(ember_addcmul_f32, float, fmaf)
ADDCMUL(ember_addcmul_f64, double, fma)
ADAM(ember_adam_f32, float, fmaf, fabsf, sqrtf)
ADAM(ember_adam_f64, double, fma, fabs, sqrt)
SGD_MOMENTUM(ember_sgd_momentum_f32, float, fmaf)
SGD_MOMENTUM(ember_sgd_momentum_f64, double, fma)
"""

_FLOATS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_P, _L = ctypes.c_void_p, ctypes.c_long
_ARGTYPES = {"transpose": [_P, _P] + [_L] * 7, "add_rows": [_P, _P, _P, _L, _L],
             "add_scaled": [_P, _P, _P, ctypes.c_double, _L], "im2col2d": [_P, _P] + [_L] * 18,
             "col2im2d": [_P, _P] + [_L] * 14, "batch_norm_backward": [_P] * 8 + [_L] * 5,
             "batch_norm_forward": [_P] * 6 + [ctypes.c_double] + [_L] * 5, "lerp": [_P] * 4 + [_L, _L],
             "addcmul": [_P] * 4 + [ctypes.c_double, _L], "adam": [_P] * 4 + [_L] + [ctypes.c_double] * 7 + [_L],
             "sgd_momentum": [_P] * 3 + [_L] + [ctypes.c_double] * 3 + [_L, _L]}
_functions: list = []  # [None] when no compiler, else [{(name, dtype): function}]
_lock = threading.Lock()


def _library():
    if not _functions:
        with _lock:
            if not _functions:
                try:
                    library = codegen.compile_library(_SOURCE)
                except (codegen.CompilerMissing, codegen.CompileError, OSError):
                    _functions.append(None)
                else:
                    found = {}
                    for dtype, suffix in _FLOATS.items():
                        for name, argtypes in _ARGTYPES.items():
                            fn = getattr(library, f"ember_{name}_{suffix}")
                            fn.restype = None
                            fn.argtypes = argtypes
                            found[name, dtype] = fn
                    _functions.append(found)
    return _functions[0]


def _function(name: str, dtype):
    functions = _library() if dtype in _FLOATS else None
    return functions.get((name, dtype)) if functions else None


def transposed(array: np.ndarray) -> np.ndarray:
    """A contiguous copy of `array` with its last two dims swapped (`array.swapaxes(-1, -2)`), for a
    4-D NumPy float array whose last dim is contiguous; any other array gets NumPy's copy."""
    fn = _function("transpose", array.dtype) if type(array) is np.ndarray and array.ndim == 4 else None
    item = array.itemsize
    if fn is None or array.strides[3] != item or any(s % item for s in array.strides):
        return np.ascontiguousarray(array.swapaxes(-1, -2))
    n0, n1, rows, columns = array.shape
    out = np.empty((n0, n1, columns, rows), array.dtype)
    s0, s1, sr = (s // item for s in array.strides[:3])
    fn(array.ctypes.data, out.ctypes.data, n0, n1, rows, columns, s0, s1, sr)
    return out


def add_rows(region: np.ndarray, index: np.ndarray, values: np.ndarray) -> bool:
    """region[index[i]] += values[i] for each i in order (index: 1-D, in range, non-negative; values shaped
    index.shape + region.shape[1:]).  False, with nothing written, where the loop does not apply (not
    C-contiguous float NumPy arrays of one dtype, or no compiler): the caller adds another way."""
    if not (type(region) is np.ndarray and type(values) is np.ndarray and region.dtype == values.dtype
            and region.flags.c_contiguous and region.flags.writeable and index.dtype.kind in "iu"):
        return False
    fn = _function("add_rows", region.dtype)
    if fn is None:
        return False
    values = values if values.flags.c_contiguous else values.copy(order="C")
    index = np.ascontiguousarray(index, dtype=np.int64)  # 1-D: ascontiguousarray keeps its shape
    fn(region.ctypes.data, index.ctypes.data, values.ctypes.data, index.size, values.size // max(index.size, 1))
    return True


def im2col2d(x: np.ndarray, kernel, stride, padding, dilation) -> tuple | None:
    """A 2-D convolution's columns (N, C*KH*KW, OH*OW) and output size (OH, OW) for `x` (N, C, H, W, any
    strides), `padding` ((top, bottom), (left, right)) non-negative; None where the loop does not apply
    (not a float NumPy array, a negative pad, no compiler)."""
    if type(x) is not np.ndarray or x.ndim != 4 or any(p < 0 for pair in padding for p in pair):
        return None
    fn = _function("im2col2d", x.dtype)
    item = x.itemsize
    if fn is None or any(s % item for s in x.strides):
        return None
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    oh = (h + sum(padding[0]) - dh * (kh - 1) - 1) // sh + 1
    ow = (w + sum(padding[1]) - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        return None
    cols = np.empty((n, c * kh * kw, oh * ow), x.dtype)
    strides = [s // item for s in x.strides]
    fn(x.ctypes.data, cols.ctypes.data, n, c, h, w, kh, kw, sh, sw, padding[0][0], padding[1][0], dh, dw, oh, ow,
       *strides)
    return cols, [oh, ow]


def col2im2d(cols: np.ndarray, input_shape, kernel, stride, padding, dilation, out_size) -> np.ndarray | None:
    """The adjoint of `im2col2d`: `cols` (N, C*KH*KW, OH*OW) added back into a zeroed (N, C, H, W) array;
    None where the loop does not apply (the caller adds with NumPy)."""
    if type(cols) is not np.ndarray or len(input_shape) != 4 or any(p < 0 for pair in padding for p in pair):
        return None
    fn = _function("col2im2d", cols.dtype)
    if fn is None:
        return None
    cols = cols if cols.flags.c_contiguous else cols.copy(order="C")
    n, c, h, w = input_shape
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_size
    if cols.shape != (n, c * kh * kw, oh * ow):
        return None
    x = np.zeros((n, c, h, w), cols.dtype)
    fn(cols.ctypes.data, x.ctypes.data, n, c, h, w, kh, kw, sh, sw, padding[0][0], padding[1][0], dh, dw, oh, ow)
    return x


def batch_norm_backward(x: np.ndarray, g: np.ndarray, mean: np.ndarray, rstd: np.ndarray, weight) -> tuple | None:
    """(grad_x, grad_weight, grad_bias) of a training batch norm over all dims but 1, from the forward's
    per-channel `mean` and `rstd`; None where the loop does not apply (not C-contiguous float arrays of
    one dtype, no compiler)."""
    dtype = x.dtype
    arrays = [x, g, mean, rstd] + ([weight] if weight is not None else [])
    if x.ndim < 2 or not all(type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous for a in arrays):
        return None
    if g.shape != x.shape or mean.size != x.shape[1] or rstd.size != x.shape[1] or (
            weight is not None and weight.size != x.shape[1]):
        return None
    fn = _function("batch_norm_backward", dtype)
    if fn is None:
        return None
    n, c = x.shape[:2]
    gx, gw, gb = np.empty_like(x), np.empty(c, dtype), np.empty(c, dtype)
    _over_channels(fn, [x.ctypes.data, g.ctypes.data, mean.ctypes.data, rstd.ctypes.data,
                        None if weight is None else weight.ctypes.data, gx.ctypes.data, gw.ctypes.data,
                        gb.ctypes.data, n, c, x.size // max(n * c, 1)], c, x.size)
    return gx, gw, gb


def batch_norm_forward(x: np.ndarray, weight, bias, eps: float) -> tuple | None:
    """(y, mean, rstd) of a training batch norm over all dims but 1 (mean and rstd shaped (1, C, 1, ...)); None
    where the loop does not apply (not C-contiguous float arrays of one dtype, no compiler)."""
    dtype = x.dtype
    arrays = [x] + [t for t in (weight, bias) if t is not None]
    if x.ndim < 2 or not all(type(a) is np.ndarray and a.dtype == dtype and a.flags.c_contiguous for a in arrays):
        return None
    if any(t is not None and t.size != x.shape[1] for t in (weight, bias)):
        return None
    fn = _function("batch_norm_forward", dtype)
    if fn is None:
        return None
    n, c = x.shape[:2]
    stat_shape = (1, c) + (1,) * (x.ndim - 2)
    y, mean, rstd = np.empty_like(x), np.empty(stat_shape, dtype), np.empty(stat_shape, dtype)
    _over_channels(fn, [x.ctypes.data, None if weight is None else weight.ctypes.data,
                        None if bias is None else bias.ctypes.data, y.ctypes.data, mean.ctypes.data,
                        rstd.ctypes.data, float(eps), n, c, x.size // max(n * c, 1)], c, x.size)
    return y, mean, rstd


def _over_channels(fn, args: list, channels: int, size: int) -> None:
    """fn(*args, c0, c1) over the channels, split over the kernel threads (codegen._parallel) when the
    array is large enough for the hand-off to pay."""
    from .._runtime import get_num_threads

    threads = max(1, min(get_num_threads(), channels, size // (codegen.PARALLEL_THRESHOLD // 2)))
    bounds = [channels * i // threads for i in range(threads + 1)]
    calls = [args + [start, stop] for start, stop in zip(bounds, bounds[1:]) if stop > start]
    if len(calls) == 1:
        fn(*calls[0])
    else:
        codegen._parallel(fn, calls)


def _same_float_arrays(arrays, out) -> tuple | None:
    """`arrays` broadcast to one shape as C-contiguous arrays of one float dtype, and a writable output (`out`
    when it is C-contiguous of that shape, else a new array); None if they are not float NumPy arrays of
    one dtype."""
    if not all(type(a) is np.ndarray for a in arrays) or len({a.dtype for a in arrays}) != 1 \
            or arrays[0].dtype not in _FLOATS:
        return None
    shapes = {a.shape for a in arrays}
    arrays = np.broadcast_arrays(*arrays) if len(shapes) > 1 else arrays
    arrays = [a if a.flags.c_contiguous else a.copy(order="C") for a in arrays]
    usable = (out is not None and type(out) is np.ndarray and out.dtype == arrays[0].dtype
              and out.shape == arrays[0].shape and out.flags.c_contiguous and out.flags.writeable)
    return arrays, out if usable else np.empty(arrays[0].shape, arrays[0].dtype)


def _finish(result, out):
    if out is not None and result is not out:
        out[...] = result
        return out
    return result


def add_scaled(a: np.ndarray, b: np.ndarray, alpha, out: np.ndarray | None = None) -> np.ndarray | None:
    """a + alpha * b as torch's CPU kernel computes it, fma(b, alpha, a), into `out` (which may be `a`) or a new
    array; None where the loop does not apply (not float NumPy arrays of one dtype, a non-real alpha, no
    compiler): the caller computes it another way."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
        return None
    prepared = _same_float_arrays([a, b], out)
    fn = _function("add_scaled", a.dtype) if prepared is not None else None
    if fn is None:
        return None
    (x, y), result = prepared
    fn(x.ctypes.data, y.ctypes.data, result.ctypes.data, float(alpha), result.size)
    return _finish(result, out)


def lerp(a: np.ndarray, b: np.ndarray, weight, out: np.ndarray | None = None) -> np.ndarray | None:
    """lerp(a, b, weight) with torch's rounding (a scalar or an array weight); None where the loop does not
    apply (the caller computes it another way)."""
    scalar = not isinstance(weight, np.ndarray) or weight.ndim == 0
    if scalar and (isinstance(weight, complex) or getattr(weight, "dtype", np.dtype("f")).kind == "c"):
        return None
    if type(a) is not np.ndarray:
        return None
    w = np.asarray(weight, a.dtype).reshape(1) if scalar else weight
    prepared = _same_float_arrays([a, b] if scalar else [a, b, w], out)
    fn = _function("lerp", a.dtype) if prepared is not None else None
    if fn is None:
        return None
    arrays, result = prepared
    if not scalar:
        w = arrays[2]
    fn(arrays[0].ctypes.data, arrays[1].ctypes.data, w.ctypes.data, result.ctypes.data, 0 if scalar else 1,
       result.size)
    return _finish(result, out)


def addcmul(a: np.ndarray, t1: np.ndarray, t2: np.ndarray, value, out: np.ndarray | None = None) -> np.ndarray | None:
    """a + value * t1 * t2 with torch's rounding; None where the loop does not apply."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    prepared = _same_float_arrays([a, t1, t2], out)
    fn = _function("addcmul", a.dtype) if prepared is not None else None
    if fn is None:
        return None
    arrays, result = prepared
    fn(arrays[0].ctypes.data, arrays[1].ctypes.data, arrays[2].ctypes.data, result.ctypes.data, float(value),
       result.size)
    return _finish(result, out)


# ---------------------------------------------------------------- fused optimizer steps

_CHUNK = 1 << 16  # elements per thread's share below which a step runs on the calling thread


def _step_arrays(arrays):
    """The arrays of one parameter's step when a fused loop applies: NumPy, one float dtype, one shape,
    C-contiguous, writable; else None."""
    first = arrays[0]
    if type(first) is not np.ndarray or first.dtype not in _FLOATS:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != first.dtype or a.shape != first.shape or not a.flags.c_contiguous:
            return None
    return arrays if all(a.flags.writeable for a in arrays) else None


def _run_split(fn, pointers, n, args) -> None:
    """fn(*pointers, n, *args) over n elements, split into contiguous shares over the kernel threads."""
    from .._runtime import get_num_threads

    threads = max(1, min(get_num_threads(), n // _CHUNK))
    if threads == 1:
        fn(*(a.ctypes.data for a in pointers), n, *args)
        return
    itemsize = pointers[0].itemsize
    bounds = [n * t // threads for t in range(threads + 1)]
    calls = [[a.ctypes.data + start * itemsize for a in pointers] + [stop - start, *args]
             for start, stop in zip(bounds, bounds[1:])]
    codegen._parallel(fn, calls)


def adam_step(param, grad, exp_avg, exp_avg_sq, weight1: float, beta2: float, weight2: float, correction: float,
              eps: float, step: float, decay: float | None) -> bool:
    """One parameter's fused Adam/AdamW step in place (see ADAM); False (nothing written) where it does not
    apply, and the caller runs the unfused ops."""
    arrays = _step_arrays([param, grad, exp_avg, exp_avg_sq])
    fn = _function("adam", param.dtype) if arrays is not None else None
    if fn is None:
        return False
    _run_split(fn, arrays, param.size, (weight1, beta2, weight2, correction, eps, step,
                                        1.0 if decay is None else decay, decay is not None))
    return True


def sgd_momentum_step(param, grad, buffer, momentum: float, keep: float, step: float, nesterov: bool,
                      first: bool) -> bool:
    """One parameter's fused SGD-with-momentum step in place (see SGD_MOMENTUM); False where it does not apply."""
    arrays = _step_arrays([param, grad, buffer])
    fn = _function("sgd_momentum", param.dtype) if arrays is not None else None
    if fn is None:
        return False
    _run_split(fn, arrays, param.size, (momentum, keep, step, bool(nesterov), bool(first)))
    return True
