"""Kernels of statically quantized modules: quantized linear and conv2d on quantized tensors.

These are torch's `quantized::linear`, `quantized::conv2d` and relu on QuantizedCPU with x86 (fbgemm / oneDNN)
numerics.  Like ember/_ops/quantized.py they read a quantized tensor's integers (`_data`) and parameters
(`_qparams`) directly: the dispatcher refuses ordinary ops on quantized tensors, as torch does, and these
functions are the quantized backend's kernels.  See NOTE [ Static quantized requantization ].
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .quantized import QParams, _make_quantized, per_tensor_affine
from .quantized_numerics import to_channels_last

# NOTE [ Static quantized requantization ]
# A static quantized linear or conv takes a quint8 input (scale s_x, zero point z_x), a qint8 weight with
# zero point 0 (per tensor s_w, or per output channel s_w[c]), a float32 bias and the output's (s_y, z_y):
#   acc   = sum (q_x - z_x) * q_w                         exact, in int32 (fbgemm / oneDNN accumulate in int32)
#   a     = float32(float32(s_x) * float32(s_w[c]))       "act_times_w_scale"
#   m     = float32(a / float32(s_y))                     the requantization multiplier
#   v     = float32(float32(acc) + float32(bias[c] / a))  the float bias is folded in before the multiply
#   q_y   = clamp(rint(float32(v * m)) + z_y, 0, 255)     rint is half to even; relu clamps below at z_y
# Every step is float32 as written (fbgemm's ReQuantizeOutput with a float bias).  Checked against torch 2.13
# on x86 (the default 'x86' engine, which runs these convs through oneDNN on AVX512-VNNI machines, and the
# 'fbgemm' and 'onednn' engines): on ~60k random outputs including exact-tie cases (power-of-two scales) every
# int_repr is equal; the other orders we tried (bias added after scaling, division by s_y instead of the
# multiplier) agreed there too, so the order above is fbgemm's documented one, not one singled out by data.
# tests/quantization/test_static.py asserts exact int_repr equality layer by layer.


def _per_tensor_quint8(input: Tensor, op_name: str) -> QParams:
    """The input's qparams, refusing what torch's quantized kernels refuse (float input, qint8, per channel)."""
    qparams = getattr(input, "_qparams", None)
    if qparams is None:
        raise NotImplementedError(
            f"Could not run '{op_name}' with arguments from the 'CPU' backend. This could be because the "
            "operator doesn't exist for this backend, or was omitted during the selective/custom build process "
            "(if using custom build).")
    if input._dtype is not dt.quint8:
        kind = {"qint8": "QInt8", "qint32": "QInt32"}.get(input._dtype.name, input._dtype.name)
        raise RuntimeError(f"Expected input data type QUInt8 but got {kind}")
    if qparams.axis is not None:
        raise RuntimeError(f"{op_name} expects a per-tensor quantized input")
    return qparams


def _weight_scales(weight: Tensor, channels: int) -> np.ndarray:
    """The weight's scale per output channel, as float32 (fbgemm keeps float scales)."""
    qparams = weight._qparams
    if qparams.axis is None:
        return np.full(channels, np.float32(qparams.scale), dtype=np.float32)
    return qparams.scale._data.astype(np.float32)


def _weight_integers(weight: Tensor) -> np.ndarray:
    """q_w - z_w as float64 (exact; zero for the symmetric weights the observers produce)."""
    qparams = weight._qparams
    integers = weight._data.astype(np.float64)
    if qparams.axis is None:
        return integers - qparams.zero_point
    shape = [1] * weight.ndim
    shape[qparams.axis] = -1
    return integers - qparams.zero_point._data.astype(np.float64).reshape(shape)


def requantize(accumulated: np.ndarray, input_scale: float, weight_scales: np.ndarray, bias: Tensor | None,
               scale: float, zero_point: int, channel_axis: int, relu: bool = False) -> np.ndarray:
    """int32 accumulators -> quint8 integers, NOTE [ Static quantized requantization ]."""
    shape = [1] * accumulated.ndim
    shape[channel_axis] = -1
    act_times_w_scale = (np.float32(input_scale) * weight_scales).astype(np.float32).reshape(shape)
    multiplier = (act_times_w_scale / np.float32(scale)).astype(np.float32)
    values = accumulated.astype(np.int32).astype(np.float32)
    if bias is not None:
        folded = (bias._data.astype(np.float32).reshape(shape) / act_times_w_scale).astype(np.float32)
        values = (values + folded).astype(np.float32)
    values = (values * multiplier).astype(np.float32)
    rounded = np.rint(values).astype(np.float64) + zero_point
    low = zero_point if relu else 0
    return np.clip(rounded, low, 255).astype(np.uint8)


def _quint8_result(integers: np.ndarray, scale: float, zero_point: int) -> Tensor:
    return _make_quantized(integers, dt.quint8, QParams(per_tensor_affine, float(scale), int(zero_point)))


def quantized_linear(input: Tensor, weight: Tensor, bias: Tensor | None, scale: float, zero_point: int,
                     relu: bool = False) -> Tensor:
    """torch.ops.quantized.linear: quint8 input (..., in), qint8 weight (out, in), float bias -> quint8."""
    qparams = _per_tensor_quint8(input, "quantized::linear")
    if input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"The number of rows in the packed weight ({weight.shape[1]}) must match the number "
                           f"of columns in the input ({input.shape[-1]})")
    shifted = input._data.astype(np.float64) - qparams.zero_point
    # |q_x - z_x| <= 255 and |q_w| <= 128: float64 BLAS sums are exact integers below ~2.7e11 input features
    accumulated = shifted @ _weight_integers(weight).T
    integers = requantize(accumulated, qparams.scale, _weight_scales(weight, weight.shape[0]), bias, scale,
                          zero_point, accumulated.ndim - 1, relu)
    return _quint8_result(integers, scale, zero_point)


def _windows(shifted: np.ndarray, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> np.ndarray:
    """(N, C, H, W) -> (N, C, kh, kw, H_out, W_out) patches of the zero-padded shifted input."""
    padded = np.pad(shifted, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    batch, channels, height, width = padded.shape
    out_h = (height - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    out_w = (width - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    if out_h <= 0 or out_w <= 0:
        raise RuntimeError(f"quantized::conv2d: the output size is too small ({out_h}x{out_w})")
    s = padded.strides
    return np.lib.stride_tricks.as_strided(
        padded, (batch, channels, kernel[0], kernel[1], out_h, out_w),
        (s[0], s[1], s[2] * dilation[0], s[3] * dilation[1], s[2] * stride[0], s[3] * stride[1]),
        writeable=False)


def quantized_conv2d(input: Tensor, weight: Tensor, bias: Tensor | None, stride: tuple, padding: tuple,
                     dilation: tuple, groups: int, scale: float, zero_point: int, relu: bool = False) -> Tensor:
    """torch.ops.quantized.conv2d: quint8 (N, C, H, W) input, qint8 (O, C/groups, kh, kw) weight -> quint8.

    Zero padding pads with the input's zero point (a real 0), so the shifted integers pad with 0."""
    qparams = _per_tensor_quint8(input, "quantized::conv2d.new")
    if input.ndim != 4:
        raise RuntimeError(f"quantized::conv2d (qconv): Expected 4-dimensional input, got {input.ndim}")
    out_channels, group_channels = weight.shape[0], weight.shape[1]
    if input.shape[1] != group_channels * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {tuple(weight.shape)}, expected input"
                           f"{tuple(input.shape)} to have {group_channels * groups} channels, but got "
                           f"{input.shape[1]} channels instead")
    shifted = input._data.astype(np.float64) - qparams.zero_point
    patches = _windows(shifted, tuple(weight.shape[2:]), stride, padding, dilation)
    kernel = _weight_integers(weight)
    per_group = out_channels // groups
    outputs = []
    for group in range(groups):
        group_patches = patches[:, group * group_channels:(group + 1) * group_channels]
        group_kernel = kernel[group * per_group:(group + 1) * per_group]
        # exact integer sums in float64, as in quantized_linear
        outputs.append(np.einsum("ncijhw,ocij->nohw", group_patches, group_kernel, optimize=True))
    accumulated = np.concatenate(outputs, axis=1)
    integers = requantize(accumulated, qparams.scale, _weight_scales(weight, out_channels), bias, scale,
                          zero_point, 1, relu)
    # stored channels-last, as torch's quantized convolutions return it: the pools and adds that follow pick
    # their channels-last kernels, which round differently (NOTE [ QuantizedCPU vector and scalar paths ])
    return _quint8_result(to_channels_last(integers), scale, zero_point)
