"""torch.ao.nn.quantized: quantized modules (only the dynamic Linear exists in ember)."""

from . import dynamic, modules  # noqa: F401
from .modules import LinearPackedParams  # noqa: F401
