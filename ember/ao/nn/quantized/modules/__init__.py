"""torch.ao.nn.quantized.modules: statically quantized modules and the packed-parameter holder."""

from .batchnorm import BatchNorm2d
from .conv import Conv2d
from .functional_modules import FloatFunctional, FXFloatFunctional, QFunctional
from .linear import Linear, LinearPackedParams
from .quantize import DeQuantize, Quantize

__all__ = ["BatchNorm2d", "Conv2d", "DeQuantize", "FloatFunctional", "FXFloatFunctional", "Linear",
           "LinearPackedParams", "QFunctional", "Quantize"]
