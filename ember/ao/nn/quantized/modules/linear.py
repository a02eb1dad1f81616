"""LinearPackedParams (torch.ao.nn.quantized.modules.linear): a quantized Linear's weight and bias.

torch packs them into an fbgemm object; ember keeps the quantized weight and the float bias as they are and
saves them as torch does, a (weight, bias) tuple under `_packed_params._packed_params`.
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._tensor import Tensor


class LinearPackedParams(nn.Module):
    """Holds (quantized weight, float bias) for quantized linear modules."""

    _version = 3

    def __init__(self, dtype=torch.qint8) -> None:
        super().__init__()
        self.dtype = dtype
        weight = torch.quantize_per_tensor(torch.zeros(1, 1), 1.0, 0, torch.qint8)
        self.set_weight_bias(weight, None)

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        """Store a per-tensor or per-channel qint8 weight and an optional float bias."""
        if self.dtype == torch.qint8 and not weight.is_quantized:
            raise RuntimeError("LinearPackedParams expects a quantized qint8 weight")
        self._packed_params = (weight, bias)

    def _weight_bias(self) -> tuple[Tensor, Tensor | None]:
        return self._packed_params

    def forward(self, x: Tensor) -> Tensor:
        return x

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        self.dtype = state_dict.pop(prefix + "dtype")
        weight, bias = state_dict.pop(prefix + "_packed_params")
        self.set_weight_bias(weight, bias)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def __repr__(self) -> str:
        return self._weight_bias().__repr__()
