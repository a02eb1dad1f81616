"""torch.ao.nn.quantized.dynamic: modules whose weights are quantized ahead and activations per call."""

from .modules import Linear

__all__ = ["Linear"]
