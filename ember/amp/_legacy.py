"""The deprecated per-device spellings torch.cuda.amp.* and torch.cpu.amp.* (autocast, GradScaler, custom_fwd,
custom_bwd): thin subclasses and partials of ember.amp's that warn with torch's FutureWarning, so old training
scripts run unchanged."""

from __future__ import annotations

import functools
import warnings

from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler


def _warn(old: str, new: str) -> None:
    warnings.warn(f"`{old}` is deprecated. Please use `{new}` instead.", FutureWarning, stacklevel=3)


def device_autocast(device_type: str, default_dtype):
    """torch.<device>.amp.autocast: autocast(device_type, ...) with the old positional signature."""

    class autocast(_autocast):
        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True) -> None:
            _warn(f"torch.{device_type}.amp.autocast(args...)", f"torch.amp.autocast('{device_type}', args...)")
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    return autocast


def device_grad_scaler(device_type: str):
    """torch.<device>.amp.GradScaler: GradScaler(device_type, ...) with the old positional signature."""

    class GradScaler(_GradScaler):
        def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                     growth_interval: int = 2000, enabled: bool = True) -> None:
            _warn(f"torch.{device_type}.amp.GradScaler(args...)", f"torch.amp.GradScaler('{device_type}', args...)")
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    return GradScaler


def cuda_custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: custom_fwd(device_type="cuda")."""
    _warn("torch.cuda.amp.custom_fwd(args...)", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(_custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd):
    """torch.cuda.amp.custom_bwd: custom_bwd(device_type="cuda")."""
    _warn("torch.cuda.amp.custom_bwd(args...)", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(_custom_bwd, device_type="cuda")(bwd)
