"""torch.fx.subgraph_rewriter.replace_pattern: find every match of a pattern function's graph in a
GraphModule and replace it with a replacement function's graph.  Patterns with one output are supported."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node  # the graph node matched by the pattern's output value
    nodes_map: dict[Node, Node]  # pattern node -> graph node


def _graph_of(obj) -> tuple[Graph, Any]:
    if isinstance(obj, GraphModule):
        return obj.graph, obj
    if isinstance(obj, Graph):
        return obj, None
    from ._symbolic_trace import symbolic_trace

    gm = symbolic_trace(obj)
    return gm.graph, gm


def _returned(graph: Graph) -> Node:
    output = next(n for n in reversed(graph.nodes) if n.op == "output")
    result = output.args[0]
    if isinstance(result, (tuple, list)) and len(result) == 1:
        result = result[0]
    if not isinstance(result, Node):
        raise NotImplementedError("replace_pattern: patterns must return exactly one value")
    return result


def _match_arg(pa, ga, mapping: dict[Node, Node]) -> bool:
    if isinstance(pa, Node):
        return isinstance(ga, Node) and _match_node(pa, ga, mapping)
    if isinstance(pa, (tuple, list)):
        return (isinstance(ga, (tuple, list)) and len(pa) == len(ga)
                and all(_match_arg(p, g, mapping) for p, g in zip(pa, ga)))
    if isinstance(pa, dict):
        return (isinstance(ga, dict) and pa.keys() == ga.keys()
                and all(_match_arg(pa[k], ga[k], mapping) for k in pa))
    if isinstance(ga, Node):
        return False
    try:
        return bool(type(pa) is type(ga) and pa == ga)
    except Exception:  # noqa: BLE001 - values that do not compare (tensors): no match
        return False


def _match_node(pn: Node, gn: Node, mapping: dict[Node, Node]) -> bool:
    if pn in mapping:
        return mapping[pn] is gn
    if pn.op == "placeholder":
        if gn in mapping.values():
            return False
        mapping[pn] = gn
        return True
    if pn.op != gn.op or gn in mapping.values():
        return False
    if pn.op in ("call_function", "call_method", "call_module", "get_attr"):
        if pn.target != gn.target:
            return False
    saved = dict(mapping)
    mapping[pn] = gn
    if _match_arg(pn.args, gn.args, mapping) and _match_arg(dict(pn.kwargs), dict(gn.kwargs), mapping):
        return True
    mapping.clear()
    mapping.update(saved)
    return False


def _find_matches(graph: Graph, pattern_graph: Graph) -> list[Match]:
    anchor = _returned(pattern_graph)
    matches: list[Match] = []
    taken: set[Node] = set()
    for gn in graph.nodes:
        mapping: dict[Node, Node] = {}
        if not _match_node(anchor, gn, mapping):
            continue
        internal = [g for p, g in mapping.items() if p.op != "placeholder"]
        internal_set = set(internal)
        # nodes the replacement removes must not be used outside the match (the anchor's users are rewired)
        if any(u not in internal_set for g in internal if g is not gn for u in g.users):
            continue
        if internal_set & taken:
            continue
        taken |= internal_set
        matches.append(Match(anchor=gn, nodes_map=mapping))
    return matches


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule | Graph,
                    replacement: Callable | GraphModule | Graph) -> list[Match]:
    """Replace each non-overlapping match of `pattern` in gm.graph with `replacement`; returns the matches."""
    pattern_graph, _ = _graph_of(pattern)
    replacement_graph, replacement_module = _graph_of(replacement)
    graph = gm.graph
    matches = _find_matches(graph, pattern_graph)
    pattern_placeholders = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(pattern_placeholders) != len(replacement_placeholders):
        raise ValueError("replace_pattern: the pattern and the replacement must take the same number of inputs")
    for match in matches:
        val_map: dict[Node, Any] = {}
        for pp, rp in zip(pattern_placeholders, replacement_placeholders):
            val_map[rp] = match.nodes_map[pp]
        with graph.inserting_before(match.anchor):
            for rn in replacement_graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    result = map_arg(rn.args[0], lambda n: val_map[n])
                    break
                if rn.op in ("get_attr", "call_module") and replacement_module is not None:
                    if not _has_attr(gm, rn.target):
                        _set_attr(gm, rn.target, copy.deepcopy(_get_attr(replacement_module, rn.target)))
                val_map[rn] = graph.node_copy(rn, lambda n: val_map[n])
        if isinstance(result, (tuple, list)) and len(result) == 1:
            result = result[0]
        match.anchor.replace_all_uses_with(result)
        for pn in reversed(pattern_graph.nodes):
            if pn.op in ("placeholder", "output") or pn not in match.nodes_map:
                continue
            gn = match.nodes_map[pn]
            if len(gn.users) == 0 and not gn._erased:
                graph.erase_node(gn)
    graph.lint()
    gm.recompile()
    return matches


def _get_attr(mod, target: str):
    for atom in target.split("."):
        mod = getattr(mod, atom)
    return mod


def _has_attr(mod, target: str) -> bool:
    try:
        _get_attr(mod, target)
        return True
    except AttributeError:
        return False


def _set_attr(mod, target: str, value) -> None:
    ember = sys.modules["ember"]
    *prefix, field = target.split(".")
    for atom in prefix:
        if not hasattr(mod, atom):
            setattr(mod, atom, ember.nn.Module())
        mod = getattr(mod, atom)
    if isinstance(value, ember.Tensor) and not isinstance(value, ember.nn.Parameter):
        mod.register_buffer(field, value)
    else:
        setattr(mod, field, value)
