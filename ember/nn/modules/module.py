"""nn.Module: torch's Module, attribute for attribute.

Parameters, buffers and submodules live in `_parameters`, `_buffers` and
`_modules`, registered by `__setattr__`; state_dict keys, hook order, repr and
`_apply` follow torch's module.py so that models written for torch run and
print unchanged.  `__call__` takes a fast path when no hook is set anywhere.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator

from ..._autograd.hooks import RemovableHandle
from ..._tensor import Tensor
from ..parameter import Buffer, Parameter
from ._state_dict import StateDictMixin

__all__ = [
    "Module",
    "register_module_forward_pre_hook",
    "register_module_forward_hook",
    "register_module_full_backward_hook",
    "register_module_buffer_registration_hook",
    "register_module_parameter_registration_hook",
    "register_module_module_registration_hook",
]

class HookDict(OrderedDict):
    """The forward/backward hooks of a module (or the global ones): any change -- a hook registered, removed
    or moved first -- bumps `hook_changes[0]`, the one number ember.compile guards for all of them."""

    __slots__ = ()

    def __setitem__(self, key, value) -> None:
        hook_changes[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        hook_changes[0] += 1
        super().__delitem__(key)

    def pop(self, *args):
        hook_changes[0] += 1
        return super().pop(*args)

    def popitem(self, last: bool = True):
        hook_changes[0] += 1
        return super().popitem(last)

    def clear(self) -> None:
        hook_changes[0] += 1
        super().clear()

    def update(self, *args, **kwargs) -> None:
        hook_changes[0] += 1
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        hook_changes[0] += 1
        return super().setdefault(key, default)

    def move_to_end(self, key, last: bool = True) -> None:
        hook_changes[0] += 1
        super().move_to_end(key, last)


hook_changes = [0]
HOOK_DICT_NAMES = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")  # HookDicts
_global_forward_pre_hooks: dict = HookDict()
_global_forward_hooks: dict = HookDict()
_global_forward_hooks_always_called: dict = OrderedDict()
_global_backward_hooks: dict = HookDict()
_global_backward_pre_hooks: dict = HookDict()
_global_buffer_registration_hooks: dict = OrderedDict()
_global_parameter_registration_hooks: dict = OrderedDict()
_global_module_registration_hooks: dict = OrderedDict()


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * spaces + line for line in lines)


def _add_global_hook(hooks: dict, hook) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, always_call: bool = False) -> RemovableHandle:
    handle = _add_global_hook(_global_forward_hooks, hook)
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_buffer_registration_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_buffer_registration_hooks, hook)


def register_module_parameter_registration_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_parameter_registration_hooks, hook)


def register_module_module_registration_hook(hook) -> RemovableHandle:
    return _add_global_hook(_global_module_registration_hooks, hook)


def _forward_unimplemented(self, *input) -> None:
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module(StateDictMixin):
    """Base class for all neural network modules."""

    dump_patches: bool = False
    _version: int = 1
    training: bool
    call_super_init: bool = False
    _compiled_call_impl = None

    def __init__(self, *args, **kwargs) -> None:
        if self.call_super_init is False and bool(kwargs):
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'"
            )
        if self.call_super_init is False and bool(args):
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_backward_pre_hooks", HookDict())
        setattr_(self, "_backward_hooks", HookDict())
        setattr_(self, "_is_full_backward_hook", None)
        setattr_(self, "_forward_hooks", HookDict())
        setattr_(self, "_forward_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_forward_hooks_always_called", OrderedDict())
        setattr_(self, "_forward_pre_hooks", HookDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())
        setattr_(self, "_modules", {})
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    forward: Callable = _forward_unimplemented

    # ------------------------------------------------------------ registration
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer (state that is not a parameter, e.g. BatchNorm's running_mean)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (torch Tensor or "
                            "None required)")
        if isinstance(tensor, Buffer):
            persistent = getattr(tensor, "persistent", persistent)
            tensor = tensor.detach()._make_subclass_of(Tensor, tensor.requires_grad)
        for hook in _global_buffer_registration_hooks.values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter; it must be an nn.Parameter (or None)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            typename = param.type() if isinstance(param, Tensor) else type(param).__name__  # torch.typename
            raise TypeError(f"cannot assign '{typename}' object to parameter '{name}' (torch.nn.Parameter "
                            "or None required)")
        if param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. "
                f"To express '{name}' as a function of another Tensor, compute the value in the forward() method."
            )
        for hook in _global_parameter_registration_hooks.values():
            output = hook(self, name, param)
            if output is not None:
                param = output
        self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module, reachable as an attribute."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        for hook in _global_module_registration_hooks.values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path ('' is self)."""
        if target == "":
            return self
        module = self
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(module._get_name() + " has no attribute `" + item + "`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return module

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        *path, last = target.split(".")
        if not isinstance(module, Module):
            raise ValueError("`" + "module" + f"` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, last):
            raise AttributeError(parent._get_name() + " has no attribute `" + last + "`")
        if hasattr(parent, last) and not isinstance(getattr(parent, last), Module):
            raise AttributeError("`" + last + "` is not an nn.Module")
        setattr(parent, last, module)

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(module._get_name() + " has no attribute `" + name + "`")
        if name not in module._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(module, name)

    def get_extra_state(self):
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    def set_extra_state(self, state) -> None:
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report this bug."
        )

    # ------------------------------------------------------------ applying functions
    def _apply(self, fn, recurse: bool = True):
        """Apply fn to every parameter, gradient and buffer, keeping Parameter objects (torch's default)."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            from ..._autograd.grad_mode import no_grad

            with no_grad():
                param_applied = fn(param)
            param.data = param_applied
            if param._grad is not None:
                with no_grad():
                    grad_applied = fn(param._grad)
                param._grad = grad_applied
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn: Callable[[Module], None]):
        """Call fn on every submodule (children first) and self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    def to_empty(self, *, device=None, recurse: bool = True):
        from ... import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers (floating ones only get a new dtype)."""
        from ..._ops.conversion import _parse_to

        kwargs = dict(kwargs)
        memory_format = kwargs.pop("memory_format", None)
        device, dtype, copy, non_blocking = _parse_to(args, kwargs)
        if copy:
            raise RuntimeError(".to() does not accept copy argument")
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError(
                    f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={dtype}"
                )
            if dtype.is_complex:
                warnings.warn(
                    "Complex modules are a new feature under active development whose design may change, "
                    "and some modules might not work as expected when using complex tensors as parameters or buffers. "
                    "Please file an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                    "if a complex module does not work as expected.",
                    stacklevel=2,
                )

        def convert(t):
            cast = dtype if (t.is_floating_point() or t.is_complex()) else None
            if memory_format is not None and t.dim() in (4, 5):
                return t.to(device, cast, non_blocking, memory_format=memory_format)
            return t.to(device, cast, non_blocking)

        return self._apply(convert)

    def share_memory(self):
        """Move every parameter and buffer (and existing .grad) into shared memory, in place (Hogwild)."""
        for tensor in [*self.parameters(), *self.buffers()]:
            tensor.share_memory_()
            if tensor._grad is not None:
                tensor._grad.share_memory_()
        return self

    # ------------------------------------------------------------ hooks
    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook) -> RemovableHandle:
        warnings.warn("register_backward_hook is deprecated; ember runs it as a full backward hook", stacklevel=2)
        return self.register_full_backward_hook(hook)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> new grad_input or None, after the module's backward."""
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """hook(module, args) [-> new args], or hook(module, args, kwargs) [-> (args, kwargs)] with_kwargs."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """hook(module, args, output) [-> new output], or hook(module, args, kwargs, output) with_kwargs."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=self._forward_hooks_with_kwargs)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _has_hooks(self) -> bool:
        return bool(self._backward_hooks or self._backward_pre_hooks or self._forward_hooks
                    or self._forward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks
                    or _global_forward_hooks or _global_forward_pre_hooks)

    def _call_impl(self, *args, **kwargs):
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks or self._forward_pre_hooks
                or _global_backward_hooks or _global_backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)
        return self._call_with_hooks(forward_call, args, kwargs)

    def _call_with_hooks(self, forward_call, args, kwargs):
        called_always = set()
        try:
            return self._run_with_hooks(forward_call, args, kwargs, called_always)
        except Exception:
            # as torch: hooks registered with always_call=True still run (on result None) when forward raised
            self._run_always_called_hooks(args, kwargs, called_always)
            raise

    def _run_always_called_hooks(self, args, kwargs, called_always) -> None:
        for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
            always = hook_id in self._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called
            if not always or hook_id in called_always:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    hook(self, args, kwargs, None)
                else:
                    hook(self, args, None)
            except Exception as error:
                warnings.warn("module forward hook with ``always_call=True`` raised an exception that was silenced "
                              f"as another error was raised in forward: {error}", stacklevel=3)

    def _run_with_hooks(self, forward_call, args, kwargs, called_always):
        for hook_id, hook in (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if isinstance(result, tuple) and len(result) == 2:
                        args, kwargs = result
                    else:
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), but got "
                            f"{result}."
                        )
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward_hooks = {**_global_backward_hooks, **self._backward_hooks}
        backward_pre_hooks = {**_global_backward_pre_hooks, **self._backward_pre_hooks}
        backward_state = None
        if backward_hooks or backward_pre_hooks:
            from .._backward_hooks import BackwardHookState

            backward_state = BackwardHookState(self, backward_hooks, backward_pre_hooks)
            args = backward_state.setup_input_hook(args)
        result = forward_call(*args, **kwargs)
        for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                hook_result = hook(self, args, kwargs, result)
            else:
                hook_result = hook(self, args, result)
            called_always.add(hook_id)
            if hook_result is not None:
                result = hook_result
        if backward_state is not None:
            result = backward_state.setup_output_hook(result)
        return result

    def _wrapped_call_impl(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        forward_call = self.forward
        if not (self._backward_hooks or self._backward_pre_hooks or self._forward_hooks or self._forward_pre_hooks
                or _global_backward_hooks or _global_backward_pre_hooks or _global_forward_hooks
                or _global_forward_pre_hooks):
            return forward_call(*args, **kwargs)
        return self._call_with_hooks(forward_call, args, kwargs)

    __call__ = _wrapped_call_impl

    # ------------------------------------------------------------ attributes
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_compiled_call_impl", None)  # Module.compile()'s graphs: not saved, as in torch
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        for name in ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_state_dict_pre_hooks", "_load_state_dict_post_hooks", "_backward_pre_hooks"):
            if name not in self.__dict__:
                object.__setattr__(self, name, OrderedDict())
        if "_non_persistent_buffers_set" not in self.__dict__:
            self._non_persistent_buffers_set = set()
        for name in HOOK_DICT_NAMES:
            hooks = self.__dict__.get(name)  # a module pickled before HookDict: its hooks still bump the counter
            if type(hooks) is not HookDict:
                object.__setattr__(self, name, HookDict(hooks or ()))

    def __getattr__(self, name: str):
        if "_parameters" in self.__dict__:
            _parameters = self.__dict__["_parameters"]
            if name in _parameters:
                return _parameters[name]
        if "_buffers" in self.__dict__:
            _buffers = self.__dict__["_buffers"]
            if name in _buffers:
                return _buffers[name]
        if "_modules" in self.__dict__:
            modules = self.__dict__["_modules"]
            if name in modules:
                return modules[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        def remove_from(*dicts_or_sets) -> None:
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' (torch.nn.Parameter or "
                                "None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers, self._non_persistent_buffers_set)
                for hook in _global_module_registration_hooks.values():
                    output = hook(self, name, value)
                    if output is not None:
                        value = output
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' (torch.nn.Module "
                                    "or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' (torch.nn.Buffer, "
                                        "torch.Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(self.__dict__, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    if name in HOOK_DICT_NAMES and isinstance(value, dict) and type(value) is not HookDict:
                        # `module._forward_hooks = OrderedDict()` (dropping every hook): kept a HookDict, and
                        # counted as a change, so ember.compile's hook guard sees it and later registrations
                        value = HookDict(value)
                    if name in HOOK_DICT_NAMES:
                        hook_changes[0] += 1
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    # ------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members_fn(module):
                if value is None or value in memo:
                    continue
                if remove_duplicate:
                    memo.add(value)
                yield (module_prefix + ("." if module_prefix else "") + name, value)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix, recurse=recurse,
                                       remove_duplicate=remove_duplicate)

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and module not in memo:
                memo.add(module)
                yield name, module

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self not in memo:
            if remove_duplicate:
                memo.add(self)
            yield prefix, self
            for name, module in self._modules.items():
                if module is None:
                    continue
                submodule_prefix = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ------------------------------------------------------------ modes
    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset parameters' gradients (to None by default, as torch 2.x)."""
        from ... import _dispatch

        if _dispatch.tracer is not None:
            # inside a compiled function: replayed around its graph, as an optimizer's zero_grad; else a break
            if _dispatch.run_as_action("zero_grad", type(self).zero_grad, (self, set_to_none))[0]:
                return
            _dispatch.capture_break("Module.zero_grad() inside a compiled function: a replay would not reset the "
                                    "gradients")
        for param in self.parameters():
            if param._grad is not None:
                if set_to_none:
                    param._grad = None
                else:
                    grad = param._grad
                    if grad.grad_fn is not None:
                        grad.detach_()
                    else:
                        grad.requires_grad_(False)
                    grad.zero_()

    def compile(self, *args, **kwargs) -> None:
        """Compile this module's forward in place (ember.compile)."""
        from ... import compile as compile_fn

        object.__setattr__(self, "_compiled_call_impl", compile_fn(self._call_impl, *args, **kwargs))

    # ------------------------------------------------------------ printing
    def _get_name(self) -> str:
        return self.__class__.__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        main_str += ")"
        return main_str

    def __dir__(self):
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        parameters = list(self._parameters.keys())
        modules = list(self._modules.keys())
        buffers = list(self._buffers.keys())
        keys = module_attrs + attrs + parameters + modules + buffers
        keys = [key for key in keys if not key[0].isdigit()]
        return sorted(keys)

    def _replicate_for_data_parallel(self):
        replica = self.__new__(type(self))
        replica.__dict__ = self.__dict__.copy()
        replica._parameters = dict()
        replica._buffers = replica._buffers.copy()
        replica._modules = replica._modules.copy()
        return replica
