"""torch.nn.intrinsic: the older name of ember.ao.nn.intrinsic (fused modules for quantization)."""

from ember.ao.nn.intrinsic import *  # noqa: F401,F403
from ember.ao.nn.intrinsic import ConvBn2d, ConvBnReLU2d, ConvReLU2d, LinearReLU, _FusedModule, quantized  # noqa: F401

from . import qat  # noqa: F401
