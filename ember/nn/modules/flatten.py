"""Flatten and Unflatten."""

from __future__ import annotations

from ..._tensor import Tensor
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    def __init__(self, dim, unflattened_size) -> None:
        super().__init__()
        _require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _require_tuple_int(sizes) -> None:
    """torch's check on Unflatten's sizes: a tuple or list of Python ints."""
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(sizes).__name__}")
    for index, size in enumerate(sizes):
        if not isinstance(size, int):
            raise TypeError("unflattened_size must be tuple of ints, "
                            f"but found element of type {type(size).__name__} at pos {index}")
