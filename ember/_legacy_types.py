"""The legacy tensor types: ember.FloatTensor, LongTensor, ... (torch.FloatTensor and kin).

In torch these are not subclasses of Tensor but instances of a metaclass
(`torch.tensortype`): calling one is the legacy constructor (`FloatTensor(2, 3)`
is uninitialised of that size, `LongTensor([1, 2])` copies data), and
`isinstance(t, torch.FloatTensor)` asks whether t is a CPU float32 tensor.
`Tensor.type(...)` converts to one (by class or by name) and `Tensor.type()`
names one; the name parsing shared with it lives here.
"""

from __future__ import annotations

from . import _dtype as dt
from ._device import as_device
from ._tensor import SCALAR_NAMES, Tensor

__all__ = ["tensortype", "LEGACY_TYPES", "parse_type", "type_name"]

def _options(dtype: dt.dtype, device) -> str:
    # the C++ names torch prints in TensorOptions (the legacy constructors' dtype mismatch error)
    return (f"TensorOptions(dtype={dt.CPP_TYPE_NAMES.get(dtype.name, dtype.name)}, device={device}, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


class tensortype(type):
    """The metaclass of the legacy tensor types: each is a (dtype, device type) pair."""

    dtype: dt.dtype
    is_cuda: bool

    def __instancecheck__(cls, instance) -> bool:
        return (isinstance(instance, Tensor) and instance._dtype is cls.dtype
                and instance._device.type == ("cuda" if cls.is_cuda else "cpu"))

    def __call__(cls, *args, **kwargs) -> Tensor:
        """The legacy constructor: no args (empty), sizes or a Size (uninitialised), a sequence (copied data),
        or a tensor of this type (returned as is)."""
        from ._ops.creation import legacy_construct

        device = kwargs.pop("device", None)
        if kwargs:
            given = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
            raise TypeError(f"new() received an invalid combination of arguments - got ({', '.join(given)}), but "
                            "expected one of:\n * (*, torch.device device = None)\n * (torch.Storage storage)\n"
                            " * (Tensor other)\n * (tuple of ints size, *, torch.device device = None)\n"
                            " * (object data, *, torch.device device = None)\n")
        expected = "cuda" if cls.is_cuda else "cpu"
        if device is not None:
            device = as_device(device)
            if device.type != expected:
                raise RuntimeError(f"legacy constructor expects device type: {expected} but device type: "
                                   f"{device.type} was passed")
        else:
            device = as_device(expected)
        if len(args) == 1 and isinstance(args[0], str):
            raise TypeError("new(): invalid data type 'str'")
        if len(args) == 1 and isinstance(args[0], Tensor):
            other = args[0]
            if other._dtype is not cls.dtype or other._device.type != expected:
                raise TypeError(f"expected {_options(cls.dtype, expected)} (got "
                                f"{_options(other._dtype, other._device.type)})")
        return legacy_construct(args, cls.dtype, device)

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _make(name: str, dtype: dt.dtype, cuda: bool) -> tensortype:
    doc = f"Legacy {'cuda ' if cuda else ''}{name}: the type of {'cuda' if cuda else 'CPU'} {dtype.name} tensors."
    cls = tensortype(name, (), {"__doc__": doc, "dtype": dtype, "is_cuda": cuda, "is_sparse": False,
                                "layout": None, "__module__": "torch.cuda" if cuda else "torch"})
    return cls


_DTYPES = {"Float": dt.float32, "Double": dt.float64, "Half": dt.float16, "BFloat16": dt.bfloat16,
           "Long": dt.int64, "Int": dt.int32, "Short": dt.int16, "Char": dt.int8, "Byte": dt.uint8,
           "Bool": dt.bool_}
# name -> type, for the CPU ("FloatTensor") and cuda ("cuda.FloatTensor") families
LEGACY_TYPES = {f"{prefix}{kind}Tensor": _make(f"{kind}Tensor", dtype, bool(prefix))
                for prefix in ("", "cuda.") for kind, dtype in _DTYPES.items()}


def _set_layout() -> None:
    """torch.strided lives in ember/__init__.py; the types are made before it, so their layout is set after."""
    import sys

    strided = sys.modules["ember"].strided
    for cls in LEGACY_TYPES.values():
        cls.layout = strided


def parse_type(value) -> tuple[dt.dtype, str]:
    """Tensor.type's argument (a dtype, a legacy type or its name: 'torch.LongTensor', 'torch.cuda.FloatTensor')
    as (dtype, device type or None); torch's ValueError for anything else."""
    if isinstance(value, dt.dtype):
        return value, None
    if isinstance(value, tensortype):
        return value.dtype, "cuda" if value.is_cuda else "cpu"
    if isinstance(value, str):
        name = value[len("torch."):] if value.startswith("torch.") else None
        cls = LEGACY_TYPES.get(name) if name is not None else None
        if cls is None:
            reverse = {f"{v}Tensor": k for k, v in SCALAR_NAMES.items()}  # complex types have no class
            for prefix, device in (("", "cpu"), ("cuda.", "cuda")):
                if name is not None and name.startswith(prefix) and name[len(prefix):] in reverse:
                    return dt._dtype_by_name(reverse[name[len(prefix):]]), device
            raise ValueError(f"invalid type: '{value}'")
        return cls.dtype, "cuda" if cls.is_cuda else "cpu"
    raise ValueError(f"invalid type: '{getattr(value, '__name__', value)}'")


def type_name(tensor: Tensor) -> str:
    """Tensor.type() with no argument: 'torch.FloatTensor', 'torch.cuda.LongTensor', 'torch.quantized...'."""
    scalar = SCALAR_NAMES[tensor._dtype.name]
    if tensor._dtype.category < 0:
        return f"torch.quantized.{scalar}Tensor"
    if tensor._device.type == "cuda":
        return f"torch.cuda.{scalar}Tensor"
    return f"torch.{scalar}Tensor"
