"""ReLU on quantized tensors: ember's module for what torch's nn.ReLU does on a quantized input.

torch leaves nn.ReLU unconverted because torch.relu has a QuantizedCPU kernel.  ember's dispatcher refuses
every ordinary op on quantized tensors, so `convert` swaps nn.ReLU for this module, which calls the quantized
kernel (max(q, zero_point), same qparams).  Its repr is torch's converted model's, `ReLU()`.
"""

from __future__ import annotations

from ember import nn
from ember._ops.quantized_static import quantized_relu
from ember._tensor import Tensor


class ReLU(nn.Module):
    """relu for quantized (and, falling back to nn.ReLU, float) tensors."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        if input.is_quantized:
            return quantized_relu(input)
        return nn.functional.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> ReLU:
        """The quantized counterpart of a float nn.ReLU."""
        return cls(mod.inplace)
