"""Pooling modules over nn.functional: max, average, adaptive, LP, unpooling and fractional max pooling."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d", "FractionalMaxPool2d",
    "FractionalMaxPool3d",
]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, dilation={dilation}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    def forward(self, input: Tensor):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    def forward(self, input: Tensor):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    def forward(self, input: Tensor):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


def _tuple(value, dims: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


class _MaxUnpoolNd(Module):
    dims = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        # torch's MaxUnpoolNd stores tuples (_single/_pair/_triple), which shows in the repr
        self.kernel_size = _tuple(kernel_size, self.dims)
        self.stride = _tuple(stride if (stride is not None) else kernel_size, self.dims)
        self.padding = _tuple(padding, self.dims)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        function = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}[self.dims]
        return function(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    dims = 1


class MaxUnpool2d(_MaxUnpoolNd):
    dims = 2


class MaxUnpool3d(_MaxUnpoolNd):
    dims = 3


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.stride = self.kernel_size if stride is None else ((stride,) if isinstance(stride, int) else tuple(stride))
        self.padding = (padding,) if isinstance(padding, int) else tuple(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class _AvgPoolNd(Module):
    dims = 2

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input: Tensor) -> Tensor:
        function = F.avg_pool2d if self.dims == 2 else F.avg_pool3d
        return function(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                        self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    dims = 2


class AvgPool3d(_AvgPoolNd):
    dims = 3


class _AdaptivePool(Module):
    function_name = ""  # the nn.functional function, looked up per call so that autocast's wrapper applies

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self.function_name)(input, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePool):
    function_name = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptivePool):
    function_name = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptivePool):
    function_name = "adaptive_avg_pool3d"


class _AdaptiveMaxPool(Module):
    function_name = ""  # the nn.functional function, looked up per call so that autocast's wrapper applies

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"

    def forward(self, input: Tensor):
        return getattr(F, self.function_name)(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    function_name = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    function_name = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    function_name = "adaptive_max_pool3d"


class _LPPoolNd(Module):
    function_name = ""  # the nn.functional function, looked up per call so that autocast's wrapper applies

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))

    def forward(self, input: Tensor) -> Tensor:
        function = getattr(F, self.function_name)
        return function(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    function_name = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    function_name = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    function_name = "lp_pool3d"


class _FractionalMaxPoolNd(Module):
    """Either output_size or output_ratio (in (0, 1)); `_random_samples`, when given, is a buffer that fixes the
    window offsets (see nn.functional.fractional_max_pool2d)."""

    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _dims = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices: bool = False,
                 _random_samples=None) -> None:
        super().__init__()
        dims, name = self._dims, type(self).__name__
        if dims == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _ntuple(kernel_size, dims)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, dims) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, dims) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")


def _ntuple(value, dims: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _dims = 2

    def forward(self, input: Tensor):
        return F.fractional_max_pool2d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _dims = 3

    def forward(self, input: Tensor):
        return F.fractional_max_pool3d(input, self.kernel_size, self.output_size, self.output_ratio,
                                       self.return_indices, _random_samples=self._random_samples)
