"""torch.autograd.anomaly_mode (implemented in ember/_autograd/anomaly_mode.py)."""

from .._autograd.anomaly_mode import (  # noqa: F401
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
    set_detect_anomaly,
)

__all__ = ["detect_anomaly", "set_detect_anomaly"]
