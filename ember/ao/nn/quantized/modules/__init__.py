"""torch.ao.nn.quantized.modules: statically quantized modules and the packed-parameter holder."""

from .activation import ReLU
from .conv import Conv2d
from .linear import Linear, LinearPackedParams
from .quantize import DeQuantize, Quantize

__all__ = ["Conv2d", "DeQuantize", "Linear", "LinearPackedParams", "Quantize", "ReLU"]
