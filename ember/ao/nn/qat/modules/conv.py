"""torch.ao.nn.qat.Conv1d / Conv2d / Conv3d: convolutions whose weight passes through a fake-quantize module
(`weight_fake_quant`) in every forward, for quantization-aware training."""

from __future__ import annotations

from ember import nn
from ember.nn.modules.conv import _ConvNd as _FloatConvNd

from ...intrinsic import _FusedModule


class _ConvNd(_FloatConvNd):
    """What the QAT convolutions share: `qconfig` (required), `weight_fake_quant`, from_float and to_float."""

    _FLOAT_MODULE: type
    _FLOAT_CONV_MODULE: type

    def _init_qat(self, qconfig, factory_kwargs: dict) -> None:
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False):
        """The QAT module sharing `mod`'s weight and bias Parameters."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}, got "
                                 f"{type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        if issubclass(type(mod), _FusedModule):
            mod = mod[0]
        qat_conv = cls(mod.in_channels, mod.out_channels, mod.kernel_size, stride=mod.stride, padding=mod.padding,
                       dilation=mod.dilation, groups=mod.groups, bias=mod.bias is not None,
                       padding_mode=mod.padding_mode, qconfig=mod.qconfig)
        qat_conv.weight = mod.weight
        qat_conv.bias = mod.bias
        return qat_conv

    def to_float(self):
        """The float conv (or fused conv + relu) with this module's weight and bias."""
        cls = type(self)
        conv = cls._FLOAT_CONV_MODULE(self.in_channels, self.out_channels, self.kernel_size, self.stride,
                                      self.padding, self.dilation, self.groups, self.bias is not None,
                                      self.padding_mode)
        conv.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            conv.bias = nn.Parameter(self.bias.detach())
        if issubclass(cls, _FusedModule):
            fused = cls._FLOAT_MODULE(conv, cls._FLOAT_RELU_MODULE())
            fused.train(self.training)
            return fused
        return conv


def _make(float_conv: type, name: str) -> type:
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", qconfig=None, device=None, dtype=None) -> None:
        float_conv.__init__(self, in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode, device=device,
                            dtype=dtype)
        self._init_qat(qconfig, {"device": device, "dtype": dtype})

    doc = (f"A {float_conv.__name__} with a FakeQuantize module on its weight (`weight_fake_quant`), for "
           "quantization-aware training; the same interface plus `qconfig`, which is required.")
    return type(name, (_ConvNd, float_conv), {"__init__": __init__, "__doc__": doc, "__module__": __name__,
                                              "__qualname__": name, "_FLOAT_MODULE": float_conv,
                                              "_FLOAT_CONV_MODULE": float_conv})


Conv1d = _make(nn.Conv1d, "Conv1d")
Conv2d = _make(nn.Conv2d, "Conv2d")
Conv3d = _make(nn.Conv3d, "Conv3d")

__all__ = ["Conv1d", "Conv2d", "Conv3d"]
