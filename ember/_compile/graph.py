"""The captured program: a small typed graph IR (placeholders, externals, op calls, outputs).

A `Graph` is a list of `Node`s in execution order.  Every tensor a node makes is a
`Value` (shape, dtype, device), so multi-output ops (layer norm's y/mean/rstd)
need no getitem nodes.  Node kinds:

- placeholder: a tensor argument of the compiled call (`path` says where: args[0], kwargs['x'], args[1][2]).
- external: a tensor that came from outside the recorded ops (a module parameter, a closure tensor, a
  tensor made by an untraced factory such as ember.zeros).  It is referenced by object, so replay reads
  its current values (an optimizer's in-place update of a parameter is seen).
- call: one `ember._dispatch.call(op, args, params)`; args hold Values and Python literals.
- output: the function's return structure, with Values where tensors were.

`graph.code` is the readable Python that replays the graph; `print_tabular()` prints one row per node.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Value:
    """One tensor produced in the graph."""

    node: Node
    index: int
    shape: tuple
    dtype: object
    device: object
    name: str = ""
    requires_grad: bool = False  # at capture (guards keep it fixed for the graph)
    symbolic_shape: tuple = None  # dims as ints or Batch(m) (a size-generic graph), else None

    def __repr__(self) -> str:
        return self.name


@dataclass(eq=False)
class Node:
    kind: str  # "placeholder" | "external" | "call" | "fused" | "output"
    name: str
    op: object = None  # OpDef for call/fused nodes
    args: tuple = ()
    params: dict = field(default_factory=dict)
    results: list = field(default_factory=list)  # Values
    grad_enabled: bool = True
    source: str = ""  # the user's file:line and code for the call
    path: str = ""  # placeholder: where in the arguments
    tensor: object = None  # external: the tensor object
    group: object = None  # fused: the FusionGroup
    structure: object = None  # output: the return structure with Values in it
    symbolic_params: object = None  # a size-generic graph: params with Batch(m) markers (symbolic.py)
    symbolic_args: object = None  # ... and args with them: int operands such as x / (B - 1) (symbolic.py)
    members: object = None  # a horizontal fused node: the fused nodes it runs (runtime.fuse_horizontally)


def iter_values(structure):
    """Every Value inside a nested tuple/list/dict structure."""
    if isinstance(structure, Value):
        yield structure
    elif isinstance(structure, (tuple, list)):
        for item in structure:
            yield from iter_values(item)
    elif isinstance(structure, dict):
        for item in structure.values():
            yield from iter_values(item)
    elif isinstance(structure, Rebuilt):
        yield from iter_values(structure.items)
        yield from iter_values(structure.attrs)
    elif isinstance(structure, ReadOf):
        yield structure.value


def map_structure(structure, fn, build: bool = False):
    """The structure with fn applied to every Value (containers rebuilt, other leaves kept).  build=True (a
    replay's result) makes each Rebuilt node the object it stands for; otherwise it stays a Rebuilt node."""
    if isinstance(structure, Value):
        return fn(structure)
    if isinstance(structure, tuple):
        mapped = [map_structure(item, fn, build) for item in structure]
        return type(structure)(*mapped) if hasattr(structure, "_fields") else tuple(mapped)
    if isinstance(structure, list):
        return [map_structure(item, fn, build) for item in structure]
    if isinstance(structure, dict):
        return {key: map_structure(item, fn, build) for key, item in structure.items()}
    if isinstance(structure, Rebuilt):
        node = Rebuilt(structure.cls, map_structure(structure.items, fn, build),
                       map_structure(structure.attrs, fn, build), structure.factory)
        return node.build() if build else node
    if isinstance(structure, ReadOf):
        inner = fn(structure.value)
        return inner.item() if build else ReadOf(inner)
    return structure


class ReadOf:
    """A returned Python float that the function read from a graph value with `.item()` as its last act (a
    training step's `return loss.item()`, tracer.Tracer.read_item): a replay returns that value's `.item()`."""

    def __init__(self, value) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"{self.value!r}.item()"


class Rebuilt:
    """A returned object that is not a plain container: a dict subclass (OrderedDict, HF's ModelOutput) or a
    dataclass instance.  Its type, its items (dict subclasses) and its attributes are kept as structures, and
    a replay makes a new object of that type from them without calling its __init__ (a replay returned a
    plain dict for a ModelOutput, and a dataclass output ran the whole call eagerly)."""

    def __init__(self, cls, items, attrs, factory=None) -> None:
        self.cls, self.items, self.attrs, self.factory = cls, items, attrs, factory

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in {**(self.items or {}), **self.attrs}.items())
        return f"{self.cls.__name__}({inner})"

    def build(self):
        obj = self.cls.__new__(self.cls)
        for name, value in self.attrs.items():
            object.__setattr__(obj, name, value)
        if self.items is not None:
            # the builtin base's __setitem__ (OrderedDict keeps its own order links; a subclass's may refuse)
            base = next(b for b in self.cls.__mro__ if b.__module__ in ("builtins", "collections"))
            if self.factory is not None:
                obj.default_factory = self.factory
            for key, value in self.items.items():
                base.__setitem__(obj, key, value)
        return obj


class Graph:
    """Nodes in execution order plus the output structure."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.output: Node | None = None
        self.mutations: list = []  # (target Value, new Value, grad mode): in-place writes to inputs, kept
        self.entry_grad_enabled = True
        self._counter = 0

    def fresh_name(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def add(self, node: Node) -> Node:
        self.nodes.append(node)
        return node

    def make_values(self, node: Node, tensors) -> list:
        values = []
        for index, tensor in enumerate(tensors):
            name = node.name if len(tensors) == 1 else f"{node.name}_{index}"
            values.append(Value(node, index, tuple(tensor._data.shape), tensor._dtype, tensor._device, name,
                                bool(tensor._requires_grad)))
        node.results = values
        return values

    # ------------------------------------------------------------ reading
    @property
    def call_nodes(self) -> list:
        return [n for n in self.nodes if n.kind in ("call", "fused")]

    def users(self) -> dict:
        """Value -> list of nodes that read it (the output node included)."""
        table: dict = {}
        for node in self.nodes:
            for value in iter_values(node.args):
                table.setdefault(value, []).append(node)
        if self.output is not None:
            for value in iter_values(self.output.structure):
                table.setdefault(value, []).append(self.output)
        for _target, new, _ in self.mutations:
            table.setdefault(new, []).append(self.output)
        return table

    def op_count(self) -> int:
        return len(self.call_nodes)

    @property
    def code(self) -> str:
        """Readable Python for the graph (what replay runs, op by op)."""
        from .printing import graph_code

        return graph_code(self)

    def print_tabular(self, file=None) -> None:
        print(self.tabular(), file=file)

    def tabular(self) -> str:
        rows = [("opcode", "name", "target", "args", "meta", "source")]
        for node in self.nodes:
            target = node.op.name if node.op is not None else (node.path or "")
            if node.kind == "fused":
                target = f"{node.op.name}[{', '.join(n.op.name for n in node.group.nodes)}]"
            meta = ", ".join(f"{v.dtype.name}{list(v.shape)}" for v in node.results)
            args = _short(node.args)
            if node.params:
                args += " " + _short(node.params)
            rows.append((node.kind, node.name, target, args, meta, node.source.split("  |")[0]))
        if self.output is not None:
            rows.append(("output", "output", "output", _short(self.output.structure), "", ""))
        widths = [min(max(len(r[i]) for r in rows), 60) for i in range(len(rows[0]))]
        lines = []
        for index, row in enumerate(rows):
            lines.append("  ".join(cell[:60].ljust(w) for cell, w in zip(row, widths)).rstrip())
            if index == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"<ember.compile Graph: {self.op_count()} ops>"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
