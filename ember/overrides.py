"""ember.overrides: torch.overrides, the helpers of the ``__torch_function__`` protocol.

Tensor subclasses take part as in torch (ember/_torch_function.py: their ops dispatch to their
``__torch_function__``, whose default keeps their class); ``Tensor``, ``Parameter`` and ``Buffer`` do not
override.  An object of another class that defines ``__torch_function__`` is reported as overriding, and
:func:`handle_torch_function` calls its ``__torch_function__`` as torch does, so library code written against
this module (checks first, then ``handle_torch_function``) keeps working.  Torch function modes
(TorchFunctionMode) are not supported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["get_ignored_functions", "get_overridable_functions", "get_testing_overrides", "handle_torch_function",
           "has_torch_function", "has_torch_function_unary", "has_torch_function_variadic", "is_tensor_like",
           "is_tensor_method_or_property", "resolve_name", "wrap_torch_function"]

# torch functions that take no tensors or are ember's own machinery: never overridable (a subset of
# torch.overrides.get_ignored_functions(), by name, of the functions ember has)
_IGNORED_NAMES = (
    "typename", "is_tensor", "is_storage", "set_default_tensor_type", "set_default_device", "get_default_device",
    "set_rng_state", "get_rng_state", "manual_seed", "initial_seed", "seed", "save", "load", "set_printoptions",
    "compile", "vmap", "set_default_dtype", "get_default_dtype", "promote_types", "result_type", "can_cast",
    "is_grad_enabled", "set_grad_enabled", "no_grad", "enable_grad", "inference_mode", "is_inference_mode_enabled",
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads", "from_numpy",
    "frombuffer", "tensor", "as_tensor", "empty", "zeros", "ones", "full", "arange", "range", "linspace",
    "logspace", "eye", "rand", "randn", "randint", "randperm", "empty_strided", "scalar_tensor", "iinfo", "finfo",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "broadcast_shapes",
)


def _tensor_types() -> tuple:
    from . import Tensor
    from .nn import Parameter

    return (Tensor, Parameter)


def _overrides(value) -> bool:
    """Whether `value`'s class takes part in __torch_function__ (ember's Tensor, Parameter and Buffer do not)."""
    from ._torch_function import overrides

    return overrides(type(value))


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether any of `relevant_args` overrides ember functions through ``__torch_function__``."""
    return any(_overrides(value) for value in relevant_args)


def has_torch_function_unary(obj: Any) -> bool:
    """:func:`has_torch_function` of one argument."""
    return _overrides(obj)


def has_torch_function_variadic(*args: Any) -> bool:
    """:func:`has_torch_function` of the arguments themselves."""
    return any(_overrides(value) for value in args)


def is_tensor_like(inp: Any) -> bool:
    """True for an ember tensor, or an object whose class defines ``__torch_function__``."""
    return isinstance(inp, _tensor_types()) or getattr(type(inp), "__torch_function__", None) is not None


def _get_overloaded_args(relevant_args: Iterable[Any]) -> list:
    """The arguments whose types override, one per type, subclasses before their base classes (torch's order)."""
    overloaded, types = [], []
    for value in relevant_args:
        kind = type(value)
        if kind in types or not _overrides(value):
            continue
        index = len(overloaded)
        for position, earlier in enumerate(overloaded):
            if issubclass(kind, type(earlier)):
                index = position
                break
        overloaded.insert(index, value)
        types.append(kind)
    return overloaded


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], *args, **kwargs) -> Any:
    """Call the ``__torch_function__`` of the overriding arguments in turn, until one does not return
    NotImplemented; TypeError when none implements `public_api`."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(type(value) for value in overloaded)
    for value in overloaded:
        method = type(value).__torch_function__
        result = method(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = resolve_name(public_api) or getattr(public_api, "__name__", repr(public_api))
    raise TypeError(f"no implementation found for '{name}' on types that implement __torch_function__: "
                    f"{[type(value) for value in overloaded]}")


def wrap_torch_function(dispatcher: Callable) -> Callable:
    """Decorate a function so that, when `dispatcher(*args, **kwargs)` holds overriding arguments, their
    ``__torch_function__`` runs instead."""

    def decorator(fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return fn(*args, **kwargs)

        return wrapped

    return decorator


def get_ignored_functions() -> set:
    """The ember functions that cannot be overridden (they take no tensor, or are ember's machinery)."""
    import ember

    return {getattr(ember, name) for name in _IGNORED_NAMES if hasattr(ember, name)}


def _public_callables(namespace) -> list:
    found = []
    for name in dir(namespace):
        if name.startswith("_"):
            continue
        value = getattr(namespace, name, None)
        if callable(value) and not isinstance(value, type):
            found.append(value)
    return found


def get_overridable_functions() -> dict:
    """{namespace: [functions]} for ember, ember.Tensor and ember.nn.functional, less the ignored ones."""
    import ember

    from .nn import functional

    ignored = get_ignored_functions()
    result = {}
    for namespace in (ember, ember.Tensor, functional):
        result[namespace] = [fn for fn in _public_callables(namespace) if fn not in ignored]
    return result


def get_testing_overrides() -> dict:
    """{function: a dummy override returning -1} for every overridable function."""
    overrides = {}
    for functions in get_overridable_functions().values():
        for fn in functions:
            overrides[fn] = lambda *args, **kwargs: -1
    return overrides


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether `func` is a method or property getter of ember.Tensor (whose first argument is the tensor)."""
    from . import Tensor

    name = getattr(func, "__name__", None)
    return name == "__get__" or (name is not None and getattr(Tensor, name, None) is func)


def resolve_name(f: Callable) -> str | None:
    """'ember.add', 'ember.Tensor.add', 'ember.nn.functional.relu': where `f` is found, or None."""
    import ember

    from .nn import functional

    name = getattr(f, "__name__", None)
    if name is None:
        return None
    # ember.add and ember.Tensor.add are often one function object: the module name comes first
    for prefix, namespace in (("ember", ember), ("ember.nn.functional", functional),
                              ("ember.Tensor", ember.Tensor)):
        if getattr(namespace, name, None) is f:
            return f"{prefix}.{name}"
    return None
