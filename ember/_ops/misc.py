"""Small top-level helpers: is_tensor, numel, result_type, typename."""

from __future__ import annotations

from .. import _dtype as dt
from .._dispatch import result_type_of_args
from .._tensor import Tensor


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input._dtype.is_floating_point


def is_complex(input: Tensor) -> bool:
    return input._dtype.is_complex


def numel(input: Tensor) -> int:
    return input.numel()


def result_type(tensor1, tensor2) -> dt.dtype:
    """The dtype an arithmetic op on these operands produces (torch.result_type)."""
    return result_type_of_args((tensor1, tensor2))


def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__name__
