"""torch.ao.nn.qat (also ember.nn.qat): modules for quantization-aware training whose weights pass through a
fake-quantize module; `prepare_qat` swaps them in, `convert` turns them into quantized modules
(docs/quantization.md)."""

from . import modules  # noqa: F401
from .modules import Conv1d, Conv2d, Conv3d, Linear

__all__ = ["Conv1d", "Conv2d", "Conv3d", "Linear"]
