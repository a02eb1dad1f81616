"""Observers (torch.ao.quantization.observer): modules that record a tensor's range and turn it into a scale
and zero point.  The arithmetic mirrors torch's Python observers op for op (float32 tensors, torch's eps,
reduce_range and symmetric rules), so calculate_qparams returns torch's values exactly.
"""

from __future__ import annotations

import functools
import warnings

import ember as torch

from ... import nn
from ..._tensor import Tensor

__all__ = [
    "ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver", "PerChannelMinMaxObserver",
    "PlaceholderObserver", "default_observer", "default_weight_observer", "default_per_channel_weight_observer",
    "default_dynamic_quant_observer", "default_placeholder_observer", "default_float_qparams_observer",
]

_EPS = torch.finfo(torch.float32).eps


def _with_args(cls_or_self, **kwargs):
    """A factory for the observer with these arguments (torch's `Observer.with_args`)."""
    return functools.partial(cls_or_self, **kwargs)


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


class UniformQuantizationObserverBase(ObserverBase):
    """An observer that maps a [min, max] range onto an integer range (affine or symmetric)."""

    def __init__(self, dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None, factory_kwargs=None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs) -> None:
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for observers. "
                          "reduce_range will be deprecated in a future release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        self.register_buffer("eps", torch.tensor([eps]))
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
        self.eps = eps
        self.custom_op = custom_op_name

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
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=torch.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=torch.quint8, qscheme=torch.per_channel_affine_float_qparams, ch_axis=0)
