"""Fake-quantize modules (torch.ao.quantization.fake_quantize): an observer and fake quantization in one module,
what quantization-aware training puts on weights and activations.

FakeQuantize runs its observer (a Python observer of observer.py) and copies the observer's
`calculate_qparams` into its `scale` / `zero_point` buffers, then fake-quantizes with them
(`ember.fake_quantize_per_tensor_affine` / `_per_channel_affine`, torch's bits).  FusedMovingAvgObsFakeQuantize
does the same in one op, `ember.fused_moving_avg_obs_fake_quant`, whose scale comes from fbgemm's
ChooseQuantizationParams, not from the observer (see ember/_ops/fake_quantize_fused.py).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import ember as torch

from ... import nn
from ..._tensor import Tensor
from .observer import (
    HistogramObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _with_args,
)

__all__ = [
    "FakeQuantizeBase", "FakeQuantize", "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "disable_observer",
    "enable_fake_quant", "enable_observer", "default_fake_quant", "default_weight_fake_quant",
    "default_dynamic_fake_quant", "default_per_channel_weight_fake_quant", "default_histogram_fake_quant",
    "default_fused_act_fake_quant", "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "fused_wt_fake_quant_range_neg_127_to_127", "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
]


def _is_per_channel(qscheme) -> bool:
    return qscheme in (torch.per_channel_symmetric, torch.per_channel_affine, torch.per_channel_affine_float_qparams)


def _is_per_tensor(qscheme) -> bool:
    return qscheme in (torch.per_tensor_symmetric, torch.per_tensor_affine)


def _is_symmetric_quant(qscheme) -> bool:
    return qscheme in (torch.per_tensor_symmetric, torch.per_channel_symmetric)


def _is_float_qparams(qscheme) -> bool:
    return qscheme == torch.per_channel_affine_float_qparams


class FakeQuantizeBase(ABC, nn.Module):
    """Base of the fake-quantize modules: `fake_quant_enabled` and `observer_enabled` uint8 buffers, switched by
    enable_/disable_fake_quant and enable_/disable_observer."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.uint8))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.uint8))

    @abstractmethod
    def forward(self, x):
        pass

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        pass

    def enable_fake_quant(self, enabled: bool = True) -> None:
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self) -> None:
        self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> None:
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self) -> None:
        self.enable_observer(False)

    @classmethod
    def with_args(cls, **kwargs):
        return _with_args(cls, **kwargs)


class FakeQuantize(FakeQuantizeBase):
    """Simulates quantize + dequantize in training:
    ``x_out = (clamp(round(x / scale + zero_point), quant_min, quant_max) - zero_point) * scale``.

    Args:
        observer: the observer class (or `with_args` factory) that collects statistics, default
            MovingAverageMinMaxObserver.
        quant_min, quant_max: the integer range (checked against the observer's dtype).
        is_dynamic: a placeholder for dynamic quantization.
        **observer_kwargs: passed to the observer.
    """

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None, is_dynamic=False,
                 **observer_kwargs) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            dtype = observer_kwargs.get("dtype", torch.quint8)
            if hasattr(observer, "p"):
                dtype = getattr(getattr(observer, "p", {}), "keywords", {}).get("dtype", dtype)
            if torch.iinfo(dtype).min > quant_min:
                raise AssertionError("quant_min out of bound")
            if quant_max > torch.iinfo(dtype).max:
                raise AssertionError("quant_max out of bound")
            observer_kwargs.update({"quant_min": quant_min, "quant_max": quant_max})
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        self.quant_min = self.activation_post_process.quant_min
        self.quant_max = self.activation_post_process.quant_max
        self.is_dynamic = self.activation_post_process.is_dynamic
        zero_point_dtype = torch.float if _is_float_qparams(self.activation_post_process.qscheme) else torch.int
        self.register_buffer("scale", torch.tensor([1.0], dtype=torch.float))
        self.register_buffer("zero_point", torch.tensor([0], dtype=zero_point_dtype))
        self.dtype = self.activation_post_process.dtype
        self.qscheme = self.activation_post_process.qscheme
        self.ch_axis = getattr(self.activation_post_process, "ch_axis", -1)
        if not (_is_per_channel(self.qscheme) or _is_per_tensor(self.qscheme)):
            raise AssertionError("Only per channel and per tensor quantization are supported in fake quantize"
                                 " got qscheme: " + str(self.qscheme))
        self.is_per_channel = _is_per_channel(self.qscheme)

    def calculate_qparams(self):
        """The observer's (scale, zero_point)."""
        return self.activation_post_process.calculate_qparams()

    def forward(self, X: Tensor) -> Tensor:
        if self.observer_enabled[0] == 1:
            self.activation_post_process(X.detach())
            _scale, _zero_point = self.calculate_qparams()
            _scale, _zero_point = _scale.to(self.scale.device), _zero_point.to(self.zero_point.device)
            if self.scale.shape != _scale.shape:
                self.scale.resize_(_scale.shape)
                self.zero_point.resize_(_zero_point.shape)
            self.scale.copy_(_scale)
            self.zero_point.copy_(_zero_point)
        if self.fake_quant_enabled[0] == 1:
            if self.is_per_channel:
                X = torch.fake_quantize_per_channel_affine(X, self.scale, self.zero_point, self.ch_axis,
                                                           self.activation_post_process.quant_min,
                                                           self.activation_post_process.quant_max)
            else:
                X = torch.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                          self.activation_post_process.quant_min,
                                                          self.activation_post_process.quant_max)
        return X

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"dtype={self.dtype}, qscheme={self.qscheme}, ch_axis={self.ch_axis}, "
                f"scale={self.scale}, zero_point={self.zero_point}")

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = self.scale
        destination[prefix + "zero_point"] = self.zero_point

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # scale and zero_point change shape with the observer (per channel): resize before the copy
        for name in ("scale", "zero_point"):
            key = prefix + name
            if key in state_dict:
                getattr(self, name).resize_(state_dict[key].shape)
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """FakeQuantize with a MovingAverage(PerChannel)MinMaxObserver whose observation, choice of parameters and
    fake quantization run as one op, `ember.fused_moving_avg_obs_fake_quant` (torch's numbers: its scale comes
    from ChooseQuantizationParams, not from the observer's `calculate_qparams`)."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min: int = 0, quant_max: int = 255,
                 **observer_kwargs) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process,
                          (MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", torch.tensor([1], dtype=torch.long))
        self.register_buffer("observer_enabled", torch.tensor([1], dtype=torch.long))
        self.is_symmetric_quant = _is_symmetric_quant(self.activation_post_process.qscheme)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled={self.observer_enabled}, "
                f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={self.activation_post_process.reduce_range}")

    def forward(self, X: Tensor) -> Tensor:
        return torch.fused_moving_avg_obs_fake_quant(
            X, self.observer_enabled, self.fake_quant_enabled, self.activation_post_process.min_val,
            self.activation_post_process.max_val, self.scale, self.zero_point,
            self.activation_post_process.averaging_constant, self.activation_post_process.quant_min,
            self.activation_post_process.quant_max, self.ch_axis, self.is_per_channel, self.is_symmetric_quant)


default_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                            dtype=torch.quint8, qscheme=torch.per_tensor_affine, reduce_range=True)
"""Default fake_quant for activations."""

default_weight_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                   quant_max=127, dtype=torch.qint8,
                                                   qscheme=torch.per_tensor_symmetric, reduce_range=False)
"""Default fake_quant for weights."""

default_dynamic_fake_quant = FakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=0,
                                                    quant_max=255, is_dynamic=True, dtype=torch.quint8,
                                                    averaging_constant=1)
"""Default dynamic fake_quant for activations."""

default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_channel_symmetric, reduce_range=False, ch_axis=0)
"""Default fake_quant for per-channel weights."""

default_histogram_fake_quant = FakeQuantize.with_args(observer=HistogramObserver, quant_min=0, quant_max=255,
                                                      dtype=torch.quint8, qscheme=torch.per_tensor_affine,
                                                      reduce_range=True)
"""Fake_quant for activations using a histogram."""

default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=torch.quint8)
"""Fused version of `default_fake_quant`."""

default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric)
"""Fused version of `default_weight_fake_quant`."""

default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_channel_symmetric)
"""Fused version of `default_per_channel_weight_fake_quant`."""

fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_tensor_symmetric, eps=2**-12)

fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127, dtype=torch.qint8,
    qscheme=torch.per_channel_symmetric, eps=2**-12)


def disable_fake_quant(mod: nn.Module) -> None:
    """`model.apply(disable_fake_quant)`: turn fake quantization off in every fake-quantize module."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod: nn.Module) -> None:
    """`model.apply(enable_fake_quant)`: turn fake quantization on in every fake-quantize module."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod: nn.Module) -> None:
    """`model.apply(disable_observer)`: freeze the scale and zero point of every fake-quantize module."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod: nn.Module) -> None:
    """`model.apply(enable_observer)`: let every fake-quantize module observe again."""
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()
