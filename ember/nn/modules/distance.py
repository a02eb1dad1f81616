"""torch.nn.modules.distance: the same classes, defined in misc.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.distance.PairwiseDistance`) run."""

from .misc import (  # noqa: F401
    CosineSimilarity,
    PairwiseDistance,
)

__all__ = ["PairwiseDistance", "CosineSimilarity"]
