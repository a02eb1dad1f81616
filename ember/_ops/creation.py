"""Factory functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), arange, linspace, eye ...

dtype inference follows torch.tensor: Python bools -> bool, ints -> int64,
floats -> the default dtype, complex -> the default complex dtype; NumPy arrays
and tensors keep their dtype.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype as dt
from .._backends import MetaArray
from .._device import as_device
from .._dispatch import device_module
from .._tensor import Tensor
from ._api import export


def _finish(array, dtype, device, requires_grad: bool) -> Tensor:
    device = as_device(device)
    if device.type == "meta":
        array = MetaArray(np.shape(array), dtype.np_dtype)
    elif device.type != "cpu":
        array = device_module(device).asarray(array)
    tensor = Tensor._make(array, dtype, device)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


def _sizes(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (len(size) == 1 and hasattr(size[0], "__iter__")):
        size = tuple(size[0])
    out = []
    for n in size:
        if isinstance(n, Tensor):
            n = n.item()
        if not isinstance(n, numbers.Integral):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found element of type "
                            f"{type(n).__name__}")
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
        out.append(int(n))
    return tuple(out)


# ---------------------------------------------------------------- from data


def _infer_dtype(data) -> dt.dtype | None:
    """The dtype torch.tensor would pick for nested Python data."""
    if isinstance(data, Tensor):
        return data._dtype
    if isinstance(data, np.ndarray):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, np.generic):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (bool, np.bool_)):
        return dt.bool_
    if isinstance(data, numbers.Integral):
        return dt.int64
    if isinstance(data, numbers.Real):
        return dt.get_default_dtype()
    if isinstance(data, numbers.Complex):
        return dt.default_complex_dtype()
    if isinstance(data, (list, tuple)):
        result = None
        for item in data:
            item_dtype = _infer_dtype(item)
            if item_dtype is None:
                continue
            result = item_dtype if result is None else _promote_data(result, item_dtype)
        return result
    raise TypeError(f"Could not infer dtype of {type(data).__name__}")


def _promote_data(a: dt.dtype, b: dt.dtype) -> dt.dtype:
    return dt.promote_types(a, b)


def _to_nested(data, depth=0, shape=None):
    """Validate raggedness with torch's message, converting tensors to arrays."""
    if isinstance(data, Tensor):
        return data._data if data._dtype is not dt.bfloat16 else data._data.astype(np.float32)
    if isinstance(data, (list, tuple)):
        items = [_to_nested(item, depth + 1) for item in data]
        lengths = {len(item) if isinstance(item, (list, tuple)) else np.shape(item) for item in items}
        if len(items) > 1 and len(lengths) > 1:
            first = items[0]
            expected = len(first) if isinstance(first, (list, tuple)) else np.shape(first)
            for item in items[1:]:
                got = len(item) if isinstance(item, (list, tuple)) else np.shape(item)
                if got != expected:
                    raise ValueError(f"expected sequence of length {expected} at dim {depth + 1} (got {got})")
        return items
    return data


def _array_from(data, dtype: dt.dtype | None) -> tuple:
    if isinstance(data, Tensor):
        array, inferred = data._data, data._dtype
    elif isinstance(data, np.ndarray):
        array, inferred = data, dt.from_numpy_dtype(data.dtype)
    else:
        inferred = _infer_dtype(data)
        if inferred is None:
            inferred = dt.get_default_dtype()
        nested = _to_nested(data)
        working = inferred.np_dtype if inferred is not dt.bfloat16 else np.float32
        array = np.array(nested, dtype=working)
    target = dtype or inferred
    return np.array(array, dtype=target.np_dtype, copy=True), target


@export(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor copying `data` (nested lists, scalars, NumPy arrays, tensors)."""
    if isinstance(data, Tensor) and data._device.type == "meta":
        return _finish(MetaArray(data.shape, (dtype or data._dtype).np_dtype), dtype or data._dtype,
                       device or data._device, requires_grad)
    array, dtype = _array_from(data, dtype)
    return _finish(array, dtype, device, requires_grad)


@export(method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with `data` when it is already a tensor or array of the right dtype/device, else copy."""
    if isinstance(data, Tensor):
        return data.to(device=device or data._device, dtype=dtype or data._dtype)
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        tensor_ = from_numpy(data)
        return tensor_ if dtype is None else tensor_.to(dtype)
    return tensor(data, dtype=dtype, device=device)


@export(method=False)
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """torch.asarray: share memory unless copy=True or a dtype/device change forces one."""
    if copy:
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    out = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


@export(method=False)
def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing the NumPy array's memory (writes show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) "
        )
    return Tensor._make(ndarray, dt.from_numpy_dtype(ndarray.dtype), as_device("cpu"))


# ---------------------------------------------------------------- filled tensors


def _filled(fill, size, dtype, device, requires_grad, out=None):
    dtype = dtype or dt.get_default_dtype()
    device = as_device(device)
    if device.type == "meta":
        result = _finish(MetaArray(size, dtype.np_dtype), dtype, device, requires_grad)
    else:
        xp = device_module(device)
        if fill is None:
            array = xp.empty(size, dtype.np_dtype)
        elif fill == 0:
            array = xp.zeros(size, dtype.np_dtype)
        else:
            array = xp.full(size, fill, dtype.np_dtype)
        result = Tensor._make(array, dtype, device)
        if requires_grad:
            result.requires_grad_(True)
    if out is not None:
        from ._api import write_out

        return write_out(out, result)
    return result


@export(method=False)
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    return _filled(0, _sizes(size), dtype, device, requires_grad, out)


@export(method=False)
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    return _filled(1, _sizes(size), dtype, device, requires_grad, out)


@export(method=False)
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None) -> Tensor:
    return _filled(None, _sizes(size), dtype, device, requires_grad, out)


@export(method=False)
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of `size` filled with fill_value; the dtype is inferred from the value like torch.full."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value)
    return _filled(fill_value, _sizes((size,)), dtype, device, requires_grad, out)


def _like(input, dtype, device):
    return input.shape, dtype or input._dtype, device if device is not None else input._device


@export(method=False)
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    size, dtype, device = _like(input, dtype, device)
    return _filled(0, size, dtype, device, requires_grad)


@export(method=False)
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    size, dtype, device = _like(input, dtype, device)
    return _filled(1, size, dtype, device, requires_grad)


@export(method=False)
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    size, dtype, device = _like(input, dtype, device)
    return _filled(None, size, dtype, device, requires_grad)


@export(method=False)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    size, dtype, device = _like(input, dtype, device)
    return _filled(fill_value, size, dtype, device, requires_grad)


@export(method=False)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    return _filled(None, _sizes((size,)), dtype, device, requires_grad)


def _new(fill):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        sizes = _sizes(size) if fill != "full" else None
        return _filled(fill, sizes, dtype or self._dtype, device if device is not None else self._device,
                       requires_grad)

    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False) -> Tensor:
    return _filled(fill_value, _sizes((size,)), dtype or self._dtype,
                   device if device is not None else self._device, requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    return tensor(data, dtype=dtype or self._dtype, device=device if device is not None else self._device,
                  requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    return new_empty(self, size, dtype=dtype, device=device, requires_grad=requires_grad)


new_zeros = _new(0)
new_ones = _new(1)
new_empty = _new(None)
for _name, _fn in (("new_zeros", new_zeros), ("new_ones", new_ones), ("new_empty", new_empty),
                   ("new_full", new_full), ("new_tensor", new_tensor), ("new_empty_strided", new_empty_strided)):
    export(_fn, name=_name, function=False)


# ---------------------------------------------------------------- ranges


def _scalar(value):
    return value.item() if isinstance(value, Tensor) else value


@export(method=False)
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) by step; int64 unless a bound is a float."""
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
        dtype = dt.int64 if integral else dt.get_default_dtype()
    count = max(math.ceil((end - start) / step), 0)
    if dtype.category <= 1:
        values = start + np.arange(count, dtype=np.float64 if not isinstance(step, int) else np.int64) * step
    else:
        values = start + np.arange(count, dtype=np.float64) * step
    return _creation_out(values.astype(dtype.np_dtype), dtype, device, requires_grad, out)


def _creation_out(array, dtype, device, requires_grad, out):
    result = _finish(array, dtype, device, requires_grad)
    if out is not None:
        from ._api import write_out

        return write_out(out, result)
    return result


@export(method=False, name="range")
def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Deprecated torch.range: end inclusive."""
    return arange(start, end + step / 2 if isinstance(step, float) else end + step, step, dtype=dtype or
                  dt.get_default_dtype(), device=device, requires_grad=requires_grad)


@export(method=False)
def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive (computed like torch: symmetric halves)."""
    start, end = _scalar(start), _scalar(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or (dt.default_complex_dtype() if isinstance(start, complex) or isinstance(end, complex)
                      else dt.get_default_dtype())
    work = np.complex128 if dtype.is_complex else np.float64
    if steps == 1:
        values = np.array([start], dtype=work)
    else:
        step = (end - start) / max(steps - 1, 1)
        index = np.arange(steps, dtype=np.float64)
        halfway = steps // 2
        values = np.where(index < halfway, start + step * index, end - step * (steps - index - 1)).astype(work)
    if dtype.category == 1:
        values = np.trunc(values.real)
    return _creation_out(values.astype(dtype.np_dtype), dtype, device, requires_grad, out)


@export(method=False)
def logspace(start, end, steps: int, base: float = 10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    dtype = dtype or dt.get_default_dtype()
    exponents = linspace(start, end, steps, dtype=dt.float64)._data
    return _creation_out(np.power(base, exponents).astype(dtype.np_dtype), dtype, device, requires_grad, out)


@export(method=False)
def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None,
        requires_grad=False) -> Tensor:
    dtype = dtype or dt.get_default_dtype()
    return _creation_out(np.eye(n, n if m is None else m, dtype=dtype.np_dtype), dtype, device, requires_grad, out)


@export(method=False)
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return tensor(s, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)
