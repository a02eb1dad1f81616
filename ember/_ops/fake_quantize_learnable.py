"""torch._fake_quantize_learnable_per_tensor_affine / _per_channel_affine: fake quantization whose scale and
zero_point are learned too (LSQ, "Learned Step Size Quantization", and its zero-point extension).

The forward is the plain fake quantization (ember/_ops/fake_quantize.py) with the zero point rounded from its
float tensor.  The gradients are torch's (FakeQuantPerTensorAffine.cpp, FakeQuantPerChannelAffine.cpp and the
fake_quantize_learnable_*_grad_kernel_cpu kernels), elementwise in float32 and then summed:

    d input      = dY where the rounded value Xq lies in [quant_min, quant_max], else 0
    d scale      = dY * (Xfq - X) / scale inside, dY * (quant_min - zero_point) below, dY * (quant_max -
                   zero_point) above (times grad_factor)
    d zero_point = 0 inside, -dY * scale outside (times grad_factor)

Like torch's, the gradient is not differentiable again (its kernel has no derivative).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, OpDef, call
from .._tensor import Tensor
from ._api import export
from .fake_quantize import _check_range, _per_channel_impl, _per_tensor_impl, _x86_int64


def _grad_kernel(xp, x, dy, scale, zero_point, quant_min, quant_max, grad_factor):
    """fake_quantize_learnable_{tensor,channel}_grad_kernel_cpu: (dX, dScale, dZeroPoint) per element, float32.

    `scale` and `zero_point` broadcast against x (0-d for per tensor, shaped along the axis for per channel);
    the per-tensor kernel's zero point is an int64 that C++ converts to float where it meets a float, the same
    value as the float32 zero point passed here."""
    f32 = np.float32
    x, dy = x.astype(f32), dy.astype(f32)
    scale, zero_point = scale.astype(f32), zero_point.astype(f32)
    factor = f32(grad_factor)
    with np.errstate(all="ignore"):
        inv_scale = f32(1.0) / scale
        xqi = _x86_int64(xp.rint(zero_point + x * inv_scale), xp)
        inside = (xqi >= quant_min) & (xqi <= quant_max)
        dx = dy * inside.astype(f32)
        xfqi = (xp.clip(xqi, quant_min, quant_max).astype(f32) - zero_point) * scale
        below = xqi < quant_min
        outside_scale = xp.where(below, dy * (f32(quant_min) - zero_point), dy * (f32(quant_max) - zero_point))
        dscale = xp.where(inside, dy * (xfqi - x) * inv_scale * factor, outside_scale * factor)
        dzero = xp.where(inside, f32(0.0), dy * f32(-1.0) * scale * factor)
    shape = np.broadcast_shapes(x.shape, dy.shape)
    return tuple(xp.ascontiguousarray(xp.broadcast_to(each, shape)) for each in (dx, dscale, dzero))


_GRAD_KERNEL = OpDef("_fake_quantize_learnable_grad_kernel", _grad_kernel, None,
                     dtype_rule=lambda args, params: (None, (dt.float32, dt.float32, dt.float32)),
                     meta=lambda args, params: (tuple(args[0].shape),) * 3, outputs=3, upcast_half=False)


def _require_float(**tensors) -> None:
    for name, tensor in tensors.items():
        if tensor._dtype is not dt.float32:
            raise RuntimeError(f"Expected {name}.scalar_type() == ScalarType::Float to be true, but got false.")


def _first_value(tensor: Tensor) -> float:
    """scale[0].item<float>(): the first element of a 1-D (or higher) tensor, as a float32."""
    if tensor.ndim == 0:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    return float(np.float32(tensor.detach()[0].item()))


def _zero_point_from_tensor(zero_point: Tensor, quant_min: int, quant_max: int, forward: bool) -> int:
    """_get_zero_point_from_tensor: nearbyint in the forward, +0.5 then truncation in the backward, clamped."""
    value = np.float32(zero_point.detach()[0].item()) if zero_point.ndim else np.float32(zero_point.item())
    value = np.rint(value) if forward else value + np.float32(0.5)
    clamped = min(max(value, np.float32(quant_min)), np.float32(quant_max))
    return int(clamped)


# ---------------------------------------------------------------- per tensor


def _per_tensor_forward(xp, a, scale, zero_point, quant_min, quant_max, grad_factor):
    scale_value = float(np.float32(scale.reshape(-1)[0]))
    zero = np.float32(zero_point.reshape(-1)[0])
    zero = int(min(max(np.rint(zero), np.float32(quant_min)), np.float32(quant_max)))
    return _per_tensor_impl(xp, a, scale_value, zero, quant_min, quant_max)[0]


def _per_tensor_backward(ctx, g):
    x, scale, zero_point = ctx.inputs
    params = ctx.params
    quant_min, quant_max = params["quant_min"], params["quant_max"]
    zero = _zero_point_from_tensor(zero_point, quant_min, quant_max, forward=False)
    _require_float(dY=g, X=x, scale=scale, zero_point=zero_point)
    _check_learnable_range(quant_min, quant_max, zero)
    if x.numel() == 0:
        return x, scale, zero_point
    scale_value = scale.new_tensor(_first_value(scale))
    zero_value = scale.new_tensor(float(zero))
    dx, dscale, dzero = call(_GRAD_KERNEL, (x.detach(), g.detach(), scale_value, zero_value), params)
    return dx, dscale.sum().unsqueeze(0), dzero.sum().unsqueeze(0)


def _check_learnable_range(quant_min: int, quant_max: int, zero: int | None) -> None:
    if not (quant_min <= 0 and quant_max >= 0):
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`, and the quantization "
                           "range should include 0.")
    if zero is not None and not quant_min <= zero <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


_LEARNABLE_PER_TENSOR = OpDef("_fake_quantize_learnable_per_tensor_affine", _per_tensor_forward,
                              _per_tensor_backward, dtype_rule=lambda args, params: (None, args[0]._dtype),
                              meta=lambda args, params: tuple(args[0].shape), saves=SAVE_INPUTS, upcast_half=False,
                              grad_name="FakeQuantizeLearnablePerTensorAffineBackward0")


@export(method=False)
def _fake_quantize_learnable_per_tensor_affine(input: Tensor, scale: Tensor, zero_point: Tensor, quant_min: int,
                                               quant_max: int, grad_factor: float = 1.0) -> Tensor:
    """Fake quantization with a learnable scale and (float) zero point, one-element tensors; the zero point
    is rounded and clamped to [quant_min, quant_max] in the forward.  See the module docstring for gradients."""
    _check_range(quant_min, quant_max)
    zero = _zero_point_from_tensor(zero_point, quant_min, quant_max, forward=True)
    if not quant_min <= zero <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    _first_value(scale)
    params = {"quant_min": int(quant_min), "quant_max": int(quant_max), "grad_factor": float(grad_factor)}
    return call(_LEARNABLE_PER_TENSOR, (input, scale, zero_point), params)


# ---------------------------------------------------------------- per channel


def _rounded_zero_points(zero_point: np.ndarray, quant_min: int, quant_max: int, xp) -> np.ndarray:
    """_get_rounded_zero_point: zero_point.round().clamp_(quant_min, quant_max), in zero_point's dtype."""
    return xp.clip(xp.rint(zero_point), quant_min, quant_max).astype(zero_point.dtype)


def _per_channel_forward(xp, a, scale, zero_point, axis, quant_min, quant_max, grad_factor):
    rounded = _rounded_zero_points(zero_point, quant_min, quant_max, xp).astype(np.int32)
    return _per_channel_impl(xp, a, scale, rounded, axis, quant_min, quant_max)[0]


def _per_channel_backward(ctx, g):
    x, scale, zero_point = ctx.inputs
    params = ctx.params
    axis, quant_min, quant_max = params["axis"], params["quant_min"], params["quant_max"]
    if x._dtype is dt.bfloat16:
        g, x, scale, zero_point = g.float(), x.float(), scale.float(), zero_point.float()
    _require_float(dY=g, X=x, scale=scale, zero_point=zero_point)
    if not (quant_min <= 0 and quant_max >= 0):
        raise RuntimeError("Expecting `quant_min` <= 0 and `quant_max` >= 0")
    if x.numel() == 0:
        return x, scale, zero_point
    rounded = zero_point.detach().round().clamp(quant_min, quant_max)
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    kernel_params = {"quant_min": quant_min, "quant_max": quant_max, "grad_factor": params["grad_factor"]}
    dx, dscale, dzero = call(_GRAD_KERNEL, (x.detach(), g.detach(), scale.detach().reshape(shape),
                                            rounded.reshape(shape)), kernel_params)
    others = [d for d in range(x.ndim) if d != axis]
    if others:
        dscale, dzero = dscale.sum(others), dzero.sum(others)
    return dx, dscale, dzero


_LEARNABLE_PER_CHANNEL = OpDef("_fake_quantize_learnable_per_channel_affine", _per_channel_forward,
                               _per_channel_backward, dtype_rule=lambda args, params: (None, args[0]._dtype),
                               meta=lambda args, params: tuple(args[0].shape), saves=SAVE_INPUTS,
                               upcast_half=False, grad_name="FakeQuantizeLearnablePerChannelAffineBackward0")


@export(method=False)
def _fake_quantize_learnable_per_channel_affine(input: Tensor, scale: Tensor, zero_point: Tensor, axis: int,
                                                quant_min: int, quant_max: int,
                                                grad_factor: float = 1.0) -> Tensor:
    """Per-channel fake quantization with learnable scales and (float) zero points along `axis`."""
    from .fake_quantize import fake_quantize_per_channel_affine_cachemask

    rounded = zero_point.detach().round().clamp(quant_min, quant_max).to(dt.int32)
    fake_quantize_per_channel_affine_cachemask(input.detach(), scale.detach(), rounded, axis, quant_min,
                                               quant_max)  # torch's checks, in its order
    params = {"axis": int(axis), "quant_min": int(quant_min), "quant_max": int(quant_max),
              "grad_factor": float(grad_factor)}
    return call(_LEARNABLE_PER_CHANNEL, (input, scale, zero_point), params)
