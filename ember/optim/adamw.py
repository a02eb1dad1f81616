"""torch.optim.adamw: the module torch defines AdamW in (`from torch.optim.adamw import AdamW`)."""

from .adam import AdamW

__all__ = ["AdamW"]
