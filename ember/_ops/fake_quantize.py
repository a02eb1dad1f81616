"""Fake quantization: torch.fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine and the learnable
(LSQ) variants torch._fake_quantize_learnable_per_tensor_affine / _per_channel_affine.

Fake quantization rounds a float tensor to the grid of a quantized dtype and maps it straight back to floats,
so quantization-aware training sees the quantization error while every tensor stays a float tensor.  The
forward follows ATen's CPU kernels (QuantizedOpKernels.cpp, FakeQuantPerTensorAffine.cpp,
FakeQuantPerChannelAffine.cpp) operation by operation, in their C++ types, so the values are torch's bit for bit:
see NOTE [ Fake quantize arithmetic ].  The gradient of the plain ops is the straight-through estimator: the
incoming gradient where the rounded value fell inside [quant_min, quant_max], zero elsewhere (torch keeps the
mask from the forward, `*_cachemask`).  The learnable ops also give gradients for scale and zero_point, as
torch's fake_quantize_learnable_*_grad_kernel_cpu computes them.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ._api import export, not_implemented

# NOTE [ Fake quantize arithmetic ]
# ATen computes, per element, in these C++ types (scale rounded to float, inv_scale = 1.0f / scale):
#   per tensor (_fake_quantize_tensor_helper):
#     qval_f = zero_point + nearbyint(x * inv_scale)      float for half/bfloat16/float input, double for double
#     qval   = int64(fmin(fmax(qval_f, qmin), qmax))      fmax/fmin of NaN give the other operand: NaN -> qmin
#     out    = float(qval - zero_point) * scale           a float product even for double input
#     mask   = qmin <= qval_f <= qmax                     qmin, qmax converted to qval_f's type
#   per channel, int32 zero points (_fake_quant_per_channel_cachemask_cpu_helper):
#     qval   = int64(zero_point + nearbyint(x * inv_scale))   an out-of-range or NaN value converts to INT64_MIN
#                                                             (x86's cvttss2si / cvttsd2si)
#     out    = double(clamp(qval) - zero_point) * scale   a double product, rounded to the input's dtype
#   per channel, float / half zero points:
#     qval   = lrintf(zero_point + x * inv_scale)          rounded in float (LONG_MIN when out of range)
#     out    = (double(clamp(qval)) - zero_point) * scale
# nearbyint and lrintf round half to even (the default rounding mode), as numpy's rint does.

_INT64_MIN = -(2**63)


def _x86_int64(values: np.ndarray, xp) -> np.ndarray:
    """static_cast<int64_t>(values) as x86 computes it: NaN and values out of int64's range give INT64_MIN."""
    fits = xp.isfinite(values) & (xp.abs(values) < 2.0**63)
    return xp.where(fits, values, 0).astype(xp.int64) + xp.where(fits, 0, _INT64_MIN).astype(xp.int64)


def _working_type(array) -> type:
    """The C++ type of `x * inv_scale`: float for half, bfloat16 and float inputs, double for double."""
    return np.float64 if array.dtype == np.float64 else np.float32


def _per_tensor_impl(xp, a, scale, zero_point, quant_min, quant_max, enabled=True):
    if not enabled:
        return a.copy(), xp.ones(a.shape, dtype=bool)
    work = _working_type(a)
    scale32 = np.float32(scale)
    with np.errstate(all="ignore"):
        inv_scale = np.float32(1.0) / scale32
        qval_f = work(zero_point) + xp.rint(a.astype(work) * work(inv_scale))
        clamped = xp.fmin(xp.fmax(qval_f.astype(np.float64), float(quant_min)), float(quant_max))
        qval = clamped.astype(np.int64)
        out = (qval - zero_point).astype(np.float32) * scale32
    mask = (work(quant_min) <= qval_f) & (qval_f <= work(quant_max))
    return out.astype(a.dtype), mask


def _per_channel_impl(xp, a, scale, zero_point, axis, quant_min, quant_max):
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    scale32 = scale.astype(np.float32).reshape(shape)
    work = _working_type(a)
    with np.errstate(all="ignore"):
        inv_scale = np.float32(1.0) / scale32
        if zero_point.dtype.kind == "f":  # lrintf(zero_point + x * inv_scale), in float
            zero = zero_point.astype(np.float32).reshape(shape)
            rounded = xp.rint((zero + (a.astype(work) * inv_scale.astype(work))).astype(np.float32))
            qval = _x86_int64(rounded, xp)
            zero_double = zero.astype(np.float64)
        else:
            zero = zero_point.astype(np.int64).reshape(shape)
            qval = _x86_int64(zero.astype(work) + xp.rint(a.astype(work) * inv_scale.astype(work)), xp)
            zero_double = zero.astype(np.float64)
        clamped = xp.clip(qval, quant_min, quant_max).astype(np.float64)
        out = (clamped - zero_double) * scale32.astype(np.float64)
    mask = (quant_min <= qval) & (qval <= quant_max)
    return out.astype(a.dtype), mask


def _mask_backward(ctx, grads):
    """fake_quantize_per_*_affine_cachemask_backward: dY * mask."""
    return (grads[0] * ctx.result[1],)


def _float_only(kernel: str):
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category != 2:
            raise not_implemented(kernel, dtype)
        return None, (dtype, dt.bool_)

    return rule


def _two_shapes(args, params):
    return tuple(args[0].shape), tuple(args[0].shape)


_PER_TENSOR = OpDef("fake_quantize_per_tensor_affine_cachemask", _per_tensor_impl, _mask_backward,
                    dtype_rule=_float_only("fake_quantize_tensor_cachemask_kernel_type_handling"),
                    meta=_two_shapes, saves=SAVE_RESULT, outputs=2, differentiable_outputs=(True, False),
                    upcast_half=False)
_PER_TENSOR_QPARAMS = OpDef("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams", _per_tensor_impl,
                            _mask_backward,
                            dtype_rule=_float_only("fake_quantize_tensor_cachemask_kernel_type_handling"),
                            meta=_two_shapes, saves=SAVE_RESULT, outputs=2, differentiable_outputs=(True, False),
                            upcast_half=False)


def _per_channel_call_impl(xp, a, scale, zero_point, axis, quant_min, quant_max):
    return _per_channel_impl(xp, a, scale, zero_point, axis, quant_min, quant_max)


_PER_CHANNEL = OpDef("fake_quantize_per_channel_affine_cachemask", _per_channel_call_impl, _mask_backward,
                     dtype_rule=_float_only("fake_quantize_channel_cachemask_cpu_type_handling"),
                     meta=_two_shapes, saves=SAVE_RESULT, outputs=2, differentiable_outputs=(True, False),
                     upcast_half=False)


# ---------------------------------------------------------------- argument checks


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _signature_error(name: str, args: tuple, expected: list) -> TypeError:
    """torch's 'received an invalid combination of arguments' TypeError."""
    got = ", ".join(type(a).__name__ if not isinstance(a, Tensor) else "Tensor" for a in args)
    lines = "\n".join(f" * ({each})" for each in expected)
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     f"{lines}\n")


def _check_range(quant_min: int, quant_max: int) -> None:
    if not quant_min <= quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")


def _item_of_one(tensor: Tensor):
    if tensor.numel() != 1:
        raise RuntimeError(f"a Tensor with {tensor.numel()} elements cannot be converted to Scalar")
    return tensor.reshape(()).item()


def _not_differentiable(name: str, **tensors) -> None:
    from .._autograd.grad_mode import state

    for argument, tensor in tensors.items():
        if state.enabled and tensor.requires_grad:
            raise RuntimeError(f"The function '{name}' is not differentiable with respect to argument '{argument}'. "
                               "This input cannot have requires_grad True.")


# ---------------------------------------------------------------- public functions


@export(method=False)
def fake_quantize_per_tensor_affine_cachemask(input: Tensor, scale: float, zero_point: int, quant_min: int,
                                              quant_max: int) -> tuple:
    """(fake-quantized input, mask): the mask marks the elements whose rounded value lies in
    [quant_min, quant_max], where the straight-through gradient passes."""
    _check_range(quant_min, quant_max)
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    params = {"scale": float(scale), "zero_point": int(zero_point), "quant_min": int(quant_min),
              "quant_max": int(quant_max)}
    return call(_PER_TENSOR, (input,), params)


@export(method=False)
def fake_quantize_per_tensor_affine(input: Tensor, scale, zero_point, quant_min: int, quant_max: int) -> Tensor:
    """Quantize `input` to the integer grid of `scale` and `zero_point` clamped to [quant_min, quant_max], and
    dequantize it straight back: ``(clamp(round(input / scale) + zero_point, quant_min, quant_max) - zero_point)
    * scale``, in input's dtype.  The gradient passes where the rounded value lies in [quant_min, quant_max].

    `scale` and `zero_point` are a float and an int, or two one-element tensors (read once, not
    differentiated; no zero_point range check, as in torch).
    """
    args = (input, scale, zero_point, quant_min, quant_max)
    if not isinstance(input, Tensor) or not _is_int(quant_min) or not _is_int(quant_max):
        raise _signature_error("fake_quantize_per_tensor_affine", args, _PER_TENSOR_SIGNATURES)
    if isinstance(scale, Tensor) and isinstance(zero_point, Tensor):
        name = "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams"
        _check_range(quant_min, quant_max)
        _not_differentiable(name, scale=scale, zero_point=zero_point)
        params = {"scale": float(_item_of_one(scale)), "zero_point": int(_item_of_one(zero_point)),
                  "quant_min": int(quant_min), "quant_max": int(quant_max)}
        return call(_PER_TENSOR_QPARAMS, (input,), params)[0]
    if isinstance(scale, (float, int, np.floating, np.integer)) and not isinstance(scale, bool) and \
            _is_int(zero_point):
        return fake_quantize_per_tensor_affine_cachemask(input, scale, zero_point, quant_min, quant_max)[0]
    raise _signature_error("fake_quantize_per_tensor_affine", args, _PER_TENSOR_SIGNATURES)


_PER_TENSOR_SIGNATURES = ["Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max",
                          "Tensor input, float scale, int zero_point, int quant_min, int quant_max"]


@export(method=False)
def fake_quantize_per_channel_affine_cachemask(input: Tensor, scale: Tensor, zero_point: Tensor, axis: int,
                                               quant_min: int, quant_max: int) -> tuple:
    """(fake-quantized input, mask), one (scale, zero_point) per slice of `input` along `axis`."""
    if scale._dtype not in (dt.float32, dt.bfloat16):
        raise RuntimeError(f"Scale must be Float or BFloat16, found {SCALAR_NAMES[scale._dtype.name]}")
    if zero_point._dtype not in (dt.int32, dt.float32, dt.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found {SCALAR_NAMES[zero_point._dtype.name]}")
    if scale.ndim != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.ndim != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale.numel() != input.shape[wrap_dim(axis, input.ndim)]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    _check_range(quant_min, quant_max)
    if zero_point._dtype is dt.int32 and zero_point.numel():
        low, high = int(zero_point.min()), int(zero_point.max())
        if low < quant_min or high > quant_max:
            raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if not 0 <= axis <= input.ndim:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    params = {"scale": scale.detach()._data, "zero_point": zero_point.detach()._data, "axis": int(axis),
              "quant_min": int(quant_min), "quant_max": int(quant_max)}
    return call(_PER_CHANNEL, (input,), params)


@export(method=False)
def fake_quantize_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor, axis: int, quant_min: int,
                                     quant_max: int) -> Tensor:
    """Fake-quantize each slice of `input` along `axis` with its own scale and zero point (1-D tensors as long as
    that dimension); see :func:`fake_quantize_per_tensor_affine`.  `scale` is float32 or bfloat16, `zero_point`
    int32 (or float32/float16: then added before rounding, as the affine quantizer with float zero points does).
    """
    _not_differentiable("fake_quantize_per_channel_affine_cachemask", scale=scale, zero_point=zero_point)
    return fake_quantize_per_channel_affine_cachemask(input, scale, zero_point, axis, quant_min, quant_max)[0]


from .fake_quantize_fused import fused_moving_avg_obs_fake_quant  # noqa: E402  (registers the fused op)
from .fake_quantize_learnable import (  # noqa: E402  (registers the learnable ops; they build on the above)
    _fake_quantize_learnable_per_channel_affine,
    _fake_quantize_learnable_per_tensor_affine,
)

__all__ = ["_fake_quantize_learnable_per_channel_affine", "_fake_quantize_learnable_per_tensor_affine",
           "fake_quantize_per_channel_affine", "fake_quantize_per_tensor_affine", "fused_moving_avg_obs_fake_quant"]
