"""torch.ao.nn.quantized: static quantized modules (Linear, Conv2d, ReLU, Quantize, DeQuantize) and dynamic."""

from . import dynamic, modules  # noqa: F401
from .modules import Conv2d, DeQuantize, Linear, LinearPackedParams, Quantize, ReLU  # noqa: F401
