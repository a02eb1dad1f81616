"""nn.functional convolutions: conv1d/2d/3d and conv_transpose1d/2d/3d over ember/_ops/conv.py."""

from __future__ import annotations

from .._ops import conv as conv_ops
from .._tensor import SCALAR_NAMES, Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc"]


def _tuple(value, dims: int, name: str) -> tuple:
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return tuple(value) * dims
        if len(value) != dims:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} values to match "
                               f"the convolution dimensions, but got {name}={list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * dims


def _batched(input: Tensor, dims: int, name: str):
    if input.ndim == dims + 1:
        return input.unsqueeze(0), True
    if input.ndim != dims + 2:
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    return input, False


def _check_dtypes(input, weight, bias, transposed: bool) -> None:
    """torch refuses mixed input/weight dtypes instead of promoting (and, for conv, a mismatched bias)."""
    if input.dtype != weight.dtype:
        raise RuntimeError(f"expected scalar type {SCALAR_NAMES[input.dtype.name]} but found "
                           f"{SCALAR_NAMES[weight.dtype.name]}")
    if not transposed and bias is not None and bias.dtype != input.dtype:
        def c_name(dtype):
            return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)

        raise RuntimeError(f"Input type ({c_name(input.dtype)}) and bias type ({c_name(bias.dtype)}) should be the "
                           "same")


def _padding(padding, weight_shape, dilation, stride, dims: int):
    """Explicit (left, right) pairs; 'same' puts the odd extra on the right as torch does."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * dims
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pairs = []
            for i in range(dims):
                total = dilation[i] * (weight_shape[2 + i] - 1)
                pairs.append((total // 2, total - total // 2))
            return tuple(pairs)
        raise ValueError(f"Invalid padding string '{padding}', should be one of ['valid', 'same']")
    return tuple((p, p) for p in _tuple(padding, dims, "padding"))


def _convnd(dims: int, name: str, input, weight, bias, stride, padding, dilation, groups):
    stride_t = _tuple(stride, dims, "stride")
    dilation_t = _tuple(dilation, dims, "dilation")
    x, unbatched = _batched(input, dims, name)
    _check_dtypes(input, weight, bias, transposed=False)
    if weight.ndim != dims + 2:
        raise RuntimeError("weight should have at least three dimensions" if dims == 1 else
                           f"Expected {dims + 2}-dimensional weight for {dims + 2}-dimensional input "
                           f"{list(x.shape)}, but got {weight.ndim}-dimensional weight of size {list(weight.shape)} "
                           "instead")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if x.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{weight.shape[1] * groups} channels, but got {x.shape[1]} channels instead"
        )
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size {list(weight.shape)} instead")
    pairs = _padding(padding, weight.shape, dilation_t, stride_t, dims)
    for i in range(dims):
        padded = x.shape[2 + i] + pairs[i][0] + pairs[i][1]
        if padded < dilation_t[i] * (weight.shape[2 + i] - 1) + 1:
            padded_sizes = " x ".join(str(x.shape[2 + j] + sum(pairs[j])) for j in range(dims))
            kernel_sizes = " x ".join(str(weight.shape[2 + j]) for j in range(dims))
            raise RuntimeError(
                f"Calculated padded input size per channel: ({padded_sizes}). "
                f"Kernel size: ({kernel_sizes}). Kernel size can't be "
                "greater than actual input size"
            )
    geometry = {"stride": stride_t, "padding": pairs, "dilation": dilation_t, "groups": groups}
    out = conv_ops.conv(x, weight, bias, geometry)
    return out.squeeze(0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _convnd(1, "conv1d", input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _convnd(2, "conv2d", input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    return _convnd(3, "conv3d", input, weight, bias, stride, padding, dilation, groups)


def _conv_transposend(dims, name, input, weight, bias, stride, padding, output_padding, groups, dilation):
    stride_t = _tuple(stride, dims, "stride")
    dilation_t = _tuple(dilation, dims, "dilation")
    padding_t = _tuple(padding, dims, "padding")
    output_padding_t = _tuple(output_padding, dims, "output_padding")
    x, unbatched = _batched(input, dims, name)
    _check_dtypes(input, weight, bias, transposed=True)
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} to have "
            f"{weight.shape[0]} channels, but got {x.shape[1]} channels instead"
        )
    for i in range(dims):
        if output_padding_t[i] >= max(stride_t[i], dilation_t[i]):
            raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                               f"output_padding_height: {output_padding_t[0]} output_padding_width: "
                               f"{output_padding_t[-1]} stride_height: {stride_t[0]} stride_width: {stride_t[-1]} "
                               f"dilation_height: {dilation_t[0]} dilation_width: {dilation_t[-1]}")
    out_channels = weight.shape[1] * groups
    spatial = tuple((x.shape[2 + i] - 1) * stride_t[i] - 2 * padding_t[i] + dilation_t[i] * (weight.shape[2 + i] - 1)
                    + output_padding_t[i] + 1 for i in range(dims))
    # transposed conv = the input gradient of a conv whose weight is (C_out_of_conv=C_in, C_in/g, k)
    pairs = tuple((padding_t[i], padding_t[i] - output_padding_t[i]) for i in range(dims))
    geometry = {"stride": stride_t, "padding": pairs, "dilation": dilation_t, "groups": groups}
    out = conv_ops.conv_input_grad(x, weight, (x.shape[0], out_channels) + spatial, geometry)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * dims)
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(1, "conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(2, "conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transposend(3, "conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups,
                             dilation)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """torch.conv_tbc: a 1-d convolution over (time, batch, channels) input with a (kernel width, in_channels,
    out_channels) filter, `pad` steps of zeros at both ends of time; conv1d with the layouts moved."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1).contiguous()
