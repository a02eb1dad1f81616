"""torch.ao.nn.quantized: static quantized modules (Linear, Conv2d, BatchNorm2d, Quantize, DeQuantize,
QFunctional), the float FloatFunctional they convert from, and the dynamic modules."""

from . import dynamic, modules  # noqa: F401
from .modules import (  # noqa: F401
    BatchNorm2d,
    Conv2d,
    DeQuantize,
    FloatFunctional,
    FXFloatFunctional,
    Linear,
    LinearPackedParams,
    QFunctional,
    Quantize,
)
