"""RNN, LSTM, GRU and their cells, with packed sequences, bidirectional and stacked layers.

The modules own the parameters and torch's argument handling (batch_first, unbatched input, packed sequences
and their sort order, initial states); the math is in ../_functional_rnn_stack.py, shared with the top-level
functional ops (torch.lstm, torch.gru_cell, ...).  Gradients come from the ops used.
"""

from __future__ import annotations

import math
import numbers

from ..._ops.creation import empty, zeros
from ..._tensor import Tensor
from .. import init
from .._functional_rnn_stack import GATES, gru_cell, lstm_cell, rnn_layers, rnn_relu_cell, rnn_tanh_cell
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


def _cat(tensors, dim=0):
    from ... import cat

    return cat(tensors, dim)


class RNNBase(Module):
    """The shared implementation of RNN, LSTM and GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            import warnings

            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
            if kind is int and value <= 0:
                raise ValueError(f"{name} must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        gate_size = GATES[mode] * hidden_size
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                real_hidden_size = proj_size if proj_size > 0 else hidden_size
                layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, real_hidden_size))]
                if bias:
                    params += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    params += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for name, shape in params:
                    full_name = f"{name}_l{layer}{suffix}"
                    setattr(self, full_name, Parameter(empty(shape, device=device, dtype=dtype)))
                    names.append(full_name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    def flatten_parameters(self) -> None:
        """A no-op (torch uses it for cuDNN's weight layout)."""

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _weights(self, layer: int, direction: int):
        suffix = "_reverse" if direction == 1 else ""

        def get(name):
            return getattr(self, f"{name}_l{layer}{suffix}", None)

        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def _check_input_dtype(self, input) -> None:
        from ...amp import autocast_mode

        weight = self.weight_ih_l0
        if input.dtype != weight.dtype and not any(autocast_mode.is_autocast_enabled(device)
                                                    for device in ("cpu", "cuda")):
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")

    def forward(self, input, hx=None):
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        num_directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch_sizes_list = [int(b) for b in batch_sizes.tolist()]
            batch = batch_sizes_list[0]
            steps = []
            offset = 0
            for size in batch_sizes_list:
                steps.append(data[offset:offset + size])
                offset += size
            unbatched = False
        else:
            sorted_indices = unsorted_indices = None
            unbatched = input.dim() == 2
            if input.dim() not in (2, 3):
                kind = "tensor " if self.mode.startswith("RNN") else ""  # torch's RNN message says "tensor"
                raise ValueError(f"{self.mode.split('_')[0]}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 f"{kind}instead")
            if unbatched:
                input = input.unsqueeze(1)
            elif self.batch_first:
                input = input.transpose(0, 1)
            where, rank = ("unbatched 2-D", 2) if unbatched else ("batched 3-D", 3)
            if is_lstm and isinstance(hx, (tuple, list)):  # torch checks the ranks first
                if hx[0].dim() != rank or hx[1].dim() != rank:
                    raise RuntimeError(f"For {where} input, hx and cx should also be {rank}-D but got "
                                       f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            elif hx is not None and hx.dim() != rank:
                raise RuntimeError(f"For {where} input, hx should also be {rank}-D but got {hx.dim()}-D tensor")
        self._check_input_dtype(data if packed else input)
        if not packed:
            if input.shape[-1] != self.input_size:
                raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                                   f"{input.shape[-1]}")
            batch = input.shape[1]
            batch_sizes_list = [batch] * input.shape[0]
            steps = None
        h0, c0 = self._initial_state(hx, batch, real_hidden, num_directions, is_lstm, unbatched, sorted_indices,
                                     input if not packed else data)
        weights = [self._weights(layer, direction) for layer in range(self.num_layers)
                   for direction in range(num_directions)]
        if is_lstm and not packed and self.proj_size == 0 and _lstm_autocasts(input):
            output, h_n, c_n = _bfloat16_lstm(input, h0, c0, weights, self)
        else:
            output, h_n, c_n = rnn_layers(self.mode, steps if packed else input, batch_sizes_list, h0, c0, weights,
                                          self.num_layers, self.bidirectional, self.dropout, self.training)
        if packed:
            output = PackedSequence(_cat(output), batch_sizes, sorted_indices, unsorted_indices)
            if unsorted_indices is not None:
                h_n = h_n.index_select(1, unsorted_indices)
                c_n = c_n.index_select(1, unsorted_indices) if c_n is not None else None
        else:
            if unbatched:
                output = output.squeeze(1)
                h_n = h_n.squeeze(1)
                c_n = c_n.squeeze(1) if c_n is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return output, ((h_n, c_n) if is_lstm else h_n)

    def _initial_state(self, hx, batch, real_hidden, num_directions, is_lstm, unbatched, sorted_indices, like):
        layers = self.num_layers * num_directions
        if hx is None:
            h0 = zeros((layers, batch, real_hidden), dtype=like.dtype, device=like.device)
            c0 = zeros((layers, batch, self.hidden_size), dtype=like.dtype, device=like.device) if is_lstm else None
            return h0, c0
        if is_lstm:
            h0, c0 = hx
        else:
            h0, c0 = hx, None
        if unbatched:
            if h0.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {h0.dim()}-D tensor")
            h0 = h0.unsqueeze(1)
            c0 = c0.unsqueeze(1) if c0 is not None else None
        elif h0.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {h0.dim()}-D tensor")
        expected = (layers, batch, real_hidden)
        which = "[0]" if is_lstm else ""
        if tuple(h0.shape) != expected:
            raise RuntimeError(f"Expected hidden{which} size {expected}, got {list(h0.shape)}")
        if c0 is not None and tuple(c0.shape) != (layers, batch, self.hidden_size):
            raise RuntimeError(f"Expected hidden[1] size {(layers, batch, self.hidden_size)}, got {list(c0.shape)}")
        if sorted_indices is not None:
            h0 = h0.index_select(1, sorted_indices)
            c0 = c0.index_select(1, sorted_indices) if c0 is not None else None
        return h0, c0


def _lstm_autocasts(input: Tensor) -> bool:
    """torch's CPU LSTM is on autocast's lower-precision list for bfloat16 (it runs oneDNN's bfloat16 LSTM and
    returns bfloat16); packed and projected LSTMs, and float16, keep float32."""
    from ..._dtype import bfloat16
    from ...amp.autocast_mode import get_autocast_dtype, is_autocast_enabled

    return (input.device.type == "cpu" and is_autocast_enabled("cpu") and get_autocast_dtype("cpu") is bfloat16
            and input.dtype.is_floating_point)


def _bfloat16_lstm(input, h0, c0, weights, module):
    """The LSTM as oneDNN's bfloat16 kernel takes it: input, states and weights rounded to bfloat16, the gates
    computed in float32 (autocast off, as inside the kernel), the outputs returned in bfloat16."""
    from ..._dtype import bfloat16, float32
    from ...amp.autocast_mode import autocast

    def rounded(tensor):
        return None if tensor is None else tensor.to(bfloat16).to(float32)

    with autocast("cpu", enabled=False):
        weights = [tuple(rounded(w) for w in group) for group in weights]
        output, h_n, c_n = rnn_layers("LSTM", rounded(input), [input.shape[1]] * input.shape[0], rounded(h0),
                                      rounded(c0), weights, module.num_layers, module.bidirectional, module.dropout,
                                      module.training)
    return output.to(bfloat16), h_n.to(bfloat16), c_n.to(bfloat16)


class RNN(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input: Tensor, hx, count: int):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        states = (hx if count > 1 else (hx,)) if hx is not None else ()
        for index, state in enumerate(states):
            if state.dim() not in (1, 2):
                what = f"hx[{index}]" if count > 1 else "hidden"
                raise ValueError(f"{type(self).__name__}: Expected {what} to be 1D or 2D, got {state.dim()}D instead")
        unbatched = input.dim() == 1
        if unbatched:
            input = input.unsqueeze(0)
        if hx is None:
            zero = zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            hx = (zero,) * count if count > 1 else zero
        elif unbatched:
            hx = tuple(h.unsqueeze(0) for h in hx) if count > 1 else hx.unsqueeze(0)
        return input, hx, unbatched


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx=None) -> Tensor:
        input, hx, unbatched = self._prepare(input, hx, 1)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        cell = rnn_tanh_cell if mode == "RNN_TANH" else rnn_relu_cell
        h = cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None):
        input, (h, c), unbatched = self._prepare(input, hx, 2)
        h, c = lstm_cell(input, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if unbatched:
            return h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx=None) -> Tensor:
        input, hx, unbatched = self._prepare(input, hx, 1)
        h = gru_cell(input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return h.squeeze(0) if unbatched else h
