"""torch.ao.nn.quantized.modules.linear: the static quantized Linear and LinearPackedParams (weight and bias).

torch packs them into an fbgemm object; ember keeps the quantized weight and the float bias as they are and
saves them as torch does, a (weight, bias) tuple under `_packed_params._packed_params`.
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops.quantized_static import quantized_linear
from ember._tensor import Tensor

from .utils import OutputQParams


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


class Linear(OutputQParams):
    """torch.ao.nn.quantized.Linear: quint8 in, quint8 out, qint8 weight, float bias, static output qparams.

    The numerics are fbgemm's (NOTE [ Static quantized requantization ] in ember/_ops/quantized_static.py)."""

    _version = 3
    _FLOAT_MODULE = (nn.Linear,)

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

    def forward(self, x: Tensor) -> Tensor:
        weight, bias = self._packed_params._weight_bias()
        return quantized_linear(x, weight, bias, self.scale, self.zero_point)

    def __repr__(self) -> str:
        # torch hides the packed-params child: one line, name and extra_repr
        return f"{self._get_name()}({self.extra_repr()})"

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={self.scale}, "
                f"zero_point={self.zero_point}, qscheme={self.weight().qscheme()}")

    def weight(self) -> Tensor:
        """The quantized qint8 weight."""
        return self._packed_params._weight_bias()[0]

    def bias(self) -> Tensor | None:
        """The float bias."""
        return self._packed_params._weight_bias()[1]

    def set_weight_bias(self, weight: Tensor, bias: Tensor | None) -> None:
        """Replace the quantized weight and float bias."""
        self._packed_params.set_weight_bias(weight, bias)

    @classmethod
    def from_float(cls, mod: nn.Module, use_precomputed_fake_quant: bool = False) -> Linear:
        """A float nn.Linear observed by `prepare` (weight quantized by its qconfig's weight observer) or a QAT
        Linear (by its `weight_fake_quant`, run once more on the weight as torch does); output scale and zero
        point from its activation observer or fake quant."""
        if hasattr(mod, "weight_fake_quant"):  # a QAT module: its own weight fake quant gives the qparams
            weight_post_process = mod.weight_fake_quant
        else:
            if type(mod) not in cls._FLOAT_MODULE:
                raise AssertionError(f"nnq.{cls.__name__}.from_float only works for "
                                     f"{cls._FLOAT_MODULE[0].__name__}")
            if not hasattr(mod, "qconfig"):
                raise AssertionError("Input float module must have qconfig defined")
            weight_post_process = mod.qconfig.weight()
        activation_post_process = mod.activation_post_process
        if not use_precomputed_fake_quant:
            weight_post_process(mod.weight)
        dtype = weight_post_process.dtype
        if dtype != torch.qint8:
            raise AssertionError("Weight observer must have dtype torch.qint8")
        act_scale, act_zero_point = activation_post_process.calculate_qparams()
        qweight = quantize_weight(mod.weight.detach().float(), weight_post_process)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        qlinear.scale = float(act_scale)
        qlinear.zero_point = int(act_zero_point)
        return qlinear


def quantize_weight(float_weight: Tensor, observer) -> Tensor:
    """torch's _quantize_weight: per-tensor or per-channel qint8 with the observer's parameters."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine):
        return torch.quantize_per_tensor(float_weight, float(scale), int(zero_point), torch.qint8)
    if observer.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine):
        return torch.quantize_per_channel(float_weight, scale.to(torch.double), zero_point.to(torch.int64),
                                          observer.ch_axis, torch.qint8)
    raise ValueError(f"Unrecognized qscheme: {observer.qscheme}")
