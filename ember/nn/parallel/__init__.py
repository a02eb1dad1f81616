"""ember.nn.parallel: DistributedDataParallel (torch.nn.parallel's API)."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
