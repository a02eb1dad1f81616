"""From a captured graph to something callable: dead-code elimination, fusion, kernels, the replay function.

Each fusion group becomes one `OpDef` (a FusedKernel) called through the normal dispatch path, so
autograd records it like any op.  Its backward recomputes the group's original ops eagerly from the
saved inputs and differentiates them (ember ops: double backward works); correct by construction,
and no backward kernel to get wrong.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .._autograd.grad_mode import no_grad, state
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef
from .._tensor import Tensor
from . import autodiff, codegen, fusion, symbolic
from .graph import Graph, Node, Value, iter_values, map_structure
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
            needed = getattr(node, "random", False)  # a random factory's draw advances the generator too
        if needed:
            kept.append(node)
            for value in iter_values(node.args):
                live.add(id(value.node))
        elif node.kind in ("call", "detach", "external"):
            removed += node.kind != "external"
    graph.nodes = list(reversed(kept))
    return removed


def _remap(graph: Graph, mapping: dict) -> None:
    """Point every use of a Value in `mapping` (by id) at its replacement: node args, outputs, kept writes."""
    for node in graph.nodes:
        node.args = _swap_values(node.args, mapping)
    if graph.output is not None:
        graph.output.structure = _swap_values(graph.output.structure, mapping)
    graph.mutations = [(_swap_values(target, mapping), _swap_values(new, mapping), mode)
                       for target, new, mode in graph.mutations]


def _swap_values(structure, mapping: dict):
    return map_structure(structure, lambda value: mapping.get(id(value), value))


def _frozen(value):
    """A hashable stand-in for an op's argument or param: values and literals as they are, containers
    item by item, anything else (arrays, generators, objects) by identity -- never equal by accident."""
    if isinstance(value, Value):
        return ("value", id(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_frozen(item) for item in value))
    if isinstance(value, dict):
        return ("dict", tuple((key, _frozen(item)) for key, item in value.items()))
    if type(value) is float:  # by sign too: 0.0 == -0.0, yet x + -0.0 and x + 0.0 differ at x = -0.0
        return (float, value, math.copysign(1.0, value))
    if type(value) is complex:
        return (complex, _frozen(value.real), _frozen(value.imag))
    if value is None or type(value) in (int, bool, str):
        return (type(value), value)
    return ("id", id(value))


def _sinks(graph: Graph) -> set:
    """ids of the Values a caller receives or a kept in-place write names: they keep their own tensors."""
    found = {id(v) for v in iter_values(graph.output.structure)} if graph.output is not None else set()
    for target, new, _ in graph.mutations:
        found.update((id(target), id(new)))
    return found


def eliminate_common_subexpressions(graph: Graph) -> int:
    """Drop a call that repeats an earlier one (same op, operands, params and grad mode): its uses read the
    earlier results (`x.exp() + x.exp()` computes one exp).  Random ops are never merged, and neither are calls
    whose results the caller receives (two outputs must stay two tensors)."""
    sinks = _sinks(graph)
    seen: dict = {}
    mapping: dict = {}
    kept = []
    for node in graph.nodes:
        if node.kind == "call" and node.args and node.op is not None:
            node.args = _swap_values(node.args, mapping)
            key = (id(node.op), _frozen(node.args), _frozen(node.params), node.grad_enabled)
            # (a size-generic node is never merged: two nodes equal at this size, x / 4 and x / (B - 1), differ
            # at others)
            mergeable = ("generator" not in node.params and not any(id(v) in sinks for v in node.results)
                         and node.symbolic_params is None and node.symbolic_args is None)
            earlier = seen.get(key) if mergeable else None
            if earlier is not None and len(earlier.results) == len(node.results):
                mapping.update((id(v), e) for v, e in zip(node.results, earlier.results))
                continue
            if mergeable:
                seen[key] = node
        kept.append(node)
    graph.nodes = kept
    if mapping:
        _remap(graph, mapping)
    return len(mapping)


def _constant(node: Node) -> bool:
    """An external whose value is the same at every call: a tensor made in the function from numbers (not a
    random draw, not remade at each call's sizes, not a leaf that requires grad)."""
    return (node.kind == "external" and getattr(node, "created", False) and not getattr(node, "random", False)
            and node.symbolic_params is None and not node.tensor._requires_grad)


def fold_constants(graph: Graph) -> int:
    """Compute at compile time every call whose operands are all constants (a causal mask `ones(T, T).tril()`,
    `arange(T).float().exp()`): its results become constants of the graph, computed by the same op as eager.
    A folded value the caller receives, or a kept write names, is copied for each call (as made tensors are)."""
    sinks = _sinks(graph)
    constant: dict = {}  # id(Value) -> tensor
    for node in graph.nodes:
        if _constant(node):
            constant[id(node.results[0])] = node.tensor
    kept = []
    folded = 0
    for node in graph.nodes:
        operands = list(iter_values(node.args))
        if (node.kind != "call" or not operands or "generator" in node.params or getattr(node, "index_args", 0)
                or node.symbolic_params is not None or node.symbolic_args is not None
                or any(v.symbolic_shape is not None for v in node.results)
                or not all(id(v) in constant for v in operands)):
            kept.append(node)
            continue
        args = map_structure(node.args, lambda value: constant[id(value)])
        with no_grad():
            results = _dispatch.call(node.op, args, node.params)
        results = results if isinstance(results, tuple) else (results,)
        for value, tensor in zip(node.results, results):
            external = Node("external", value.name, tensor=tensor, path=f"a constant, folded from {node.op.name}")
            external.results = [value]
            value.node, value.index = external, 0
            external.created = id(value) in sinks  # (a fresh copy per call, as made tensors)
            constant[id(value)] = tensor
            kept.append(external)
        folded += 1
    graph.nodes = kept
    return folded


def split_linear_bias(graph: Graph) -> None:
    """linear(x, w, b) whose every user is a fusible pointwise op becomes linear(x, w) + b, so the bias add
    joins the consumer's kernel (GELU after an MLP's first linear, the residual add after a projection)
    instead of being its own pass over the output; the bias gradient is then the kernel's broadcast-input sum."""
    from .._ops.elementwise import _ADD

    users = graph.users()
    nodes = []
    for node in graph.nodes:
        nodes.append(node)
        if node.kind != "call" or node.op.name != "linear" or len(node.args) < 3 or not isinstance(node.args[2], Value):
            continue
        out, bias = node.results[0], node.args[2]
        consumers = users.get(out, [])
        if (bias.shape != out.shape[-1:] or out.dtype.name not in fusion.FLOAT_TYPES or not consumers
                or any(user.kind != "call" or fusion.kind_of(user) != "pointwise" for user in consumers)):
            continue
        product = Value(node, 0, out.shape, out.dtype, out.device, graph.fresh_name("mm_"),
                        out.requires_grad, out.symbolic_shape)
        add = Node("call", graph.fresh_name("bias_add_"), op=_ADD, args=(product, bias), params={},
                   grad_enabled=node.grad_enabled, source=node.source)
        node.args = node.args[:2] + (None,) + node.args[3:]
        node.results = [product]
        out.node, out.index = add, 0
        add.results = [out]
        add.results_original = [out]  # (CompiledGraph set the others' before fusion; recompute_backward reads it)
        nodes.append(add)
    graph.nodes = nodes


def fuse(graph: Graph, options: dict) -> tuple[list, str]:
    """Replace each worthwhile group by one fused node; returns (groups, kernel source)."""
    split_linear_bias(graph)
    users = graph.users()
    in_place = frozenset(id(new.node) for target, new, _ in graph.mutations
                         if new.node.kind == "call" and target in new.node.args and not new.requires_grad)
    generic = getattr(graph, "generic", False)
    groups = fusion.find_groups(
        graph.nodes, 1 if options.get("fuse_single") else 2, users, in_place,
        flat=(lambda value: symbolic.product(symbolic.symbolic_shape(value)) is not None) if generic else
        (lambda value: True))
    if not groups:
        return [], ""
    kernels = []
    backwards = []
    for number, group in enumerate(groups):
        kernels.append(fusion.build_kernel(group, f"{group.name}_{number}", users))
        backward = None
        wanted = {index for index, value in enumerate(group.inputs) if value.requires_grad}
        if group.grad_enabled and wanted and options.get("backward_kernels", True):
            backward = autodiff.build_backward_kernel(group, f"{group.name}_{number}_backward", wanted)
        backwards.append(backward)
    kernels += [b.kernel for b in backwards if b is not None]
    spaces = [_symbolic_space(group) if generic else None for group in groups]  # NotGeneric before any change
    printer = codegen.printer_for(options)
    if isinstance(printer, codegen.CPrinter):
        for group in groups:
            group.kernel.aliases = inplace_outputs(graph, group, users)
    try:
        built, source = printer.build(kernels)
    except codegen.CompilerMissing as error:
        codegen.warn_fallback(str(error))
        printer = codegen.NumpyPrinter()
        built, source = _numpy_build(printer, kernels)
    except codegen.CompileError as error:
        codegen.warn_fallback(f"the C compiler failed ({error})")
        printer = codegen.NumpyPrinter()
        built, source = _numpy_build(printer, kernels)
    codegen.log("output_code", source, options)
    for group, kernel, backward, space in zip(groups, kernels, backwards, spaces):
        if backward is not None:
            backward.run = built[backward.kernel.name]
        op = make_fused_op(group, kernel, built[kernel.name], backward)
        _replace(graph, group, op, space)
    if options.get("horizontal", True):
        fuse_horizontally(graph, printer)
    graph.nodes = _schedule(graph.nodes)
    return groups, source


def _numpy_build(printer, kernels):
    for kernel in kernels:  # NumPy kernels compute whole-array temporaries: an output may not overwrite an input
        kernel.aliases = {}
    return printer.build(kernels)


def inplace_outputs(graph: Graph, group, users) -> dict:
    """{output index: argument position} for outputs that are in-place writes to one of the kernel's inputs
    (an optimizer's parameter and moment updates): the kernel writes them into that input's memory, so the
    write-back at the end of the graph finds the values already there (`Tensor._inplace_from` skips the
    copy) and the update costs one pass over memory instead of three.

    Only when that is invisible: a flat (elementwise) C kernel that autograd does not record, the input read whole
    ("full") by this kernel and by nothing else in the graph, the new value not a graph output.  At run time
    the fused op also checks that the input array is used as is (contiguous, no copy) and shares no memory
    with the kernel's other inputs; otherwise it writes a new array as usual."""
    kernel = group.kernel
    if not kernel.flat or not graph.mutations or group.grad_enabled and any(v.requires_grad for v in group.inputs):
        return {}  # (an input that requires grad is saved for backward: it must keep its values)
    outputs = {id(v) for v in iter_values(graph.output.structure)} if graph.output is not None else set()
    aliases = {}
    for target, new, _ in graph.mutations:
        if new.requires_grad or id(new) in outputs or new not in group.outputs or target not in group.inputs:
            continue
        out_index = group.outputs.index(new)
        input_index = group.inputs.index(target)
        positions = [p for p, (index, kind, _) in enumerate(kernel.args) if index == input_index]
        if (len(positions) != 1 or kernel.args[positions[0]][1] != "full" or kernel.outputs[out_index][1] != "elem"
                or target.shape != new.shape or target.dtype is not new.dtype
                or any(id(u) not in group.members for u in users.get(target, ()))
                or positions[0] in aliases.values()):
            continue
        aliases[out_index] = positions[0]
    return aliases


def _symbolic_space(group):
    """{"L", "K", "shapes"} of a group in a size-generic graph (None when no size in it depends on the batch).
    The row length K is symbolic when a full-shaped value of the group has a symbolic last dim (a softmax over
    a sequence that grows)."""
    first = group.outputs[0]
    shape = symbolic.symbolic_shape(first)
    L = shape[:-1] if group.level_of(first.shape) == "elem" else shape[:len(group.L)]
    shapes = tuple(symbolic.symbolic_shape(v) for v in group.outputs)
    for node in group.nodes:
        if node.symbolic_params is not None:
            raise symbolic.NotGeneric(f"{node.name}: a fused op's params depend on the batch size")
    if group.original is not None:  # flattened: one row of every element (fusion.FusionGroup.flatten)
        whole = next(v for n in group.nodes for v in (*n.args, *n.results)
                     if isinstance(v, Value) and tuple(v.shape) == group.original)
        K = symbolic.product(symbolic.symbolic_shape(whole))
        return {"L": (1,), "K": K, "shapes": shapes} if symbolic.is_symbolic((K, shapes)) else None
    full = tuple(group.L) + (group.K,)
    widths = {symbolic.symbolic_shape(v)[-1] for v in (*group.inputs, *(r for n in group.nodes for r in n.results))
              if tuple(v.shape) == full}
    if len(widths) != 1:
        raise symbolic.NotGeneric(f"{first.name}: the fused row length is {sorted(map(str, widths))}")
    K = widths.pop()
    if not symbolic.is_symbolic((L, K, shapes)):
        return None
    return {"L": L, "K": K, "shapes": shapes}


def _replace(graph: Graph, group, op, space=None) -> None:
    node = Node("fused", graph.fresh_name("fused_"), op=op, args=tuple(group.inputs), grad_enabled=group.grad_enabled,
                group=group, source=group.nodes[-1].source)
    if space is not None:
        node.symbolic_params = space
        node.params = symbolic.bind(space, 0)  # printed in graph.code; the runner binds the call's B
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
    def leading(node) -> bool:  # inputs first; a random draw (randn_like) keeps its place among random ops
        return node.kind == "placeholder" or (node.kind == "external" and not getattr(node, "random", False))

    produced = set()
    for node in nodes:
        if leading(node):
            produced.update(id(v) for v in node.results)
    pending = [n for n in nodes if not leading(n)]
    ordered = [n for n in nodes if leading(n)]
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


counters = {"backward_kernel": 0, "backward_recompute": 0}  # backward calls of fused groups (tests read it)


def sum_to(array, shape: tuple):
    """An array of the group's full (or row) shape summed back to an input's shape (a broadcast input)."""
    if array.shape == shape:
        return array
    if array.size == math.prod(shape):
        return array.reshape(shape)
    lead = array.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and array.shape[lead + i] != 1)
    return array.sum(axis=axes, keepdims=True).reshape(shape)


class _Space:
    """A fused op's iteration space: L, R, K, the full and row shapes, the output shapes."""

    __slots__ = ("L", "K", "R", "full", "row", "shapes")

    def __init__(self, L: tuple, K: int, shapes) -> None:
        self.L, self.K, self.R = L, K, math.prod(L)
        self.full = L + (K,)
        self.row = L + (1,)
        self.shapes = shapes


def make_fused_op(group, kernel, run_kernel, backward_kernel=None) -> OpDef:
    """The FusedKernel op of a group.  Its params are empty (sizes baked in), or, in a size-generic graph,
    {"L": ..., "K": ..., "shapes": ...} bound to the call's batch size (see symbolic.py)."""
    outputs = list(group.outputs)
    static = _Space(group.L, group.K, [v.shape for v in outputs])
    dtypes = tuple(v.dtype for v in outputs)
    specs = kernel.args
    n_out = len(outputs)
    np_dtype = group.dtype.np_dtype

    def space_of(params):
        return static if not params else _Space(tuple(params["L"]), params["K"], params["shapes"])

    def prepare(array, kind, space):
        if kind in ("full", "dense"):
            if array.shape != space.full:
                # (a flattened group's whole values are one row of the same memory: FusionGroup.flatten)
                array = array.reshape(space.full) if kind == "full" and array.size == space.R * space.K else \
                    np.broadcast_to(array, space.full)
            return array if array.flags.c_contiguous else np.ascontiguousarray(array)
        if kind == "row":
            if array.shape != space.row and array.size == space.R:
                array = array.reshape(space.row)
            elif array.shape != space.row:
                array = np.broadcast_to(array.reshape(array.shape + (1,)) if array.shape == space.L else array,
                                        space.row)
            return np.ascontiguousarray(array)
        return np.ascontiguousarray(array).reshape(-1)

    aliases = kernel.aliases

    def setup(arrays, params):
        """The kernel's argument arrays (inputs laid out by kind, then the outputs) and its space (R, K)."""
        space = space_of(params)
        prepared = [prepare(arrays[index], kind, space) for index, kind, _ in specs]
        results = [np.empty(shape, np_dtype) for shape in space.shapes]
        for out_index, position in aliases.items():  # see inplace_outputs
            target = prepared[position]
            # (arrays that own their memory cannot overlap: the common case skips may_share_memory)
            if (target is arrays[specs[position][0]] and target.dtype == np_dtype and target.flags.writeable
                    and target.shape == results[out_index].shape and not any(
                        p is not target and not (p.base is None and target.base is None)
                        and np.may_share_memory(p, target) for p in prepared)):
                results[out_index] = target
        return prepared + results, space

    def impl(xp, *arrays, **params):
        kernel_arrays, space = setup(arrays, params)
        run_kernel(kernel_arrays, space.R, space.K)
        results = kernel_arrays[len(specs):]
        return results[0] if n_out == 1 else tuple(results)

    def kernel_backward(ctx, grads):
        """One generated kernel computes every needed input gradient (see autodiff.py)."""
        space = space_of(ctx.params)
        inputs = ctx.inputs
        arrays = []
        for index, kind, _ in backward_kernel.kernel.args:
            if index < backward_kernel.n_inputs:
                arrays.append(prepare(inputs[index]._data, kind, space))
            else:
                grad = grads[index - backward_kernel.n_inputs]._data
                if grad.dtype != np_dtype:
                    grad = grad.astype(np_dtype)
                arrays.append(prepare(grad, kind, space))
        results = [np.zeros(space.K, np.float64) if level == "col" else
                   np.empty(space.full if level == "elem" else space.row, np_dtype)
                   for _, level in backward_kernel.output_specs]
        backward_kernel.run(arrays + results, space.R, space.K)
        counters["backward_kernel"] += 1
        totals: dict = {}
        for (indices, level), array in zip(backward_kernel.output_specs, results):
            if level == "col":  # K sums (double) of a gradient over the last dim
                array = array.astype(np_dtype)
            for index in indices:
                shape = inputs[index]._data.shape
                if array.shape != shape and array.size == math.prod(shape):  # a flattened group's value
                    array = array.reshape(shape)
                summed = sum_to(array, shape)
                totals[index] = summed if index not in totals else totals[index] + summed
        out, made = [], {}
        for index, (tensor, need) in enumerate(zip(inputs, ctx.needs_input_grad)):
            if not need:
                out.append(None)
                continue
            array = totals.get(index)
            if array is None:
                array = np.zeros(tensor._data.shape, np_dtype)
            # inputs given one array get one Tensor: the engine clones it where two leaves would share a .grad
            grad = made.get(id(array))
            if grad is None or grad._dtype is not tensor._dtype:
                grad = made[id(array)] = Tensor._make(np.ascontiguousarray(array), tensor._dtype, tensor._device)
            out.append(grad)
        return tuple(out)

    def backward(ctx, grads):
        grads = grads if isinstance(grads, tuple) else (grads,)
        # grad mode on during backward (create_graph=True): the recompute path, whose ops are differentiable
        if backward_kernel is not None and not state.enabled and all(
                not need or index in backward_kernel.covered for index, need in enumerate(ctx.needs_input_grad)):
            return kernel_backward(ctx, grads)
        counters["backward_recompute"] += 1
        return recompute_backward(group, ctx, grads)

    def meta(args, params):
        shapes = space_of(params).shapes
        return shapes[0] if n_out == 1 else tuple(shapes)

    # several outputs: the results are kept (shapes) so autograd can zero-fill the gradient of an output that
    # only non-differentiable ops read (a sum that only a comparison reads, before a graph break)
    op = OpDef(kernel.name, impl, backward,
               dtype_rule=lambda args, params: (None, dtypes[0] if n_out == 1 else dtypes),
               meta=meta, saves=SAVE_INPUTS | (SAVE_RESULT if n_out > 1 else 0), outputs=n_out, upcast_half=False,
               grad_name="FusedKernelBackward")
    group.setup = setup  # for a horizontal op running this kernel with others (fuse_horizontally)
    return op


def fuse_horizontally(graph: Graph, printer) -> int:
    """Fused nodes that run one shared flat C function, are not recorded by autograd and do not depend on
    each other (an optimizer's per-parameter updates) become one node whose op calls the function's `_each`
    loop once over all their argument sets: one dispatch and one C call instead of one per parameter (a
    compiled Adam step on the GPT model's 53 parameters: 4.47 -> 4.06 ms, best of 600; each member's arrays
    are still prepared and its outputs wrapped in Python).  Returns the nodes merged."""
    each = getattr(printer, "each", {})
    if not each:
        return 0
    candidates: dict = {}
    for node in graph.nodes:
        if node.kind != "fused" or node.symbolic_params is not None:
            continue
        group = node.group
        name = printer.shared.get(group.kernel.name)
        recorded = group.grad_enabled and any(v.requires_grad for v in group.inputs)
        if name in each and not recorded:
            candidates.setdefault((name, group.grad_enabled), []).append(node)
    candidates = {key: nodes for key, nodes in candidates.items() if len(nodes) > 1}
    if not candidates:
        return 0
    # the candidates each node depends on (sets of candidate ids only: small even in a large graph)
    wanted = {id(node) for nodes in candidates.values() for node in nodes}
    ancestors: dict = {}
    for node in graph.nodes:
        found = set()
        for value in iter_values(node.args):
            producer = id(value.node)
            if producer in wanted:
                found.add(producer)
            found |= ancestors.get(producer, frozenset())
        ancestors[id(node)] = found
    merged = 0
    for (name, grad_enabled), nodes in candidates.items():
        batch = []
        for node in nodes:  # in graph order: a later node may depend on an earlier one, never the reverse
            if not any(id(member) in ancestors[id(node)] for member in batch):
                batch.append(node)
        if len(batch) < 2:
            continue
        _merge(graph, batch, each[name], grad_enabled)
        merged += len(batch)
    return merged


def _merge(graph: Graph, nodes: list, each_fn, grad_enabled: bool) -> None:
    """Replace `nodes` (fused, independent, one shared C function) by one node calling `each_fn` over them."""
    setups = [node.group.setup for node in nodes]
    n_outputs = [node.op.outputs for node in nodes]
    counts = [len(node.args) for node in nodes]
    per_set = len(nodes[0].group.kernel.args) + len(nodes[0].group.kernel.outputs)
    results = [value for node in nodes for value in node.results]
    dtypes = tuple(value.dtype for value in results)
    shapes = tuple(tuple(value.shape) for value in results)

    def impl(xp, *arrays):
        sets, sizes, outputs, start = [], [], [], 0
        for setup, count, n_out in zip(setups, counts, n_outputs):
            kernel_arrays, space = setup(arrays[start:start + count], {})
            start += count
            sets.append(kernel_arrays)
            sizes.append(space.R * space.K)  # a flat kernel loops over R * K elements
            outputs += kernel_arrays[per_set - n_out:]
        pointers = np.fromiter((a.ctypes.data for arrays in sets for a in arrays), np.uintp,
                               count=per_set * len(sets)).reshape(len(sets), per_set)
        codegen.run_each(each_fn, pointers, np.asarray(sizes, np.int64))
        return tuple(outputs)

    def backward(ctx, grads):
        raise RuntimeError("ember.compile: a horizontal kernel is only made for steps autograd does not record")

    name = f"{nodes[0].op.name}_x{len(nodes)}"
    op = OpDef(name, impl, backward, dtype_rule=lambda args, params: (None, dtypes),
               meta=lambda args, params: shapes, outputs=len(results), upcast_half=False,
               grad_name="HorizontalKernelBackward")
    merged = Node("fused", graph.fresh_name("horizontal_"), op=op,
                  args=tuple(a for node in nodes for a in node.args), grad_enabled=grad_enabled,
                  source=nodes[-1].source)
    merged.group = nodes[0].group
    merged.members = nodes
    merged.results = results
    for index, value in enumerate(results):
        value.node, value.index = merged, index
    members = {id(node) for node in nodes}
    position = max(i for i, n in enumerate(graph.nodes) if id(n) in members)
    graph.nodes = [n for n in graph.nodes[:position] if id(n) not in members] + [merged] + \
                  [n for n in graph.nodes[position + 1:] if id(n) not in members]


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
            # differentiable aliases, not the inputs themselves: the nested grad() then stops at this group
            # (differentiating to the inputs directly ran the nested engine through the outer graph's nodes)
            leaves = [x.view_as(x) if need else x for x, need in zip(inputs, needs)]
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
        if getattr(graph, "generic", False):
            graph.batch_source = symbolic.batch_source(graph)
            if graph.batch_source is None:
                raise symbolic.NotGeneric("no argument carries the batch dim")
        self.captured_code = graph.code
        codegen.log("graph_code", self.captured_code, options)
        options = options or {}
        self.folded = self.merged = 0
        if options.get("passes", True):  # constant folding and CSE (options={"passes": False} skips them)
            self.folded = fold_constants(graph)
            self.merged = eliminate_common_subexpressions(graph)
        self.dead = eliminate_dead_code(graph)
        for node in graph.nodes:
            node.results_original = list(node.results)
        options = options or {}
        self.groups, self.kernel_source = ([], "") if options.get("fusion") is False else fuse(graph, options)
        if self.groups:  # fused outputs are row-major: a captured view may need a copy at replay (REPLAY_VIEWS)
            from .._ops.views import REPLAY_VIEWS

            for node in graph.nodes:
                if node.kind == "call" and id(node.op) in REPLAY_VIEWS:
                    node.op = REPLAY_VIEWS[id(node.op)]
        self.code = graph.code
        if self.groups:
            codegen.log("graph_code", "after fusion:\n" + self.code, options)
        source, namespace = runner_source(graph)
        namespace["_call"] = _dispatch.call
        namespace["_state"] = state
        self.runner_source = source
        exec(compile(source, "<ember.compile graph>", "exec"), namespace)
        self.run = namespace["run"]
