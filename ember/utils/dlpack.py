"""torch.utils.dlpack: exchange tensors with other array libraries through DLPack (NumPy's support)."""

from __future__ import annotations

from .._ops.top_level_functions import from_dlpack, to_dlpack

__all__ = ["from_dlpack", "to_dlpack"]
