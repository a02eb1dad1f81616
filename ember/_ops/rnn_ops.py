"""torch's functional RNN ops: torch.lstm / gru / rnn_tanh / rnn_relu and their cells.

They take nn.LSTM's `_flat_weights` list (per layer and direction: w_ih, w_hh, then b_ih, b_hh when
has_biases, then w_hr for LSTM projections), and each has two overloads, as ATen's schema: the padded
`(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)` and the packed
`(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)`.  The math is
nn's (ember/nn/_functional_rnn_stack.py), so the modules and these functions cannot disagree.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import export

_PADDED = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional", "batch_first")
_PACKED = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional")


def _stack_module():
    """ember.nn._functional_rnn_stack, imported on first use (nn is built on top of the op registry)."""
    from ..nn import _functional_rnn_stack

    return _functional_rnn_stack


def _signature_text(names: tuple, hx_type: str) -> str:
    types = {"input": "Tensor", "data": "Tensor", "batch_sizes": "Tensor", "hx": hx_type,
             "params": "tuple of Tensors", "num_layers": "int", "dropout": "float"}
    return "(" + ", ".join(f"{types.get(name, 'bool')} {name}" for name in names) + ")"


def _bind(name: str, args: tuple, kwargs: dict) -> tuple:
    """Pick the overload (packed when batch_sizes is given) and bind the arguments: (packed, values by name)."""
    # a padded call has a list where a packed call has a tensor: lstm's hx (position 1), the others' params (2)
    position = 1 if name == "lstm" else 2
    packed = "batch_sizes" in kwargs or "data" in kwargs or (len(args) > position and isinstance(args[position],
                                                                                                 Tensor))
    names = _PACKED if packed else _PADDED
    values = dict(zip(names, args))
    unknown = [key for key in kwargs if key not in names or key in values]
    values.update({key: value for key, value in kwargs.items() if key in names})
    if len(args) > len(names) or unknown or len(values) != len(names):
        got = ", ".join(type(value).__name__ for value in args) + "".join(
            f", {key}={type(value).__name__}" for key, value in kwargs.items())
        hx_type = "tuple of Tensors" if name == "lstm" else "Tensor"
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one "
                        f"of:\n * {_signature_text(_PACKED, hx_type)}\n * {_signature_text(_PADDED, hx_type)}")
    return packed, values


def _packed_steps(data: Tensor, batch_sizes: Tensor):
    sizes = [int(size) for size in batch_sizes.tolist()]
    steps, offset = [], 0
    for size in sizes:
        steps.append(data[offset:offset + size])
        offset += size
    return steps, sizes


def _run(mode: str, name: str, args: tuple, kwargs: dict) -> tuple:
    packed, bound = _bind(name, args, kwargs)
    stack = _stack_module()
    hx = bound["hx"]
    if mode == "LSTM":
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        h0, c0 = hx
        has_projections = h0.size(2) != c0.size(2)
    else:
        h0, c0, has_projections = hx, None, False
    weights = stack.gather_params(bound["params"], bound["has_biases"], has_projections)
    bidirectional, num_layers = bool(bound["bidirectional"]), int(bound["num_layers"])
    if bidirectional and (h0.shape[0] % 2 or len(weights) % 2):
        raise RuntimeError("Odd number of params or hiddens given to a bidirectional RNN")
    layers = num_layers * (2 if bidirectional else 1)
    if h0.shape[0] != layers:
        raise RuntimeError("Expected more hidden states in stacked_rnn")
    if len(weights) != layers:
        raise RuntimeError("Expected more weights in stacked_rnn")
    if packed:
        layer_input, batch_sizes = _packed_steps(bound["data"], bound["batch_sizes"])
    else:
        layer_input = bound["input"].transpose(0, 1) if bound["batch_first"] else bound["input"]
        if layer_input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {layer_input.dim()}")
        batch_sizes = [layer_input.shape[1]] * layer_input.shape[0]
    output, h_n, c_n = stack.rnn_layers(mode, layer_input, batch_sizes, h0, c0, weights, num_layers, bidirectional,
                                       float(bound["dropout"]), bool(bound["train"]))
    if packed:
        from .movement import cat

        output = cat(output)
    elif bound["batch_first"]:
        output = output.transpose(0, 1)
    return (output, h_n, c_n) if mode == "LSTM" else (output, h_n)


@export(method=False)
def lstm(*args, **kwargs) -> tuple:
    """torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) or
    (data, batch_sizes, hx, params, ...): (output, h_n, c_n) of a stacked LSTM over nn.LSTM's flat weights."""
    return _run("LSTM", "lstm", args, kwargs)


@export(method=False)
def gru(*args, **kwargs) -> tuple:
    """torch.gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) or
    (data, batch_sizes, hx, params, ...): (output, h_n) of a stacked GRU over nn.GRU's flat weights."""
    return _run("GRU", "gru", args, kwargs)


@export(method=False)
def rnn_tanh(*args, **kwargs) -> tuple:
    """torch.rnn_tanh(input, hx, params, ...) or (data, batch_sizes, hx, params, ...): (output, h_n) of a
    stacked Elman RNN with tanh."""
    return _run("RNN_TANH", "rnn_tanh", args, kwargs)


@export(method=False)
def rnn_relu(*args, **kwargs) -> tuple:
    """torch.rnn_relu(input, hx, params, ...) or (data, batch_sizes, hx, params, ...): (output, h_n) of a
    stacked Elman RNN with ReLU."""
    return _run("RNN_RELU", "rnn_relu", args, kwargs)


# ---------------------------------------------------------------- cells


@export(method=False)
def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple:
    """torch.lstm_cell(input, (h, c), w_ih, w_hh, b_ih=None, b_hh=None): one LSTM step, (h', c')."""
    if not isinstance(hx, (tuple, list)):
        raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not "
                        f"{type(hx).__name__}")
    return _stack_module().lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


@export(method=False)
def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """torch.gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None): one GRU step."""
    return _stack_module().gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


@export(method=False)
def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """torch.rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None): one Elman RNN step with tanh."""
    return _stack_module().rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


@export(method=False)
def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """torch.rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None): one Elman RNN step with ReLU."""
    return _stack_module().rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
