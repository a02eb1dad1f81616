"""torch.cpu.amp: deprecated spellings of ember.amp.autocast("cpu") and GradScaler("cpu")."""

from .. import _dtype
from ..amp._legacy import device_autocast, device_grad_scaler

autocast = device_autocast("cpu", _dtype.bfloat16)
GradScaler = device_grad_scaler("cpu")

__all__ = ["autocast", "GradScaler"]
