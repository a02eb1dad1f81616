"""torch.nn.modules.batchnorm: the same classes, defined in normalization.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.batchnorm._NormBase`) run."""

from .normalization import (  # noqa: F401
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    SyncBatchNorm,
    _BatchNorm,
    _LazyNormBase,
    _NormBase,
)

__all__ = [
    "BatchNorm1d", "LazyBatchNorm1d", "BatchNorm2d", "LazyBatchNorm2d", "BatchNorm3d", "LazyBatchNorm3d",
    "SyncBatchNorm",
]
