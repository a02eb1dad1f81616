"""A CPU stand-in for the cuda backend, so the cuda code paths run in CI on machines without a GPU.

NOTE [ Emulated cuda ]
`EMBER_EMULATE_CUDA=1` (or `ember._backends.emulate_cuda()`) makes the 'cuda' device available with this
module as its array module.  It forwards to NumPy, but its arrays are `DeviceArray`s: wrappers that behave
like `cupy.ndarray` (operators, indexing, methods, views sharing memory, 0-d arrays from reductions) and
refuse what a CuPy array refuses, loudly:

- a NumPy function called on them (`np.sum(a)`, `np.asarray(a)`, `np.where(a > 0, ...)`) raises TypeError:
  op impls must use the array module `xp` they are given (CuPy would make a host copy implicitly or fail);
- a host (NumPy) array meeting a device array in one call (`a + np.ones(3)`, `xp.where(c, a, host)`)
  raises TypeError, as CuPy does;
- a NumPy function CuPy 14 does not have (`xp.errstate`, `xp.emath`) raises AttributeError
  (the list is _cupy_names.py).

What it validates: the backend plumbing (device movement, factories, dispatch, autograd on 'cuda') and the
xp-discipline of op impls.  What it does not: GPU numerics (cuBLAS/cuDNN results, TF32, reduction order),
speed, streams, memory, or CuPy's own gaps beyond its namespace (it has no bfloat16, for one).
"""

from __future__ import annotations

import operator
import types

import numpy

from . import _cupy_names

__all__ = ["DeviceArray", "module", "is_enabled", "set_enabled"]

_enabled = False


def is_enabled() -> bool:
    return _enabled


def set_enabled(value: bool) -> None:
    global _enabled
    _enabled = bool(value)


class EmulationError(TypeError):
    """An op impl did something a CuPy array would refuse (see NOTE [ Emulated cuda ])."""


def _host_array_error(where: str) -> EmulationError:
    return EmulationError(
        f"emulated cuda: a NumPy (host) array was passed to {where} together with cuda device arrays; CuPy "
        "rejects host arrays there. Move it to the device with xp.asarray first (op impls must use `xp`)."
    )


# ---------------------------------------------------------------- wrapping and unwrapping


def _unwrap(value, where: str):
    """Device arrays -> their NumPy array; host NumPy arrays are an error; containers are mapped."""
    kind = type(value)
    if kind is DeviceArray:
        return value._array
    if kind is numpy.ndarray:
        raise _host_array_error(where)
    if kind is list or kind is tuple:
        return kind(_unwrap(v, where) for v in value)
    return value


def _unwrap_host_ok(value):
    """For functions that take host data (asarray, array, indexing keys): device arrays unwrapped, the rest kept."""
    kind = type(value)
    if kind is DeviceArray:
        return value._array
    if kind is list or kind is tuple:
        return kind(_unwrap_host_ok(v) for v in value)
    return value


def _wrap(value):
    """NumPy results -> device arrays (NumPy scalars become 0-d arrays, as CuPy's reductions return)."""
    if isinstance(value, numpy.ndarray):
        return DeviceArray(value)
    if isinstance(value, numpy.generic):
        return DeviceArray(numpy.asarray(value))
    if type(value) is tuple or type(value) is list:
        return type(value)(_wrap(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # numpy.linalg's named results
        return type(value)(*(_wrap(v) for v in value))
    return value


def _forward(function, name: str):
    def call(*args, **kwargs):
        where = f"xp.{name}"
        args = _unwrap(args, where)
        if kwargs:
            kwargs = {k: _unwrap(v, where) for k, v in kwargs.items()}
        return _wrap(function(*args, **kwargs))

    call.__name__ = name
    return call


# ---------------------------------------------------------------- the device array


def _binary(name):
    method = getattr(numpy.ndarray, name)

    def op(self, other):
        other = _unwrap(other, f"ndarray.{name}")
        return _wrap(method(self._array, other))

    op.__name__ = name
    return op


def _inplace(name):
    method = getattr(numpy.ndarray, name)

    def op(self, other):
        method(self._array, _unwrap(other, f"ndarray.{name}"))
        return self

    op.__name__ = name
    return op


def _unary(function):
    def op(self):
        return _wrap(function(self._array))

    return op


_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift",
           "rshift", "divmod")
_COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_NO_FORWARD = ("__array_interface__", "__array_struct__", "__array__", "ctypes", "data")


class DeviceArray:
    """Stands in for `cupy.ndarray` on the emulated cuda device: a NumPy array only reachable through `xp`."""

    __slots__ = ("_array", "__weakref__")
    __array_priority__ = 100.0

    def __init__(self, array) -> None:
        self._array = array

    # numpy must not touch device arrays: see NOTE [ Emulated cuda ]
    def __array__(self, dtype=None, copy=None):
        raise EmulationError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array "
            "explicitly. (emulated cuda: an op impl called a NumPy function on a device array; use `xp`)"
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise EmulationError(
            f"emulated cuda: numpy.{ufunc.__name__} was applied to a cuda device array (perhaps a NumPy array and a "
            "device array met in one operation); op impls must use the array module `xp` they are given"
        )

    def __array_function__(self, function, types_, args, kwargs):
        raise EmulationError(
            f"emulated cuda: numpy.{function.__name__} was called on a cuda device array; op impls must use the "
            "array module `xp` they are given"
        )

    # metadata, as attributes (hot)
    @property
    def shape(self):
        return self._array.shape

    @property
    def dtype(self):
        return self._array.dtype

    @property
    def ndim(self):
        return self._array.ndim

    @property
    def size(self):
        return self._array.size

    @property
    def strides(self):
        return self._array.strides

    @property
    def itemsize(self):
        return self._array.itemsize

    @property
    def nbytes(self):
        return self._array.nbytes

    @property
    def flags(self):
        return self._array.flags

    @property
    def T(self):
        return DeviceArray(self._array.T)

    @property
    def mT(self):
        return DeviceArray(numpy.swapaxes(self._array, -1, -2))

    @property
    def real(self):
        return DeviceArray(self._array.real)

    @property
    def imag(self):
        return DeviceArray(self._array.imag)

    @property
    def __cuda_array_interface__(self):
        interface = self._array.__array_interface__
        return {"shape": interface["shape"], "typestr": interface["typestr"], "data": interface["data"],
                "strides": interface["strides"], "version": 3}

    # CuPy's explicit transfers
    def get(self, stream=None, order="C", out=None):
        """A host copy (cupy.ndarray.get)."""
        return numpy.array(self._array, copy=True)

    def set(self, array, stream=None) -> None:
        """Copy a host array in (cupy.ndarray.set)."""
        numpy.copyto(self._array, array)

    def __getattr__(self, name):
        if name.startswith("__array") or name in _NO_FORWARD:
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}' (emulated cuda)")
        attribute = getattr(self._array, name)
        if callable(attribute):
            return _forward(attribute, f"ndarray.{name}")
        return _wrap(attribute)

    # indexing: CuPy accepts host index arrays and lists in keys
    def __getitem__(self, key):
        return _wrap(self._array[_unwrap_host_ok(key)])

    def __setitem__(self, key, value) -> None:
        self._array[_unwrap_host_ok(key)] = _unwrap_host_ok(value)

    def __len__(self) -> int:
        return len(self._array)

    def __iter__(self):
        for index in range(len(self._array)):
            yield self[index]

    def __bool__(self) -> bool:
        return bool(self._array)

    def __int__(self) -> int:
        return int(self._array)

    def __float__(self) -> float:
        return float(self._array)

    def __complex__(self) -> complex:
        return complex(self._array)

    def __index__(self) -> int:
        return operator.index(self._array)

    def __copy__(self):
        return DeviceArray(self._array.copy())

    def __deepcopy__(self, memo):
        return DeviceArray(self._array.copy())

    def __reduce__(self):
        return (DeviceArray, (self._array,))

    def __repr__(self) -> str:
        return f"DeviceArray({self._array!r}, device='emulated-cuda')"

    __hash__ = None
    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __abs__ = _unary(operator.abs)
    __invert__ = _unary(operator.invert)


for _name in _BINARY:
    setattr(DeviceArray, f"__{_name}__", _binary(f"__{_name}__"))
    setattr(DeviceArray, f"__r{_name}__", _binary(f"__r{_name}__"))
    if _name != "divmod":
        setattr(DeviceArray, f"__i{_name}__", _inplace(f"__i{_name}__"))
for _name in _COMPARISONS:
    setattr(DeviceArray, _name, _binary(_name))


# ---------------------------------------------------------------- the module


def _take_host(function, name: str):
    """asarray/array: host data is copied to the 'device' (a real transfer never aliases host memory)."""

    def call(obj, *args, **kwargs):
        if type(obj) is DeviceArray:
            return _wrap(function(obj._array, *args, **kwargs))
        if isinstance(obj, numpy.ndarray):
            return DeviceArray(numpy.array(function(obj, *args, **kwargs), copy=True))
        return _wrap(function(_unwrap_host_ok(obj), *args, **kwargs))

    call.__name__ = name
    return call


class _Ufunc:
    """A NumPy ufunc seen through the emulated module: calls and reduce/accumulate/outer/at, arrays checked."""

    def __init__(self, ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__
        self.nin, self.nout = ufunc.nin, ufunc.nout

    def __call__(self, *args, **kwargs):
        return _forward(self._ufunc, self.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("reduce", "accumulate", "outer", "at", "reduceat"):
            return _forward(getattr(self._ufunc, name), f"{self.__name__}.{name}")
        return getattr(self._ufunc, name)


class _Namespace(types.ModuleType):
    """A module that forwards to a NumPy namespace, only for the names the matching CuPy namespace has."""

    def __init__(self, name: str, source, allowed: frozenset, special: dict) -> None:
        super().__init__(name)
        self._source = source
        self._allowed = allowed
        self._special = special

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._special:
            value = self._special[name]
        elif name not in self._allowed:
            raise AttributeError(
                f"module '{self.__name__}' has no attribute '{name}' (CuPy 14 lacks numpy's '{name}'; "
                "emulated cuda refuses it so that the op would not fail only on a real GPU)"
            )
        else:
            value = getattr(self._source, name)
            if isinstance(value, numpy.ufunc):
                value = _Ufunc(value)
            elif isinstance(value, type) or not callable(value):
                pass  # dtypes, constants (pi, inf, newaxis): the same objects CuPy re-exports
            else:
                value = _forward(value, name)
        setattr(self, name, value)  # cached: later lookups skip __getattr__
        return value


def _asnumpy(array, stream=None, order="C", out=None):
    if type(array) is DeviceArray:
        return array.get()
    return numpy.asarray(array)


def _get_array_module(*args):
    return module if any(type(a) is DeviceArray for a in args) else numpy


def _build_module() -> _Namespace:
    stride_tricks = _Namespace("cupy.lib.stride_tricks", numpy.lib.stride_tricks, _cupy_names.STRIDE_TRICKS, {})
    lib = types.ModuleType("cupy.lib")
    lib.stride_tricks = stride_tricks
    special = {
        "ndarray": DeviceArray,
        "asarray": _take_host(numpy.asarray, "asarray"),
        "asanyarray": _take_host(numpy.asarray, "asanyarray"),
        "array": _take_host(numpy.array, "array"),
        "ascontiguousarray": _take_host(numpy.ascontiguousarray, "ascontiguousarray"),
        "asnumpy": _asnumpy,
        "get_array_module": _get_array_module,
        "linalg": _Namespace("cupy.linalg", numpy.linalg, _cupy_names.LINALG, {}),
        "fft": _Namespace("cupy.fft", numpy.fft, _cupy_names.FFT, {}),
        "lib": lib,
        "is_emulated": True,
    }
    return _Namespace("cupy (emulated on numpy)", numpy, _cupy_names.TOP_LEVEL, special)


module = _build_module()
