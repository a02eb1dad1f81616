"""ember objects <-> the pickle torch.save writes (data.pkl), under torch's global names.

Saving.  A tensor pickles as torch's does: a call of
`torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride,
requires_grad, backward_hooks)` whose `storage` is a persistent id
`('storage', torch.FloatStorage, key, location, numel)`; its bytes go to the
archive's `data/<key>` record.  dtypes pickle as the globals `torch.float32`...,
devices as `torch.device('cpu')`, sizes as `torch.Size((2, 3))`.  ember never
imports torch, so the standard pickler (which imports a global's module to
check it) cannot write these names: `TorchPickler` is the pure-Python pickler
with a `TorchGlobal` placeholder that it writes as a GLOBAL opcode directly.
Tensor data never passes through the pickler, so its speed does not matter.

Loading.  `TorchUnpickler.find_class` maps those torch names to ember's own
rebuild functions below; with `weights_only` it refuses every global that is
not on the allow-list (see NOTE [ Weights-only loading ]).
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import importlib
import pickle

import numpy as np

from .. import _dtype as dt
from .._backends import MetaArray
from .._device import CPU, as_device
from .._device import device as Device
from .._ops import quantized as _quantized
from .._tensor import SCALAR_NAMES, Size, Storage, Tensor


class TorchGlobal:
    """A torch global, written into the pickle by name; ember never resolves it."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def __call__(self, *args):  # the pickler requires a reduce function to be callable
        raise RuntimeError(f"{self.module}.{self.name} is a placeholder for pickling")

    def __repr__(self) -> str:
        return f"TorchGlobal({self.module}.{self.name})"


REBUILD_TENSOR_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
REBUILD_TENSOR_V3 = TorchGlobal("torch._utils", "_rebuild_tensor_v3")
UNTYPED_STORAGE = TorchGlobal("torch.storage", "UntypedStorage")
REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = TorchGlobal("torch._utils", "_rebuild_parameter_with_state")
REBUILD_META = TorchGlobal("torch._utils", "_rebuild_meta_tensor_no_storage")
REBUILD_FROM_TYPE_V2 = TorchGlobal("torch._tensor", "_rebuild_from_type_v2")
TORCH_TENSOR = TorchGlobal("torch", "Tensor")
TORCH_SIZE = TorchGlobal("torch", "Size")
TORCH_DEVICE = TorchGlobal("torch", "device")
GET_LAYOUT = TorchGlobal("torch.serialization", "_get_layout")
REBUILD_SPARSE = TorchGlobal("torch._utils", "_rebuild_sparse_tensor")
REBUILD_QTENSOR = TorchGlobal("torch._utils", "_rebuild_qtensor")
_SAVED_DTYPES = dt.ALL_DTYPES + dt.QUANTIZED_DTYPES
STORAGE_TYPES = {dtype: TorchGlobal("torch", f"{SCALAR_NAMES[dtype.name]}Storage") for dtype in _SAVED_DTYPES}
DTYPE_GLOBALS = {dtype: TorchGlobal("torch", dtype.name) for dtype in _SAVED_DTYPES + dt.SHELL_DTYPES}
QSCHEME_GLOBALS = {scheme: TorchGlobal("torch", name) for name, scheme in _quantized._QSCHEMES.items()}


# ---------------------------------------------------------------- saving


class StorageRef:
    """One storage to be written: the persistent id's fields and the raw bytes (a uint8 array)."""

    __slots__ = ("key", "dtype", "location", "numel", "raw")

    def __init__(self, key: str, dtype: dt.dtype, location: str, raw: np.ndarray) -> None:
        self.key = key
        self.dtype = dtype
        self.location = location
        self.raw = raw
        self.numel = raw.nbytes // dtype.itemsize


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def _raw_bytes(root: np.ndarray):
    """The memory block a root array covers, as a flat uint8 array, or None when it is not one dense block."""
    array = root
    while isinstance(array, np.ndarray):
        if array.flags.c_contiguous or array.flags.f_contiguous:
            return array.ravel(order="K").view(np.uint8)
        array = array.base
    return None


class StorageTable:
    """Assigns storage keys while pickling: tensors over one memory block share one key, as views do in torch."""

    def __init__(self) -> None:
        self.refs: dict[tuple, StorageRef] = {}
        self.in_order: list[StorageRef] = []

    def _new(self, dtype: dt.dtype, location: str, raw: np.ndarray, identity) -> StorageRef:
        ref = StorageRef(str(len(self.in_order)), dtype, location, raw)
        self.in_order.append(ref)
        if identity is not None:
            self.refs[identity] = ref
        return ref

    def locate(self, tensor: Tensor) -> tuple[StorageRef, int, tuple]:
        """(storage, storage_offset, stride) for a CPU tensor, in elements, sharing storage where memory is shared."""
        data, dtype, device = tensor._data, tensor._dtype, tensor._device
        location = f"cuda:{device.index or 0}" if device.type == "cuda" else str(device)  # torch's location tag
        if not isinstance(data, np.ndarray):  # a device array (CuPy): saved through a host copy
            data = np.asarray(data.get() if hasattr(data, "get") else data)
            return self._contiguous_copy(data, dtype, location)
        raw = _raw_bytes(tensor._storage.array)
        if raw is None or raw.nbytes % dtype.itemsize:
            return self._contiguous_copy(data, dtype, location)
        identity = (_address(raw), raw.nbytes)
        ref = self.refs.get(identity)
        if ref is not None and ref.dtype is not dtype:  # torch refuses this case; we save a private copy instead
            return self._contiguous_copy(data, dtype, location)
        placed = _place(data, raw, dtype)
        if placed is None:
            return self._contiguous_copy(data, dtype, location)
        if ref is None:
            ref = self._new(dtype, location, raw, identity)
        return ref, placed[0], placed[1]

    def _contiguous_copy(self, data: np.ndarray, dtype: dt.dtype, location: str):
        array = data if data.flags.c_contiguous else data.copy(order="C")  # 0-d stays 0-d
        ref = self._new(dtype, location, array.reshape(-1).view(np.uint8), None)
        return ref, 0, _contiguous_strides(array.shape)


def _place(data: np.ndarray, raw: np.ndarray, dtype: dt.dtype):
    """(offset, strides) in elements of `data` inside `raw`, or None when it does not sit on element boundaries."""
    itemsize = dtype.itemsize
    if data.size == 0:
        return 0, _contiguous_strides(data.shape)
    start = _address(data) - _address(raw)
    if start < 0 or start % itemsize or any(s < 0 or s % itemsize for s in data.strides):
        return None
    last = start + sum((n - 1) * s for n, s in zip(data.shape, data.strides)) + itemsize
    if last > raw.nbytes:
        return None
    return start // itemsize, tuple(s // itemsize for s in data.strides)


def _contiguous_strides(shape) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _public_state(tensor: Tensor) -> dict:
    return {key: value for key, value in tensor.__dict__.items() if not key.startswith("_") and key != "persistent"}


class TorchPickler(pickle._Pickler):
    """The pure-Python pickler, writing ember tensors, dtypes, devices and sizes under torch's names."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol: int, storages: StorageTable) -> None:
        from .. import sparse_coo, strided

        super().__init__(file, protocol)
        self.storages = storages
        self.strided = strided
        self.sparse_coo = sparse_coo

    def persistent_id(self, obj):
        if type(obj) is StorageRef:
            if obj.dtype.restricted and obj.dtype.category >= 0:  # a shell dtype: torch's untyped storage, in bytes
                return ("storage", UNTYPED_STORAGE, obj.key, obj.location, obj.raw.nbytes)
            return ("storage", STORAGE_TYPES[obj.dtype], obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Size):
            return TORCH_SIZE, (tuple(int(n) for n in obj),)
        if isinstance(obj, Device):
            return TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index)
        if obj is self.strided:
            return GET_LAYOUT, ("torch.strided",)
        if obj is self.sparse_coo:
            return GET_LAYOUT, ("torch.sparse_coo",)
        return NotImplemented

    def _reduce_tensor(self, tensor: Tensor):
        from ..nn.parameter import Parameter

        state = _public_state(tensor)
        if tensor.is_sparse:  # torch's form: the layout and (indices, values, size, is_coalesced)
            array = tensor._data
            return REBUILD_SPARSE, (
                self.sparse_coo,
                (tensor._indices(), tensor._values(), Size(array.shape), array.coalesced),
            )
        if isinstance(tensor, Parameter):
            data = Tensor._make(tensor._data, tensor._dtype, tensor._device, tensor._storage)
            hooks = collections.OrderedDict()
            if state:
                return REBUILD_PARAMETER_WITH_STATE, (data, tensor.requires_grad, hooks, state)
            return REBUILD_PARAMETER, (data, tensor.requires_grad, hooks)
        if tensor._device.type == "meta":
            stride = tuple(tensor.stride())
            return REBUILD_META, (tensor._dtype, tuple(tensor.shape), stride, tensor.requires_grad)
        ref, offset, stride = self.storages.locate(tensor)
        if tensor._qparams is not None:  # torch's quantized form: the integers' storage plus the quantizer
            shape = tuple(int(n) for n in tensor._data.shape)
            return REBUILD_QTENSOR, (
                ref,
                offset,
                shape,
                stride,
                _quantizer_params(tensor._qparams),
                tensor.requires_grad,
                collections.OrderedDict(),
            )
        args = (
            ref,
            offset,
            tuple(int(n) for n in tensor._data.shape),
            stride,
            tensor.requires_grad,
            collections.OrderedDict(),
        )
        if tensor._dtype in dt.SHELL_DTYPES:  # no typed storage class: v3 names the dtype (NOTE [ Shell dtypes ])
            args = args + (tensor._dtype,)
            if state:
                return REBUILD_FROM_TYPE_V2, (REBUILD_TENSOR_V3, TORCH_TENSOR, args, state)
            return REBUILD_TENSOR_V3, args
        if state:
            return REBUILD_FROM_TYPE_V2, (REBUILD_TENSOR_V2, TORCH_TENSOR, args, state)
        return REBUILD_TENSOR_V2, args

    def save_torch_global(self, obj: TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    def save_dtype(self, obj: dt.dtype) -> None:
        self.save(DTYPE_GLOBALS[obj])

    def save_qscheme(self, obj) -> None:
        self.save(QSCHEME_GLOBALS[obj])

    dispatch[TorchGlobal] = save_torch_global
    dispatch[dt.dtype] = save_dtype
    dispatch[_quantized.qscheme] = save_qscheme


def _quantizer_params(qparams) -> tuple:
    """torch's quantizer_params tuple: (scheme, scale, zero_point) or (scheme, scales, zero_points, axis)."""
    if qparams.axis is None:
        return (qparams.scheme, qparams.scale, qparams.zero_point)
    return (qparams.scheme, qparams.scale, qparams.zero_point, qparams.axis)


# ---------------------------------------------------------------- loading: ember's rebuild functions


class StorageType:
    """What `torch.FloatStorage` (etc.) resolves to on load: just the element type."""

    def __init__(self, dtype: dt.dtype) -> None:
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"StorageType({self.dtype})"


class LoadedStorage:
    """A storage read from a checkpoint: a 1-D array of its elements on its device, and the ember Storage
    every tensor rebuilt over it shares (so views saved together stay views of one array)."""

    def __init__(self, array, dtype: dt.dtype, device: Device, numel: int) -> None:
        self.array = array  # None on the meta device
        self.dtype = dtype
        self.device = device
        self.numel = numel
        self.storage = Storage(array if array is not None else MetaArray((numel,), dtype.np_dtype))
        self._retyped: dict = {}  # dtype -> this storage's bytes as that dtype (retyped)

    @classmethod
    def empty(cls, dtype: dt.dtype, numel: int, device) -> LoadedStorage:
        """An uninitialised storage on `device`, for legacy files, whose bytes follow the pickle (see `fill`)."""
        device = as_device(device)
        if device.type == "meta":
            return cls(None, dtype, device, numel)
        return cls(np.empty(numel, dtype.np_dtype), dtype, CPU, numel).to(device)

    def fill(self, host: np.ndarray) -> None:
        """Copy this storage's elements (a host array) in, in place, so tensors already built over it see them."""
        if self.array is None:
            return
        if isinstance(self.array, np.ndarray):
            self.array[...] = host
        else:
            self.array[...] = _device_module(self.device).asarray(host)

    def view(self, offset: int, numel: int) -> LoadedStorage:
        """A storage over `numel` elements of this one from `offset`, sharing its memory (legacy files from
        torch < 1.0, which saved storage slices); like torch's, tensors over it count offsets from its start."""
        if not (isinstance(offset, int) and isinstance(numel, int) and 0 <= offset and 0 <= numel):
            raise ValueError(f"invalid storage view: offset {offset!r:.50}, size {numel!r:.50}")
        if offset + numel > self.numel:
            raise ValueError(f"a storage view of {numel} elements at {offset} runs past its storage of {self.numel}")
        array = None if self.array is None else self.array[offset : offset + numel]
        return LoadedStorage(array, self.dtype, self.device, numel)

    def size(self) -> int:
        return self.numel

    def retyped(self, dtype: dt.dtype) -> LoadedStorage:
        """This storage's bytes (an UntypedStorage's) as elements of `dtype`, one shared object per dtype so that
        tensors rebuilt over it stay views of one array."""
        cache = self._retyped
        if dtype not in cache:
            if self.numel % dtype.itemsize:
                raise ValueError(f"a storage of {self.numel} bytes does not hold whole {dtype} elements")
            array = None if self.array is None else self.array.view(dtype.np_dtype)
            cache[dtype] = LoadedStorage(array, dtype, self.device, self.numel // dtype.itemsize)
        return cache[dtype]

    def to(self, device) -> LoadedStorage:
        """This storage on `device` (itself when already there), for map_location."""
        device = as_device(device)
        if device == self.device:
            return self
        if device.type == "meta":
            return LoadedStorage(None, self.dtype, device, self.numel)
        if self.array is None:
            raise RuntimeError(f"cannot move a meta storage to {device}: it has no data")
        if device.type == "cpu":
            array = np.asarray(self.array.get() if hasattr(self.array, "get") else self.array)
        else:
            array = _device_module(device).asarray(self.array)
        return LoadedStorage(array, self.dtype, device, self.numel)

    def cpu(self) -> LoadedStorage:
        return self.to(CPU)

    def cuda(self, device=None) -> LoadedStorage:
        return self.to(Device("cuda", device) if isinstance(device, int) or device is None else device)

    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def tensor(self, offset, size, stride) -> Tensor:
        offset, size, stride = _check_geometry(offset, size, stride, self.numel)
        if self.array is None:
            return Tensor._make(MetaArray(size, self.dtype.np_dtype), self.dtype, self.device)
        itemsize = self.dtype.itemsize
        overlapping = any(s == 0 and n > 1 for n, s in zip(size, stride))
        strides = tuple(s * itemsize for s in stride)
        if self.device.type == "cpu":
            base = self.array[offset:]
            if base.dtype.type.__module__ == "ml_dtypes":  # float8, bfloat16: as_strided can't rebuild such
                carrier = np.dtype(f"u{itemsize}")  # a dtype from its typestr ('<f1'): stride a same-size integer
                view = np.lib.stride_tricks.as_strided(base.view(carrier), size, strides, writeable=not overlapping)
                view = view.view(base.dtype)
            else:
                view = np.lib.stride_tricks.as_strided(base, size, strides, writeable=not overlapping)
        else:
            xp = _device_module(self.device)
            view = xp.lib.stride_tricks.as_strided(self.array[offset:], size, strides)
        return Tensor._make(view, self.dtype, self.device, self.storage)


def _device_module(device: Device):
    from .. import _dispatch

    return _dispatch.device_module(device)


def _check_geometry(offset, size, stride, numel: int):
    """Validate a tensor's place in its storage (a corrupt or hostile pickle must not read out of bounds)."""
    if not isinstance(offset, int) or not isinstance(size, tuple) or not isinstance(stride, tuple):
        raise TypeError("storage_offset must be an int and size and stride tuples")
    if len(size) != len(stride) or not all(isinstance(n, int) and n >= 0 for n in size + stride) or offset < 0:
        raise ValueError(f"invalid tensor geometry: offset {offset}, size {size}, stride {stride}")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= numel:
            raise ValueError(
                f"a tensor of size {size}, stride {stride} at offset {offset} runs past its storage of {numel} elements"
            )
    return offset, size, stride


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, LoadedStorage):
        raise TypeError(f"expected a storage to rebuild a tensor from, got {type(storage).__name__}")
    return storage.tensor(storage_offset, size, stride)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    tensor = _rebuild_tensor(storage, storage_offset, size, stride)
    tensor._requires_grad = bool(requires_grad)
    return tensor


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    """torch's form for dtypes without a typed storage class (uint16/32/64): the bytes of an UntypedStorage,
    read as `dtype`."""
    if isinstance(storage, LoadedStorage) and dtype is not storage.dtype:
        if storage.dtype is not dt.uint8 or not isinstance(dtype, dt.dtype):
            raise ValueError(f"ember cannot reinterpret a {storage.dtype} storage as {dtype}")
        storage = storage.retyped(dtype)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)


def _rebuild_qtensor(storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks):
    """torch._utils._rebuild_qtensor: the integer tensor over its storage, with its quantization parameters."""
    tensor = _rebuild_tensor(storage, storage_offset, size, stride)
    if tensor._dtype.category >= 0:
        raise ValueError(f"a quantized tensor needs a quantized storage, got {tensor._dtype}")
    scheme = quantizer_params[0]
    if scheme is _quantized.per_tensor_affine:
        qparams = _quantized.QParams(scheme, float(quantizer_params[1]), int(quantizer_params[2]))
    elif scheme is _quantized.per_channel_affine:
        scales, zero_points, axis = quantizer_params[1:]
        if not (isinstance(scales, Tensor) and isinstance(zero_points, Tensor)):
            raise TypeError("per-channel quantizer parameters must be tensors")
        qparams = _quantized.QParams(scheme, scales.to(dt.float64), zero_points.to(dt.int64), int(axis))
    else:
        raise RuntimeError(f"ember cannot load a quantized tensor with qscheme {scheme}")
    tensor._qparams = qparams
    tensor._requires_grad = bool(requires_grad)
    return tensor


def _rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"expected a dtype, got {type(dtype).__name__}")
    tensor = Tensor._make(MetaArray(tuple(size), dtype.np_dtype), dtype, as_device("meta"))
    tensor._requires_grad = bool(requires_grad)
    return tensor


def _set_state(obj, state) -> None:
    if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state), torch's _set_obj_state
        state, slots = state
        _set_attributes(obj, slots)
    _set_attributes(obj, state)


def _set_attributes(obj, values) -> None:
    for key, value in (values or {}).items():
        if not isinstance(key, str) or key.startswith("__"):  # never __class__, __dict__, ... from a file
            raise ValueError(f"refusing to set attribute {key!r:.100} from a checkpoint")
        setattr(obj, key, value)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from ..nn.parameter import Parameter

    if not isinstance(data, Tensor):
        raise TypeError(f"expected a tensor to rebuild a Parameter from, got {type(data).__name__}")
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    parameter = _rebuild_parameter(data, requires_grad, backward_hooks)
    _set_state(parameter, state)
    return parameter


def _rebuild_from_type_v2(func, new_type, args, state):
    from ..nn.parameter import Parameter

    result = func(*args)
    if isinstance(result, Tensor) and type(result) is not new_type:
        if new_type is Parameter:
            result = Parameter(result, result.requires_grad)
        elif isinstance(new_type, type) and issubclass(new_type, Tensor):
            result = result._make_subclass_of(new_type, result._requires_grad)
    setstate = getattr(type(result), "__setstate__", None)
    if state and setstate is not None and setstate is not Tensor.__setstate__:
        result.__setstate__(state)
    else:
        _set_state(result, state)
    return result


def _get_layout(name):
    from .. import sparse_coo, strided

    if name == "torch.sparse_coo":
        return sparse_coo
    if name != "torch.strided":
        raise ValueError(f"ember has the strided and sparse_coo layouts, the checkpoint asks for {name}")
    return strided


def _rebuild_sparse_tensor(layout, data):
    """torch._utils._rebuild_sparse_tensor for the sparse_coo layout: (indices, values, size[, is_coalesced])."""
    from .. import sparse_coo, sparse_coo_tensor

    if layout is not sparse_coo:
        raise ValueError(f"ember cannot rebuild a sparse tensor of layout {layout}")
    indices, values, size = data[:3]
    is_coalesced = data[3] if len(data) > 3 else None
    return sparse_coo_tensor(indices, values, size, check_invariants=True, is_coalesced=is_coalesced)


def _torch_size(sizes=()):
    return Size(int(n) for n in sizes)


def _torch_device(kind, index=None):
    return Device(kind, index)


def _torch_allowed_globals() -> dict:
    """NOTE [ Weights-only loading ]: the globals a weights-only load resolves, by torch's dotted name.

    This is torch's allow-list (torch/_weights_only_unpickler.py) restricted to what ember has.  Every
    entry is a type or a function that only builds data: none reaches the file system, a shell, an import
    or eval.  Anything else named by the pickle is refused before it is looked up, so nothing runs.
    """
    from ..nn.parameter import Parameter

    allowed = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.serialization._get_layout": _get_layout,
        "torch.Size": _torch_size,
        "torch.Tensor": Tensor,
        "torch.device": _torch_device,
        "_codecs.encode": codecs.encode,  # how protocol 2 pickles bytes
        "builtins.bytearray": bytearray,
        "builtins.set": set,
        "builtins.complex": complex,
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": _rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
        "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
        "torch._utils._rebuild_qtensor": _rebuild_qtensor,
        "torch._utils._rebuild_sparse_tensor": _rebuild_sparse_tensor,
        "torch.storage.UntypedStorage": StorageType(dt.uint8),
        "torch.UntypedStorage": StorageType(dt.uint8),
    }
    for dtype in _SAVED_DTYPES:
        allowed[f"torch.{dtype.name}"] = dtype
        allowed[f"torch.{SCALAR_NAMES[dtype.name]}Storage"] = StorageType(dtype)
    for dtype in dt.SHELL_DTYPES:  # no storage class: only the dtype, for _rebuild_tensor_v3
        allowed[f"torch.{dtype.name}"] = dtype
    for dtype in dt.ALL_DTYPES:  # legacy files from old torch name a CUDA tensor's storage torch.cuda.FloatStorage
        allowed[f"torch.cuda.{SCALAR_NAMES[dtype.name]}Storage"] = StorageType(dtype)
    for name, scheme in _quantized._QSCHEMES.items():
        allowed[f"torch.{name}"] = scheme
    return allowed


ALLOWED_GLOBALS = _torch_allowed_globals()


_TORCH_ONLY_DTYPES = {
    "uint16",
    "uint32",
    "uint64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "complex32",
    "quint4x2",
    "quint2x4",
    "bits8",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
}


class ForbiddenGlobal(pickle.UnpicklingError):
    """A weights-only load met a global outside the allow-list."""


def _forbidden_message(qualified: str) -> str:
    return (
        f"Weights only load failed. Unsupported global: GLOBAL {qualified} was not an allowed global by default. "
        f"Nothing from the checkpoint was run. If you trust this file, either load it with weights_only=False, "
        f"or allow this global with ember.serialization.add_safe_globals([{qualified.rsplit('.', 1)[-1]}]) "
        f"or the ember.serialization.safe_globals([...]) context manager."
    )


def python3_global(module: str, name: str) -> tuple[str, str]:
    """A pickled global's module and name in Python 3's names (protocol 2 writes builtins as "__builtin__")."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    if module in _compat_pickle.IMPORT_MAPPING:
        return _compat_pickle.IMPORT_MAPPING[module], name
    return module, name


class TorchUnpickler(pickle.Unpickler):
    """Unpickles data.pkl into ember objects; `load_storage(dtype, key, location, numel)` supplies storages."""

    def __init__(self, file, *, weights_only: bool, load_storage, user_globals: dict, **kwargs) -> None:
        super().__init__(file, **kwargs)
        self.weights_only = weights_only
        self.load_storage = load_storage
        self.user_globals = user_globals

    def find_class(self, module: str, name: str):
        module, name = python3_global(module, name)
        qualified = f"{module}.{name}"
        found = ALLOWED_GLOBALS.get(qualified)
        if found is not None:
            return found
        found = self.user_globals.get(qualified)
        if found is not None:
            return found
        if module == "torch" and (name in _TORCH_ONLY_DTYPES or name.endswith("Storage")):
            raise ForbiddenGlobal(
                f"ember cannot load this checkpoint: it holds {qualified}, and ember has no such "
                f"dtype (ember has {', '.join(d.name for d in dt.ALL_DTYPES)})"
            )
        if self.weights_only:
            raise ForbiddenGlobal(_forbidden_message(qualified))
        if module == "torch" or module.startswith("torch."):
            return _ember_counterpart(module, name)
        return _refuse_torch_subclass(super().find_class(module, name), qualified)

    def persistent_load(self, saved_id):
        if not (isinstance(saved_id, tuple) and len(saved_id) == 5 and saved_id[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {saved_id!r:.200}")
        _, storage_type, key, location, numel = saved_id
        if not isinstance(storage_type, StorageType):
            raise pickle.UnpicklingError(f"unknown storage type {storage_type!r:.100}")
        if not (isinstance(key, str) and isinstance(location, str) and isinstance(numel, int) and numel >= 0):
            raise pickle.UnpicklingError(f"malformed storage id {saved_id!r:.200}")
        return self.load_storage(storage_type.dtype, key, location, numel)


def _refuse_torch_subclass(found, qualified: str):
    """A user's class pickled by torch.save (a model subclassing torch.nn.Module) is built on torch's classes;
    rebuilding it would give a torch object holding ember tensors, which neither library can use."""
    if isinstance(found, type):
        for base in found.__mro__[1:]:
            base_module = getattr(base, "__module__", "") or ""
            if base_module == "torch" or base_module.startswith("torch."):
                raise MissingCounterpart(
                    f"the checkpoint pickles an object of {qualified}, a subclass of torch's "
                    f"{base_module}.{base.__qualname__}; ember cannot rebuild objects of torch's classes. Save the "
                    f"data instead: in torch, torch.save(model.state_dict(), f); in ember, build the model with "
                    f"ember.nn and call model.load_state_dict(ember.load(f))."
                )
    return found


class MissingCounterpart(pickle.UnpicklingError):
    """A full (weights_only=False) load met a torch class or function that ember does not have."""


def _ember_counterpart(module: str, name: str):
    """torch.nn.modules.linear.Linear -> ember's Linear, for full (weights_only=False) loads.

    ember mirrors torch's packages but not every file in them (torch's nn/modules/batchnorm.py is ember's
    nn/modules/normalization.py), so the name is looked for in ember's mirror of the module, then in each
    package above it (ember.nn.modules, ember.nn), where ember exports it as torch does.
    """
    parts = ("ember" + module[len("torch") :]).split(".")
    for depth in range(len(parts), 1, -1):
        found = _lookup(".".join(parts[:depth]), name)
        if found is not None:
            return found
    raise MissingCounterpart(
        f"the checkpoint pickles an object of torch's {module}.{name}, and ember has no {name} to rebuild it "
        f"as (looked in {'.'.join(parts)} and the packages above it). Save the data instead: in torch, "
        f"torch.save(model.state_dict(), f); in ember, model.load_state_dict(ember.load(f))."
    )


def _lookup(module: str, name: str):
    try:
        found = importlib.import_module(module)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    if getattr(found, "__name__", None) != name.rsplit(".", 1)[-1]:  # an alias of something else
        return None
    return found
