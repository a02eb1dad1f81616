"""Factory functions: tensor, as_tensor, from_numpy, zeros/ones/full/empty(+_like), arange, linspace, eye ...

dtype inference follows torch.tensor: Python bools -> bool, ints -> int64,
floats -> the default dtype, complex -> the default complex dtype; NumPy arrays,
NumPy scalars and tensors keep their dtype; a list takes the promotion of its
elements.  Ranges compute their values the way torch's CPU kernels do (see
`arange`, `linspace`), so the last bits agree.
"""

from __future__ import annotations

import collections.abc
import math
import numbers
import warnings

import numpy as np

from .. import _dispatch, _runtime
from .. import _dtype as dt
from .._backends import MetaArray, to_device
from .._device import as_device
from .._dispatch import device_module
from .._tensor import SCALAR_NAMES, Storage, Tensor
from ._api import export
from ._shapes import array_order, empty_in_order, format_order


def _refuse_quantized(dtype: dt.dtype) -> None:
    """NOTE [ Quantized dtypes ] (ember/_dtype.py): only quantize_per_tensor / quantize_per_channel make them."""
    if dtype.category < 0:
        raise RuntimeError(f"ember cannot create a {dtype} tensor this way; use ember.quantize_per_tensor or "
                           "ember.quantize_per_channel")


def _finish(array, dtype, device, requires_grad: bool) -> Tensor:
    _refuse_quantized(dtype)
    device = as_device(device)
    if device.type == "meta":
        array = MetaArray(np.shape(array), dtype.np_dtype)
    elif device.type != "cpu":
        array = to_device(array, device)  # a copy onto the device (the current one for bare 'cuda')
    return _with_grad(Tensor._make(array, dtype, device), requires_grad)


def _with_grad(tensor: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if tensor._dtype.category < 2:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        tensor.requires_grad_(True)
    return tensor


def _size_error(name: str, got) -> TypeError:
    return TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not {type(got).__name__}")


def _sizes(size, name: str = "empty") -> tuple:
    """A size given as varargs, a tuple/list/Size, or one int (0-d integer tensors count as ints)."""
    if len(size) == 1 and not _is_size_int(size[0]):
        if isinstance(size[0], Tensor) or not isinstance(size[0], collections.abc.Iterable):
            raise _size_error(name, size[0])
        size = tuple(size[0])
    elif len(size) > 1 and not _is_size_int(size[0]) and isinstance(size[0], collections.abc.Iterable):
        raise TypeError(f"{name}() takes 1 positional argument but {len(size)} were given")
    out = []
    for position, n in enumerate(size):
        if not _is_size_int(n):
            raise TypeError(
                f"{name}(): argument 'size' failed to unpack the object at pos {position + 1} with error \"type "
                f"must be tuple of ints,but got {type(n).__name__}\""
            )
        out.append(int(n))
    for n in out:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {out}")
    return tuple(out)


def _is_size_int(value) -> bool:
    if isinstance(value, Tensor):
        return value.ndim == 0 and value._dtype.category == 1
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _factory_dtype(dtype, out, default=None) -> dt.dtype:
    """An explicit dtype, else out's dtype, else the default (the default float dtype if not given)."""
    if dtype is not None:
        _refuse_quantized(dtype)
        return dtype
    if out is not None:
        _refuse_quantized(out._dtype)
        return out._dtype
    return default or dt.get_default_dtype()


def _creation_out(array, dtype, device, requires_grad, out):
    if device is None and out is not None:
        device = out._device
    result = _finish(array, dtype, device, requires_grad)
    if out is not None:
        from ._api import write_out

        return write_out(out, result)
    return result


# ---------------------------------------------------------------- from data

_PLAIN_SCALARS = (bool, int, float, complex)
_PLAIN_SET = set(_PLAIN_SCALARS)


def _is_sequence(obj) -> bool:
    """Python sequences torch.tensor descends into when measuring shapes (not tensors, strings or bytes)."""
    if isinstance(obj, (list, tuple, range, np.ndarray)):
        return True
    return isinstance(obj, collections.abc.Sequence) and not isinstance(obj, (str, bytes, Tensor))


def _scalar_dtype(obj) -> dt.dtype:
    if isinstance(obj, (bool, np.bool_)):
        return dt.bool_
    if isinstance(obj, numbers.Integral) and not isinstance(obj, np.integer):
        return dt.int64
    if isinstance(obj, np.generic):
        return dt.from_numpy_dtype(obj.dtype)
    if isinstance(obj, numbers.Real):
        return dt.get_default_dtype()
    if isinstance(obj, numbers.Complex):
        return dt.default_complex_dtype()
    if isinstance(obj, str):
        raise TypeError("new(): invalid data type 'str'")
    raise RuntimeError(f"Could not infer dtype of {type(obj).__name__}")


def _infer_dtype(data) -> dt.dtype:
    """The dtype torch.tensor picks for `data`: the promotion over every element; empty -> default dtype."""
    if isinstance(data, Tensor):
        return data._dtype
    if isinstance(data, np.ndarray):
        return dt.from_numpy_dtype(data.dtype)
    if isinstance(data, (list, tuple, range)) or _is_sequence(data):
        kinds = set(map(type, data))
        if kinds and kinds <= _PLAIN_SET:
            return _plain_dtype(kinds)
        result = None
        for item in data:
            if type(item) in _PLAIN_SCALARS:
                item_dtype = _scalar_dtype(item)
            else:
                item_dtype = _infer_dtype(item)
            result = item_dtype if result is None else dt.promote_types(result, item_dtype)
        return result or dt.get_default_dtype()
    return _scalar_dtype(data)


def _plain_dtype(kinds: set) -> dt.dtype:
    """The promoted dtype of a list holding only Python bools/ints/floats/complexes."""
    if complex in kinds:
        return dt.default_complex_dtype()
    if float in kinds:
        return dt.get_default_dtype()
    return dt.int64 if int in kinds else dt.bool_


def _measure(data) -> list:
    """Sizes from the first element at each level (torch's compute_sizes)."""
    sizes = []
    while _is_sequence(data):
        length = len(data)
        sizes.append(length)
        if length == 0:
            break
        if isinstance(data, np.ndarray):
            sizes.extend(data.shape[1:])
            break
        data = data[0]
    return sizes


def _leaf_value(obj, target: dt.dtype):
    """One element as a Python number (tensors and NumPy scalars of one element give their item)."""
    if type(obj) in _PLAIN_SCALARS:
        return obj
    if isinstance(obj, Tensor):
        if obj.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return obj.item()
    if isinstance(obj, (np.generic, np.ndarray)):
        if np.size(obj) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return obj.item() if obj.dtype != dt.bfloat16.np_dtype else float(obj)
    if isinstance(obj, numbers.Number):
        return obj
    if target.category <= 1:
        raise TypeError(f"'{type(obj).__name__}' object cannot be interpreted as an integer")
    raise TypeError(f"must be real number, not {type(obj).__name__}")


def _store(obj, sizes, dim: int, flat: list, target: dt.dtype) -> None:
    """Append obj's elements to `flat`, checking it against sizes[dim:] with torch's errors."""
    if dim == len(sizes):
        flat.append(_leaf_value(obj, target))
        return
    if isinstance(obj, Tensor):
        obj = list(obj.unbind(0)) if obj.ndim else obj
    elif isinstance(obj, np.ndarray):
        obj = list(obj) if obj.ndim else obj
    if not (_is_sequence(obj) or isinstance(obj, list)):
        raise TypeError("not a sequence")
    if len(obj) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(obj)})")
    if dim == len(sizes) - 1 and set(map(type, obj)) <= _PLAIN_SET:
        flat.extend(obj)
        return
    for item in obj:
        _store(item, sizes, dim + 1, flat, target)


def _check_complex_to_real(flat: list, target: dt.dtype) -> None:
    if not target.is_complex:
        for value in flat:
            if isinstance(value, complex):
                raise TypeError("must be real number, not complex")


def _checked_integers(flat: list, target: dt.dtype):
    """Python values -> int64 with torch's overflow errors for an integral target."""
    overflow = RuntimeError(f"value cannot be converted to type {target.name} without overflow")
    if target is dt.uint64 and set(map(type, flat)) <= {int, bool}:  # Python's unsigned conversion, as torch's
        if any(value < 0 for value in flat):
            raise OverflowError("can't convert negative int to unsigned")
        if any(value >= 2**64 for value in flat):
            raise OverflowError("int too big to convert")
        return np.array(flat, dtype=np.uint64)
    if set(map(type, flat)) <= {int, bool}:
        try:
            values = np.array(flat, dtype=np.int64)
        except OverflowError:
            raise ValueError("Overflow when unpacking long long") from None
    else:
        for value in flat:
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                raise ValueError("Overflow when unpacking long long")
        floats = np.array(flat, dtype=np.float64)
        if not np.isfinite(floats).all() or (np.abs(floats) >= 2.0**63).any():
            raise overflow
        values = np.trunc(floats).astype(np.int64)
    if target is not dt.bool_ and target is not dt.int64 and values.size:
        info = dt.iinfo(target)
        lowest = info.min if target.is_signed else -info.max
        if values.min() < lowest or values.max() > info.max:
            raise overflow
    return values


def _array_from_python(data, dtype: dt.dtype | None):
    """Nested Python data -> (NumPy array, dtype), as torch.tensor converts it."""
    inferred = _infer_dtype(data)
    target = dtype or inferred
    sizes = _measure(data)
    flat: list = []
    _store(data, sizes, 0, flat, target)
    _check_complex_to_real(flat, target)
    if target is dt.bool_:
        array = np.array([bool(v) for v in flat], dtype=np.bool_)
    elif target.category == 1:
        array = _checked_integers(flat, target).astype(target.np_dtype)
    elif target in dt.FLOAT8_DTYPES:
        array = dt.to_float8(np, np.array(flat, dtype=np.float64), target)
    else:
        working = np.complex128 if target.is_complex else np.float64
        array = np.array(flat, dtype=working).astype(target.np_dtype)
    return array.reshape(sizes), target


def _array_from(data, dtype: dt.dtype | None) -> tuple:
    if isinstance(data, Tensor):
        array, inferred = data.detach().cpu()._data, data._dtype
    elif isinstance(data, np.ndarray):
        array, inferred = data, dt.from_numpy_dtype(data.dtype)
    else:
        return _array_from_python(data, dtype)
    target = dtype or inferred
    return np.array(array, dtype=target.np_dtype, copy=True), target


@export(method=False)
def tensor(data, *, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A new tensor copying `data` (nested lists, scalars, NumPy arrays, tensors)."""
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        if data._device.type == "meta":
            return _finish(MetaArray(data.shape, (dtype or data._dtype).np_dtype), dtype or data._dtype,
                           device or data._device, requires_grad)
        if device is None:
            device = data._device
    array, dtype = _array_from(data, dtype)
    result = _finish(array, dtype, device, requires_grad)
    if _dispatch.tracer is not None:
        _dispatch.note_made(result)  # a copy of the data: new memory, though its array is a view of a temporary
    return result


@export(method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with `data` when it is already a tensor or array of the right dtype/device, else copy."""
    if isinstance(data, Tensor):
        return data.to(device=device or data._device, dtype=dtype or data._dtype)
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        tensor_ = from_numpy(data) if all(s >= 0 for s in data.strides) else tensor(data)
        return tensor_ if dtype is None else tensor_.to(dtype)
    return tensor(data, dtype=dtype, device=device)


@export(method=False)
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    """torch.asarray: share memory unless copy=True or a dtype/device change forces one."""
    if copy:
        if isinstance(obj, Tensor):
            out = obj.detach().to(device=device or obj._device, dtype=dtype or obj._dtype, copy=True)
            return _with_grad(out, requires_grad)
        return tensor(obj, dtype=dtype, device=device, requires_grad=requires_grad)
    out = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out = _with_grad(out.detach() if out._grad_fn is not None else out, True)
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
    if type(ndarray) is not np.ndarray:  # np.matrix, masked arrays: keep the memory, drop the subclass's semantics
        ndarray = ndarray.view(np.ndarray)
    return Tensor._make(ndarray, dt.from_numpy_dtype(ndarray.dtype), as_device("cpu"))


# ---------------------------------------------------------------- filled tensors

def cast_fill_value(value, dtype: dt.dtype):
    """A Python number converted to dtype as torch's checked scalar conversion does (fill_, full).

    Integers truncate floats and reject values outside their range (unsigned types accept negatives down
    to -max, which wrap); float32/float64 reject finite values beyond their range (half types round to inf);
    non-complex types reject a non-zero imaginary part.
    """
    _refuse_quantized(dtype)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise OverflowError("int too big to convert")
    if dtype is dt.bool_:
        return bool(value)
    type_name = dt.CONVERSION_TYPE_NAMES[dtype.name]
    overflow = RuntimeError(f"value cannot be converted to type {type_name} without overflow")
    if isinstance(value, complex) and not dtype.is_complex:
        if value.imag != 0:
            raise overflow
        value = value.real
    if dtype.category == 1:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise overflow
            value = int(value)
        info = dt.iinfo(dtype)
        lowest = info.min if dtype.is_signed else -info.max
        if not lowest <= value <= info.max:
            raise overflow
        return value % (info.max + 1) if not dtype.is_signed else int(value)
    if dtype in dt.FLOAT8_DTYPES:  # range-checked, then the float8 value torch's conversion makes
        value = value.real if isinstance(value, complex) else value
        if math.isfinite(value) and abs(value) > dt.finfo(dtype).max:
            raise overflow
        return float(dt.to_float8(np, np.array([value]), dtype)[0])
    if dtype in (dt.float32, dt.complex64):
        limit = float(np.finfo(np.float32).max)
        for part in (value.real, value.imag) if isinstance(value, complex) else (value,):
            if math.isfinite(part) and abs(part) > limit:
                raise overflow
    return value


def _filled(fill, size, dtype, device, requires_grad, out=None, order=None):
    """A new tensor of `size` filled with fill (None: uninitialised), or written into `out`; `order` (dims,
    innermost first) lays it out other than in C order (a *_like of a transposed or channels-last tensor), and
    is part of the recipe a compiled graph remakes it by."""
    dtype = _factory_dtype(dtype, out)
    if device is None and out is not None:
        device = out._device
    device = as_device(device)
    if device.type == "meta":
        result = Tensor._make(MetaArray(size, dtype.np_dtype), dtype, device)
    else:
        xp = device_module(device)
        if order is not None:
            array = empty_in_order(xp, tuple(size), dtype.np_dtype, list(order))
            if fill is not None:
                array[...] = fill
        elif fill is None:
            array = xp.empty(size, dtype.np_dtype)
        elif fill == 0:
            array = xp.zeros(size, dtype.np_dtype)
        else:
            array = xp.full(size, fill, dtype.np_dtype)
        result = Tensor._make(array, dtype, device)
    _with_grad(result, requires_grad)
    if out is not None:
        from ._api import write_out

        return write_out(out, result)
    if _dispatch.tracer is not None and not requires_grad:
        _dispatch.note_recipe(result, _filled, (fill, tuple(size), dtype, device, False),
                              {} if order is None else {"order": tuple(order)})
    return result


@export(method=False)
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          **kwargs) -> Tensor:
    return _filled(0, _keyword_size(size, kwargs, "zeros"), dtype, device, requires_grad, out)


@export(method=False)
def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
         **kwargs) -> Tensor:
    return _filled(1, _keyword_size(size, kwargs, "ones"), dtype, device, requires_grad, out)


@export(method=False)
def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=None, **kwargs) -> Tensor:
    size = _keyword_size(size, kwargs, "empty")
    order = format_order(memory_format, len(size)) if out is None else None  # channels-last strides, as torch's
    return _filled(None, size, dtype, device, requires_grad, out, order=order)


def _keyword_size(size, kwargs, name):
    """Positional sizes, or size=... given by keyword."""
    if "size" in kwargs:
        if size:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        size = (kwargs.pop("size"),)
    if kwargs:
        raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return _sizes(size, name)


def _fill_scalar(fill_value, name: str):
    if isinstance(fill_value, Tensor):
        if fill_value.ndim != 0:
            raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not Tensor")
        return fill_value.item()
    if not isinstance(fill_value, numbers.Number):
        raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    return fill_value


@export(method=False)
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of `size` filled with fill_value; the dtype is inferred from the value like torch.full."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    fill_value = _fill_scalar(fill_value, "full")
    if dtype is None:
        dtype = out._dtype if out is not None else dt.scalar_dtype(fill_value)
    return _filled(cast_fill_value(fill_value, dtype), _sizes((size,), "full"), dtype, device, requires_grad, out)


def _like(input, dtype, device):
    return input.shape, dtype or input._dtype, device if device is not None else input._device


def like_layout(result: Tensor, input: Tensor, memory_format) -> Tensor:
    """Give a just-made *_like result (C order) the layout `memory_format` asks for: the input's by default
    (NOTE [ preserve_format ] in _shapes.py), NHWC for torch.channels_last."""
    _batched_like(result, input)
    name = getattr(memory_format, "name", "preserve_format")
    if name == "contiguous_format":
        return result
    array = result._data
    if name in ("channels_last", "channels_last_3d"):
        order = format_order(memory_format, array.ndim)
    elif isinstance(input._data, MetaArray) or isinstance(array, MetaArray):
        return result
    else:
        order = array_order(input._data)
    if order is None or isinstance(array, MetaArray):
        return result
    relaid = empty_in_order(device_module(result._device), array.shape, array.dtype, order)
    relaid[...] = array
    result._data = relaid  # the result is new and has no views yet: its storage takes the new array
    result._storage.array = relaid
    return result


def like_order(input: Tensor, memory_format, ndim: int):
    """The dim order (innermost first) of a *_like result: the input's for preserve_format (NOTE
    [ preserve_format ] in _shapes.py), NHWC / NDHWC for the channels-last formats; None for C order."""
    name = getattr(memory_format, "name", "preserve_format")
    if name == "contiguous_format":
        return None
    if name in ("channels_last", "channels_last_3d"):
        return format_order(memory_format, ndim)
    if isinstance(input._data, MetaArray):
        return None
    return array_order(input._data)


def _filled_like(fill, input, dtype, device, requires_grad, memory_format) -> Tensor:
    size, dtype, device = _like(input, dtype, device)
    order = like_order(input, memory_format, len(size))
    return _batched_like(_filled(fill, size, dtype, device, requires_grad, order=order), input)


@export(method=False)
def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _filled_like(0, input, dtype, device, requires_grad, memory_format)


@export(method=False)
def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _filled_like(1, input, dtype, device, requires_grad, memory_format)


@export(method=False)
def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    return _filled_like(None, input, dtype, device, requires_grad, memory_format)


@export(method=False)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    _, checked_dtype, _ = _like(input, dtype, device)
    fill_value = cast_fill_value(_fill_scalar(fill_value, "full_like"), checked_dtype)
    return _filled_like(fill_value, input, dtype, device, requires_grad, memory_format)


@export(method=False)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor with the given strides (over a buffer just large enough)."""
    size = _sizes((size,), "empty_strided")
    stride = tuple(int(s) for s in stride)
    if len(stride) != len(size):
        raise RuntimeError("mismatch in length of strides and shape")
    dtype = dtype or dt.get_default_dtype()
    _refuse_quantized(dtype)
    device = as_device(device)
    itemsize = dtype.itemsize
    if device.type == "meta":
        tensor_ = Tensor._make(MetaArray(size, dtype.np_dtype, tuple(s * itemsize for s in stride)), dtype, device)
        return _with_grad(tensor_, requires_grad)
    extent = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    xp = device_module(device)
    buffer = xp.empty(extent, dtype.np_dtype)
    array = xp.lib.stride_tricks.as_strided(buffer, size, tuple(s * itemsize for s in stride))
    return _with_grad(Tensor._make(array, dtype, device, Storage(buffer)), requires_grad)


def _batched_like(result: Tensor, input: Tensor) -> Tensor:
    """Under vmap a *_like or new_* of a batched tensor is batched, as torch's: copy its vmap mark
    (ember/func/_batching.py), so that writing batched values into it in place is allowed."""
    levels = input.__dict__.get("_vmap_levels")
    if levels:
        result.__dict__["_vmap_levels"] = levels
    return result


def _new(fill, name):
    def method(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kwargs):
        return _batched_like(_filled(fill, _keyword_size(size, kwargs, name), dtype or self._dtype,
                                     device if device is not None else self._device, requires_grad), self)

    method.__name__ = name
    method.__doc__ = f"Tensor.{name}: like torch.{name[4:]}, with this tensor's dtype and device by default."
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False) -> Tensor:
    dtype = dtype or self._dtype
    fill_value = cast_fill_value(_fill_scalar(fill_value, "new_full"), dtype)
    return _batched_like(_filled(fill_value, _sizes((size,), "new_full"), dtype,
                                 device if device is not None else self._device, requires_grad), self)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    if isinstance(data, Tensor):
        data = data.detach()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tensor(data, dtype=dtype or self._dtype, device=device if device is not None else self._device,
                      requires_grad=requires_grad)


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, layout=None,
                      pin_memory=False):
    return empty_strided(size, stride, dtype=dtype or self._dtype, device=device if device is not None else
                         self._device, requires_grad=requires_grad)


new_zeros = _new(0, "new_zeros")
new_ones = _new(1, "new_ones")
new_empty = _new(None, "new_empty")
for _name, _fn in (("new_zeros", new_zeros), ("new_ones", new_ones), ("new_empty", new_empty),
                   ("new_full", new_full), ("new_tensor", new_tensor), ("new_empty_strided", new_empty_strided)):
    export(_fn, name=_name, function=False)


def legacy_new(*args, device=None, **kwargs) -> Tensor:
    """torch.Tensor(...): Tensor(*sizes), Tensor(Size), Tensor(sequence), Tensor(tensor); always the default dtype."""
    if kwargs:
        types = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(
            f"new() received an invalid combination of arguments - got ({types}), but expected one of:\n"
            " * (*, torch.device device = None)\n * (torch.Storage storage)\n * (Tensor other)\n"
            " * (tuple of ints size, *, torch.device device = None)\n * (object data, *, torch.device device = None)\n"
        )
    if device is not None and as_device(device).type != "cpu":
        raise RuntimeError(
            f"legacy constructor expects device type: cpu but device type: {as_device(device).type} was passed"
        )
    return legacy_construct(args, dt.get_default_dtype(), None)


def legacy_construct(args: tuple, dtype, device) -> Tensor:
    """The legacy constructors' argument forms (torch.Tensor(...) and Tensor.new(...)): none, sizes or a Size,
    a sequence of data, or a tensor (returned as is)."""
    if not args:
        return empty(0, dtype=dtype, device=device)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        return first
    if all(_is_size_int(a) for a in args) or (len(args) == 1 and type(first).__name__ == "Size"):
        return empty(*args, dtype=dtype, device=device)
    if len(args) == 1 and _is_sequence(first):
        return tensor(first, dtype=dtype, device=device)
    if len(args) == 1:
        raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
    raise TypeError(f"new() received an invalid combination of arguments - got "
                    f"({', '.join(type(a).__name__ for a in args)})")


# ---------------------------------------------------------------- ranges


def _scalar(value, name: str = "end", position: int = 1):
    if isinstance(value, Tensor):
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if value is not None and not isinstance(value, numbers.Number):
        raise TypeError(f"arange(): argument '{name}' (position {position}) must be Number, not "
                        f"{type(value).__name__}")
    return value


def _range_checks(start, end, step) -> None:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start:g} -> {end:g}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def _trunc_div(a: int, b: int) -> int:
    """C++ integer division (rounds toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _no_range_kernel(kernel: str, dtype: dt.dtype) -> None:
    if dtype is dt.bool_ or (dtype.is_complex and kernel == "arange_cpu"):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES[dtype.name]}\'')


def _range_values(start, step, count: int, dtype: dt.dtype):
    """start + i * step for i < count, in torch's accumulate type (int64, double; float32 for half types)."""
    if dtype.category == 1:
        return (int(start) + np.arange(count, dtype=np.int64) * int(step)).astype(dtype.np_dtype)
    working = np.float32 if dtype in (dt.float16, dt.bfloat16) else np.float64
    index = np.arange(count, dtype=working)
    return (working(start) + index * working(step)).astype(dtype.np_dtype)


@export(method=False)
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Values from start (inclusive) to end (exclusive) by step; int64 unless a bound is a float."""
    start, end, step = _scalar(start, "start", 1), _scalar(end, "end", 2), _scalar(step, "step", 3)
    if end is None:
        start, end = 0, start
    integral = all(isinstance(v, numbers.Integral) for v in (start, end, step))
    dtype = _factory_dtype(dtype, out, dt.int64 if integral else None)
    _no_range_kernel("arange_cpu", dtype)
    _range_checks(start, end, step)
    if dtype is dt.int64:
        # torch computes int64 ranges entirely in (truncated) integers
        start_i, end_i, step_i = int(start), int(end), int(step)
        if step_i == 0:
            raise ValueError("step must be nonzero")
        sign = 1 if step_i > 0 else -1
        count = _trunc_div(end_i - start_i + step_i - sign, step_i)
    else:
        count = math.ceil((float(end) - float(start)) / float(step))
    if count > 2**63 - 1:
        raise RuntimeError("invalid size, possible overflow?")
    values = _range_values(start, step, max(count, 0), dtype)
    result = _creation_out(values, dtype, device, requires_grad, out)
    if _dispatch.tracer is not None and out is None and not requires_grad:
        _dispatch.note_recipe(result, arange, (start, end, step), {"dtype": dtype, "device": result.device})
    return result


@export(method=False, name="range")
def range_(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Deprecated torch.range: like arange but end inclusive and the default float dtype."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use torch.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    start, end, step = _scalar(start, "start", 1), _scalar(end, "end", 2), _scalar(step, "step", 3)
    dtype = _factory_dtype(dtype, out)
    _range_checks(start, end, step)
    count = int(math.floor((float(end) - float(start)) / float(step))) + 1
    return _creation_out(_range_values(start, step, count, dtype), dtype, device, requires_grad, out)


def _cast_scalar(value, dtype: dt.dtype):
    """A Python number converted to dtype as a C++ Scalar.to<T>() does (integers wrap)."""
    if dtype.category == 1:
        return np.array(int(value.real if isinstance(value, complex) else value), np.int64).astype(dtype.np_dtype)
    if not dtype.is_complex and isinstance(value, complex):
        value = value.real
    return np.array(value, dtype.np_dtype)


def _steps(steps) -> int:
    steps = steps.item() if isinstance(steps, Tensor) else steps
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return int(steps)


def _range_dtype(dtype, out, start, end):
    complex_bounds = isinstance(start, complex) or isinstance(end, complex)
    return _factory_dtype(dtype, out, dt.default_complex_dtype() if complex_bounds else None)


def fused_multiply_add_float32(a, b, c) -> np.ndarray:
    """float32 `a * b + c` rounded once (an exact fma), emulated in float64.

    The float32 product is exact in float64; the sum's float64 rounding error comes from TwoSum.  Rounding that
    sum to float32 again is wrong only when it sits exactly halfway between two float32 neighbours while the
    exact value does not: then the error's sign says which neighbour is nearest.
    """
    product = np.asarray(a, np.float32).astype(np.float64) * np.asarray(b, np.float32).astype(np.float64)
    addend = np.asarray(c, np.float32).astype(np.float64)
    total = product + addend
    back = total - product
    error = (product - (total - back)) + (addend - back)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = total.astype(np.float32)
        gap = total - rounded.astype(np.float64)
        neighbour = np.nextafter(rounded, np.where(gap > 0, np.inf, -np.inf).astype(np.float32))
        halfway = (gap != 0) & (2 * gap == neighbour.astype(np.float64) - rounded.astype(np.float64))
    return np.where(halfway & (error != 0) & ((error > 0) == (gap > 0)), neighbour, rounded)


def _linspace_float32(first: np.float32, last: np.float32, steps: int) -> np.ndarray:
    """torch's float32 linspace on a CPU whose kernels fuse multiply-adds (NOTE [ torch's CPU kernel
    arithmetic ] in ember/_runtime.py): fma(step, i, start) for the first half, fma(-step, steps-1-i, end)."""
    step = np.float32(last - first) / np.float32(steps - 1)
    index = np.arange(steps)
    lower = fused_multiply_add_float32(step, index, first)
    upper = fused_multiply_add_float32(-step, steps - 1 - index, last)
    return np.where(index < steps // 2, lower, upper)


def _linspace_values(start, end, steps: int, dtype: dt.dtype):
    """torch's linspace kernel: start + step*i for the first half, end - step*(steps-1-i) for the second.

    Integral results compute in double; floating ones in the result type itself (half types round after
    every operation, as c10::Half arithmetic does; float32 rounds `start + step*i` once where torch's kernels
    fuse multiply-adds).
    """
    first, last = _cast_scalar(start, dtype), _cast_scalar(end, dtype)
    if dtype is dt.float32 and _runtime.kernels_fuse_multiply_add():
        return _linspace_float32(first, last, steps)
    index = np.arange(steps)
    from_end = steps - 1 - index
    halfway = steps // 2
    if dtype.category == 1:
        step = (float(last) - float(first)) / (steps - 1)
        values = np.where(index < halfway, float(first) + step * index, float(last) - step * from_end)
        return values.astype(dtype.np_dtype)
    target = dtype.np_dtype
    working = np.complex64 if dtype.is_complex and dtype is dt.complex64 else np.complex128 if dtype.is_complex \
        else np.float64 if dtype is dt.float64 else np.float32

    def rounded(values):
        return np.asarray(values, working).astype(target).astype(working)

    first, last = rounded(first), rounded(last)
    step = rounded((last - first) / working(steps - 1))
    lower = rounded(first + rounded(step * index.astype(working)))
    upper = rounded(last - rounded(step * from_end.astype(working)))
    return np.where(index < halfway, lower, upper).astype(target)


@export(method=False)
def linspace(start, end, steps: int, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """`steps` evenly spaced values from start to end inclusive (computed like torch's kernel)."""
    start, end = _scalar(start, "start", 1), _scalar(end, "end", 2)
    steps = _steps(steps)
    dtype = _range_dtype(dtype, out, start, end)
    _no_range_kernel("linspace_cpu", dtype)
    if steps == 0:
        values = np.empty(0, dtype.np_dtype)
    elif steps == 1:
        values = _cast_scalar(start, dtype).reshape(1)
    else:
        values = _linspace_values(start, end, steps, dtype)
    return _creation_out(values, dtype, device, requires_grad, out)


@export(method=False)
def logspace(start, end, steps: int, base: float = 10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """base ** linspace(start, end, steps), with the exponents computed in double like torch's kernel."""
    start, end = _scalar(start, "start", 1), _scalar(end, "end", 2)
    steps = _steps(steps)
    dtype = _range_dtype(dtype, out, start, end)
    _no_range_kernel("logspace_cpu", dtype)
    first, last = _cast_scalar(start, dtype), _cast_scalar(end, dtype)
    working = np.complex128 if dtype.is_complex else np.float64
    if steps == 0:
        exponents = np.empty(0, working)
    elif steps == 1:
        exponents = np.asarray(first, working).reshape(1)
    else:
        step = (np.asarray(last - first, working)) / (steps - 1)
        index = np.arange(steps)
        exponents = np.where(index < steps // 2, first.astype(working) + step * index.astype(working),
                             last.astype(working) - step * (steps - index - 1))
    values = np.power(np.asarray(base, working), exponents)
    return _creation_out(values.astype(dtype.np_dtype), dtype, device, requires_grad, out)


@export(method=False)
def eye(n: int, m: int | None = None, *, out=None, dtype=None, layout=None, device=None,
        requires_grad=False) -> Tensor:
    """The n x m identity matrix."""
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m is not None and m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dtype = _factory_dtype(dtype, out)
    result = _creation_out(np.eye(n, n if m is None else m, dtype=dtype.np_dtype), dtype, device, requires_grad, out)
    if _dispatch.tracer is not None and out is None and not requires_grad:
        _dispatch.note_recipe(result, eye, (n, m), {"dtype": dtype, "device": result.device})
    return result


@export(method=False)
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return tensor(s, dtype=dtype or dt.get_default_dtype(), device=device, requires_grad=requires_grad)
