"""Quantized tensors: torch.quantize_per_tensor / quantize_per_channel, dequantize, int_repr and the q_* queries.

A quantized tensor is an ordinary ember Tensor whose dtype is ember.qint8, quint8 or qint32 (NOTE [ Quantized
dtypes ] in ember/_dtype.py), whose array holds the integer representation, and whose `_qparams` holds the
quantization scheme and parameters.  Dispatch runs an op on it only where torch's QuantizedCPU backend has a
kernel (movement ops on the integers, the kernels of ember/_ops/quantized_ops.py) and refuses the rest with
torch's error.  The numerics are torch's x86 (fbgemm) kernels, see NOTE [ Quantization numerics ].
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch, _runtime
from .. import _dtype as dt
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export


class qscheme:
    """torch.qscheme: how a quantized tensor maps integers to real values."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                 per_channel_symmetric, per_channel_affine_float_qparams)}


def _qscheme_by_name(name: str) -> qscheme:
    return _QSCHEMES[name]


class QParams:
    """A quantized tensor's parameters: per tensor (scale, zero_point) or per channel (scales, zero_points, axis).

    scale is a Python float (torch keeps a double) and per-channel scales a float64 tensor, zero points int64,
    as torch returns them; the kernels round scales to float32, as fbgemm does."""

    __slots__ = ("scheme", "scale", "zero_point", "axis")

    def __init__(self, scheme: qscheme, scale, zero_point, axis: int | None = None) -> None:
        self.scheme = scheme
        self.scale = scale
        self.zero_point = zero_point
        self.axis = axis


_RANGES = {"qint8": (-128, 127), "quint8": (0, 255), "qint32": (-(2**31), 2**31 - 1)}

# NOTE [ Quantization numerics ]
# torch 2.13 on x86 quantizes with fbgemm's Quantize<T, LEGACY=true>: the reciprocal 1/scale is float32, the zero
# point is added *before* rounding, rounding is nearbyint (half to even), and the result is clamped to the
# dtype's range.  Adding the zero point first matters at ties: 0.5 with zero_point 3 gives round(3.5) = 4, not
# 3 + round(0.5) = 3 (checked against torch in tests/quantization/test_quantized.py).  How x * (1/scale) + zp is
# rounded differs between torch's paths, measured on values a few ulp from ties (decimal scales):
# quantize_per_tensor to qint8/quint8 runs fbgemm's vector loop, one fused multiply-add (`fused=True`);
# qint32 and quantize_per_channel round the product to float32, then add the zero point in float32.  fbgemm picks
# its vector loop from the CPU's own flags (not torch's CPU capability): on a CPU without AVX2 and FMA its scalar
# loop rounds twice (NOTE [ QuantizedCPU kernels per CPU capability ] in quantized_numerics.py).
# Dequantization is (q - zero_point) * scale in float32.


def fbgemm_vectorised() -> bool:
    """Whether fbgemm::Quantize runs its AVX2 loop here (it checks the CPU's avx2 and fma flags itself).  Without
    /proc/cpuinfo, as ember._runtime, assume an x86 CPU torch supports has them."""
    flags = _runtime.cpu_flags()
    return not flags or {"avx2", "fma"} <= flags


def _quantize_array(values: np.ndarray, scale, zero_point, dtype: dt.dtype, fused: bool = False) -> np.ndarray:
    """fbgemm's quantization of float32 `values`; scale and zero_point broadcast against them.  `fused`: the
    zero point joins the product in one fused multiply-add (exact in float64: a float32 product has 48
    significant bits) where fbgemm vectorises, else the product is rounded to float32 first."""
    low, high = _RANGES[dtype.name]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inverse = np.float32(1.0) / np.asarray(scale, dtype=np.float32)
        if fused and fbgemm_vectorised():
            exact = values.astype(np.float32).astype(np.float64) * inverse.astype(np.float64)
            transformed = (exact + np.asarray(zero_point, dtype=np.float64)).astype(np.float32)
        else:
            transformed = values.astype(np.float32) * inverse
            transformed = np.asarray(zero_point, dtype=np.float32) + transformed
        rounded = np.rint(transformed).astype(np.float64)
    return np.clip(rounded, low, high).astype(dtype.np_dtype)


def _dequantize_array(integers: np.ndarray, scale, zero_point) -> np.ndarray:
    """(q - zero_point) * scale, in float32 as torch's vectorised kernel computes it."""
    shifted = integers.astype(np.float32) - np.asarray(zero_point, dtype=np.float32)
    return (shifted * np.asarray(scale, dtype=np.float32)).astype(np.float32)


def _make_quantized(integers: np.ndarray, dtype: dt.dtype, qparams: QParams) -> Tensor:
    _dispatch.host_read("a quantized tensor")
    out = Tensor._make(integers, dtype)
    out._qparams = qparams
    return out


def _check_input(input: Tensor, dtype: dt.dtype) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"quantize: argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(dtype, dt.dtype) or dtype.category >= 0:
        name = SCALAR_NAMES.get(getattr(dtype, "name", ""), str(dtype))
        raise RuntimeError(f"ScalarType {name} is not supported in new_qtensor.")
    if input._dtype is not dt.float32:
        raise RuntimeError(f"Quantize only works on Float Tensor, got {SCALAR_NAMES.get(input._dtype.name)}")
    if input._device.type != "cpu":
        raise NotImplementedError("ember quantizes on the CPU only")


def _check_zero_point(zero_point: int, dtype: dt.dtype, where: str) -> None:
    low, high = _RANGES[dtype.name]
    if zero_point > high:
        raise RuntimeError(f"{where} zero_point {zero_point} is above upper bound.")
    if zero_point < low:
        raise RuntimeError(f"{where} zero_point {zero_point} is below lower bound.")


@export(method=False)
def quantize_per_tensor(input: Tensor, scale: float, zero_point: int, dtype: dt.dtype) -> Tensor:
    """torch.quantize_per_tensor: q = clamp(round(x / scale + zero_point)) with one scale and zero point."""
    _check_input(input, dtype)
    scale = float(scale)
    zero_point = int(zero_point)
    _check_zero_point(zero_point, dtype, "quantize_tensor_per_tensor_affine")
    integers = _quantize_array(input._data, scale, zero_point, dtype, fused=dtype is not dt.qint32)
    return _make_quantized(integers, dtype, QParams(per_tensor_affine, scale, zero_point))


def _channel_shape(ndim: int, axis: int, length: int) -> tuple:
    shape = [1] * ndim
    shape[axis] = length
    return tuple(shape)


@export(method=False)
def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int, dtype: dt.dtype) -> Tensor:
    """torch.quantize_per_channel: one scale and zero point per slice along `axis`."""
    for position, (name, value) in enumerate((("scales", scales), ("zero_points", zero_points)), start=2):
        if not isinstance(value, Tensor):
            raise TypeError(f"quantize_per_channel(): argument '{name}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")
    _check_input(input, dtype)
    ndim = input.ndim
    if not 0 <= axis < ndim:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}"
                           f"Expected: [0, {ndim})")
    channels = input.shape[axis]
    if scales.numel() != channels:
        raise RuntimeError(f"length of scales must equal to channel, expected {channels} got, {scales.numel()}")
    if zero_points.numel() != scales.numel():
        raise RuntimeError("number of elements in scales and zero_points must match")
    scale_values = np.asarray(scales._data, dtype=np.float64).reshape(-1)
    zero_values = np.asarray(zero_points._data).astype(np.int64).reshape(-1)
    for zero_point in zero_values.tolist():
        _check_zero_point(zero_point, dtype, "quantize_tensor_per_channel_affine")
    shape = _channel_shape(ndim, axis, channels)
    integers = _quantize_array(input._data, scale_values.reshape(shape), zero_values.reshape(shape), dtype)
    qparams = QParams(per_channel_affine, Tensor._make(scale_values.copy(), dt.float64),
                      Tensor._make(zero_values.copy(), dt.int64), axis)
    return _make_quantized(integers, dtype, qparams)


def _qparams_of(tensor: Tensor, what: str) -> QParams:
    qparams = tensor._qparams
    if qparams is None:
        raise RuntimeError(f"{what} is only available on quantized tensors")
    return qparams


def _expect_scheme(qparams: QParams, per_channel: bool) -> None:
    if (qparams.axis is not None) != per_channel:
        condition = ("quantizer->qscheme() == kPerChannelAffine || quantizer->qscheme() == "
                     "kPerChannelAffineFloatQParams") if per_channel else "quantizer->qscheme() == kPerTensorAffine"
        raise RuntimeError(f"Expected {condition} to be true, but got false.  (Could this error message be "
                           "improved?  If so, please report an enhancement request to PyTorch.)")


def _dequantized_values(tensor: Tensor) -> np.ndarray:
    _dispatch.host_read("dequantize")
    qparams = tensor._qparams
    if qparams.axis is None:
        return _dequantize_array(tensor._data, qparams.scale, qparams.zero_point)
    # torch's per-channel kernel is scalar: float(q - zero_point) times the double scale, rounded to float32
    shape = _channel_shape(tensor.ndim, qparams.axis, tensor.shape[qparams.axis])
    shifted = tensor._data.astype(np.float32) - qparams.zero_point._data.reshape(shape).astype(np.float32)
    return (shifted.astype(np.float64) * qparams.scale._data.reshape(shape)).astype(np.float32)


@export
def dequantize(tensor: Tensor) -> Tensor:
    """torch.dequantize / Tensor.dequantize: the float32 values a quantized tensor stands for."""
    if tensor._qparams is None:
        return tensor  # torch returns a non-quantized tensor unchanged
    return Tensor._make(_dequantized_values(tensor), dt.float32)


@export
def int_repr(self: Tensor) -> Tensor:
    """Tensor.int_repr: the integer representation, as uint8/int8/int32."""
    _qparams_of(self, "int_repr")
    integer_type = {"qint8": dt.int8, "quint8": dt.uint8, "qint32": dt.int32}[self._dtype.name]
    return Tensor._make(self._data.copy(order="K"), integer_type)  # in the tensor's layout, as torch


@export
def q_scale(self: Tensor) -> float:
    """Tensor.q_scale: the scale of a per-tensor quantized tensor."""
    qparams = _qparams_of(self, "q_scale")
    _expect_scheme(qparams, per_channel=False)
    return qparams.scale


@export
def q_zero_point(self: Tensor) -> int:
    """Tensor.q_zero_point: the zero point of a per-tensor quantized tensor."""
    qparams = _qparams_of(self, "q_zero_point")
    _expect_scheme(qparams, per_channel=False)
    return qparams.zero_point


@export
def q_per_channel_scales(self: Tensor) -> Tensor:
    """Tensor.q_per_channel_scales: the float64 scales of a per-channel quantized tensor."""
    qparams = _qparams_of(self, "q_per_channel_scales")
    _expect_scheme(qparams, per_channel=True)
    return Tensor._make(qparams.scale._data.copy(), dt.float64)


@export
def q_per_channel_zero_points(self: Tensor) -> Tensor:
    """Tensor.q_per_channel_zero_points: the int64 zero points of a per-channel quantized tensor."""
    qparams = _qparams_of(self, "q_per_channel_zero_points")
    _expect_scheme(qparams, per_channel=True)
    return Tensor._make(qparams.zero_point._data.copy(), dt.int64)


@export
def q_per_channel_axis(self: Tensor) -> int:
    """Tensor.q_per_channel_axis: the quantized axis of a per-channel quantized tensor."""
    qparams = _qparams_of(self, "q_per_channel_axis")
    _expect_scheme(qparams, per_channel=True)
    return qparams.axis


@export(function=False, name="qscheme")
def _qscheme_method(self: Tensor) -> qscheme:
    """Tensor.qscheme: the quantization scheme."""
    return _qparams_of(self, "qscheme").scheme


def quantized_repr(tensor: Tensor) -> str:
    """torch's repr of a quantized tensor: the dequantized values, then size, dtype and the parameters."""
    import math

    from .._tensor_str import _add_suffixes, _tensor_str

    prefix = "tensor("
    indent = len(prefix)
    shape = tuple(tensor.shape)
    if math.prod(shape) == 0:
        body = "[]"
    else:
        body = _tensor_str(_dequantized_values(tensor), indent, "float32")
    qparams = tensor._qparams
    suffixes = [f"size={shape}", f"dtype=ember.{tensor._dtype.name}", f"quantization_scheme={qparams.scheme!r}"]
    if qparams.axis is None:
        suffixes += [f"scale={qparams.scale!r}", f"zero_point={qparams.zero_point}"]
    else:
        suffixes += [f"scale={qparams.scale!r}", f"zero_point={qparams.zero_point!r}", f"axis={qparams.axis}"]
    return _add_suffixes(prefix + body, suffixes, indent)


# NOTE [ Dynamic quantized linear ]
# torch's fbgemm linear_dynamic (x86): the activation's min and max over the whole input, widened to include
# 0, give a quint8 scale and zero point by ChooseQuantizationParams (double arithmetic, range [0, 127] with
# reduce_range, a 0.1 fallback for a zero range, a 6.1e-5 floor); the activation is quantized like
# quantize_per_tensor; the product accumulates exactly in integers, sum (qx - zx)(qw - zw); the result is
# fma(float32(acc), float32(x_scale * w_scale), bias): one rounding, emulated in float64 (the product is
# exact there; the float64 sum can round twice, so in rare ties an output may differ from torch's by 1 ulp).
_SMALL_SCALE_THRESHOLD = np.float32(6.1e-5)


def choose_qparams(low, high, qmin: int, qmax: int, preserve_sparsity: bool = False, double_scale: bool = False
                   ) -> tuple:
    """fbgemm's ChooseQuantizationParams (quant_utils.h) on float32 min/max, in its C++ types:
    (scale as float32, zero point as int).  ATen's copy (QuantUtils.h, quantize_per_tensor_dynamic's) is the
    same arithmetic but keeps the scale a double: `double_scale`."""
    f32 = np.float32
    low, high = f32(low), f32(high)
    if not low <= high:
        raise RuntimeError(f"In ChooseQuantizationParams, min should be less than or equal to max. min: {low} "
                           f"max: {high}")
    with np.errstate(all="ignore"):
        if low < 0 and high > 0 and preserve_sparsity:
            symmetric_qmin = -((qmax - qmin) // 2 + 1)
            symmetric_qmax = (qmax - qmin) // 2
            max_scale = max(abs(low / f32(symmetric_qmin)), abs(high / f32(symmetric_qmax)))  # float
            low = f32(float(max_scale) * symmetric_qmin)
            high = f32(float(max_scale) * symmetric_qmax)
        low = min(low, f32(0.0))
        high = max(high, f32(0.0))
        if not qmin < qmax:
            raise RuntimeError("In ChooseQuantizationParams, qmin should be less than qmax")
        scale = (float(high) - float(low)) / (qmax - qmin)  # double
        if f32(scale) == 0.0 or np.isinf(f32(1.0) / f32(scale)):
            scale = 0.1
        if scale < float(_SMALL_SCALE_THRESHOLD):
            original = f32(scale)
            scale = float(_SMALL_SCALE_THRESHOLD)
            if low == 0.0:
                high = f32(_SMALL_SCALE_THRESHOLD * f32(qmax - qmin))
            elif high == 0.0:
                low = f32(-_SMALL_SCALE_THRESHOLD * f32(qmax - qmin))
            else:
                amplifier = _SMALL_SCALE_THRESHOLD / original
                low = f32(low * amplifier)
                high = f32(high * amplifier)
        from_min = qmin - float(low) / scale
        from_max = qmax - float(high) / scale
        from_min_error = abs(qmin) - abs(float(low) / scale)
        from_max_error = abs(qmax) - abs(float(high) / scale)
        initial = from_min if from_min_error < from_max_error else from_max
        if low < 0 and high > 0 and preserve_sparsity:
            initial = (qmin + qmax) / 2
    if initial < qmin:
        zero_point = qmin
    elif initial > qmax:
        zero_point = qmax
    else:
        zero_point = int(np.rint(initial))
    return (scale if double_scale else f32(scale)), zero_point


def choose_quantization_params(low: float, high: float, qmin: int, qmax: int,
                               reduce_range: bool = False) -> tuple[float, int]:
    """choose_qparams for a dynamic quantized linear's activations (reduce_range halves the integer range):
    (scale as a Python float, zero_point)."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    scale, zero_point = choose_qparams(low, high, qmin, qmax)
    return float(scale), zero_point


@export(method=False)
def quantize_per_tensor_dynamic(input: Tensor, dtype: dt.dtype, reduce_range: bool) -> Tensor:
    """torch.quantize_per_tensor_dynamic: quantize_per_tensor with the scale and zero point ChooseQuantizationParams
    gives for the input's min and max (float16: a plain cast), as torch's x86 engine (qnnpack ignores
    reduce_range; ember has no qnnpack engine)."""
    if dtype not in (dt.qint8, dt.quint8, dt.float16):
        raise RuntimeError(f"dtype {SCALAR_NAMES.get(dtype.name, dtype.name)}not supported")  # (torch's spacing)
    if dtype is dt.float16:
        return input.contiguous().to(dt.float16)
    low, high = float(np.float32(input.min().item())), float(np.float32(input.max().item()))
    qmin, qmax = (-128, 127) if dtype is dt.qint8 else (0, 255)
    if reduce_range:
        qmin, qmax = int(qmin / 2), int(qmax / 2)  # (C++'s division truncates)
    scale, zero_point = choose_qparams(low, high, qmin, qmax, double_scale=True)
    return quantize_per_tensor(input, scale, zero_point, dtype)


def _linear_dynamic_impl(xp, values, weight_integers, bias=None, *, weight_scale, weight_zero,
                         reduce_range: bool = True):
    """The arithmetic of NOTE [ Dynamic quantized linear ] on arrays: float32 `values` (..., in), the weight's
    integers (out, in) with its float32 scale(s) and zero point(s), an optional bias (out,)."""
    if values.size:
        scale, zero_point = choose_quantization_params(float(values.min()), float(values.max()), 0, 255,
                                                       reduce_range)
    else:
        scale, zero_point = choose_quantization_params(0.0, 0.0, 0, 255, reduce_range)
    # integers held in float64 so the product runs in BLAS: every partial sum of |qx - zx| <= 255 times
    # |qw - zw| <= 255 stays below 2**53 for any in_features under ~1e11, so the sums are the exact integers
    quantized = _quantize_array(values, scale, zero_point, dt.quint8).astype(np.float64) - zero_point
    weight_integers = weight_integers.astype(np.float64) - np.asarray(weight_zero, dtype=np.float64).reshape(-1, 1)
    accumulated = (quantized @ weight_integers.T).astype(np.int32)  # fbgemm accumulates in int32
    multiplier = (np.float32(scale) * weight_scale).astype(np.float32)
    # fbgemm's requantization is one fused multiply-add, float32(acc) * multiplier + bias with one rounding;
    # in float64 the product is exact (24-bit by 24-bit mantissas), so only the sum rounds before float32
    out = accumulated.astype(np.float32).astype(np.float64) * multiplier.astype(np.float64)
    if bias is not None:
        out = out + bias.astype(np.float32).astype(np.float64)
    return out.astype(np.float32)


def _linear_dynamic_kernel(op, args, params) -> Tensor:
    """The QuantizedCPU kernel (NOTE [ Quantized dtypes ] in ember/_dtype.py): the weight's integers and
    quantization parameters are read from the weight tensor at each call (a compiled replay included)."""
    input, weight, bias = args
    if input._dtype is not dt.float32:
        raise RuntimeError(f"expected float32 input for a dynamic quantized linear, got {input._dtype}")
    if isinstance(bias, Tensor) and bias._dtype.category < 0:
        raise RuntimeError("a dynamic quantized linear expects a float bias")
    qparams = weight._qparams
    if qparams.axis is None:
        weight_scale = np.float32(qparams.scale)
        weight_zero = qparams.zero_point
    else:
        weight_scale = qparams.scale._data.astype(np.float32)
        weight_zero = qparams.zero_point._data
    out = _linear_dynamic_impl(np, input._data, weight._data, None if bias is None else bias._data,
                               weight_scale=weight_scale, weight_zero=weight_zero, **params)
    return Tensor._make(out, dt.float32)


# quantized::linear_dynamic: the float input and bias and the quantized weight are its operands, so that
# ember.compile records one node whose replay reads the weight's current integers and parameters (the dispatch
# routes it to the kernel through the quantized weight; no autograd, as torch records no gradient for it)
_LINEAR_DYNAMIC = _dispatch.OpDef("linear_dynamic", _linear_dynamic_impl,
                                  dtype_rule=lambda args, params: (None, dt.float32), upcast_half=False)
_LINEAR_DYNAMIC.quantized = _linear_dynamic_kernel
_LINEAR_DYNAMIC.quantized_capture = True


def linear_dynamic(input: Tensor, weight: Tensor, bias: Tensor | None, reduce_range: bool = True) -> Tensor:
    """torch.ops.quantized.linear_dynamic on x86: input float32 (..., in), weight quantized qint8 (out, in)."""
    if input._dtype is not dt.float32:
        raise RuntimeError(f"expected float32 input for a dynamic quantized linear, got {input._dtype}")
    if not isinstance(weight, Tensor) or weight._dtype.category >= 0 or weight._qparams is None:
        raise RuntimeError("a dynamic quantized linear expects a quantized weight")
    return _dispatch.call(_LINEAR_DYNAMIC, (input, weight, bias), {"reduce_range": bool(reduce_range)})
