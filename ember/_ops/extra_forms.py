"""Forms torch has of things ember computes elsewhere: the in-place function torch.addmv_, the Tensor methods
hardshrink and prelu (over nn.functional's), and torch.empty_permuted (an empty tensor whose strides follow a
physical dimension order, as torch.empty(physical sizes) seen through the inverse permutation).
"""

from __future__ import annotations

import numbers

from .._tensor import SCALAR_NAMES, Tensor
from ._api import export
from .top_level_functions import _method_function

export(_method_function("addmv_"), method=False)


def _functional():
    from ..nn import functional

    return functional


def check_hardshrink(input: Tensor) -> None:
    """torch's dispatch error: hardshrink has floating-point kernels only."""
    if input._dtype.category != 2:
        raise NotImplementedError(f"\"hardshrink_cpu\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")


def check_prelu(input: Tensor, weight: Tensor) -> None:
    """ATen's prelu checks: one dtype, one weight per channel (dim 1) or a single one, weight at most 1-D."""
    if weight._dtype is not input._dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {SCALAR_NAMES[input._dtype.name]} and "
                           f"{SCALAR_NAMES[weight._dtype.name]}")
    if weight.numel() != 1:
        if input.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.ndim > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    if input._dtype.category != 2:
        raise NotImplementedError(f"\"prelu_cpu\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")


def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    """Tensor.hardshrink: nn.functional.hardshrink(self, lambd)."""
    if not isinstance(lambd, (numbers.Number, Tensor)):
        raise TypeError(f"hardshrink(): argument 'lambd' (position 1) must be Number, not {type(lambd).__name__}")
    return _functional().hardshrink(self, lambd)


def _prelu_method(self: Tensor, weight: Tensor) -> Tensor:
    """Tensor.prelu: nn.functional.prelu(self, weight)."""
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' (position 1) must be Tensor, not {type(weight).__name__}")
    return _functional().prelu(self, weight)


for _name, _method in (("hardshrink", _hardshrink_method), ("prelu", _prelu_method)):
    _method.__name__ = _name
    _method.__qualname__ = f"Tensor.{_name}"
    export(_method, name=_name, function=False)


def _int_tuple(name: str, position: int, value) -> tuple:
    """torch's parsing of a `tuple of ints` argument."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"empty_permuted(): argument '{name}' (position {position}) must be tuple of ints, not "
                        f"{type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, numbers.Integral) or isinstance(item, bool):
            raise TypeError(f"empty_permuted(): argument '{name}' failed to unpack the object at pos {index + 1} "
                            f"with error \"type must be tuple of ints,but got {type(item).__name__}\"")
    return tuple(int(item) for item in value)


@export(method=False)
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """An uninitialized dense tensor of `size` whose dims lie in memory in the order `physical_layout`
    (outermost first): t.stride(physical_layout[i]) is the i-th contiguous stride of the permuted sizes."""
    from .creation import empty

    size = _int_tuple("size", 1, size)
    physical_layout = _int_tuple("physical_layout", 2, physical_layout)
    ndim = len(size)
    if len(physical_layout) != ndim:
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {ndim} is not equal to len(physical_layout) = {len(physical_layout)}")
    seen = set()
    for index, dim in enumerate(physical_layout):
        if not 0 <= dim < ndim:
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {ndim - 1}, but got {dim} at "
                               f"index {index}).  NB: negative dims not currently supported; file an issue if you "
                               "want it.")
        if dim in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(dim)
    physical = empty(tuple(size[dim] for dim in physical_layout), dtype=dtype, layout=layout, device=device,
                     pin_memory=pin_memory, requires_grad=requires_grad)  # torch's errors for sizes and dtypes
    inverse = [0] * ndim
    for index, dim in enumerate(physical_layout):
        inverse[dim] = index
    # a fresh tensor over the permuted array (not a view of `physical`), as torch's as_strided result has no _base
    result = Tensor._make(physical.detach().permute(inverse)._data, physical._dtype, physical._device)
    if requires_grad:
        result.requires_grad_(True)
    return result
