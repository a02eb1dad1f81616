"""torch.fx.Interpreter (run a Graph node by node, with overridable per-opcode methods) and Transformer
(an Interpreter that builds a new Graph from Proxies)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ._symbolic_trace import Tracer, _PatchEmber
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs a GraphModule's graph: `run(*args)` calls `run_node` for each node, which dispatches to
    placeholder / get_attr / call_function / call_module / call_method / output; override any of them."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(self.module.named_modules())
        if graph is not None:
            self.graph = graph
        else:
            self.graph = self.module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if self.garbage_collect_values:
            node_to_last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}

            def register_last_uses(n: Node, user: Node) -> None:
                if n not in node_to_last_use:
                    node_to_last_use[n] = user
                    self.user_to_last_uses.setdefault(user, []).append(n)

            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    register_last_uses(n, node)

    def run(self, *args, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Run the graph on args; returns what its output node returns."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                output_val = self.env[node]
                return self.graph.process_outputs(output_val) if enable_io_processing else output_val
        return None

    def boxed_run(self, args_list: list) -> Any:
        args_iter = iter(args_list)
        env = {}
        for n in self.graph.nodes:
            if n.op == "placeholder":
                env[n] = next(args_iter)
        args_list.clear()
        return self.run(initial_env=env)

    @contextmanager
    def _set_current_node(self, node: Node):
        yield

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its args from the environment and call the method named by its opcode."""
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            assert isinstance(args, tuple)
            assert isinstance(kwargs, dict)
            return getattr(self, n.op)(n.target, args, kwargs)

    # ------------------------------------------------------------------ one method per opcode
    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        assert isinstance(target, str)
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not "
                               "passed in!") from si

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        assert isinstance(target, str)
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        assert not isinstance(target, str)
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        self_obj, *args_tail = args
        assert isinstance(target, str)
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return submod(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # ------------------------------------------------------------------ helpers
    def fetch_attr(self, target: str) -> Any:
        target_atoms = target.split(".")
        attr_itr = self.module
        for i, atom in enumerate(target_atoms):
            if not hasattr(attr_itr, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target_atoms[:i + 1])}")
            attr_itr = getattr(attr_itr, atom)
        return attr_itr

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        args = self.map_nodes_to_values(n.args, n)
        assert isinstance(args, tuple)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        assert isinstance(kwargs, dict)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        def load_arg(n_arg: Node) -> Any:
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[n_arg]

        return _plain(map_arg(args, load_arg))


def _plain(a: Argument) -> Argument:
    """Node args are stored as immutable lists/dicts; the callables get plain ones."""
    if isinstance(a, tuple) and not hasattr(a, "_fields"):
        return tuple(_plain(x) for x in a)
    if isinstance(a, list):
        return [_plain(x) for x in a]
    if isinstance(a, dict):
        return {k: _plain(v) for k, v in a.items()}
    return a


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}
        self._tensor_attr_keepalive = []

    def is_leaf_module(self, _, __) -> bool:
        return True


class Transformer(Interpreter):
    """Builds a new GraphModule by running the graph on Proxies: override call_function / call_module / ...
    to return different values (ember functions called on Proxies inside them record nodes)."""

    def __init__(self, module) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        assert isinstance(target, str)
        default_value = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default_value), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        assert isinstance(target, str)
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        assert isinstance(target, str)
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation and return the new GraphModule."""
        with _PatchEmber():
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a

            new_output_node = self.new_graph.output(map_aggregate(result, strip_proxy))
            old_output_node = list(self.graph.nodes)[-1]
            assert old_output_node.op == "output"
            for k, v in old_output_node.meta.items():
                new_output_node.meta[k] = v
        return GraphModule(self.module, self.new_graph)
