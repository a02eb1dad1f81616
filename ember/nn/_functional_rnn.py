"""One LSTM layer-direction over a whole sequence as one op: the time loop runs on arrays, not through dispatch.

Written as per-step ember ops, a 64-step 2-layer LSTM makes ~4,000 op calls and ~2,000 autograd nodes per
training step, and autograd sums 64 separate (4H x H) pieces of the recurrent weight's gradient one by one.
As one op, forward is one GEMM and one gate pass per step; backward walks the steps in reverse for the gate
gradients and gets the recurrent weight's gradient as ONE GEMM over all steps (what torch's fused kernels do).

The step math is written once, against a small namespace of array functions (`_NUMPY` for the op's impls,
`_EMBER` for ember tensors), so the fast path and the differentiable path cannot drift apart: a backward run
under create_graph=True recomputes the layer with ember ops, which keeps double backward exact.

    lstm_layer(projected, h0, c0, w_hh, reverse) -> (output, h_n, c_n)
    projected: (T, B, 4H), the input projection x W_ih^T + b_ih + b_hh of every step; gates in i, f, g, o order.
"""

from __future__ import annotations

from .._autograd.grad_mode import state as grad_state
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, promote
from .._tensor import Tensor

__all__ = ["lstm_layer"]


class _ArrayFunctions:
    """The few functions the step math needs beyond operators and slicing, for one kind of array."""

    def __init__(self, sigmoid, tanh, stack, transpose):
        self.sigmoid, self.tanh, self.stack, self.transpose = sigmoid, tanh, stack, transpose


def _numpy_functions(xp):
    # sigmoid through tanh: one transcendental pass, no overflow warnings for large |x| (unlike 1 / (1 + exp(-x)));
    # the recurrent weight transposed into a contiguous copy: OpenBLAS multiplies by it faster than by the
    # transposed view (32x256 @ 256x1024: 268 vs 309 us per step; one copy per call)
    return _ArrayFunctions(lambda a: 0.5 * xp.tanh(0.5 * a) + 0.5, xp.tanh, xp.stack, lambda w: w.T.copy())


def _ember_functions():
    from .._ops.movement import stack

    return _ArrayFunctions(lambda a: a.sigmoid(), lambda a: a.tanh(), stack, lambda w: w.T)


def _time_order(length: int, reverse: bool):
    return range(length - 1, -1, -1) if reverse else range(length)


def _forward_steps(fn, projected, h, c, w_hh, reverse):
    """Per step: activated gates (i, f, g, o side by side), cell state and output, each stacked over time."""
    hidden = c.shape[-1]
    w_t = fn.transpose(w_hh)
    gates, cells, outputs = [None] * projected.shape[0], [None] * projected.shape[0], [None] * projected.shape[0]
    for t in _time_order(projected.shape[0], reverse):
        pre = projected[t] + h @ w_t
        i, f = fn.sigmoid(pre[:, :hidden]), fn.sigmoid(pre[:, hidden : 2 * hidden])
        g, o = fn.tanh(pre[:, 2 * hidden : 3 * hidden]), fn.sigmoid(pre[:, 3 * hidden :])
        c = f * c + i * g
        h = o * fn.tanh(c)
        gates[t], cells[t], outputs[t] = (i, f, g, o), c, h
    return gates, cells, outputs


def _backward_steps(fn, grad_output, grad_h, grad_c, gates, cells, outputs, h0, c0, w_hh, reverse):
    """Gradients of the projected input (per step), h0 and c0, and the recurrent weight (one product at the end)."""
    length = len(cells)
    grad_gates = [None] * length
    order = list(_time_order(length, reverse))
    first = order[0]
    for index in range(length - 1, -1, -1):
        t = order[index]
        previous = order[index - 1] if index else None
        c_prev = c0 if previous is None else cells[previous]
        i, f, g, o = gates[t]
        tanh_c = fn.tanh(cells[t])
        grad_h = grad_h + grad_output[t]
        grad_c = grad_c + grad_h * o * (1 - tanh_c * tanh_c)
        step = (
            grad_c * g * i * (1 - i),
            grad_c * c_prev * f * (1 - f),
            grad_c * i * (1 - g * g),
            grad_h * tanh_c * o * (1 - o),
        )
        grad_gates[t] = _concatenate(fn, step)
        grad_c = grad_c * f
        grad_h = grad_gates[t] @ w_hh
    grad_projected = fn.stack(grad_gates)
    h_previous = fn.stack([h0 if t == first else outputs[t + (1 if reverse else -1)] for t in range(length)])
    rows = grad_projected.shape[0] * grad_projected.shape[1]
    grad_w = grad_projected.reshape(rows, -1).T @ h_previous.reshape(rows, -1)
    return grad_projected, grad_h, grad_c, grad_w


def _concatenate(fn, parts):
    # stack on a new axis then reshape: the same call for NumPy arrays and ember tensors (no cat/concatenate split)
    stacked = fn.stack(parts, 1)
    return stacked.reshape(stacked.shape[0], -1)


def _forward_impl(xp, projected, h0, c0, w_hh, reverse):
    gates, cells, outputs = _forward_steps(_numpy_functions(xp), projected, h0, c0, w_hh, reverse)
    last = 0 if reverse else len(cells) - 1
    activations = xp.stack([xp.stack(step) for step in gates])  # (T, 4, B, H): saved for backward
    return xp.stack(outputs), outputs[last], cells[last], activations, xp.stack(cells)


def _backward_impl(xp, grad_output, grad_h, grad_c, output, activations, cells, h0, c0, w_hh, reverse):
    gates = [tuple(step) for step in activations]
    return _backward_steps(
        _numpy_functions(xp), grad_output, grad_h, grad_c, gates, cells, output, h0, c0, w_hh, reverse
    )


def _lstm_backward(ctx, grads):
    grad_output, grad_h, grad_c = grads[:3]
    projected, h0, c0, w_hh = ctx.inputs
    reverse = ctx.params["reverse"]
    if grad_state.enabled:
        # create_graph=True: the same math in ember ops, recomputed from the inputs, so it is differentiable
        fn = _ember_functions()
        gates, cells, outputs = _forward_steps(fn, projected, h0, c0, w_hh, reverse)
        return _backward_steps(fn, grad_output, grad_h, grad_c, gates, cells, outputs, h0, c0, w_hh, reverse)
    output, activations, cells = ctx.saved_output(0), ctx.saved_output(3), ctx.saved_output(4)
    return call(
        _BACKWARD, (grad_output, grad_h, grad_c, output, activations, cells, h0, c0, w_hh), {"reverse": reverse}
    )


def _rule(args, params):
    compute, _ = promote(args[:1], params)
    return compute, (compute,) * 5


def _backward_rule(args, params):
    compute, _ = promote(args[:1], params)
    return compute, (compute,) * 4


def _meta(args, params):
    projected, c0 = args[0], args[2]
    length, batch = projected.shape[:2]
    hidden = c0.shape[-1]
    return (
        (length, batch, hidden),
        (batch, hidden),
        (batch, hidden),
        (length, 4, batch, hidden),
        (length, batch, hidden),
    )


def _backward_meta(args, params):
    grad_output, h0, c0, w_hh = args[0], args[6], args[7], args[8]
    return (
        tuple(grad_output.shape[:2]) + (4 * grad_output.shape[2],),
        tuple(h0.shape),
        tuple(c0.shape),
        tuple(w_hh.shape),
    )


_LSTM_LAYER = OpDef(
    "lstm_layer",
    _forward_impl,
    _lstm_backward,
    dtype_rule=_rule,
    saves=SAVE_INPUTS | SAVE_RESULT,
    outputs=5,
    differentiable_outputs=(True, True, True, False, False),
    meta=_meta,
    grad_name="LstmBackward0",
)
# Its backward is recomputed in ember ops under create_graph (above), so this op itself never needs one.
_BACKWARD = OpDef(
    "lstm_layer_backward", _backward_impl, None, dtype_rule=_backward_rule, outputs=4, meta=_backward_meta
)


def lstm_layer(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor, reverse: bool = False):
    """(output (T, B, H), h_n, c_n) of one LSTM layer-direction; `projected` already holds both biases."""
    output, h_n, c_n, _, _ = call(_LSTM_LAYER, (projected, h0, c0, w_hh), {"reverse": bool(reverse)})
    return output, h_n, c_n
