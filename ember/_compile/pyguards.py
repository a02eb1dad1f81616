"""Guards on the Python values a captured graph baked in: scalar globals, closure cells, module attributes.

A capture runs the function once and records its tensor ops; a Python number it read on the way (a global
`SCALE`, a closure's `k`, a module's `self.temperature` or `self.use_relu`) is frozen into the graph as a
constant or as the branch taken.  torch's dynamo guards on each such read; ember, which traces ops rather
than bytecode, guards on:

- the scalar (int, float, bool, str, None) and tensor globals named by the code of every function that ran
  during the capture, outside ember, NumPy and the standard library (found with `sys.setprofile` while
  tracing; `Watcher`).  A global that changes makes the next call miss and recapture, as in torch;
- the scalar and tensor closure cells of the compiled function itself (`closure_cells`);
- the public scalar and plain-tensor attributes of a compiled module and of its submodules
  (`module_attributes`).
Scalars are guarded by value, tensors by identity: the graph reads a tensor it names at its current value
(in-place updates are seen), but a name rebound to another tensor needs a new capture.

Not covered: closure cells of other functions the compiled one calls, and attributes of non-Module objects
(`self.config.scale`).  While another profiler holds `sys.setprofile` (cProfile) no globals are collected.

The other direction, Python state the function *writes*, is not replayed: a list argument appended to, a
global dict or number updated, a module attribute rebound in forward (`self.last_attention = weights`).
`SideEffects` compares that state before and after the capture; where it changed, the call is a graph
break that runs eagerly from then on (torch's dynamo replays such writes; ember keeps them correct by not
compiling that function).
"""

from __future__ import annotations

import os
import sys
import sysconfig

import numpy as np

from .._tensor import Tensor

SCALARS = (int, float, bool, str, type(None))
_MISSING = object()


def _library_prefixes() -> tuple[tuple, tuple]:
    """(always library: ember, NumPy, frozen modules; the standard library, unless inside site-packages)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the ember package
    always = tuple(os.path.join(p, "") for p in (here, os.path.dirname(np.__file__))) + ("<frozen",)
    stdlib = tuple(os.path.join(p, "") for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")} if p)
    return always, stdlib


_ALWAYS, _STDLIB = _library_prefixes()


def _library(filename: str) -> bool:
    """Whether code in `filename` is ember's, NumPy's or the standard library's (its globals are not the
    user's settings); installed packages (site-packages: a model library) count as user code."""
    if filename.startswith(_ALWAYS):
        return True
    return filename.startswith(_STDLIB) and "site-packages" not in filename and "dist-packages" not in filename


def _scalar(value) -> bool:
    return type(value) in SCALARS


def _guarded(value) -> bool:
    return type(value) in SCALARS or isinstance(value, Tensor)


def _key(value):
    """A guarded value as it enters the guard key: scalars by value, anything else by identity."""
    if value is _MISSING:
        return _MISSING
    return (type(value), value) if type(value) in SCALARS else ("id", id(value))


def _state(value):
    """What a Python-level write to `value` changes: a container's identity and items' identities (shallow);
    a scalar's value; None for anything else (its writes are not tracked)."""
    if type(value) is list:
        return ("list", id(value), tuple(id(v) for v in value))
    if type(value) is dict:
        return ("dict", id(value), tuple((id(k), id(v)) for k, v in value.items()))
    if type(value) in (set, frozenset):
        return ("set", id(value), len(value))
    if _scalar(value):
        return (type(value), value)
    return None


class Watcher:
    """While active, records (globals dict, name) -> value for the scalar globals named by each function that
    runs (user code only); `found` keeps the first value seen, the one the capture used.  It also keeps the
    state (`_state`) of every scalar or container global named there at the function's entry, so that
    `written()` can tell which the call changed."""

    def __init__(self) -> None:
        self.found: dict = {}
        self._seen: set = set()
        self._active = False
        self._entry: dict = {}  # (id(globals), name) -> (globals, name, state at first entry)

    def __enter__(self) -> Watcher:
        if sys.getprofile() is None:  # never displace another profiler
            sys.setprofile(self._hook)
            self._active = True
        return self

    def __exit__(self, *exc) -> None:
        if self._active:
            sys.setprofile(None)
            self._active = False

    def _hook(self, frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in self._seen:
            return
        self._seen.add(code)
        if _library(code.co_filename):
            return
        namespace = frame.f_globals
        for name in code.co_names:
            value = namespace.get(name, _MISSING)
            if value is _MISSING:
                continue
            if _guarded(value):
                self.found.setdefault((id(namespace), name), (namespace, name, value))
            state = _state(value)
            if state is not None:
                self._entry.setdefault((id(namespace), name), (namespace, name, state))

    def written(self) -> list:
        """The globals whose value or container contents differ from when the capture first met them."""
        return [name for namespace, name, state in self._entry.values()
                if _state(namespace.get(name, _MISSING)) != state]


def read_globals(watched: dict) -> tuple:
    """The current guard key of each watched global."""
    return tuple(_key(namespace.get(name, _MISSING)) for namespace, name, _ in watched.values())


def captured_globals(found: dict) -> tuple:
    """The guard keys of newly found globals as the capture read them."""
    return tuple(_key(value) for _, _, value in found.values())


def closure_cells(fn) -> list:
    """The cells of `fn`'s closure (or its bound method's function's) that hold a scalar or a tensor now."""
    function = getattr(fn, "__func__", fn)
    cells = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            if _guarded(cell.cell_contents):
                cells.append(cell)
        except ValueError:  # an empty cell
            pass
    return cells


def read_cells(cells: list) -> tuple:
    out = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:
            value = _MISSING
        out.append(_key(value))
    return tuple(out)


def module_attributes(modules: list) -> tuple:
    """Each module's public scalar attributes (besides `training`, guarded on its own) by value and its plain
    tensor attributes (not parameters or buffers, which have their own guards) by identity."""
    scalars = SCALARS
    return tuple(tuple((k, _key(v)) for k, v in m.__dict__.items()
                       if k[0] != "_" and k != "training" and (type(v) in scalars or isinstance(v, Tensor)))
                 for m in modules)


class SideEffects:
    """The Python state a call could write without ember seeing it: containers inside the arguments, and the
    attributes (and parameter/buffer/submodule slots) of the modules involved.  `changed()` names what
    differs after the call."""

    def __init__(self, args, kwargs, modules: list) -> None:
        self.containers: list = []
        self._collect(args, "args", 0)
        self._collect(kwargs, "kwargs", 0)
        self.modules = modules
        self.before = [_state(c) for _, c in self.containers], [_module_state(m) for m in modules]

    def _collect(self, value, path, depth) -> None:
        if depth > 4:
            return
        if type(value) in (list, dict, set):
            self.containers.append((path, value))
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                self._collect(item, f"{path}[{index}]", depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._collect(item, f"{path}[{key!r}]", depth + 1)

    def changed(self) -> list:
        containers, modules = self.before
        out = [path for (path, c), state in zip(self.containers, containers) if _state(c) != state]
        for module, state in zip(self.modules, modules):
            now = _module_state(module)
            if now != state:
                names = sorted({k for k, _ in set(now) ^ set(state)})
                out.append(f"{type(module).__name__} attribute {', '.join(names)}")
        return out


def _module_state(module) -> tuple:
    entries = [(k, id(v)) for k, v in module.__dict__.items()]
    for slot in ("_parameters", "_buffers", "_modules"):
        entries += [(f"{slot}[{k!r}]", id(v)) for k, v in module.__dict__.get(slot, {}).items()]
    return tuple(entries)
