"""Tensor methods about storage and identity: storage() / storage_type() (torch's deprecated TypedStorage and
its legacy FloatStorage-style classes), set_, the deprecated out-of-place resize / resize_as, as_subclass,
record_stream, is_distributed and the read-only `name` attribute.

A tensor's storage is the `Storage` its views share (_tensor.py): its root array, whose bytes these methods
read as elements of the tensor's dtype.
"""

from __future__ import annotations

import functools
import math
import operator
import warnings

from .. import _dtype as dt
from .._tensor import SCALAR_NAMES, Storage, Tensor, UntypedStorage
from ._api import export

# ---------------------------------------------------------------- TypedStorage


class _TypedStorageWarning:
    warned = False  # torch warns once per process that TypedStorage is deprecated


def _warn_typed_storage_removal() -> None:
    if _TypedStorageWarning.warned:
        return
    _TypedStorageWarning.warned = True
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=3)


def _elements(storage: Storage, dtype: dt.dtype):
    """The storage's bytes as a flat array of `dtype` (a view when the root array is contiguous)."""
    array = storage.array
    flat = array.reshape(-1) if array.flags.c_contiguous else array.ravel(order="K")
    return flat.view(dtype.np_dtype)


class TypedStorage:
    """torch.TypedStorage: a storage seen as elements of one dtype (deprecated in torch; Tensor.storage())."""

    is_sparse = False
    dtype: dt.dtype = None

    def __init__(self, size_or_sequence=0, *, dtype=None, device=None, wrap_storage=None) -> None:
        from .._device import as_device

        self.dtype = dtype or type(self).dtype or dt.get_default_dtype()
        if wrap_storage is not None:
            self._storage = wrap_storage._storage if isinstance(wrap_storage, UntypedStorage) else wrap_storage
            self._device = as_device(device or "cpu")
            return
        from .creation import tensor, zeros

        if isinstance(size_or_sequence, int):
            data = zeros(size_or_sequence, dtype=self.dtype, device=device)
        else:
            data = tensor(list(size_or_sequence), dtype=self.dtype, device=device)
        self._storage, self._device = data._storage, data.device

    @classmethod
    def _wrap(cls, storage: Storage, dtype: dt.dtype, device) -> TypedStorage:
        result = object.__new__(cls)
        result._storage, result.dtype, result._device = storage, dtype, device
        return result

    @property
    def device(self):
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    def size(self) -> int:
        return self._storage.array.nbytes // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._storage.array.nbytes

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self.untyped().data_ptr()

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._storage)

    def _untyped_storage(self) -> UntypedStorage:
        return self.untyped()

    def tolist(self) -> list:
        return _elements(self._storage, self.dtype).tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __getitem__(self, index):
        values = _elements(self._storage, self.dtype)[index]
        return values.tolist() if hasattr(values, "tolist") else values

    def __setitem__(self, index, value) -> None:
        _elements(self._storage, self.dtype)[index] = value  # not a tensor op: no version bump, as torch

    def _get_legacy_storage_class(self):
        return _LEGACY.get(self.dtype) if self._device.type == "cpu" else None

    def __repr__(self) -> str:
        values = "\n".join(f" {value}" for value in self.tolist())
        return (f"{values}\n[torch.storage.TypedStorage(dtype={self.dtype}, device={self._device}) of size "
                f"{self.size()}]")


def _legacy_class(dtype: dt.dtype) -> type:
    name = f"{SCALAR_NAMES[dtype.name]}Storage"
    return type(name, (TypedStorage,), {"dtype": dtype, "__doc__": f"torch.{name}: a TypedStorage of {dtype}."})


_LEGACY = {dtype: _legacy_class(dtype) for dtype in dt.ALL_DTYPES}
for _storage_class in (TypedStorage, UntypedStorage, *_LEGACY.values()):
    export(_storage_class, method=False)


def storage(self: Tensor) -> TypedStorage:
    """The tensor's storage as a TypedStorage of its dtype (deprecated in torch: prefer untyped_storage())."""
    _warn_typed_storage_removal()
    return TypedStorage._wrap(self._storage, self._dtype, self._device)


def storage_type(self: Tensor) -> type:
    """The legacy storage class of the tensor's dtype: ember.FloatStorage for float32, and so on."""
    _warn_typed_storage_removal()
    return _LEGACY[self._dtype]


# ---------------------------------------------------------------- set_



def _set_error(source) -> TypeError:
    return TypeError(f"set_() received an invalid combination of arguments - got ({type(source).__name__}), but "
                     "expected one of:\n * ()\n * (torch.Storage source)\n * (torch.Storage source, int "
                     "storage_offset, tuple of ints size, tuple of ints stride = None)\n * (Tensor source)\n * "
                     "(Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)")


def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make self a tensor over another memory: set_() an empty one, set_(tensor) the source's storage, shape and
    strides (sharing its memory), set_(storage) all of a storage as 1-D, and set_(source, storage_offset, size,
    stride) a strided window of the source's storage."""
    self._check_inplace()
    # (self keeps its own version counter, bumped once, as torch's: Tensor._take_storage)
    if source is None:
        from .creation import empty

        fresh = empty(0, dtype=self._dtype, device=self._device)
        self._take_storage(fresh._storage, fresh._data)
    elif isinstance(source, Tensor):
        if source._dtype is not self._dtype:
            raise RuntimeError(f"Could not set tensor of type {dt.CPP_TYPE_NAMES[source._dtype.name]} to a tensor of "
                               f"type {dt.CPP_TYPE_NAMES[self._dtype.name]}")
        if size is None:
            self._take_storage(source._storage, source._data)
        else:
            self._take_storage(source._storage, _window(source._storage, self, storage_offset, size, stride))
    elif isinstance(source, (TypedStorage, UntypedStorage)):
        if isinstance(source, TypedStorage) and source.dtype is not self._dtype:
            raise RuntimeError(f"Expected a Storage of type {dt.CPP_TYPE_NAMES[self._dtype.name]} or an "
                               f"UntypedStorage, but got type {SCALAR_NAMES[source.dtype.name]} for argument 1 "
                               "'storage'")
        if size is None:
            array = _elements(source._storage, self._dtype)
        else:
            array = _window(source._storage, self, storage_offset, size, stride)
        self._take_storage(source._storage, array)
    else:
        raise _set_error(source)
    self._base = None
    self._bump_version()
    return self


def _window(storage: Storage, like: Tensor, storage_offset: int, size, stride):
    """The array of an as_strided view over all of `storage`, read as `like`'s dtype."""
    from .._autograd.grad_mode import no_grad

    size = tuple(int(each) for each in size)
    if not stride:
        stride = tuple(math.prod(size[index + 1:]) for index in range(len(size)))
    whole = Tensor._make(_elements(storage, like._dtype), like._dtype, like._device, storage)
    with no_grad():
        return whole.as_strided(size, tuple(stride), int(storage_offset))._data


# ---------------------------------------------------------------- deprecated out-of-place resize


def _autograd_resize(tensor: Tensor, sizes: tuple) -> Tensor:
    """torch.autograd._functions.Resize: a reshape that must keep the element count (a view when contiguous)."""
    count = functools.reduce(operator.mul, sizes, 1)
    if tensor.numel() != count:
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({count} elements in total), but the given tensor has "
            f"a size of {'x'.join(map(str, tensor.shape))} ({tensor.numel()} elements). autograd's resize can only "
            "change the shape of a given tensor, while preserving the number of elements. "
        )
    return tensor.contiguous().view(*sizes)


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: self with shape `sizes`, which must hold as many elements (use reshape)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, sizes)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: self with tensor's shape, which must hold as many elements (use reshape_as)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _autograd_resize(self, tuple(tensor.shape))


# ---------------------------------------------------------------- identity


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of self (same memory, gradients flow back to self) whose class is the Tensor subclass `cls`."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = self.view_as(self)
    alias.__class__ = cls
    return alias


def record_stream(self: Tensor, stream) -> None:
    """Mark self as in use by a CUDA stream: nothing to do for ember's CuPy allocator; a CPU tensor raises, as in
    torch."""
    from ..cuda import Stream

    if not isinstance(stream, Stream):
        raise RuntimeError("unknown parameter type")
    if self._device.type != "cuda":
        raise NotImplementedError(f"Could not run 'aten::record_stream' with arguments from the "
                                  f"'{self._device.type.upper()}' backend.")


def is_distributed(input: Tensor) -> bool:
    """Always False (torch's legacy flag for distributed tensors)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def _name(self: Tensor) -> None:
    """torch.Tensor.name: a read-only attribute, None for every tensor."""
    return None


for _method in (storage, storage_type, set_, resize, resize_as, as_subclass, record_stream):
    export(_method, function=False)
export(is_distributed)
Tensor.name = property(_name)
del _method
