"""torch.ao.nn.qat.Linear: nn.Linear whose weight passes through a fake-quantize module (`weight_fake_quant`, the
qconfig's weight factory) in every forward, for quantization-aware training."""

from __future__ import annotations

from ember import nn
from ember.nn import functional as F

from ...intrinsic import LinearReLU as _FloatLinearReLU


class Linear(nn.Linear):
    """A Linear with a FakeQuantize module on its weight (`weight_fake_quant`); the same interface as nn.Linear
    plus `qconfig`, which is required."""

    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig=None, device=None,
                 dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__(in_features, out_features, bias, **factory_kwargs)
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """The QAT module sharing `mod`'s weight and bias Parameters (mod: nn.Linear or nni.LinearReLU with a
        qconfig)."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}, got "
                                 f"{type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        if type(mod) is _FloatLinearReLU:
            mod = mod[0]
        qat_linear = cls(mod.in_features, mod.out_features, bias=mod.bias is not None, qconfig=mod.qconfig)
        qat_linear.weight = mod.weight
        qat_linear.bias = mod.bias
        return qat_linear

    def to_float(self) -> nn.Linear:
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        linear.train(self.training)
        return linear


__all__ = ["Linear"]
