"""Finding ember's ops by name: the table that lets a saved graph name its ops and a new process find them.

ember declares each op once as an `OpDef` (ember/_dispatch.py) but keeps no name -> OpDef table: family
modules hold their ops as module globals (`_DIV_TRUNC`, `LINEAR`), in tables, or in the closures of the
functions they register (`ember.exp` closes over its op).  This module builds the table by walking those
references in the loaded `ember.*` modules (globals, containers of them, closure cells of functions), so no
op declaration had to change.

An op name is not unique (three `div` ops: true, trunc and floor division; `reshape` as a view and as a
copy), so each op also gets a *reference*, the first place it was found in a fixed order, such as
`ember._ops.elementwise:_DIV_TRUNC` or `ember:exp.<cell op>`.  A saved node stores both; loading takes
the op by name when one op has it and by reference otherwise.  Only ops reachable this way can be
exported: an `autograd.Function` defined in user code or a compiled kernel has no stable name.
"""

from __future__ import annotations

import importlib
import sys
import types

from .._dispatch import OpDef

_table: dict = {}  # "by_name": {name: [OpDef]}, "by_ref": {ref: OpDef}, "ref_of": {id(op): ref}, "modules": n


def _walk(value, ref: str, depth: int, found: list) -> None:
    """Append (ref, op) for every OpDef reachable from `value` through containers and closures."""
    if isinstance(value, OpDef):
        found.append((ref, value))
        return
    if depth >= 2:
        return
    if isinstance(value, types.FunctionType):
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or ()):
            try:
                content = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if isinstance(content, OpDef):
                found.append((f"{ref}.<cell {name}>", content))
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            if isinstance(key, (str, int)):
                _walk(item, f"{ref}[{key!r}]", depth + 1, found)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _walk(item, f"{ref}[{index}]", depth + 1, found)


def _ember_modules() -> list:
    return sorted(name for name, module in list(sys.modules.items())
                  if module is not None and (name == "ember" or name.startswith("ember.")))


def _preference(ref: str) -> tuple:
    """Plain module globals first (the op's declaration), then tables, then closures; then alphabetical."""
    return ("<cell" in ref, "[" in ref, ref)


def _build() -> dict:
    names = _ember_modules()
    if _table.get("modules") == len(names):
        return _table
    found: list = []
    for name in names:
        module = sys.modules[name]
        for attribute, value in list(vars(module).items()):
            _walk(value, f"{name}:{attribute}", 0, found)
    by_name: dict = {}
    by_ref: dict = {}
    refs: dict = {}
    for ref, op in found:
        by_ref.setdefault(ref, op)
        refs.setdefault(id(op), []).append(ref)
        ops = by_name.setdefault(op.name, [])
        if not any(known is op for known in ops):
            ops.append(op)
    ref_of = {key: min(values, key=_preference) for key, values in refs.items()}
    _table.update(by_name=by_name, by_ref=by_ref, ref_of=ref_of, modules=len(names))
    return _table


def reference(op: OpDef) -> str | None:
    """The op's stable reference (`module:attribute...`), or None when it is not one of ember's ops."""
    return _build()["ref_of"].get(id(op))


def lookup(name: str, ref: str | None) -> OpDef:
    """The op a saved node names: the op at its reference when that op has the name, else the only op with it."""
    table = _build()
    if ref:
        module = ref.split(":", 1)[0]
        if module.startswith("ember.") and module not in sys.modules:
            importlib.import_module(module)  # an ember module the exporting process had loaded
            table = _build()
        op = table["by_ref"].get(ref)
        if op is not None and op.name == name:
            return op
    candidates = table["by_name"].get(name, [])
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise KeyError(f"ember.export: no op named {name!r} in ember's op registry (the program was exported by "
                       "another ember version?)")
    raise KeyError(f"ember.export: {len(candidates)} ops are named {name!r} and the reference {ref!r} names none "
                   "of them (the program was exported by another ember version?)")
