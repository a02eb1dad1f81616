"""torch.nn.modules.upsampling: the same classes, defined in misc.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.upsampling.Upsample`) run."""

from .misc import (  # noqa: F401
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]
