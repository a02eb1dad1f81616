"""torch.nn.modules.instancenorm: the same classes, defined in normalization.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.instancenorm._InstanceNorm`) run."""

from .normalization import (  # noqa: F401
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    _InstanceNorm,
)

__all__ = [
    "InstanceNorm1d", "LazyInstanceNorm1d", "InstanceNorm2d", "LazyInstanceNorm2d", "InstanceNorm3d",
    "LazyInstanceNorm3d",
]
