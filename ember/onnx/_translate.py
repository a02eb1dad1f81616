"""The translation table (ember op name -> function(builder, node) -> ONNX names) and the graph translation.

Adding an op is one entry in TRANSLATIONS: a ready-made form (`unary("Exp")`, `binary("Add")`) or a small
function in _ops_math.py / _ops_shape.py / _ops_nn.py.  A function returns one name per result of the node
(a single name for one result); None for a result it cannot produce (an error only if something reads it).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._compile.graph import iter_values
from . import _ops_math as m
from . import _ops_nn as nn
from . import _ops_shape as s
from ._builder import Builder, OnnxValueMissing, onnx_type
from ._capture import Poly, constant_data, needed_nodes
from .errors import UnsupportedOperatorError

TRANSLATIONS = {
    # elementwise arithmetic and comparisons
    "add": m.add, "sub": m.sub, "mul": m.binary("Mul"), "div": m.div, "pow": m.binary("Pow"),
    "maximum": m.binary("Max"), "minimum": m.binary("Min"), "fmax": m.binary("Max"), "fmin": m.binary("Min"),
    "remainder": m.remainder, "fmod": m.fmod, "floor_divide": m.floor_divide,
    "eq": m.binary("Equal"), "ne": m.not_equal, "lt": m.binary("Less"), "le": m.binary("LessOrEqual"),
    "gt": m.binary("Greater"), "ge": m.binary("GreaterOrEqual"),
    "logical_and": m.logical("And"), "logical_or": m.logical("Or"), "logical_xor": m.logical("Xor"),
    "logical_not": m.logical("Not"), "bitwise_and": m.bitwise("And", "BitwiseAnd"),
    "bitwise_or": m.bitwise("Or", "BitwiseOr"), "bitwise_xor": m.bitwise("Xor", "BitwiseXor"),
    "bitwise_not": m.bitwise("Not", "BitwiseNot"),
    "where": m.where, "masked_fill": m.masked_fill, "clamp": m.clamp, "nan_to_num": m.nan_to_num,
    # elementwise math
    "neg": m.unary("Neg"), "abs": m.unary("Abs"), "exp": m.unary("Exp"), "log": m.unary("Log"),
    "sqrt": m.unary("Sqrt"), "rsqrt": m.rsqrt, "reciprocal": m.unary("Reciprocal"), "erf": m.unary("Erf"),
    "sin": m.unary("Sin"), "cos": m.unary("Cos"), "tan": m.unary("Tan"), "asin": m.unary("Asin"),
    "acos": m.unary("Acos"), "atan": m.unary("Atan"), "sinh": m.unary("Sinh"), "cosh": m.unary("Cosh"),
    "asinh": m.unary("Asinh"), "acosh": m.unary("Acosh"), "atanh": m.unary("Atanh"), "tanh": m.unary("Tanh"),
    "sigmoid": m.unary("Sigmoid"), "floor": m.unary("Floor"), "ceil": m.unary("Ceil"), "round": m.unary("Round"),
    "sign": m.unary("Sign"), "trunc": m.trunc, "frac": m.frac, "square": m.square, "log1p": m.log1p,
    "expm1": m.expm1, "log2": m.log2, "log10": m.log10, "exp2": m.exp2,
    "isnan": m.predicate("IsNaN"), "isinf": m.predicate("IsInf"), "isfinite": m.isfinite,
    # activations
    "relu": m.unary("Relu"), "gelu": m.gelu, "silu": m.silu, "leaky_relu": m.leaky_relu, "elu": m.elu,
    "hardtanh": m.hardtanh, "hardsigmoid": m.unary("HardSigmoid", alpha=1 / 6, beta=0.5), "softplus": m.softplus,
    "softmax": m.softmax("Softmax"),
    "log_softmax": m.softmax("LogSoftmax"),
    # reductions and scans
    "sum": m.reduction("ReduceSum"), "mean": m.reduction("ReduceMean"), "amax": m.reduction("ReduceMax"),
    "amin": m.reduction("ReduceMin"), "max": m.reduction("ReduceMax"), "min": m.reduction("ReduceMin"),
    "prod": m.reduction("ReduceProd"), "logsumexp": m.logsumexp, "argmax": m.arg_extreme("ArgMax"),
    "argmin": m.arg_extreme("ArgMin"), "var": m.variance(False), "std": m.variance(True),
    "linalg_vector_norm": m.vector_norm, "all": m.all_any("ReduceMin"), "any": m.all_any("ReduceMax"),
    "cumsum": m.cumsum, "topk": s.topk, "sort": s.sort,
    # matrix products
    "matmul": m.matmul, "mm": m.matmul, "bmm": m.matmul, "mv": m.matmul, "dot": m.dot, "linear": m.linear,
    "addmm": m.addmm, "baddbmm": m.baddbmm, "einsum": m.einsum,
    # shapes, views, copies
    "reshape": s.reshape, "view": s.reshape, "_unsafe_view": s.reshape, "transpose": s.permute,
    "permute": s.permute, "t": s.permute, "unsqueeze": s.unsqueeze, "squeeze": s.squeeze, "expand": s.expand,
    "clone": s.identity, "contiguous": s.identity, "alias": s.identity, "detach": s.identity,
    "_to_copy": s.to_copy, "cat": s.cat, "stack": s.stack, "repeat": s.repeat, "flip": s.flip,
    "tril": s.triangle(upper=False), "triu": s.triangle(upper=True),
    # indexing
    "slice": s.basic_index, "select": s.basic_index, "index": s.index, "gather": s.gather,
    "index_put": s.index_put, "copy_slices": s.copy_slices, "as_strided": s.gather_positions,
    "diagonal": s.diagonal,
    # nn
    "convolution": nn.convolution, "convolution_backward_input": nn.convolution_transpose,
    "max_pool": nn.max_pool, "native_layer_norm": nn.layer_norm,
    "scaled_dot_product_attention": nn.attention, "lstm_layer": nn.lstm_layer,
}


def translate(builder: Builder, capture, parameter_names: dict, table: dict) -> list:
    """Translate the captured graph's live nodes into builder; returns the output Values in order.

    parameter_names: id(tensor) -> its state_dict name, for the externals that are parameters or buffers."""
    graph = capture.graph
    for (_, value), name in zip(capture.placeholders, builder.input_names):
        builder.names[id(value)] = name
    nodes, _ = needed_nodes(graph)
    for node in nodes:
        builder.node = node
        if node.kind == "placeholder":
            continue
        if node.kind == "external":
            builder.names[id(node.results[0])] = _external(builder, node, capture, parameter_names)
        elif node.kind == "detach":
            builder.names[id(node.results[0])] = builder.value(node.args[0])
        else:
            _call(builder, node, table)
    builder.node = None
    return list(iter_values(graph.output.structure))


def _call(builder: Builder, node, table: dict) -> None:
    fn = table.get(node.op.name)
    if fn is None:
        raise UnsupportedOperatorError(f"ember::{node.op.name}", builder.opset, None, node.source,
                                       "no ONNX translation for this op (ember.onnx._translate.TRANSLATIONS)")
    try:
        outputs = fn(builder, node)
    except OnnxValueMissing as missing:
        raise builder.unsupported(f"it reads {missing.value.name}, an op result the exporter does not "
                                  "produce") from None
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    for value, name in zip(node.results, outputs):
        if name is not None:
            builder.names[id(value)] = name


def _external(builder: Builder, node, capture, parameter_names: dict) -> str:
    """A parameter or buffer (an initializer under its state_dict name), a constant, or a constant whose shape
    follows a dynamic axis (a fill or an arange computed at run time)."""
    tensor = node.tensor
    value = node.results[0]
    pattern = capture.patterns.get(id(node))
    if pattern is not None:
        return _symbolic_constant(builder, value, pattern)
    array = constant_data(node)
    return builder.const(array, name=parameter_names.get(id(tensor)))


def _symbolic_constant(builder: Builder, value, pattern) -> str:
    dtype = value.dtype
    shape = builder.shape(value)
    if pattern[0] == "fill":
        fill = builder.onnx.numpy_helper.from_array(np.array([pattern[1]], dtype=dtype.np_dtype), "value")
        return builder.add("ConstantOfShape", [builder.ints(shape)], value=fill)
    start, step = pattern[1], pattern[2]
    compute = dtype if dtype in (dt.float32, dt.float64, dt.int32, dt.int64, dt.int16) else dt.float32
    count = builder.cast(builder.squeeze(builder.ints([shape[0]]), [0]), dt.int64, compute)
    first = builder.scalar(start, compute)
    stride = builder.scalar(step, compute)
    limit = builder.add("Add", [first, builder.add("Mul", [count, stride])])
    out = builder.add("Range", [first, limit, stride])
    return builder.cast(out, compute, dtype)


def tensor_type(builder: Builder, name: str, dtype, shape, axis_names: dict):
    """A graph input/output's ValueInfo: static dims as numbers, dynamic ones as their names."""
    dims = []
    for axis, size in enumerate(shape):
        if axis in axis_names:
            dims.append(axis_names[axis])
        elif isinstance(size, Poly):
            dims.append(size.symbol or repr(size))
        else:
            dims.append(int(size))
    return builder.helper.make_tensor_value_info(name, onnx_type(builder.onnx, dtype), dims)
