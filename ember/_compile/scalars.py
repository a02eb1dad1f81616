"""Python float arguments as graph inputs: one graph for every value of an `lr`, a `scale`, a `temperature`.

torch.compile specialises on a Python float argument at first and, when a second value comes, captures again
with the float dynamic (a SymFloat the graph reads at each call, guarded where Python branched on it).  ember
does the same with a stand-in: when a call misses the guards only by the values of float arguments, the
capture runs the function with those arguments replaced by `FloatArg`s, floats that remember where they came
from.  Arithmetic on them gives more FloatArgs holding the expression (`-lr`, `1 - beta`, `scale ** 0.5`); any
other use by Python -- a comparison, bool(), int(), round(), formatting, hashing -- is noted, and the capture
is then kept for that value only, as before (ember installs no guards on such branches; torch does).

An op call given a FloatArg (dispatch.call, through `split`) runs with the plain value and is recorded with
`Scalar` markers in its args or params (`Node.symbolic_args` / `symbolic_params`, as a size-generic graph's
ints): the replay binds them to the call's values and runs that node as an op call, not inside a fused kernel.
The two captures are then compared node by node (`generalize`): the same ops, and every number that differs
is a marker whose expression gives the first capture's number at the first capture's values -- a value that
escaped the stand-in (math.exp(lr), np.float32(lr): C code reads a float subclass without asking it) differs
without a marker and keeps the graph specialised.  A branch on such a C function's answer (`if math.isinf(p)`)
is not seen; library code asks that of inf, nan, 0, 1, a sign or an integer value, so a graph serves only
values of its two captures' class (`value_class`).  At replay each marked node's result must have the captured
shape (`check_shapes`: interpolate's scale_factor changes a shape without Python seeing the float); if not, the
generic graph is dropped and the call captured for its own value.
"""

from __future__ import annotations

import math

from .symbolic import _BINARY, _UNARY, NotGeneric, Scalar, _same, check_aligned, contains, format_expr, node_where


class Usage:
    """What one capture's stand-ins saw: the first Python use that is not arithmetic (None: none)."""

    def __init__(self) -> None:
        self.reason = None
        self.active = True
        self.pending: list = []  # (op, marked args, marked params) of the op calls running (_dispatch)

    def note(self, expr, what: str) -> None:
        if self.active and self.reason is None:
            self.reason = f"Python used the float argument {format_expr(expr)} ({what})"


def _arith(name: str, reflected: bool = False):
    function = _BINARY[name]

    def method(self, other):
        if isinstance(other, FloatArg):
            other_expr, other_value = other._expr, float.__float__(other)
        elif type(other) in (int, float, bool):
            other_expr, other_value = other, other
        else:
            return NotImplemented  # (a Tensor: its reflected method takes the stand-in as an op operand)
        value = float.__float__(self)
        a, b = (other_value, value) if reflected else (value, other_value)
        result = function(a, b)
        if not isinstance(result, float):  # (a complex power of a negative base)
            self._usage.note(self._expr, f"{name} gave {type(result).__name__}")
            return result
        expr = (name, other_expr, self._expr) if reflected else (name, self._expr, other_expr)
        return FloatArg(result, expr, self._usage)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _unary(name: str):
    def method(self):
        return FloatArg(_UNARY[name](float.__float__(self)), (name, self._expr), self._usage)

    method.__name__ = f"__{name}__"
    return method


def _noted(name: str):
    plain = getattr(float, name)

    def method(self, *args):
        self._usage.note(self._expr, name.strip("_"))
        return plain(float.__float__(self), *(float.__float__(a) if isinstance(a, FloatArg) else a for a in args))

    method.__name__ = name
    return method


class FloatArg(float):
    """A float argument (or an expression of float arguments) during a capture: see the module docstring."""

    def __new__(cls, value: float, expr, usage: Usage):
        self = float.__new__(cls, value)
        self._expr = expr
        self._usage = usage
        return self

    def __reduce__(self):  # (pickled or deep-copied: the plain number)
        return (float, (float.__float__(self),))


for _name in _BINARY:
    setattr(FloatArg, f"__{_name}__", _arith(_name))
    setattr(FloatArg, f"__r{_name}__", _arith(_name, reflected=True))
for _name in _UNARY:
    setattr(FloatArg, f"__{_name}__", _unary(_name))
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__hash__", "__int__",
              "__float__", "__round__", "__floor__", "__ceil__", "__trunc__", "__format__", "__repr__", "__str__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__divmod__", "__rdivmod__", "is_integer",
              "as_integer_ratio", "hex", "__getnewargs__"):
    setattr(FloatArg, _name, _noted(_name))
del _name


def value_class(value: float) -> tuple:
    """What library code most often branches on without asking the float (`math.isinf(p)` reads a float
    subclass directly): a generic graph serves only values of its captured values' class, so p=inf after
    captures at 2.0 and 3.0 is captured anew."""
    if math.isnan(value) or math.isinf(value):
        return (math.isnan(value), value > 0)
    return (value > 0, value == 0, value.is_integer(), abs(value) == 1)


def wrap(args: tuple, kwargs: dict, paths: tuple, usage: Usage) -> tuple[tuple, dict]:
    """The call's arguments with the float arguments at `paths` (("args", i) or ("kwargs", name)) replaced by
    stand-ins, the i-th path being s{i}."""
    args, kwargs = list(args), dict(kwargs)
    for index, (where, key) in enumerate(paths):
        holder = args if where == "args" else kwargs
        holder[key] = FloatArg(holder[key], ("arg", index), usage)
    return tuple(args), kwargs


def read(args: tuple, kwargs: dict, paths: tuple) -> tuple:
    """The call's float arguments at `paths`, in order (a replay's environment)."""
    return tuple(float(args[key] if where == "args" else kwargs[key]) for where, key in paths)


def _has_arg(structure) -> bool:
    return contains(structure, FloatArg)


def _split(structure):
    """(plain, marked): the structure with stand-ins as plain floats, and with them as Scalar markers."""
    if isinstance(structure, FloatArg):
        return float.__float__(structure), Scalar(structure._expr)
    if isinstance(structure, tuple) and not hasattr(structure, "_fields"):
        pairs = [_split(item) for item in structure]
        return tuple(p for p, _ in pairs), tuple(m for _, m in pairs)
    if isinstance(structure, list):
        pairs = [_split(item) for item in structure]
        return [p for p, _ in pairs], [m for _, m in pairs]
    if isinstance(structure, dict):
        pairs = {key: _split(item) for key, item in structure.items()}
        return {k: p for k, (p, _) in pairs.items()}, {k: m for k, (_, m) in pairs.items()}
    if type(structure) is slice:
        (start, stop, step), (mstart, mstop, mstep) = _split((structure.start, structure.stop, structure.step))
        return slice(start, stop, step), slice(mstart, mstop, mstep)
    return structure, structure


def split(args: tuple, params: dict):
    """For an op call under a capture with stand-ins: None when neither args nor params hold one, else
    (plain args, plain params, marked args or None, marked params or None)."""
    in_args, in_params = _has_arg(args), bool(params) and _has_arg(params)
    if not (in_args or in_params):
        return None
    plain_args, marked_args = _split(args) if in_args else (args, None)
    plain_params, marked_params = _split(params) if in_params else (params, None)
    return plain_args, plain_params, marked_args, marked_params


def plain(structure):
    """A capture's result as the caller gets it: any stand-in in it (`return loss, lr`) as its plain float."""
    return _split(structure)[0] if _has_arg(structure) else structure


def has_marker(structure) -> bool:
    return contains(structure, Scalar)


def _compare(old, new, marked, old_env: tuple, where: str) -> None:
    """`new` (plain numbers of the stand-in capture; `marked` the same with markers) against the first
    capture's `old`: equal, except where a marker stands, whose expression must give the old number."""
    if isinstance(marked, Scalar):
        if not isinstance(old, (int, float)) or isinstance(old, bool) or marked.value(old_env) != old:
            raise NotGeneric(f"{where}: {old!r} is not {marked!r} at the first call's values")
        return
    if isinstance(marked, (tuple, list)) and has_marker(marked):
        if not isinstance(old, (tuple, list)) or len(old) != len(marked):
            raise NotGeneric(f"{where}: {old!r} vs {new!r}")
        for o, n, m in zip(old, new, marked):
            _compare(o, n, m, old_env, where)
        return
    if isinstance(marked, dict) and has_marker(marked):
        if not isinstance(old, dict) or old.keys() != marked.keys():
            raise NotGeneric(f"{where}: {old!r} vs {new!r}")
        for key in marked:
            _compare(old[key], new[key], marked[key], old_env, where)
        return
    if type(marked) is slice and has_marker(marked):
        if type(old) is not slice:
            raise NotGeneric(f"{where}: {old!r} vs {new!r}")
        _compare((old.start, old.stop, old.step), (new.start, new.stop, new.step),
                 (marked.start, marked.stop, marked.step), old_env, where)
        return
    if not (old is new or _same(old, new)):
        raise NotGeneric(f"{where}: {old!r} became {new!r} with no float argument behind it")


def generalize(old: list, new: list, old_env: tuple) -> None:
    """NotGeneric unless the stand-in capture's signature `new` (symbolic.signature, markers on its nodes) is the
    first capture's `old` with the markers bound to the first capture's values."""
    check_aligned(old, new)
    old_rows, old_output, _ = old
    new_rows, new_output, _ = new
    _compare(old_output, new_output, new_output, old_env, "the output structure")
    for old_row, new_row in zip(old_rows, new_rows):
        node = new_row[0]
        where = node_where(node)
        if old_row[1:3] != new_row[1:3] or old_row[5:] != new_row[5:]:
            raise NotGeneric(f"{where}: a different op, result shape, external tensor or grad mode")
        marked_args = node.symbolic_args if node.symbolic_args is not None else new_row[3]
        _compare(old_row[3], new_row[3], _positions(marked_args, new_row[3]), old_env, f"{where} arguments")
        marked_params = node.symbolic_params if node.symbolic_params is not None else new_row[4]
        _compare(old_row[4], new_row[4], marked_params, old_env, f"{where} params")


def _positions(marked, row):
    """The node's marked args with its Values as the signature writes them (("value", position))."""
    if isinstance(marked, Scalar):
        return marked
    if isinstance(marked, (tuple, list)) and not hasattr(marked, "_fields") and isinstance(row, (tuple, list)):
        items = [_positions(m, r) for m, r in zip(marked, row)]
        return tuple(items) if isinstance(marked, tuple) else items
    return row


def check_shapes(results, shapes: tuple):
    """A marked node's results at replay: their shapes must be the captured ones (see the module docstring)."""
    for tensor, shape in zip(results if isinstance(results, tuple) else (results,), shapes):
        if tensor._data.shape != shape:
            raise ShapeChanged(f"a float argument changed a result's shape from {list(shape)} to "
                               f"{list(tensor._data.shape)}")
    return results


class ShapeChanged(Exception):
    pass


__all__ = ["FloatArg", "Scalar", "Usage", "wrap", "read", "split", "generalize", "check_shapes",
           "ShapeChanged", "has_marker", "plain"]

Usage.split = staticmethod(split)  # (the dispatcher reaches these through the tracer's Usage)
