"""torch.ao.nn.quantized.BatchNorm2d: batch normalisation of a quint8 / qint8 tensor with static output
parameters, converted from an observed (unfused) nn.BatchNorm2d.  The kernel is torch's
quantized::batch_norm2d (ember/_ops/quantized_ops.py)."""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops import quantized_ops
from ember._tensor import Tensor

__all__ = ["BatchNorm2d"]


class BatchNorm2d(nn.modules.normalization._BatchNorm):
    """Quantized BatchNorm2d (eval statistics only): an nn.BatchNorm2d's parameters and running statistics plus
    `scale` and `zero_point` buffers for the output."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, device=None,
                 dtype=None) -> None:
        super().__init__(num_features, eps, momentum, True, True, device=device, dtype=dtype)
        self.register_buffer("scale", torch.tensor(1.0))
        self.register_buffer("zero_point", torch.tensor(0))

    def _get_name(self) -> str:
        return "QuantizedBatchNorm2d"

    def _check_input_dim(self, input: Tensor) -> None:
        if len(input.shape) != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")

    def forward(self, input: Tensor) -> Tensor:
        return quantized_ops.batch_norm2d(input, self.weight, self.bias, self.running_mean, self.running_var,
                                          self.eps, float(self.scale), int(self.zero_point))

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> BatchNorm2d:
        """From an nn.BatchNorm2d observed by `prepare`: its parameters, statistics and output observer's
        scale and zero point."""
        activation_post_process = mod.activation_post_process
        scale, zero_point = activation_post_process.calculate_qparams()
        new_mod = cls(mod.num_features, mod.eps)
        new_mod.weight = mod.weight
        new_mod.bias = mod.bias
        new_mod.running_mean = mod.running_mean
        new_mod.running_var = mod.running_var
        new_mod.scale = scale
        new_mod.zero_point = zero_point
        return new_mod
