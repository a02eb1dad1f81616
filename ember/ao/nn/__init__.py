"""torch.ao.nn: quantized module families."""

from . import intrinsic, quantized  # noqa: F401
from .intrinsic import quantized as _intrinsic_quantized  # noqa: F401  (ember.ao.nn.intrinsic.quantized)
