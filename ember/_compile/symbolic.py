"""Symbolic sizes: one captured graph that replays for any batch size (and sequence length, ...).

When a function is called with a second distinct size (dynamic=None or True; never with dynamic=False),
the new capture is compared with the previous one node by node: same ops, same argument structure, and
every int that differs (a dim of a value's shape, a view/reshape target, an expand size, a split size, a
slice bound...) must be `m * B**i * T**j ...` in both captures, over the symbols taken from the arguments'
shapes: each argument dim that differs between the two captures is a symbol (B, T, U, in the order met),
unless it is already an integer multiple of one.  Then the new graph is compiled *generic*: those ints are
`Batch(m, powers)` markers, bound to the call's symbol values at replay (fused kernels take L/R/K/shapes as
params too), and any later call whose sizes fit the pattern replays it without a trace.  An int that two
choices of powers explain equally (B 2 -> 3 with T 4 -> 6 make B*T and 2*B**2 agree) is refused, not guessed.
An int operand that differs (`x / (x.shape[0] - 1)`) is a Batch too (`Node.symbolic_args`), bound by the replay.

As in torch, sizes 0 and 1 are never symbolic: a graph captured at 1 may have specialised on it (a
`squeeze()` drops a batch of 1), so such sizes get their own graphs and never match a generic one.

Otherwise (a float literal like 1/B baked in, a different op sequence) the reason is
logged (`EMBER_LOGS=recompiles`) and kept in `CompiledFunction.dynamic_status`, and every size gets its own
graph as before.
"""

from __future__ import annotations

import itertools
import math
import operator

import numpy as np

from .graph import Value, iter_values
from .pyguards import array_digest

NAMES = ("B", "T", "U")  # the symbols' names in printed graphs, in the order they are found
MAX_POWER = 2  # B**2: a flattened (T, T) attention map
MAX_OFFSET = 16  # the largest constant a symbol may be offset by (T - 1, past + 1)
FLOOR_DIVISORS = (2, 4, 8, 16, 32, 3)  # strides of convolutions and pools, and their nestings


class Batch:
    """The int m * B**powers[0] * T**powers[1] ... + offset, over the call's symbol values; with a divisor,
    m * ((T + offset) // divisor) over one symbol (a strided convolution's or pooling's output length).
    `factors` multiply in more such floor terms, ((symbol, offset, divisor), ...): a conv map's flattened
    H' * W' is `((H + 1) // 4) * ((W + 1) // 4)`."""

    __slots__ = ("m", "powers", "offset", "divisor", "factors")

    def __init__(self, m: int, powers: tuple = (1,), offset: int = 0, divisor: int = 1, factors: tuple = ()) -> None:
        self.m = m
        self.powers = powers
        self.offset = offset
        self.divisor = divisor
        self.factors = factors

    def value(self, env: tuple) -> int:
        product = math.prod(v ** p for v, p in zip(env, self.powers) if p)
        if self.divisor != 1:
            base = self.m * ((product + self.offset) // self.divisor)
        else:
            base = self.m * product + self.offset
        for index, offset, divisor in self.factors:  # (graph.code prints params bound to one symbol of 0)
            base *= ((env[index] if index < len(env) else 0) + offset) // divisor
        return base

    def symbol(self):
        """The index of the one symbol this is m times (power 1, no other, no offset), else None."""
        found = [i for i, p in enumerate(self.powers) if p]
        return (found[0] if len(found) == 1 and self.powers[found[0]] == 1 and not self.offset
                and self.divisor == 1 and not self.factors else None)

    def __repr__(self) -> str:
        terms = [NAMES[i] if p == 1 else f"{NAMES[i]}**{p}" for i, p in enumerate(self.powers) if p]
        floors = "".join(f"*(({NAMES[i]}{c:+d})//{d})" if c else f"*({NAMES[i]}//{d})" for i, c, d in self.factors)
        if self.divisor != 1:
            inner = f"({'*'.join(terms)}{self.offset:+d})" if self.offset else "*".join(terms)
            return (f"{self.m}*({inner}//{self.divisor})" if self.m != 1 else f"{inner}//{self.divisor}") + floors
        text = "*".join(([str(self.m)] if self.m != 1 or not terms else []) + terms)
        return (f"{text}{self.offset:+d}" if self.offset else text) + floors

    def __eq__(self, other) -> bool:
        return (isinstance(other, Batch) and other.m == self.m and other.powers == self.powers
                and other.offset == self.offset and other.divisor == self.divisor and other.factors == self.factors)

    def __hash__(self) -> int:
        return hash(("Batch", self.m, self.powers, self.offset, self.divisor, self.factors))


_BINARY = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "pow": operator.pow,
}
_UNARY = {"neg": operator.neg, "pos": operator.pos, "abs": operator.abs}
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**"}


def format_expr(expr) -> str:
    if type(expr) is not tuple:
        return repr(expr)
    head = expr[0]
    if head == "arg":
        return f"s{expr[1]}"
    if head in _UNARY:
        return {"neg": "-", "pos": "+"}.get(head, "abs") + f"({format_expr(expr[1])})"
    return f"({format_expr(expr[1])} {_SYMBOLS[head]} {format_expr(expr[2])})"


def evaluate(expr, env: tuple):
    """The value of an expression (("arg", i), (op, a, b), (op, a), or a plain number) for the call's floats."""
    if type(expr) is not tuple:
        return expr
    head = expr[0]
    if head == "arg":
        return env[expr[1]]
    if head in _UNARY:
        return _UNARY[head](evaluate(expr[1], env))
    return _BINARY[head](evaluate(expr[1], env), evaluate(expr[2], env))


class Scalar:
    """A number in a node's args or params that is this expression of the call's float arguments (scalars.py)."""

    __slots__ = ("expr",)

    def __init__(self, expr) -> None:
        self.expr = expr

    def value(self, env: tuple) -> float:
        return float(evaluate(self.expr, env))

    def __repr__(self) -> str:
        return format_expr(self.expr)

    def __eq__(self, other) -> bool:
        return isinstance(other, Scalar) and other.expr == self.expr

    def __hash__(self) -> int:
        return hash(self.expr)


class NotGeneric(Exception):
    pass


class Specialized(NotGeneric):
    """A size of 0 or 1 took part: its graph is kept for that size (see the module's docstring)."""


def bind(structure, env):
    """The structure with every Batch replaced by its value for `env`, the symbol values (or one int B)."""
    if type(env) is int:
        env = (env,)
    return _bind(structure, env)


def _bind(structure, env: tuple):
    if isinstance(structure, (Batch, Scalar)):
        return structure.value(env)
    if isinstance(structure, tuple):
        items = [_bind(item, env) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, list):
        return [_bind(item, env) for item in structure]
    if isinstance(structure, dict):
        return {key: _bind(item, env) for key, item in structure.items()}
    if type(structure) is slice:
        return slice(_bind(structure.start, env), _bind(structure.stop, env), _bind(structure.step, env))
    return structure


def contains(structure, kinds) -> bool:
    """Whether an instance of `kinds` is inside a nested tuple/list/dict/slice structure."""
    if isinstance(structure, kinds):
        return True
    if isinstance(structure, (tuple, list)):
        return any(contains(item, kinds) for item in structure)
    if isinstance(structure, dict):
        return any(contains(item, kinds) for item in structure.values())
    if type(structure) is slice:
        return contains((structure.start, structure.stop, structure.step), kinds)
    return False


def is_symbolic(structure) -> bool:
    return contains(structure, (Batch, Scalar))


class Sizes:
    """The symbols' values in the two captures (`first`, `second`) and the int comparison rule.  Two ints
    give one symbol, B1 -> B2 (ember.export's one batch size); `max_power` bounds the powers tried."""

    def __init__(self, first, second, max_power: int = MAX_POWER) -> None:
        self.first = (first,) if type(first) is int else tuple(first)
        self.second = (second,) if type(second) is int else tuple(second)
        self.max_power = max_power
        # more captures of the same graph, at other sizes (their symbol values): each int must fit them too,
        # which picks the right candidate where two sizes cannot (a refit, CompiledFunction._validate)
        self.extra: tuple = ()
        self.positions: list = []  # (key position, dim) each symbol was read from (batch_sizes)
        # ints a symbol plus a small constant (`T - 1` of a shifted target, `past + 1` of a grown KV cache)
        # are explained too when no product is; set by ember.compile (ember.export encodes products only)
        self.offsets = False
        self.floors: list = []  # the floor terms (symbol, offset, divisor) found so far: products of them fit too

    @property
    def B1(self) -> int:
        return self.first[0]

    @property
    def B2(self) -> int:
        return self.second[0]

    def describe(self) -> str:
        return ", ".join(f"{NAMES[i]} ({a} -> {b})" for i, (a, b) in enumerate(zip(self.first, self.second)))

    def explain(self, a: int, b: int, others: tuple = ()) -> list:
        """Every Batch(m, powers) that is a in the first capture and b in the second (and `others`, the int in
        each of the `extra` captures, in those)."""
        def fits(batch) -> bool:
            return all(batch.value(env) == value for env, value in zip(self.extra, others))

        found = []
        for powers in itertools.product(range(self.max_power + 1), repeat=len(self.first)):
            if not any(powers):
                continue
            d1 = math.prod(v ** p for v, p in zip(self.first, powers))
            d2 = math.prod(v ** p for v, p in zip(self.second, powers))
            if a > 0 and a % d1 == 0 and a // d1 * d2 == b and fits(Batch(a // d1, powers)):
                found.append(Batch(a // d1, powers))
        if not found and self.offsets:  # m * S + c over one symbol (B * (T - 1) with B fixed: 2 * T - 2)
            for index, (d1, d2) in enumerate(zip(self.first, self.second)):
                if d1 == d2 or (b - a) % (d2 - d1):
                    continue
                m = (b - a) // (d2 - d1)
                offset = a - m * d1
                batch = Batch(m, tuple(int(i == index) for i in range(len(self.first))), offset)
                if m >= 1 and 0 < abs(offset) <= MAX_OFFSET * m and fits(batch):
                    found.append(batch)
        if not found and self.offsets:
            found = self._floor_divisions(a, b, fits)
        if not found and self.offsets:
            found = self._floor_products(a, b, fits)
        return found

    def _floor_products(self, a: int, b: int, fits) -> list:
        """m times a product of floor terms already found for other sizes (`_floor_divisions`), times a monomial
        of the other symbols: a strided conv map flattened (`h.flatten(2)`: H' * W', H' * H' for square images,
        or B * H' * W').  Only terms the graph's own shapes showed are tried, so the search stays small; the first
        fit is taken, and a wrong one fails validation as for the floor terms."""
        for count in (1, 2, 3):
            for combo in itertools.combinations_with_replacement(self.floors, count):  # (a square grid: H' * H')
                for powers in itertools.product((0, 1), repeat=len(self.first)):
                    if any(powers[index] for index, _, _ in combo) or (count == 1 and not any(powers)):
                        continue
                    unit = Batch(1, powers, factors=combo)
                    q1, q2 = unit.value(self.first), unit.value(self.second)
                    if q1 <= 1 or a % q1 or a // q1 * q2 != b:
                        continue
                    batch = Batch(a // q1, powers, factors=combo)
                    if fits(batch):
                        return [batch]
        return []

    def _floor_divisions(self, a: int, b: int, fits) -> list:
        """m * ((S + c) // d) over one symbol S: the output length of strided convolutions and pools (nested
        ones too: ((S + 1) // 2 + 1) // 2 is (S + 3) // 4), times a channel count when flattened.  Two sizes
        rarely pin c down ((12 + c) // 2 is 6 for c = 0 and 1), so one candidate is taken -- the first divisor
        that fits, c in [0, d) first (a convolution's c is 2 * padding - dilation * (kernel - 1) - 1 + stride),
        then by |c| up to 2d -- and a size where it is wrong fails CompiledFunction._validate's conformance
        trace, which fits again from that capture and the generic graph's: a guess costs a capture, never a
        wrong replay."""
        for divisor in FLOOR_DIVISORS:
            # (then farther: a padding after the stride, `(S + 1) // 2 + 4` = `(S + 9) // 2`)
            offsets = list(range(divisor)) + sorted(range(-2 * divisor, 0), key=abs) + list(range(divisor, 2 * divisor))
            offsets += sorted(set(range(-MAX_OFFSET * divisor, MAX_OFFSET * divisor + 1)) - set(offsets), key=abs)
            for c in offsets:
                for index, (d1, d2) in enumerate(zip(self.first, self.second)):
                    q1, q2 = (d1 + c) // divisor, (d2 + c) // divisor
                    if d1 == d2 or q1 <= 1 or q2 <= 1 or a % q1 or a // q1 * q2 != b:  # (q1 == q2: the extras decide)
                        continue
                    batch = Batch(a // q1, tuple(int(i == index) for i in range(len(self.first))), c, divisor)
                    if fits(batch):
                        if (index, c, divisor) not in self.floors:
                            self.floors.append((index, c, divisor))
                        return [batch]
        return []

    def merge(self, a, b, where: str, others: tuple = ()):
        """a and b (the first and second capture's value at one place) as one structure, each differing int a
        Batch; `others`: the value there in each `extra` capture (empty: none, or not followed here)."""
        if others and len(others) != len(self.extra):
            others = ()
        if type(a) is bool or type(b) is bool:
            if a != b:
                raise NotGeneric(f"{where}: {a!r} vs {b!r}")
            return a
        if type(a) is int and type(b) is int:
            if any(type(o) is not int for o in others):
                others = ()
            if a == b and all(o == a for o in others):
                return a
            found = self.explain(a, b, others)
            if len(found) == 1:
                return found[0]
            if found:
                raise NotGeneric(f"{where}: {a} vs {b} is ambiguous ({' or '.join(map(repr, found))}, with "
                                 f"{self.describe()})")
            raise NotGeneric(f"{where}: {a} vs {b} is not m times a product of the sizes ({self.describe()})")
        if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
            if type(a) is not type(b) or len(a) != len(b):
                raise NotGeneric(f"{where}: {a!r} vs {b!r}")
            if any(type(o) is not type(a) or len(o) != len(a) for o in others):
                others = ()
            merged = [self.merge(x, y, where, tuple(o[i] for o in others)) for i, (x, y) in enumerate(zip(a, b))]
            if hasattr(a, "_fields"):
                return type(a)(*merged)
            return tuple(merged) if isinstance(a, tuple) else merged
        if isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                raise NotGeneric(f"{where}: params {list(a)} vs {list(b)}")
            if any(not isinstance(o, dict) or list(o) != list(a) for o in others):
                others = ()
            return {key: self.merge(a[key], b[key], f"{where} {key}", tuple(o[key] for o in others)) for key in a}
        if type(a) is slice and type(b) is slice:  # x[:, :T]: the bounds may be sizes
            if any(type(o) is not slice for o in others):
                others = ()
            return slice(*self.merge((a.start, a.stop, a.step), (b.start, b.stop, b.step), where,
                                     tuple((o.start, o.stop, o.step) for o in others)))
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
    """The symbols, from the argument dims that differ between the two guard keys (shape-only misses): each
    is a new symbol unless one found before explains it (x: (B, 5) and y: (2*B, 5) give one symbol)."""
    sizes = Sizes((), ())
    positions: list = []
    for position, (label, a, b) in enumerate(zip(labels, key1, key2)):
        if not label.endswith(".shape") or a == b:
            continue
        for dim, (x, y) in enumerate(zip(a, b)):
            if x == y:
                continue
            if min(x, y) <= 1:
                raise Specialized(f"{label}: {x} vs {y}: sizes 0 and 1 are not symbolic (as torch, a graph may "
                                 "have specialised on them)")
            if sizes.first and len(sizes.explain(x, y)) == 1:
                continue
            if len(sizes.first) == len(NAMES):
                raise NotGeneric(f"more than {len(NAMES)} sizes differ")
            sizes = Sizes(sizes.first + (x,), sizes.second + (y,), sizes.max_power)
            positions.append((position, dim))
    if not sizes.first:
        raise NotGeneric("no argument dim differs")
    sizes.positions = positions
    return sizes


def sample_env(sizes: Sizes, key: tuple):
    """The symbol values of another capture's guard key, read where batch_sizes found them (None if its
    structure differs)."""
    try:
        return tuple(key[position][dim] for position, dim in sizes.positions)
    except (IndexError, TypeError):
        return None


def key_pattern(key1: tuple, key2: tuple, labels: list, sizes: Sizes) -> tuple:
    """The guard key with the symbolic dims as Batch markers (for matching later calls)."""
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
    """The symbol values (a tuple) when `key` fits the pattern, else None.  Each symbol is read from a dim
    that is m times it; every symbolic dim is then checked; a value of 0 or 1 never matches (see above)."""
    if len(pattern) != len(key):
        return None
    found: dict = {}
    dims = []
    for expected, actual in zip(pattern, key):
        if type(expected) is tuple and is_symbolic(expected):
            if type(actual) is not tuple or len(actual) != len(expected):
                return None
            for dim, size in zip(expected, actual):
                if isinstance(dim, Batch):
                    dims.append((dim, size))
                    index = dim.symbol()
                    if index is not None:
                        if size % dim.m:
                            return None
                        if found.setdefault(index, size // dim.m) != size // dim.m:
                            return None
                elif dim != size:
                    return None
        elif expected != actual:
            return None
    if not dims or len(found) != len(dims[0][0].powers) or min(found.values()) <= 1:
        return None
    env = tuple(found[index] for index in range(len(found)))
    return env if all(dim.value(env) == size for dim, size in dims) else None


def signature(graph) -> list:
    """The raw captured graph as comparable rows (before dead-code elimination and fusion)."""
    position = {}
    rows = []
    for number, node in enumerate(graph.nodes):
        for value in node.results:
            position[id(value)] = (number, value.index)
        args = _map_values(node.args, position)
        rows.append((node, node.kind, node.op, args, dict(node.params), [v.shape for v in node.results],
                     _external_key(node) if node.kind == "external" else None, node.grad_enabled))
    output = _map_values(graph.output.structure, position) if graph.output is not None else None
    mutations = [(position.get(id(t)), position.get(id(n)), mode) for t, n, mode in graph.mutations]
    return [rows, output, mutations]


def _external_key(node):
    """An external tensor's identity; for a tensor made in the function (a pooling kernel of ones, a mask), made
    anew by each capture, its dtype, shape and contents: the same constant at two sizes is one constant."""
    recipe = getattr(node, "recipe", None)
    if recipe is not None:  # made from numbers (its params, compared as sizes): arange(T) at every T
        return ("recipe", recipe)
    slot = getattr(node, "slot", None)
    if slot is not None:  # a module's parameter or buffer entry, read at each call
        return ("slot", id(slot[0]), slot[1])
    array = node.tensor._data
    if not getattr(node, "created", False) or type(array) is not np.ndarray:  # (a device array: by identity)
        return id(node.tensor)
    return ("made", array.dtype.str, array.shape, array_digest(array))


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


def node_where(node) -> str:
    """A node as the NotGeneric reasons name it: `add_3 (add)`."""
    return f"{node.name} ({node.op.name if node.op is not None else node.kind})"


def check_aligned(old: list, new: list, why: str = "") -> None:
    """NotGeneric unless two captures' signatures have as many nodes and the same in-place writes (the first
    check of every comparison of captures: sizes here, float arguments in scalars.py)."""
    if len(old[0]) != len(new[0]):
        raise NotGeneric(f"the captures have {len(old[0])} and {len(new[0])} nodes{why}")
    if old[2] != new[2]:
        raise NotGeneric("the in-place writes differ")


def generalize(old: list, new: list, sizes: Sizes, symbolic_args: bool = False, others: tuple = ()) -> None:
    """Annotate the new graph's values (symbolic_shape) and nodes (symbolic_params); NotGeneric if they differ
    in any other way than the batch size.  `symbolic_args`: the caller binds batch-dependent int operands
    itself (ember.export does); ember.compile's replay passes operands as captured, so for it they are
    NotGeneric."""
    check_aligned(old, new, " (size-dependent Python)")
    old_rows, old_output, _ = old
    new_rows, new_output, _ = new
    # `others`: signatures of more captures at `sizes.extra`; one that does not line up is not used
    kept = [(env, other) for env, other in zip(sizes.extra, others) if len(other[0]) == len(new_rows)]
    sizes.extra = tuple(env for env, _ in kept)
    other_rows = [other[0] for _, other in kept]
    if is_symbolic(sizes.merge(old_output, new_output, "the output structure")):
        # a returned int such as x.shape[0]: the graph's output structure holds the captured number
        raise NotGeneric("a returned Python number depends on the size")
    for number, (old_row, new_row) in enumerate(zip(old_rows, new_rows)):
        node = new_row[0]
        where = node_where(node)
        if old_row[1:3] != new_row[1:3] or old_row[6:] != new_row[6:]:
            raise NotGeneric(f"{where}: a different op, external tensor or grad mode")
        rows = [rows_[number] for rows_ in other_rows]
        merged_args = sizes.merge(old_row[3], new_row[3], f"{where} arguments", tuple(row[3] for row in rows))
        if is_symbolic(merged_args) and not symbolic_args:
            # an int operand that is a size (x / (x.shape[0] - 1), arange(L) / L): bound to each call's sizes
            # by the replay (printing._arg_text); such a node is not fused (its number would be C text)
            node.symbolic_args = _overlay(node.args, merged_args, where)
            node.symbolic_args_row = merged_args  # (as `conforms` compares them)
        params = sizes.merge(old_row[4], new_row[4], f"{where} params", tuple(row[4] for row in rows))
        if is_symbolic(params):
            node.symbolic_params = params
        for index, (value, old_shape) in enumerate(zip(node.results, old_row[5])):
            shape = sizes.merge(tuple(old_shape), tuple(value.shape), f"{where} result shape",
                                tuple(tuple(row[5][index]) for row in rows if index < len(row[5])))
            if is_symbolic(shape):
                value.symbolic_shape = shape


def _overlay(args, merged, where: str):
    """`args` (the node's, with Values) with the ints that `merged` (their merge over the captures) made
    Batch markers replaced by those markers."""
    if isinstance(merged, Batch):
        if type(args) is not int:
            raise NotGeneric(f"{where}: a size in an argument that is not a Python int")
        return merged
    if isinstance(args, (tuple, list)) and not hasattr(args, "_fields") and is_symbolic(merged):
        if not isinstance(merged, (tuple, list)) or len(merged) != len(args):
            raise NotGeneric(f"{where}: arguments {args!r}")
        items = [_overlay(a, m, where) for a, m in zip(args, merged)]
        return tuple(items) if isinstance(args, tuple) else items
    if is_symbolic(merged):
        raise NotGeneric(f"{where}: a size inside an argument of type {type(args).__name__}")
    return args


def conforms(generic: list, new: list, env: tuple):
    """None if `new` (the signature of a capture at the sizes `env`) is the size-generic graph whose
    signature is `generic` with its symbols bound to `env`; otherwise why not (see CompiledFunction._validate).
    Each part is compared by `Sizes.merge` with both captures at `env`: any int that differs is refused."""
    rows, output, mutations = generic
    new_rows, new_output, new_mutations = new
    if len(rows) != len(new_rows):
        return f"{len(new_rows)} nodes, not {len(rows)} (size-dependent Python)"
    if mutations != new_mutations:
        return "the in-place writes differ"
    same = Sizes(env, env)
    try:
        same.merge(output, new_output, "the output structure")
        for row, new_row in zip(rows, new_rows):
            node = row[0]
            where = node_where(node)
            if row[1:3] != new_row[1:3] or row[6:] != new_row[6:]:
                return f"{where}: a different op, external tensor or grad mode"
            params = row[4] if node.symbolic_params is None else node.symbolic_params
            args = getattr(node, "symbolic_args_row", None) or row[3]
            shapes = [symbolic_shape(value) for value in node.results]
            for part, expected, actual in (("arguments", args, new_row[3]), ("params", params, new_row[4]),
                                           ("result shape", shapes, [tuple(s) for s in new_row[5]])):
                same.merge(bind(expected, env), actual, f"{where} {part}")
    except NotGeneric as why:
        return str(why)
    return None


def batch_source(graph):
    """((placeholder name, dim, m), ...) to read each symbol from at replay, or None if one has no source."""
    sources: dict = {}
    count = 0
    for node in graph.nodes:
        if node.kind == "placeholder" and node.results[0].symbolic_shape is not None:
            for dim, size in enumerate(node.results[0].symbolic_shape):
                if isinstance(size, Batch):
                    count = len(size.powers)
                    index = size.symbol()
                    if index is not None:
                        sources.setdefault(index, (node.results[0].name, dim, size.m))
    if not count or len(sources) != count:
        return None
    return tuple(sources[index] for index in range(count))


def product(dims):
    """The product of sizes (ints and plain monomials `m * B**i * T**j`) as one int or Batch; None when a factor
    has an offset or a floor division (no monomial is their product)."""
    m, powers = 1, ()
    for dim in dims:
        if isinstance(dim, Batch):
            if dim.offset or dim.divisor != 1 or dim.factors:
                return None
            m *= dim.m
            width = max(len(powers), len(dim.powers))
            powers = tuple((powers[i] if i < len(powers) else 0) + (dim.powers[i] if i < len(dim.powers) else 0)
                           for i in range(width))
        else:
            m *= int(dim)
    return Batch(m, powers) if any(powers) else m


def symbolic_shape(value) -> tuple:
    return value.symbolic_shape if value.symbolic_shape is not None else tuple(value.shape)


__all__ = ["Batch", "Scalar", "contains", "check_aligned", "node_where",
           "NotGeneric", "Specialized", "bind", "is_symbolic", "generalize", "signature",
           "batch_sizes", "product", "sample_env",
           "key_pattern", "match", "conforms", "batch_source", "symbolic_shape", "iter_values"]
