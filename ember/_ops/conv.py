"""Convolution as three closed ops: conv, its input gradient (= transposed conv) and its weight gradient.

    y  = conv(x, w)            im2col (a strided window view, one copy) then one GEMM per sample
    x' = conv_input_grad(y', w)  GEMM then col2im (one strided add per kernel offset)
    w' = conv_weight_grad(x, y') im2col then one GEMM contracting batch and positions

Each is linear in each argument, so each one's backward is written with the
other two, which gives double backward for free.  Transposed convolution is
conv_input_grad run forward.  N-d (1-d, 2-d, 3-d) share one implementation;
padding is explicit (left, right) pairs so 'same' can pad asymmetrically.
"""

from __future__ import annotations

import math

import numpy as np

from .._dispatch import SAVE_INPUTS, OpDef, call, promote
from ._shapes import in_suggested_layout


def _out_size(size, kernel, stride, pad, dilation):
    return (size + pad[0] + pad[1] - dilation * (kernel - 1) - 1) // stride + 1


def _pad(xp, x, padding):
    """Zero-pad the spatial dims by (left, right) pairs; a negative right pad crops (transposed conv's
    output_padding makes one)."""
    if not any(p for pair in padding for p in pair):
        return x
    if any(right < 0 for _, right in padding):
        x = x[(slice(None), slice(None)) + tuple(slice(0, x.shape[2 + i] + min(right, 0))
                                                 for i, (_, right) in enumerate(padding))]
        padding = tuple((left, max(right, 0)) for left, right in padding)
    return xp.pad(x, ((0, 0), (0, 0)) + tuple(padding))


def _columns(xp, x, kernel, stride, padding, dilation):
    """im2col: (N, C, *S) -> (N, C * prod(kernel), L) with L = prod(output spatial).  2-D float inputs take a C
    loop that reads the unpadded input (ember/_compile/loops.py); otherwise a padded copy, then a strided
    window view copied out."""
    if xp is np and len(kernel) == 2:
        from .._compile.loops import im2col2d

        built = im2col2d(x, kernel, stride, padding, dilation)
        if built is not None:
            return built
    x = _pad(xp, x, padding)
    n, c = x.shape[:2]
    dims = len(kernel)
    out = [(x.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(dims)]
    strides = x.strides
    shape = (n, c) + tuple(kernel) + tuple(out)
    window_strides = strides[:2] + tuple(strides[2 + i] * dilation[i] for i in range(dims)) + tuple(
        strides[2 + i] * stride[i] for i in range(dims))
    windows = np.lib.stride_tricks.as_strided(x, shape, window_strides, writeable=False)
    return windows.reshape(n, c * math.prod(kernel), math.prod(out)), out


# Bytes of im2col columns built at a time.  Columns for a whole batch are ~9x the input (3x3 kernels):
# built a few samples at a time they stay in cache for their GEMM, ~1.3-1.6x faster on 32x32 layers.
COLUMN_CHUNK_BYTES = 1 << 21


def _column_chunks(xp, x, kernel, stride, padding, dilation):
    """(start, stop, im2col columns of samples start:stop), over the batch in chunks of ~COLUMN_CHUNK_BYTES."""
    padded_shape = x.shape[:2] + tuple(x.shape[2 + i] + sum(padding[i]) for i in range(len(kernel)))
    per_sample = x.itemsize * x.shape[1] * math.prod(kernel) * math.prod(_spatial_out(padded_shape, kernel, stride,
                                                                                       dilation))
    step = max(1, COLUMN_CHUNK_BYTES // max(per_sample, 1))
    for start in range(0, x.shape[0], step):
        cols, _ = _columns(xp, x[start:start + step], kernel, stride, padding, dilation)
        yield start, start + step, cols


def _spatial_out(padded_shape, kernel, stride, dilation):
    return [(padded_shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(len(kernel))]


def _conv_impl(xp, x, w, bias, stride, padding, dilation, groups):
    kernel = w.shape[2:]
    n = x.shape[0]
    out_channels = w.shape[0]
    if groups == 1:
        padded_shape = x.shape[:2] + tuple(x.shape[2 + i] + sum(padding[i]) for i in range(len(kernel)))
        out = _spatial_out(padded_shape, kernel, stride, dilation)
        weight = w.reshape(out_channels, -1)
        y = xp.empty((n, out_channels, math.prod(out)), xp.result_type(x, w))
        for start, stop, cols in _column_chunks(xp, x, kernel, stride, padding, dilation):
            xp.matmul(weight, cols, out=y[start:stop])
    else:
        per_group_in = x.shape[1] // groups
        per_group_out = out_channels // groups
        parts = []
        for g in range(groups):
            cols, out = _columns(xp, x[:, g * per_group_in:(g + 1) * per_group_in], kernel, stride, padding,
                                 dilation)
            weight = w[g * per_group_out:(g + 1) * per_group_out].reshape(per_group_out, -1)
            parts.append(xp.matmul(weight, cols))
        y = xp.concatenate(parts, axis=1)
    y = y.reshape((n, out_channels) + tuple(out))
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * len(kernel))
    return y


def _col2im(xp, cols, input_shape, kernel, stride, padding, dilation, out):
    """Add columns (N, C*K, L) back into an input-shaped gradient (the adjoint of _columns): by a C loop for 2-D
    float columns (ember/_compile/loops.py), else one strided NumPy add per kernel offset."""
    if xp is np and len(kernel) == 2:
        from .._compile.loops import col2im2d

        added = col2im2d(cols, tuple(input_shape), tuple(kernel), tuple(stride), padding, tuple(dilation),
                         tuple(out))
        if added is not None:
            return added
    n, c = input_shape[:2]
    dims = len(kernel)
    padded_shape = tuple(input_shape[2 + i] + padding[i][0] + max(padding[i][1], 0) for i in range(dims))
    result = xp.zeros((n, c) + padded_shape, cols.dtype)
    cols = cols.reshape((n, c) + tuple(kernel) + tuple(out))
    for offset in np.ndindex(*kernel):
        target = (slice(None), slice(None)) + tuple(
            slice(offset[i] * dilation[i], offset[i] * dilation[i] + stride[i] * (out[i] - 1) + 1, stride[i])
            for i in range(dims))
        result[target] += cols[(slice(None), slice(None)) + offset]
    crop = (slice(None), slice(None)) + tuple(
        slice(padding[i][0], padding[i][0] + input_shape[2 + i]) for i in range(dims))
    return result[crop]


def _full_correlation_padding(kernel, stride, padding, dilation, groups):
    """For a stride-1, ungrouped conv, the input gradient is g correlated with the flipped kernel under this
    padding: (d(k-1) - left, d(k-1) - right) per dim.  None where that needs a negative pad (use col2im)."""
    if groups != 1 or any(s != 1 for s in stride):
        return None
    pairs = tuple((dilation[i] * (kernel[i] - 1) - left, dilation[i] * (kernel[i] - 1) - right)
                  for i, (left, right) in enumerate(padding))
    return pairs if all(left >= 0 and right >= 0 for left, right in pairs) else None


def _input_grad_impl(xp, g, w, input_shape, stride, padding, dilation, groups):
    kernel = w.shape[2:]
    n = g.shape[0]
    out = g.shape[2:]
    out_channels = w.shape[0]
    flat = g.reshape(n, out_channels, math.prod(out))  # not -1: NumPy can't infer it for an empty batch
    full_padding = _full_correlation_padding(kernel, stride, padding, dilation, groups)
    if full_padding is not None:
        # im2col of g + one GEMM is ~35% faster than GEMM + col2im's strided adds (16-64 channel 3x3 layers)
        flipped = xp.flip(w, tuple(range(2, w.ndim))).swapaxes(0, 1)
        return _conv_impl(xp, g, flipped, None, (1,) * len(kernel), full_padding, dilation, 1)
    if groups == 1:
        cols = xp.matmul(w.reshape(out_channels, -1).T, flat)
        return _col2im(xp, cols, input_shape, kernel, stride, padding, dilation, out)
    per_group_in = input_shape[1] // groups
    per_group_out = out_channels // groups
    parts = []
    for group in range(groups):
        weight = w[group * per_group_out:(group + 1) * per_group_out].reshape(per_group_out, -1)
        cols = xp.matmul(weight.T, flat[:, group * per_group_out:(group + 1) * per_group_out])
        shape = (input_shape[0], per_group_in) + tuple(input_shape[2:])
        parts.append(_col2im(xp, cols, shape, kernel, stride, padding, dilation, out))
    return xp.concatenate(parts, axis=1)


def _contract_samples(xp, flat, cols):
    """sum over samples n of flat[n] @ cols[n].T: (N, O, L), (N, C*K, L) -> (O, C*K)."""
    # One batched GEMM reading cols transposed in place, then a small sum: tensordot's transpose-and-reshape
    # copied all of cols (the largest array here) in cache-hostile order, ~4x slower on a 16-channel 32x32 layer.
    return xp.matmul(flat, xp.swapaxes(cols, 1, 2)).sum(0)


def _weight_grad_impl(xp, x, g, weight_shape, stride, padding, dilation, groups):
    kernel = weight_shape[2:]
    out_channels = weight_shape[0]
    n = x.shape[0]
    flat = g.reshape(n, out_channels, math.prod(g.shape[2:]))  # not -1: NumPy can't infer it for an empty batch
    if groups == 1:
        total = xp.zeros((out_channels, math.prod(weight_shape[1:])), xp.result_type(x, g))
        for start, stop, cols in _column_chunks(xp, x, kernel, stride, padding, dilation):
            total += _contract_samples(xp, flat[start:stop], cols)
        return total.reshape(weight_shape)
    per_group_in = x.shape[1] // groups
    per_group_out = out_channels // groups
    parts = []
    for group in range(groups):
        cols, _ = _columns(xp, x[:, group * per_group_in:(group + 1) * per_group_in], kernel, stride, padding,
                           dilation)
        part = flat[:, group * per_group_out:(group + 1) * per_group_out]
        parts.append(_contract_samples(xp, part, cols))
    return xp.concatenate(parts, axis=0).reshape(weight_shape)


def _geometry(params):
    return {k: params[k] for k in ("stride", "padding", "dilation", "groups")}


def _conv_backward(ctx, g):
    x, w, bias = ctx.inputs
    geometry = _geometry(ctx.params)
    grad_x = grad_w = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_x = conv_input_grad(g, w, tuple(x.shape), geometry)
    if ctx.needs_input_grad[1]:
        grad_w = conv_weight_grad(x, g, tuple(w.shape), geometry)
    if bias is not None and ctx.needs_input_grad[2]:
        grad_b = g.sum([0] + list(range(2, g.ndim)))
    return grad_x, grad_w, grad_b


def _input_grad_backward(ctx, c):
    g, w = ctx.inputs
    geometry = _geometry(ctx.params)
    grad_g = conv(c, w, None, geometry) if ctx.needs_input_grad[0] else None
    grad_w = conv_weight_grad(c, g, tuple(w.shape), geometry) if ctx.needs_input_grad[1] else None
    return grad_g, grad_w


def _weight_grad_backward(ctx, c):
    x, g = ctx.inputs
    geometry = _geometry(ctx.params)
    grad_x = conv_input_grad(g, c, tuple(x.shape), geometry) if ctx.needs_input_grad[0] else None
    grad_g = conv(x, c, None, geometry) if ctx.needs_input_grad[1] else None
    return grad_x, grad_g


def _conv_meta(args, params):
    x, w = args[0], args[1]
    out = tuple(_out_size(x.shape[2 + i], w.shape[2 + i], params["stride"][i], params["padding"][i],
                          params["dilation"][i]) for i in range(x.ndim - 2))
    return (x.shape[0], w.shape[0]) + out


def _conv_op_impl(xp, x, w, bias, stride, padding, dilation, groups):
    return in_suggested_layout(xp, _conv_impl(xp, x, w, bias, stride, padding, dilation, groups), x, w)


def _input_grad_op_impl(xp, g, w, input_shape, stride, padding, dilation, groups):
    """(also conv_transpose's forward: `g` is then its input)"""
    return in_suggested_layout(xp, _input_grad_impl(xp, g, w, input_shape, stride, padding, dilation, groups), g, w)


CONV = OpDef("convolution", _conv_op_impl, _conv_backward, dtype_rule=promote, saves=SAVE_INPUTS, meta=_conv_meta,
             grad_name="ConvolutionBackward0")
CONV_INPUT_GRAD = OpDef("convolution_backward_input", _input_grad_op_impl, _input_grad_backward, dtype_rule=promote,
                        saves=SAVE_INPUTS, meta=lambda args, p: p["input_shape"],
                        grad_name="ConvolutionBackwardBackward0")
CONV_WEIGHT_GRAD = OpDef("convolution_backward_weight", _weight_grad_impl, _weight_grad_backward,
                         dtype_rule=promote, saves=SAVE_INPUTS, meta=lambda args, p: p["weight_shape"],
                         grad_name="ConvolutionBackwardBackward0")


def conv(x, w, bias, geometry: dict):
    return call(CONV, (x, w, bias), geometry)


def conv_input_grad(g, w, input_shape: tuple, geometry: dict):
    return call(CONV_INPUT_GRAD, (g, w), dict(geometry, input_shape=input_shape))


def conv_weight_grad(x, g, weight_shape: tuple, geometry: dict):
    return call(CONV_WEIGHT_GRAD, (x, g), dict(geometry, weight_shape=weight_shape))


