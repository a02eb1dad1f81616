"""torch.ao.nn: quantized module families."""

from . import quantized  # noqa: F401
