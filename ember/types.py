"""torch.types: the aliases libraries annotate with (`from torch.types import Number, Device`)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Union

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._tensor import Size as _size_type
from ._tensor import Tensor

__all__ = ["Number", "Device", "Storage", "_dtype", "_device", "_size", "_int", "_float", "_bool", "_complex",
           "_TensorOrTensors", "FileLike", "IntLikeType", "PySymType"]

_int = builtins.int
_float = builtins.float
_bool = builtins.bool
_complex = builtins.complex
_size = Union[_size_type, Sequence[_int]]
Number = Union[_int, _float, _bool]
Device = Union[_device, str, _int, None]
Storage = object
IntLikeType = _int
PySymType = Union[_int, _float, _bool]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
FileLike = Union[str, "builtins.object"]
