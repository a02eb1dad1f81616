"""torch.ao.nn.quantized.Conv2d: a 2-d convolution on quint8 tensors with a qint8 weight and a float bias.

The numerics are torch's x86 kernels (NOTE [ Static quantized requantization ] in
ember/_ops/quantized_static.py).  Only padding_mode='zeros' exists, as in torch's quantized conv on x86.
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops.quantized_static import quantized_conv2d
from ember._tensor import Tensor
from ember.nn.utils.fusion import fuse_conv_bn_weights

from .linear import quantize_weight
from .utils import OutputQParams


def _pair(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


class Conv2d(OutputQParams):
    """Quantized 2-d convolution: quint8 (N, C, H, W) -> quint8 with the module's scale and zero_point."""

    _version = 3
    _FLOAT_MODULE = nn.Conv2d

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"ember's quantized Conv2d supports padding_mode='zeros' only, got "
                                      f"{padding_mode!r}")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = _pair(padding)
        self.dilation = _pair(dilation)
        self.transposed = False
        self.output_padding = (0, 0)
        self.groups = groups
        self.padding_mode = padding_mode
        weight = torch.quantize_per_tensor(
            torch.zeros(out_channels, in_channels // groups, *self.kernel_size), 1.0, 0, torch.qint8)
        self.set_weight_bias(weight, torch.zeros(out_channels) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedConv2d"

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias() is None:
            text += ", bias=False"
        return text

    def forward(self, input: Tensor) -> Tensor:
        return quantized_conv2d(input, self._weight, self._bias, self.stride, self.padding, self.dilation,
                                self.groups, self.scale, self.zero_point)

    def weight(self) -> Tensor:
        """The quantized qint8 weight."""
        return self._weight

    def bias(self) -> Tensor | None:
        """The float bias."""
        return self._bias

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        """Replace the quantized weight (qint8, per tensor or per output channel) and the float bias."""
        if not weight.is_quantized or weight.dtype != torch.qint8:
            raise RuntimeError("quantized Conv2d expects a quantized qint8 weight")
        self._weight = weight
        self._bias = None if bias is None else bias.detach()

    def _save_weights(self, destination: dict, prefix: str) -> None:
        destination[prefix + "weight"] = self._weight
        destination[prefix + "bias"] = self._bias

    def _load_weights(self, state_dict: dict, prefix: str) -> None:
        self.set_weight_bias(state_dict.pop(prefix + "weight"), state_dict.pop(prefix + "bias"))

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Conv2d:
        """A float nn.Conv2d observed by `prepare` (weight by its qconfig's weight observer) or a QAT conv (by
        its `weight_fake_quant`; a ConvBn2d's bn folded into the weight first); output qparams from its
        activation observer or fake quant (torch's _ConvNd.from_float and get_qconv)."""
        if hasattr(mod, "weight_fake_quant"):  # a QAT module
            from ember.ao.nn.intrinsic import qat as nniqat

            if type(mod) is nniqat.ConvBn2d:  # the bn folded into the weight and bias (running statistics)
                mod.weight, mod.bias = fuse_conv_bn_weights(mod.weight, mod.bias, mod.bn.running_mean,
                                                            mod.bn.running_var, mod.bn.eps, mod.bn.weight,
                                                            mod.bn.bias)
            if not hasattr(mod, "activation_post_process"):
                raise AssertionError("Input QAT module must have observer attached")
            weight_post_process = mod.weight_fake_quant
        else:
            if type(mod) is not cls._FLOAT_MODULE:
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined.")
            weight_post_process = mod.qconfig.weight()
        activation_post_process = getattr(mod, "activation_post_process", None)
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        if weight_post_process.dtype != torch.qint8:
            raise AssertionError("Weight observer must have a dtype of qint8")
        qweight = quantize_weight(mod.weight.detach().float(), weight_post_process)
        qconv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride, mod.padding, mod.dilation,
                    mod.groups, mod.bias is not None, mod.padding_mode)
        qconv.set_weight_bias(qweight, mod.bias)
        if activation_post_process is None or activation_post_process.dtype == torch.float:
            return qconv
        act_scale, act_zero_point = activation_post_process.calculate_qparams()
        qconv.scale = float(act_scale)
        qconv.zero_point = int(act_zero_point)
        return qconv
