"""From a captured graph to something callable: dead-code elimination, fusion, kernels, the replay function.

Each fusion group becomes one `OpDef` (a FusedKernel) called through the normal dispatch path, so
autograd records it like any op.  Its backward recomputes the group's original ops eagerly from the
saved inputs and differentiates them (ember ops: double backward works); correct by construction,
and no backward kernel to get wrong.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._autograd.grad_mode import state
from .._dispatch import SAVE_INPUTS, OpDef
from . import codegen, fusion
from .graph import Graph, Node, Value, iter_values
from .printing import runner_source


def eliminate_dead_code(graph: Graph) -> int:
    """Drop call nodes whose results nobody reads (random ops stay: they advance the generator)."""
    live = set()
    for value in iter_values(graph.output.structure) if graph.output else ():
        live.add(id(value.node))
    for target, new, _ in graph.mutations:
        live.add(id(target.node))
        live.add(id(new.node))
    kept = []
    removed = 0
    for node in reversed(graph.nodes):
        needed = id(node) in live or node.kind == "placeholder" or (node.kind == "call" and "generator" in node.params)
        if node.kind == "external" and id(node) not in live:
            needed = False
        if needed:
            kept.append(node)
            for value in iter_values(node.args):
                live.add(id(value.node))
        elif node.kind in ("call", "detach", "external"):
            removed += node.kind != "external"
    graph.nodes = list(reversed(kept))
    return removed


def fuse(graph: Graph, options: dict) -> tuple[list, str]:
    """Replace each worthwhile group by one fused node; returns (groups, kernel source)."""
    groups = fusion.find_groups(graph.nodes, 1 if options.get("fuse_single") else 2)
    if not groups:
        return [], ""
    users = graph.users()
    kernels = []
    for number, group in enumerate(groups):
        kernels.append(fusion.build_kernel(group, f"{group.name}_{number}", users))
    printer = codegen.printer_for(options)
    try:
        built, source = printer.build(kernels)
    except codegen.CompilerMissing as error:
        codegen.warn_fallback(str(error))
        printer = codegen.NumpyPrinter()
        built, source = printer.build(kernels)
    except codegen.CompileError as error:
        codegen.warn_fallback(f"the C compiler failed ({error})")
        printer = codegen.NumpyPrinter()
        built, source = printer.build(kernels)
    codegen.log("output_code", source, options)
    for group, kernel in zip(groups, kernels):
        op = make_fused_op(group, kernel, built[kernel.name])
        _replace(graph, group, op)
    graph.nodes = _schedule(graph.nodes)
    return groups, source


def _replace(graph: Graph, group, op) -> None:
    node = Node("fused", graph.fresh_name("fused_"), op=op, args=tuple(group.inputs), grad_enabled=group.grad_enabled,
                group=group, source=group.nodes[-1].source)
    node.results = []
    for index, value in enumerate(group.outputs):
        # the group's outputs keep their Value objects (consumers point at them); they now come from the fused node
        value.node = node
        value.index = index
        node.results.append(value)
    members = group.members
    position = max(i for i, n in enumerate(graph.nodes) if id(n) in members)
    graph.nodes = [n for n in graph.nodes[:position] if id(n) not in members] + [node] + \
                  [n for n in graph.nodes[position + 1:] if id(n) not in members]


def _schedule(nodes: list) -> list:
    """A topological order that keeps the original order where it can (fused nodes moved up as needed)."""
    produced = set()
    for node in nodes:
        if node.kind in ("placeholder", "external"):
            produced.update(id(v) for v in node.results)
    pending = [n for n in nodes if n.kind not in ("placeholder", "external")]
    ordered = [n for n in nodes if n.kind in ("placeholder", "external")]
    while pending:
        for index, node in enumerate(pending):
            if all(id(v) in produced for v in iter_values(node.args)):
                ordered.append(node)
                produced.update(id(v) for v in node.results)
                del pending[index]
                break
        else:
            raise RuntimeError("ember.compile: fusion produced a cycle (a bug); names: "
                               + ", ".join(n.name for n in pending))
    return ordered


# ---------------------------------------------------------------- fused ops


def make_fused_op(group, kernel, run_kernel) -> OpDef:
    outputs = list(group.outputs)
    shapes = [v.shape for v in outputs]
    dtypes = tuple(v.dtype for v in outputs)
    full = group.full_shape
    row_shape = group.L + (1,)
    R, K = group.R, group.K
    specs = kernel.args
    n_out = len(outputs)
    np_dtype = group.dtype.np_dtype

    def prepare(array, kind):
        if kind in ("full", "dense"):
            if array.shape != full:
                array = np.broadcast_to(array, full)
            return array if array.flags.c_contiguous else np.ascontiguousarray(array)
        if kind == "row":
            if array.shape != row_shape:
                array = np.broadcast_to(array.reshape(array.shape + (1,)) if array.shape == group.L else array,
                                        row_shape)
            return np.ascontiguousarray(array)
        return np.ascontiguousarray(array).reshape(-1)

    def impl(xp, *arrays):
        prepared = [prepare(arrays[index], kind) for index, kind, _ in specs]
        results = [np.empty(shape, np_dtype) for shape in shapes]
        run_kernel(prepared + results, R, K)
        return results[0] if n_out == 1 else tuple(results)

    def backward(ctx, grads):
        return recompute_backward(group, ctx, grads)

    def meta(args, params):
        return shapes[0] if n_out == 1 else tuple(shapes)

    op = OpDef(kernel.name, impl, backward, dtype_rule=lambda args, params: (None, dtypes[0] if n_out == 1 else dtypes),
               meta=meta, saves=SAVE_INPUTS, outputs=n_out, upcast_half=False, grad_name="FusedKernelBackward")
    return op


def recompute_backward(group, ctx, grads):
    """Re-run the group's original ops eagerly from the saved inputs and differentiate them."""
    from .. import autograd

    grads = grads if isinstance(grads, tuple) else (grads,)
    create_graph = state.enabled
    inputs = ctx.inputs
    needs = ctx.needs_input_grad
    previous = state.enabled
    state.enabled = True
    try:
        if create_graph:
            leaves = list(inputs)
        else:
            leaves = [x.detach().requires_grad_(bool(need)) if need else x.detach() for x, need in zip(inputs, needs)]
        env = {id(v): leaf for v, leaf in zip(group.inputs, leaves)}
        for node in group.nodes:
            args = tuple(env[id(a)] if isinstance(a, Value) else a for a in node.args)
            results = _dispatch.call(node.op, args, node.params)
            results = results if isinstance(results, tuple) else (results,)
            for value, tensor in zip(node.results_original, results):
                env[id(value)] = tensor
        outs, grad_outs = [], []
        for value, grad in zip(group.outputs, grads):
            tensor = env[id(value)]
            if grad is not None and tensor._requires_grad:
                outs.append(tensor)
                grad_outs.append(grad)
        wanted = [leaf for leaf, need in zip(leaves, needs) if need]
        if not outs or not wanted:
            return tuple(None for _ in inputs)
        got = autograd.grad(outs, wanted, grad_outs, allow_unused=True, create_graph=create_graph)
    finally:
        state.enabled = previous
    it = iter(got)
    return tuple(next(it) if need else None for need in needs)


# ---------------------------------------------------------------- the compiled graph


class CompiledGraph:
    """A graph ready to run: `run(placeholder tensors) -> output tensors`."""

    def __init__(self, graph: Graph, options: dict) -> None:
        self.graph = graph
        self.captured_code = graph.code
        codegen.log("graph_code", self.captured_code, options)
        self.dead = eliminate_dead_code(graph)
        for node in graph.nodes:
            node.results_original = list(node.results)
        options = options or {}
        self.groups, self.kernel_source = ([], "") if options.get("fusion") is False else fuse(graph, options)
        self.code = graph.code
        if self.groups:
            codegen.log("graph_code", "after fusion:\n" + self.code, options)
        source, namespace = runner_source(graph)
        namespace["_call"] = _dispatch.call
        namespace["_state"] = state
        self.runner_source = source
        exec(compile(source, "<ember.compile graph>", "exec"), namespace)
        self.run = namespace["run"]
