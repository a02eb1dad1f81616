"""convert_conv2d/3d_weight_memory_format, as torch's: the weights of every Conv2d / ConvTranspose2d (Conv3d /
ConvTranspose3d) in the module tree are re-laid out in `memory_format` (values unchanged)."""

from __future__ import annotations

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        weight_data = module.weight.detach().clone(memory_format=memory_format)
        module.weight.data = weight_data
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Convert the weights of the Conv2d / ConvTranspose2d modules in `module` to `memory_format`; returns module."""
    from ..modules.conv import Conv2d, ConvTranspose2d

    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Convert the weights of the Conv3d / ConvTranspose3d modules in `module` to `memory_format`; returns module."""
    from ..modules.conv import Conv3d, ConvTranspose3d

    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
