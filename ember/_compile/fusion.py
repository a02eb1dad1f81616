"""Group pointwise chains (and the last-dim reductions that end them) into kernels described by a tiny micro-IR.

Iteration space.  A group iterates over `R` rows of `K` elements: its full shape is
L + (K,) with R = prod(L).  A value in the group lives at one of two levels:

- elem: the full shape (one value per element);
- row: L + (1,) or L (one value per row: a reduction over the last dim, or math on such values).

Pointwise ops join a group when their output has the group's full (or row) shape;
sum/mean/amax over the last dim take an elem value to a row value; softmax,
log_softmax and layer norm over the last dim are spelled out as those primitives.
A node may join a group only if none of its other inputs depends on the group
(no cycles); groups of one cheap pointwise op are left as eager calls (no gain), but
one op in SINGLE_WORTH (GELU between two linears: eager computes erf as a NumPy
polynomial, ~10 array passes forward and more backward) gets its kernel.

Kernel micro-IR: a list of steps, each a temporary, printed by a printer
(codegen.py).  ("load", name, level, arg), ("op", name, level, c, numpy, deps),
("reduce", name, kind, source, divide).  Inputs are classified so that the
kernel indexes them without div/mod: full [r*K+k], suffix [k] (a bias over the
last dim), row [r], scalar [0]; anything else is materialised to full first.
"""

from __future__ import annotations

import math

from . import lowering
from .graph import Node, Value

FLOAT_TYPES = ("float32", "float64")
_C_TYPES = {"float32": "float", "float64": "double"}
# ops worth a kernel on their own: eager spells them as several NumPy passes (forward and backward)
SINGLE_WORTH = frozenset({"gelu", "erf", "silu", "sigmoid"})


class FusionGroup:
    def __init__(self, L: tuple, K: int, dtype, grad_enabled: bool) -> None:
        self.L = L
        self.K = K
        self.R = math.prod(L)
        self.dtype = dtype
        self.grad_enabled = grad_enabled
        self.nodes: list[Node] = []
        self.members: set = set()
        self.first_index = None
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.kernel = None
        self.scalars: set = set()  # ids of 0-d member nodes computed once per kernel call (absorb_scalar_chains)
        self.original = None  # a flattened group's real full shape (flatten)

    def flatten(self) -> None:
        """Iterate over the values' elements as one row (R = 1, K = every element): a pointwise chain over
        whole tensors that ends in full reductions (a loss tail, `((x - y) ** 2).mean()`) becomes one kernel,
        each full reduction that row's reduction.  Memory is laid out the same, so only R and K change."""
        self.original = self.full_shape
        self.L, self.K, self.R = (1,), math.prod(self.original), 1

    @property
    def full_shape(self) -> tuple:
        return self.L + (self.K,)

    def level_of(self, shape: tuple):
        if self.original is not None:  # flattened: whole values, and the full reductions' one-element values
            if shape == self.original:
                return "elem"
            return "row" if math.prod(shape) == 1 and len(shape) in (0, len(self.original)) else None
        if shape == self.full_shape or (shape == () and self.full_shape == (1,)):  # a 0-d group's values
            return "elem"
        if self.K != 1 and shape in (self.L + (1,), self.L):
            return "row"
        return None

    def produces(self, value) -> bool:
        return isinstance(value, Value) and id(value.node) in self.members

    def add(self, node: Node, index: int) -> None:
        self.nodes.append(node)
        self.members.add(id(node))
        if self.first_index is None:
            self.first_index = index

    def absorb(self, other: FusionGroup, index_of: dict) -> None:
        """Take `other`'s nodes (kept in execution order: the kernel computes them in that order)."""
        self.nodes = sorted(self.nodes + other.nodes, key=lambda n: index_of[id(n)])
        self.members |= other.members
        self.first_index = min(self.first_index, other.first_index)

    @property
    def name(self) -> str:
        names = []
        for node in self.nodes:
            if node.op.name not in names:
                names.append(node.op.name)
        return "fused_" + "_".join(names[:4]) + ("_etc" if len(names) > 4 else "")


# ---------------------------------------------------------------- which nodes can fuse


def _tensor_args(node):
    return [a for a in node.args if isinstance(a, Value)]


def kind_of(node: Node):
    """'pointwise', 'reduce', 'composite' or None (not lowerable)."""
    if node.kind != "call" or node.symbolic_args is not None or getattr(node, "scalar_bound", False):
        # (an int operand or a float argument, bound per call: not C text)
        return None
    op = node.op
    out = node.results
    if not out or any(v.dtype.name not in FLOAT_TYPES for v in out) or any(v.device.type != "cpu" for v in out):
        return None
    dtype = out[0].dtype
    if any(v.dtype is not dtype for v in out) or any(0 in v.shape for v in out):
        return None
    for index, arg in enumerate(node.args):
        if isinstance(arg, Value):
            if arg.dtype is not dtype and not (op.name == "where" and index == 0 and arg.dtype.name == "bool"):
                return None
        elif isinstance(arg, bool) or (arg is not None and not isinstance(arg, (int, float))):
            return None
        elif arg is None and not (op.name == "native_layer_norm" and index > 0):
            return None
    if op.name in lowering.POINTWISE and lowering.canonical_ok(op):
        if len(out) == 1 and len(out[0].shape) >= 0:
            return "pointwise"
        return None
    if op.name in lowering.REDUCTIONS:
        source = node.args[0]
        dims = node.params.get("dim")
        ndim = len(source.shape)
        if ndim >= 1 and dims in ((ndim - 1,), [ndim - 1], ndim - 1, -1, (-1,)):
            return "reduce"
        if ndim >= 2 and (dims is None or (isinstance(dims, (tuple, list))
                                           and sorted(d % ndim for d in dims) == list(range(ndim)))):
            return "reduce_all"  # over every dim: joins a flattened group (FusionGroup.flatten)
        return None
    if op.name in ("softmax", "log_softmax"):
        ndim = len(node.args[0].shape)
        return "composite" if ndim >= 1 and node.params.get("dim") in (ndim - 1, -1) else None
    if op.name == "native_layer_norm":
        x = node.args[0]
        ndim = len(x.shape)
        if ndim >= 1 and tuple(node.params.get("axes", ())) == (ndim - 1,):
            K = x.shape[-1]
            # affine per column (layer norm's (K,)) or per row (a channel norm laid out as rows: L + (1,))
            if all(a is None or a.shape in ((K,), tuple(x.shape[:-1]) + (1,)) for a in node.args[1:]):
                return "composite"
        return None
    return None


def _space_of(node: Node, kind: str):
    """(L, K) of the group this node would seed."""
    shape = node.args[0].shape if kind in ("reduce", "composite") else node.results[0].shape
    if not shape:
        return (), 1
    return tuple(shape[:-1]), shape[-1]


def _fits(group: FusionGroup, node: Node, kind: str, depends) -> bool:
    if node.grad_enabled != group.grad_enabled or node.results[0].dtype is not group.dtype:
        return False
    if not _levels_fit(group, node, kind):
        return False
    for arg in _tensor_args(node):
        if not group.produces(arg) and depends(arg, group):
            return False
    return True


def _levels_fit(group: FusionGroup, node: Node, kind: str) -> bool:
    """Whether the kernel can index each of the node's args at its level: a reduction reads a full value; a
    pointwise op at row level reads rows; one at element level may read a row value only as L + (1,) (a
    keepdim result) -- a row value of shape L (`x.sum(-1)`) broadcasts along the *last* dim, not per row."""
    if kind == "reduce_all":
        return group.original is not None and node.args[0].shape == group.original
    if kind in ("reduce", "composite"):
        source = node.args[0]
        if group.original is not None or source.shape != group.full_shape:
            return False
        return not (kind == "reduce" and group.K == 1)
    level = group.level_of(node.results[0].shape)
    if level is None:
        return False
    for arg in _tensor_args(node):
        if group.original is not None:  # flattened: whole values, or one-element ones (a full reduction's)
            if group.produces(arg) or arg.shape == group.original or math.prod(arg.shape) == 1:
                continue
            return False
        if group.produces(arg):
            arg_level = group.level_of(arg.shape)
            if arg_level is None:
                return False
            if level == "row" and arg_level != "row":
                return False
            if level == "elem" and arg_level == "row" and arg.shape != group.L + (1,):
                return False
        elif level == "row" and math.prod(arg.shape) != 1 and arg.shape not in (group.L + (1,), group.L):
            return False
    return True


def _flattenable(group: FusionGroup, source, flat) -> bool:
    """A group of pointwise ops over whole values (every outside operand the full shape or one element) can
    be flattened (FusionGroup.flatten) for a full reduction of its value `source`, if `flat(source)` allows."""
    full = group.full_shape
    if group.original is not None or source.shape != full or group.scalars or math.prod(full) < 2 \
            or not flat(source):
        return False
    for node in group.nodes:
        if kind_of(node) != "pointwise" or tuple(node.results[0].shape) != full:
            return False
        for arg in _tensor_args(node):
            if not group.produces(arg) and tuple(arg.shape) != full and math.prod(arg.shape) != 1:
                return False
    return True


def find_groups(nodes: list, min_size: int = 2, users: dict | None = None, in_place: frozenset = frozenset(),
                flat=lambda value: True) -> list:
    """Greedy grouping over nodes in execution order; returns the groups worth a kernel.  With `users` (the
    graph's Value -> readers table), no-grad groups also take in the 0-d chains that only they read.
    `in_place`: ids of nodes whose result is written back over one of their own inputs (SGD's `p.add_(g)`):
    alone they still get a kernel, which can write straight into that input (runtime.inplace_outputs).
    `flat(value)`: whether a full reduction of `value` may flatten the group that computes it (in a size-generic
    graph, when its element count is a monomial of the symbols)."""
    index_of = {id(n): i for i, n in enumerate(nodes)}
    group_of: dict = {}
    groups: list[FusionGroup] = []

    def depends(value, group, seen=None):
        """Does `value` (transitively) read anything the group produces?"""
        node = value.node
        if id(node) in group.members:
            return True
        if node.kind not in ("call", "detach") or index_of.get(id(node), -1) < group.first_index:
            return False
        seen = set() if seen is None else seen
        if id(node) in seen:
            return False
        seen.add(id(node))
        return any(depends(a, group, seen) for a in _flat_values(node.args))

    for index, node in enumerate(nodes):
        kind = kind_of(node)
        if kind is None:
            continue
        if kind == "reduce_all":
            group = group_of.get(id(node.args[0].node))
            if group is None or not (group.original is not None or _flattenable(group, node.args[0], flat)):
                continue  # (a full reduction never seeds a group: alone it is NumPy's sum)
            if group.original is None:
                group.flatten()
            if _fits(group, node, kind, depends):
                group.add(node, index)
                group_of[id(node)] = group
            continue
        chosen = None
        readers = []  # the groups this node reads from
        for arg in _tensor_args(node):
            group = group_of.get(id(arg.node))
            if group is not None and group not in readers:
                readers.append(group)
        for group in readers:
            if _fits(group, node, kind, depends):
                chosen = group
                break
        if chosen is None:
            if not node.results[0].shape and id(node) not in in_place:
                continue  # 0-d math joins the kernels that read it (absorb_scalar_chains) or stays eager
            L, K = _space_of(node, kind)
            chosen = FusionGroup(L, K, node.results[0].dtype, node.grad_enabled)
            if not _fits(chosen, node, kind, lambda v, g: False):
                continue
            groups.append(chosen)
        chosen.add(node, index)
        group_of[id(node)] = chosen
        # A node joining two chains of one iteration space (an optimizer's moment and parameter updates, two
        # branches meeting in a residual add) merges their groups, unless that would make a cycle.
        for other in readers:
            if other is not chosen and _mergeable(chosen, other, depends):
                chosen.absorb(other, index_of)
                for member in other.nodes:
                    group_of[id(member)] = chosen
                groups.remove(other)
    worth = []
    for group in groups:
        kinds = {kind_of(n) for n in group.nodes}
        if len(group.nodes) >= min_size or kinds & {"reduce", "reduce_all", "composite"} or (
                len(group.nodes) == 1 and (group.nodes[0].op.name in SINGLE_WORTH or id(group.nodes[0]) in in_place)):
            worth.append(group)
    if users is not None:
        for group in worth:
            if group.original is None:
                absorb_scalar_chains(group, index_of, users, group_of)
    return worth


def absorb_scalar_chains(group: FusionGroup, index_of: dict, users: dict, group_of: dict) -> None:
    """Pull into a no-grad group the 0-d pointwise ops feeding it that nothing else reads.

    An optimizer step's bias corrections (1 - beta1 ** step, its square root, lr / that) are 0-d ops per
    parameter: replayed one by one they cost more than the parameter's whole update kernel.  Taken into the
    kernel they are computed once per call before its loop (the printers hoist 0-d math).  Only for groups
    without autograd (a gradient with respect to a 0-d input would be a full reduction) and only ops whose
    result no node outside the group reads (a 0-d output would need its own store).  A chain may be float64
    in a float32 kernel (NAdam and RAdam compute theirs in float64, as eager does in Python floats): it keeps
    its type (`Kernel.types`) up to the cast that feeds the float32 math."""
    if group.grad_enabled:
        return
    pending = [a for n in group.nodes for a in _tensor_args(n) if not group.produces(a)]
    while pending:
        value = pending.pop()
        node = value.node
        if (group.produces(value) or node.kind != "call" or id(node) in group_of or id(node) not in index_of
                or not (kind_of(node) == "pointwise" or _is_scalar_cast(node)) or node.grad_enabled
                or value.shape != () or value.dtype.name not in FLOAT_TYPES
                or any(id(u) not in group.members for u in users.get(value, ()))):
            continue
        group.nodes.append(node)
        group.members.add(id(node))
        group.scalars.add(id(node))
        group_of[id(node)] = group
        group.first_index = min(group.first_index, index_of[id(node)])
        pending += [a for a in _tensor_args(node) if not group.produces(a)]
    group.nodes.sort(key=lambda n: index_of[id(n)])


def _mergeable(a: FusionGroup, b: FusionGroup, depends) -> bool:
    """Whether one kernel can compute both groups: same space and mode, and no value outside them that reads
    one group and feeds the other (the merged kernel would have to run both before and after it)."""
    if (a.L, a.K, a.dtype, a.grad_enabled) != (b.L, b.K, b.dtype, b.grad_enabled):
        return False
    merged = FusionGroup(a.L, a.K, a.dtype, a.grad_enabled)
    merged.members = a.members | b.members
    merged.first_index = min(a.first_index, b.first_index)
    for node in a.nodes + b.nodes:
        for arg in _tensor_args(node):
            if not merged.produces(arg) and depends(arg, merged):
                return False
        # an edge between the two groups must be readable at its level too (a node that _fits refused to
        # take into a group, which then seeded its own, is not merged back: `s = x.sum(-1); s + x`)
        kind = kind_of(node)
        if kind is not None and not _levels_fit(merged, node, kind):
            return False
    return True


def _is_scalar_cast(node: Node) -> bool:
    """A 0-d float -> float dtype conversion (`x.double()`, `.to(torch.float32)`) and nothing else."""
    if node.op.name != "_to_copy" or len(node.results) != 1 or not node.args:
        return False
    source, result = node.args[0], node.results[0]
    return (isinstance(source, Value) and source.shape == () and result.shape == ()
            and source.dtype.name in FLOAT_TYPES and result.dtype.name in FLOAT_TYPES
            and set(node.params) <= {"dtype", "non_blocking", "copy"} and source.device == result.device)


def _flat_values(args):
    for a in args:
        if isinstance(a, Value):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _flat_values(a)


# ---------------------------------------------------------------- the micro-IR of one group


class Kernel:
    """Steps plus argument specs; printers turn it into source."""

    def __init__(self, name: str, ctype: str, R: int, K: int) -> None:
        self.name = name
        self.ctype = ctype
        self.R = R
        self.K = K
        self.steps: list = []
        self.args: list = []  # (input index, kind, ctype)
        self.outputs: list = []  # (temp name, level)
        self.flat = False
        self.aliases: dict = {}  # output index -> argument position it may be written into (runtime.inplace_outputs)
        self.types: dict = {}  # temporaries of another C type than the kernel's (a float64 0-d chain)

    def describe(self) -> str:
        return f"{self.name}: R={self.R} K={self.K} args={[(i, k) for i, k, _ in self.args]}"


class KernelBuilder:
    """Appends steps to a kernel: loads of the group's inputs (by kind), pointwise ops, row reductions.

    Also the emitter the derivative formulas write with (`op`, `lit`): an op's level is the highest of its
    operands' levels (an elem temporary, else row)."""

    def __init__(self, group: FusionGroup, kernel: Kernel, inputs: list) -> None:
        self.group = group
        self.kernel = kernel
        self.inputs = inputs  # the Values the kernel's arrays stand for (appended to by the forward lowering)
        self.suffix = "f" if kernel.ctype == "float" else ""
        self.levels: dict = {}  # temp -> "elem" | "row"
        self.loads: dict = {}
        self.counter = 0

    @staticmethod
    def lit(x):
        return ("literal", x)

    def temp(self, prefix="t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def load_index(self, input_index: int, kind: str, arg_ctype: str = "T") -> str:
        key = (input_index, kind)
        if key in self.loads:
            return self.loads[key]
        self.kernel.args.append((input_index, kind, arg_ctype))
        name = self.temp("in")
        level = "row" if kind in ("row", "scalar") else "elem"
        self.kernel.steps.append(("load", name, level, len(self.kernel.args) - 1, kind))
        self.levels[name] = level
        self.loads[key] = name
        return name

    def load(self, value, level, env) -> str:
        if self.group.produces(value):
            return env[id(value)][0]
        if value not in self.inputs:
            self.inputs.append(value)
        kind = _input_kind(self.group, value.shape, level)
        ctype = ("unsigned char" if value.dtype.name == "bool" else
                 "T" if value.dtype is self.group.dtype or value.dtype.name not in FLOAT_TYPES else
                 _C_TYPES[value.dtype.name])
        name = self.load_index(self.inputs.index(value), kind, ctype)
        if ctype in _C_TYPES.values():  # a 0-d input of the other float type (a float64 step-derived scalar)
            self.kernel.types[name] = ctype
        return name

    def operand(self, arg, level, env):
        if isinstance(arg, Value):
            return self.load(arg, level, env)
        return None if arg is None else ("literal", arg)

    def emit(self, level, c_fn, np_fn, operands, params, ctype=None) -> str:
        """An op step; `ctype` ("double" in a float kernel) types a 0-d chain kept in the other precision."""
        typed = ctype is not None and ctype != self.kernel.ctype
        literal_type = ctype if typed else "T"
        suffix = ("f" if ctype == "float" else "") if typed else self.suffix
        c_args = [lowering.c_literal(o[1], literal_type) if isinstance(o, tuple) else o for o in operands]
        np_args = [_np_literal(o[1]) if isinstance(o, tuple) else o for o in operands]
        name = self.temp()
        if typed:
            self.kernel.types[name] = ctype
        deps = [o for o in operands if isinstance(o, str)]
        self.kernel.steps.append(("op", name, level, c_fn(c_args, params, suffix, lambda x: lowering.c_literal(
            x, literal_type)), np_fn(np_args, params), deps))
        self.levels[name] = level
        return name

    def reduce(self, kind, source, divide) -> str:
        name = self.temp("r")
        self.kernel.steps.append(("reduce", name, kind, source, divide))
        self.levels[name] = "row"
        return name

    def pointwise(self, op_name, level, operands, params=None, ctype=None) -> str:
        c_fn, np_fn = (lowering.POINTWISE.get(op_name) or lowering.HELPERS[op_name])[:2]
        return self.emit(level, c_fn, np_fn, operands, params or {}, ctype)

    def op(self, op_name, *operands, **params) -> str:
        """The derivative formulas' emitter: the level follows the operands."""
        level = "elem" if any(self.levels.get(o) == "elem" for o in operands if isinstance(o, str)) else "row"
        return self.pointwise(op_name, level, list(operands), params)


def lower_forward(builder: KernelBuilder, group: FusionGroup) -> tuple[dict, dict]:
    """Steps for the group's nodes; returns (env: id(Value) -> (temp, level), extras: id(node) -> temps)."""
    env: dict = {}
    extras: dict = {}
    b = builder
    for node in group.nodes:
        kind = kind_of(node)
        if id(node) in group.scalars:  # a 0-d op computed once, before the loop, in its own precision
            ctype = _C_TYPES[node.results[0].dtype.name]
            operands = [b.operand(a, "row", env) for a in node.args]
            if kind == "pointwise":
                name = b.pointwise(node.op.name, "row", operands, node.params, ctype)
            else:  # a float <-> double cast
                name = b.emit("row", lambda a, p, f, lit, c=ctype: f"(({c})({a[0]}))",
                              lambda a, p, n=node.results[0].dtype.name: f"np.{n}({a[0]})", operands[:1], {}, ctype)
            env[id(node.results[0])] = (name, "row")
        elif kind == "pointwise":
            level = group.level_of(node.results[0].shape)
            operands = [b.operand(a, level, env) for a in node.args]
            name = b.pointwise(node.op.name, level, operands, node.params)
            env[id(node.results[0])] = (name, level)
        elif kind in ("reduce", "reduce_all"):
            source = b.operand(node.args[0], "elem", env)
            reduction = lowering.REDUCTIONS[node.op.name]
            name = b.reduce("max" if reduction == "max" else "sum", source, reduction == "mean")
            env[id(node.results[0])] = (name, "row")
            extras[id(node)] = {"source": source}
        elif node.op.name in ("softmax", "log_softmax"):
            x = b.operand(node.args[0], "elem", env)
            peak = b.reduce("max", x, False)
            shifted = b.pointwise("sub", "elem", [x, peak])
            exps = b.pointwise("exp", "elem", [shifted])
            total = b.reduce("sum", exps, False)
            if node.op.name == "softmax":
                out = b.pointwise("div", "elem", [exps, total])
            else:
                out = b.pointwise("sub", "elem", [shifted, b.pointwise("log", "row", [total])])
            env[id(node.results[0])] = (out, "elem")
        else:  # native_layer_norm
            x = b.operand(node.args[0], "elem", env)
            mean = b.reduce("sum", x, True)
            centered = b.pointwise("sub", "elem", [x, mean])
            var = b.reduce("sum", b.pointwise("mul", "elem", [centered, centered]), True)
            rstd = b.pointwise("rsqrt", "row", [b.pointwise("add", "row", [var, ("literal", node.params["eps"])])])
            y = b.pointwise("mul", "elem", [centered, rstd])
            extras[id(node)] = {"centered": centered, "rstd": rstd, "y_normalized": y}
            if node.args[1] is not None:
                y = b.pointwise("mul", "elem", [y, b.operand(node.args[1], "elem", env)])
            if node.args[2] is not None:
                y = b.pointwise("add", "elem", [y, b.operand(node.args[2], "elem", env)])
            for value, (name, level) in zip(node.results, ((y, "elem"), (mean, "row"), (rstd, "row"))):
                env[id(value)] = (name, level)
    return env, extras


def build_kernel(group: FusionGroup, name: str, users) -> Kernel:
    """Lower a group's nodes to steps; decide its inputs and outputs."""
    ctype = "float" if group.dtype.name == "float32" else "double"
    kernel = Kernel(name, ctype, group.R, group.K)
    env, _ = lower_forward(KernelBuilder(group, kernel, group.inputs), group)
    for node in group.nodes:
        for value in node.results:
            if any(id(u) not in group.members for u in users.get(value, ())):
                group.outputs.append(value)
                kernel.outputs.append(env[id(value)])
    finish_kernel(kernel)
    group.kernel = kernel
    return kernel


def finish_kernel(kernel: Kernel) -> None:
    kernel.flat = (not any(s[0] == "reduce" for s in kernel.steps)
                   and all(k in ("full", "scalar") for _, k, _ in kernel.args)
                   and all(level == "elem" for _, level in kernel.outputs))


def _np_literal(value) -> str:
    value = float(value)
    return repr(value) if math.isfinite(value) else f"float('{value}')"


def _input_kind(group: FusionGroup, shape: tuple, level: str) -> str:
    if math.prod(shape) == 1:
        return "scalar"
    if level == "elem":
        if shape == group.full_shape or shape == group.original:
            return "full"
        stripped = tuple(shape)
        while stripped and stripped[0] == 1:
            stripped = stripped[1:]
        if stripped == (group.K,):
            return "suffix"
        if shape == group.L + (1,):
            return "row"
        return "dense"  # materialised to the full shape before the call
    return "row"
