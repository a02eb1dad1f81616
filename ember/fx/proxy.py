"""torch.fx.Proxy: the stand-in value that flows through a traced program and records into the Graph every
operator, method call and attribute access it meets."""

from __future__ import annotations

import dis
import enum
import inspect
import operator
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterator
from typing import Any

from .graph import Graph, magic_methods, reflectable_magic_methods
from .node import Argument, Node, Target, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute", "ParameterProxy", "Scope",
           "ScopeContextManager"]


class TraceError(ValueError):
    pass


class Scope:
    """The module path and type of the module whose forward is being traced."""

    def __init__(self, module_path: str, module_type: Any) -> None:
        self.module_path = module_path
        self.module_type = module_type


class ScopeContextManager:
    def __init__(self, scope: Scope, current_scope: Scope) -> None:
        self._prev_scope = Scope(scope.module_path, scope.module_type)
        scope.module_path = current_scope.module_path
        scope.module_type = current_scope.module_type
        self._scope = scope

    def __enter__(self) -> Scope:
        return self._scope

    def __exit__(self, *args) -> None:
        self._scope.module_path = self._prev_scope.module_path
        self._scope.module_type = self._prev_scope.module_type


def _base_types() -> tuple:
    ember = sys.modules["ember"]
    return (str, int, float, bool, complex, ember.dtype, ember.Tensor, ember.device, ember.memory_format,
            ember.layout)


class TracerBase:
    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Scope
    module_stack: dict
    node_name_to_scope: dict

    def create_node(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        scope = getattr(self, "scope", None)
        if scope is not None:
            self.node_name_to_scope[node.name] = (scope.module_path, scope.module_type)
            node.meta["nn_module_stack"] = dict(self.module_stack)
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple, kwargs: dict, name: str | None = None,
                     type_expr: Any | None = None, proxy_factory_fn: Callable[[Node], Proxy] | None = None):
        """Record one operation: its args go through create_arg (Proxies become their Nodes)."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        assert isinstance(args_, tuple)
        assert isinstance(kwargs_, dict)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if not proxy_factory_fn:
            proxy = self.proxy(node)
        else:
            proxy = proxy_factory_fn(node)
        if self.record_stack_traces and not proxy.node.stack_trace:
            import traceback

            proxy.node.stack_trace = "".join(traceback.format_stack(limit=8)[:-2])
        return proxy

    def create_arg(self, a: Any) -> Argument:
        """Lower a value seen during tracing into something a Node's args can hold."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                args = [self.create_arg(elem) for elem in a]
                return type(a)(*args)
            return tuple(self.create_arg(elem) for elem in a)
        if isinstance(a, list):
            return [self.create_arg(elem) for elem in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)

                    def no_node(arg):
                        raise RuntimeError(f"Keys for dictionaries used as an argument cannot contain a Node. "
                                           f"Got key: {k}")

                    map_aggregate(k, lambda x: no_node(x) if isinstance(x, Node) else x)
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, (*_base_types(), enum.Enum)) or a is None or a is ...:
            return a
        if isinstance(a, type) or callable(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the torch.fx docs on pytorch.org for a "
                         "more detailed explanation of what types of control flow can be traced, and check out the "
                         "Proxy docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Proxy:
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made around a raw Node: it appends to that Node's graph."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = Scope("", None)
        self.module_stack = {}
        self.node_name_to_scope = {}


def assert_fn(x) -> None:
    assert x


class Proxy:
    """A Node wrapper that records what the traced program does with it.  Proxies cannot be iterated (except
    when unpacked into a fixed number of names, `a, b = proxy`) or used in control flow."""

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)  # copy/pickle/numpy protocol probes are not recorded
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        import copy

        new_dict = {}
        for k, v in self.__dict__.items():
            try:
                new_obj = copy.deepcopy(v, memo)
            except Exception:
                new_obj = copy.copy(v)
            new_dict[k] = new_obj
        new_proxy = Proxy(new_dict["node"], new_dict["tracer"])
        for k, v in new_dict.items():
            new_proxy.__dict__[k] = v
        return new_proxy

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        frame = inspect.currentframe()
        assert frame is not None
        calling_frame = frame.f_back
        assert calling_frame is not None
        inst_list = list(dis.get_instructions(calling_frame.f_code))
        if sys.version_info >= (3, 11):
            inst_idx = bisect_left(inst_list, calling_frame.f_lasti, key=lambda x: x.offset)
        else:
            inst_idx = calling_frame.f_lasti // 2
        if inst_idx < len(inst_list):
            inst = inst_list[inst_idx]
            if inst.opname == "UNPACK_SEQUENCE":
                return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to be "
                           "recorded, please call torch.fx.wrap('len') at module scope")

    def __setitem__(self, key, value) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    __hash__ = object.__hash__


class Attribute(Proxy):
    """`proxy.name`: becomes a call_method when called, a `getattr` node when used as a value."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr, (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """A Proxy of a parameter whose shape queries answer with the parameter's real shape."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self, *dim):
        return self.param.size(*dim)

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _scope(method: str) -> None:
    def impl(*args, **kwargs) -> Proxy:
        tracer = args[0].tracer
        target = getattr(operator, method)
        return tracer.create_proxy("call_function", target, args, kwargs)

    impl.__name__ = method
    as_magic = f"__{method.strip('_')}__"
    setattr(Proxy, as_magic, impl)


for _method in magic_methods:
    _scope(_method)


def _define_reflectable(orig_method_name: str) -> None:
    method_name = f"__r{orig_method_name.strip('_')}__"

    def impl(self: Proxy, rhs) -> Proxy:
        target = getattr(operator, orig_method_name)
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})

    impl.__name__ = method_name
    impl.__qualname__ = method_name
    setattr(Proxy, method_name, impl)


for _orig_method_name in reflectable_magic_methods:
    _define_reflectable(_orig_method_name)

Proxy.__hash__ = object.__hash__  # __eq__ records a node; Proxies stay hashable by identity
