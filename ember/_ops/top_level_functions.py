"""Top-level functions torch has beside the op families: in-place function forms (torch.abs_(t) is t.abs_()),
detach/is_inference/get_device, the legacy default-type and runtime switches, and the buffer, file and DLPack
constructors (frombuffer, from_file, from_dlpack/to_dlpack).

The in-place forms are generated from a list of names: each calls the Tensor method of that name, so values,
errors and autograd are the method's.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Storage, Tensor, UntypedStorage
from ._api import export

# ---------------------------------------------------------------- in-place function forms

INPLACE_FUNCTIONS = (
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_", "cos_",
    "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_",
    "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
    "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "index_put_", "resize_as_", "detach_", "as_strided_",
)


def _check_tensor(name: str, input) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _method_function(name: str):
    """torch.<name>(input, *args, **kwargs) = input.<name>(*args, **kwargs)."""

    def function(input: Tensor, *args, **kwargs):
        _check_tensor(name, input)
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}(input, ...): the same as input.{name}(...)."
    return function


for _name in INPLACE_FUNCTIONS + ("detach", "get_device"):
    export(_method_function(_name), method=False)


@export
def is_inference(input: Tensor) -> bool:
    """Whether the tensor was allocated inside inference_mode (its storage was; views share the mark, as torch)."""
    _check_tensor("is_inference", input)
    return input._storage.inference


# ---------------------------------------------------------------- runtime switches


_LEGACY_TYPES = {
    "FloatTensor": dt.float32, "DoubleTensor": dt.float64, "HalfTensor": dt.float16, "BFloat16Tensor": dt.bfloat16,
    "ByteTensor": dt.uint8, "CharTensor": dt.int8, "ShortTensor": dt.int16, "IntTensor": dt.int32,
    "LongTensor": dt.int64, "BoolTensor": dt.bool_, "ComplexFloatTensor": dt.complex64,
    "ComplexDoubleTensor": dt.complex128,
}


@export(method=False)
def set_default_tensor_type(t, /) -> None:
    """Deprecated torch API: set the default dtype (and cuda/cpu default device) from a legacy tensor type,
    given as a type object (its name, e.g. FloatTensor) or a string such as 'torch.cuda.DoubleTensor'."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if isinstance(t, str):
        parts = t.split(".")
        name, cuda = parts[-1], "cuda" in parts[:-1]
        if name not in _LEGACY_TYPES:
            raise AttributeError(f"module '{'.'.join(parts[:-1]) or 'ember'}' has no attribute '{name}'")
    elif isinstance(t, type) and t.__name__ in _LEGACY_TYPES:
        name, cuda = t.__name__, "cuda" in (t.__module__ or "")
    else:
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    dtype = _LEGACY_TYPES[name]
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    from .._device import get_default_device, set_default_device

    dt.set_default_dtype(dtype)
    if cuda:
        set_default_device("cuda")
    elif get_default_device().type == "cuda":
        set_default_device("cpu")


@export(method=False)
def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormals to zero could be set: False, NumPy has no control of the FPU's FTZ/DAZ bits."""
    return False


class _WarnAlways:
    enabled = False


@export(method=False)
def set_warn_always(b: bool, /) -> None:
    """Make warnings that are issued once per process (warn-once) issue every time."""
    _WarnAlways.enabled = bool(b)


@export(method=False)
def is_warn_always_enabled() -> bool:
    return _WarnAlways.enabled


@export(method=False)
def is_storage(obj, /) -> bool:
    """Whether obj is a storage object (what Tensor.untyped_storage() or Tensor.storage() returns)."""
    from .tensor_storage import TypedStorage

    return isinstance(obj, (UntypedStorage, TypedStorage))


# ---------------------------------------------------------------- buffers and files


def _wrap_array(array: np.ndarray, dtype: dt.dtype, requires_grad: bool = False) -> Tensor:
    from .._device import as_device

    result = Tensor._make(array, dtype, as_device("cpu"), Storage(array))
    return result.requires_grad_() if requires_grad else result


@export(method=False)
def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor sharing the memory of an object implementing the buffer protocol (bytes, bytearray, ...)."""
    length = memoryview(buffer).nbytes
    itemsize = dtype.itemsize
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if offset < 0 or offset >= length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({itemsize})")
        count = (length - offset) // itemsize
    elif offset + count * itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {itemsize} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    array = np.frombuffer(buffer, dtype=dtype.np_dtype, count=count, offset=offset)
    return _wrap_array(array, dtype, requires_grad)


@export(method=False)
def from_file(filename: str, shared: bool | None = None, size: int = 0, *, dtype=None, layout=None, device=None,
              pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """`size` elements of `dtype` read from a file.  shared=True maps the file (created or grown as needed), so
    writes to the tensor reach it; otherwise the data are copied in and the file must hold them all."""
    dtype = dt.get_default_dtype() if dtype is None else dtype
    filename = os.fspath(filename)
    nbytes = int(size) * dtype.itemsize
    if shared:
        if not os.path.exists(filename):
            open(filename, "wb").close()
        if os.path.getsize(filename) < nbytes:
            os.truncate(filename, nbytes)
        if nbytes == 0:
            array = np.empty(0, dtype=dtype.np_dtype)
        else:
            array = np.memmap(filename, dtype=dtype.np_dtype, mode="r+", shape=(int(size),)).view(np.ndarray)
    else:
        if not os.path.exists(filename):
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: No such file or directory (2)")
        file_size = os.path.getsize(filename)
        if file_size < nbytes:
            raise RuntimeError(f"file <{filename}> size <{file_size}> is smaller than the required mapping size "
                               f"<{nbytes}>")
        array = np.fromfile(filename, dtype=dtype.np_dtype, count=int(size))
    result = _wrap_array(array, dtype, requires_grad)
    return result if device is None else result.to(device)


# ---------------------------------------------------------------- DLPack


class _Capsule:
    """Gives a bare DLPack capsule the __dlpack__ protocol NumPy's from_dlpack reads."""

    def __init__(self, capsule) -> None:
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


@export(method=False)
def from_dlpack(ext_tensor, *, device=None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of a DLPack producer (an object with __dlpack__, or a capsule).

    A legacy capsule (to_dlpack's) gives read-only memory to NumPy, so in-place writes to the result fail."""
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    array = np.from_dlpack(ext_tensor) if copy is None else np.from_dlpack(ext_tensor, copy=copy)
    result = _wrap_array(array, dt.from_numpy_dtype(array.dtype))
    return result if device is None else result.to(device)


@export(method=False)
def to_dlpack(tensor: Tensor):
    """A DLPack capsule (legacy, unversioned) of the tensor's memory."""
    return tensor.__dlpack__()


def __dlpack__(self: Tensor, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack protocol: a capsule of this (cpu) tensor's memory."""
    if self._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if self._device.type != "cpu":
        raise BufferError(f"ember can only export cpu tensors through DLPack, not {self._device}")
    kwargs = {} if max_version is None else {"max_version": max_version}
    if copy is not None:
        kwargs["copy"] = copy
    return self._data.__dlpack__(**kwargs)


def __dlpack_device__(self: Tensor) -> tuple:
    return (1, 0)


export(__dlpack__, function=False)
export(__dlpack_device__, function=False)
