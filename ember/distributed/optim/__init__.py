"""ember.distributed.optim: ZeroRedundancyOptimizer (torch.distributed.optim's)."""

from .zero_redundancy_optimizer import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
