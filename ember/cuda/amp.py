"""torch.cuda.amp: deprecated spellings of ember.amp.autocast("cuda"), GradScaler("cuda"), custom_fwd and
custom_bwd."""

from .. import _dtype
from ..amp._legacy import cuda_custom_bwd as custom_bwd
from ..amp._legacy import cuda_custom_fwd as custom_fwd
from ..amp._legacy import device_autocast, device_grad_scaler

autocast = device_autocast("cuda", _dtype.float16)
GradScaler = device_grad_scaler("cuda")

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]
