"""torch.ao.nn.quantized.dynamic.Linear: a Linear with a qint8 weight and activations quantized per call.

The numerics are torch's fbgemm dynamic linear on x86 (NOTE [ Dynamic quantized linear ] in
ember/_ops/quantized.py): quint8 activations with reduce_range, integer accumulation, float bias.
"""

from __future__ import annotations

import ember as torch
from ember import nn
from ember._ops.quantized import linear_dynamic
from ember._tensor import Tensor

from ...modules import linear as nnq
from ...modules.linear import quantize_weight


class Linear(nnq.Linear):
    """Dynamically quantized Linear: y = dequant(quant(x) @ qweight.T) + bias (torch's nnqd.Linear, a subclass
    of the static nnq.Linear: same packed params, state dict and weight accessors)."""

    _version = 4
    _FLOAT_MODULE = nn.Linear

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=torch.qint8) -> None:
        super().__init__(in_features, out_features, bias_, dtype)
        self.version = 4

    def forward(self, x: Tensor) -> Tensor:
        if self._packed_params.dtype != torch.qint8:
            raise RuntimeError("Unsupported dtype on dynamic quantized linear!")
        weight, bias = self._packed_params._weight_bias()
        reduce_range = not (self.version is None or self.version < 4)
        return linear_dynamic(x, weight, bias, reduce_range=reduce_range).to(x.dtype)

    def _get_name(self) -> str:
        return "DynamicQuantizedLinear"

    def extra_repr(self) -> str:
        text = f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._packed_params.dtype}"
        if self._packed_params.dtype == torch.qint8:
            text += f", qscheme={self.weight().qscheme()}"
        return text

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
        qweight = quantize_weight(mod.weight.detach().float(), weight_observer)
        qlinear = cls(mod.in_features, mod.out_features, dtype=dtype)
        qlinear.set_weight_bias(qweight, mod.bias)
        return qlinear
