"""ONNX translations of elementwise math, activations, reductions and matrix products.

Each function takes (builder, node) and returns the ONNX name of the node's result (or a list, one per result).
Inputs are read with `b.arg(node, i, dtype)`, which casts them to the dtype the op computes in: ember's
dispatch promoted them (NOTE [ Weak scalars ] in _dtype.py), ONNX wants operands of one type.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._compile.graph import Value

# ---------------------------------------------------------------- elementwise


def unary(op_type: str, **attributes):
    """An op that is one ONNX op on its input cast to the result dtype (exp, sqrt, relu...)."""

    def translate(b, node):
        return b.add(op_type, [b.arg(node, 0, node.results[0].dtype)], **attributes)

    return translate


def predicate(op_type: str):
    """A test of a float input with a bool result (isnan, isinf): the input as it is."""

    def translate(b, node):
        return b.add(op_type, [b.arg(node, 0)])

    return translate


def binary(op_type: str):
    """An elementwise op of several operands, all cast to the dtype it computes in (add, mul, comparisons)."""

    def translate(b, node):
        dtype = b.compute_dtype(node)
        return b.add(op_type, [b.arg(node, i, dtype) for i in range(len(node.args))])

    return translate


def composite(build):
    """An op written as a few ONNX ops: build(b, x, dtype, params) on its first input cast to the result dtype."""

    def translate(b, node):
        dtype = node.results[0].dtype
        return build(b, b.arg(node, 0, dtype), dtype, node.params)

    return translate


def _with_alpha(op_type: str):
    """add/sub: input op alpha * other."""

    def translate(b, node):
        dtype = node.results[0].dtype
        x, y = b.arg(node, 0, dtype), b.arg(node, 1, dtype)
        alpha = node.params.get("alpha", 1)
        if alpha != 1:
            y = b.add("Mul", [y, b.scalar(alpha, dtype)])
        return b.add(op_type, [x, y])

    return translate


add = _with_alpha("Add")
sub = _with_alpha("Sub")


def div(b, node):
    from .._ops import elementwise

    dtype = b.compute_dtype(node)
    x, y = b.arg(node, 0, dtype), b.arg(node, 1, dtype)
    if node.op is elementwise._DIV_FLOOR:
        return _floor_divide(b, x, y, dtype)
    quotient = b.add("Div", [x, y])
    if node.op is elementwise._DIV_TRUNC and (dtype.is_floating_point or dtype.is_complex):
        return _trunc(b, quotient)
    return quotient  # integer Div truncates toward zero already


def _trunc(b, x: str) -> str:
    return b.add("Mul", [b.add("Sign", [x]), b.add("Floor", [b.add("Abs", [x])])])


def _floor_divide(b, x: str, y: str, dtype) -> str:
    if dtype.is_floating_point:
        return b.add("Floor", [b.add("Div", [x, y])])
    # integers: (x - x mod y) / y is exact, and Mod(fmod=0) takes the divisor's sign, as floor division needs
    return b.add("Div", [b.add("Sub", [x, b.add("Mod", [x, y], fmod=0)]), y])


def floor_divide(b, node):
    dtype = b.compute_dtype(node)
    return _floor_divide(b, b.arg(node, 0, dtype), b.arg(node, 1, dtype), dtype)


def remainder(b, node):
    dtype = b.compute_dtype(node)
    x, y = b.arg(node, 0, dtype), b.arg(node, 1, dtype)
    if dtype.is_floating_point:  # ONNX Mod needs fmod=1 on floats; torch.remainder takes the divisor's sign
        return b.add("Sub", [x, b.add("Mul", [b.add("Floor", [b.add("Div", [x, y])]), y])])
    return b.add("Mod", [x, y], fmod=0)


def fmod(b, node):
    dtype = b.compute_dtype(node)
    return b.add("Mod", [b.arg(node, 0, dtype), b.arg(node, 1, dtype)], fmod=1)


def not_equal(b, node):
    dtype = b.compute_dtype(node)
    return b.add("Not", [b.add("Equal", [b.arg(node, 0, dtype), b.arg(node, 1, dtype)])])


def logical(op_type: str):
    """logical_and/or/xor/not: operands as bool."""

    def translate(b, node):
        return b.add(op_type, [b.arg(node, i, dt.bool_) for i in range(len(node.args))])

    return translate


def bitwise(bool_op: str, int_op: str):
    """bitwise_and/or/xor/not: the logical op on bools, the Bitwise* op (opset 18) on integers."""

    def translate(b, node):
        dtype = node.results[0].dtype
        op_type = bool_op if dtype is dt.bool_ else int_op
        if op_type.startswith("Bitwise") and b.opset < 18:
            raise b.unsupported(f"{op_type} on integers needs opset 18")
        return b.add(op_type, [b.arg(node, i, dtype) for i in range(len(node.args))])

    return translate


def where(b, node):
    dtype = node.results[0].dtype
    return b.add("Where", [b.arg(node, 0, dt.bool_), b.arg(node, 1, dtype), b.arg(node, 2, dtype)])


def masked_fill(b, node):
    dtype = node.results[0].dtype
    return b.add("Where", [b.arg(node, 1, dt.bool_), b.arg(node, 2, dtype), b.arg(node, 0, dtype)])


def clamp(b, node):
    """clamp(x, min, max): Max then Min (min/max may be tensors or numbers, either may be None)."""
    dtype = node.results[0].dtype
    out = b.arg(node, 0, dtype)
    low = node.args[1] if len(node.args) > 1 else None
    high = node.args[2] if len(node.args) > 2 else None
    if low is not None:
        out = b.add("Max", [out, b.arg(node, 1, dtype)])
    if high is not None:
        out = b.add("Min", [out, b.arg(node, 2, dtype)])
    return out if (low is not None or high is not None) else b.add("Identity", [out])


def nan_to_num(b, node):
    dtype = node.results[0].dtype
    x = b.arg(node, 0, dtype)
    p = node.params
    out = b.add("Where", [b.add("IsInf", [x], detect_negative=0), b.scalar(p["posinf"], dtype), x])
    out = b.add("Where", [b.add("IsInf", [x], detect_positive=0), b.scalar(p["neginf"], dtype), out])
    return b.add("Where", [b.add("IsNaN", [x]), b.scalar(p["nan"], dtype), out])


def isfinite(b, node):
    x = b.arg(node, 0)
    if not node.args[0].dtype.is_floating_point:
        return b.add("Equal", [x, x])  # integers and bools are always finite
    return b.add("Not", [b.add("Or", [b.add("IsNaN", [x]), b.add("IsInf", [x])])])


def _gelu(b, x, dtype, params):
    half = b.add("Mul", [x, b.scalar(0.5, dtype)])
    if params.get("approximate", "none") == "tanh":
        cube = b.add("Mul", [b.add("Mul", [x, x]), x])
        inner = b.add("Add", [x, b.add("Mul", [cube, b.scalar(0.044715, dtype)])])
        inner = b.add("Mul", [inner, b.scalar(math.sqrt(2.0 / math.pi), dtype)])
        return b.add("Mul", [half, b.add("Add", [b.add("Tanh", [inner]), b.scalar(1.0, dtype)])])
    erf = b.add("Erf", [b.add("Mul", [x, b.scalar(1.0 / math.sqrt(2.0), dtype)])])
    return b.add("Mul", [half, b.add("Add", [erf, b.scalar(1.0, dtype)])])


gelu = composite(_gelu)
silu = composite(lambda b, x, dtype, p: b.add("Mul", [x, b.add("Sigmoid", [x])]))
rsqrt = composite(lambda b, x, dtype, p: b.add("Reciprocal", [b.add("Sqrt", [x])]))
square = composite(lambda b, x, dtype, p: b.add("Mul", [x, x]))
log1p = composite(lambda b, x, dtype, p: b.add("Log", [b.add("Add", [x, b.scalar(1, dtype)])]))
expm1 = composite(lambda b, x, dtype, p: b.add("Sub", [b.add("Exp", [x]), b.scalar(1, dtype)]))
log2 = composite(lambda b, x, dtype, p: b.add("Div", [b.add("Log", [x]), b.scalar(math.log(2.0), dtype)]))
log10 = composite(lambda b, x, dtype, p: b.add("Div", [b.add("Log", [x]), b.scalar(math.log(10.0), dtype)]))
exp2 = composite(lambda b, x, dtype, p: b.add("Pow", [b.scalar(2.0, dtype), x]))
trunc = composite(lambda b, x, dtype, p: _trunc(b, x) if dtype.is_floating_point else b.add("Identity", [x]))
frac = composite(lambda b, x, dtype, p: b.add("Sub", [x, _trunc(b, x)]))
leaky_relu = composite(lambda b, x, dtype, p: b.add("LeakyRelu", [x], alpha=float(p["negative_slope"])))
hardtanh = composite(lambda b, x, dtype, p: b.add("Clip", [x, b.scalar(p["min_val"], dtype),
                                                             b.scalar(p["max_val"], dtype)]))


def _elu(b, x, dtype, p):
    alpha, scale, input_scale = float(p["alpha"]), float(p["scale"]), float(p["input_scale"])
    if scale == 1.0 and input_scale == 1.0:
        return b.add("Elu", [x], alpha=alpha)
    if input_scale == 1.0:
        return b.add("Selu", [x], alpha=alpha, gamma=scale)  # scale * elu(x, alpha): selu's form, any constants
    negative = b.add("Mul", [b.add("Sub", [b.add("Exp", [b.add("Mul", [x, b.scalar(input_scale, dtype)])]),
                                           b.scalar(1.0, dtype)]), b.scalar(alpha * scale, dtype)])
    positive = b.add("Mul", [x, b.scalar(scale, dtype)])
    return b.add("Where", [b.add("Greater", [x, b.scalar(0, dtype)]), positive, negative])


elu = composite(_elu)


def _softplus(b, x, dtype, p):
    beta, threshold = float(p["beta"]), float(p["threshold"])
    scaled = x if beta == 1.0 else b.add("Mul", [x, b.scalar(beta, dtype)])
    soft = b.add("Softplus", [scaled])
    if beta != 1.0:
        soft = b.add("Div", [soft, b.scalar(beta, dtype)])
    # torch returns x itself where beta * x > threshold (numerically the same, exactly x)
    return b.add("Where", [b.add("Greater", [scaled, b.scalar(threshold, dtype)]), x, soft])


softplus = composite(_softplus)


def softmax(op_type: str):
    def translate(b, node):
        return b.add(op_type, [b.arg(node, 0, node.results[0].dtype)], axis=int(node.params["dim"]))

    return translate


# ---------------------------------------------------------------- reductions


def _dims(node) -> list:
    dim = node.params.get("dim")
    rank = len(node.args[0].shape)
    if dim is None:
        return list(range(rank))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [d % rank if rank else 0 for d in dims]


def reduction(op_type: str):
    """sum/mean/amax/amin/prod(dim, keepdim) and their full forms; the input cast to the result dtype."""

    def translate(b, node):
        x = b.arg(node, 0, node.results[0].dtype)
        if len(node.args[0].shape) == 0:
            return b.add("Identity", [x])
        out = b.reduce(op_type, x, _dims(node), node.params.get("keepdim", False))
        if len(node.results) == 2:  # max/min(dim) -> (values, indices)
            arg_op = "ArgMax" if op_type == "ReduceMax" else "ArgMin"
            indices = b.add(arg_op, [x], axis=_dims(node)[0], keepdims=int(node.params["keepdim"]))
            return [out, indices]
        return out

    return translate


def logsumexp(b, node):
    x = b.arg(node, 0, node.results[0].dtype)
    dims, keepdim = _dims(node), node.params.get("keepdim", False)
    peak = b.reduce("ReduceMax", x, dims, True)
    total = b.reduce("ReduceSum", b.add("Exp", [b.add("Sub", [x, peak])]), dims, keepdim)
    if not keepdim:
        peak = b.squeeze(peak, dims)
    return b.add("Add", [b.add("Log", [total]), peak])


def arg_extreme(op_type: str):
    def translate(b, node):
        x = b.arg(node, 0)
        dim, keepdim = node.params.get("dim"), bool(node.params.get("keepdim", False))
        if dim is None:
            flat = b.add(op_type, [b.reshape(x, [-1])], axis=0, keepdims=0)
            return b.reshape(flat, [1] * len(node.args[0].shape)) if keepdim else flat
        return b.add(op_type, [x], axis=int(dim), keepdims=int(keepdim))

    return translate


def _count(b, node, dims, dtype) -> str:
    """The number of elements reduced over dims, as a 0-d of dtype (computed when a size is dynamic)."""
    shape = b.shape(node.args[0])
    sizes = [shape[d] for d in dims]
    if not any(not isinstance(s, (int, np.integer)) for s in sizes):
        return b.scalar(math.prod(sizes), dtype)
    x = b.arg(node, 0)
    total = None
    for d in dims:
        size = b.dim(x, d)
        total = size if total is None else b.add("Mul", [total, size])
    return b.cast(total, dt.int64, dtype)


def variance(take_root: bool):
    def translate(b, node):
        dtype = node.results[0].dtype
        x = b.arg(node, 0, dtype)
        dims, keepdim = _dims(node), bool(node.params.get("keepdim", False))
        centered = b.add("Sub", [x, b.reduce("ReduceMean", x, dims, True)])
        total = b.reduce("ReduceSum", b.add("Mul", [centered, centered]), dims, keepdim)
        correction = node.params.get("correction", 1)
        count = b.add("Sub", [_count(b, node, dims, dtype), b.scalar(correction, dtype)])
        count = b.add("Max", [count, b.scalar(0, dtype)])
        out = b.add("Div", [total, count])
        return b.add("Sqrt", [out]) if take_root else out

    return translate


def vector_norm(b, node):
    dtype = node.results[0].dtype
    x = b.arg(node, 0, dtype)
    dims, keepdim = _dims(node), bool(node.params.get("keepdim", False))
    order = float(node.params.get("ord", 2.0))
    if order == 2.0:
        return b.reduce("ReduceL2", x, dims, keepdim)
    if order == 1.0:
        return b.reduce("ReduceL1", x, dims, keepdim)
    if order == math.inf:
        return b.reduce("ReduceMax", b.add("Abs", [x]), dims, keepdim)
    if order == -math.inf:
        return b.reduce("ReduceMin", b.add("Abs", [x]), dims, keepdim)
    if order == 0.0:
        nonzero = b.cast(b.add("Not", [b.add("Equal", [x, b.scalar(0, dtype)])]), dt.bool_, dtype)
        return b.reduce("ReduceSum", nonzero, dims, keepdim)
    powered = b.add("Pow", [b.add("Abs", [x]), b.scalar(order, dtype)])
    return b.add("Pow", [b.reduce("ReduceSum", powered, dims, keepdim), b.scalar(1.0 / order, dtype)])


def all_any(op_type: str):
    """all/any: ReduceMin/ReduceMax of the input as 0/1 (ONNX has no boolean reductions)."""

    def translate(b, node):
        x = b.cast(b.arg(node, 0, dt.bool_), dt.bool_, dt.int32)
        out = b.reduce(op_type, x, _dims(node), node.params.get("keepdim", False))
        return b.cast(out, dt.int32, dt.bool_)

    return translate


def cumsum(b, node):
    x = b.arg(node, 0, node.results[0].dtype)
    return b.add("CumSum", [x, b.scalar(int(node.params["dim"]), dt.int64)], reverse=int(node.params["reverse"]))


# ---------------------------------------------------------------- matrix products


def matmul(b, node):
    dtype = node.results[0].dtype
    return b.add("MatMul", [b.arg(node, 0, dtype), b.arg(node, 1, dtype)])


def linear(b, node):
    """linear(x, W, b) = x W^T + b: Gemm for a 2-D input, else MatMul with the transposed weight."""
    dtype = node.results[0].dtype
    x, weight = b.arg(node, 0, dtype), b.arg(node, 1, dtype)
    bias = node.args[2] if len(node.args) > 2 else None
    if len(node.args[0].shape) == 2 and len(node.args[1].shape) == 2 and dtype.is_floating_point:
        inputs = [x, weight] + ([b.arg(node, 2, dtype)] if bias is not None else [])
        return b.add("Gemm", inputs, transB=1)
    product = b.add("MatMul", [x, b.add("Transpose", [weight])])
    return product if bias is None else b.add("Add", [product, b.arg(node, 2, dtype)])


def addmm(b, node):
    """addmm(input, a, b, beta, alpha) = beta * input + alpha * a @ b: one Gemm."""
    dtype = node.results[0].dtype
    beta, alpha = float(node.params.get("beta", 1)), float(node.params.get("alpha", 1))
    inputs = [b.arg(node, 1, dtype), b.arg(node, 2, dtype), b.arg(node, 0, dtype)]
    return b.add("Gemm", inputs, alpha=alpha, beta=beta)


def baddbmm(b, node):
    dtype = node.results[0].dtype
    beta, alpha = node.params.get("beta", 1), node.params.get("alpha", 1)
    product = b.add("MatMul", [b.arg(node, 1, dtype), b.arg(node, 2, dtype)])
    if alpha != 1:
        product = b.add("Mul", [product, b.scalar(alpha, dtype)])
    if beta == 0:
        return product
    base = b.arg(node, 0, dtype)
    if beta != 1:
        base = b.add("Mul", [base, b.scalar(beta, dtype)])
    return b.add("Add", [base, product])


def dot(b, node):
    dtype = node.results[0].dtype
    return b.add("MatMul", [b.arg(node, 0, dtype), b.arg(node, 1, dtype)])


def einsum(b, node):
    dtype = node.results[0].dtype
    inputs = [b.arg(node, i, dtype) for i, item in enumerate(node.args) if isinstance(item, Value)]
    return b.add("Einsum", inputs, equation=node.params["equation"])
