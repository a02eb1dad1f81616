"""ONNX translations of the nn ops ember keeps as one op: convolution, max pooling, layer norm, attention, LSTM.

Batch norm (eval), group and instance norm, average and adaptive pooling, GELU/SiLU MLPs and GRU cells reach
the graph already spelled out in smaller ops (ember's own decompositions), so they need no entry here.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ._capture import Poly


def _pairs(padding) -> list:
    """ember's per-dim (before, after) padding as ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...]."""
    return [int(p[0]) for p in padding] + [int(p[1]) for p in padding]


def convolution(b, node):
    """convolution(x, weight, bias, stride, padding, dilation, groups): Conv (1-D, 2-D and 3-D)."""
    dtype = node.results[0].dtype
    p = node.params
    inputs = [b.arg(node, 0, dtype), b.arg(node, 1, dtype)]
    if len(node.args) > 2 and node.args[2] is not None:
        inputs.append(b.arg(node, 2, dtype))
    kernel = b.static_shape(node.args[1], "a convolution's weight")[2:]
    return b.add("Conv", inputs, kernel_shape=[int(k) for k in kernel], strides=[int(s) for s in p["stride"]],
                 pads=_pairs(p["padding"]), dilations=[int(d) for d in p["dilation"]], group=int(p["groups"]))


def convolution_transpose(b, node):
    """convolution_backward_input(x, weight) (conv_transpose*d): ConvTranspose, output_padding from the
    recorded output shape."""
    dtype = node.results[0].dtype
    p = node.params
    in_shape = b.static_shape(node.args[0], "a transposed convolution's input")
    kernel = b.static_shape(node.args[1], "a transposed convolution's weight")[2:]
    target = [int(s) for s in _evaluate(b, p["input_shape"])[2:]]
    strides, dilations = [int(s) for s in p["stride"]], [int(d) for d in p["dilation"]]
    pads = _pairs(p["padding"])
    rank = len(kernel)
    output_padding = []
    for i in range(rank):
        natural = (in_shape[2 + i] - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1 - pads[i] - pads[rank + i]
        output_padding.append(target[i] - natural)
    if any(o < 0 for o in output_padding):
        raise b.unsupported(f"transposed convolution output padding {output_padding}")
    return b.add("ConvTranspose", [b.arg(node, 0, dtype), b.arg(node, 1, dtype)], kernel_shape=list(kernel),
                 strides=strides, pads=pads, dilations=dilations, group=int(p["groups"]),
                 output_padding=output_padding)


def _evaluate(b, values) -> list:
    """Ints and Polys at the sizes of the example inputs."""
    return [v.evaluate(b.capture.sizes) if isinstance(v, Poly) else int(v) for v in values]


def max_pool(b, node):
    """max_pool(kernel, stride, padding, dilation, out): MaxPool; ceil_mode where `out` exceeds the floor size.
    The indices output (return_indices=True) is torch's per-plane numbering, which ONNX's MaxPool does not give."""
    p = node.params
    kernel, stride = [int(k) for k in p["kernel"]], [int(s) for s in p["stride"]]
    padding, dilation = [int(q) for q in p["padding"]], [int(d) for d in p["dilation"]]
    shape = _evaluate(b, b.shape(node.args[0]))
    spatial = shape[len(shape) - len(kernel):]
    out = _evaluate(b, p["out"])
    floor = [(spatial[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1
             for i in range(len(kernel))]
    ceil_mode = int(any(o > f for o, f in zip(out, floor)))
    values = b.add("MaxPool", [b.arg(node, 0)], kernel_shape=kernel, strides=stride, pads=padding + padding,
                   dilations=dilation, ceil_mode=ceil_mode)
    return [values, None]


def layer_norm(b, node):
    """native_layer_norm(x, weight, bias, axes, eps) -> (y, mean, rstd): LayerNormalization (opset 17), or its
    spelled-out form before that."""
    dtype = node.results[0].dtype
    axes = [int(a) for a in node.params["axes"]]
    rank = len(node.args[0].shape)
    if axes != list(range(axes[0], rank)):
        raise b.unsupported(f"layer norm over axes {axes} (ONNX normalises the trailing dims from one axis)")
    eps = float(node.params["eps"])
    x = b.arg(node, 0, dtype)
    weight = b.arg(node, 1, dtype) if node.args[1] is not None else None
    bias = b.arg(node, 2, dtype) if len(node.args) > 2 and node.args[2] is not None else None
    if b.opset >= 17:
        if weight is None:
            normalized = b.static_shape(node.args[0], "layer norm without a weight")[axes[0]:]
            weight = b.const(np.ones(normalized, dtype=dtype.np_dtype))
        inputs = [x, weight] + ([bias] if bias is not None else [])
        y, mean, rstd = b.add("LayerNormalization", inputs, outputs=3, axis=axes[0], epsilon=eps)
        return [y, mean, rstd]
    mean = b.reduce("ReduceMean", x, axes, True)
    centered = b.add("Sub", [x, mean])
    variance = b.reduce("ReduceMean", b.add("Mul", [centered, centered]), axes, True)
    rstd = b.add("Reciprocal", [b.add("Sqrt", [b.add("Add", [variance, b.scalar(eps, dtype)])])])
    y = b.add("Mul", [centered, rstd])
    if weight is not None:
        y = b.add("Mul", [y, weight])
    if bias is not None:
        y = b.add("Add", [y, bias])
    return [y, mean, rstd]


def attention(b, node):
    """scaled_dot_product_attention(q, k, v, mask, causal, scale, dropout_p): softmax(q k^T * scale + mask) v,
    spelled out (MatMul, Mul, mask, Softmax, MatMul).  A causal mask is built from the run-time lengths."""
    p = node.params
    if p.get("dropout_p", 0.0) > 0:
        raise b.unsupported("attention dropout (dropout_p > 0) is random; export in eval mode with dropout_p=0")
    dtype = node.results[0].dtype
    q, k, v = (b.arg(node, i, dtype) for i in range(3))
    rank = len(node.args[1].shape)
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    scores = b.add("MatMul", [q, b.add("Transpose", [k], perm=perm)])
    scores = b.add("Mul", [scores, b.scalar(float(p["scale"]), dtype)])
    mask = node.args[3] if len(node.args) > 3 else None
    if mask is not None:
        if mask.dtype is dt.bool_:
            scores = b.add("Where", [b.arg(node, 3), scores, b.scalar(float("-inf"), dtype)])
        else:
            scores = b.add("Add", [scores, b.arg(node, 3, dtype)])
    if p.get("causal"):
        rows = b.add("Range", [b.scalar(0, dt.int64), b.dim(q, len(node.args[0].shape) - 2), b.scalar(1, dt.int64)])
        cols = b.add("Range", [b.scalar(0, dt.int64), b.dim(k, rank - 2), b.scalar(1, dt.int64)])
        visible = b.add("GreaterOrEqual", [b.unsqueeze(rows, [1]), b.unsqueeze(cols, [0])])
        scores = b.add("Where", [visible, scores, b.scalar(float("-inf"), dtype)])
    weights = b.add("Softmax", [scores], axis=-1)
    return [b.add("MatMul", [weights, v]), None, None]


# torch's LSTM gate blocks are i, f, g, o; ONNX's are i, o, f, c (c = g): ONNX block j is torch block _GATES[j]
_GATES = (0, 3, 1, 2)


def lstm_layer(b, node):
    """lstm_layer(projected, h0, c0, w_hh, reverse): ONNX LSTM.  The op receives the input projection already
    computed (x W_ih^T + biases, shape (T, B, 4H)), so the LSTM's W is a fixed permutation matrix (4H x 4H) that
    reorders the gates, and R is w_hh's gate blocks reordered.  The per-step saved activations (outputs 3 and 4,
    for backward) are not exported."""
    dtype = node.results[0].dtype
    hidden = int(b.static_shape(node.args[3], "an LSTM's recurrent weight")[1])
    size = 4 * hidden
    order = np.concatenate([np.arange(hidden) + block * hidden for block in _GATES])
    permutation = np.zeros((1, size, size), dtype=dtype.np_dtype)
    permutation[0, np.arange(size), order] = 1
    recurrent = b.add("Gather", [b.arg(node, 3, dtype), b.const(order.astype(np.int64))], axis=0)
    inputs = [b.arg(node, 0, dtype), b.const(permutation), b.unsqueeze(recurrent, [0]), "", "",
              b.unsqueeze(b.arg(node, 1, dtype), [0]), b.unsqueeze(b.arg(node, 2, dtype), [0])]
    direction = "reverse" if node.params.get("reverse") else "forward"
    y, y_h, y_c = b.add("LSTM", inputs, outputs=3, hidden_size=hidden, direction=direction)
    return [b.squeeze(y, [1]), b.squeeze(y_h, [0]), b.squeeze(y_c, [0]), None, None]
