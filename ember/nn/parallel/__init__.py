"""ember.nn.parallel: DataParallel, DistributedDataParallel (torch.nn.parallel's API)."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
