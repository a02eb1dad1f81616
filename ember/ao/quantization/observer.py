"""Observers (torch.ao.quantization.observer): modules that record a tensor's range and turn it into a scale
and zero point.  The arithmetic mirrors torch's Python observers op for op (float32 tensors, torch's eps,
reduce_range and symmetric rules), so calculate_qparams returns torch's values exactly.

HistogramObserver (torch's default activation observer, `get_default_qconfig("x86")`) keeps a running
histogram and searches it for the range of least L2 quantization error; see NOTE [ HistogramObserver parity ].
"""

from __future__ import annotations

import bisect
import functools
import math
import struct
import warnings

import ember as torch

from ... import nn
from ..._tensor import Tensor

__all__ = [
    "ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "PerChannelMinMaxObserver",
    "MovingAverageMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "HistogramObserver",
    "PlaceholderObserver", "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
    "default_histogram_observer", "weight_observer_range_neg_127_to_127",
    "per_channel_weight_observer_range_neg_127_to_127", "default_dynamic_quant_observer",
    "default_placeholder_observer", "default_float_qparams_observer",
]

_EPS = torch.finfo(torch.float32).eps


class _PartialWrapper:
    """What `Observer.with_args(...)` returns (torch's class of the same name): a factory that builds the
    observer with those arguments, keeps them in `.p` (a functools.partial) and chains further `with_args`."""

    def __init__(self, p: functools.partial) -> None:
        self.p = p
        self.callable_args: dict = {}

    def __call__(self, *args, **keywords):
        for name, make in self.callable_args.items():  # arguments computed anew for each observer
            if name not in keywords:
                keywords = {**keywords, name: make()}
        return self.p(*args, **keywords)

    def __repr__(self) -> str:
        return self.p.__repr__() + self.callable_args.__repr__()

    def with_args(self, **kwargs) -> _PartialWrapper:
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs) -> _PartialWrapper:
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs) -> _PartialWrapper:
    """A factory for the observer with these arguments (torch's `Observer.with_args`)."""
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


def _with_callable_args(cls_or_self, **kwargs) -> _PartialWrapper:
    """A factory whose arguments are callables evaluated each time an observer is built."""
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


def _factory_kwargs(factory_kwargs: dict | None) -> dict:
    """torch.nn.factory_kwargs for the observers' buffers: only `device` and `dtype` are used."""
    factory_kwargs = dict(factory_kwargs or {})
    unknown = set(factory_kwargs) - {"device", "dtype", "memory_format"}
    if unknown:
        raise TypeError(f"unexpected kwargs {unknown}")
    factory_kwargs.pop("memory_format", None)
    return factory_kwargs


def _is_per_tensor(qscheme) -> bool:
    return qscheme in (torch.per_tensor_affine, torch.per_tensor_symmetric)


def _is_per_channel(qscheme) -> bool:
    return qscheme in (torch.per_channel_affine, torch.per_channel_symmetric, torch.per_channel_affine_float_qparams)


def calculate_qmin_qmax(quant_min, quant_max, has_customized_qrange: bool, dtype, reduce_range: bool):
    """The integer range an observer maps to: the dtype's (8-bit) range, or the user's, halved by reduce_range."""
    if has_customized_qrange:
        initial_min, initial_max = (0, 2**32 - 1) if dtype in (torch.qint32, torch.int32) else (0, 255)
        if quant_min is not None and quant_max is not None:
            initial_min, initial_max = quant_min, quant_max
        length = initial_max - initial_min + 1
        if dtype in (torch.qint8, torch.int8) and not 0 < length <= 256:
            raise AssertionError("quantization range should be positive and not exceed the maximum bit range (=256).")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    if dtype in (torch.qint8, torch.int8):
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype in (torch.quint8, torch.uint8):
        return (0, 127) if reduce_range else (0, 255)
    if dtype in (torch.qint32, torch.int32):
        return -(2**31), 2**31 - 1
    return 0, 15


def check_min_max_valid(min_val: Tensor, max_val: Tensor) -> bool:
    """False (with torch's warning) before any data was observed; AssertionError when min > max."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default values.", stacklevel=2)
        return False
    if min_val.dim() == 0 or max_val.dim() == 0:
        if min_val == float("inf") and max_val == float("-inf"):
            warnings.warn("must run observer before calling calculate_qparams. Returning default values.",
                          stacklevel=2)
            return False
        if min_val > max_val:
            raise AssertionError(f"min {min_val} should be less than max {max_val}")
    elif torch.any(min_val > max_val):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class ObserverBase(nn.Module):
    """Base of every observer: records statistics in forward, returns its input unchanged."""

    def __init__(self, dtype=torch.quint8, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class UniformQuantizationObserverBase(ObserverBase):
    """An observer that maps a [min, max] range onto an integer range (affine or symmetric)."""

    # the state-dict version shared by all observers: 2 made eps a buffer, 3 gave HistogramObserver 0-d
    # min_val/max_val (it was shape [0] before data)
    _version = 3

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None, factory_kwargs=None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. "
                          "reduce_range will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", torch.tensor([eps], **_factory_kwargs(factory_kwargs)))
        if not (_is_per_tensor(qscheme) or _is_per_channel(qscheme)):
            raise AssertionError("Default Observer only works for per_tensor_affine, per_tensor_symmetric, "
                                 "per_channel_affine, per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        allowed = (torch.qint8, torch.quint8, torch.qint32, torch.int8, torch.uint8, torch.int16, torch.int32)
        if dtype not in allowed:
            raise AssertionError(f"Default Observer only works for {allowed} data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange:
            if not quant_min <= 0 <= quant_max:
                raise AssertionError("Used-specified quantization range must include 0.")
            if quant_min >= quant_max:
                raise AssertionError("qmin must be strictly less than qmax for user-specified quantization range.")
        self.quant_min, self.quant_max = calculate_qmin_qmax(quant_min, quant_max, self.has_customized_qrange,
                                                             dtype, reduce_range)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        version = local_metadata.get("version", None)
        if version is None or version == 1:  # eps was not saved before version 2
            state_dict[prefix + "eps"] = torch.tensor([torch.finfo(torch.float32).eps])
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_min_max_vals(self) -> None:
        raise NotImplementedError("Cannot reset min/max values in the given observer.")

    def _calculate_qparams(self, min_val: Tensor, max_val: Tensor) -> tuple[Tensor, Tensor]:
        """Scales and zero points for the observed range; torch's observer code, op for op."""
        if not check_min_max_valid(min_val, max_val):
            return torch.tensor([1.0]), torch.tensor([0])
        quant_min, quant_max = self.quant_min, self.quant_max
        min_val_neg = torch.min(min_val, torch.zeros_like(min_val))
        max_val_pos = torch.max(max_val, torch.zeros_like(max_val))
        zero_point = torch.zeros(min_val_neg.size(), dtype=torch.int64)
        if self.qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric):
            max_val_pos = torch.max(-min_val_neg, max_val_pos)
            scale = max_val_pos / (float(quant_max - quant_min) / 2)
            scale = torch.max(scale, self.eps)
            if self.dtype in (torch.quint8, torch.uint8):
                middle = (quant_min + quant_max) // 2 if self.has_customized_qrange else 128
                zero_point = zero_point.new_full(zero_point.size(), middle)
        elif self.qscheme == torch.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(quant_max - quant_min)
            scale = torch.where(scale > self.eps, scale, torch.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = (max_val_pos - min_val_neg) / float(quant_max - quant_min)
            scale = torch.max(scale, self.eps)
            zero_point = quant_min - torch.round(min_val_neg / scale).to(torch.int)
            zero_point = torch.clamp(zero_point, quant_min, quant_max)
        if len(scale.shape) == 0:
            scale = torch.tensor([float(scale)], dtype=scale.dtype)
        if len(zero_point.shape) == 0:
            zero_point = torch.tensor([int(zero_point)], dtype=zero_point.dtype)
        return scale, zero_point


class MinMaxObserver(UniformQuantizationObserverBase):
    """Records the running min and max of what it sees; per-tensor scale and zero point from them."""

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None, factory_kwargs=None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("MinMaxObserver's qscheme only support torch.per_tensor_symmetric "
                                      "and torch.per_tensor_affine.")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))
        if qscheme == torch.per_tensor_symmetric and reduce_range and dtype == torch.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val_cur, max_val_cur = torch.aminmax(x)
        self.min_val.copy_(torch.min(min_val_cur, self.min_val))
        self.max_val.copy_(torch.max(max_val_cur, self.max_val))
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """(scale, zero_point) as 1-element tensors."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self) -> None:
        """Forget what was observed."""
        self.min_val.copy_(torch.tensor(float("inf")))
        self.max_val.copy_(torch.tensor(float("-inf")))


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Records running min and max per slice along `ch_axis`; per-channel scales and zero points."""

    def __init__(self, ch_axis: int = 0, dtype=torch.quint8, qscheme=torch.per_channel_affine,
                 reduce_range: bool = False, quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs=None, eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        if not _is_per_channel(qscheme):
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", torch.tensor([]))
        self.register_buffer("max_val", torch.tensor([]))
        if qscheme == torch.per_channel_symmetric and reduce_range and dtype == torch.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        axes = list(range(x.dim()))
        axes[self.ch_axis] = 0
        axes[0] = self.ch_axis
        y = torch.flatten(x.permute(axes).to(self.min_val.dtype), start_dim=1)
        min_val, max_val = torch.aminmax(y, dim=1)
        if self.min_val.numel() != 0 and self.max_val.numel() != 0:
            min_val = torch.min(min_val, self.min_val)
            max_val = torch.max(max_val, self.max_val)
        self.min_val = min_val.clone()
        self.max_val = max_val.clone()
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """(scales, zero_points), one per channel."""
        return self._calculate_qparams(self.min_val, self.max_val)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # min_val / max_val are empty until data is seen: take the saved shape first (torch's rule); before
        # version 3 they were saved as min_vals / max_vals
        version = local_metadata.get("version", None)
        names = ("min_vals", "max_vals") if version is not None and version < 3 else ("min_val", "max_val")
        for name, buffer in zip(names, (self.min_val, self.max_val)):
            key = prefix + name
            if key in state_dict:
                buffer.resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_min_max_vals(self) -> None:
        """Forget what was observed (empty per-channel min and max, as before any data)."""
        self.min_val = torch.empty(0)
        self.max_val = torch.empty(0)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Per-tensor qparams from running averages of the min and max: the first batch sets them, each later one
    moves them by `averaging_constant` of the way towards its own (`min += c * (batch_min - min)`, float32)."""

    def __init__(self, averaging_constant: float = 0.01, dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("MovingAverageMinMaxObserver's qscheme only support torch.per_tensor_symmetric "
                                      f"and torch.per_tensor_affine. but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and self.averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic quantization for "
                                      f"averaging constant of {self.averaging_constant}")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if min_val == float("inf") and max_val == float("-inf"):
            min_val, max_val = torch.aminmax(x)
        else:
            min_val_cur, max_val_cur = torch.aminmax(x)
            min_val = min_val + self.averaging_constant * (min_val_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_val_cur - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """PerChannelMinMaxObserver with running averages of each channel's min and max (as
    MovingAverageMinMaxObserver does per tensor)."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0, dtype=torch.quint8,
                 qscheme=torch.per_channel_affine, reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        if not _is_per_channel(qscheme):
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only support "
                                      "torch.per_channel_symmetric, torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support dynamic quantization")
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        axes = list(range(x.dim()))
        axes[self.ch_axis] = 0
        axes[0] = self.ch_axis
        y = torch.flatten(x.permute(axes), start_dim=1)
        if min_val.numel() == 0 or max_val.numel() == 0:
            min_val, max_val = torch.aminmax(y, dim=1)
        else:
            min_val_cur, max_val_cur = torch.aminmax(y, dim=1)
            min_val = min_val + self.averaging_constant * (min_val_cur - min_val)
            max_val = max_val + self.averaging_constant * (max_val_cur - max_val)
        self.min_val.resize_(min_val.shape)
        self.max_val.resize_(max_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


# NOTE [ HistogramObserver parity ]
# torch's HistogramObserver is Python over tensor ops; ember runs the same ops in the same order on float32
# tensors, so the histogram, the range search and the qparams come out bitwise equal.  What that needed beyond
# a line-by-line port:
# - ops whose last bits follow torch's CPU kernels: histc bins by trunc((x - min) * bins / (max - min)) in the
#   input's dtype with no edge correction; linspace rounds `start + step * i` once (an fma on AVX2/AVX512
#   builds, NOTE [ torch's CPU kernel arithmetic ] in ember/_runtime.py); cumsum accumulates float32 in double;
#   bincount adds float32 weights one at a time in float32.  Those live in the ops themselves.
# - torch.sum's order: the total mass and each candidate's quantization error are float32 sums whose rounding
#   decides which bins the search keeps, so they are summed in ATen's cascade order (`_torch_float_sum`).
# - the search compares float32 cumulative sums with `alpha * total` rounded to float32 (a Python float meets
#   a float32 tensor); ember does that comparison on Python floats, by bisection (the sums never decrease),
#   instead of torch's element-by-element tensor loop, which gives the same bins much faster.


def _ceil_log2(value: int) -> int:
    """c10::CeilLog2 (1 for values up to 2)."""
    return 1 if value <= 2 else (value - 1).bit_length()


def _multi_row_sum(rows: Tensor) -> Tensor:
    """ATen's multi_row_sum over `rows` (count, 4, width): 4 interleaved accumulators, added in a 4-level
    cascade whose levels hold 2**level_power rows each (SumKernel.cpp)."""
    count = rows.shape[0]
    level_power = max(4, _ceil_log2(count) // 4)
    level_step = 1 << level_power
    level_mask = level_step - 1
    zeros = torch.zeros(rows.shape[1:], dtype=rows.dtype)
    levels = [zeros] * 4
    i = 0
    while i + level_step <= count:
        for _ in range(level_step):
            levels[0] = levels[0] + rows[i]
            i += 1
        for j in range(1, 4):
            levels[j] = levels[j] + levels[j - 1]
            levels[j - 1] = zeros
            if i & (level_mask << (j * level_power)):
                break
    for row in range(i, count):
        levels[0] = levels[0] + rows[row]
    for j in range(1, 4):
        levels[0] = levels[0] + levels[j]
    return levels[0]


def _row_sum(rows: Tensor) -> Tensor:
    """ATen's row_sum over the first dim of `rows` (count, width): a multi_row_sum of the rows taken 4 at a
    time, the leftover rows added to the first accumulator, then the 4 accumulators folded in order."""
    count = rows.shape[0]
    grouped = count // 4
    partial = _multi_row_sum(rows[: grouped * 4].reshape(grouped, 4, rows.shape[1]))
    first = partial[0]
    for row in range(grouped * 4, count):
        first = first + rows[row]
    for k in range(1, 4):
        first = first + partial[k]
    return first


def _torch_float_sum(values: Tensor) -> float:
    """`values.sum().item()` for a 1-D float tensor, added in the order of torch's CPU sum kernel: 32-byte
    vectors (8 float32, NOTE [ torch's CPU kernel arithmetic ]) through row_sum, then the leftover elements
    and the vector's lanes one by one.  Exact for fewer than 32768 elements (above, torch splits the sum
    across threads)."""
    count = values.numel()
    width = 32 // values.element_size()
    if count < width:  # ATen's scalar path: row_sum over single elements
        return _row_sum(values.reshape(count, 1))[0].item()
    vectors = count // width
    lanes = _row_sum(values[: vectors * width].reshape(vectors, width))
    total = torch.zeros((), dtype=values.dtype)
    for k in range(vectors * width, count):
        total = total + values[k]
    for k in range(width):
        total = total + lanes[k]
    return total.item()


def _float32(value: float) -> float:
    """A Python float rounded to float32, as torch rounds a Python scalar meeting a float32 tensor."""
    return struct.unpack("f", struct.pack("f", value))[0]


class HistogramObserver(UniformQuantizationObserverBase):
    """Records a running histogram of the values seen (`bins` equal bins over the running [min, max]) and, in
    calculate_qparams, searches it for the [min, max] whose quantization has the least L2 error (outliers
    clipped), then computes scale and zero point from that range as MinMaxObserver does.

    When a batch widens the range, the old histogram is spread over the new bins: each old bin is cut into
    16 equal pieces whose midpoints are re-binned (torch's `_upscale_histogram`).  Per-tensor schemes only.
    NOTE [ HistogramObserver parity ]: the result is torch's bit for bit.

    Example::

        >>> observer = ember.ao.quantization.HistogramObserver(reduce_range=True)
        >>> _ = observer(ember.linspace(-1.0, 3.0, 1000))
        >>> scale, zero_point = observer.calculate_qparams()
    """

    def __init__(self, bins: int = 2048, dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None, quant_max: int | None = None,
                 factory_kwargs: dict | None = None, eps: float = _EPS, is_dynamic: bool = False,
                 **kwargs) -> None:
        if not _is_per_tensor(qscheme):
            raise NotImplementedError("HistogramObserver's qscheme only support torch.per_tensor_symmetric "
                                      "and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("HistogramObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        factory_kwargs = _factory_kwargs(factory_kwargs)
        self.bins = bins
        self.register_buffer("histogram", torch.zeros(self.bins, **factory_kwargs))
        self.register_buffer("min_val", torch.tensor(float("inf"), **factory_kwargs))
        self.register_buffer("max_val", torch.tensor(float("-inf"), **factory_kwargs))
        self.dst_nbins = 2 ** torch.iinfo(self.dtype).bits
        self.upsample_rate = 16  # pieces per old bin when a histogram is re-binned

    def _get_norm(self, delta_begin: Tensor, delta_end: Tensor, density: Tensor) -> Tensor:
        """L2 error of values spread uniformly (at `density`) over [delta_begin, delta_end] around a
        quantization level: density * (end^3 - begin^3) / 3."""
        norm = (delta_end * delta_end * delta_end - delta_begin * delta_begin * delta_begin) / 3
        return density * norm

    def _compute_quantization_error(self, next_start_bin: int, next_end_bin: int) -> float:
        """The L2 error of quantizing the histogram with bins next_start_bin..next_end_bin as the range."""
        bin_width = (self.max_val.item() - self.min_val.item()) / self.bins
        dst_bin_width = bin_width * (next_end_bin - next_start_bin + 1) / self.dst_nbins
        if dst_bin_width == 0.0:
            return 0.0
        src_bin = torch.arange(self.bins)
        # distances from the start of the first quantization level to each source bin's begin and end
        src_bin_begin = (src_bin - next_start_bin) * bin_width
        src_bin_end = src_bin_begin + bin_width
        # the quantization levels the begin and end of each source bin fall into
        dst_bin_of_begin = torch.clamp(torch.div(src_bin_begin, dst_bin_width, rounding_mode="floor"), 0,
                                       self.dst_nbins - 1)
        dst_bin_of_begin_center = (dst_bin_of_begin + 0.5) * dst_bin_width
        dst_bin_of_end = torch.clamp(torch.div(src_bin_end, dst_bin_width, rounding_mode="floor"), 0,
                                     self.dst_nbins - 1)
        density = self.histogram / bin_width

        norm = torch.zeros(self.bins)
        delta_begin = src_bin_begin - dst_bin_of_begin_center
        delta_end = dst_bin_width / 2
        norm += self._get_norm(delta_begin, torch.ones(self.bins) * delta_end, density)
        norm += (dst_bin_of_end - dst_bin_of_begin - 1) * self._get_norm(
            torch.tensor(-dst_bin_width / 2), torch.tensor(dst_bin_width / 2), density)
        dst_bin_of_end_center = dst_bin_of_end * dst_bin_width + dst_bin_width / 2
        delta_begin = -dst_bin_width / 2
        delta_end = src_bin_end - dst_bin_of_end_center
        norm += self._get_norm(torch.tensor(delta_begin), delta_end, density)
        return _torch_float_sum(norm)

    def _non_linear_param_search(self) -> tuple[Tensor, Tensor]:
        """Narrow [min, max] from both ends, a 1e-5 quantile step at a time on the side that gives up fewer bins,
        while the quantization error keeps falling (caffe2's NonlinearQuantizationParamsSearch)."""
        if self.histogram.size()[0] != self.bins:
            raise AssertionError("bins mismatch")
        bin_width = (self.max_val - self.min_val) / self.bins
        total = _torch_float_sum(self.histogram)
        cumulative = torch.cumsum(self.histogram, dim=0).tolist()  # never decreasing: bisect finds torch's bins

        stepsize = 1e-5  # granularity
        alpha, beta = 0.0, 1.0  # lower and upper quantile bounds
        start_bin, end_bin = 0, self.bins - 1
        norm_min = float("inf")
        while alpha < beta:
            next_alpha = alpha + stepsize
            next_beta = beta - stepsize
            # torch: l from start_bin up while cSum[l] < next_alpha * total; r from end_bin down while
            # cSum[r] > next_beta * total (float32 comparisons)
            left = bisect.bisect_left(cumulative, _float32(next_alpha * total), start_bin, end_bin)
            right = bisect.bisect_right(cumulative, _float32(next_beta * total), start_bin + 1, end_bin + 1) - 1
            next_start_bin, next_end_bin = start_bin, end_bin
            if (left - start_bin) > (end_bin - right):
                next_start_bin = left
                alpha = next_alpha
            else:
                next_end_bin = right
                beta = next_beta
            if next_start_bin == start_bin and next_end_bin == end_bin:
                continue
            norm = self._compute_quantization_error(next_start_bin, next_end_bin)
            if norm > norm_min:
                break
            norm_min = norm
            start_bin, end_bin = next_start_bin, next_end_bin

        new_min = self.min_val + bin_width * start_bin
        new_max = self.min_val + bin_width * (end_bin + 1)
        return new_min, new_max

    def _upscale_histogram(self, histogram: Tensor, orig_min: Tensor, orig_max: Tensor, update_min: Tensor,
                           update_max: Tensor) -> Tensor:
        """The histogram over [orig_min, orig_max] re-binned over [update_min, update_max]: each bin split into
        `upsample_rate` equal pieces, each piece counted in the new bin holding its midpoint."""
        histogram = histogram.repeat_interleave(self.upsample_rate) / self.upsample_rate
        bin_size = (orig_max - orig_min) / (self.bins * self.upsample_rate)
        mid_points_histogram = torch.linspace(orig_min, orig_max, self.bins * self.upsample_rate + 1)[:-1] \
            + 0.5 * bin_size
        boundaries_new_histogram = torch.linspace(update_min, update_max, self.bins + 1)
        bucket_assignments = torch.bucketize(mid_points_histogram, boundaries_new_histogram, right=True) - 1
        # rounding can put a midpoint just outside the new range
        bucket_assignments[bucket_assignments >= self.bins] = self.bins - 1
        bucket_assignments[bucket_assignments < 0] = 0
        return torch.bincount(bucket_assignments, weights=histogram, minlength=self.bins)

    def _combine_histograms(self, orig_hist: Tensor, orig_min: Tensor, orig_max: Tensor, update_hist: Tensor,
                            update_min: Tensor, update_max: Tensor) -> Tensor:
        """The running histogram plus a batch's (already over the new range [update_min, update_max])."""
        if update_min == orig_min and update_max == orig_max:
            return orig_hist + update_hist
        if orig_min == orig_max:  # everything seen so far was one value: it moves as one
            bin_value = torch.sum(orig_hist)
            transformed_orig_hist = torch.histc(orig_min, bins=self.bins, min=update_min, max=update_max) * bin_value
            return transformed_orig_hist + update_hist
        if update_min > orig_min:
            raise AssertionError("update_min must be <= orig_min")
        if update_max < orig_max:
            raise AssertionError("update_max must be >= orig_max")
        transformed_orig_hist = self._upscale_histogram(orig_hist, orig_min, orig_max, update_min, update_max)
        return update_hist + transformed_orig_hist

    def reset_histogram(self, x: Tensor, min_val: Tensor, max_val: Tensor) -> None:
        """Start over from x alone, over [min_val, max_val]."""
        self.min_val.resize_(min_val.shape)
        self.min_val.copy_(min_val)
        self.max_val.resize_(max_val.shape)
        self.max_val.copy_(max_val)
        if min_val.numel() != 1 or max_val.numel() != 1:
            raise AssertionError("histogram min/max values must be scalar.")
        new_histogram = torch.histc(x, self.bins, min=min_val, max=max_val)
        self.histogram.detach_().resize_(new_histogram.shape)
        self.histogram.copy_(new_histogram)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach()
        x_min, x_max = torch.aminmax(x)
        # infinities would make the range infinite; torch drops them (they would be clamped anyway)
        if x_min == -math.inf or x_max == math.inf:
            warnings.warn("torch.inf detected in input tensor, ignoring input", stacklevel=2)
            x = x[x.abs() != math.inf]
            if x.numel() == 0:
                return x_orig
            x_min, x_max = torch.aminmax(x)

        current_min, current_max = self.min_val, self.max_val
        is_uninitialized = self.min_val == float("inf") or self.max_val == float("-inf")
        if is_uninitialized:
            self.reset_histogram(x, x_min, x_max)
            return x_orig
        new_min = torch.min(current_min, x_min).detach()
        new_max = torch.max(current_max, x_max).detach()
        update_histogram = torch.histc(x, self.bins, min=new_min, max=new_max)
        if new_min == current_min and new_max == current_max:
            combined_histogram = self.histogram + update_histogram
            self.histogram.detach_().resize_(combined_histogram.shape)
            self.histogram.copy_(combined_histogram)
            return x_orig
        combined_histogram = self._combine_histograms(self.histogram, current_min, current_max, update_histogram,
                                                      new_min, new_max)
        self.histogram.detach_().resize_(combined_histogram.shape)
        self.histogram.copy_(combined_histogram)
        self.min_val.detach_().resize_(new_min.shape)
        self.min_val.copy_(new_min)
        self.max_val.detach_().resize_(new_max.shape)
        self.max_val.copy_(new_max)
        return x_orig

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """(scale, zero_point) as 1-element tensors, from the range the histogram search picks."""
        is_uninitialized = self.min_val == float("inf") and self.max_val == float("-inf")
        if is_uninitialized:
            warnings.warn("must run observer before calling calculate_qparams. Returning default scale and zero "
                          "point ", stacklevel=2)
            return torch.tensor([1.0]), torch.tensor([0])
        if self.bins != len(self.histogram):
            raise AssertionError("The number of bins in histogram should be equal to the number of bins supplied "
                                 "while making this observer")
        new_min, new_max = self._non_linear_param_search()
        return self._calculate_qparams(new_min, new_max)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "min_val"] = self.min_val
        destination[prefix + "max_val"] = self.max_val

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        """min_val/max_val are taken as they are (their shape may differ from the fresh buffers'); version < 3
        stored them with shape [0] before any data."""
        version = local_metadata.get("version", None)
        if version is None or version < 3:
            for name, empty in (("min_val", float("inf")), ("max_val", float("-inf"))):
                key = prefix + name
                if key in state_dict and tuple(state_dict[key].shape) == (0,):
                    state_dict[key] = torch.tensor(empty)
        for name in ("min_val", "max_val"):
            key = prefix + name
            if key in state_dict:
                setattr(self, name, state_dict[key])
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class PlaceholderObserver(ObserverBase):
    """Observes nothing; carries the dtype (and range) a dynamic or float16 quantization will use."""

    def __init__(self, dtype=torch.float32, custom_op_name: str = "", compute_dtype=None,
                 quant_min: int | None = None, quant_max: int | None = None, qscheme=None, eps=None,
                 is_dynamic: bool = False) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = torch.per_tensor_affine if qscheme is None else qscheme
        self.quant_min = quant_min
        self.quant_max = quant_max
        self.eps = _EPS if eps is None else eps
        self.custom_op = custom_op_name
        if compute_dtype:  # torch only warns: the observer keeps the is_dynamic it was given
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` will be deprecated in "
                          "a future release of PyTorch.", stacklevel=2)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")  # noqa: TRY002


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_weight_observer = MinMaxObserver.with_args(dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
# symmetric qint8 weights restricted to [-127, 127] (xnnpack's requirement, used by the symmetric qnnpack qconfigs)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2**-12)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=torch.qint8, qscheme=torch.per_channel_symmetric, quant_min=-127, quant_max=127, eps=2**-12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=torch.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.quint8, qscheme=torch.per_channel_affine_float_qparams, ch_axis=0)
