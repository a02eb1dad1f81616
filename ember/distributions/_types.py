"""Type aliases used in annotations across ember.distributions (torch.types' _Number, _size, Number ...)."""

from __future__ import annotations

from collections.abc import Sequence

from .._dtype import dtype as _dtype
from .._tensor import Size

_Number = (int, float, bool)
Number = int | float | bool
_size = Size | Sequence[int]
Device = object

__all__ = ["_Number", "Number", "_size", "_dtype", "Device"]
