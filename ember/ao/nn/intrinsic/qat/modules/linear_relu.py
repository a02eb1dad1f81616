"""torch.ao.nn.intrinsic.qat.LinearReLU: Linear + ReLU with a fake-quantized weight (quantization-aware
training)."""

from __future__ import annotations

from ember import nn
from ember.nn import functional as F

from ....qat import modules as _nnqat
from ... import LinearReLU as _FloatLinearReLU
from ... import _FusedModule


class LinearReLU(_nnqat.Linear, _FusedModule):
    """A Linear followed by ReLU, its weight through `weight_fake_quant`."""

    _FLOAT_MODULE = _FloatLinearReLU

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig=None) -> None:
        super().__init__(in_features, out_features, bias, qconfig)

    def forward(self, input):
        return F.relu(F.linear(input, self.weight_fake_quant(self.weight), self.bias))

    def to_float(self) -> nn.Module:
        linear = nn.Linear(self.in_features, self.out_features, self.bias is not None)
        linear.weight = nn.Parameter(self.weight.detach())
        if self.bias is not None:
            linear.bias = nn.Parameter(self.bias.detach())
        return _FloatLinearReLU(linear, nn.ReLU())


__all__ = ["LinearReLU"]
