"""torch.fx.Graph: a doubly linked list of Nodes, the editing API (create_node and friends, inserting_before /
inserting_after, erase_node, eliminate_dead_code, lint) and the code generator that turns a Graph into the
Python source of a GraphModule's forward, in torch.fx's format (`ember.relu(x)` where torch prints
`torch.relu(x)`)."""

from __future__ import annotations

import builtins
import copy
import inspect
import keyword
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ._names import is_from_ember, qualified_name
from .node import Argument, Node, Target, _type_repr, map_arg

__all__ = ["Graph", "PythonCode", "CodeGen"]


def _snake_case(s: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", s).lower()


def _is_magic(x: str) -> bool:
    return x.startswith("__") and x.endswith("__")


_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")

_illegal_names: dict[str, object] = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)


@dataclass
class _CustomBuiltin:
    import_str: str
    obj: Any


_custom_builtins: dict[str, _CustomBuiltin] = {}


def _register_custom_builtin(name: str, import_str: str, obj: Any) -> None:
    _custom_builtins[name] = _CustomBuiltin(import_str, obj)
    _illegal_names[name] = obj


def _register_ember_builtins() -> None:
    ember = sys.modules["ember"]
    _register_custom_builtin("inf", "from math import inf", math.inf)
    _register_custom_builtin("nan", "from math import nan", math.nan)
    _register_custom_builtin("NoneType", "NoneType = type(None)", type(None))
    _register_custom_builtin("ember", "import ember", ember)
    # printed values such as `torch.strided` read as code too: `torch` names ember in generated code
    _register_custom_builtin("torch", "import ember as torch", ember)
    _register_custom_builtin("device", "from ember import device", ember.device)


_register_ember_builtins()


class _Namespace:
    """Unique, legal Python names for a Graph's nodes and the globals its code uses."""

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate)
            if not candidate:
                candidate = "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
            assert match is not None
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        maybe_existing = self._obj_to_name.setdefault(obj, name)
        assert maybe_existing is name, "obj is already associated"

    def _rename_object(self, obj: Any, name: str) -> None:
        assert obj in self._obj_to_name
        self._obj_to_name[obj] = name
        self._used_names.add(name)


@dataclass
class PythonCode:
    """The source of a Graph's forward and the globals it needs."""

    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] | None = None


def _format_target(base: str, target: str) -> str:
    elems = target.split(".")
    r = base
    for e in elems:
        if not e.isidentifier():
            r = f'getattr({r}, "{e}")'
        else:
            r = f"{r}.{e}"
    return r


reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}",
    "and_": "{} & {}", "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}

magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "pos": "+{}", "neg": "-{}", "invert": "~{}",
    **reflectable_magic_methods,
}

inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}", "imod": "{} %= {}",
    "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}", "irshift": "{} >>= {}",
    "isub": "{} -= {}", "itruediv": "{} /= {}", "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


class CodeGen:
    """Turns a Graph into Python source (torch.fx.graph.CodeGen)."""

    def __init__(self) -> None:
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        if len(free_vars) == 0 or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Argument) -> str:
        return f"return {repr(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        return []

    def _gen_python_code(self, nodes, root_module: str, namespace: _Namespace, *, verbose: bool = False) -> PythonCode:
        free_vars: list[str] = []
        body: list[str] = []
        globals_: dict[str, Any] = {}
        wrapped_fns: dict[str, None] = {}
        maybe_return_annotation = [""]

        def add_global(name_hint: str, obj: Any) -> str:
            ember = sys.modules["ember"]
            if is_from_ember(obj) and obj is not ember.device:
                return qualified_name(obj)
            global_name = namespace.create_name(name_hint, obj)
            if global_name in globals_:
                assert globals_[global_name] is obj
                return global_name
            globals_[global_name] = obj
            return global_name

        for name, builtin in _custom_builtins.items():
            add_global(name, builtin.obj)

        def type_repr(o: Any) -> str:
            if o == ():
                return "()"
            if isinstance(o, type):
                if o.__module__ == "builtins":
                    return o.__qualname__
                ember = sys.modules["ember"]
                if o is ember.Tensor:
                    return "ember.Tensor"
                return add_global(_type_repr(o), o)
            return add_global(_illegal_char_regex.sub("_", repr(o)) or "_type", o)

        def _get_repr(arg: Any) -> str:
            ember = sys.modules["ember"]
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                global_name = add_global(qualified_name(type(arg)), type(arg))
                return f"{global_name}{repr(tuple(arg))}"
            if isinstance(arg, ember.Tensor):
                size = list(arg.size())
                dtype = str(arg.dtype).split(".")[-1]
                return f"ember.Tensor(size={size}, dtype={dtype})"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({_get_repr(arg[0])},)"
                return "(" + ", ".join(_get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(_get_repr(a) for a in arg) + "]"
            if isinstance(arg, slice):
                return f"slice({_get_repr(arg.start)}, {_get_repr(arg.stop)}, {_get_repr(arg.step)})"
            if isinstance(arg, type):
                return type_repr(arg)
            return repr(arg)

        def _format_args(args: tuple, kwargs: dict) -> str:
            res = [_get_repr(a) for a in args]
            res.extend([f"{k} = {_get_repr(v)}" for k, v in kwargs.items()])
            return ", ".join(res)

        node_to_last_use: dict[Node, Node] = {}
        user_to_last_uses: dict[Node, list[Node]] = {}

        def register_last_uses(n: Node, user: Node) -> None:
            if n not in node_to_last_use:
                node_to_last_use[n] = user
                user_to_last_uses.setdefault(user, []).append(n)

        for node in reversed(nodes):
            for input_node in node._input_nodes:
                register_last_uses(input_node, node)

        def delete_unused_values(user: Node) -> None:
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            nodes_to_delete = list(user_to_last_uses.get(user, []))
            if len(user.users.keys()) == 0:
                nodes_to_delete.append(user)
            if nodes_to_delete:
                to_delete_str = " = ".join([repr(n) for n in nodes_to_delete] + ["None"])
                body.append(f";  {to_delete_str}\n")
            else:
                body.append("\n")

        def emit_node(node: Node) -> None:
            maybe_type_annotation = "" if node.type is None else f" : {type_repr(node.type)}"
            if verbose and "tensor_meta" in node.meta:
                meta = node.meta["tensor_meta"]
                if hasattr(meta, "shape") and hasattr(meta, "dtype"):
                    dtype = str(meta.dtype).split(".")[-1]
                    maybe_type_annotation = f': "{dtype}{list(meta.shape)}"'
            if node.op == "placeholder":
                assert isinstance(node.target, str)
                maybe_default_arg = "" if not node.args else f" = {_get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{maybe_type_annotation}{maybe_default_arg}")
                raw_name = node.target.replace("*", "")
                if raw_name != repr(node):
                    body.append(f"{repr(node)} = {raw_name}\n")
                return
            if node.op == "call_method":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{maybe_type_annotation} = "
                            f"{_format_target(_get_repr(node.args[0]), node.target)}"
                            f"({_format_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                assert callable(node.target)
                if getattr(node.target, "__module__", "") == "_operator" and node.target.__name__ in magic_methods:
                    body.append(f"{repr(node)}{maybe_type_annotation} = "
                                f"{magic_methods[node.target.__name__].format(*(_get_repr(a) for a in node.args))}")
                    return
                if getattr(node.target, "__module__", "") == "_operator" and node.target.__name__ in inplace_methods:
                    body.append(f"{inplace_methods[node.target.__name__].format(*(_get_repr(a) for a in node.args))}"
                                f";  {repr(node)}{maybe_type_annotation} = {_get_repr(node.args[0])}")
                    return
                global_name = add_global(qualified_name(node.target), node.target)
                if (global_name == "getattr" and isinstance(node.args, tuple) and len(node.args) == 2
                        and isinstance(node.args[1], str) and node.args[1].isidentifier()):
                    body.append(f"{repr(node)}{maybe_type_annotation} = "
                                f"{_format_target(_get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{maybe_type_annotation} = {global_name}"
                            f"({_format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
                return
            if node.op == "call_module":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{maybe_type_annotation} = "
                            f"{_format_target(root_module, node.target)}({_format_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                assert isinstance(node.target, str)
                body.append(f"{repr(node)}{maybe_type_annotation} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    maybe_return_annotation[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(node.args[0]))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        prev_summary = None
        for node in nodes:
            if verbose and node.op not in ("placeholder", "output"):
                trace = node.stack_trace
                summary = ("\n# No stacktrace found for following nodes\n" if not trace
                           else f"\n# {trace.strip().splitlines()[-1].strip()}\n")
                if summary != prev_summary:
                    prev_summary = summary
                    body.append(summary)
            emit_node(node)
            delete_unused_values(node)

        if len(body) == 0:
            body.append("pass\n")
        if wrapped_fns:
            wrap_name = add_global("wrap", sys.modules["ember.fx"].wrap)
            wrap_stmts = "\n".join([f'{wrap_name}("{name}")' for name in wrapped_fns])
        else:
            wrap_stmts = ""
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = self.gen_fn_def(free_vars, maybe_return_annotation[0])
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        fn_code = f"""
{wrap_stmts}

{prologue}
{code}"""
        return PythonCode(fn_code, globals_)


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, type, value, tb) -> None:
        self.graph._insert = self.orig_insert


class _node_list:  # noqa: N801 - torch's name
    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        assert direction in ("_next", "_prev")
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> _node_list:
        return _node_list(self.graph, "_next" if self.direction == "_prev" else "_prev")

    def __getitem__(self, idx):
        return list(self)[idx]


class Graph:
    """The IR of ember.fx: Nodes in execution order, with the methods that build and edit them."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict[str, Any] = {}

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _node_list:
        """The nodes in execution order (a live view: iterate, len(), reversed())."""
        return _node_list(self)

    def _order(self, node: Node) -> int:
        for i, n in enumerate(self.nodes):
            if n is node:
                return i
        raise RuntimeError(f"Node {node} is not in the graph")

    def find_nodes(self, *, op: str, target: Any = None, sort: bool = True) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ------------------------------------------------------------------ building
    def create_node(self, op: str, target: Target, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Create a Node, insert it at the current insertion point and return it."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        assert isinstance(args, tuple), "args must be a tuple"
        assert isinstance(kwargs, dict), "kwargs must be a dict"
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def process_inputs(self, *args: Any) -> Any:
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        return self._codegen.process_outputs(out)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node with no users from the graph."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} "
                               f"users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node", stacklevel=2)
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: nodes created inside go before n (at the graph's start when n is None)."""
        if n is None:
            return self.inserting_after(self._root)
        assert n.graph is self, "Node to insert before is not in graph."
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Context manager: nodes created inside go after n (at the graph's end when n is None)."""
        if n is None:
            return self.inserting_before(self._root)
        assert n.graph is self, "Node to insert after is not in graph."
        return _InsertPoint(self, n.append)

    def placeholder(self, name: str, type_expr: Any | None = None, default_value: Any = inspect.Signature.empty
                    ) -> Node:
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        def _get_attr_reference_exists(mod, qualified_name: str) -> bool:
            module_path, _, name = qualified_name.rpartition(".")
            try:
                submod = mod.get_submodule(module_path)
            except AttributeError:
                warnings.warn(f"Failed to fetch module {module_path}!", stacklevel=3)
                return False
            if not hasattr(submod, name):
                return False
            res = getattr(submod, name)
            ember = sys.modules["ember"]
            return isinstance(res, (ember.nn.Module, ember.nn.Parameter, ember.Tensor)) or name in submod._buffers

        if self.owning_module and not _get_attr_reference_exists(self.owning_module, qualified_name):
            warnings.warn("Attempted to insert a get_attr Node with no underlying reference in the owning "
                          "GraphModule! Call GraphModule.add_submodule to add the necessary submodule, "
                          "GraphModule.add_parameter to add the necessary Parameter, or "
                          "nn.Module.register_buffer to add the necessary buffer", stacklevel=2)
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        if self.owning_module and self.owning_module.get_submodule(module_name) is None:
            warnings.warn("Attempted to insert a call_module Node with no underlying reference in the owning "
                          "GraphModule! Call GraphModule.add_submodule to add the necessary submodule", stacklevel=2)
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any | None = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any | None = None, name: str | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, name=name, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        return self.create_node(op="output", target="output", args=(result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """Copy `node` (from another graph) into this one, mapping its input Nodes through arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        assert isinstance(args, tuple)
        assert isinstance(kwargs, dict)
        result_node = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result_node.meta = copy.copy(node.meta)
        return result_node

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False):
        """Copy all nodes of g into this graph; val_map maps g's nodes to the new ones (filled in)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        output_vals = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if output_vals is not None:
            assert isinstance(output_vals, tuple)
            output_val, old_output_node = output_vals
            new_output_node = g.output(output_val, type_expr=getattr(old_output_node, "type", None))
            new_output_node.meta = copy.copy(old_output_node.meta)
        return g

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            op = target.__name__
        else:
            assert isinstance(target, str)
            op = target
            if _is_magic(op):
                op = op[2:-2]
        return _snake_case(op)

    # ------------------------------------------------------------------ passes
    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Remove nodes whose results nobody uses (and have no side effects); True if any was removed."""
        self.lint()

        def has_side_effect(node: Node) -> bool:
            if is_impure_node is not None:
                return is_impure_node(node)
            return node.is_impure()

        changed = False
        for node in reversed(self.nodes):
            if not has_side_effect(node) and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: node ownership, argument order, unique names, existing targets."""
        def check_arg(arg: Node, n: Node | None = None) -> None:
            context_str = f" of Node '{n}' " if n else " "
            if arg.graph is not self:
                raise RuntimeError(f"Argument '{arg}'{context_str}does not belong to this Graph, "
                                   f"but was used as an argument! If you are copying nodes from another graph, "
                                   f"make sure to use ``arg_transform`` on node_copy() to remap values\n{self}")
            if arg not in seen_values:
                raise RuntimeError(f"Argument '{arg}'{context_str}was used before it has been defined! Please "
                                   f"check that Nodes in the graph are topologically ordered\n{self}")

        seen_names: set[str] = set()
        seen_values: set[Node] = set()
        for node in self.nodes:
            if node.op not in {"placeholder", "call_method", "call_module", "call_function", "get_attr", "output"}:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                check_arg(arg, node)
            seen_values.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)

        if self.owning_module:
            for node in self.nodes:
                if node.op in ("get_attr", "call_module"):
                    target_atoms = node.target.split(".")
                    m_itr = self.owning_module
                    for i, atom in enumerate(target_atoms):
                        new_m_itr = getattr(m_itr, atom, None)
                        seen_qualname = ".".join(target_atoms[:i])
                        if new_m_itr is None:
                            raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                               f"{atom} of {seen_qualname}")
                        if node.op == "call_module" and not isinstance(new_m_itr, sys.modules["ember"].nn.Module):
                            raise RuntimeError(f"Node {node} target {node.target} {atom} of {seen_qualname} does "
                                               "not reference an nn.Module")
                        m_itr = new_m_itr

    # ------------------------------------------------------------------ printing
    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        namespace = _Namespace()

        def node_repr(n: Node) -> str:
            return namespace.create_name(n.name, n)

        for node in self.nodes:
            namespace.create_name(node.name, node)
        old = {}
        for node in self.nodes:
            old[node] = node._repr_fn
            node._repr_fn = node_repr
        try:
            return self._codegen._gen_python_code(list(self.nodes), root_module, namespace, verbose=verbose)
        finally:
            for node, fn in old.items():
                node._repr_fn = fn

    def on_generate_code(self, make_transformer):
        """Context manager that installs a body transformer on the code generator."""
        import contextlib

        on_gen_code_old = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(on_gen_code_old)

        @contextlib.contextmanager
        def on_generate_code_context_manager():
            try:
                yield
            finally:
                self._codegen._body_transformer = on_gen_code_old

        return on_generate_code_context_manager()

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        node_strs = [node.format_node(placeholder_names) for node in self.nodes]
        param_str = ", ".join(placeholder_names)
        s = f"graph({param_str}){maybe_return_typename[0]}:"
        for node_str in node_strs:
            if node_str:
                s += "\n    " + node_str
        return s

    def print_tabular(self) -> None:
        """Print the nodes as a table (with `tabulate` when installed, as torch does; a plain table otherwise)."""
        node_specs = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        headers = ["opcode", "name", "target", "args", "kwargs"]
        try:
            from tabulate import tabulate
        except ImportError:
            print(_plain_table(node_specs, headers))
            return
        print(tabulate(node_specs, headers=headers))


def _plain_table(rows: list[list[Any]], headers: list[str]) -> str:
    """tabulate's "simple" format, for machines without tabulate."""
    cells = [[str(c) if not callable(c) or isinstance(c, str) else _target_str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def _target_str(target) -> str:
    return str(target)
