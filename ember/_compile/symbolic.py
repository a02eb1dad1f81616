"""A symbolic batch dimension: one captured graph that replays for any batch size.

When a function is called with a second distinct size (dynamic=None or True; never with dynamic=False),
the new capture is compared with the previous one node by node: same ops, same argument structure, and
every int that differs (a dim of a value's shape, a view/reshape target, an expand size, a split size...)
must be `m * B` in both captures for one batch size B taken from the arguments' shapes.  Then the new
graph is compiled *generic*: those ints are `Batch(m)` markers, bound to the call's B at replay (fused
kernels take L/R/shapes as params too), and any later size that fits the pattern replays it without a
trace.  Otherwise (a float literal like 1/B baked in, a dim that is B + 1, a different op sequence) the
reason is logged (`EMBER_LOGS=recompiles`) and kept in `CompiledFunction.dynamic_status`, and every size
gets its own graph as before.
"""

from __future__ import annotations

from .graph import Value, iter_values


class Batch:
    """The int m * B, B the call's batch size."""

    __slots__ = ("m",)

    def __init__(self, m: int) -> None:
        self.m = m

    def __repr__(self) -> str:
        return "B" if self.m == 1 else f"{self.m}*B"

    def __eq__(self, other) -> bool:
        return isinstance(other, Batch) and other.m == self.m

    def __hash__(self) -> int:
        return hash(("Batch", self.m))


class NotGeneric(Exception):
    pass


def bind(structure, B: int):
    """The structure with every Batch(m) replaced by m * B."""
    if isinstance(structure, Batch):
        return structure.m * B
    if isinstance(structure, tuple):
        items = [bind(item, B) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, list):
        return [bind(item, B) for item in structure]
    if isinstance(structure, dict):
        return {key: bind(item, B) for key, item in structure.items()}
    if type(structure) is slice:
        return slice(bind(structure.start, B), bind(structure.stop, B), bind(structure.step, B))
    return structure


def is_symbolic(structure) -> bool:
    if isinstance(structure, Batch):
        return True
    if isinstance(structure, (tuple, list)):
        return any(is_symbolic(item) for item in structure)
    if isinstance(structure, dict):
        return any(is_symbolic(item) for item in structure.values())
    if type(structure) is slice:
        return is_symbolic((structure.start, structure.stop, structure.step))
    return False


class Sizes:
    """B1 and B2 (the batch sizes of the two captures) and the int comparison rule."""

    def __init__(self, B1: int, B2: int) -> None:
        self.B1, self.B2 = B1, B2

    def merge(self, a, b, where: str):
        if type(a) is bool or type(b) is bool:
            if a != b:
                raise NotGeneric(f"{where}: {a!r} vs {b!r}")
            return a
        if type(a) is int and type(b) is int:
            if a == b:
                return a
            if a % self.B1 == 0 and b % self.B2 == 0 and a // self.B1 == b // self.B2 and a > 0:
                return Batch(a // self.B1)
            raise NotGeneric(f"{where}: {a} vs {b} is not a multiple of the batch size ({self.B1} vs {self.B2})")
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            if type(a) is not type(b) or len(a) != len(b):
                raise NotGeneric(f"{where}: {a!r} vs {b!r}")
            merged = [self.merge(x, y, where) for x, y in zip(a, b)]
            if hasattr(a, "_fields"):
                return type(a)(*merged)
            return tuple(merged) if isinstance(a, tuple) else merged
        if isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                raise NotGeneric(f"{where}: params {list(a)} vs {list(b)}")
            return {key: self.merge(a[key], b[key], f"{where} {key}") for key in a}
        if type(a) is slice and type(b) is slice:  # x[:, :T]: the bounds may be sizes
            return slice(*self.merge((a.start, a.stop, a.step), (b.start, b.stop, b.step), where))
        if isinstance(a, float) and isinstance(b, float):
            if a != b and not (a != a and b != b):
                raise NotGeneric(f"{where}: the literal {a!r} vs {b!r} depends on the size")
            return a
        if a is b or (type(a) is type(b) and _same(a, b)):
            return a
        raise NotGeneric(f"{where}: {a!r} vs {b!r}")


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a plain equality: identity only
        return False


def batch_sizes(key1: tuple, key2: tuple, labels: list) -> Sizes:
    """B1, B2 from the first argument dim that differs between the two guard keys (shape-only misses)."""
    for label, a, b in zip(labels, key1, key2):
        if label.endswith(".shape") and a != b:
            for x, y in zip(a, b):
                if x != y:
                    if x == 0 or y == 0:
                        raise NotGeneric("an empty batch")
                    return Sizes(x, y)
    raise NotGeneric("no argument dim differs")


def key_pattern(key1: tuple, key2: tuple, labels: list, sizes: Sizes) -> tuple:
    """The guard key with the batch dims as Batch markers (for matching later calls)."""
    pattern = []
    for label, a, b in zip(labels, key1, key2):
        if label.endswith(".shape"):
            pattern.append(sizes.merge(tuple(a), tuple(b), label))
        elif a != b:
            raise NotGeneric(f"{label} differs")
        else:
            pattern.append(b)
    return tuple(pattern)


def match(pattern: tuple, key: tuple):
    """The batch size B when `key` fits the pattern, else None."""
    if len(pattern) != len(key):
        return None
    B = None
    for expected, actual in zip(pattern, key):
        if type(expected) is tuple and is_symbolic(expected):
            if type(actual) is not tuple or len(actual) != len(expected):
                return None
            for dim, size in zip(expected, actual):
                if isinstance(dim, Batch):
                    if size % dim.m or size == 0:
                        return None
                    value = size // dim.m
                    if B is None:
                        B = value
                    elif value != B:
                        return None
                elif dim != size:
                    return None
        elif expected != actual:
            return None
    return B


def signature(graph) -> list:
    """The raw captured graph as comparable rows (before dead-code elimination and fusion)."""
    position = {}
    rows = []
    for number, node in enumerate(graph.nodes):
        for value in node.results:
            position[id(value)] = (number, value.index)
        args = _map_values(node.args, position)
        rows.append((node, node.kind, node.op, args, dict(node.params), [v.shape for v in node.results],
                     id(node.tensor) if node.kind == "external" else None, node.grad_enabled))
    output = _map_values(graph.output.structure, position) if graph.output is not None else None
    mutations = [(position.get(id(t)), position.get(id(n)), mode) for t, n, mode in graph.mutations]
    return [rows, output, mutations]


def _map_values(structure, position):
    if isinstance(structure, Value):
        return ("value", position.get(id(structure)))
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        return tuple(_map_values(item, position) for item in structure)
    if isinstance(structure, list):
        return [_map_values(item, position) for item in structure]
    if isinstance(structure, dict):
        return {key: _map_values(item, position) for key, item in structure.items()}
    return structure


def generalize(old: list, new: list, sizes: Sizes, symbolic_args: bool = False) -> None:
    """Annotate the new graph's values (symbolic_shape) and nodes (symbolic_params); NotGeneric if they differ
    in any other way than the batch size.  `symbolic_args`: the caller binds batch-dependent int operands
    itself (ember.export does); ember.compile's replay passes operands as captured, so for it they are
    NotGeneric."""
    old_rows, old_output, old_mutations = old
    new_rows, new_output, new_mutations = new
    if len(old_rows) != len(new_rows):
        raise NotGeneric(f"the captures have {len(old_rows)} and {len(new_rows)} nodes (size-dependent Python)")
    if old_mutations != new_mutations:
        raise NotGeneric("the in-place writes differ")
    sizes.merge(old_output, new_output, "the output structure")
    for old_row, new_row in zip(old_rows, new_rows):
        node = new_row[0]
        where = f"{node.name} ({node.op.name if node.op is not None else node.kind})"
        if old_row[1:3] != new_row[1:3] or old_row[6:] != new_row[6:]:
            raise NotGeneric(f"{where}: a different op, external tensor or grad mode")
        if is_symbolic(sizes.merge(old_row[3], new_row[3], f"{where} arguments")) and not symbolic_args:
            # an int operand that is the batch size (x * x.shape[0]): the replay passes args as captured, so
            # such a graph would reuse one size's number for every size
            raise NotGeneric(f"{where}: a Python number operand depends on the batch size")
        params = sizes.merge(old_row[4], new_row[4], f"{where} params")
        if is_symbolic(params):
            node.symbolic_params = params
        for value, old_shape in zip(node.results, old_row[5]):
            shape = sizes.merge(tuple(old_shape), tuple(value.shape), f"{where} result shape")
            if is_symbolic(shape):
                value.symbolic_shape = shape


def batch_source(graph):
    """(placeholder name, dim, m) to read B from at replay."""
    for node in graph.nodes:
        if node.kind == "placeholder" and node.results[0].symbolic_shape is not None:
            for dim, size in enumerate(node.results[0].symbolic_shape):
                if isinstance(size, Batch):
                    return node.results[0].name, dim, size.m
    return None


def symbolic_shape(value) -> tuple:
    return value.symbolic_shape if value.symbolic_shape is not None else tuple(value.shape)


__all__ = ["Batch", "NotGeneric", "bind", "is_symbolic", "generalize", "signature", "batch_sizes", "key_pattern",
           "match", "batch_source", "symbolic_shape", "iter_values"]
