"""torch.fx.Node: one operation of a Graph (placeholder, get_attr, call_function, call_module, call_method,
output), its args/kwargs (which may hold other Nodes) and its users, kept consistent as args change."""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import Any

from ._names import pretty_print_target, qualified_name
from .immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "Argument", "Target", "map_arg", "map_aggregate", "has_side_effect"]

Target = Any  # str or a callable
Argument = Any  # a Node, a constant, or a list / tuple / dict / slice of them

_legal_ops = {"placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root"}

_side_effectful_functions: set = set()


def has_side_effect(fn):
    """Register `fn` so that eliminate_dead_code keeps calls to it."""
    _side_effectful_functions.add(fn)
    return fn


def _type_repr(t) -> str:
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        return qualified_name(t)
    return repr(t)


def _format_arg(arg, max_list_len: float = float("inf")) -> str:
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{maybe_len}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{maybe_len})"
    if isinstance(arg, dict):
        items_str = ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items())
        return f"{{{items_str}}}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation in a Graph.  `op` is one of placeholder / get_attr / call_function / call_module /
    call_method / output; `target` what it calls (a callable for call_function, a qualified attribute name
    for get_attr and call_module, a method name for call_method, the argument name for placeholder)."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple, kwargs: dict,
                 return_type: Any | None = None) -> None:
        if op not in _legal_ops:
            raise AssertionError(f"Unknown op {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a Callable is expected")
        if op in ("call_method", "call_module", "get_attr", "placeholder", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self._args: tuple = ()
        self._kwargs: dict = {}
        self.meta: dict[str, Any] = {}
        self._repr_fn: Callable | None = None
        self._update_args_kwargs(args, kwargs)

    # ------------------------------------------------------------------ list links
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert x before this node in the graph's node list."""
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Insert x after this node in the graph's node list."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    def __gt__(self, other: Node) -> bool:
        return self.graph._order(self) > self.graph._order(other)

    def __lt__(self, other: Node) -> bool:
        return self.graph._order(self) < self.graph._order(other)

    def __ge__(self, other: Node) -> bool:
        return self > other or self is other

    def __le__(self, other: Node) -> bool:
        return self < other or self is other

    # ------------------------------------------------------------------ args
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes.keys())

    def update_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        args = list(self.args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old_use in self._input_nodes:
            old_use.users.pop(self, None)
        input_nodes: dict[Node, None] = {}

        def collect(n: Node) -> Node:
            input_nodes.setdefault(n)
            return n

        self._args = map_aggregate(tuple(new_args), lambda a: a)  # lists become immutable_list
        self._kwargs = map_aggregate(dict(new_kwargs), lambda a: a)
        map_arg(self._args, collect)
        map_arg(self._kwargs, collect)
        self._input_nodes = input_nodes
        for new_use in input_nodes:
            new_use.users.setdefault(self)

    # ------------------------------------------------------------------ edits
    @property
    def stack_trace(self) -> str | None:
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] | None = None,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node use `replace_with` instead; returns the users changed."""
        if propagate_meta:
            if len(replace_with.meta) != 0:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), "
                                     "but replace_with already has .meta keys")
            for k, v in self.meta.items():
                replace_with.meta[k] = v
        to_process = list(self.users)
        skipped = []
        for use_node in to_process:
            if delete_user_cb is not None and not delete_user_cb(use_node):
                skipped.append(use_node)
                continue
            use_node._replace_input(self, replace_with)
        return [n for n in to_process if n not in skipped]

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Use `new_input` wherever this node's args/kwargs use `old_input`."""
        self._replace_input(old_input, new_input)

    def _replace_input(self, old_input: Node, new_input: Node) -> None:
        def maybe_replace(n: Node) -> Node:
            return new_input if n is old_input else n

        new_args = map_arg(self.args, maybe_replace)
        new_kwargs = map_arg(self.kwargs, maybe_replace)
        self._update_args_kwargs(new_args, new_kwargs)

    def is_impure(self, impure_random: bool = True) -> bool:
        if self.op in {"placeholder", "output"}:
            return True
        if self.op == "call_module":
            owner = self.graph.owning_module
            if owner is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            target_mod = owner.get_submodule(self.target)
            return getattr(target_mod, "_is_impure", False)
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") and not self.target.endswith("__")
        return False

    # ------------------------------------------------------------------ printing
    def __repr__(self) -> str:
        if self._repr_fn:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target) -> str:
        return pretty_print_target(target)

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """One line of str(graph): `%name : [num_users=N] = op[target=T](args = (...), kwargs = {...})`."""
        if self.op == "placeholder":
            arg_str = self.target
            arg_str += f": {_type_repr(self.type)}" if self.type else ""
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            maybe_typename = f"{_type_repr(self.type)} " if self.type else ""
            default_val = "(default=" + str(self.args[0]) + ")" if self.args else ""
            return (f"%{self.name} : {maybe_typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self.target}]{default_val}")
        if self.op == "get_attr":
            maybe_typename = f"{_type_repr(self.type)} " if self.type is not None else ""
            return (f"%{self.name} : {maybe_typename}[num_users={len(self.users)}] = "
                    f"{self.op}[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        maybe_typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        return (f"%{self.name} : {maybe_typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply fn to every Node in the (nested) argument a."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply fn to every leaf of the nested tuples / lists / dicts / slices in a."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


has_side_effect(builtins.print)
has_side_effect(operator.setitem)
