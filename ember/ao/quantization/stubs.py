"""QuantStub, DeQuantStub, QuantWrapper (torch.ao.quantization.stubs): where eager-mode quantization starts
and ends.  Before `convert` they pass tensors through (the QuantStub's observer records its input's range);
`convert` replaces them by nnq.Quantize and nnq.DeQuantize."""

from __future__ import annotations

from ... import nn
from ..._tensor import Tensor


class _Stub(nn.Module):
    """An identity module with an optional qconfig, which `convert` replaces."""

    def __init__(self, qconfig=None) -> None:
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x: Tensor) -> Tensor:
        return x


class QuantStub(_Stub):
    """Marks where float tensors become quantized; identity until converted."""


class DeQuantStub(_Stub):
    """Marks where quantized tensors become float again; identity until converted."""


class QuantWrapper(nn.Module):
    """`module` between a QuantStub and a DeQuantStub that share its qconfig."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X: Tensor) -> Tensor:
        X = self.quant(X)
        X = self.module(X)
        return self.dequant(X)
