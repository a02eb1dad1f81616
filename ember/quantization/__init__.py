"""torch.quantization: the older name of torch.ao.quantization, re-exporting it."""

from ..ao.quantization import *  # noqa: F401,F403
from ..ao.quantization import (  # noqa: F401
    MinMaxObserver,
    PerChannelMinMaxObserver,
    QConfig,
    convert,
    default_dynamic_qconfig,
    default_qconfig,
    float_qparams_weight_only_qconfig,
    propagate_qconfig_,
    quantize_dynamic,
)
