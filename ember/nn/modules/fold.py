"""torch.nn.modules.fold: the same classes, defined in misc.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.fold.Fold`) run."""

from .misc import (  # noqa: F401
    Fold,
    Unfold,
)

__all__ = ["Fold", "Unfold"]
