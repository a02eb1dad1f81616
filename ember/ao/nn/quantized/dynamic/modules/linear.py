"""torch.ao.nn.quantized.dynamic.Linear: a Linear with a qint8 weight and activations quantized per call.

The numerics are torch's fbgemm dynamic linear on x86 (NOTE [ Dynamic quantized linear ] in
ember/_ops/quantized.py): quint8 activations with reduce_range, integer accumulation, float bias.
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops.quantized import linear_dynamic
from ember._tensor import Tensor

from ...modules.linear import LinearPackedParams


class Linear(nn.Module):
    """Dynamically quantized Linear: y = dequant(quant(x) @ qweight.T) + bias."""

    _version = 4
    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=torch.qint8) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bias = torch.zeros(out_features) if bias_ else None
        weight = torch.quantize_per_tensor(torch.zeros(out_features, in_features), 1.0, 0, torch.qint8)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0
        self.version = 4

    def forward(self, x: Tensor) -> Tensor:
        if self._packed_params.dtype != torch.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        weight, bias = self._packed_params._weight_bias()
        reduce_range = not (self.version is None or self.version < 4)
        return linear_dynamic(x, weight, bias, reduce_range=reduce_range).to(x.dtype)

    def __repr__(self) -> str:
        # torch hides the packed-params child: one line, name and extra_repr
        return f"{self._get_name()}({self.extra_repr()})"

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        text = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype == torch.qint8:
            text += f", qscheme={self.weight().qscheme()}"
        return text

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def weight(self) -> Tensor:
        """The quantized weight."""
        return self._packed_params._weight_bias()[0]

    def bias(self) -> Tensor | None:
        """The float bias."""
        return self._packed_params._weight_bias()[1]

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        self._packed_params.set_weight_bias(weight, bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """Quantize a float nn.Linear's weight with its qconfig's weight observer (default: symmetric qint8)."""
        from ember.ao.quantization.qconfig import default_dynamic_qconfig

        if type(mod) is not nn.Linear:
            raise AssertionError(f"nn.quantized.dynamic.Linear.from_float only works for {cls._FLOAT_MODULE}")
        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        weight_observer = qconfig.weight()
        dtype = weight_observer.dtype
        if dtype != torch.qint8:
            raise AssertionError(f"ember's dynamic quantized linear supports qint8 weights only, got {dtype}")
        weight_observer(mod.weight)
        qweight = _quantize_weight(mod.weight.detach().float(), weight_observer)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear


def _quantize_weight(float_weight: Tensor, observer) -> Tensor:
    """torch's _quantize_weight: per-tensor or per-channel qint8 with the observer's parameters."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine):
        return torch.quantize_per_tensor(float_weight, float(scale), int(zero_point), torch.qint8)
    if observer.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
        return torch.quantize_per_channel(float_weight, scale.to(torch.double), zero_point.to(torch.int64),
                                          observer.ch_axis, torch.qint8)
    raise ValueError(f"Unrecognized qscheme: {observer.qscheme}")
