"""Low-level ATen entry points torch exposes at the top level, with ATen's signatures: convolution, conv_tbc,
max_pool1d_with_indices, native_channel_shuffle, embedding_renorm_, grid_sampler_2d / _3d and
affine_grid_generator.  As in nn_aliases.py, each checks what ATen checks and then maps its arguments onto
ember.nn.functional, so values and gradients are F's.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import export
from .nn_aliases import _functional, _stride
from .nn_aliases_extra import _INTERPOLATION, _PADDING

# ---------------------------------------------------------------- convolutions


def _expand(name: str, value, dims: int) -> tuple:
    """ATen's expand_param_if_needed: one value stands for every spatial dim, else one per dim."""
    value = tuple(int(each) for each in value)
    if len(value) == 1:
        return value * dims
    if len(value) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values to match the "
                           f"convolution dimensions, but got {name}={list(value)}")
    return value


@export(method=False)
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, transposed: bool,
                output_padding, groups: int) -> Tensor:
    """torch.convolution: the N-d (transposed) convolution every conv layer lowers to; the spatial rank is the
    weight's, the input must be batched, and output_padding only applies when transposed."""
    for position, (name, value) in enumerate((("stride", stride), ("padding", padding), ("dilation", dilation)), 4):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"convolution(): argument '{name}' (position {position}) must be tuple of ints, not "
                            f"{type(value).__name__}")
    if not isinstance(output_padding, (tuple, list)):
        raise TypeError(f"convolution(): argument 'output_padding' (position 8) must be tuple of ints, not "
                        f"{type(output_padding).__name__}")
    dims = weight.ndim - 2
    if input.ndim != weight.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight "
                           f"{list(weight.shape)}, but got {input.ndim}-dimensional input of size "
                           f"{list(input.shape)} instead")
    if dims not in (1, 2, 3):
        raise NotImplementedError(f"ember's convolution supports 1-, 2- and 3-d convolutions, got a {weight.ndim}-d "
                                  "weight")
    stride, padding = _expand("stride", stride, dims), _expand("padding", padding, dims)
    dilation, output_padding = _expand("dilation", dilation, dims), _expand("output_padding", output_padding, dims)
    if any(each < 0 for each in padding):
        raise RuntimeError("negative padding is not supported")
    if any(each <= 0 for each in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(each <= 0 for each in dilation):
        raise RuntimeError("dilation should be greater than zero")
    functional = _functional()
    if transposed:
        transposed_conv = getattr(functional, f"conv_transpose{dims}d")
        return transposed_conv(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(functional, f"conv{dims}d")(input, weight, bias, stride, padding, dilation, groups)


@export(method=False)
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """torch.conv_tbc: a 1-d convolution over (time, batch, channels) input with a (kernel, in, out) weight; a
    negative pad crops the sequence."""
    if not isinstance(bias, Tensor):
        raise TypeError(f"conv_tbc(): argument 'bias' (position 3) must be Tensor, not {type(bias).__name__}")
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    length = input.shape[0] + 2 * pad - weight.shape[0] + 1
    if length < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {length}: "
                           f"[{length}, {input.shape[1]}, {weight.shape[2]}]")
    sequence = input.permute(1, 2, 0)  # (batch, channels, time), conv1d's layout
    if pad < 0:
        sequence = sequence.narrow(2, -pad, input.shape[0] + 2 * pad)
    output = _functional().conv1d(sequence, weight.permute(2, 1, 0), bias, 1, max(pad, 0))
    return output.permute(2, 0, 1)


# ---------------------------------------------------------------- pooling, shuffles, embeddings


@export(method=False)
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:
    """torch.max_pool1d_with_indices(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False):
    (values, indices); an empty stride means the kernel size."""
    return _functional().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                                    return_indices=True)


@export(method=False)
def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """torch.native_channel_shuffle(input, groups): channel_shuffle's kernel, with ATen's checks."""
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    return _functional().channel_shuffle(input, groups)


@export(method=False)
def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """torch.embedding_renorm_(weight, indices, max_norm, norm_type): rescale, in place, each row of weight
    named in indices whose norm exceeds max_norm to norm max_norm (what F.embedding's max_norm does)."""
    if input.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {input.ndim}-dimensional tensor for argument "
                           "#1 'self' (while checking arguments for embedding_renorm_)")
    if indices.dtype.name not in ("int64", "int32"):
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got torch.{SCALAR_NAMES[indices.dtype.name]}Tensor instead (while "
                           "checking arguments for embedding_renorm_)")
    input._check_inplace()
    from ..nn.functional import _embedding_renorm_

    _embedding_renorm_(input, indices, max_norm, norm_type)
    return input


# ---------------------------------------------------------------- sampling grids


def _grid_sampler(dims: int, input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                  align_corners: bool) -> Tensor:
    if input.ndim != dims + 2 or grid.ndim != dims + 2:
        raise RuntimeError(f"grid_sampler(): expected {dims + 2}D input and grid with same number of dimensions, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != dims:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {dims} in last dimension, but got grid "
                           f"with sizes {list(grid.shape)}")
    if dims == 3 and int(interpolation_mode) == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return _functional().grid_sample(input, grid, _INTERPOLATION[int(interpolation_mode)],
                                     _PADDING[int(padding_mode)], bool(align_corners))


@export(method=False)
def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """torch.grid_sampler_2d: F.grid_sample of 4-D input, with ATen's int modes (0 bilinear, 1 nearest,
    2 bicubic; padding 0 zeros, 1 border, 2 reflection)."""
    return _grid_sampler(2, input, grid, interpolation_mode, padding_mode, align_corners)


@export(method=False)
def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    """torch.grid_sampler_3d: F.grid_sample of 5-D input (trilinear or nearest), with ATen's int modes."""
    return _grid_sampler(3, input, grid, interpolation_mode, padding_mode, align_corners)


@export(method=False)
def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """torch.affine_grid_generator(theta, size, align_corners): F.affine_grid without its Python-side checks."""
    if not isinstance(align_corners, bool):
        raise TypeError(f"affine_grid_generator(): argument 'align_corners' (position 3) must be bool, not "
                        f"{type(align_corners).__name__}")
    size = [int(each) for each in size]
    if len(size) not in (4, 5):
        raise RuntimeError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    expected = [size[0], len(size) - 1]  # theta^T is the (N, dims + 1, dims) batch2 of a baddbmm
    if theta.ndim != 3 or [theta.shape[0], theta.shape[2]] != expected:
        got = [theta.shape[0], theta.shape[-1]]
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: {expected} but got: "
                           f"{got}.")
    return _functional().affine_grid(theta, size, align_corners)
