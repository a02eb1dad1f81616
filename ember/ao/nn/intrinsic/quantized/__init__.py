"""torch.ao.nn.intrinsic.quantized: the quantized forms of the fused float modules — the conv / linear kernel
with the relu folded into its requantization (outputs clamped below at the zero point)."""

from __future__ import annotations

from ember import nn
from ember._ops.quantized_static import quantized_conv2d, quantized_linear
from ember._tensor import Tensor
from ember.nn.utils.fusion import fuse_conv_bn_weights

from ... import intrinsic as nni
from ...quantized.modules import conv as nnq_conv
from ...quantized.modules import linear as nnq_linear


def _from_fused(cls, base, fused: nn.Module):
    """`base.from_float` of the fused module's first module, given the pair's qconfig and output observer,
    as a `cls` (the quantized module whose forward folds the relu into its clamp)."""
    if hasattr(fused, "weight_fake_quant"):  # a QAT module converts as a whole
        from ember.ao.nn.intrinsic import qat as nniqat

        if type(fused) is nniqat.ConvBnReLU2d:  # the bn folded into the weight and bias (running statistics)
            fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, fused.bn.running_mean,
                                                            fused.bn.running_var, fused.bn.eps, fused.bn.weight,
                                                            fused.bn.bias)
        quantized = base.from_float(fused)
        quantized.__class__ = cls
        return quantized
    if type(fused) is not cls._FUSED:
        raise AssertionError(f"nniq.{cls.__name__}.from_float only works for {cls._FUSED.__name__}")
    inner = fused[0]
    inner.qconfig = fused.qconfig
    observer = getattr(fused, "activation_post_process", None)
    if observer is not None:
        inner.activation_post_process = observer
    quantized = base.from_float(inner)
    quantized.__class__ = cls
    return quantized


class ConvReLU2d(nnq_conv.Conv2d):
    """Quantized Conv2d + ReLU (torch's nniq.ConvReLU2d)."""

    _FLOAT_MODULE = nni.ConvReLU2d
    _FUSED = nni.ConvReLU2d

    def forward(self, input: Tensor) -> Tensor:
        return quantized_conv2d(input, self._weight, self._bias, self.stride, self.padding, self.dilation,
                                self.groups, self.scale, self.zero_point, relu=True)

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> ConvReLU2d:
        return _from_fused(cls, nnq_conv.Conv2d, mod)


class LinearReLU(nnq_linear.Linear):
    """Quantized Linear + ReLU (torch's nniq.LinearReLU)."""

    _FLOAT_MODULE = (nni.LinearReLU,)
    _FUSED = nni.LinearReLU

    def forward(self, x: Tensor) -> Tensor:
        weight, bias = self._packed_params._weight_bias()
        return quantized_linear(x, weight, bias, self.scale, self.zero_point, relu=True)

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> LinearReLU:
        return _from_fused(cls, nnq_linear.Linear, mod)


__all__ = ["ConvReLU2d", "LinearReLU"]
