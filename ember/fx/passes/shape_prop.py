"""torch.fx.passes.shape_prop.ShapeProp: run a GraphModule on example inputs and record each node's result
shape / dtype / stride in node.meta['tensor_meta']."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result) -> TensorMetadata:
    ember = sys.modules["ember"]
    memory_format = None
    if result.is_contiguous():
        memory_format = ember.contiguous_format
    qparams: dict[str, Any] = {}
    is_quantized = bool(getattr(result, "is_quantized", False))
    if is_quantized:
        try:
            qparams["qscheme"] = result.qscheme()
            qparams["scale"] = result.q_scale()
            qparams["zero_point"] = result.q_zero_point()
        except Exception:  # noqa: BLE001 - per-channel schemes: leave their parameters out
            pass
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, tuple(result.stride()), memory_format,
                          is_quantized, qparams)


class ShapeProp(Interpreter):
    """`ShapeProp(gm).propagate(*example_inputs)` fills node.meta['tensor_meta'] (a TensorMetadata, or a
    structure of them for nodes returning tuples) and node.meta['type']."""

    def __init__(self, gm, fake_mode=None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n: Node) -> Any:
        ember = sys.modules["ember"]
        result = super().run_node(n)
        found_tensor = False

        def extract_tensor_meta(obj):
            nonlocal found_tensor
            if isinstance(obj, ember.Tensor):
                found_tensor = True
                return _extract_tensor_metadata(obj)
            return obj

        meta = map_aggregate(result, extract_tensor_meta)
        if found_tensor:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        return super().run(*args)
