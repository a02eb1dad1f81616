"""ember.fx: torch.fx for ember -- symbolic tracing into a Graph of Nodes, GraphModule with generated code,
graph editing, Interpreter and Transformer (docs/fx.md).

    gm = ember.fx.symbolic_trace(model)
    print(gm.graph); print(gm.code)

Separate from ember.compile's own capture IR (ember/_compile/graph.py), which records executed ops."""

from __future__ import annotations

from . import passes, subgraph_rewriter  # noqa: E402
from ._symbolic_trace import PH, PHBase, Tracer, _assert, _assert_is_none, is_fx_tracing, symbolic_trace, wrap
from .graph import CodeGen, Graph, PythonCode
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Attribute, Proxy, TraceError

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Node", "Proxy", "Interpreter",
           "Transformer", "map_arg", "has_side_effect", "CodeGen", "PythonCode", "PH", "PHBase", "Attribute",
           "TraceError", "is_fx_tracing", "passes", "subgraph_rewriter", "replace_pattern"]

replace_pattern = subgraph_rewriter.replace_pattern
_ = (_assert, _assert_is_none)  # printed as ember.fx._assert in graphs specialised by concrete_args
