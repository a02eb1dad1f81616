"""The ONNX graph under construction: unique names, constants, casts and run-time shape arithmetic.

Every translation function (ember/onnx/_translate.py) receives a `Builder` and the ember graph node, reads its
inputs through `arg` (cast to the dtype the op computes in, Python scalars made constants), emits ONNX nodes with
`add`, and returns the names of its results.  Sizes that follow a dynamic axis are `Poly`s (see _capture.py);
`ints` turns a list of ints and Polys into a 1-D int64 tensor, computed from the inputs' Shape where needed.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._compile.graph import Value
from ._capture import Poly
from .errors import UnsupportedOperatorError

_ONNX_TYPES = {
    "float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16", "int8": "INT8",
    "int16": "INT16", "int32": "INT32", "int64": "INT64", "uint8": "UINT8", "bool": "BOOL",
    "complex64": "COMPLEX64", "complex128": "COMPLEX128",
}

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def onnx_type(onnx, dtype) -> int:
    """The TensorProto element type of an ember dtype."""
    return getattr(onnx.TensorProto, _ONNX_TYPES[dtype.name])


class Builder:
    """Collects ONNX nodes and initializers while the ember graph is translated node by node."""

    def __init__(self, onnx, opset: int, capture) -> None:
        self.onnx = onnx
        self.helper = onnx.helper
        self.opset = opset
        self.capture = capture
        self.nodes: list = []
        self.initializers: list = []
        self.names: dict = {}  # id(Value) -> ONNX name
        self.input_names: list = []  # placeholder number -> ONNX graph input name
        self.node = None  # the ember node being translated (for names and errors)
        self._used: set = set()
        self._cache: dict = {}  # constants, casts, shapes, symbols, Polys -> their ONNX names
        self._node_count = 0

    # ------------------------------------------------------------ names and nodes
    def fresh(self, hint: str) -> str:
        name, number = hint, 0
        while name in self._used:
            number += 1
            name = f"{hint}_{number}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> str:
        if name in self._used:
            raise ValueError(f"ember.onnx.export: the name '{name}' is used twice (input, output and parameter "
                             "names must be unique)")
        self._used.add(name)
        return name

    def add(self, op_type: str, inputs: list, outputs: int = 1, **attributes):
        """Append one ONNX node; returns its output name (or the list of them when outputs > 1)."""
        hint = self.node.name if self.node is not None and self.node.kind == "call" else op_type.lower()
        names = [self.fresh(hint) for _ in range(outputs)]
        self._node_count += 1
        self.nodes.append(self.helper.make_node(op_type, list(inputs), names, name=f"{op_type}_{self._node_count}",
                                                **attributes))
        return names[0] if outputs == 1 else names

    def unsupported(self, detail: str) -> UnsupportedOperatorError:
        node = self.node
        return UnsupportedOperatorError(f"ember::{node.op.name}", self.opset, None, node.source, detail)

    # ------------------------------------------------------------ constants
    def const(self, value, dtype=None, name: str | None = None) -> str:
        """An initializer holding `value` (a NumPy array or a number; dtype: an ember dtype to store it as)."""
        array = np.asarray(value, dtype=None if dtype is None else dtype.np_dtype)
        key = None
        if name is None and array.size <= 16:
            key = ("const", array.dtype.str, array.shape, array.tobytes())
            if key in self._cache:
                return self._cache[key]
        name = name if name is not None else self.fresh("_constant")  # a given name was reserved up front
        self.initializers.append(self.onnx.numpy_helper.from_array(np.array(array, order="C"), name))
        if key is not None:
            self._cache[key] = name
        return name

    def scalar(self, value, dtype) -> str:
        """A 0-d constant of an ember dtype (a Poly: computed from the input shapes)."""
        if isinstance(value, Poly):
            return self.cast(self.add("Squeeze", [self.poly(value), self.const(np.array([0], np.int64))]),
                             dt.int64, dtype)
        return self.const(np.array(value, dtype=dtype.np_dtype))

    def ints(self, values) -> str:
        """A 1-D int64 tensor of ints and Polys: a constant, or a Concat of constant runs and computed sizes."""
        values = list(values)
        if not any(isinstance(v, Poly) for v in values):
            return self.const(np.array([int(v) for v in values], dtype=np.int64))
        pieces, run = [], []
        for value in values:
            if isinstance(value, Poly):
                if run:
                    pieces.append(self.const(np.array(run, dtype=np.int64)))
                    run = []
                pieces.append(self.poly(value))
            else:
                run.append(int(value))
        if run:
            pieces.append(self.const(np.array(run, dtype=np.int64)))
        return self.add("Concat", pieces, axis=0)

    def poly(self, poly: Poly) -> str:
        """A 1-D int64 tensor [value] of a Poly, computed from the inputs' shapes."""
        key = ("poly", poly)
        if key in self._cache:
            return self._cache[key]
        total = None
        for monomial, coefficient in poly.terms:
            factors = [self.symbol(name) for name in monomial]
            if coefficient != 1 or not factors:
                factors.append(self.const(np.array([coefficient], np.int64)))
            term = factors[0]
            for factor in factors[1:]:
                term = self.add("Mul", [term, factor])
            total = term if total is None else self.add("Add", [total, term])
        self._cache[key] = total
        return total

    def symbol(self, name: str) -> str:
        """A dynamic size as a 1-D int64 tensor [size], read from the input that carries it."""
        key = ("symbol", name)
        if key not in self._cache:
            number, axis = self.capture.symbols[name]
            shape = self.shape_of(self.input_names[number])
            self._cache[key] = self.add("Gather", [shape, self.const(np.array([axis], np.int64))], axis=0)
        return self._cache[key]

    def shape_of(self, name: str) -> str:
        key = ("shape", name)
        if key not in self._cache:
            self._cache[key] = self.add("Shape", [name])
        return self._cache[key]

    def dim(self, name: str, axis: int) -> str:
        """Size of `axis` of the tensor `name` at run time, a 0-d int64."""
        key = ("dim", name, axis)
        if key not in self._cache:
            self._cache[key] = self.add("Gather", [self.shape_of(name), self.const(np.array(axis, np.int64))],
                                        axis=0)
        return self._cache[key]

    # ------------------------------------------------------------ values
    def value(self, value: Value) -> str:
        name = self.names.get(id(value))
        if name is None:
            raise OnnxValueMissing(value)
        return name

    def arg(self, node, index: int, dtype=None) -> str:
        """Argument `index` of node as an ONNX name, cast to `dtype` (an ember dtype) when given."""
        item = node.args[index]
        if isinstance(item, Value):
            name = self.value(item)
            return name if dtype is None else self.cast(name, item.dtype, dtype)
        if item is None:
            raise self.unsupported(f"argument {index} is None")
        if dtype is None:
            dtype = dt.int64 if isinstance(item, (int, Poly)) and not isinstance(item, bool) else dt.float32
            if isinstance(item, bool):
                dtype = dt.bool_
        return self.scalar(item, dtype)

    def cast(self, name: str, source, target) -> str:
        if source is target or target is None:
            return name
        key = ("cast", name, target.name)
        if key not in self._cache:
            self._cache[key] = self.add("Cast", [name], to=onnx_type(self.onnx, target))
        return self._cache[key]

    def shape(self, value: Value) -> tuple:
        """The value's shape, with Polys for sizes that follow the dynamic axes."""
        return value.symbolic_shape if value.symbolic_shape is not None else tuple(value.shape)

    def static_shape(self, value: Value, what: str) -> tuple:
        shape = self.shape(value)
        if any(isinstance(d, Poly) for d in shape):
            raise self.unsupported(f"{what} needs a static shape, but {shape} follows a dynamic axis")
        return shape

    def compute_dtype(self, node, indices=None):
        """The dtype an elementwise op computes in: its result's, or for a bool result (comparisons) the
        promoted dtype of its operands (torch.result_type rules)."""
        result = node.results[0].dtype
        if result is not dt.bool_:
            return result
        return self.promoted([node.args[i] for i in (indices if indices is not None else range(len(node.args)))])

    @staticmethod
    def promoted(args) -> object:
        dims, zeros, scalars = [], [], []
        for item in args:
            if isinstance(item, Value):
                (dims if len(item.shape) else zeros).append(item.dtype)
            elif isinstance(item, Poly):
                scalars.append(dt.int64)
            elif item is not None:
                scalars.append(dt.scalar_dtype(item))
        return dt.result_type_of(dims, zeros, scalars)

    # ------------------------------------------------------------ opset-dependent forms
    def reduce(self, op_type: str, x: str, axes, keepdims: bool) -> str:
        """Reduce* over axes: axes are an input from opset 18 (ReduceSum: 13), an attribute before."""
        axes = [int(a) for a in axes]
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.add(op_type, [x, self.ints(axes)], keepdims=int(keepdims))
        return self.add(op_type, [x], axes=axes, keepdims=int(keepdims))

    def unsqueeze(self, x: str, axes) -> str:
        return self.add("Unsqueeze", [x, self.ints(axes)])

    def squeeze(self, x: str, axes) -> str:
        return self.add("Squeeze", [x, self.ints(axes)])

    def reshape(self, x: str, shape) -> str:
        """Reshape to ints and Polys; one Poly among static sizes is written as -1 (exact: the count is kept)."""
        shape = list(shape)
        symbolic = [i for i, d in enumerate(shape) if isinstance(d, Poly)]
        if len(symbolic) == 1 and -1 not in shape:
            shape[symbolic[0]] = -1
        if 0 in shape and -1 not in shape and self.opset >= 14:  # a 0 means "copy that dim" unless allowzero
            return self.add("Reshape", [x, self.ints(shape)], allowzero=1)
        return self.add("Reshape", [x, self.ints(shape)])


class OnnxValueMissing(Exception):
    """A value whose producer made no ONNX output for it (an op output the translation does not provide)."""

    def __init__(self, value) -> None:
        super().__init__(value.name)
        self.value = value
