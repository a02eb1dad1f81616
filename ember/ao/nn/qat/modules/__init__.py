"""torch.ao.nn.qat.modules: the QAT Linear and convolutions."""

from .conv import Conv1d, Conv2d, Conv3d
from .linear import Linear

__all__ = ["Conv1d", "Conv2d", "Conv3d", "Linear"]
