"""The math of stacked RNN / LSTM / GRU layers and their cells, shared by nn.RNNBase, the nn cells and the
top-level functional ops (torch.lstm, torch.gru_cell, ...), so there is one implementation of each.

The input projection of all time steps is one matrix product per layer and direction; only the recurrent
product runs in a loop over time, vectorised over the batch and the gates.  Packed input (a list of per-step
tensors whose batch shrinks as sequences end) runs the same loop, so each sequence's last hidden state is the
one returned, as torch does.  Whole-sequence LSTM layers without projections run as one op
(_functional_rnn.py).  Gradients come from the ops used.

    weights: one (w_ih, w_hh, b_ih, b_hh, w_hr) tuple per layer and direction, in torch's _flat_weights order
    (layer-major, forward before reverse); missing biases and projections are None.
"""

from __future__ import annotations

from .._tensor import Tensor
from . import functional as F
from ._functional_rnn import lstm_layer

__all__ = ["GATES", "step", "rnn_layers", "gather_params", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell"]

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _cat(tensors, dim=0):
    from .._ops.movement import cat

    return cat(tensors, dim)


def _stack(tensors, dim=0):
    from .._ops.movement import stack

    return stack(tensors, dim)


def step(mode: str, x_proj: Tensor, h: Tensor, c, w_hh: Tensor, b_hh, w_hr):
    """One time step given the precomputed input projection x_proj (batch, gates*hidden): (h, c or None)."""
    if mode == "LSTM":
        gates = x_proj + F.linear(h, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        if w_hr is not None:
            h = F.linear(h, w_hr)
        return h, c
    if mode == "GRU":
        hidden = F.linear(h, w_hh, b_hh)
        x_r, x_z, x_n = x_proj.chunk(3, 1)
        h_r, h_z, h_n = hidden.chunk(3, 1)
        r = (h_r + x_r).sigmoid()
        z = (h_z + x_z).sigmoid()
        n = (x_n + h_n * r).tanh()
        return (h - n) * z + n, None  # torch's GRUCell: (hidden - new_gate) * input_gate + new_gate
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return (pre.tanh() if mode == "RNN_TANH" else F.relu(pre)), None


def _run_direction(mode, inputs_proj, batch_sizes, h, c, w_hh, b_hh, w_hr, reverse: bool):
    """Loop one layer-direction over time. inputs_proj: list of (batch_t, gates*hidden) per step."""
    steps = range(len(inputs_proj) - 1, -1, -1) if reverse else range(len(inputs_proj))
    outputs = [None] * len(inputs_proj)
    for t in steps:
        size = batch_sizes[t]
        h_active = h[:size] if size < h.shape[0] else h
        c_active = (c[:size] if size < c.shape[0] else c) if c is not None else None
        h_new, c_new = step(mode, inputs_proj[t], h_active, c_active, w_hh, b_hh, w_hr)
        outputs[t] = h_new
        h = _cat([h_new, h[size:]]) if size < h.shape[0] else h_new
        if c is not None:
            c = _cat([c_new, c[size:]]) if size < c.shape[0] else c_new
    return outputs, h, c


def _project_steps(layer_input, batch_sizes, w_ih, b_ih):
    """The input projection of every step: a list of (batch_t, gates*hidden) tensors."""
    if isinstance(layer_input, list):
        projected = F.linear(_cat(layer_input), w_ih, b_ih)
        steps, offset = [], 0
        for size in batch_sizes:
            steps.append(projected[offset:offset + size])
            offset += size
        return steps
    return list(F.linear(layer_input, w_ih, b_ih).unbind(0))


def rnn_layers(mode: str, layer_input, batch_sizes, h0: Tensor, c0, weights, num_layers: int,
               bidirectional: bool, dropout: float, train: bool):
    """Run the stacked layers: (output, h_n, c_n or None).

    layer_input is a (T, B, input_size) tensor with batch_sizes [B] * T, or for packed input a list of per-step
    (batch_sizes[t], input_size) tensors, and then the output is such a list too.  h0 / c0 hold one
    (B, hidden) state per layer and direction along dim 0."""
    packed = isinstance(layer_input, list)
    num_directions = 2 if bidirectional else 1
    is_lstm = mode == "LSTM"
    # Whole-sequence LSTM layers run as one op (see _functional_rnn.py): ~3x fewer op calls, one weight-grad GEMM
    fused = is_lstm and not packed and all(each[4] is None for each in weights)
    final_h, final_c = [], []
    for layer in range(num_layers):
        direction_outputs = []
        for direction in range(num_directions):
            index = layer * num_directions + direction
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[index]
            if fused:
                projected = F.linear(layer_input, w_ih, b_ih)
                projected = projected + b_hh if b_hh is not None else projected
                output, h_last, c_last = lstm_layer(projected, h0[index], c0[index], w_hh, direction == 1)
            else:
                proj_steps = _project_steps(layer_input, batch_sizes, w_ih, b_ih)
                c_init = c0[index] if is_lstm else None
                output, h_last, c_last = _run_direction(mode, proj_steps, batch_sizes, h0[index], c_init, w_hh,
                                                        b_hh, w_hr, reverse=direction == 1)
            direction_outputs.append(output)
            final_h.append(h_last)
            if is_lstm:
                final_c.append(c_last)
        layer_input = _merge_directions(direction_outputs, fused, packed)
        if dropout and train and layer < num_layers - 1:
            layer_input = (F.dropout(layer_input, dropout, True) if not isinstance(layer_input, list)
                           else [F.dropout(each, dropout, True) for each in layer_input])
    h_n = _stack(final_h)
    c_n = _stack(final_c) if is_lstm else None
    return layer_input, h_n, c_n


def _merge_directions(direction_outputs, fused: bool, packed: bool):
    """One layer's output: the directions side by side on the feature dim, as a tensor (or per-step list)."""
    if fused:
        return _cat(direction_outputs, 2) if len(direction_outputs) == 2 else direction_outputs[0]
    if len(direction_outputs) == 2:
        merged = [_cat([a, b], 1) for a, b in zip(*direction_outputs)]
    else:
        merged = direction_outputs[0]
    return merged if packed else _stack(merged)


def gather_params(params, has_biases: bool, has_projections: bool = False) -> list:
    """torch's flat parameter list -> one (w_ih, w_hh, b_ih, b_hh, w_hr) tuple per layer and direction."""
    params = list(params)
    stride = 2 + 2 * bool(has_biases) + bool(has_projections)
    if len(params) % stride:
        raise RuntimeError("got an incorrect number of RNN parameters")
    groups = []
    for start in range(0, len(params), stride):
        group = params[start:start + stride]
        w_ih, w_hh = group[0], group[1]
        b_ih, b_hh = (group[2], group[3]) if has_biases else (None, None)
        groups.append((w_ih, w_hh, b_ih, b_hh, group[-1] if has_projections else None))
    return groups


# ---------------------------------------------------------------- cells, with torch's checks in torch's order


def _check_input(input: Tensor, w_ih: Tensor) -> None:
    if input.shape[input._wrap_dim(1)] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}")


def _check_hidden(input: Tensor, hx: Tensor, hidden_size: int, label: int) -> None:
    if input.shape[0] != hx.shape[0]:
        raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{label} batch size {hx.shape[0]}")
    if hx.shape[hx._wrap_dim(1)] != hidden_size:
        raise RuntimeError(f"hidden{label} has inconsistent hidden_size: got {hx.shape[1]}, expected {hidden_size}")


def _check_weights(mode: str, w_ih: Tensor, w_hh: Tensor) -> None:
    gates = GATES[mode]
    hidden_size = w_hh.shape[1]
    for name, weight in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if weight.shape[0] != gates * hidden_size:
            raise RuntimeError(f"{name} first dim must be {gates} * hidden_size = {gates * hidden_size}, but got "
                               f"{weight.shape[0]}")


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> tuple:
    """One LSTM step: (h', c') from input (B, input_size) and hx = (h, c)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_input(input, w_ih)
    _check_weights("LSTM", w_ih, w_hh)
    _check_hidden(input, hx[0], w_hh.shape[1], 0)
    _check_hidden(input, hx[1], w_hh.shape[1], 1)
    return step("LSTM", F.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh, None)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One GRU step: h' from input (B, input_size) and h (B, hidden_size)."""
    _check_input(input, w_ih)
    _check_hidden(input, hx, w_hh.shape[1], 0)
    _check_weights("GRU", w_ih, w_hh)
    return step("GRU", F.linear(input, w_ih, b_ih), hx, None, w_hh, b_hh, None)[0]


def _simple_cell(mode: str, input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih, b_hh) -> Tensor:
    _check_weights(mode, w_ih, w_hh)
    _check_input(input, w_ih)
    _check_hidden(input, hx, w_hh.shape[1], 0)
    return step(mode, F.linear(input, w_ih, b_ih), hx, None, w_hh, b_hh, None)[0]


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One Elman RNN step with tanh: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _simple_cell("RNN_TANH", input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih=None, b_hh=None) -> Tensor:
    """One Elman RNN step with ReLU: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return _simple_cell("RNN_RELU", input, hx, w_ih, w_hh, b_ih, b_hh)
