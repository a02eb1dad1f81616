"""ember.amp (torch.amp): autocast regions and GradScaler for mixed-precision training."""

from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available  # noqa: F401
from .grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
