"""ember.compile: guards, the per-guard-set cache of compiled graphs, recompiles, fallback, explain.

One call of a compiled function:

    guard key of the arguments (shapes, dtypes, devices, requires_grad, aliasing, non-tensor values,
    grad mode, default dtype, the module's training flags and parameter identities)
      -> cached entry: replay its graph (or run eagerly if that guard set broke the graph)
      -> miss: capture by tracing this call (its result is the eager result), compile, cache.

Misses after the first capture are recompiles, counted against config.recompile_limit; past it the
function runs eagerly for new guard sets and warns once, naming the guard that kept failing.  Shape-only
misses do not count when dynamic is not False (every size gets its own graph; the kernels take sizes as
run-time arguments, so a new size costs a trace, never a C compile) up to config.cache_size_limit.
"""

from __future__ import annotations

import ast
import functools
import warnings
import weakref

import numpy as np

from .. import _dispatch, _torch_function
from .. import _dtype as dt
from .._autograd.grad_mode import state
from .._tensor import Tensor
from . import codegen, pyguards, scalars, symbolic
from .config import config
from .graph import Node, map_structure
from .runtime import CompiledGraph
from .tracer import BreakReason, Tracer, Unsupported, flatten_tensors

_all_compiled: weakref.WeakSet = weakref.WeakSet()


_MISS = object()


# attribute names through which user code reads an optimizer's hyperparameters (pyguards._training_state)
_HYPER_NAMES = frozenset({"param_groups", "defaults", "state_dict", "get_last_lr", "_last_lr", "get_lr",
                          "last_epoch", "base_lrs"})


def _rng_state(generators) -> list:
    """The states of the generators a chain's random ops draw from (each chain tried starts from them)."""
    return [(generator, generator._bits.state) for generator in generators]


def _set_rng_state(saved) -> None:
    for generator, bits in saved:
        generator._bits.state = bits


def _modules_in(module, args, kwargs) -> list:
    """The compiled module's submodules and those of Module arguments: the objects whose attributes a
    capture watches for writes."""
    from ..nn.modules.module import Module

    found = list(module.modules()) if module is not None else []
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, Module):
            found += list(value.modules())
    return found


def _owner_of(fn):
    """The object `fn` is a step of: a bound method's object, or the optimizer behind an lr scheduler's step
    wrapper (which replaces `optimizer.step` with a plain function holding the optimizer by weakref), so that
    `ember.compile(optimizer.step)` gets the optimizer's inputs and guards either way."""
    owner = getattr(fn, "__self__", None)
    if owner is None and callable(getattr(fn, "_compile_owner", None)):
        owner = fn._compile_owner()
    return owner


class _Entry:
    def __init__(self, compiled=None, breaks=(), externals=(), structure=None, placeholder_count=0) -> None:
        self.compiled = compiled
        self.eager = compiled is None
        self.breaks = list(breaks)
        self.retry = False  # a capture that wrote Python state: try once more before running eagerly for good
        self.externals = externals  # (tensor, shape, dtype, requires_grad, owner, slot, layout): see _externals
        self.structure = structure

    def run_chains(self, tensors):
        """Try the chains (each from its start: their segments have no in-place writes, and the generator is
        rewound); _MISS when no chain's reads match this call's data (the caller recaptures)."""
        observed: list = []
        generators = {id(g): g for chain in self.chains for g in chain.generators}
        saved = _rng_state(generators.values()) if generators else None
        for position, chain in enumerate(self.chains):
            if position and saved is not None:
                _set_rng_state(saved)
            result = chain.run(tensors, observed)
            if result is not None:
                if position:
                    self.chains.insert(0, self.chains.pop(position))
                return result
        if saved is not None:
            _set_rng_state(saved)
        return _MISS

    grad_reads = ()  # (tensor, whether its .grad was None at capture) for each .grad the function read
    actions = ()  # tracer.Action: training-loop calls replayed before and after the graph
    writes = ()  # (module, attribute name) set to the graph's extra outputs after the call's own (see _trace)

    def externals_ok(self) -> bool:
        for tensor, shape, dtype, requires_grad, owner, slot, layout in self.externals:
            if owner is not None:
                tensor = owner._grad
                if tensor is None:
                    return False
            elif slot is not None:  # a module's parameter or buffer: whichever tensor its entry holds now
                tensor = slot[0].get(slot[1])
                if tensor is None:
                    return False
            if (tensor._data.shape != shape or tensor._dtype is not dtype or tensor._requires_grad != requires_grad
                    or _layout(tensor._data) != layout):  # (`w.data = w.data.t().contiguous().t()` since)
                return False
        for owner, was_none in self.grad_reads:
            if (owner._grad is None) != was_none:
                return False
        return True

    chains = None  # a capture split at reads: [_Chain], most recently used first
    scalar_paths = None  # the float arguments the graph reads at each call (scalars.py)

    def __call__(self, args, kwargs):
        tensors = _unique_tensors(args, kwargs)
        if self.chains is not None:
            return self.run_chains(tensors)
        if self.scalar_paths is not None:
            self.compiled.graph.scalar_cell[0] = scalars.read(args, kwargs, self.scalar_paths)
        actions = self.actions
        for action in actions:  # the prologue (optimizer.zero_grad() before the ops: Tracer.take_action)
            if not action.after:
                action.run(())
        outputs = self.compiled.run(*tensors)
        it = iter(outputs)
        result = map_structure(self.structure, lambda value: next(it), build=True)
        operands = ()
        if actions:
            result, operands = result
        if self.writes:  # module attributes the function set to tensors it computed (pyguards.SideEffects)
            result, values = result
            for (module, name), value in zip(self.writes, values):
                setattr(module, name, value)
        for action in actions:  # the epilogue: loss.backward(), optimizer.step(), zero_grad() after the ops
            if action.after:
                action.run(operands)
        return result


class _Segment:
    """One compiled piece of a chain: where its placeholders come from, and the value read after it."""

    __slots__ = ("compiled", "inputs", "expected", "reason")

    def __init__(self, compiled, inputs, expected, reason) -> None:
        self.compiled = compiled
        self.inputs = inputs  # per placeholder: ("arg", i) a call tensor, or ("seg", j, k) output k of segment j
        self.expected = expected  # the data read into Python after this segment (output 0) at capture, or None
        self.reason = reason


class _Chain:
    """A capture split at reads (item, bool, tolist, numpy): compiled segments, each read a guard on its data.

    Replay never re-runs the Python: it runs segment 1, compares the data the Python read at capture with the
    data now, and when equal (so the Python took the same path) runs segment 2, and so on."""

    def __init__(self, segments, structure, generators) -> None:
        self.segments = segments
        self.structure = structure
        self.generators = generators  # those its random ops draw from (a user Generator too): rewound on a miss

    def run(self, tensors, observed: list):
        """The result, or None at the first read whose data differs (observed gets the data read so far)."""
        outputs = []
        for number, segment in enumerate(self.segments):
            if number < len(observed) and not _same_data(observed[number], segment.expected):
                return None  # an earlier attempt read other values here: another control path
            ins = [tensors[source[1]] if source[0] == "arg" else outputs[source[1]][source[2]]
                   for source in segment.inputs]
            outs = segment.compiled.run(*ins)
            outputs.append(outs)
            if segment.expected is not None:
                data = outs[0]._data
                if number >= len(observed):
                    observed.append(np.array(data, copy=True))
                if not _same_data(data, segment.expected):
                    return None
        it = iter(outputs[-1])
        return map_structure(self.structure, lambda value: next(it), build=True)

    @property
    def graphs(self) -> list:
        return [segment.compiled.graph for segment in self.segments]


def _same_data(a, b) -> bool:
    if b is None:
        return True
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def _unique_tensors(args, kwargs) -> list:
    seen = set()
    out = []
    for _, tensor in flatten_tensors(args, kwargs):
        if id(tensor) not in seen:
            seen.add(id(tensor))
            out.append(tensor)
    return out


_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


class CompiledFunction:
    """What ember.compile returns for a function (and what Module.compile installs)."""

    def __init__(self, fn, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
                 disable=False) -> None:
        if backend not in ("inductor", "eager", "aot_eager") and not callable(backend):
            raise ValueError(f"ember.compile: unknown backend {backend!r} (inductor, eager, aot_eager)")
        # torch.compile's checks (an unknown mode was accepted silently): every mode is one graph path here
        if mode is not None and mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
        if mode is not None and options is not None:
            raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same "
                               "time.")
        self.fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        self.options = dict(options or {})
        if backend in ("eager", "aot_eager"):
            self.options["fusion"] = False
        self.disabled = disable
        self.module = _module_of(fn)
        self.cache: dict = {}
        self.matched: dict = {}  # guard key -> the size-generic entry it matched (see _call)
        self.labels: dict = {}
        self.recompiles = 0
        self.gave_up = False
        self.last_reason = None
        self.graph_breaks: list[BreakReason] = []
        self.generic: list = []  # (key pattern, entry): size-generic graphs (symbolic.py)
        self.dynamic_status = ""  # why the last shape change did or did not give a size-generic graph
        self.scalar_generic: list = []  # (key positions, key, entry): graphs for every value of float arguments
        self.scalar_status = ""  # why the last float-argument change did or did not give such a graph
        self.captures = 0
        self.validations = 0  # first calls of new sizes traced to check they fit a size-generic graph
        # A bound method of an object that names the tensors it reads (Optimizer.step: params, grads, state) gets
        # them as a leading graph input, so replay reads the current grads, not the ones seen at capture; and its
        # _compile_guard (hyperparameters, which params have state) joins the guards.
        owner = _owner_of(fn)
        self._owner_name = type(owner).__name__
        self._owner_inputs = getattr(owner, "_compile_inputs", None)
        self._owner = owner if self._owner_inputs is not None else None
        self._owner_guard = getattr(owner, "_compile_guard", None)
        # Python values a capture bakes in (pyguards): the closure's scalar and tensor cells, and the scalar and
        # tensor globals user code read during captures, found as they happen (the key's last element)
        self._cells = pyguards.closure_cells(fn)
        # a method of a plain object (a trainer's `loss`, an optimizer subclass's `step`): `self`'s attributes
        # are read like a settings object's on every call (a module's have their own guards)
        self._bound = owner if owner is not None and self.module is None and pyguards._guarded(owner) else None
        function = getattr(fn, "__func__", fn)  # the closure lookup's cache, seeded with the function itself
        self._functions: dict = {function.__code__: [function]} if hasattr(function, "__code__") else {}
        self.watched: dict = {}
        # watched globals / closure cells whose tensor the graphs read from them at each call (_slot_globals), and
        # the ids of those cells: guarded by pyguards.tensor_key, not identity
        self.slotted: set = set()
        self.slotted_cells: set = set()
        self.written: set = set()  # watched globals the function writes: keyed by identity (read_globals)
        # the attribute names the captures' code could read (pyguards.Watcher.names); None: guard them all
        self.attr_names: set | None = set()
        # the attribute names the user's own code could read; an optimizer's hyperparameters are guarded only
        # if it names `param_groups` (pyguards._training_state): else only replayed actions read them
        self.user_attr_names: set | None = None  # (None until a capture ran: guarded until known)
        self._user_names_known = False
        self._pinned: dict = {}  # id -> object guarded by identity in a cache key (see _walk)
        self.written_attrs: set = set()  # module / bound-object attributes the function writes: not guarded
        functools.update_wrapper(self, fn, updated=())
        if "__name__" not in self.__dict__:  # a functools.partial or a callable object: named for the logs
            inner = getattr(fn, "func", None)
            self.__name__ = getattr(inner, "__name__", None) or type(fn).__name__
        _all_compiled.add(self)

    # ------------------------------------------------------------ guards
    def _walk(self, args, kwargs, labelled: bool):
        values, labels = [], []
        add_label = labels.append if labelled else (lambda _: None)
        values.append(state.enabled)
        add_label("grad mode")
        values.append(dt.get_default_dtype())
        add_label("default dtype")
        values.append(None if _dispatch.autocast is None else _autocast_state())
        add_label("autocast state")
        values.append(_sdpa_flags())
        add_label("scaled_dot_product_attention backends (sdpa_kernel)")
        if self._owner_guard is not None:
            values.append(self._owner_guard())
            add_label(f"{self._owner_name} hyperparameters and state layout")
        module = self.module
        if module is not None:
            modules = list(module.modules())  # one walk of the tree for the three guards
            values.append(tuple(m.training for m in modules))
            add_label("module training flags")
            values.append(pyguards.module_tensors(modules, lifted=True))
            add_label("module parameter/buffer sharing and requires_grad")
            values.append(pyguards.module_attributes(modules, self.attr_names, self.written_attrs))
            add_label("module attributes")
            values.append(pyguards.module_hooks(module, modules))
            add_label("module hooks")
        hyper = self._reads_hyperparameters()
        if self._cells:
            # (a cell the function writes through, as a module whose forward sets an attribute, keyed by identity
            # like a written global: its contents change every call, and that call runs eagerly)
            values.append(pyguards.read_cells(self._cells, hyper, self.slotted_cells,
                                              {ident[0] for ident in self.written}))
            add_label("closure variables")
        if self._bound is not None:
            values.append(pyguards.bound_key(self._bound, self.written_attrs))
            add_label(f"{type(self._bound).__name__} attributes")
        aliases: dict = {}

        def leaf(value, path):
            if isinstance(value, Tensor):
                values.append(value._data.shape)
                add_label(f"{path}.shape")
                values.append((value._dtype, value._device, value._requires_grad,
                               aliases.setdefault(id(value), len(aliases)), _layout(value._data)))
                add_label(f"{path} dtype/device/requires_grad/aliasing/layout")
            elif isinstance(value, (tuple, list)):
                values.append((type(value), len(value)))
                add_label(f"{path} length")
                for index, item in enumerate(value):
                    leaf(item, f"{path}[{index}]")
            elif isinstance(value, dict):
                values.append(tuple(value))
                add_label(f"{path} keys")
                for key, item in value.items():
                    leaf(item, f"{path}[{key!r}]")
            elif value is None or type(value) in (int, float, bool, str):
                values.append((type(value), value))
                add_label(f"{path} == {value!r}")
            else:
                from ..nn.modules.module import Module

                if isinstance(value, Module):
                    values.append(pyguards.module_guard(value, self.attr_names))
                else:  # settings objects and NumPy arrays by contents (what a capture read), others by identity
                    guard = pyguards._key(value)
                    if labelled and guard[:1] == ("id",):
                        # the graph will be kept under this id: hold the object, or a fresh one made at the same
                        # address after it is freed would match it
                        self._pinned[id(value)] = value
                    values.append(guard)
                add_label(f"{path} identity")

        for index, arg in enumerate(args):
            leaf(arg, f"args[{index}]")
        for key, arg in kwargs.items():
            leaf(arg, f"kwargs[{key!r}]")
        # the function's default argument values, as torch guards them (`f.__kwdefaults__["k"] = 4` replayed k=2)
        target = module.forward if module is not None else self.fn
        target = getattr(target, "__func__", target)
        for index, arg in enumerate(getattr(target, "__defaults__", None) or ()):
            leaf(arg, f"__defaults__[{index}]")
        for key, arg in (getattr(target, "__kwdefaults__", None) or {}).items():
            leaf(arg, f"__kwdefaults__[{key!r}]")
        values.append(self._holder_aliases(args, kwargs))
        add_label("global and closure tensors that are arguments")
        values.append(pyguards.read_globals(self.watched, self.written, hyper, self.slotted))  # last: a capture
        # may extend it
        add_label(self._globals_label())
        return tuple(values), labels

    def _holder_aliases(self, args, kwargs) -> tuple:
        """For each tensor a watched global or closure cell holds, the position among the arguments' tensors of
        the same tensor (None: none): a capture resolves such a global to the argument, so a later call passing
        another tensor must not replay it (`def f(x): x.mul_(2); return G + 1` first called as f(G))."""
        held = [value for value in (namespace.get(name) for namespace, name, _ in self.watched.values())
                if isinstance(value, Tensor)]
        for cell in self._cells:
            try:
                if isinstance(cell.cell_contents, Tensor):
                    held.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        if not held:
            return ()
        positions = {id(tensor): index for index, (_, tensor) in enumerate(flatten_tensors(args, kwargs))}
        return tuple(positions.get(id(tensor)) for tensor in held)

    def _reads_hyperparameters(self) -> bool:
        names = self.user_attr_names
        return names is None or bool(names & _HYPER_NAMES)

    def _globals_label(self) -> str:
        return "globals " + ", ".join(name for _, name, _ in self.watched.values())

    def _failed_guard(self, key, labels):
        """The first guard of the newest entry that this call fails, as text; and whether only shapes differ."""
        newest = next(reversed(self.cache))
        old_labels = self.labels[newest]
        if len(newest) != len(key):
            return "argument structure changed", False
        differing = [(label, old, new) for label, old, new in zip(labels, newest, key) if old != new]
        shape_only = all(label.endswith(".shape") and len(old) == len(new) for label, old, new in differing)
        label, old, new = differing[0] if differing else ("?", None, None)
        if label.endswith(".shape"):
            text = f"{label} changed from {list(old)} to {list(new)}"
        else:
            text = f"{label} (was {_short(old)}, now {_short(new)})"
        del old_labels
        return text, shape_only

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        if self.disabled or config.disable or _dispatch.tracer is not None:
            return self.fn(*args, **kwargs)  # inside another capture: inline (the outer tracer records it)
        if _torch_function.dispatching(args, kwargs):
            # a Tensor subclass with __torch_function__: its Python handler runs on every op, and a replay (plain
            # op calls) would skip it and return plain tensors, so the call runs eagerly
            return self.fn(*args, **kwargs)
        if state.saved_hooks and state.enabled:
            # under saved-tensor hooks (non-reentrant checkpoint, save_on_cpu) every saved tensor must go through
            # them, and a checkpoint's recompute must save what its forward saved: a capture's traced run and a
            # replay save different tensors (CheckpointError), so the call runs eagerly
            return self.fn(*args, **kwargs)
        if self._owner_inputs is not None:
            args = (self._owner_inputs(),) + args
        return self._call(args, kwargs)

    def _eager(self, args, kwargs):
        """Run the function itself (the owner's inputs, when passed first, are not its arguments)."""
        if self._owner_inputs is not None:
            args = args[1:]
        return self.fn(*args, **kwargs)

    def _call(self, args, kwargs):
        key, _ = self._walk(args, kwargs, False)
        entry = self.cache.get(key)
        if entry is None and self.matched:
            generic_entry = self.matched.get(key)
            if generic_entry is not None and generic_entry.externals_ok():
                return generic_entry(args, kwargs)
        reason = None
        if entry is not None:
            if entry.eager and entry.retry:
                # the first call's writes may have been one-time setup (a lazy module's parameters, an
                # attribute cached on first use): capture again, and run eagerly for good only if it writes again
                del self.cache[key]
                return self._capture(*self._walk(args, kwargs, True), args, kwargs, retried=True)
            if entry.eager:
                return self._eager(args, kwargs)
            if entry.externals_ok():
                result = entry(args, kwargs)
                if result is not _MISS:
                    return result
                return self._recapture_chain(key, entry, args, kwargs)
            del self.cache[key]
            reason, shape_only = ("a parameter or closure tensor changed shape, dtype, requires_grad or layout, or a "
                                  ".grad read became None or appeared"), False
        if self.scalar_generic and not self.gave_up:
            for positions, pattern, scalar_entry in self.scalar_generic:
                if _fits(pattern, positions, key) and scalar_entry.externals_ok():
                    return self._run_scalar_generic(scalar_entry, args, kwargs)
        if self.generic and self.dynamic is not False and not self.gave_up:
            for pattern, generic_entry in reversed(self.generic):  # (the newest: a refit, see _validate)
                env = symbolic.match(pattern, key)
                if env is not None and generic_entry.externals_ok():
                    return self._validate(generic_entry, env, args, kwargs)
        if self.gave_up:
            return self._eager(args, kwargs)
        key, labels = self._walk(args, kwargs, True)
        if reason is None and self.cache:
            reason, shape_only = self._failed_guard(key, labels)
        previous = scalar = None
        if reason is not None and shape_only and self.dynamic is not False:
            newest = next(reversed(self.cache))
            previous = (newest, self.cache[newest])
        elif reason is not None and self.dynamic is not False and not self.scalar_status:
            scalar = self._scalar_miss(key, labels)
        if reason is not None:
            counts = not (shape_only and self.dynamic is not False)
            self.recompiles += counts
            self.last_reason = reason
            codegen.log("recompiles", f"recompiling {self.__name__}: {reason}", self.options)
            limit = config.recompile_limit if counts else config.cache_size_limit
            if self.recompiles > config.recompile_limit or len(self.cache) >= config.cache_size_limit or (
                    not counts and len(self.cache) >= limit):
                self.gave_up = True
                which = (f"the recompile limit (config.recompile_limit={config.recompile_limit})"
                         if self.recompiles > config.recompile_limit else
                         f"the cache size limit (config.cache_size_limit={config.cache_size_limit}: one graph per "
                         "size, none size-generic)")
                warnings.warn(
                    f"ember.compile: {self.__name__} reached {which}; the guard that kept failing: {reason}. "
                    "It runs eagerly for new inputs from now on (ember.compiler.reset() to start over).",
                    RuntimeWarning, stacklevel=2)
                return self._eager(args, kwargs)
        if scalar is not None:
            return self._capture_scalar_generic(key, labels, args, kwargs, scalar)
        return self._capture(key, labels, args, kwargs, previous)

    def _scalar_miss(self, key, labels):
        """(the newest key, its entry, key positions, argument paths) when this call differs from the newest
        capture only in the values of float arguments (args[i] or kwargs[name]), else None."""
        if not self.cache:
            return None
        newest = next(reversed(self.cache))
        entry = self.cache[newest]
        if len(newest) != len(key) or getattr(entry, "signature", None) is None or entry.scalar_paths is not None:
            return None
        positions, paths = [], []
        for position, (label, old, new) in enumerate(zip(labels, newest, key)):
            if old == new:
                continue
            path = _argument_path(label)
            if path is None or type(old) is not tuple or old[0] is not float or new[0] is not float:
                return None
            positions.append(position)
            paths.append(path)
        return (newest, entry, tuple(positions), tuple(paths)) if positions else None

    def _capture_scalar_generic(self, key, labels, args, kwargs, scalar):
        """Capture with the float arguments as stand-ins (scalars.py); if Python only did arithmetic on them
        and the graph is the previous capture's with them bound, keep it for every value of them."""
        old_key, old_entry, positions, paths = scalar
        entry_mode = state.enabled
        usage = scalars.Usage()
        tracer, result, ok = self._trace(args, kwargs, scalar_usage=(usage, paths))
        result = self._store(tracer, result, ok, key, labels, entry_mode, args=args, kwargs=kwargs)
        entry = self.cache.get(key)
        try:
            if usage.reason is not None:
                raise symbolic.NotGeneric(usage.reason)
            if entry is None or entry.eager or entry.chains is not None:
                raise symbolic.NotGeneric("the capture did not give one graph")
            if not any(getattr(node, "scalar_bound", False) for node in entry.compiled.graph.nodes):
                raise symbolic.NotGeneric("no op read them")
            if getattr(entry.compiled.graph, "generic", False):
                raise symbolic.NotGeneric("the graph is size-generic too")
            old_env = tuple(old_key[position][1] for position in positions)
            new_env = tuple(key[position][1] for position in positions)
            if tuple(map(scalars.value_class, old_env)) != tuple(map(scalars.value_class, new_env)):
                raise symbolic.NotGeneric(f"{old_env} and {new_env} differ in sign, zero, one, integrality or "
                                          "finiteness")
            scalars.generalize(old_entry.signature, entry.signature, old_env)
        except symbolic.NotGeneric as why:
            self.scalar_status = f"specialised on float arguments ({why}): a graph per value"
            codegen.log("recompiles", f"{self.__name__}: {self.scalar_status}", self.options)
            return scalars.plain(result)  # (its graph binds its markers to this call's values: kept for them)
        entry.scalar_paths = paths
        self.scalar_generic.append((positions, key, entry))
        self.scalar_status = f"one graph for every value of {', '.join(_path_text(p) for p in paths)}"
        codegen.log("recompiles", f"{self.__name__}: {self.scalar_status}", self.options)
        return scalars.plain(result)

    def _run_scalar_generic(self, entry, args, kwargs):
        try:
            return entry(args, kwargs)
        except scalars.ShapeChanged as why:
            self.scalar_generic = [item for item in self.scalar_generic if item[2] is not entry]
            self.cache = {k: e for k, e in self.cache.items() if e is not entry}
            self.scalar_status = f"specialised on float arguments ({why}): a graph per value"
            codegen.log("recompiles", f"{self.__name__}: {self.scalar_status}", self.options)
            return self._call(args, kwargs)

    def _recapture_chain(self, key, entry, args, kwargs):
        """No chain of this guard set read the same values: capture the path this call takes."""
        reason = "a value read into Python (a graph break) differs from every capture's"
        self.last_reason = reason
        codegen.log("recompiles", f"recompiling {self.__name__}: {reason}", self.options)
        if len(entry.chains) >= config.max_chains:
            entry.eager = True  # reads that keep changing (a logged loss.item()): run eagerly from now on
            codegen.log("recompiles", f"{self.__name__}: {config.max_chains} chains for one guard set "
                        "(config.max_chains); this guard set runs eagerly", self.options)
            return self._eager(args, kwargs)
        self.recompiles += 1
        tracer, result, ok = self._trace(args, kwargs)
        chain = self._chain(tracer) if ok and len(tracer.graphs) > 1 else None
        if chain is None:
            entry.eager = True
            entry.breaks.extend(tracer.breaks)
        else:
            entry.chains.insert(0, chain)
        return result

    def _validate(self, generic_entry, env, args, kwargs):
        """A size that fits a size-generic graph's key pattern, seen for the first time: trace it once (this
        call's result is the traced run's) and check that the capture is the generic graph bound to these
        sizes (symbolic.conforms).  Python decisions on sizes leave no trace in a graph -- `if T > 4`,
        `min(T, 10)`, a `T - 1` that equalled B in both captures -- so a pattern match alone could replay a
        graph this size would not have built.  If it fits, later calls of this size replay the generic graph
        with no trace and no compile, outside the cache and its limits (`matched`); if not, this capture
        becomes the size's own graph."""
        tracer, result, ok = self._trace(args, kwargs, validating=True)
        self.validations += 1
        if not ok or len(tracer.graphs) > 1:
            why = f"a graph break: {tracer.breaks[0] if tracer.breaks else '?'}"
        elif tracer.new_globals:
            why = "it read globals the generic graph's captures did not: " + ", ".join(
                name for _, name, _ in tracer.new_globals.values())
        else:
            tracer.graph.mutations = tracer.mutations  # (as _store does: the signature compares the writes)
            why = symbolic.conforms(generic_entry.signature, symbolic.signature(tracer.graph), env)
        if why is None:
            if len(self.matched) >= 1024:
                self.matched.clear()
            self.matched[self._walk(args, kwargs, False)[0]] = generic_entry
            return result
        codegen.log("recompiles", f"{self.__name__}: sizes {env} do not fit the size-generic graph ({why}): a "
                    "graph for these sizes", self.options)
        key, labels = self._walk(args, kwargs, True)
        if len(self.cache) >= config.cache_size_limit:
            self.gave_up = True
            return result
        # fitted again from this capture and the generic graph's own: two sizes often could not tell a strided
        # convolution's (T + 1) // 2 from T // 2, a third of another parity does (symbolic._floor_divisions)
        previous = next(((k, e) for k, e in self.cache.items() if e is generic_entry), None)
        return self._store(tracer, result, ok, key, labels, state.enabled, previous=previous, args=args,
                           kwargs=kwargs)

    def _trace(self, args, kwargs, validating=False, scalar_usage=None):
        if not validating:
            self.captures += 1
        tracer = Tracer(fullgraph=self.fullgraph)
        tracer.owner = self._owner
        tracer.slots = _module_slots(self.module, self.written_attrs, self._bound)
        tracer.split = self.options.get("split", True) and not callable(self.backend)
        modules = _modules_in(self.module, args, kwargs)
        # (a plain object's method: its attribute writes are Python state too; an optimizer's own bookkeeping
        # during its step is not, its state is guarded by _compile_guard)
        plain = self._bound is not None and pyguards._training_state(self._bound) is None
        effects = pyguards.SideEffects(args, kwargs, modules + ([self._bound] if plain else []), lifted=self.module)
        entry_mode = state.enabled
        called_args, called_kwargs = args, kwargs
        if scalar_usage is not None:  # float arguments as stand-ins (scalars.py)
            tracer.scalars = scalar_usage[0]
            called_args, called_kwargs = scalars.wrap(args, kwargs, scalar_usage[1], scalar_usage[0])
        with tracer, pyguards.Watcher(self._functions) as watcher:
            tracer.bind_inputs(args, kwargs)
            try:
                result = self._eager(called_args, called_kwargs)
            finally:
                if scalar_usage is not None:
                    scalar_usage[0].active = False
        if scalar_usage is not None:  # each graph binds its markers to the call's values (this one's, at first)
            for graph in tracer.graphs:
                graph.scalar_cell = [scalars.read(args, kwargs, scalar_usage[1])]
        if state.enabled != entry_mode:  # set_grad_enabled() inside: the replay leaves the mode as eager does
            tracer.graphs[-1].exit_grad_enabled = state.enabled
        tracer.new_globals = {k: v for k, v in watcher.found.items() if k not in self.watched}
        self.watched.update(tracer.new_globals)
        # (known after the first capture; a flip drops guards only for reads the code cannot make, and the
        # next call, keyed anew, captures once more rather than reusing a key taken after this call)
        if not self._user_names_known:
            self.user_attr_names = None if watcher.user_names is None else set(watcher.user_names)
            self._user_names_known = True
        elif self.user_attr_names is not None:
            self.user_attr_names = (None if watcher.user_names is None
                                    else self.user_attr_names | watcher.user_names)
        names = self.attr_names
        if names is not None and (watcher.names is None or not watcher.names <= names):
            self.attr_names = None if watcher.names is None else names | watcher.names
            tracer.new_attr_names = True
        # Module attributes set to tensors the graph computes are extra outputs, set again by each replay -- if
        # an earlier capture wrote that attribute too (written_attrs): a write made on the first call only (`if
        # self.cache is None: self.cache = x.mean(0)`) is setup, and its first capture runs eagerly
        # (entry.retry), so that the next capture takes the path that reads the attribute instead.
        seen = set(self.written_attrs)
        effects_written = effects.changed(
            lambda module, name, value: name in seen and isinstance(value, Tensor) and len(tracer.graphs) == 1
            and tracer.computes(value))
        tracer.attribute_writes = [(module, name) for module, name, _ in effects.replayed]
        if tracer.attribute_writes:
            result = (result, tuple(value for _, _, value in effects.replayed))
        if tracer.actions:  # the losses backward() ran on: extra outputs, for the replayed epilogue
            result = (result, tuple(tracer.action_operands))
        ok = tracer.finish(result)
        if scalar_usage is not None:  # (a returned stand-in is returned as the number it was at this call)
            for graph in tracer.graphs:
                if graph.output is not None:
                    graph.output.structure = scalars.plain(graph.output.structure)
        if tracer.actions:
            result = result[0]
        if tracer.attribute_writes:
            result = result[0]
        wrote = watcher.written()
        self.written.update(ident for ident, _ in wrote)
        written = effects_written + [f"global {name}" for _, name in wrote] + tracer.python_writes
        if not effects.written_names <= self.written_attrs:
            self.written_attrs |= effects.written_names
            tracer.new_attr_names = True  # (the key's attribute guards are taken again without them: _store)
        if any(action.kind == "sched" for action in tracer.actions) and self._reads_hyperparameters():
            # the code may have read an lr (into the graph) that the scheduler step it calls then changed:
            # a key taken after the call would pair the new lr with the old graph
            written.append("an lr scheduler's step() in a function that reads the optimizer's or scheduler's lr")
        if written:  # a replay would not make these writes: this guard set runs eagerly (pyguards)
            why = (f"Python state written during the call ({'; '.join(written)}): a replay would not write it, "
                   "so the call runs eagerly")
            if self.fullgraph:
                raise Unsupported(why)
            tracer.breaks.append(BreakReason(why, ""))
            tracer.wrote_python = True
            ok = False
        if ok and len(tracer.graphs) > 1 and tracer.mutations:
            tracer.breaks.append(BreakReason("in-place writes to inputs or buffers in a function with a graph "
                                             "break: not split, the call runs eagerly", ""))
            ok = False
        return tracer, result, ok

    def _chain(self, tracer) -> _Chain:
        """The segments of a split capture, compiled (see _Chain)."""
        graphs = tracer.graphs
        segment_of = {}
        for number, graph in enumerate(graphs):
            for node in graph.nodes:
                for value in node.results:
                    segment_of[id(value)] = number
        exports = [[read[0]] for read in tracer.reads] + [None]
        inputs = []
        arg_position = {id(value): index for index, (_, value) in enumerate(tracer.placeholders)}
        for graph in graphs:
            sources = []
            for node in graph.nodes:
                if node.kind != "placeholder":
                    continue
                origin = getattr(node, "source_value", None)
                if origin is None:
                    sources.append(("arg", arg_position[id(node.results[0])]))
                    continue
                owner = segment_of[id(origin)]
                exported = exports[owner]
                index = next((i for i, value in enumerate(exported) if value is origin), None)
                if index is None:
                    index = len(exported)
                    exported.append(origin)
                sources.append(("seg", owner, index))
            inputs.append(sources)
        segments = []
        for number, graph in enumerate(graphs):
            graph.entry_grad_enabled = tracer.segment_grad_mode[number]
            last = number == len(graphs) - 1
            if not last:
                graph.output = Node("output", "output", structure=tuple(exports[number]))
            read = None if last else tracer.reads[number]
            segments.append(_Segment(CompiledGraph(graph, self.options), inputs[number],
                                     None if read is None else read[1], None if read is None else read[2]))
        return _Chain(segments, graphs[-1].output.structure, tuple(tracer.generators.values()))

    def _capture(self, key, labels, args, kwargs, previous=None, retried=False):
        entry_mode = state.enabled
        tracer, result, ok = self._trace(args, kwargs)
        return self._store(tracer, result, ok, key, labels, entry_mode, previous, retried, args, kwargs)

    def _store(self, tracer, result, ok, key, labels, entry_mode, previous=None, retried=False, args=(), kwargs=None):
        """Compile a capture (or keep its graph breaks) under its guard key; returns the call's result."""
        slotted = ok and self._slot_globals(tracer.graphs)
        if tracer.new_globals or getattr(tracer, "wrote_python", False) or slotted:  # valid for the values this
            # capture read
            key = key[:-2] + (self._holder_aliases(args, kwargs or {}),
                              pyguards.read_globals(self.watched, self.written, self._reads_hyperparameters(),
                                                    self.slotted))
            labels = labels[:-1] + [self._globals_label()]
        if getattr(tracer, "new_attr_names", False) or slotted:  # the key's attribute and cell guards, anew
            key, labels = self._walk_again(key, labels, args, kwargs)
        if ok and len(tracer.graphs) > 1:
            self.graph_breaks.extend(tracer.breaks)
            codegen.log("graph_breaks", "\n".join(f"graph break in {self.__name__} (split: the segments are "
                                                   f"compiled): {b}" for b in tracer.breaks), self.options)
            entry = _Entry(externals=_externals(tracer.graphs))
            entry.grad_reads = tuple(tracer.grad_reads.values())
            entry.eager = False
            entry.chains = [self._chain(tracer)]
            self.cache[key] = entry
            self.labels[key] = labels
            return result
        if not ok:
            self.graph_breaks.extend(tracer.breaks)
            codegen.log("graph_breaks", "\n".join(f"graph break in {self.__name__}: {b}" for b in tracer.breaks),
                        self.options)
            entry = _Entry(breaks=tracer.breaks)
            entry.retry = getattr(tracer, "wrote_python", False) and not retried
        else:
            graph = tracer.graph
            graph.mutations = tracer.mutations
            graph.entry_grad_enabled = entry_mode
            signature = symbolic.signature(graph)
            compiled, pattern = None, None
            if previous is not None:
                compiled, pattern = self._compile_generic(graph, signature, previous, key, labels)
            if compiled is None:
                compiled = CompiledGraph(graph, self.options)
            entry = _Entry(compiled, externals=_externals([graph]), structure=graph.output.structure)
            entry.writes = tracer.attribute_writes
            entry.actions = tuple(tracer.actions)
            entry.grad_reads = tuple(tracer.grad_reads.values())
            entry.signature = signature
            entry.samples = [(key, signature)]  # the captures a size-generic graph was fitted to (symbolic.py)
            if pattern is not None:
                old_key, old_entry = previous
                earlier = getattr(old_entry, "samples", None) or [(old_key, old_entry.signature)]
                entry.samples = (earlier + entry.samples)[-_SAMPLES:]
                self.generic.append((pattern, entry))
        self.cache[key] = entry
        self.labels[key] = labels
        return result

    def _slot_globals(self, graphs) -> bool:
        """Externals of the graphs that are a watched global's or closure cell's tensor are read from it at each
        call (node.slot), as torch lifts such tensors to graph inputs: rebinding `mask = new_mask` between calls
        replays instead of recapturing (the guard keeps their shape, dtype, device and requires_grad:
        pyguards.tensor_key).  Whether any became one."""
        holders, names = {}, {}
        for ident, (namespace, name, _) in self.watched.items():
            value = namespace.get(name)
            if isinstance(value, Tensor):
                names[id(value)] = names.get(id(value), 0) + 1
                if ident not in self.written:
                    holders.setdefault(id(value), (ident, namespace, name))
        # a tensor held under two names (`B = A`) stays guarded by identity: one slot would serve both names
        holders = {key: holder for key, holder in holders.items() if names[key] == 1}
        if not holders:
            return False
        changed = False
        for graph in graphs:
            for node in graph.nodes:
                if (node.kind != "external" or getattr(node, "created", False) or any(
                        getattr(node, name, None) is not None for name in ("slot", "grad_of", "recipe"))):
                    continue
                found = holders.get(id(node.tensor))
                if found is None:
                    continue
                ident, namespace, name = found
                node.slot = (namespace, name)
                node.path = f"{node.path} (read from {name} at each call)"
                changed = changed or ident not in self.slotted
                self.slotted.add(ident)
                if type(namespace) is pyguards._Cell:
                    self.slotted_cells.add(id(namespace.key))
        return changed

    def _walk_again(self, key, labels, args, kwargs):
        """`key` with its module-attribute guards taken anew (after a capture found more attribute names the
        code reads); the other guards keep their values from before the call (which may have changed grad mode
        or a global)."""
        fresh, fresh_labels = self._walk(args, kwargs or {}, True)
        if len(fresh) != len(key):
            return key, labels
        merged = tuple(new if label.endswith(" attributes") or label == "closure variables"
                       or (type(old) is tuple and old[:1] == ("module",))
                       else old for label, old, new in zip(labels, key, fresh))
        return merged, labels

    def _compile_generic(self, graph, signature, previous, key, labels):
        """A size-generic CompiledGraph and its key pattern, or (None, None) with the reason logged."""
        old_key, old_entry = previous
        old_signature = getattr(old_entry, "signature", None)
        try:
            if old_signature is None:
                raise symbolic.NotGeneric("the previous size ran eagerly (a graph break)")
            sizes = symbolic.batch_sizes(old_key, key, labels)
            sizes.offsets = True
            pattern = symbolic.key_pattern(old_key, key, labels, sizes)
            # the earlier captures behind the previous graph (a refit after a failed validation: _validate)
            extra = [(symbolic.sample_env(sizes, k), sig) for k, sig in getattr(old_entry, "samples", ())
                     if k != old_key and k != key]
            extra = [(env, sig) for env, sig in extra if env is not None and len(env) == len(sizes.first)]
            sizes.extra = tuple(env for env, _ in extra)
            symbolic.generalize(old_signature, signature, sizes, others=tuple(sig for _, sig in extra))
            graph.generic = True
            compiled = CompiledGraph(graph, self.options)
        except symbolic.NotGeneric as why:
            graph.generic = False
            for node in graph.nodes:  # forget the annotations: this graph is compiled for its sizes only
                node.symbolic_params = node.symbolic_args = None
                for value in node.results:
                    value.symbolic_shape = None
            status = f"not size-generic ({why}): a graph per size"
            if not (isinstance(why, symbolic.Specialized) and self.generic):  # a size of 1 beside a generic graph
                self.dynamic_status = status
            codegen.log("recompiles", f"{self.__name__}: {status}", self.options)
            return None, None
        self.dynamic_status = f"size-generic graph, symbolic sizes {sizes.describe()}"
        codegen.log("recompiles", f"{self.__name__}: {self.dynamic_status}", self.options)
        return compiled, pattern

    # ------------------------------------------------------------ inspection
    def _compiled_graphs(self) -> list:
        found = []
        for entry in self.cache.values():
            if entry.compiled is not None:
                found.append(entry.compiled)
            for chain in entry.chains or ():
                found.extend(segment.compiled for segment in chain.segments)
        return found

    @property
    def graphs(self) -> list:
        """Every compiled graph (a split capture contributes one per segment)."""
        return [c.graph for c in self._compiled_graphs()]

    @property
    def kernel_sources(self) -> list:
        return [c.kernel_source for c in self._compiled_graphs()]

    def reset(self) -> None:
        self.cache.clear()
        self.matched.clear()
        self.labels.clear()
        self.recompiles = 0
        self.gave_up = False
        self.graph_breaks.clear()
        self.generic.clear()
        self.dynamic_status = ""
        self.captures = 0
        self.validations = 0

    def __get__(self, instance, owner):
        """Decorating a method: bind like a function would."""
        if instance is None:
            return self
        return functools.partial(self, instance)


_SAMPLES = 6  # captures kept per size-generic graph for refits (their signatures hold their graphs)


def _argument_path(label: str):
    """("args", i) or ("kwargs", name) for a guard label on a top-level Python-number argument, else None."""
    head, _, _ = label.partition(" == ")
    if head.startswith("args[") and head.endswith("]") and head[5:-1].isdigit():
        return ("args", int(head[5:-1]))
    if head.startswith("kwargs[") and head.endswith("]"):
        try:
            name = ast.literal_eval(head[7:-1])
        except (ValueError, SyntaxError):
            return None
        return ("kwargs", name) if isinstance(name, str) else None
    return None


def _path_text(path) -> str:
    return f"args[{path[1]}]" if path[0] == "args" else f"kwargs[{path[1]!r}]"


def _fits(pattern: tuple, positions: tuple, key: tuple) -> bool:
    """Whether `key` is the scalar-generic graph's key with other values of its float arguments, each of the
    captured values' class (scalars.value_class)."""
    if len(pattern) != len(key):
        return False
    for position, (expected, actual) in enumerate(zip(pattern, key)):
        if expected != actual and not (position in positions and type(actual) is tuple and actual[0] is float
                                       and scalars.value_class(actual[1]) == scalars.value_class(expected[1])):
            return False
    return True


def _externals(graphs) -> tuple:
    """(tensor, shape, dtype, requires_grad, owner, slot, layout): owner is the tensor whose .grad the external
    is (read again at each call), else None; slot is the (table, name) of a compiled module's parameter or
    buffer entry the external is read from at each call (tracer.resolve), else None; layout is `_layout`'s (a
    view captured on a contiguous parameter cannot replay on a strided one, as for the arguments)."""
    return tuple((n.tensor, n.tensor._data.shape, n.tensor._dtype, n.tensor._requires_grad,
                  getattr(n, "grad_of", None), getattr(n, "slot", None), _layout(n.tensor._data))
                 for graph in graphs for n in graph.nodes if n.kind == "external")


def _module_slots(module, written=frozenset(), bound=None) -> dict:
    """id(tensor) -> (its `_parameters`/`_buffers` table, name, qualified name) for the compiled module's
    parameters and buffers: a capture reads them from their entries at each call, as torch lifts them to graph
    inputs, so that `functional_call(compiled, params, x)` (MAML) or a reassigned Parameter of the same shape
    replays the graph instead of recompiling.  So too the plain tensor attributes the function writes
    (`written`, of the modules and of a compiled method's object `bound`): their identity is not guarded
    (pyguards.module_attributes' skip), and a replay sets them again, so the next one must read the new tensor
    (`out = x - self.prev; self.prev = x`, an RNN's `self.h = h.detach()`), not the one seen at capture."""
    slots: dict = {}
    named = [] if module is None else list(module.named_modules(remove_duplicate=False))
    for prefix, m in named:
        for table in (m._parameters, m._buffers):
            for name, tensor in table.items():
                if tensor is not None:
                    slots.setdefault(id(tensor), (table, name, f"{prefix}.{name}" if prefix else name))
    if written:
        owners = [(prefix, m) for prefix, m in named] + ([("", bound)] if hasattr(bound, "__dict__") else [])
        for prefix, owner in owners:
            table = vars(owner)
            for name in written:
                tensor = table.get(name)
                if isinstance(tensor, Tensor):
                    slots.setdefault(id(tensor), (table, name, f"{prefix}.{name}" if prefix else name))
    return slots


def _autocast_state():
    try:
        from ..amp import autocast_mode

        return ("on", autocast_mode.get_autocast_dtype("cpu"), autocast_mode.get_autocast_dtype("cuda"))
    except Exception:  # noqa: BLE001 - an amp without these getters still guards on/off
        return ("on",)


def _sdpa_flags():
    """The allowed SDPA backends and their priority, when `sdpa_kernel` restricts them (else None): a graph
    captured under one setting must not replay under another, which may have to raise."""
    from ..nn.attention import _flags

    return None if _flags.all_enabled() and _flags.priority == list(_flags.DEFAULT_PRIORITY) else (
        frozenset(_flags.enabled), tuple(_flags.priority))


def _layout(array):
    """None for a C-contiguous array, else how each dim's stride relates to the next dim's: a reshape
    captured as a view of a contiguous input cannot replay on a strided one (nanoGPT's generate() crops its
    context to `idx[:, -block:]`).  Whether dims can merge into a view depends on that relation only, not on
    the stride's value, which for such a crop grows with the context (keying the exact strides recaptured
    every generated token until the recompile limit)."""
    flags = getattr(array, "flags", None)
    if flags is None or flags.c_contiguous:
        return None
    out = []
    inner = array.itemsize  # what the stride of a dim laid out right after the next one would be
    for size, stride in zip(reversed(array.shape), reversed(array.strides)):
        out.append("1" if size == 1 else "0" if stride == 0 else "c" if stride == inner else
                   "-" if stride < 0 else "s")
        inner = stride * size if size != 1 else inner
    return tuple(reversed(out))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 60 else text[:57] + "..."


def _module_of(fn):
    from ..nn.modules.module import Module

    owner = getattr(fn, "__self__", None)
    return owner if isinstance(owner, Module) else None


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor", mode=None, options=None,
            disable: bool = False):
    """torch.compile: capture `model` (a function or nn.Module) into graphs, fuse pointwise chains into
    generated kernels, replay them on later calls.  Usable as `compile(fn)`, `@compile`, `@compile(...)`."""
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                    disable=disable)
    if model is None:
        return lambda fn: compile(fn, **settings)
    from ..nn.modules.module import Module

    if isinstance(model, Module):
        compiled = CompiledFunction(model._call_impl, **settings)
        compiled.settings = settings  # for pickling the OptimizedModule (it compiles again when loaded)
        return _make_optimized_module(model, compiled)
    if not callable(model):
        raise RuntimeError("ember.compile: model must be callable (a function or an nn.Module)")
    return CompiledFunction(model, **settings)


def _optimized_module_class():
    from ..nn.modules.module import Module

    class OptimizedModule(Module):
        """torch._dynamo.OptimizedModule: the original module under `_orig_mod`, called through the compiler."""

        def __init__(self, module, compiled) -> None:
            super().__init__()
            self._orig_mod = module
            object.__setattr__(self, "_compiled", compiled)

        def forward(self, *args, **kwargs):
            return self._compiled(*args, **kwargs)

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._modules["_orig_mod"], name)

        def __setattr__(self, name, value):
            # as torch's: an attribute set on the wrapper is the original module's (`model.head = ...`,
            # `model.use_cache = False`), except the wrapper's own state and the Module bookkeeping it has
            modules = self.__dict__.get("_modules")
            if (modules is None or "_orig_mod" not in modules or name in ("_orig_mod", "training")
                    or name in self.__dict__ or hasattr(type(self), name)):
                return super().__setattr__(name, value)
            return setattr(modules["_orig_mod"], name, value)

        def __delattr__(self, name):
            if name in self.__dict__ or name == "_orig_mod":
                return super().__delattr__(name)
            return delattr(self._modules["_orig_mod"], name)

        def __reduce__(self):
            # as torch's: pickled as the original module and the compile settings; loading compiles it again
            return _compile_module, (self._orig_mod, self._compiled.settings)

    return OptimizedModule


def _compile_module(module, settings: dict):
    return compile(module, **settings)


_optimized_module: list = []


def _make_optimized_module(module, compiled):
    """The class is built on first use: ember.nn imports ember at import time."""
    if not _optimized_module:
        _optimized_module.append(_optimized_module_class())
    return _optimized_module[0](module, compiled)


# ---------------------------------------------------------------- explain


class ExplainOutput:
    """torch._dynamo.explain's result: graphs, graph_count, graph_break_count, break_reasons, ops_per_graph."""

    def __init__(self, graphs, breaks, result) -> None:
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(breaks)
        self.break_reasons = breaks
        self.ops_per_graph = [[n.op.name for n in g.call_nodes] for g in graphs]
        self.result = result

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {sum(len(ops) for ops in self.ops_per_graph)}", "Break Reasons:"]
        for index, reason in enumerate(self.break_reasons, 1):
            lines.append(f"  Break Reason {index}: {reason.reason}")
            if reason.source:
                lines.append(f"    at {reason.source}")
        lines.append("Ops per Graph:")
        for index, ops in enumerate(self.ops_per_graph, 1):
            lines.append(f"  Graph {index}: {', '.join(ops)}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *args, **kwargs):
    """ember.compiler.explain(fn)(*args) or explain(fn, *args): run fn once, recording where graphs break."""
    if not args and not kwargs:  # explain(fn) -> a function to call with the arguments (even none)
        return lambda *a, **k: _explain(fn, a, k)
    return _explain(fn, args, kwargs)


def _explain(fn, args, kwargs):
    target = fn.fn if isinstance(fn, CompiledFunction) else fn
    tracer = Tracer(explain=True)
    from ..nn.modules.module import Module

    module = target if isinstance(target, Module) else _module_of(target)
    # Python state the call writes makes ember.compile run such calls eagerly (CompiledFunction._trace): a break
    # here too, else explain() reported one graph for a function that never replays one.  Module attributes
    # set to tensors the graph computes are replayed (from the second capture on), so they are not.
    effects = pyguards.SideEffects(args, kwargs, _modules_in(module, args, kwargs), lifted=module)
    function = getattr(target, "__func__", target)
    functions = {function.__code__: [function]} if hasattr(function, "__code__") else {}
    with tracer, pyguards.Watcher(functions) as watcher:
        tracer.bind_inputs(args, kwargs)
        result = target(*args, **kwargs)
    tracer.finish(result)
    written = effects.changed(lambda module, name, value: isinstance(value, Tensor) and tracer.computes(value))
    written += [f"global {name}" for _, name in watcher.written()]
    if written:
        tracer.breaks.append(BreakReason(f"Python state written during the call ({'; '.join(written)}): a replay "
                                         "would not write it, so ember.compile runs such calls eagerly", ""))
    graphs = [g for g in tracer.graphs if g.call_nodes]
    return ExplainOutput(graphs, tracer.breaks, result)


def reset() -> None:
    """Forget every compiled graph (torch._dynamo.reset); the on-disk kernel cache stays."""
    for compiled in list(_all_compiled):
        compiled.reset()


def disable(fn=None, recursive: bool = True):
    """Run `fn` eagerly, never captured: inside a capture, calling it is a graph break."""
    if fn is None:
        return lambda f: disable(f, recursive)
    if isinstance(fn, CompiledFunction):
        fn = fn.fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tracer = _dispatch.tracer
        if tracer is None:
            return fn(*args, **kwargs)
        tracer.graph_break(f"call to ember.compiler.disable'd function {getattr(fn, '__name__', fn)}")
        previous, _dispatch.tracer = _dispatch.tracer, None  # explain keeps tracing: not these ops
        try:
            return fn(*args, **kwargs)
        finally:
            _dispatch.tracer = previous

    wrapper._ember_disabled = True
    return wrapper


__all__ = ["compile", "explain", "reset", "disable", "Unsupported", "CompiledFunction", "ExplainOutput"]
