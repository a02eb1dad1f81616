"""torch.autograd.forward_ad: forward-mode AD with dual tensors (implemented in ember/_autograd/forward_ad.py)."""

from .._autograd.forward_ad import (
    UnpackedDualTensor,
    dual_level,
    enter_dual_level,
    exit_dual_level,
    make_dual,
    unpack_dual,
)

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]
