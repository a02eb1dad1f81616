"""torch.signal: signal-processing helpers; today, as in torch, only the window functions of
`ember.signal.windows`."""

from __future__ import annotations

from . import windows

__all__ = ["windows"]
