"""The ``__torch_function__`` protocol: Tensor subclasses (and their ops' results) keep their class, and a
subclass that defines ``__torch_function__`` sees every ember function and Tensor method called on it.

torch checks every call for overriding arguments in C.  ember's functions are Python, so the check is a
wrapper around each public function (``ember.*``, ``ember.nn.functional``, ``linalg``, ``fft``, ``special``)
and each Tensor method and operator -- installed the first time it can matter, when a Tensor subclass whose
``__torch_function__`` is not disabled is defined (or an UninitializedParameter made), so programs that never
subclass pay nothing.  ``Parameter`` and ``Buffer`` disable it, as in torch: their ops return plain tensors.
Of the property reads only ``data``, ``T``, ``mT``, ``H``, ``mH``, ``real`` and ``imag`` are dispatched
(torch dispatches ``.shape`` and ``.grad`` too), and a non-Tensor class with
``__torch_function__`` is dispatched to only through ``ember.overrides.handle_torch_function``.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Callable

from ._tensor import Tensor

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "activate", "is_torch_function_enabled"]


def _disabled_torch_function_impl(func, types, args=(), kwargs=None):
    """torch._C._disabled_torch_function_impl: a class holding it as ``__torch_function__`` does not override;
    called (through super() from a subclass that does), it runs `func` with the protocol off."""
    with DisableTorchFunctionSubclass():
        return func(*args, **(kwargs or {}))


class _State(threading.local):
    disabled = 0  # >0 inside DisableTorchFunction(Subclass): calls run their implementation directly


_state = _State()
_active = False


class DisableTorchFunctionSubclass:
    """Within the block, ember functions ignore subclasses' ``__torch_function__`` (what the default
    ``Tensor.__torch_function__`` runs its function under)."""

    def __enter__(self):
        _state.disabled += 1
        return self

    def __exit__(self, *exc) -> None:
        _state.disabled -= 1


DisableTorchFunction = DisableTorchFunctionSubclass  # (torch's also disables modes; ember has none)


def is_torch_function_enabled() -> bool:
    return _state.disabled == 0


def overrides(kind: type) -> bool:
    """Whether instances of `kind` take part in the protocol (plain Tensor and disabled classes do not)."""
    if kind is Tensor or getattr(kind, "__module__", "").split(".")[0] == "torch":
        return False  # (real torch's tensors are foreign arrays here, read through dlpack or __array__)
    method = getattr(kind, "__torch_function__", None)
    return method is not None and method is not _disabled_torch_function_impl


_PLAIN = {Tensor, int, float, bool, type(None), str, slice, complex}


def _relevant(args, kwargs) -> list:
    """The arguments (lists and tuples searched one level down) whose class overrides, in order."""
    found = []
    for value in (*args, *kwargs.values()) if kwargs else args:
        kind = type(value)
        if kind in _PLAIN:
            continue
        if kind is list or kind is tuple:
            found.extend(item for item in value if type(item) not in _PLAIN and overrides(type(item)))
        elif overrides(kind):
            found.append(value)
        else:
            _remember_plain(kind)
    return found


def dispatching(args, kwargs) -> bool:
    """Whether a call with these arguments would go to a ``__torch_function__`` (ember.compile runs it eagerly)."""
    return _active and not _state.disabled and bool(_relevant(args, kwargs))


def _remember_plain(kind: type) -> None:
    """Classes found not to override are skipped by a set lookup from then on (Parameter, dtypes, modules)."""
    if len(_PLAIN) < 256:
        _PLAIN.add(kind)


def _dispatching(fn: Callable, qualified: str) -> Callable:
    """`fn` behind the protocol's check: with an overriding argument, its class's ``__torch_function__`` runs
    instead (given this wrapper as `func`, the object the user called).  `qualified` is torch's name for it,
    for the error when every handler returns NotImplemented."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _state.disabled:
            relevant = _relevant(args, kwargs)
            if relevant:
                return _handle(wrapper, qualified, relevant, args, kwargs)
        return fn(*args, **kwargs)

    wrapper.__wrapped_by_torch_function__ = fn
    if fn.__name__.startswith("_") and not fn.__name__.startswith("__"):  # an operator's helper (`_matmul`)
        wrapper.__name__ = fn.__name__.lstrip("_")
    return wrapper


def _handle(func, qualified: str, relevant: list, args, kwargs):
    """Each overriding class's ``__torch_function__`` in torch's order until one does not return NotImplemented.
    When all do, an operator returns NotImplemented (Python then raises its own TypeError, as torch's slots
    do), ``nn.functional`` raises torch's Python-side message and everything else torch's C++ one."""
    from .overrides import _get_overloaded_args, handle_torch_function

    if qualified.startswith("torch.nn.functional."):
        return handle_torch_function(func, relevant, *args, **kwargs)
    overloaded = _get_overloaded_args(relevant)
    kinds = tuple(type(value) for value in overloaded)
    for value in overloaded:
        result = type(value).__torch_function__(func, kinds, args, kwargs)
        if result is not NotImplemented:
            return result
    if qualified.startswith("torch.Tensor.__"):
        return NotImplemented
    listed = "".join(f"\n  - {'tensor subclass' if issubclass(kind, Tensor) else 'object'} {kind}" for kind in kinds)
    raise TypeError(f"Multiple dispatch failed for '{qualified}'; all __torch_function__ handlers returned "
                    f"NotImplemented:\n{listed}\n\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")


def _dispatching_property(prop: property) -> property:
    """A Tensor property whose read goes through the protocol, as torch's getters do (`func` is the property's
    ``__get__``, a method-wrapper, as in torch)."""
    def fget(self):
        if not _state.disabled and overrides(type(self)):
            return _handle(dispatched.__get__, "torch.Tensor.getter", [self], (self,), {})
        return prop.fget(self)

    dispatched = property(fget, prop.fset, prop.fdel, prop.__doc__)
    return dispatched


def _convert(result, cls):
    """Results of a subclass's op take its class (torch.Tensor._convert), inside tuples and lists too."""
    if cls is Tensor:
        return result
    if isinstance(result, Tensor) and not isinstance(result, cls):
        result = result.as_subclass(cls)
    if isinstance(result, (tuple, list)):
        items = [_convert(item, cls) for item in result]
        result = type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def _from_torch(func) -> bool:
    """Whether `func` is real torch's: torch, seeing this class's ``__torch_function__``, asks it about ember
    tensors passed to torch (`torch.from_dlpack(ember_tensor)`)."""
    for owner in (func, getattr(func, "__objclass__", None), getattr(getattr(func, "__self__", None),
                                                                     "__objclass__", None)):
        module = getattr(owner, "__module__", None)
        if isinstance(module, str):
            return module.split(".")[0] == "torch"
    return False


def _default_torch_function(cls, func, types, args=(), kwargs=None):
    """torch.Tensor.__torch_function__: run `func` with the protocol off and give tensor results `cls`."""
    if kwargs is None:
        kwargs = {}
    if _from_torch(func):
        # torch's own call: let it go on as it did before this class had the attribute, with torch's protocol
        # off (torch is loaded -- it is the caller; ember does not import it)
        with sys.modules["torch"]._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    if not all(issubclass(cls, kind) for kind in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        result = func(*args, **kwargs)
        return _convert(result, cls)


Tensor.__torch_function__ = classmethod(_default_torch_function)

# Tensor attributes that are Python's object protocol or ember's own bookkeeping, not torch functions
_NOT_DISPATCHED = {
    "__new__", "__init__", "__init_subclass__", "__torch_function__", "__getattribute__", "__getattr__",
    "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__", "__deepcopy__", "__copy__", "__getstate__",
    "__setstate__", "__sizeof__", "__subclasshook__", "__dir__", "__class_getitem__", "__hash__", "__array__",
    "__array_wrap__", "__array_priority__", "__dlpack__", "__dlpack_device__", "__cuda_array_interface__",
    "__str__", "as_subclass",
    "__iter__",  # torch skips it on purpose (gh-54457): iterating a subclass gives its unbind(0)'s results
}


_PROPERTIES = ("data", "T", "mT", "H", "mH", "real", "imag")  # the getters dispatched (torch's list is longer)


def _wrap_namespace(namespace, names, prefix: str) -> None:
    for name in names:
        fn = getattr(namespace, name, None)
        if isinstance(fn, types.FunctionType) and not hasattr(fn, "__wrapped_by_torch_function__"):
            setattr(namespace, name, _dispatching(fn, prefix + name))


def activate() -> None:
    """Install the protocol's checks (once): Tensor's methods and operators, and the public functions."""
    global _active
    if _active:
        return
    _active = True
    import ember
    from ember import fft, linalg, special
    from ember.nn import functional

    from ._ops._api import FUNCTIONS
    from .overrides import _IGNORED_NAMES

    methods = [name for name, value in vars(Tensor).items()
               if isinstance(value, types.FunctionType) and name not in _NOT_DISPATCHED
               and (not name.startswith("_") or (name.startswith("__") and name.endswith("__")))]
    _wrap_namespace(Tensor, methods, "torch.Tensor.")
    for name in _PROPERTIES:
        setattr(Tensor, name, _dispatching_property(vars(Tensor)[name]))
    _wrap_namespace(ember, [name for name in FUNCTIONS if name not in _IGNORED_NAMES], "torch.")
    for namespace, prefix in ((functional, "torch.nn.functional."), (linalg, "torch.linalg."), (fft, "torch.fft."),
                              (special, "torch.special.")):
        _wrap_namespace(namespace, [name for name in getattr(namespace, "__all__", dir(namespace))
                                    if not name.startswith("_")], prefix)


def _subclass_defined(cls: type) -> None:
    """Tensor.__init_subclass__: a user's subclass that overrides (by defining or inheriting the default
    ``__torch_function__``) switches the protocol on; ember's own subclasses are set up before it is needed."""
    if overrides(cls) and not cls.__module__.startswith("ember."):
        activate()


def _init_subclass(cls, **kwargs) -> None:
    super(Tensor, cls).__init_subclass__(**kwargs)
    _subclass_defined(cls)


Tensor.__init_subclass__ = classmethod(_init_subclass)
