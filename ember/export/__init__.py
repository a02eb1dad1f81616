"""ember.export: torch.export's API, a module captured once into a standalone graph that can be saved.

    ep = ember.export.export(model, (x,), dynamic_shapes={"x": {0: ember.export.Dim("batch")}})
    print(ep)                          # the graph, its signature, the range of the batch dim
    ep.module()(x)                     # runs the graph with the exported parameters
    ember.export.save(ep, "model.pt2")
    ep = ember.export.load("model.pt2")  # in any process: no model class needed

Capture reuses ember.compile's tracer (ember/_compile/tracer.py); the file is a zip of JSON and
safetensors (ember/export/_archive.py).  See docs/export.md for the format and the limits.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._archive import load, save
from ._capture import capture
from ._errors import Unsupported, UserError
from .dynamic_shapes import Dim, dims
from .exported_program import ExportedProgram, ExportGraphSignature, Graph, GraphModule, InputSpec, Node, OutputSpec


def export(mod, args: tuple, kwargs: Mapping | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = ()) -> ExportedProgram:
    """Capture `mod`'s forward on example inputs into an ExportedProgram (torch.export.export).

    The module runs once (twice with a dynamic dim) in its current train/eval mode, with grad mode off,
    and every op it dispatches is recorded; its buffers and the random generator are left as they were.

    Args:
        mod: the nn.Module whose forward is captured.
        args: example positional inputs, a tuple.
        kwargs: example keyword inputs.
        dynamic_shapes: which input dims may change size: a dict from forward's argument names (or a tuple
            in input order) to a dict {dim: Dim} or a tuple of Dim/None per dim.  ember supports one dynamic
            size, a batch dim shared by the inputs (see ember.export.Dim).
        strict: accepted for torch's signature; ember always traces the Python (as strict=False does) and
            always raises at a graph break.
        preserve_module_call_signature: accepted for torch's signature; unused.

    Returns:
        An ExportedProgram.

    Raises:
        ember.export.Unsupported: a graph break (.item(), control flow on tensor values, .numpy()...) or an op
            or value the standalone format cannot hold; the message names the reason and the source line.
        ember.export.UserError: args not a tuple, a dynamic_shapes spec ember cannot honour.

    Example::

        >>> ep = ember.export.export(nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> [node.target for node in ep.graph.nodes if node.op == "call_function"]
        ['linear']
    """
    from ..nn.modules.module import Module

    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise UserError(f"Expecting `kwargs` to be a dict of example keyword inputs, got {type(kwargs)}")
    return ExportedProgram(capture(mod, args, dict(kwargs or {}), dynamic_shapes))


__all__ = ["export", "save", "load", "Dim", "dims", "ExportedProgram", "ExportGraphSignature", "InputSpec",
           "OutputSpec", "Graph", "GraphModule", "Node", "Unsupported", "UserError"]
