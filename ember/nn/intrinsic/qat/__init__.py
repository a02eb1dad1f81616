"""torch.nn.intrinsic.qat: the older name of ember.ao.nn.intrinsic.qat."""

from ember.ao.nn.intrinsic.qat import *  # noqa: F401,F403
from ember.ao.nn.intrinsic.qat import (  # noqa: F401
    ConvBn2d,
    ConvBnReLU2d,
    ConvReLU2d,
    LinearReLU,
    freeze_bn_stats,
    update_bn_stats,
)
