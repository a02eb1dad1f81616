"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly).

While it is on, every node records the Python stack of the forward call that
made it (Node.__init__), the engine checks each backward output for NaN
(check_nan) and, when a node's backward fails, warns with that forward stack
before re-raising: see engine._run_node.
"""

from __future__ import annotations

import warnings

from .grad_mode import state

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]


def is_anomaly_enabled() -> bool:
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return state.anomaly_check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    state.anomaly = bool(enabled)
    state.anomaly_check_nan = bool(check_nan)


class detect_anomaly:
    """Context manager (and decorator) that enables anomaly detection for the autograd engine.

    Example::

        >>> with autograd.detect_anomaly():
        ...     out = (x / x).sum()
        ...     out.backward()  # RuntimeError: Function 'DivBackward0' returned nan values in its 1th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = state.anomaly
        self.check_nan = check_nan
        self.prev_check_nan = state.anomaly_check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should only be enabled "
            "for debugging.",
            stacklevel=2,
        )

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self.__class__(self.check_nan):
                return func(*args, **kwargs)

        return decorated


class set_detect_anomaly:
    """Turn anomaly detection on or off at once; as a context manager, restore the previous setting on exit."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = state.anomaly
        self.prev_check_nan = state.anomaly_check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
