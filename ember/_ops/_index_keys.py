"""Index keys: torch's __getitem__/__setitem__ key semantics normalised for NumPy, and scalar conversion.

See NOTE [ torch's indexing, in two stages ].  Used by ember/_ops/indexing.py.
"""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from typing import NamedTuple

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._backends import MetaArray
from .._tensor import Tensor

# ---------------------------------------------------------------- keys
#
# NOTE [ torch's indexing, in two stages ]
# torch applies a key left to right (python_variable_indexing.cpp, applySlicing): ints and 0-d integer
# tensors `select` (drop a dim), slices slice, None and Python bools insert a dim, Ellipsis skips dims;
# these give a view.  Integer and boolean tensors/lists are collected and applied afterwards, in one
# advanced-indexing step on that view (a copy).  This differs from NumPy, where ints count as advanced
# indices when arrays are present (x[1, :, [0, 4]] is (2, 4) in NumPy, (4, 2) in torch), so a key is
# normalised into the same two stages: `basic`, a NumPy basic key for the input, and `advanced`, a NumPy
# advanced key for the result of `basic`.  NumPy's rules for the second stage alone are torch's.

_INDEX_TYPES_MESSAGE = "tensors used as indices must be long, int, byte or bool tensors"
_SEQUENCE_AS_TUPLE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; "
    "use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[torch.tensor(seq)], which will result either in an error or a different result"
)


class IndexKey(NamedTuple):
    """A normalised key: `basic` (NumPy basic key, ends with Ellipsis, or None) then `advanced` (or None)."""

    basic: tuple | None
    advanced: tuple | None


def _sequence_as_tuple(key) -> bool:
    """NumPy's old heuristic, kept by torch: a short list holding a sequence, slice, tensor, None or ... is a tuple."""
    if not isinstance(key, list) or len(key) >= 32:
        return False
    for item in key:
        if isinstance(item, (Tensor, list, tuple, slice, np.ndarray)) or item is None or item is Ellipsis:
            warnings.warn(_SEQUENCE_AS_TUPLE_WARNING, UserWarning, stacklevel=4)
            return True
    return False


def _as_tuple(key) -> tuple:
    if isinstance(key, tuple):
        return key
    if _sequence_as_tuple(key):
        return tuple(key)
    return (key,)


def _specified_dims(items) -> int:
    """Dims a key consumes, counted as torch does (a bool/byte tensor consumes its ndim; lists count one)."""
    count = 0
    for item in items:
        if isinstance(item, Tensor):
            count += item.ndim if item._dtype in (dt.bool_, dt.uint8) else 1
        elif item is not None and item is not Ellipsis and not isinstance(item, (bool, np.bool_)):
            count += 1
    return count


def _traced_index(tensor, array, read: bool = True):
    """ember.compile: tell a capture which tensor an index array came from (None: a Python sequence, a
    constant of the trace); read=True: a 0-d array here is read into Python."""
    tracer = _dispatch.tracer
    if tracer is not None and hasattr(tracer, "index_source"):
        tracer.index_source(tensor, array, read)
    return array


def _warn_uint8_index() -> None:
    """torch's warning for a uint8 mask as an index (IndexingUtils.h; it still indexes as a boolean mask)."""
    import warnings

    from ._api import _user_stacklevel

    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.",
                  UserWarning, stacklevel=_user_stacklevel())


def _index_array(item):
    """An integer/boolean tensor, list or NumPy array as a NumPy int64 or bool array (IndexError otherwise)."""
    if isinstance(item, Tensor):
        under_vmap = getattr(_dispatch.forward_ad, "index_tensor", None)  # (ember/func/_batching.py)
        if under_vmap is not None:
            under_vmap(item, item._dtype in (dt.bool_, dt.uint8))
        if item._dtype in (dt.bool_, dt.uint8):
            if item._dtype is dt.uint8:
                _warn_uint8_index()
            if isinstance(item._data, MetaArray):
                raise NotImplementedError("indexing with a boolean mask on the meta device has a data-dependent shape")
            return _traced_index(item, np.asarray(item._data, bool))
        if item._dtype not in (dt.int64, dt.int32):
            raise IndexError(_INDEX_TYPES_MESSAGE)
        if isinstance(item._data, MetaArray):
            return np.zeros(item._data.shape, np.int64)  # shapes only: bounds are not checked on meta
        return _traced_index(item, np.asarray(item._data, np.int64))
    if isinstance(item, np.ndarray):
        array = item
    else:
        array = np.array(_plain_list(item))
        if _dispatch.tracer is not None and array.dtype.kind in "iub":
            _traced_index(None, array)
    if array.dtype == np.bool_:
        return array
    if array.dtype == np.uint8:
        _warn_uint8_index()
        return array.astype(bool)
    if array.dtype.kind == "f":  # a Python list or NumPy array goes through torch.tensor(..., dtype=long)
        return array.astype(np.int64)
    if array.dtype.kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    if array.dtype.kind not in "iu" or array.dtype == np.uint64:
        raise IndexError(_INDEX_TYPES_MESSAGE)
    return array.astype(np.int64)


def _plain_list(item):
    if isinstance(item, Tensor):
        return item.item() if item.ndim == 0 else item.tolist()
    if isinstance(item, (list, tuple)):
        return [_plain_list(i) for i in item]
    return item


def _as_int(value) -> int:
    return int(value.item()) if isinstance(value, Tensor) else operator.index(value)


def _slice(item) -> slice:
    start, stop, step = (None if v is None else _as_int(v) for v in (item.start, item.stop, item.step))
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if step is not None and step < 0:
        raise ValueError("step must be greater than zero")
    return slice(start, stop, step)


def _select(size: int, index: int, position: int) -> int:
    if index < -size or index >= size:
        raise IndexError(f"index {index} is out of bounds for dimension {position} with size {size}")
    return index


def _as_index_item(item):
    """A key item as ('int', n) | ('slice', s) | ('none',) | ('ellipsis',) | ('bool', b) | ('array', a)."""
    if item is None:
        return ("none",)
    if item is Ellipsis:
        return ("ellipsis",)
    if isinstance(item, (bool, np.bool_)):
        return ("bool", bool(item))
    if isinstance(item, numbers.Integral):
        return ("int", int(item))
    if isinstance(item, slice):
        return ("slice", _slice(item))
    if isinstance(item, range):  # torch indexes with any Python sequence (`x[range(n), y]`), as torch.tensor(seq)
        item = list(item)
    if isinstance(item, (Tensor, np.ndarray)) and item.ndim == 0:
        array = _index_array(item)
        return ("bool", bool(array)) if array.dtype == np.bool_ else ("int", int(array))
    if isinstance(item, (Tensor, np.ndarray, list, tuple)):
        return ("array", _index_array(item))
    raise IndexError(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got "
        f"{type(item).__name__})"
    )


def normalize_key(tensor: Tensor, key) -> IndexKey:
    """torch's key semantics as an IndexKey; see NOTE [ torch's indexing, in two stages ]."""
    items = _as_tuple(key)
    shape = tensor.shape
    ndim = len(shape)
    specified = _specified_dims(items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, arrays = [], []  # arrays: (position in the sliced result, array)
    sliced_shape = []
    source = 0  # the input dim the next item applies to
    for position, item in enumerate(items):
        kind, *value = _as_index_item(item)
        if kind == "int":
            _select(shape[source], value[0], position)
            basic.append(value[0])
            source += 1
        elif kind == "slice":
            basic.append(value[0])
            sliced_shape.append(len(range(*value[0].indices(shape[source]))))
            source += 1
        elif kind == "none":
            basic.append(None)
            sliced_shape.append(1)
        elif kind == "bool":
            basic.append(None)
            arrays.append((len(sliced_shape), np.arange(1) if value[0] else np.zeros(0, np.int64)))
            sliced_shape.append(1)
        elif kind == "ellipsis":
            skip = min(ndim - specified, ndim - source)
            basic.extend([slice(None)] * skip)
            sliced_shape.extend(shape[source:source + skip])
            source += skip
        else:
            array = value[0]
            width = array.ndim if array.dtype == np.bool_ else 1
            arrays.append((len(sliced_shape), array))
            basic.extend([slice(None)] * width)
            sliced_shape.extend(shape[source:source + width])
            source += width
    sliced_shape.extend(shape[source:])
    trivial = all(isinstance(b, slice) and b == slice(None) for b in basic)
    basic_key = None if trivial else tuple(basic) + (Ellipsis,)
    if not arrays:
        return IndexKey(basic_key, None)
    return IndexKey(basic_key, advanced_key(tuple(sliced_shape), arrays))


def advanced_key(shape: tuple, arrays: list) -> tuple:
    """The NumPy key applying `arrays` [(dim, int64 or bool array)] to a tensor of `shape`, torch's checks first:
    mask shapes, then broadcasting of the index tensors, then bounds (messages as ATen's index kernels)."""
    expanded = []  # (dim, shape, the int array or None for a mask's component)
    key, next_dim = [], 0
    for dim, array in arrays:
        key.extend([slice(None)] * (dim - next_dim))
        key.append(array)
        next_dim = dim + (array.ndim if array.dtype == np.bool_ else 1)
        if array.dtype == np.bool_:
            for j in range(array.ndim):
                if dim + j >= len(shape) or array.shape[j] != shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask [{', '.join(map(str, array.shape))}] at index {j} does not match the "
                        f"shape of the indexed tensor [{', '.join(map(str, shape))}] at index {dim + j}"
                    )
            count = int(array.sum())
            expanded.extend((dim + j, (count,), None) for j in range(array.ndim))
        else:
            expanded.append((dim, array.shape, array))
    try:
        np.broadcast_shapes(*(s for _, s, _ in expanded))
    except ValueError:
        shapes = ", ".join("[" + ", ".join(map(str, s)) + "]" for _, s, _ in expanded)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}") \
            from None
    _check_index_bounds(shape, expanded)
    return tuple(key)


def _check_index_bounds(shape, expanded) -> None:
    bad = []
    for ordinal, (dim, _, array) in enumerate(expanded):
        if array is None or not array.size:
            continue
        size = shape[dim]
        if array.min() < -size or array.max() >= size:
            bad.append((ordinal, array, size))
    if not bad:
        return
    # the first offending element in iteration order, then the first index tensor at it (as ATen's loop)
    arrays = np.broadcast_arrays(*(array for _, array, _ in bad))
    flags = np.stack([(a < -size) | (a >= size) for a, (_, _, size) in zip(arrays, bad)], axis=-1).reshape(-1)
    where = int(np.argmax(flags))
    element, which = divmod(where, len(bad))
    ordinal, _, size = bad[which]
    value = int(arrays[which].reshape(-1)[element])
    raise IndexError(f"index {value} is out of bounds for dimension {ordinal} with size {size}")


def apply_key(array, key: IndexKey):
    """array[key] under torch's semantics (a view when key.advanced is None and basic is not all ints)."""
    if key.basic is not None:
        array = array[key.basic]
    advanced = key.advanced
    if advanced is not None:
        last = advanced[-1] if type(advanced) is tuple and advanced else None
        if (getattr(last, "ndim", 0) == 1 and last.dtype.kind in "iu"
                and all(type(part) is slice and part == slice(None) for part in advanced[:-1])):
            # one integer vector along one dim (index_select, x[idx]): take() is ~1.7x faster than fancy indexing,
            # and mode="wrap" (negative indices as torch's) another ~1.7x over take's default per-element check;
            # the range is checked first in two vector passes (callers check it too, except a compiled replay)
            axis = len(advanced) - 1
            size = array.shape[axis]
            if last.size and (size == 0 or last.min() < -size or last.max() >= size):
                return array.take(last, axis=axis)  # NumPy's IndexError names the bad index
            return array.take(last, axis=axis, mode="wrap")
        array = array[advanced]
    return array


def _zero_dim_key_error(tensor: Tensor, key) -> None:
    """torch's single-item fast paths on a 0-d tensor."""
    if tensor.ndim:
        return
    if isinstance(key, numbers.Integral) and not isinstance(key, (bool, np.bool_)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    if isinstance(key, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")



# Index assignment converts a Python scalar for a half tensor through double first, so its overflow names double.
_C_TYPE_NAMES = {**dt.CONVERSION_TYPE_NAMES, "float16": "double", "bfloat16": "double"}


def scalar_array(value, dtype: dt.dtype) -> np.ndarray:
    """A Python scalar as a 0-d array of `dtype`, with c10's overflow checks (RuntimeError as torch)."""
    if dtype is dt.bool_:
        return np.asarray(bool(value))
    if dtype.category == 3:
        return np.asarray(complex(value)).astype(dtype.np_dtype)
    overflow = RuntimeError(f"value cannot be converted to type {_C_TYPE_NAMES[dtype.name]} without overflow")
    if isinstance(value, complex):
        if value.imag != 0:
            raise overflow
        value = value.real
    if dtype.category == 1:
        if isinstance(value, float) and not math.isfinite(value):
            raise overflow
        info = np.iinfo(dtype.np_dtype)
        low = -int(info.max) if info.min == 0 else int(info.min)  # c10 lets -n wrap into unsigned types
        if value < low or value > info.max:
            raise overflow
        return np.asarray(int(value)).astype(dtype.np_dtype)
    if dtype is dt.float32 and math.isfinite(value) and abs(value) > float(np.finfo(np.float32).max):
        raise overflow
    with np.errstate(over="ignore"):
        return np.asarray(float(value), np.float64).astype(dtype.np_dtype)
