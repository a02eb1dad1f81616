"""Capture for ONNX export: the forward recorded by ember.compile's tracer, traced again to check and generalise it.

The tracer (ember/_compile/tracer.py, fullgraph) records every dispatched op with concrete ints: a reshape to
(2 * 4, 5, 8) holds 8, not batch * heads.  So the forward is traced several times:

- with other input *values* (each input rolled by one element): every constant the graph holds (a tensor made
  outside the recorded ops) must come out the same, else it was computed from the inputs behind the
  dispatcher's back and would be frozen into the ONNX file (NOTE [ Constants computed from inputs ]);
- for dynamic axes, at other *sizes*: with k dynamic symbols at the 2**k corners {a, a + 1}**k plus one
  check point (a + 2), every int of the graph (op params, scalar args, result shapes) that differs between
  the traces is fitted as a multilinear polynomial of the symbols (`Poly`: batch * heads, seq + 1), checked
  at the extra point.  The translator computes those from the inputs' Shape at run time.

Everything else (the op sequence, the argument structure, floats, parameters) must be the same in every trace;
a difference means the Python code depends on a size or a value in a way one ONNX graph cannot express.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._compile.graph import Value, iter_values
from .._compile.tracer import ArrayArg, Tracer, Unsupported, flatten_tensors
from .._tensor import Tensor
from .errors import OnnxExporterError, SymbolicValueError

MAX_SYMBOLS = 4  # 2**k + 1 traces


class Poly:
    """An int that depends on the dynamic sizes: a sum of coefficient * product of distinct symbols."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict) -> None:
        self.terms = tuple(sorted((tuple(sorted(m)), int(c)) for m, c in terms.items() if c))

    def evaluate(self, sizes: dict) -> int:
        return sum(c * math.prod(sizes[s] for s in m) for m, c in self.terms)

    @property
    def symbol(self):
        """The symbol's name when this is exactly one symbol, else None."""
        if len(self.terms) == 1 and len(self.terms[0][0]) == 1 and self.terms[0][1] == 1:
            return self.terms[0][0][0]
        return None

    def __eq__(self, other) -> bool:
        return isinstance(other, Poly) and other.terms == self.terms

    def __hash__(self) -> int:
        return hash(("Poly", self.terms))

    def __repr__(self) -> str:
        parts = []
        for monomial, coefficient in self.terms:
            factors = ([] if coefficient == 1 and monomial else [str(coefficient)]) + list(monomial)
            parts.append("*".join(factors))
        return " + ".join(parts).replace("+ -", "- ")


def is_symbolic(structure) -> bool:
    if isinstance(structure, Poly):
        return True
    if isinstance(structure, slice):
        return any(is_symbolic(v) for v in (structure.start, structure.stop, structure.step))
    if isinstance(structure, (tuple, list)):
        return any(is_symbolic(item) for item in structure)
    if isinstance(structure, dict):
        return any(is_symbolic(item) for item in structure.values())
    return False


@dataclass
class Capture:
    """The base trace, generalised: node params/args and Value.symbolic_shape hold Polys where ints vary."""

    graph: object
    placeholders: list  # (path, Value), in flatten_tensors order
    symbols: dict  # symbol name -> (placeholder number, axis): where its size is read at run time
    sizes: dict  # symbol name -> its size in the user's arguments
    patterns: dict = field(default_factory=dict)  # id(external node) -> ("fill", value) | ("arange", start, step)
    result: object = None  # the forward's eager result on the user's arguments


def capture(fn, args: tuple, kwargs: dict, input_axes: list, param_ids: set) -> Capture:
    """Trace fn(*args, **kwargs) (see the module docstring).  input_axes: per flattened input tensor, a dict
    axis -> symbol name; param_ids: ids of the tensors that are the model's parameters and buffers."""
    tensors = _unique_tensors(args, kwargs)
    sizes = _symbol_sizes(tensors, input_axes)
    names = list(sizes)
    if len(names) > MAX_SYMBOLS:
        raise OnnxExporterError(f"ember.onnx.export: at most {MAX_SYMBOLS} distinct dynamic axis names (got {names})")
    points = [dict(sizes)]
    for mask in range(1, 2 ** len(names)):
        points.append({s: sizes[s] + ((mask >> i) & 1) for i, s in enumerate(names)})
    points.append({s: sizes[s] + 2 for s in names})  # the check point (k = 0: the same sizes, other values)
    base, result = _trace(fn, args, kwargs, param_ids)
    for node in base.graph.nodes:
        if node.kind == "call" and "generator" in node.params:
            raise OnnxExporterError(
                f"ember.onnx.export: the forward draws random numbers (ember::{node.op.name} at {node.source}), "
                "e.g. dropout in training mode; an ONNX model cannot reproduce them. Call model.eval() first")
    traces = [base]
    for point in points[1:]:
        new_args, new_kwargs = _other_inputs(args, kwargs, tensors, input_axes, point)
        try:
            traces.append(_trace(fn, new_args, new_kwargs, param_ids)[0])
        except OnnxExporterError:
            raise
        except Exception as error:
            raise SymbolicValueError(
                f"ember.onnx.export: the forward failed when traced again at sizes {point} of the dynamic axes (and "
                f"other input values): {type(error).__name__}: {error}. Axes that must stay equal (a batch shared "
                "by two inputs) need the same name in dynamic_axes") from error
    merger = _Merger(names, points, sizes)
    patterns = merger.merge_graphs([t.graph for t in traces], param_ids)
    symbols = {}
    for number, axes in enumerate(input_axes):
        for axis, name in axes.items():
            symbols.setdefault(name, (number, axis))
    return Capture(base.graph, base.placeholders, symbols, sizes, patterns, result)


# ---------------------------------------------------------------- tracing


class _ExportTracer(Tracer):
    """The compile tracer, keeping a copy of each constant external's data when it is first read: a forward may
    write into a fresh tensor afterwards (F.pad's output under autograd), and the graph needs the data before."""

    def __init__(self, param_ids: set) -> None:
        super().__init__(fullgraph=True)
        self.param_ids = param_ids

    def resolve(self, tensor):
        value = super().resolve(tensor)
        node = value.node
        if node.kind == "external" and getattr(node, "data", None) is None and id(tensor) not in self.param_ids:
            node.data = np.array(tensor.detach()._data, copy=True)
        return value


def constant_data(node) -> np.ndarray:
    """An external's data as the graph read it (a copy for constants, the live tensor for parameters)."""
    data = getattr(node, "data", None)
    return np.asarray(node.tensor.detach()._data) if data is None else data


def _trace(fn, args, kwargs, param_ids: set) -> tuple:
    tracer = _ExportTracer(param_ids)
    try:
        with tracer:
            tracer.bind_inputs(args, kwargs)
            result = fn(*args, **kwargs)
        tracer.finish(result)
    except Unsupported as error:
        raise OnnxExporterError(f"ember.onnx.export records the forward as one graph, and it broke: {error}") from error
    # a write into an input, a parameter or a buffer is state ONNX cannot hold; a write into another tensor
    # (a fresh one made in the forward: F.pad's output under autograd) is just the value it now stands for
    if any(target.node.kind == "placeholder" or id(target.node.tensor) in param_ids
           for target, _, _ in tracer.mutations):
        raise OnnxExporterError("ember.onnx.export: the forward writes in place into an input or a buffer (e.g. "
                                "BatchNorm's running statistics in training mode); ONNX graphs have no state. Call "
                                "model.eval() or avoid the in-place write")
    return tracer, result


def _unique_tensors(args, kwargs) -> list:
    seen, out = set(), []
    for _, tensor in flatten_tensors(args, kwargs):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append(tensor)
    return out


def _symbol_sizes(tensors: list, input_axes: list) -> dict:
    sizes: dict = {}
    for tensor, axes in zip(tensors, input_axes):
        for axis, name in axes.items():
            size = tensor.shape[axis]
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"ember.onnx.export: dynamic axis '{name}' has sizes {sizes[name]} and {size} in the "
                                 "example inputs; axes sharing a name must have the same size")
    return sizes


def _other_inputs(args, kwargs, tensors: list, input_axes: list, point: dict):
    """The arguments with each dynamic axis resized to `point` (values repeated cyclically, so token ids stay
    valid) and every tensor's values rolled by one element (NOTE [ Constants computed from inputs ])."""
    from .._ops.creation import tensor as make_tensor

    replacement = {}
    for tensor, axes in zip(tensors, input_axes):
        array = np.asarray(tensor.detach()._data)
        for axis, name in axes.items():
            array = np.take(array, np.arange(point[name]) % array.shape[axis], axis=axis)
        if array.size:
            array = np.roll(array.reshape(-1), 1).reshape(array.shape)
        replacement[id(tensor)] = make_tensor(array, dtype=tensor.dtype, requires_grad=tensor.requires_grad)

    from ..func._pytree import tree_map

    def rebuild(value):
        return replacement[id(value)] if isinstance(value, Tensor) else value

    return tree_map(rebuild, tuple(args)), tree_map(rebuild, dict(kwargs))


# ---------------------------------------------------------------- comparing and fitting
#
# NOTE [ Constants computed from inputs ]
# A tensor the graph reads but no recorded op made is an external: a parameter, a buffer, or a constant (a
# factory's result such as torch.arange(T) or zeros_like(x)).  A constant written from the inputs without a
# dispatched op (an index assignment of a tensor that needs no grad into a fresh tensor: F.pad's constant mode)
# would be frozen with the example's values.  The second trace runs on rolled input values, so such a constant
# differs between the traces and export refuses it instead of writing a wrong model.


class _Merger:
    def __init__(self, names: list, points: list, sizes: dict) -> None:
        self.names = names
        self.points = points
        self.grid = 2 ** len(names)
        self.sizes = sizes

    def merge_graphs(self, graphs: list, param_ids: set) -> dict:
        base = graphs[0]
        self.positions = [_positions(g) for g in graphs]
        patterns = {}
        for graph in graphs[1:]:
            if len(graph.nodes) != len(base.nodes):
                raise self._differs(f"the traces record {len(base.nodes)} and {len(graph.nodes)} nodes")
        for number, node in enumerate(base.nodes):
            others = [g.nodes[number] for g in graphs]
            where = f"node {node.name} ({node.op.name if node.op is not None else node.kind})"
            for other in others[1:]:
                if other.kind != node.kind or other.op is not node.op or (
                        node.kind == "placeholder" and other.path != node.path):
                    raise self._differs(f"{where}: another op ({other.name}) at its place")
            node.args = self.merge([n.args for n in others], where + " arguments")
            node.params = self.merge([n.params for n in others], where + " params")
            for index, value in enumerate(node.results):
                shape = self.merge([tuple(n.results[index].shape) for n in others], where + " result shape")
                value.symbolic_shape = shape if is_symbolic(shape) else None
            if node.kind == "external" and id(node.tensor) not in param_ids:
                pattern = self._constant(node, [constant_data(n) for n in others], where)
                if pattern is not None:
                    patterns[id(node)] = pattern
            elif node.kind == "external":
                if any(n.tensor is not node.tensor for n in others):
                    raise self._differs(f"{where}: another parameter at its place")
        self.merge([g.output.structure for g in graphs], "the output structure")
        return patterns

    def _differs(self, what: str) -> SymbolicValueError:
        if self.names:
            return SymbolicValueError(
                f"ember.onnx.export: the forward records a different graph when the dynamic axes {self.names} change "
                f"size or the inputs change value ({what}); the Python code depends on them in a way one ONNX graph "
                "cannot express (export with those axes static, or make the code size-independent)")
        return SymbolicValueError(f"ember.onnx.export: the forward records a different graph for other input values "
                                  f"({what}): its Python code depends on the values")

    def _constant(self, node, arrays: list, where: str):
        """None for a constant equal in every trace; a pattern for one whose shape follows the dynamic sizes."""
        base = arrays[0]
        if all(a.shape == base.shape for a in arrays):
            if all(np.array_equal(a, base, equal_nan=a.dtype.kind in "fc") for a in arrays[1:]):
                return None
            raise SymbolicValueError(
                f"ember.onnx.export: {where} is a constant tensor {node.path} whose values change with the input "
                "values: it was computed from the inputs outside ember's recorded ops (an index assignment into a "
                "fresh tensor, such as F.pad(x) with x not requiring grad, or .data writes) and would be frozen "
                "into the ONNX model")
        pattern = _pattern(base)
        if pattern is None or any(_pattern(a) != pattern for a in arrays[1:]):
            raise SymbolicValueError(
                f"ember.onnx.export: {where} is a constant tensor {node.path} whose shape depends on the dynamic axes "
                f"{self.names}; only constant fills (zeros, ones, full) and aranges can follow them. Build it from "
                "the inputs instead (e.g. x.new_zeros(x.shape) -> torch.zeros_like(x) * 0 is still a constant)")
        return pattern

    def merge(self, items: list, where: str):
        first = items[0]
        if isinstance(first, Value):
            position = self.positions[0][id(first)]
            for graph_number, item in enumerate(items[1:], 1):
                if not isinstance(item, Value) or self.positions[graph_number].get(id(item)) != position:
                    raise self._differs(f"{where}: another tensor")
            return first
        if isinstance(first, (bool, np.bool_)) or first is None:
            if any(item is not first and item != first for item in items):
                raise self._differs(f"{where}: {items[0]!r} vs {items[1]!r}")
            return first
        if isinstance(first, (int, np.integer)):
            return self._fit(items, where)
        if isinstance(first, float):
            for item in items[1:]:
                if not isinstance(item, float) or (item != first and not (item != item and first != first)):
                    raise self._differs(f"{where}: the number {first!r} vs {item!r}")
            return first
        if isinstance(first, slice):
            start = self.merge([s.start for s in items], where)
            stop = self.merge([s.stop for s in items], where)
            step = self.merge([s.step for s in items], where)
            return slice(start, stop, step)
        if isinstance(first, (tuple, list)):
            if any(type(item) is not type(first) or len(item) != len(first) for item in items):
                raise self._differs(f"{where}: {first!r} vs {items[1]!r}")
            merged = [self.merge([item[i] for item in items], where) for i in range(len(first))]
            if hasattr(first, "_fields"):
                return type(first)(*merged)
            return type(first)(merged)
        if isinstance(first, dict):
            if any(list(item) != list(first) for item in items):
                raise self._differs(f"{where}: params {list(first)}")
            return {key: self.merge([item[key] for item in items], f"{where} {key}") for key in first}
        if isinstance(first, np.ndarray):
            if any(not isinstance(item, np.ndarray) or not np.array_equal(item, first) for item in items):
                raise self._differs(f"{where}: a constant index array")
            return first
        if isinstance(first, ArrayArg):
            if any(item != first for item in items):
                raise self._differs(f"{where}: {first!r}")
            return first
        for item in items[1:]:
            if item is not first and not _equal(item, first):
                raise self._differs(f"{where}: {first!r} vs {item!r}")
        return first

    def _fit(self, items: list, where: str):
        values = [int(item) for item in items]
        if all(v == values[0] for v in values):
            return values[0]
        if not self.names:
            raise self._differs(f"{where}: {values[0]} vs {values[1]}")
        grid = values[: self.grid]
        k = len(self.names)
        # differences in the shifted basis prod(x_s - a_s), then expanded into monomials of the symbols
        shifted = {}
        for subset in range(self.grid):
            total = 0
            for inner in range(self.grid):
                if inner & ~subset == 0:
                    total += (-1) ** (bin(subset).count("1") - bin(inner).count("1")) * grid[inner]
            shifted[subset] = total
        terms: dict = {}
        for subset, d in shifted.items():
            if not d:
                continue
            bits = [i for i in range(k) if (subset >> i) & 1]
            for inner in range(2 ** len(bits)):
                kept = [bits[j] for j in range(len(bits)) if (inner >> j) & 1]
                dropped = [b for b in bits if b not in kept]
                coefficient = d * math.prod(-self.sizes[self.names[b]] for b in dropped)
                monomial = tuple(self.names[b] for b in kept)
                terms[monomial] = terms.get(monomial, 0) + coefficient
        poly = Poly(terms)
        for point, value in zip(self.points[self.grid:], values[self.grid:]):
            if poly.evaluate(point) != value:
                raise SymbolicValueError(
                    f"ember.onnx.export: {where}: the int {values[0]} is not a (multi)linear function of the dynamic "
                    f"sizes {self.names} (fitted {poly!r}, which gives {poly.evaluate(point)} instead of {value} at "
                    f"{point})")
        if not poly.terms or all(not m for m, _ in poly.terms):
            return poly.evaluate(self.sizes)
        return poly


def _positions(graph) -> dict:
    table = {}
    for number, node in enumerate(graph.nodes):
        for value in node.results:
            table[id(value)] = (number, value.index)
    return table


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a plain equality: identity only
        return False


def _pattern(array: np.ndarray):
    """("fill", v) for a uniform array, ("arange", start, step) for a 1-D arithmetic sequence, else None."""
    flat = array.reshape(-1)
    if flat.size == 0:
        return ("fill", 0)
    if np.all(flat == flat[0]):
        return ("fill", flat[0].item())
    if array.ndim == 1 and flat.size >= 2:
        step = flat[1] - flat[0]
        if np.array_equal(flat, flat[0] + step * np.arange(flat.size, dtype=flat.dtype)):
            return ("arange", flat[0].item(), step.item())
    return None


def needed_nodes(graph) -> tuple:
    """The call nodes the outputs depend on (dead ones are not exported), and the Values read."""
    needed = set()
    for value in iter_values(graph.output.structure):
        needed.add(id(value))
    nodes = []
    for node in reversed(graph.nodes):
        if not any(id(v) in needed for v in node.results):
            continue
        nodes.append(node)
        for value in iter_values(node.args):
            needed.add(id(value))
    return nodes[::-1], needed
