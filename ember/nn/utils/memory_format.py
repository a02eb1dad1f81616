"""convert_conv2d/3d_weight_memory_format: ember tensors are always strided-contiguous in NumPy's sense, so the
conversion is the identity on values (torch's also never changes values)."""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def convert_conv2d_weight_memory_format(module, memory_format):
    """Returns `module` unchanged: ember has one memory layout."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """Returns `module` unchanged: ember has one memory layout."""
    return module
