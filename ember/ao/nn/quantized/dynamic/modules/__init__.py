"""torch.ao.nn.quantized.dynamic.modules."""

from .linear import Linear

__all__ = ["Linear"]
