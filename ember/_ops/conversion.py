"""Copies and conversions: to(dtype/device), clone, contiguous, copy_, and the dtype shorthands (.float() ...)."""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import state
from .._backends import MetaArray, pinned_empty, to_device, to_host
from .._backends import is_pinned as _backend_is_pinned
from .._device import as_device
from .._dispatch import OpDef, call, keep
from .._tensor import Tensor
from ._api import export
from ._shapes import copy_preserving_format, empty_in_order, format_order, suggested_order


def _cast_impl(xp, a, dtype):
    if dtype in dt.FLOAT8_DTYPES and a.dtype != dtype.np_dtype:
        return dt.to_float8(xp, a, dtype)  # torch's rounding and saturation; astype keeps the layout (order "K")
    return copy_preserving_format(xp, a, dtype.np_dtype)  # NOTE [ preserve_format ] in _shapes.py


def _cast_rule(args, params):
    return None, params["dtype"]


def _to_backward(ctx, g):
    return g  # cast back to the input's dtype centrally: NOTE [ Gradient unbroadcasting ]


_TO_COPY = OpDef("_to_copy", _cast_impl, _to_backward, dtype_rule=_cast_rule, upcast_half=False,
                 meta=lambda args, p: args[0].shape, grad_name="ToCopyBackward0")
_CLONE = OpDef("clone", copy_preserving_format, lambda ctx, g: g, dtype_rule=keep, upcast_half=False,
               meta=lambda args, p: args[0].shape)
_CLONE.quantized = True  # clone / contiguous of a quantized tensor copy its integers and qparams
# clone(memory_format=torch.contiguous_format), what contiguous() makes: the copy in C order
_CONTIGUOUS = OpDef("clone", lambda xp, a: a.copy(), lambda ctx, g: g, dtype_rule=keep, upcast_half=False,
                    meta=lambda args, p: args[0].shape)
_CONTIGUOUS.quantized = True


def _in_order_impl(xp, a, order):
    out = empty_in_order(xp, a.shape, a.dtype, list(order))
    out[...] = a
    return out


# clone / contiguous(memory_format=torch.channels_last or channels_last_3d): the same values stored NHWC / NDHWC
# (the array's strides say so, as a torch tensor's do).  Float kernels ignore the layout; quantized ones pick
# torch's channels-last kernels by it (NOTE [ QuantizedCPU vector and scalar paths ] in quantized_numerics.py).
_CHANNELS_LAST = OpDef("clone", _in_order_impl, lambda ctx, g: g, dtype_rule=keep, upcast_half=False,
                       meta=lambda args, p: args[0].shape)
_CHANNELS_LAST.quantized = True


def _is_contiguous_format(memory_format) -> bool:
    return getattr(memory_format, "name", None) == "contiguous_format"


_TO_SIGNATURES = (
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
)


def _arg_type_name(value) -> str:
    from .._device import device as device_type

    if isinstance(value, dt.dtype):
        return "torch.dtype"
    if isinstance(value, device_type):
        return "torch.device"
    if isinstance(value, Tensor):
        return "Tensor"
    if type(value).__name__ == "memory_format":
        return "torch.memory_format"
    return type(value).__name__


def _to_type_error(args, kwargs) -> TypeError:
    """torch's python-arg-parser message: the given types, then the three overloads of to()."""
    given = [_arg_type_name(a) for a in args]
    given += [f"{k}={_arg_type_name(v)}" for k, v in sorted(kwargs.items())]
    got = ", ".join(given) + (", " if kwargs and not args else "")
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                     + _TO_SIGNATURES)


def _parse_to(args, kwargs):
    """Tensor.to's overloads, as torch's parser binds them: to(device=None, dtype=None, non_blocking=False,
    copy=False), to(dtype, non_blocking=False, copy=False), to(tensor, non_blocking=False, copy=False), each
    with keyword-only memory_format (popped by the caller).  Returns (device, dtype, copy, non_blocking); an
    argument list no overload accepts raises torch's TypeError."""
    from .._device import device as device_type

    given = dict(kwargs)
    kwargs.clear()
    if args and isinstance(args[0], dt.dtype):
        names = ("dtype", "non_blocking", "copy")
    elif args and isinstance(args[0], Tensor):
        names = ("tensor", "non_blocking", "copy")
    else:
        names = ("device", "dtype", "non_blocking", "copy")
    bound = dict(zip(names, args))
    ok = len(args) <= len(names) and all(k in names and k not in bound for k in given)
    bound.update(given)
    device, dtype = bound.get("device"), bound.get("dtype")
    non_blocking, copy = bound.get("non_blocking", False), bound.get("copy", False)
    ok = ok and (device is None or isinstance(device, (str, device_type))
                 or (isinstance(device, int) and not isinstance(device, bool)))
    ok = ok and (dtype is None or isinstance(dtype, dt.dtype))
    ok = ok and isinstance(non_blocking, bool) and isinstance(copy, bool)
    if not ok:
        raise _to_type_error(args, given)
    if "tensor" in bound:
        device, dtype = bound["tensor"]._device, bound["tensor"]._dtype
    return device, dtype, copy, non_blocking


def to(self: Tensor, *args, **kwargs) -> Tensor:
    """Convert dtype and/or device; returns self when nothing changes and copy=False."""
    memory_format = kwargs.pop("memory_format", None)
    device, dtype, copy, _ = _parse_to(args, kwargs)
    if memory_format is not None and memory_format.name != "preserve_format":
        return _to_memory_format(self, memory_format, device, dtype, copy)
    device = self._device if device is None else as_device(device)
    if device.type == "cuda" and device.index is None:
        device = as_device("cuda:0")
    dtype = dtype or self._dtype
    if dtype.category < 0 and dtype is not self._dtype:  # NOTE [ Quantized dtypes ]: quantize explicitly
        raise RuntimeError("empty_strided not supported on quantized tensors yet see "
                           "https://github.com/pytorch/pytorch/issues/74540")
    if device == self._device and dtype is self._dtype:
        return call(_CLONE, (self,)) if copy else self
    result = self if dtype is self._dtype else call(_TO_COPY, (self,), {"dtype": dtype})
    if device != self._device:
        result = _move(result if result is not self else call(_CLONE, (self,)), device)
    return result


def _to_memory_format(self: Tensor, memory_format, device, dtype, copy: bool) -> Tensor:
    """to(..., memory_format=torch.contiguous_format / torch.channels_last).  As torch's, this returns self
    when nothing else changes and the tensor's suggested format (channels-last strides, else contiguous) is
    the one asked for, even for a non-contiguous tensor."""
    order = format_order(memory_format, self.ndim)
    converted = to(self, device, dtype, copy=copy)
    if converted is self:
        suggested = None if self.is_contiguous() else suggested_order(self._data)
        if suggested == order:
            return self
    elif order is not None and converted.is_contiguous(memory_format=memory_format):
        return converted
    elif order is None and converted.is_contiguous():
        return converted
    if order is None:
        return call(_CONTIGUOUS, (converted,))
    return call(_CHANNELS_LAST, (converted,), {"order": tuple(order)})


def _move(tensor: Tensor, device) -> Tensor:
    """Copy data to another device; the autograd edge is kept through a differentiable identity."""
    array = tensor._data
    if device.type == "meta":
        moved = MetaArray(array.shape, array.dtype)
    elif isinstance(array, MetaArray):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    elif device.type == "cpu":
        _dispatch.host_read("a copy between devices")  # not an op: a capture would keep this call's copy
        moved = to_host(array)
    else:
        _dispatch.host_read("a copy between devices")
        moved = to_device(array, device)  # non_blocking is accepted; copies are synchronous (see docs/cuda.md)
    out = Tensor._make(moved, tensor._dtype, device)
    if tensor._requires_grad:
        from .._autograd.grad_mode import state
        from .view_nodes import _manual_node

        if state.enabled:
            node = _manual_node(_TO_DEVICE, {"device": tensor._device}, (tensor,), out)
            out._grad_fn, out._requires_grad = node, True
    return out


_TO_DEVICE = OpDef("_to_copy", None, lambda ctx, g: to(g, ctx.params["device"]), dtype_rule=keep,
                   grad_name="ToCopyBackward0")


export(to, function=False)


@export
def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own storage (gradients flow back unchanged).  The default, torch.preserve_format, keeps
    the input's layout (NOTE [ preserve_format ] in _shapes.py); torch.contiguous_format stores it in C order,
    torch.channels_last NHWC."""
    order = format_order(memory_format, input.ndim)
    if order is not None:
        return call(_CHANNELS_LAST, (input,), {"order": tuple(order)})
    if _is_contiguous_format(memory_format):
        return call(_CONTIGUOUS, (input,))
    return call(_CLONE, (input,))


@export
def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """self if already contiguous in `memory_format` (C order by default, NHWC for torch.channels_last), else a
    copy that is."""
    order = format_order(memory_format, input.ndim)
    if order is not None:
        if input.is_contiguous(memory_format=memory_format):
            return input
        return call(_CHANNELS_LAST, (input,), {"order": tuple(order)})
    if input.is_contiguous():
        return input
    if getattr(memory_format, "name", None) == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return call(_CONTIGUOUS, (input,))


def _copy_backward(ctx, grad):
    needs_self, needs_src = ctx.needs_input_grad
    from .creation import zeros_like

    return (zeros_like(grad) if needs_self else None, grad if needs_src else None)


# copy_'s value as an op of both tensors: the old values get a zero gradient (torch's CopyBackwards), and the
# copy replaces self's history even when the source needs no gradient (x = w * 2; x.copy_(zeros) then
# x.sum().backward() gave w the gradient of the overwritten values)
_COPY = OpDef("copy", lambda xp, a, value: value.copy(), _copy_backward, dtype_rule=keep, upcast_half=False,
              grad_name="CopyBackwards", meta=lambda args, params: tuple(args[0].shape))


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy src's values into self (broadcast to self's shape, cast to self's dtype); gradients flow to src."""
    if not isinstance(src, Tensor):
        from .creation import tensor as _tensor

        src = _tensor(np.asarray(src, self._dtype.np_dtype), device=self._device)
    value = src
    if value._device != self._device:
        value = to(value, self._device)
    if value._dtype is not self._dtype:
        value = to(value, self._dtype)
    if tuple(value.shape) != tuple(self.shape):
        value = value.expand(self.shape)
    self._check_inplace()
    if state.enabled and (self._requires_grad or value._requires_grad):  # torch's CopyBackwards either way
        value = call(_COPY, (self, value))
    elif value is src or value._storage is self._storage:
        value = call(_CLONE, (value,)) if value._requires_grad else value
    return self._inplace_from(value, allow_cast=True)


export(copy_, function=False)


def _dtype_method(name, dtype):
    def method(self, memory_format=None):
        return to(self, dtype) if memory_format is None else to(self, dtype, memory_format=memory_format)

    method.__name__ = name
    method.__doc__ = f"self.to({dtype})"
    export(method, name=name, function=False)


for _name, _dtype in (("float", dt.float32), ("double", dt.float64), ("half", dt.float16),
                      ("bfloat16", dt.bfloat16), ("long", dt.int64), ("int", dt.int32), ("short", dt.int16),
                      ("char", dt.int8), ("byte", dt.uint8), ("bool", dt.bool_), ("cfloat", dt.complex64),
                      ("cdouble", dt.complex128)):
    _dtype_method(_name, _dtype)


def type_(self: Tensor, dtype=None, non_blocking: bool = False):
    """Tensor.type(): the legacy type name, or a conversion to a dtype, a legacy type or a type's name
    (ember/_legacy_types.py)."""
    from .._legacy_types import parse_type, type_name

    if dtype is None:
        return type_name(self)
    dtype, device = parse_type(dtype)
    if device is not None and device != self._device.type:
        return to(self, device=device, dtype=dtype, non_blocking=non_blocking)
    return to(self, dtype, non_blocking=non_blocking)


export(type_, name="type", function=False)


def type_as(self: Tensor, other: Tensor) -> Tensor:
    return to(self, other._dtype)


export(type_as, function=False)


def cpu(self: Tensor, memory_format=None) -> Tensor:
    return to(self, "cpu")


def cuda(self: Tensor, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
    return to(self, "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int) else device))


export(cpu, function=False)
export(cuda, function=False)


def pin_memory(self: Tensor, device=None) -> Tensor:
    """A copy of this CPU tensor in page-locked host memory, for faster (and asynchronous) copies to the GPU.

    With CuPy and a GPU the buffer comes from cupyx.empty_pinned; under emulated cuda pinning is only a flag;
    with no cuda device at all it raises torch's error.
    """
    from .. import cuda

    if self._device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.is_pinned():
        return self
    buffer = pinned_empty(self._data.shape, self._data.dtype)
    buffer[...] = self._data
    out = Tensor._make(buffer, self._dtype, self._device)
    out._pinned = True  # a copy outside the graph: pinned buffers feed data loading, not autograd
    return out


def is_pinned(self: Tensor, device=None) -> bool:
    """Whether this tensor lives in page-locked host memory (see pin_memory)."""
    if self._device.type != "cpu" or isinstance(self._data, MetaArray):
        return False
    return bool(self.__dict__.get("_pinned")) or _backend_is_pinned(self._data)


export(pin_memory, function=False)
export(is_pinned, function=False)
