"""nn.Parameter, nn.Buffer and the lazy modules' UninitializedParameter / UninitializedBuffer."""

from __future__ import annotations

from .._tensor import Tensor
from .._torch_function import _disabled_torch_function_impl, activate


class Parameter(Tensor):
    """A Tensor that a Module registers as a parameter when assigned as an attribute."""

    _is_param = True
    __torch_function__ = _disabled_torch_function_impl  # ops on a Parameter return plain tensors, as in torch

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from .. import empty

            data = empty(0)
        if type(data) is not Tensor and not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        return data.detach()._make_subclass_of(cls, requires_grad)

    def __init__(self, data=None, requires_grad: bool = True) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self._grad is not None:
            result._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module (torch.nn.Buffer)."""

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            from .. import empty

            data = empty(0)
        out = data.detach()._make_subclass_of(cls, data.requires_grad)
        out.persistent = persistent
        return out


class UninitializedTensorMixin:
    """Shared behaviour of uninitialized parameters/buffers: no data until materialize().  Any other use raises
    torch's ValueError, through ``__torch_function__`` (the protocol is switched on when one is made)."""

    # what torch lets through (UninitializedTensorMixin._allowed_methods), looked up on Tensor when checked
    _allowed_names = ("__hash__", "size", "copy_", "is_complex", "is_floating_point", "half", "float", "double",
                      "char", "short", "int", "long", "cuda", "cpu", "to", "get_device")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # (a property's getter -- `.data`, `.T` -- is a method-wrapper, which torch lets through too)
        if type(func).__name__ == "method-wrapper" or any(func is getattr(Tensor, name, None)
                                                             for name in cls._allowed_names):
            return super().__torch_function__(func, types, args, kwargs or {})
        raise ValueError(
            f"Attempted to use an uninitialized parameter in {func}. This error happens when you are using a "
            f"`LazyModule` or explicitly manipulating `torch.nn.parameter.{cls.__name__}` objects. When using "
            "LazyModules Call `forward` with a dummy batch to initialize the parameters before calling torch "
            "functions")

    def materialize(self, shape, device=None, dtype=None) -> None:
        from .. import empty

        data = empty(shape, device=device or self.device, dtype=dtype or self.dtype)
        self._data = data._data
        self._storage = data._storage
        self._dtype = data._dtype
        self._device = data._device
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes."
        )

    def __repr__(self) -> str:
        return f"<{self.__class__.__name__}>"


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is set on the first forward (Lazy modules)."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        from .. import empty

        activate()
        data = empty(0, device=device, dtype=dtype)
        return data._make_subclass_of(cls, requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass  # everything happens in __new__ (Parameter.__init__ takes other arguments)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    cls_to_become = Tensor

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None):
        from .. import empty

        data = empty(0, device=device, dtype=dtype)
        return data._make_subclass_of(cls, requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass  # everything happens in __new__ (Parameter.__init__ takes other arguments)


def is_lazy(param) -> bool:
    return isinstance(param, UninitializedTensorMixin)
