"""torch.fx's symbolic tracer for ember: `Tracer`, `symbolic_trace`, `wrap`.

torch's tracer sees `torch.relu(proxy)` through `__torch_function__`; ember has no such protocol, so while a
trace runs (and while a Transformer transforms), ember's functions record a node when any argument holds a
Proxy and run as usual otherwise:
- the Python functions of `ember`, `ember.nn.functional`, `ember.linalg`, `ember.fft` and `ember.special` get
  a trampoline as their `__code__` (`_patch_function_code`), so the function object stays the one users hold:
  the recorded target is `ember.relu` itself, `if target == ember.relu` in a Transformer override holds, and a
  name bound before tracing (`from ember import relu`, a closure over F.relu) records too;
- `ember.Tensor`'s methods are replaced on the class by wrappers recording a call_method, so `self.buf + x`
  (a real tensor's method given a Proxy) records `buf.add(x)` as torch's tracer does;
- Module.__call__ and Module.__getattr__ are patched as in torch: leaf modules (ember.nn's own, except
  Sequential) become call_module nodes, parameters get_attr nodes.
Everything is put back by `_Patcher.__exit__`, also when tracing raises."""

from __future__ import annotations

import builtins
import collections
import functools
import inspect
import math
import sys
import types
import warnings
from collections.abc import Callable
from itertools import chain
from typing import Any, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, has_side_effect
from .proxy import ParameterProxy, Proxy, Scope, ScopeContextManager, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "is_fx_tracing"]

HAS_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS

_is_fx_tracing_flag = False


def is_fx_tracing() -> bool:
    return _is_fx_tracing_flag


def _ember():
    return sys.modules["ember"]


class PHBase:
    """Object representing an input placeholder to `concrete_args`."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def _assert(condition, message: str = "") -> None:
    """torch._assert: the check concrete_args specialisation records (`assert condition, message`)."""
    if type(condition) is not bool and isinstance(condition, _ember().Tensor):
        condition = bool(condition)
    assert condition, message


def _assert_is_none(value, msg: str) -> None:
    assert value is None, msg


has_side_effect(_assert)
has_side_effect(_assert_is_none)


def _patch_function(fn: types.FunctionType, nargs: int) -> types.FunctionType:
    """fn with *args / **kwargs turned into plain positional parameters, so Proxies bind to them."""
    co = fn.__code__
    co_flags = co.co_flags & ~HAS_VARSTUFF
    new_code = co.replace(co_argcount=nargs, co_kwonlyargcount=0, co_flags=co_flags)
    return types.FunctionType(new_code, fn.__globals__, fn.__name__, None, fn.__closure__)


# ---------------------------------------------------------------------------------------------------- patching
class _PatchedFn(NamedTuple):
    frame_dict: Any
    fn_name: str
    orig_fn: Any
    new_fn: Any

    def revert(self) -> None:
        raise NotImplementedError


class _PatchedFnSetItem(_PatchedFn):
    def revert(self) -> None:
        self.frame_dict[self.fn_name] = self.orig_fn


class _PatchedFnDel(_PatchedFn):
    def revert(self) -> None:
        del self.frame_dict[self.fn_name]


class _PatchedFnSetAttr(_PatchedFn):
    def revert(self) -> None:
        setattr(self.frame_dict, self.fn_name, self.orig_fn)


class _Patcher:
    """Replaces functions and methods for the duration of a trace; __exit__ puts every original back."""

    def __init__(self) -> None:
        self.patches_made: list[_PatchedFn] = []
        self.visited: set[int] = set()

    def patch(self, frame_dict: dict, name: str, new_fn: Callable, deduplicate: bool = True) -> None:
        new_fn.__fx_already_patched = deduplicate  # type: ignore[attr-defined]
        if name not in frame_dict and hasattr(builtins, name):
            self.patches_made.append(_PatchedFnDel(frame_dict, name, None, new_fn))
        elif getattr(frame_dict[name], "__fx_already_patched", False):
            return
        else:
            self.patches_made.append(_PatchedFnSetItem(frame_dict, name, frame_dict[name], new_fn))
        frame_dict[name] = new_fn

    def patch_method(self, cls: type, name: str, new_fn: Callable, deduplicate: bool = True) -> None:
        new_fn.__fx_already_patched = deduplicate  # type: ignore[attr-defined]
        orig_fn = cls.__dict__[name] if name in cls.__dict__ else getattr(cls, name)
        if getattr(orig_fn, "__fx_already_patched", False):
            return
        self.patches_made.append(_PatchedFnSetAttr(cls, name, orig_fn, new_fn))
        setattr(cls, name, new_fn)

    def visit_once(self, thing: Any) -> bool:
        idx = id(thing)
        if idx in self.visited:
            return False
        self.visited.add(idx)
        return True

    def __enter__(self) -> _Patcher:
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        while self.patches_made:
            self.patches_made.pop().revert()
        self.visited.clear()


def _find_proxy(*objects_to_search) -> Proxy | None:
    stack = list(objects_to_search)
    while stack:
        x = stack.pop()
        if isinstance(x, Proxy):
            return x
        if isinstance(x, (tuple, list)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, slice):
            stack.extend((x.start, x.stop, x.step))
    return None


def _create_wrapped_func(orig_fn: Callable, *, mark_wrapped: bool = True) -> Callable:
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return_proxy = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
            if mark_wrapped:
                return_proxy.node.meta["is_wrapped"] = True
            return return_proxy
        return orig_fn(*args, **kwargs)

    return wrapped


# Tensor dunders record the method name torch's __torch_function__ reports for them
_TENSOR_DUNDER_METHOD = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div", "__div__": "div",
    "__matmul__": "matmul", "__pow__": "pow", "__mod__": "remainder", "__eq__": "eq", "__ne__": "ne",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__neg__": "neg",
}
# dunders whose Proxy arguments are recorded; the rest (__init__, __repr__, __hash__...) are never patched
_TENSOR_PATCHED_DUNDERS = set(_TENSOR_DUNDER_METHOD) | {
    "__floordiv__", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__getitem__", "__setitem__",
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rmatmul__", "__rpow__", "__rfloordiv__", "__rmod__",
    "__rand__", "__ror__", "__rxor__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
}
_NOT_PATCHED = {"is_tensor", "is_storage", "compile", "save", "load", "vmap", "typename", "set_printoptions",
                "manual_seed", "set_default_dtype", "set_default_device", "get_default_dtype", "is_grad_enabled",
                "set_grad_enabled", "use_deterministic_algorithms"}
_PATCHED_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special")


def _create_wrapped_method(orig_fn: Callable, method_name: str) -> Callable:
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_method", method_name, args, kwargs)
        return orig_fn(*args, **kwargs)

    return wrapped


def _ember_functions() -> list[Callable]:
    """Each Python function of ember's function namespaces, once."""
    out: dict[int, Callable] = {}
    for ns_name in _PATCHED_NAMESPACES:
        ns = sys.modules.get(ns_name)
        if ns is None:
            continue
        for name, value in list(vars(ns).items()):
            if name.startswith("__") or name in _NOT_PATCHED:
                continue
            if isinstance(value, types.FunctionType):
                out.setdefault(id(value), value)
    return list(out.values())


# A function is made to record by swapping its __code__ for a trampoline's, so the function object stays the one
# users hold (`node.target is ember.relu`, `if target == ember.relu` in a Transformer, `from ember import relu`,
# a closure over F.relu all keep working); the trampoline calls a copy of the function made from the original
# code when no argument holds a Proxy.
_trampolines: dict[int, tuple[Callable, Callable]] = {}  # key -> (function, copy running its original code)
_trampoline_codes: dict[int, tuple[Callable, types.CodeType]] = {}  # id(function) -> (function, trampoline code)
_trampoline_code_ids: set[int] = set()


def _trampoline_call(key: int, args: tuple, kwargs: dict):
    fn, run = _trampolines[key]
    proxy = _find_proxy(args, kwargs)
    if proxy is not None:
        return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
    return run(*args, **kwargs)


def _trampoline_code(fn: types.FunctionType, key: int) -> types.CodeType:
    code = fn.__code__
    freevars = code.co_freevars
    names = ", ".join(freevars)
    # the trampoline closes over the same names, so it fits the function's closure cells (never reads them)
    ref = f"        if False:\n            ({names},)\n" if freevars else ""
    src = (f"def _outer({names}):\n    def _trampoline(*args, **kwargs):\n{ref}"
           f"        return __import__('ember.fx._symbolic_trace', fromlist=['_'])._trampoline_call("
           f"{key}, args, kwargs)\n    return _trampoline\n")
    namespace: dict[str, Any] = {}
    exec(compile(src, f"<ember.fx trampoline of {code.co_name}>", "exec"), namespace)  # noqa: S102
    inner = next(c for c in namespace["_outer"].__code__.co_consts if isinstance(c, types.CodeType))
    if inner.co_freevars != freevars:
        raise RuntimeError(f"cannot make a trampoline for {fn!r}")
    return inner.replace(co_name=code.co_name, co_qualname=code.co_qualname) \
        if hasattr(code, "co_qualname") else inner.replace(co_name=code.co_name)


class _PatchedCode(NamedTuple):
    fn: types.FunctionType
    orig_code: types.CodeType

    def revert(self) -> None:
        self.fn.__code__ = self.orig_code


def _patch_function_code(patcher: _Patcher, fn: types.FunctionType) -> None:
    if id(fn.__code__) in _trampoline_code_ids:
        return  # already recording (a trace inside a trace)
    cached = _trampoline_codes.get(id(fn))
    if cached is not None and cached[0] is fn:
        code = cached[1]
    else:
        key = len(_trampolines)
        run = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        run.__kwdefaults__ = fn.__kwdefaults__
        try:
            code = _trampoline_code(fn, key)
        except (RuntimeError, SyntaxError):
            return  # a function whose closure a trampoline cannot fit runs unrecorded
        _trampolines[key] = (fn, run)
        _trampoline_codes[id(fn)] = (fn, code)
        _trampoline_code_ids.add(id(code))
    patcher.patches_made.append(_PatchedCode(fn, fn.__code__))
    fn.__code__ = code


def _patch_ember(patcher: _Patcher) -> None:
    """Make ember's public functions and Tensor methods record nodes when given Proxies, until patcher exits."""
    tensor = _ember().Tensor
    for name, value in list(vars(tensor).items()):
        if not isinstance(value, types.FunctionType):
            continue
        if name.startswith("_") and name not in _TENSOR_PATCHED_DUNDERS:
            continue
        patcher.patch_method(tensor, name, _create_wrapped_method(value, _TENSOR_DUNDER_METHOD.get(name, name)))
    for fn in _ember_functions():
        _patch_function_code(patcher, fn)


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: set[int]) -> None:
    """Patch names in a module's globals bound to autowrapped functions (math's, by default)."""
    if patcher.visit_once(frame_dict):
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and id(value) in function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))


# functions registered with wrap(): (id(globals), name) -> globals
_wrapped_fns_to_patch: dict[tuple[int, str], dict] = {}


def _patch_wrapped_functions(patcher: _Patcher) -> None:
    for (_, name), frame_dict in _wrapped_fns_to_patch.copy().items():
        if name not in frame_dict and hasattr(builtins, name):
            orig_fn = getattr(builtins, name)
        else:
            orig_fn = frame_dict[name]
        patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Call at module level: calls of this function in traced code become call_function nodes (a leaf)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or string name")
    if callable(fn_or_name):
        assert not isinstance(fn_or_name, str)
        fn_name = fn_or_name.__name__
    else:
        fn_name = fn_or_name
    currentframe = inspect.currentframe()
    assert currentframe is not None
    f = currentframe.f_back
    assert f is not None
    if f.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(f.f_globals), fn_name)] = f.f_globals
    return fn_or_name


# ---------------------------------------------------------------------------------------------------- Tracer
class Tracer(TracerBase):
    """Turns a Module's forward (or a function) into a Graph by running it on Proxies."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids: set[int] = {
            id(value) for name, value in chain.from_iterable(m.__dict__.items() for m in autowrap_modules)
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update({id(f) for f in autowrap_functions})
        self._autowrap_search: list = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.scope = Scope("", None)
        self.module_stack: dict = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}
        self._qualname_counter: dict[str, int] = collections.defaultdict(int)

    def get_fresh_qualname(self, prefix: str) -> str:
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a: Any) -> Argument:
        """Parameters and buffers of root become get_attr nodes, other tensors `_tensor_constant` attributes."""
        ember = _ember()
        if isinstance(a, ember.nn.Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, ember.Tensor):
            for n_, p_ in self.root.named_buffers():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        elif isinstance(a, ember.nn.Module):
            for n_, p_ in self.root.named_modules():
                if a is p_:
                    return self.create_node("get_attr", n_, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(elem) for elem in a)
            return self.create_node("call_function", a.__class__, args, {})
        if isinstance(a, ember.Tensor):
            qualname = self.tensor_attrs.get(id(a))
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = qualname
                self._tensor_attr_keepalive.append(a)
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """ember.nn's own modules (not Sequential) are leaves; user modules are traced through."""
        ember = _ember()
        return ((m.__module__.startswith("ember.nn") or m.__module__.startswith("ember.ao.nn"))
                and not isinstance(m, ember.nn.Sequential))

    def path_of_module(self, mod) -> str:
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict) -> Any:
        module_qualified_name = self.path_of_module(m)
        with ScopeContextManager(self.scope, Scope(module_qualified_name, type(m))) as _scope:
            num_calls = self.num_calls.get(module_qualified_name, 0)
            module_key = f"{_scope.module_path}@{num_calls}" if num_calls > 0 else _scope.module_path
            self.module_stack[module_key] = (module_qualified_name, _scope.module_type)
            self.num_calls[module_qualified_name] = num_calls + 1
            try:
                if not self.is_leaf_module(m, module_qualified_name):
                    ret_val = forward(*args, **kwargs)
                else:
                    ret_val = self.create_proxy("call_module", module_qualified_name, args, kwargs)
            finally:
                self.module_stack.pop(module_key, None)
        return ret_val

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Proxy]) -> Any:
        ember = _ember()

        def maybe_get_proxy_for_attr(attr_val, collection_to_search, parameter_proxy_cache):
            for n, p in collection_to_search:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        kwargs = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kwargs["proxy_factory_fn"] = (
                                None if not self.param_shapes_constant
                                else lambda node: ParameterProxy(self, node, n, attr_val))
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {}, **kwargs)
                    return parameter_proxy_cache[n]
            return None

        if isinstance(attr_val, ember.nn.Parameter):
            maybe = maybe_get_proxy_for_attr(attr_val, self.root.named_parameters(), parameter_proxy_cache)
            if maybe is not None:
                return maybe
        if self.proxy_buffer_attributes and isinstance(attr_val, ember.Tensor):
            maybe = maybe_get_proxy_for_attr(attr_val, self.root.named_buffers(), parameter_proxy_cache)
            if maybe is not None:
                return maybe
        return attr_val

    def create_args_for_root(self, root_fn: Callable, is_module: bool, concrete_args=None):
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip_arg_idx = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip_arg_idx = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        if isinstance(concrete_args, tuple) and len(concrete_args) > 0 and (co.co_flags & HAS_VARSTUFF) \
                and total_args == 1:
            for i, concrete_arg in enumerate(concrete_args):
                out = self.create_proxy("placeholder", f"input_{i}", (), {})
                if isinstance(concrete_arg, PHBase) and concrete_arg is not PH:
                    _transfer_attrs(concrete_arg, out.node)
                args.append(out)
            return root_fn, args
        arg_names = [next(names_iter) for _ in range(skip_arg_idx, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got {len(concrete_args)} "
                                   "concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))

        def proxy_placeholder(name: str):
            return self._proxy_placeholder(name, concrete_args, sig, fn_for_analysis)

        args.extend(proxy_placeholder(name) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & HAS_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(proxy_placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(proxy_placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, concrete_args, sig: inspect.Signature, fn_for_analysis: Callable):
        if concrete_args is not None and name in concrete_args:
            cnt = 0

            def replace_ph(x):
                nonlocal cnt
                cnt += 1
                param = sig.parameters[name]
                default = () if param.default is inspect.Parameter.empty else (param.default,)
                out = self.create_proxy("placeholder", f"{name}_{cnt}", default, {})
                if isinstance(x, PHBase):
                    if x is not PH:
                        _transfer_attrs(x, out.node)
                    return out
                ember = _ember()
                if type(x) in (bool, int, float, str, complex) or isinstance(x, (ember.dtype, ember.device)):
                    msg = f"{name} has been specialized to have value {x} but got another value"
                    self.create_proxy("call_function", _assert, (out == x, msg), {})
                elif x is None:
                    args = (out, f"{name} has been specialized to have value None but got another value")
                    self.create_proxy("call_function", _assert_is_none, args, {})
                else:
                    warnings.warn(f"Was not able to add assertion to guarantee correct input {name} to specialized "
                                  "function. It is up to the user to make sure that your inputs match the inputs you "
                                  "specialized the function with.", stacklevel=2)
                return x

            return _tree_map(replace_ph, concrete_args[name])
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn_for_analysis.__annotations__.get(name, None))

    def trace(self, root, concrete_args: dict[str, Any] | tuple | None = None) -> Graph:
        """Trace `root` (a Module or a function) and return its Graph."""
        global _is_fx_tracing_flag
        ember = _ember()
        old_is_fx_tracing_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, ember.nn.Module):
                self.root = root
                assert hasattr(type(root), self.traced_func_name), \
                    f"traced_func_name={self.traced_func_name} doesn't exist in {type(root).__name__}"
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = ember.nn.Module()
                fn = root
            tracer_cls = getattr(self, "__class__", None)
            self.graph = Graph(tracer_cls=tracer_cls)
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {"co_name": code.co_name, "co_filename": code.co_filename,
                                         "co_firstlineno": code.co_firstlineno}
            # tensors held as plain attributes (not parameters / buffers) of root and its submodules, by id
            self.tensor_attrs: dict[int, str] = {}
            self._tensor_attr_keepalive: list = []

            def collect_tensor_attrs(m, prefix_atoms: list[str]) -> None:
                for k, v in m.__dict__.items():
                    if isinstance(v, ember.Tensor):
                        self.tensor_attrs[id(v)] = ".".join(prefix_atoms + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix_atoms + [k])

            collect_tensor_attrs(self.root, [])
            assert isinstance(fn, types.FunctionType), f"Expected a Python function, got {type(fn)}"
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, ember.nn.Module), concrete_args)
            parameter_proxy_cache: dict[str, Proxy] = {}
            module_cls = ember.nn.Module
            _orig_module_call = module_cls.__call__
            _orig_module_getattr = module_cls.__getattr__

            @functools.wraps(_orig_module_getattr)
            def module_getattr_wrapper(mod, attr: str):
                attr_val = _orig_module_getattr(mod, attr)
                return self.getattr(attr, attr_val, parameter_proxy_cache)

            @functools.wraps(_orig_module_call)
            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return _orig_module_call(mod, *args, **kwargs)

                _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__", {}),
                                self._autowrap_function_ids)
                return self.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(module_cls, "__getattr__", module_getattr_wrapper, deduplicate=False)
                patcher.patch_method(module_cls, "__call__", module_call_wrapper, deduplicate=False)
                _patch_ember(patcher)
                _patch_wrapped_functions(patcher)
                _autowrap_check(patcher, fn_globals, self._autowrap_function_ids)
                for module in self._autowrap_search:
                    _autowrap_check(patcher, module.__dict__, self._autowrap_function_ids)
                ann = inspect.get_annotations(inspect.unwrap(fn)) if hasattr(inspect, "get_annotations") else {}
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=ann.get("return", None))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_is_fx_tracing_flag
        return self.graph

    def __deepcopy__(self, memo: dict) -> Tracer:
        import copy

        new_tracer = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            new_tracer.__dict__[k] = copy.copy(v) if k == "_autowrap_search" else copy.deepcopy(v, memo)
        return new_tracer


def _transfer_attrs(fr: Any, to: Any) -> None:
    for attr_name in dir(fr):
        attr_val = getattr(fr, attr_name)
        if not callable(attr_val) and not attr_name.startswith("__") and not hasattr(to, attr_name):
            setattr(to, attr_name, attr_val)


def _tree_map(fn: Callable, tree: Any) -> Any:
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return tuple(_tree_map(fn, x) for x in tree)
    if isinstance(tree, list):
        return [_tree_map(fn, x) for x in tree]
    if isinstance(tree, dict):
        return {k: _tree_map(fn, v) for k, v in tree.items()}
    return fn(tree)


class _PatchEmber:
    """Context manager: ember's functions and Tensor methods record nodes when given Proxies (used by
    Transformer, whose call_* overrides call ember functions on Proxies)."""

    def __enter__(self):
        self._patcher = _Patcher()
        self._patcher.__enter__()
        try:
            _patch_ember(self._patcher)
            _patch_wrapped_functions(self._patcher)
        except BaseException:
            self._patcher.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._patcher.__exit__(*exc)


def symbolic_trace(root, concrete_args: dict[str, Any] | None = None) -> GraphModule:
    """Trace a Module or function into a GraphModule (torch.fx.symbolic_trace)."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    ember = _ember()
    name = root.__class__.__name__ if isinstance(root, ember.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)

