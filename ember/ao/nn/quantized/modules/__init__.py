"""torch.ao.nn.quantized.modules: the packed-parameter holder shared by quantized linear modules."""

from .linear import LinearPackedParams

__all__ = ["LinearPackedParams"]
