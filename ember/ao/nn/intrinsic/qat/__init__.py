"""torch.ao.nn.intrinsic.qat (also ember.nn.intrinsic.qat): fused modules for quantization-aware training —
conv + bn with the bn folded into the fake-quantized weight, conv + relu, linear + relu."""

from . import modules  # noqa: F401
from .modules import ConvBn2d, ConvBnReLU2d, ConvReLU2d, LinearReLU, freeze_bn_stats, update_bn_stats

__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU", "freeze_bn_stats", "update_bn_stats"]
