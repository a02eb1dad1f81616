"""torch.ao.nn.intrinsic.qat.modules."""

from .conv_fused import ConvBn2d, ConvBnReLU2d, ConvReLU2d, freeze_bn_stats, update_bn_stats
from .linear_relu import LinearReLU

__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU", "freeze_bn_stats", "update_bn_stats"]
