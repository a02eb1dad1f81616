"""How ember.fx prints callables: the public name a user sees (`ember.relu`, `ember.nn.functional.relu`,
`operator.add`), found once in ember's public namespaces, since ember's functions are defined in private
modules (`ember._ops.nn_ops.relu`) and their `__module__` says so."""

from __future__ import annotations

import builtins
import sys
import types

_PUBLIC_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.fft", "ember.special", "ember.nn.init",
                      "ember.fx")
_table: dict[int, str] | None = None


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    # nn.functional first for its own functions (`ember.nn.functional.relu` is a function of its own, as in torch)
    for module_name in reversed(_PUBLIC_NAMESPACES):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name, value in vars(module).items():
            if isinstance(value, (types.ModuleType, type)) or not callable(value):
                continue
            if name.startswith("__"):
                continue
            path = f"{module_name}.{name}"
            previous = table.get(id(value))
            own = getattr(value, "__module__", "") or ""
            # an object reachable from two namespaces: keep the one its defining module points at
            if previous is not None and own.startswith("ember.nn") and previous.startswith("ember.nn.functional"):
                continue
            if previous is not None and getattr(value, "__name__", None) != name \
                    and previous.rsplit(".", 1)[-1] == getattr(value, "__name__", None):
                continue  # an alias (`ember.absolute` for abs): keep the name the function carries
            table[id(value)] = path
    ember = sys.modules.get("ember")
    if ember is not None:
        for name, value in vars(ember.Tensor).items():
            if isinstance(value, types.FunctionType) and id(value) not in table and value.__name__ == name:
                table[id(value)] = f"ember.Tensor.{name}"
    return table


def public_name(obj) -> str | None:
    """`ember.relu` for ember.relu; None for objects outside ember's public namespaces."""
    global _table
    if _table is None:
        _table = _build_table()
    name = _table.get(id(obj))
    if name is None and getattr(obj, "__module__", "") and str(obj.__module__).startswith("ember"):
        _table = _build_table()  # a namespace imported after the first lookup
        name = _table.get(id(obj))
    return name


def is_from_ember(obj) -> bool:
    return public_name(obj) is not None


def qualified_name(func) -> str:
    """torch.fx's _get_qualified_name: `getattr` for builtins, `ember.relu`, `_operator.add`, `module.fn`."""
    name = getattr(func, "__name__", None)
    if name is not None and getattr(builtins, name, None) is func:
        return name
    public = public_name(func)
    if public is not None:
        return public
    if isinstance(func, type) and getattr(func, "__module__", "").startswith("ember"):
        return f"{func.__module__}.{func.__qualname__}"
    if name is None:
        name = type(func).__name__
    if name == "<lambda>":
        import inspect

        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    module = getattr(func, "__module__", None) or "builtins"
    return f"{module}.{name}"


def pretty_print_target(target) -> str:
    """How a node's target prints in str(graph): `builtins.getattr`, `operator.add`, `ember.relu`."""
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None)
    name = getattr(target, "__name__", None)
    if module == "builtins" and name is not None:
        return f"builtins.{name}"
    if module == "_operator" and name is not None:
        return f"operator.{name}"
    return qualified_name(target)
