"""torch.fx.GraphModule: an nn.Module holding a Graph and the forward() generated from it."""

from __future__ import annotations

import copy
import itertools
import linecache
import sys
from typing import Any

from ..nn.modules.module import Module
from .graph import Graph, PythonCode

__all__ = ["GraphModule"]

_next_id = itertools.count()


def _ember():
    return sys.modules["ember"]


def _forward_from_src(src: str, globals_: dict[str, Any], co_fields: dict | None = None):
    """exec the generated source; registered with linecache so tracebacks show the generated lines."""
    key = f"<eval_with_key>.{next(_next_id)}"
    if co_fields:
        key += f" from {co_fields.get('co_filename', '')}:{co_fields.get('co_firstlineno', '')} in " \
               f"{co_fields.get('co_name', '')}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    globals_copy = dict(globals_)
    exec(compile(src, key, "exec"), globals_copy)  # noqa: S102 - generated code, as torch.fx does
    return globals_copy["forward"]


def _copy_attr(from_module, to_module, target: str) -> None:
    ember = _ember()
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # already installed (a submodule copied whole)
        if t is None:
            t = ember.nn.Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, ember.nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target: str) -> None:
    ember = _ember()
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = ember.nn.Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, ember.nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _addindent(s_: str, num_spaces: int) -> str:
    s = s_.split("\n")
    if len(s) == 1:
        return s_
    first = s.pop(0)
    s = [(num_spaces * " ") + line for line in s]
    return first + "\n" + "\n".join(s)


def _print_readable(module, module_name: str, print_output: bool = True) -> str:
    graph = module.graph
    module_code = graph.python_code(root_module="self", verbose=True).src
    module_code = module_code.lstrip("\n")
    module_code = f"class {module_name}(ember.nn.Module):\n" + module_code
    module_code = _addindent(module_code, 4)
    module_code = "\n".join(line.rstrip() for line in module_code.split("\n")).rstrip("\n") + "\n"
    submodule_code_list = [""]
    for submodule_name, submodule in module.named_children():
        if isinstance(submodule, GraphModule):
            submodule_code_list.append(_print_readable(submodule, submodule_name, print_output=False))
    submodule_code = _addindent("\n".join(submodule_code_list), 4)
    output = module_code + submodule_code
    if print_output:
        print(output)
    return output


class GraphModule(Module):
    """An nn.Module generated from an fx Graph: it copies from `root` the submodules, parameters and buffers
    the graph's get_attr / call_module nodes name, and its forward is the Graph's generated code."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class, so that recompile() can install its own forward
        for t in cls.__mro__:
            c = t.__qualname__.split(".")[-1]
            if c != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[misc, valid-type]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        ember = _ember()
        self.__class__.__name__ = class_name
        if isinstance(root, ember.nn.Module):
            if hasattr(root, "training"):
                self.training = root.training
            if getattr(root, "_fx_code_only", False):
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets_to_copy = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    assert isinstance(node.target, str)
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target " + node.target
                                           + " but that target was not provided in ``root``!")
                    targets_to_copy.append(node.target)
            targets_to_copy.sort(key=lambda t: t.count("."))
            for target_to_copy in targets_to_copy:
                _assign_attr(root[target_to_copy], self, target_to_copy)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = None
        if graph._tracer_cls and "<locals>" not in graph._tracer_cls.__qualname__:
            self._tracer_cls = graph._tracer_cls
        self._tracer_extras = graph._tracer_extras or {}
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        assert isinstance(g, Graph), f"Expected a Graph instance, but got {type(g)}"
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate forward() from self.graph; call after editing the graph."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        cls = type(self)
        co_fields = getattr(self._graph, "_co_fields", {})
        cls.forward = _forward_from_src(self._code, python_code.globals, co_fields)
        for _, mod in self.named_children():
            if isinstance(mod, GraphModule):
                mod.recompile()
        return python_code

    # ------------------------------------------------------------------ submodules
    def add_submodule(self, target: str, m) -> bool:
        ember = _ember()
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = ember.nn.Module()
                setattr(mod, item, submod)
            if not isinstance(submod, ember.nn.Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        ember = _ember()
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, ember.nn.Module):
                return False
        if not hasattr(mod, target_submod):
            return False
        if not isinstance(getattr(mod, target_submod), ember.nn.Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        used: list[str] = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                used.extend(".".join(fullpath[:i]) for i in range(1, len(fullpath) + 1))
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                        for submod_name, _ in submod.named_modules():
                            if submod_name != "":
                                used.append(".".join([node.target, submod_name]))
                    except AttributeError:
                        pass
        to_delete = [name for name, _ in self.named_modules() if name not in used and name != ""]
        for name in to_delete:
            self.delete_submodule(name)

    # ------------------------------------------------------------------ copies, printing
    def __deepcopy__(self, memo):
        ember = _ember()
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake_mod = ember.nn.Module()
        fake_mod.__dict__ = copy.deepcopy(self.__dict__, memo)
        fake_mod.__dict__["_fx_code_only"] = True
        graph = fake_mod.__dict__["_graph"]
        GraphModule.__init__(res, fake_mod, graph, type(self).__name__)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self):
        ember = _ember()
        fake_mod = ember.nn.Module()
        fake_mod.__dict__.update(self.__dict__)
        fake_mod.__dict__["_fx_code_only"] = True
        res = GraphModule(fake_mod, self.graph, type(self).__name__)
        res.meta = getattr(self, "meta", {})
        return res

    def print_readable(self, print_output: bool = True, include_stride: bool = False, include_device: bool = False,
                       colored: bool = False) -> str:
        """The generated code as a class, with the graph modules it holds."""
        return _print_readable(self, self._get_name(), print_output)

    def __str__(self) -> str:
        orig_str = super().__str__()
        print_readable_reminder = "# To see more debug info, please use `graph_module.print_readable()`"
        return "\n".join([orig_str, self._code, print_readable_reminder])

    def __reduce__(self):
        dict_without_graph = self.__dict__.copy()
        python_code = self.recompile()
        del dict_without_graph["_graph"]
        return (_reduce_graph_module, (dict_without_graph, python_code.src, type(self).__name__))


def _reduce_graph_module(body: dict, src: str, class_name: str):
    """Unpickle: re-trace the saved code into a Graph (torch.fx's reduce_graph_module)."""
    ember = _ember()
    from ._symbolic_trace import Tracer

    fake_mod = ember.nn.Module()
    fake_mod.__dict__ = body
    fake_mod.__dict__["_fx_code_only"] = True
    forward = _forward_from_src(src, {"ember": ember, "torch": ember, "device": ember.device,
                                      "inf": float("inf"), "nan": float("nan"), "NoneType": type(None)})

    class KeepModules(Tracer):
        def is_leaf_module(self, _, __) -> bool:
            return True

    fake_mod.forward = forward
    com = type("CodeOnlyModule", (ember.nn.Module,), {"forward": forward})
    com_inst = com.__new__(com)
    com_inst.__dict__ = body
    graph = KeepModules().trace(com_inst)
    return GraphModule(fake_mod, graph, class_name)
