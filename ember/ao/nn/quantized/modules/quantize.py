"""torch.ao.nn.quantized.Quantize / DeQuantize: the converted QuantStub and DeQuantStub."""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._tensor import Tensor


class Quantize(nn.Module):
    """Quantizes a float tensor per tensor with fixed (calibrated) scale and zero point."""

    def __init__(self, scale: float, zero_point: int, dtype, factory_kwargs=None) -> None:
        super().__init__()
        self.register_buffer("scale", torch.tensor([scale]))
        self.register_buffer("zero_point", torch.tensor([zero_point], dtype=torch.long))
        self.dtype = dtype

    def forward(self, X: Tensor) -> Tensor:
        return torch.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Quantize:
        """From an observed QuantStub: its activation observer's parameters."""
        if not hasattr(mod, "activation_post_process"):
            raise AssertionError("Quantize.from_float needs an observed QuantStub")
        scale, zero_point = mod.activation_post_process.calculate_qparams()
        return Quantize(float(scale.item()), int(zero_point.item()), mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(nn.Module):
    """Dequantizes a quantized tensor to float32."""

    def forward(self, Xq: Tensor) -> Tensor:
        return Xq.dequantize()

    @staticmethod
    def from_float(mod: nn.Module, use_precomputed_fake_quant: bool = False) -> DeQuantize:
        """The converted DeQuantStub."""
        return DeQuantize()
