"""Graph -> Python source: the readable `graph.code`, and the runner that replays a graph op by op.

Both come from one walk over the nodes; the runner's source references op objects, params, and
external tensors through its globals (op3, params3, e1), the readable code names ops and prints params
inline, with the user's source line as a comment.
"""

from __future__ import annotations

import math

from .graph import Graph, Value, iter_values
from .symbolic import Batch, Scalar


def _literal(value) -> str:
    """Python source for a constant: its repr, except a non-finite float (repr gives `inf`, not Python)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"
    return repr(value)


def _arg_text(arg, namespace: dict | None = None) -> str:
    """An op argument as source.  With `namespace` (the runner's globals) a constant that is not a plain
    literal (a dtype, a device, an object) is passed by reference, as a global named for it."""
    if isinstance(arg, Value):
        return arg.name
    if isinstance(arg, (Batch, Scalar)):  # a size-generic graph's int operand, a float argument's expression:
        # this call's value (symbolic.py, scalars.py)
        if namespace is None:
            return repr(arg)
        name = f"const_{len([k for k in namespace if k.startswith('const_')])}"
        namespace[name] = arg
        return f"_bind({name}, B)"
    if isinstance(arg, tuple):
        inner = ", ".join(_arg_text(a, namespace) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_arg_text(a, namespace) for a in arg) + "]"
    if namespace is not None and not (arg is None or type(arg) in (bool, int, float, str)):
        name = f"const_{len([k for k in namespace if k.startswith('const_')])}"
        namespace[name] = arg
        return name
    return _literal(arg)


def _targets(node) -> str:
    return ", ".join(v.name for v in node.results) + ("," if len(node.results) == 1 and node.op is not None
                                                         and node.op.outputs > 1 else "")


def graph_code(graph: Graph) -> str:
    placeholders = [n for n in graph.nodes if n.kind == "placeholder"]
    lines = [f"def forward({', '.join(n.name for n in placeholders)}):"]
    for node in placeholders:
        v = node.results[0]
        lines.append(f"    # {node.name}: {node.path}  {v.dtype.name}{list(v.shape)}")
    for node in graph.nodes:
        if node.kind == "external":
            v = node.results[0]
            lines.append(f"    # {node.name}: external {node.path}")
    for node in graph.nodes:
        if node.kind in ("call", "fused"):
            args = ", ".join(_arg_text(a) for a in (node.symbolic_args or node.args))
            shown = node.symbolic_params if node.symbolic_params is not None else node.params
            params = ", ".join(f"{k}={_literal(v)}" for k, v in shown.items())
            meta = ", ".join(f"{v.dtype.name}{list(v.shape)}" for v in node.results)
            call = f"{node.op.name}({args}{', ' + params if params else ''})"
            comment = f"  # {meta}"
            if not node.grad_enabled:
                comment += " [no_grad]"
            if node.source:
                comment += f"  {node.source}"
            lines.append(f"    {_targets(node)} = {call}{comment}")
        elif node.kind == "detach":
            lines.append(f"    {node.results[0].name} = {node.args[0].name}.detach()  # {node.source}")
    for target, new, _ in getattr(graph, "mutations", ()):
        lines.append(f"    {target.name}.copy_({new.name})  # in-place write kept")
    if graph.output is not None:
        lines.append(f"    return {_arg_text(graph.output.structure)}")
    return "\n".join(lines)


def runner_source(graph: Graph) -> tuple[str, dict]:
    """Python source of `run(p0, p1, ...) -> tuple of output tensors`, and the globals it needs."""
    placeholders = [n for n in graph.nodes if n.kind == "placeholder"]
    namespace: dict = {}
    lines = [f"def run({', '.join(n.results[0].name for n in placeholders)}):"]
    body = []
    mode = getattr(graph, "entry_grad_enabled", True)
    for node in graph.nodes:
        if node.kind == "external":
            owner = getattr(node, "grad_of", None)
            remade = node.symbolic_params is not None or getattr(node, "random", False)
            if getattr(node, "recipe", None) is not None and remade:
                # made from sizes (arange(T)) in a size-generic graph, or drawn (randn_like): made anew, at this
                # call's sizes
                from .tracer import remake

                namespace["_remake"] = remake
                namespace[f"recipe_{node.name}"] = node.recipe
                if node.symbolic_params is not None:
                    namespace[f"params_{node.name}"] = node.symbolic_params
                    params = f"_bind(params_{node.name}, B)"
                else:
                    namespace[f"params_{node.name}"] = node.params
                    params = f"params_{node.name}"
                grad = bool(node.tensor._requires_grad)
                body.append(f"{node.results[0].name} = _remake(recipe_{node.name}, {params}, {grad})")
            elif getattr(node, "created", False):  # made in the function: each call starts from its own copy
                namespace[f"made_{node.results[0].name}"] = node.tensor
                from .tracer import fresh_copy

                namespace["_fresh"] = fresh_copy
                body.append(f"{node.results[0].name} = _fresh(made_{node.results[0].name})")
            elif getattr(node, "slot", None) is not None:  # a module's parameter or buffer, as its entry holds now
                table, key = node.slot
                namespace[f"table_{node.results[0].name}"] = table
                body.append(f"{node.results[0].name} = table_{node.results[0].name}[{key!r}]")
            elif owner is None:
                namespace[node.results[0].name] = node.tensor
            else:  # `p.grad` read in the function: this call's gradient, not the captured tensor (tracer.read_grad)
                namespace[f"owner_{node.results[0].name}"] = owner
                body.append(f"{node.results[0].name} = owner_{node.results[0].name}._grad")
        elif node.kind in ("call", "fused"):
            if node.grad_enabled != mode:
                body.append(f"_state.enabled = {node.grad_enabled}")
                mode = node.grad_enabled
            namespace[f"op_{node.name}"] = node.op
            namespace[f"params_{node.name}"] = node.params
            extra = getattr(node, "index_args", 0)
            op_args = (node.symbolic_args or node.args)[:len(node.args) - extra]
            args = ", ".join(_arg_text(a, namespace) for a in op_args)
            args = f"({args},)" if len(op_args) == 1 else f"({args})"
            params = f", params_{node.name}" if node.params else ""
            if node.symbolic_params is not None:
                namespace[f"params_{node.name}"] = node.symbolic_params
                params = f", _bind(params_{node.name}, B)"
            if extra:  # index arrays read from graph values (tracer.ArrayArg)
                from .tracer import fill_arrays

                namespace["_fill"] = fill_arrays
                index_values = ", ".join(_arg_text(a) for a in node.args[len(node.args) - extra:])
                params = f", _fill({params[2:]}, ({index_values},))"
            targets = ", ".join(v.name for v in node.results) + ("," if node.op.outputs > 1 and len(node.results) == 1
                                                                  else "")
            call = f"_call(op_{node.name}, {args}{params})"
            if getattr(node, "scalar_bound", False):  # a float argument's node: its shape must be the captured one
                from .scalars import check_shapes

                namespace["_check_shapes"] = check_shapes
                namespace[f"shapes_{node.name}"] = tuple(tuple(v.shape) for v in node.results)
                call = f"_check_shapes({call}, shapes_{node.name})"
            if node.op.outputs > 1 and len(node.results) > 1:
                body.append(f"{targets} = {call}")
            else:
                body.append(f"{node.results[0].name} = {call}")
        elif node.kind == "detach":
            body.append(f"{node.results[0].name} = {node.args[0].name}.detach()")
    for target, new, grad_enabled in getattr(graph, "mutations", ()):
        if grad_enabled != mode:
            body.append(f"_state.enabled = {grad_enabled}")
            mode = grad_enabled
        body.append(f"{target.name}._inplace_from({new.name})")
    source = getattr(graph, "batch_source", None)
    if source is not None:  # a size-generic graph: the batch size of this call (see symbolic.py)
        sizes = "".join(f"{name}.shape[{dim}] // {m}, " for name, dim, m in source)
        body.insert(0, f"B = ({sizes})")
        from .symbolic import bind

        namespace["_bind"] = bind
    cell = getattr(graph, "scalar_cell", None)
    if cell is not None:  # a graph for every value of its float arguments: this call's values (scalars.py)
        body.insert(0, "B = _scalar_cell[0]")
        from .symbolic import bind

        namespace["_scalar_cell"] = cell
        namespace["_bind"] = bind
    outputs = list(iter_values(graph.output.structure)) if graph.output is not None else []
    body.append(f"return ({''.join(v.name + ', ' for v in outputs)})")
    if getattr(graph, "inference", False):  # the function entered inference_mode itself (tracer.finish)
        body.insert(0, "_state.inference = True")
    # The graph holds the casts autocast made at capture, so the replay runs with autocast's hook off (an
    # `autocast(enabled=False)` region inside was cast again under an outer autocast); and it leaves grad mode
    # as the capture's call did (`set_grad_enabled(False)` inside: eager keeps it off after the call).
    exit_mode = getattr(graph, "exit_grad_enabled", None)
    body.insert(0, f"_state.enabled = {getattr(graph, 'entry_grad_enabled', True)}")  # a later segment's start
    lines.append("    _entry = (_state.enabled, _state.inference, _dispatch.autocast)")
    lines.append("    _dispatch.autocast = None")
    lines.append("    try:")
    lines += ["        " + line for line in body]
    lines.append("    finally:")
    lines.append("        _state.enabled, _state.inference, _dispatch.autocast = _entry")
    if exit_mode is not None:
        lines.append(f"        _state.enabled = {exit_mode}")
    from .. import _dispatch

    namespace["_dispatch"] = _dispatch
    return "\n".join(lines) + "\n", namespace
