"""torch.nn.modules.pixelshuffle: the same classes, defined in misc.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.pixelshuffle.PixelShuffle`) run."""

from .misc import (  # noqa: F401
    PixelShuffle,
    PixelUnshuffle,
)

__all__ = ["PixelShuffle", "PixelUnshuffle"]
