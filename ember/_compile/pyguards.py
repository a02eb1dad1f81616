"""Guards on the Python values a captured graph baked in: globals, closure cells, module attributes, settings.

A capture runs the function once and records its tensor ops; a Python number it read on the way (a global
`SCALE`, a closure's `k`, a module's `self.temperature` or `self.use_relu`) is frozen into the graph as a
constant or as the branch taken.  torch's dynamo guards on each such read; ember, which traces ops rather
than bytecode, guards on:

- the globals named by the code of every function that ran during the capture, outside ember, NumPy, the
  standard library and the import system (found with `sys.setprofile` while tracing; `Watcher`).  A global
  that changes makes the next call miss and recapture, as in torch;
- the closure cells of the compiled function itself (`closure_cells`) and of the user functions it called
  (found by the same watcher: `Watcher._closure`; closures made during the call are its own locals);
- the attributes of a compiled module and of its submodules, private ones and user classes' class
  attributes included (`module_attributes`), with their training flags, parameters, buffers and hooks.
  Only attributes whose name the code that ran could read are guarded (`Watcher.names`: the names and string
  constants of every function called, ember's included), so that a counter the training loop bumps
  (`model.steps += 1`) and forward never reads does not recapture every call; user code that reads
  attributes by a computed name (`getattr(self, name)`, `vars(self)`) makes every attribute guarded again.
What is guarded, by kind of value (`_key`):
- scalars (Python's and NumPy's, dtypes, devices, and tuples of them such as a namedtuple) by value;
- tensors by identity: the graph reads a tensor it names at its current value (in-place updates are seen),
  but a name rebound to another tensor needs a new capture;
- modules by `module_guard` (a model used through a global: `net.eval()` recaptures);
- settings by their contents, settings inside them too down to three levels (`_settings`, `_contents`):
  a dataclass (slots too),
  `argparse.Namespace` (`args.scale`), `SimpleNamespace`, a small dict or list, a user class or user Python
  module read as a config (`Config.scale`, `config.SCALE`), including the modules they hold.

Not everything is seen: settings nested deeper than three levels, Python modules without a
file, and nothing while another profiler holds `sys.setprofile` (cProfile) for globals and callees' closures
(module attributes are then all guarded).  Guarding by name rather than by each read can still recompile where
torch would not (a counter attribute forward reads only in a branch it did not take, or a settings object's
scalar the graph did not use): the price of not reading bytecode, paid in recompiles, never in wrong values.

The other direction, Python state the function *writes*, is not replayed: a list argument appended to, a
global dict or number updated, a module attribute rebound in forward (`self.last_attention = weights`).
`SideEffects` compares that state before and after the capture; where it changed, the call is a graph
break that runs eagerly from then on (torch's dynamo replays such writes; ember keeps them correct by not
compiling that function).  A global the function writes is then keyed by identity, not contents
(`read_globals`), so that its eager entry is found again.
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import dis
import functools
import gc
import hashlib
import os
import sys
import sysconfig
import types
import weakref

import numpy as np

from .._tensor import Tensor

SCALARS = (int, float, bool, str, type(None))
_MISSING = object()


def _library_prefixes() -> tuple[tuple, tuple]:
    """(always library: ember and its runtime dependencies (NumPy, ml_dtypes: `finfo`, which clamp and
    clip_grad_norm_ call, reads attributes by computed names, so counted as user code it turned guards on for
    every attribute and an lr schedule recompiled each step), frozen modules; the standard library, unless
    inside site-packages)."""
    import ml_dtypes

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the ember package
    packages = (here, os.path.dirname(np.__file__), os.path.dirname(ml_dtypes.__file__))
    always = tuple(os.path.join(p, "") for p in packages) + ("<frozen",)
    stdlib = tuple(os.path.join(p, "") for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")} if p)
    return always, stdlib


_ALWAYS, _STDLIB = _library_prefixes()


def _library(filename: str) -> bool:
    """Whether code in `filename` is ember's, NumPy's or the standard library's (its globals are not the
    user's settings); installed packages (site-packages: a model library) count as user code."""
    if filename.startswith(_ALWAYS):
        return True
    return filename.startswith(_STDLIB) and "site-packages" not in filename and "dist-packages" not in filename


_SMALL = 1024  # the most items a settings dict or list may have to be guarded by content (see _key)
_TUPLE = 32  # the most items a tuple may have to be guarded as a scalar value


def _value_types() -> tuple:
    """Types guarded by value besides SCALARS: NumPy scalars, ember dtypes and devices (`x.to(DT)`)."""
    from .._device import device
    from .._dtype import dtype

    return (np.generic, dtype, device)


_VALUES: tuple = ()


def _scalar(value) -> bool:
    """A value guarded by value: a scalar (NumPy's too), a dtype or device, or a short tuple of them (a
    `self.kernel_size`, a namedtuple of settings)."""
    global _VALUES
    kind = type(value)
    if kind in SCALARS:
        return True
    if not _VALUES:
        _VALUES = _value_types()
    if isinstance(value, _VALUES):
        return True
    if not isinstance(value, tuple) or len(value) > _TUPLE:
        return False
    for v in value:  # (a loop, not all(genexpr): a module's kernel_size is checked on every call)
        if type(v) not in SCALARS and not isinstance(v, _VALUES):
            return False
    return True


def _settings(value):
    """The namespace (name -> value) of a settings object, whose scalar, tensor and module contents a graph
    may have baked in; None for anything else.  Settings are: small dicts, lists and tuples, `argparse.Namespace`
    and `SimpleNamespace`, instances of user classes (a dataclass config, slots or not), and user classes and
    user Python modules read as configs (`Config.scale`, `import config; config.SCALE`).  Functions, ember's
    and NumPy's objects (optimizers, loaders) and the standard library's are not."""
    kind = type(value)
    if kind is dict or isinstance(value, dict):  # (OrderedDict, defaultdict: read as settings too)
        return value if len(value) <= _SMALL else None
    if kind is list or kind is collections.deque:  # (a deque of recent rewards read for a baseline)
        return dict(enumerate(value)) if len(value) <= _SMALL else None
    if kind is tuple:  # of tensors (a quantized Linear's packed (weight, bias), rebound by set_weight_bias)
        return dict(enumerate(value)) if len(value) <= _SMALL else None
    if kind in _NAMESPACES:
        return value.__dict__
    if isinstance(value, Tensor):
        return None
    if isinstance(value, type):
        return value.__dict__ if _user_class(value) and not issubclass(value, _Module()) else None
    if isinstance(value, types.ModuleType):
        filename = getattr(value, "__file__", None)
        return value.__dict__ if filename is not None and not _library(filename) else None
    if isinstance(value, _FUNCTIONS) or not _user_class(kind):  # (a user object with __call__ is settings)
        return None
    namespace = getattr(value, "__dict__", None)
    if type(namespace) is dict:
        return namespace
    if dataclasses.is_dataclass(value):  # @dataclass(slots=True)
        return {field.name: getattr(value, field.name, None) for field in dataclasses.fields(value)}
    return None


_NAMESPACES = (types.SimpleNamespace, argparse.Namespace)
_CONTAINERS = (list, dict, set)
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType,
              functools.partial)


def array_digest(array) -> bytes:
    """A digest of an array's bytes: NumPy data compared by content (guards, made tensors, written arrays)."""
    return hashlib.blake2b(np.ascontiguousarray(array).view(np.uint8), digest_size=16).digest()


def _array_key(array: np.ndarray) -> tuple:
    """A NumPy array a graph may have baked in (`ember.tensor(self.table)`, `from_numpy(W)`): by shape, dtype
    and a digest of its contents, so that an array rebound or written in place recaptures."""
    data = np.ascontiguousarray(array)
    if data.dtype.hasobject:
        return ("ndarray-id", id(array))
    return ("ndarray", array.shape, data.dtype.str, array_digest(data))
_USER_CLASSES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _user_class(kind: type) -> bool:
    """Whether `kind` (or an instance of it) may be user settings: a class defined in user code
    (a script, a model package), not in ember, NumPy or the standard library (a typing.TypeVar is not)."""
    known = _USER_CLASSES.get(kind)
    if known is None:
        module = sys.modules.get(kind.__module__)
        filename = getattr(module, "__file__", None)
        known = _USER_CLASSES[kind] = kind.__module__ == "__main__" or (
            filename is not None and not _library(filename))
    return known


_NESTING = 3  # settings inside settings compared by content this deep (`self.config.attn.scale`), then by id


def _contents(namespace, depth: int = 1) -> tuple:
    """A settings object's guard key: its public scalar items by value, tensor items by identity, modules by
    `module_guard` and settings items by their own contents (down to _NESTING levels), in order."""
    out = []
    for k, v in namespace.items():
        if type(k) is str and k[:1] == "_":  # private helpers and a module's or class's dunders
            continue
        if _scalar(v):
            out.append((k, (type(v), v)))
        elif isinstance(v, Tensor):
            out.append((k, ("id", id(v))))
        elif type(v) is np.ndarray:
            out.append((k, _array_key(v)))
        elif isinstance(v, _Module()):
            out.append((k, module_guard(v)))
        else:
            inner = _settings(v)
            if inner is not None:
                out.append((k, ("settings", type(v), _contents(inner, depth + 1)) if depth < _NESTING
                            else ("id", id(v))))
    return tuple(out)


def _guarded(value) -> bool:
    return (_scalar(value) or isinstance(value, (Tensor, _Module())) or type(value) is np.ndarray
            or _settings(value) is not None or _training_state(value) is not None
            or type(value) in _CONTAINERS or type(value) is collections.deque)


_OPTIM_CLASSES: list = []


def _training_state(value, hyper: bool = True):
    """An optimizer's hyperparameters by value (a function reading `opt.param_groups[0]["lr"]` for a manual
    weight decay) and an lr scheduler's last lrs (`sched.get_last_lr()`); None for anything else.
    They are ember's objects, not settings, and read two levels deep.  `hyper=False` leaves an optimizer's
    hyperparameters out: the function's own code never names `param_groups`, so only its replayed
    `step()` reads them (a per-step lr schedule then replays one graph, not a recompile each step)."""
    if not _OPTIM_CLASSES:
        from ..optim.lr_scheduler import LRScheduler
        from ..optim.optimizer import Optimizer

        _OPTIM_CLASSES.extend((Optimizer, LRScheduler))
    optimizer, scheduler = _OPTIM_CLASSES
    if isinstance(value, optimizer):
        return ("optimizer", id(value), tuple(tuple((k, _hyper(v)) for k, v in group.items() if k != "params")
                                              for group in value.param_groups) if hyper else len(value.param_groups),
                # a user subclass's own settings (`self.clip` of a clipping SGD)
                _contents(value.__dict__) if _user_class(type(value)) else (),
                _hook_state((value.__dict__.get("_optimizer_step_pre_hooks", {}),
                             value.__dict__.get("_optimizer_step_post_hooks", {}))))
    if isinstance(value, scheduler):  # (not its epoch: it moves every step, the lrs only at milestones)
        return ("scheduler", id(value), _hyper(getattr(value, "_last_lr", None)) if hyper else None,
                _training_state(value.optimizer, hyper))
    return None


def bound_key(value, skip=frozenset()) -> tuple:
    """A compiled method's object as its guard: `_key`, less the attributes the method itself writes."""
    if not skip or _training_state(value) is not None:
        return _key(value)
    namespace = _settings(value)
    if namespace is None:
        return _key(value)
    return ("settings", type(value), _contents({k: v for k, v in namespace.items() if k not in skip}))


def _hook_state(dicts) -> tuple:
    """Hook dicts' handle ids, and the settings-like state of hooks that hold some (see _stateful)."""
    return tuple((tuple(hooks), tuple(_key(holder) for holder in _stateful(hooks))) for hooks in dicts if hooks)


def _stateful(hooks) -> list:
    """The hooks of a hook dict that carry state a graph may bake in: a callable object (`self.s`), or a bound
    method's object."""
    found = []
    for hook in hooks.values():
        holder = getattr(hook, "__self__", None) if isinstance(hook, types.MethodType) else hook
        if holder is not None and not isinstance(holder, _FUNCTIONS) and _guarded(holder):
            found.append(holder)
    return found


def _hyper(value):
    if _scalar(value):
        return (type(value), value)
    if isinstance(value, (list, tuple)):
        return tuple(_hyper(v) for v in value)
    return ("id", id(value))


_MODULE_CLASS: list = []


def _Module() -> type:  # noqa: N802 - the class, imported late (nn imports this package), once: guards call it
    if not _MODULE_CLASS:
        from ..nn.modules.module import Module

        _MODULE_CLASS.append(Module)
    return _MODULE_CLASS[0]


def _key(value, hyper: bool = True):
    """A guarded value as it enters the guard key: scalars by value, settings objects by content (`_contents`),
    anything else by identity (`hyper`: see _training_state)."""
    if value is _MISSING:
        return _MISSING
    if _scalar(value):
        return (type(value), value)
    if isinstance(value, _Module()):  # a model used from a global or a closure: net.eval() must recapture
        return module_guard(value)
    if type(value) is np.ndarray:
        return _array_key(value)
    training = _training_state(value, hyper)
    if training is not None:
        return training
    namespace = None if isinstance(value, Tensor) else _settings(value)
    if namespace is None and (type(value) in _CONTAINERS or type(value) is collections.deque):
        # a container too long to compare item by item: its length at least (a history appended to)
        return ("id", id(value), len(value))
    return ("id", id(value)) if namespace is None else ("settings", type(value), _contents(namespace))


def _state(value):
    """What a Python-level write to `value` changes: a container's identity and items' identities (shallow);
    a scalar's value; None for anything else (its writes are not tracked)."""
    if type(value) is list:
        return ("list", id(value), tuple(id(v) for v in value))
    if type(value) is dict:
        return ("dict", id(value), tuple((id(k), id(v)) for k, v in value.items()))
    if type(value) in (set, frozenset):
        return ("set", id(value), len(value))
    if type(value) is np.ndarray:  # written in place (`self.hist += 1`): the same object, other contents
        return ("array", id(value), array_digest(value))
    if _scalar(value):
        return (type(value), value)
    if isinstance(value, Tensor):  # rebound (`state = 0.5 * state + x` on a global or nonlocal): a Python write
        return ("tensor", id(value))
    if _user_object(value):
        # a user object (a logger, a settings object): `log.last = y` in the function is a write a replay skips
        return ("object", id(value), tuple((k, id(v)) for k, v in value.__dict__.items()))
    return None


def _user_object(value) -> bool:
    """An instance of a user class with a `__dict__` (not a tensor or a module): its attribute writes are tracked."""
    return (type(getattr(value, "__dict__", None)) is dict and _user_class(type(value))
            and not isinstance(value, (Tensor, _Module())))


class Watcher:
    """While active, records (globals dict, name) -> value for the scalar globals named by each function that
    runs (user code only); `found` keeps the first value seen, the one the capture used.  It also keeps the
    state (`_state`) of every scalar or container global named there at the function's entry, so that
    `written()` can tell which the call changed."""

    def __init__(self, functions: dict | None = None) -> None:
        self.found: dict = {}
        self._seen: set = set()
        self._active = False
        self._entry: dict = {}  # (id(globals), name) -> (globals, name, state at first entry)
        # code -> the functions found for it (kept by the compiled function across its captures, seeded with
        # itself: called as `self.fn`, it is in no caller's namespace, and gc.get_referrers costs ~30 ms)
        self.functions = {} if functions is None else functions
        # the attribute names the code that ran could read (None: unknown, guard every attribute)
        self.names: set | None = set()
        self.user_names: set | None = set()  # the same, from user code only (not ember's)

    def __enter__(self) -> Watcher:
        self._origin = sys._getframe(1)  # frames from here up are outside the capture
        if sys.getprofile() is None:  # never displace another profiler
            sys.setprofile(self._hook)
            self._active = True
        else:
            self.names = None
            self.user_names = None
        return self

    def __exit__(self, *exc) -> None:
        self._origin = None
        if self._active:
            sys.setprofile(None)
            self._active = False

    def _hook(self, frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in self._seen:
            return
        if _library(code.co_filename):
            self._seen.add(code)
            if self.names is not None:
                self.names.update(_attribute_names(code, library=True))
            return
        if self._importing(frame):  # an import hook (pytest's) or a module body: not the function's reads
            return
        self._seen.add(code)
        if self.names is not None:
            names = _attribute_names(code, library=False)
            self.names = None if names is None else self.names | names
            self.user_names = None if names is None or self.user_names is None else self.user_names | names
        namespace = frame.f_globals
        for name in _global_names(code):
            self._read(namespace, name)
        if code.co_freevars and not self._made_inside(frame):
            for name, cell in self._closure(frame):
                self._read(_Cell(cell), name)

    def _read(self, namespace, name) -> None:
        value = namespace.get(name, _MISSING)
        if value is _MISSING:
            return
        ident = (id(namespace.key) if type(namespace) is _Cell else id(namespace), name)
        if _guarded(value):
            self.found.setdefault(ident, (namespace, name, value))
        state = _watched_state(value)
        if state is not None:
            self._entry.setdefault(ident, (namespace, name, state))

    def _importing(self, frame) -> bool:
        """Whether `frame` runs under the import system (a first import inside the traced call)."""
        caller = frame.f_back
        while caller is not None and caller is not self._origin:
            if caller.f_code.co_filename.startswith("<frozen importlib"):
                return True
            caller = caller.f_back
        return False

    def _made_inside(self, frame) -> bool:
        """Whether the function running in `frame` was defined by a call still running inside the capture (a
        generator expression or lambda in `forward` closing over `B, T, C = x.shape`): its cells are that call's
        locals, made afresh each call, not state a replay could miss."""
        qualname = frame.f_code.co_qualname
        if ".<locals>." not in qualname:
            return False
        outer = qualname.rsplit(".<locals>.", 1)[0]
        caller = frame.f_back
        while caller is not None and caller is not self._origin:
            if caller.f_code.co_qualname == outer:
                return True
            caller = caller.f_back
        return False

    def _closure(self, frame) -> list:
        """(name, cell) for the closure of the function running in `frame`, if any of its free variables holds
        something guarded or write-tracked.  A frame does not name its function, so it is looked up: in the
        compiled function's cache (`functions`), then among the caller's locals and globals, else among the
        referrers of its code (a scan of every object: ~30 ms with torch imported, so only when needed).  The
        function whose cells hold exactly the frame's free variables is taken; if several closures of one code
        match, all are guarded."""
        code = frame.f_code
        values = frame.f_locals
        if not any(_guarded(v) or _state(v) is not None
                   for v in (values.get(name, _MISSING) for name in code.co_freevars) if v is not _MISSING):
            return []
        out = self._matching(self.functions.get(code, ()), code, values)
        if not out:
            candidates = self._search(frame)
            self.functions[code] = candidates
            out = self._matching(candidates, code, values)
        return out

    @staticmethod
    def _search(frame) -> list:
        code = frame.f_code
        caller = frame.f_back
        candidates = []
        for namespace in (caller.f_locals, caller.f_globals) if caller is not None else ():
            for v in namespace.values():  # plain type checks: no getattr on arbitrary (lazy) objects
                if type(v) is types.MethodType:
                    v = v.__func__
                if type(v) is types.FunctionType and v.__code__ is code:
                    candidates.append(v)
        return candidates or [f for f in gc.get_referrers(code) if type(f) is types.FunctionType]

    @staticmethod
    def _matching(functions, code, values) -> list:
        out = []
        for function in functions:
            if function.__code__ is not code or not function.__closure__:
                continue
            pairs = list(zip(code.co_freevars, function.__closure__))
            try:
                if all(cell.cell_contents is values.get(name, _MISSING) for name, cell in pairs):
                    out.extend(pairs)
            except ValueError:  # an empty cell: not this function's frame
                continue
        return out

    def written(self) -> list:
        """(ident, name) of the globals and cells whose value or container contents differ from when the capture
        first met them."""
        return [(ident, name) for ident, (namespace, name, state) in self._entry.items()
                if _watched_state(namespace.get(name, _MISSING)) != state]


def _watched_state(value):
    """`_state`, and for a module reached through a global or a closure (`def f(x): return net(x)`) its modules'
    attributes (`_module_state`): an attribute its forward rebinds (`self.state = 0.5 * self.state + x`, a
    counter, a list append) is a write a replay would not make -- only the compiled module's own and Module
    arguments' were watched (SideEffects), so a replay kept the first call's attribute values."""
    if isinstance(value, _Module()):
        return ("module", id(value), tuple(_module_state(m) for m in value.modules()))
    return _state(value)


_GLOBAL_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GLOBAL_OPS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "STORE_NAME", "DELETE_GLOBAL"))


def _global_names(code) -> tuple:
    """The names `code` reads or writes as globals.  Not `co_names`, which also holds attribute names: with
    `opt.step()` in the function, a script's loop variable `step` was guarded and recaptured every call."""
    names = _GLOBAL_NAMES.get(code)
    if names is None:
        found = dict.fromkeys(i.argval for i in dis.get_instructions(code) if i.opname in _GLOBAL_OPS)
        if "globals" in found:  # globals()['S']: the code's string constants may name globals too
            found.update(dict.fromkeys(c for c in code.co_consts if type(c) is str and c.isidentifier()))
        names = _GLOBAL_NAMES[code] = tuple(found)
    return names


_ATTRIBUTE_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# what reads an attribute by a computed name: with one of these in user code, any attribute may have been read
_DYNAMIC_ACCESS = frozenset(("getattr", "hasattr", "vars", "__dict__", "attrgetter", "__getattribute__"))


def _attribute_names(code, library: bool) -> frozenset | None:
    """The attribute names `code` can read: its names (attribute and global names alike, a harmless superset)
    and its identifier string constants (`getattr(self, "scale")`); None if user code reads attributes by a
    computed name.  ember's own code is taken at its names: its computed reads are of parameters and modules,
    which have their own guards."""
    names = _ATTRIBUTE_NAMES.get(code, _MISSING)
    if names is _MISSING:
        names = frozenset(code.co_names).union(c for c in code.co_consts if type(c) is str and c.isidentifier())
        if not library and not names.isdisjoint(_DYNAMIC_ACCESS):
            names = None
        _ATTRIBUTE_NAMES[code] = names
    return names


class _Cell:
    """A closure cell seen as a one-name namespace, so that the watcher reads cells and globals alike."""

    __slots__ = ("key",)

    def __init__(self, cell) -> None:
        self.key = cell

    def get(self, name, default=None):
        try:
            return self.key.cell_contents
        except ValueError:  # emptied (del of a nonlocal)
            return default

    def __getitem__(self, name):  # (a graph's slot read: frontend._slot_globals)
        return self.key.cell_contents


def tensor_key(value):
    """A tensor a graph reads from its global or closure cell at each call (frontend._slot_globals): guarded by
    what a graph depends on, not identity, so that rebinding it to another tensor of the same kind replays."""
    if not isinstance(value, Tensor):
        return _key(value)
    return ("tensor", value._data.shape, value._dtype, value._device, value._requires_grad)


def read_globals(watched: dict, written: set, hyper: bool = True, slotted=frozenset()) -> tuple:
    """The current guard key of each watched global.  One the function itself writes (a log list it appends
    to, a counter dict) is keyed by identity: its contents change every call, and that call runs eagerly.  One
    holding a tensor the graphs read from it at each call (`slotted`) is keyed by `tensor_key`."""
    return tuple(("id", id(namespace.get(name, _MISSING))) if ident in written
                 else tensor_key(namespace.get(name, _MISSING)) if ident in slotted
                 else _key(namespace.get(name, _MISSING), hyper) for ident, (namespace, name, _) in watched.items())


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


def read_cells(cells: list, hyper: bool = True, slotted=frozenset(), written=frozenset()) -> tuple:
    """The guard key of each closure cell: as read_globals keys globals (`slotted` and `written`: cell ids)."""
    out = []
    for cell in cells:
        try:
            value = cell.cell_contents
        except ValueError:
            value = _MISSING
        out.append(("id", id(value)) if id(cell) in written else tensor_key(value) if id(cell) in slotted
                   else _key(value, hyper))
    return tuple(out)


_HOOKS_SEEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # root module -> (changes, signature)


def module_hooks(root, modules: list) -> tuple:
    """The hooks registered on `root`'s modules (handle ids) and the global module hooks: a forward hook ran
    (and was recorded) at capture, so one added or removed afterwards needs a new capture.  Walking four hook
    dicts per module on every call cost more than the other guards, so the signature is recomputed only when
    some HookDict changed since it was last taken (`hook_changes`); a hook on an unrelated module changes the
    counter, not the signature."""
    from ..nn.modules import module as module_file

    changes = module_file.hook_changes[0]
    seen = _HOOKS_SEEN.get(root)
    if seen is None or seen[0] != changes:
        names = module_file.HOOK_DICT_NAMES
        dicts = [m.__dict__.get(name, {}) for m in modules for name in names]
        dicts += [module_file._global_forward_hooks, module_file._global_forward_pre_hooks,
                  module_file._global_backward_hooks, module_file._global_backward_pre_hooks]
        signature = tuple(tuple(hooks) for hooks in dicts)
        # a hook with state -- a callable object (`self.s`), a bound method's object -- is read like a settings
        # object on every call (its values were baked into the graph at capture)
        stateful = [holder for hooks in dicts for holder in _stateful(hooks)]
        seen = _HOOKS_SEEN[root] = (changes, signature, tuple(stateful))
    if not seen[2]:
        return seen[1]
    return seen[1], tuple(_key(holder) for holder in seen[2])


def module_guard(module, names=None) -> tuple:
    """What a graph depends on in a module it reached through an argument, a global, a closure or a container
    (the compiled module's guards are separate): its identity, training flags, parameter and buffer
    identities, attributes (those in `names`, if given: see module_attributes) and hooks."""
    modules = list(module.modules())
    return ("module", id(module), tuple(m.training for m in modules), module_tensors(modules),
            module_attributes(modules, names), module_hooks(module, modules))


def module_tensors(modules: list, lifted: bool = False) -> tuple:
    """The identities of the modules' parameters and buffers (`net.weight = Parameter(...)` recaptures).
    `lifted`: the compiled module's own, which a graph reads from their entries at each call (frontend's
    _module_slots): which entries hold one tensor (tied weights, numbered by first sight), and each one's
    shape and dtype, so that modules swapped between two shapes keep a graph each."""
    # (requires_grad too: a layer frozen every other step keeps a graph per state, instead of the external
    # check dropping one to capture the other each call until the recompile limit)
    tensors = [t for m in modules for t in (*m._parameters.values(), *m._buffers.values())]
    if lifted:
        first: dict = {}
        return tuple((first.setdefault(id(t), len(first)), t._requires_grad, t._data.shape, t._dtype)
                     if t is not None else None for t in tensors)
    return tuple((id(t), t._requires_grad) if t is not None else None for t in tensors)


def module_attributes(modules: list, names=None, skip=frozenset()) -> tuple:
    """Each module's scalar attributes (private ones too, `self._scale`; besides `training`, guarded on its own)
    by value, its plain tensor attributes (not parameters or buffers, which have their own guards) by
    identity, its settings objects (`self.config`, a list of helper modules) by content, and the public scalar
    class attributes of user-defined module classes (`class Net(nn.Module): scale = 2.0`).  With `names` (a
    set), only attributes of those names: the ones the captures' code could read (`Watcher.names`); never
    those in `skip`, attributes the function itself writes (its calls run eagerly, and a counter it bumps
    would otherwise miss every call)."""
    out = []
    if names is not None and skip:
        names = names - skip
    for m in modules:
        # one comprehension, cheapest tests first: this runs on every call, for every submodule
        items = [(k, (type(v), v) if type(v) in SCALARS else _key(v)) for k, v in m.__dict__.items()
                 if (k not in skip if names is None else k in names) and k not in _MODULE_OWN
                 and (type(v) in SCALARS or _guarded(v))]
        for klass in _user_bases(type(m)):
            items += [(f"{klass.__name__}.{k}", (type(v), v)) for k, v in klass.__dict__.items()
                      if (k not in skip if names is None else k in names) and k[0] != "_" and _scalar(v)]
        out.append(tuple(items))
    return tuple(out)


# Module's own bookkeeping (parameters, hooks...; `training` is guarded on its own)
_MODULE_OWN = frozenset(("training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
                         "_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook", "_forward_hooks",
                         "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
                         "_forward_pre_hooks_with_kwargs", "_state_dict_hooks", "_state_dict_pre_hooks",
                         "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks"))
_USER_BASES: dict = {}  # (a plain dict: a WeakKeyDictionary lookup per module per call cost ~0.7 us)


def _user_bases(kind: type) -> tuple:
    """The user-defined classes in a module class's MRO (cached: ember's own classes have none)."""
    found = _USER_BASES.get(kind)
    if found is None:
        found = _USER_BASES[kind] = tuple(k for k in kind.__mro__ if k is not _Module() and _user_class(k))
    return found


class SideEffects:
    """The Python state a call could write without ember seeing it: containers inside the arguments, and the
    attributes (and parameter/buffer/submodule slots) of the modules involved.  `changed()` names what
    differs after the call."""

    def __init__(self, args, kwargs, modules: list, lifted=None) -> None:
        self.containers: list = []
        self._collect(args, "args", 0)
        self._collect(kwargs, "kwargs", 0)
        self.modules = modules
        # the compiled module's modules: their buffers are read from their entries at each call (frontend's
        # _module_slots), so a buffer rebound to a tensor the graph computes can be set again by each replay
        self.lifted = {id(m) for m in lifted.modules()} if lifted is not None else set()
        self.before = [_state(c) for _, c in self.containers], [_module_state(m) for m in modules]
        self.written_names: set = set()  # the modules' (and bound object's) attributes the call changed

    def _collect(self, value, path, depth) -> None:
        if depth > 4:
            return
        if type(value) in (list, dict, set, np.ndarray) or _user_object(value):  # (an object's `st.done = True`)
            self.containers.append((path, value))
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                self._collect(item, f"{path}[{index}]", depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                self._collect(item, f"{path}[{key!r}]", depth + 1)
        elif _user_object(value):
            for key, item in list(value.__dict__.items()):
                self._collect(item, f"{path}.{key}", depth + 1)

    def changed(self, replayable=None) -> list:
        """What the call wrote that a replay would not.  A module attribute for which `replayable(module, name,
        value)` holds (the graph computes the value: a pre-forward hook's `module.weight = w_orig * mask`, a
        stored `self.last_attention = w`) is collected in `replayed` as (module, name, tensor) instead, for the
        replay to set again."""
        self.replayed: list = []
        containers, modules = self.before
        out = [path for (path, c), state in zip(self.containers, containers) if _state(c) != state]
        for module, state in zip(self.modules, modules):
            now = _module_state(module)
            if now != state:
                names = sorted({k for k, _ in set(now) ^ set(state)})
                self.written_names.update(k for k in names if "[" not in k)
                unreplayed = []
                for name in names:
                    value = module.__dict__.get(name)
                    buffer = _buffer_entry(name) if id(module) in self.lifted else None
                    if buffer is not None:  # `self.mean = 0.9 * self.mean + ...` on a registered buffer
                        name, value = buffer, module._buffers.get(buffer)
                        self.written_names.add(name)
                    elif name == "_buffers" and id(module) in self.lifted:
                        continue  # (told apart by its entries, above)
                    if replayable is not None and "[" not in name and replayable(module, name, value):
                        self.replayed.append((module, name, value))
                    else:
                        unreplayed.append(name)
                if unreplayed:
                    out.append(f"{type(module).__name__} attribute {', '.join(unreplayed)}")
        return out


def _buffer_entry(name: str):
    """The buffer name of a `_module_state` entry `_buffers['mean']`, else None."""
    if not name.startswith("_buffers["):
        return None
    key = ast.literal_eval(name[len("_buffers["):-1])
    return key if type(key) is str else None


def _module_state(module) -> tuple:
    # attributes by identity; a list, dict or set attribute by its items too (`self.history.append(loss)`), a
    # user object's by its attributes (`self.stats.calls += 1`: the capture's key, taken after it, hid the write),
    # and scalars and tuples of them by value (`self.in_shape = x.shape` rebinds an equal Size: no write to replay)
    entries = [(k, _state(v) or id(v)) for k, v in module.__dict__.items()]
    for slot in ("_parameters", "_buffers", "_modules"):
        entries += [(f"{slot}[{k!r}]", id(v)) for k, v in module.__dict__.get(slot, {}).items()]
    return tuple(entries)
