"""The arithmetic of torch's QuantizedCPU kernels (ATen's vectorised code and fbgemm on x86), emulated in NumPy.

torch's quantized kernels each have a vectorised body and a scalar tail, and the two round differently: in the
AVX2 / AVX512 builds the body dequantizes with one fused multiply-add and adds the zero point after rounding, the
tail dequantizes exactly and adds the zero point before rounding.  Which elements take which path depends on the
tensor's memory layout (torch's quantized convolutions return channels-last tensors), the vector width of the
build torch runs (its CPU capability), and how TensorIterator splits the work between threads.  The helpers here
are those pieces, one named formula each, so a kernel in ember/_ops/quantized_ops.py reads as the C++ it follows.
See NOTE [ QuantizedCPU vector and scalar paths ] and NOTE [ QuantizedCPU kernels per CPU capability ].
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .. import _runtime
from .._tensor import _channels_last_contiguous
from .quantized import _RANGES, fbgemm_vectorised

# NOTE [ QuantizedCPU vector and scalar paths ]
# Measured against torch 2.13 on x86 with power-of-two scales (exact ties) and decimal scales (near ties):
#   dequantize, vector:  fma(q, s, f32(s * -zp))                     (Vectorized::dequantize with a premultiplied
#                                                                      zero point)
#   dequantize, scalar:  f32(f32(q - zp) * double(s))                (at::native::dequantize_val)
#   quantize, vector:    rint(f32(x * inv)) + zp                     (QuantizeAvx2/512, Vectorized::quantize and
#                                                                      requantize_from_int: zero point added after
#                                                                      rounding)
#   quantize, scalar:    rint(f32(f32(x * inv) + zp)), inv = 1/f32(s) (at::native::quantize_val: before rounding)
#   quantize, fbgemm:    rint(f32(fma(x, inv, zp)))                  (fbgemm::Quantize's vector loop, used by
#                                                                      quantize_per_tensor for 8-bit dtypes and by
#                                                                      at::native::quantize_vec)
# every value clamped to the dtype's range afterwards; rint is round half to even.  Which elements are "vector":
#   elementwise kernels (quantized::add, add_relu): TensorIterator's cpu_kernel_vec runs the vectorised loop over
#     whole blocks of `elementwise_block()` elements of each inner row, the scalar loop over the rest of the row;
#     rows are the coalesced innermost dimensions in memory order, cut further where at::parallel_for splits the
#     elements between threads (tensors of at least GRAIN_SIZE elements, ember.get_num_threads() threads);
#   channels-last kernels (avg_pool2d, adaptive_avg_pool2d, cat, batch_norm): the first channels of each pixel, a
#     multiple of the kernel's lane count, are vector, the remaining channels scalar.
# The lane counts and the vector formulas depend on the build torch runs: NOTE [ QuantizedCPU kernels per CPU
# capability ].
#
# NOTE [ QuantizedCPU kernels per CPU capability ]
# torch compiles QuantizedOpKernels.cpp once per CPU capability (DEFAULT, AVX2, AVX512) and runs the build of
# torch.backends.cpu.get_cpu_capability() (ember._runtime.cpu_capability(), both lowered by ATEN_CPU_CAPABILITY).
# From torch 2.13's source (ATen/cpu/vec, ATen/native/DispatchStub.h, QuantizedOpKernels.cpp), checked against
# torch under each of the three capabilities:
# - Vectorized<float>::size() is 8 on DEFAULT (the generic 32-byte vector) and AVX2, 16 on AVX512;
#   Vectorized<quint8/qint8>::size() is 4 times that: 32, 32, 64.
# - REGISTER_DISPATCH registers no AVX512 kernel, so on an AVX512 CPU torch runs the AVX2 build of qadd, qmul,
#   qadd_scalar, qcat_nhwc, qadaptive_avg_pool2d_nhwc and qbatch_norm; only qavg_pool2d_nhwc is registered with
#   ALSO_REGISTER_AVX512_DISPATCH and runs its AVX512 build (`vector_path(avx512_build=True)`).
# - On DEFAULT, Vectorized<quint8> is VectorizedQuantizedConverter: its dequantize is dequantize_val element by
#   element (the scalar formula) and its quantize is quantize_vec (fbgemm's formula); the vector loops keep their
#   lane counts, but round like that.  The channels-last pools' vector paths (do_avg_pool_*_on_AVX_n) are compiled
#   for AVX2 / AVX512 only: on DEFAULT every channel is scalar.  fmadd on the generic Vectorized<float> is a * b + c,
#   rounded twice, and the DEFAULT build is compiled without FMA, so scalar loops round twice too.
# - fbgemm (quantize_per_tensor, quantize_vec) picks its own code from the CPU's flags, whatever ATEN_CPU_CAPABILITY
#   says: its AVX2 loop (fused multiply-add) where the CPU has AVX2 and FMA, else a scalar loop rounding like
#   quantize_val (read from fbgemm's source; no such CPU was at hand to measure).
# quantize_per_tensor, mul / mul_relu, add_scalar and the contiguous pools round the same way in every build.
GRAIN_SIZE = 32768  # at::internal::GRAIN_SIZE


class VectorPath:
    """How the vectorised loop of a QuantizedCPU kernel computes in the build torch runs it with: its lane counts
    and its dequantize / quantize formulas.  NOTE [ QuantizedCPU kernels per CPU capability ]."""

    def __init__(self, capability: str) -> None:
        self.capability = capability
        self.float_lanes = 16 if capability == "AVX512" else 8  # Vectorized<float>::size()
        self.quantized_lanes = 4 * self.float_lanes  # Vectorized<quint8>::size(), Vectorized<qint8>::size()
        self.intrinsics = capability != "DEFAULT"  # AVX2/AVX512 Vectorized<quint8>, not the generic converter

    def __repr__(self) -> str:
        return f"VectorPath({self.capability!r})"

    def dequantize(self, integers: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
        """Vectorized<T>::dequantize(scale, zero_point, scale * -zero_point)."""
        if self.intrinsics:
            return dequantize_vector(integers, scale, zero_point)
        return dequantize_scalar(integers, scale, zero_point)

    def quantize(self, values: np.ndarray, scale: float, inverse_scale, zero_point: int,
                 dtype: dt.dtype) -> np.ndarray:
        """Vectorized<T>::quantize(values, scale, zero_point, inverse_scale); the generic converter ignores
        inverse_scale and calls quantize_vec(scale, ...)."""
        if self.intrinsics:
            return quantize_vector(values, inverse_scale, zero_point, dtype)
        return quantize_vec(values, scale, zero_point, dtype)

    def pool_channel_lanes(self) -> int:
        """Channels per vector of the channels-last pools (Vectorized<T>::size() / 4); 0: no vector path."""
        return self.quantized_lanes // 4 if self.intrinsics else 0


def vector_path(avx512_build: bool = False) -> VectorPath:
    """The vector path of a QuantizedCPU kernel on this machine: the build of ember._runtime.cpu_capability(),
    except that kernels torch registers without an AVX512 build (`avx512_build=False`) run their AVX2 build on
    an AVX512 CPU."""
    capability = _runtime.cpu_capability()
    if capability == "AVX512" and not avx512_build:
        capability = "AVX2"
    return VectorPath(capability)


def elementwise_block() -> int:
    """cpu_kernel_vec's vectorised loop (ATen/native/cpu/Loops.h) steps by 2 * Vectorized<T>::size() elements."""
    return 2 * vector_path().quantized_lanes


def _f32(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)


def clamp_to(values: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """Integers (held as floats) clamped to a quantized dtype's range and stored as its integer type."""
    low, high = _RANGES[dtype.name]
    return np.clip(values.astype(np.float64), low, high).astype(dtype.np_dtype)


def dequantize_vector(integers: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """Vectorized::dequantize(scale, zero_point, scale * -zero_point): one fused multiply-add in float32.

    The product q * s of a float32 s and an 8-bit q is exact in float64, and so is its sum with the float32
    premultiplied term (both are multiples of s's last bit below 2**33 of it), so one rounding to float32
    gives the fused multiply-add's result."""
    s = np.float32(scale)
    premultiplied = np.float32(s * np.float32(-zero_point))
    exact = integers.astype(np.float64) * np.float64(s) + np.float64(premultiplied)
    return exact.astype(np.float32)


def dequantize_scalar(integers: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """at::native::dequantize_val: float(q - zero_point) times the (double) scale, rounded once to float32."""
    shifted = integers.astype(np.float32) - np.float32(zero_point)
    return (shifted.astype(np.float64) * np.float64(np.float32(scale))).astype(np.float32)


def quantize_vector(values: np.ndarray, inverse_scale, zero_point: int, dtype: dt.dtype) -> np.ndarray:
    """QuantizeAvx2/512 (Vectorized::quantize, requantize_from_int): rint(float32(x * inv)), then + zero_point."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = _f32(values) * _f32(inverse_scale)
    return clamp_to(np.rint(scaled).astype(np.float64) + zero_point, dtype)


def quantize_scalar(values: np.ndarray, scale: float, zero_point: int, dtype: dt.dtype) -> np.ndarray:
    """at::native::quantize_val: x * (1 / float32(scale)), + zero_point, each in float32, then rint."""
    inverse = np.float32(1.0) / np.float32(scale)
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = (_f32(values) * inverse).astype(np.float32) + np.float32(zero_point)
    return clamp_to(np.rint(shifted.astype(np.float32)), dtype)


def quantize_fused(values: np.ndarray, inverse_scale, zero_point, dtype: dt.dtype) -> np.ndarray:
    """fbgemm::Quantize's vector loop: rint(float32(fma(x, inv, zero_point))).

    In float64 the product of two float32 numbers is exact and adding an integer zero point is exact unless the
    product is tiny against it, so only the final rounding to float32 remains (a double rounding can happen only
    within 2**-45 of a float32 midpoint, where it does not change the integer rint picks)."""
    with np.errstate(over="ignore", invalid="ignore"):
        exact = _f32(values).astype(np.float64) * _f32(inverse_scale).astype(np.float64)
        exact = exact + np.asarray(zero_point, dtype=np.float64)
    return clamp_to(np.rint(exact.astype(np.float32)), dtype)


def quantize_vec(values: np.ndarray, scale, zero_point: int, dtype: dt.dtype) -> np.ndarray:
    """at::native::quantize_vec(scale, zero_point, ...): fbgemm::Quantize with inverse 1/float32(scale), its fused
    vector loop where the CPU has AVX2 (NOTE [ QuantizedCPU kernels per CPU capability ]), else its scalar loop."""
    if fbgemm_vectorised():
        return quantize_fused(values, np.float32(1.0) / _f32(scale), zero_point, dtype)
    return quantize_scalar(values, scale, zero_point, dtype)


# ---------------------------------------------------------------- memory layout


def element_strides(array: np.ndarray) -> tuple:
    """The array's strides in elements (NumPy keeps bytes)."""
    return tuple(s // array.itemsize for s in array.strides)


def is_channels_last(array: np.ndarray) -> bool:
    """torch's is_contiguous(memory_format=torch.channels_last): a 4-d array whose strides are NHWC-dense,
    ignoring size-1 dimensions (so a (N, 1, H, W) or (N, C, 1, 1) contiguous tensor is channels-last too)."""
    return _channels_last_contiguous(array)


def suggests_channels_last(array: np.ndarray) -> bool:
    """torch's suggest_memory_format() == channels_last for a dense 4-d array: channels-last strides that are
    not also the contiguous ones."""
    return is_channels_last(array) and not array.flags.c_contiguous


def to_channels_last(array: np.ndarray) -> np.ndarray:
    """The same (N, C, H, W) values stored NHWC, as torch's quantized convolutions and pools return them."""
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)


def in_layout_of(array: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`array` stored channels-last when `reference` is (torch's output memory_format=suggest_memory_format())."""
    if array.ndim == 4 and suggests_channels_last(reference):
        return to_channels_last(array)
    return array


# ---------------------------------------------------------------- TensorIterator's vector / scalar split


def _iteration_order(shape: tuple, output_strides: tuple) -> list:
    """Dimensions from outermost to innermost as TensorIterator walks them: by the output's strides (dense, so
    distinct except for size-1 dimensions, which go outermost)."""
    ones = [d for d in range(len(shape)) if shape[d] == 1]
    others = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: -output_strides[d])
    return ones + others


def _inner_row(shape: tuple, order: list, operand_strides: list) -> tuple[int, bool]:
    """(row length, vectorisable): the innermost dimensions that coalesce for every operand, and whether the
    vectorised loop may run over them (every operand contiguous there, or all but one input, which is 0-strided)."""
    dims = [d for d in order if shape[d] != 1]
    if not dims:
        return 1, True
    inner = dims[-1]
    row = shape[inner]
    for outer in reversed(dims[:-1]):
        if all(strides[outer] == strides[inner] * row for strides in operand_strides):
            row *= shape[outer]
        else:
            break
    inner_strides = [strides[inner] for strides in operand_strides]
    output, inputs = inner_strides[0], inner_strides[1:]
    contiguous = output == 1 and all(s == 1 for s in inputs)
    one_broadcast = output == 1 and sum(s == 0 for s in inputs) == 1 and all(s in (0, 1) for s in inputs)
    return row, contiguous or one_broadcast


def _chunk_size(count: int) -> int:
    """The range each thread of at::parallel_for(0, count, GRAIN_SIZE) gets (TensorIterator::for_each)."""
    from .._runtime import get_num_threads

    threads = get_num_threads()
    if count < GRAIN_SIZE or threads == 1:
        return count
    tasks = min(threads, -(-count // GRAIN_SIZE))
    return -(-count // tasks)


def elementwise_vector_mask(shape: tuple, output_strides: tuple, input_strides: list,
                            block: int | None = None) -> np.ndarray:
    """Which elements of an elementwise QuantizedCPU kernel torch computes in its vectorised loop (True) rather
    than the scalar one, for a result of `shape` with `output_strides` and inputs broadcast to `shape` with
    `input_strides` (in elements); `block` defaults to this machine's `elementwise_block()`.
    NOTE [ QuantizedCPU vector and scalar paths ]."""
    block = elementwise_block() if block is None else block
    count = math.prod(shape)
    if count == 0:
        return np.zeros(shape, dtype=bool)
    order = _iteration_order(shape, output_strides)
    row, vectorisable = _inner_row(shape, order, [output_strides] + list(input_strides))
    if not vectorisable:
        return np.zeros(shape, dtype=bool)
    inverse = np.argsort(order)
    position = np.arange(count, dtype=np.int64).reshape([shape[d] for d in order]).transpose(inverse)
    chunk = _chunk_size(count)
    chunk_start = position // chunk * chunk
    chunk_end = np.minimum(chunk_start + chunk, count)
    row_start = position - position % row
    piece_start = np.maximum(row_start, chunk_start)
    piece_end = np.minimum(row_start + row, chunk_end)
    return (position - piece_start) < (piece_end - piece_start) // block * block


def channel_vector_mask(channels: int, lanes: int) -> np.ndarray:
    """Channels-last kernels: the first channels, a multiple of `lanes`, are vectorised, the rest scalar (all of
    them when `lanes` is 0: no vector path).  Shaped (1, C, 1, 1) to broadcast over an NCHW-indexed result."""
    vector = channels // lanes * lanes if lanes else 0
    return (np.arange(channels) < vector).reshape(1, channels, 1, 1)
