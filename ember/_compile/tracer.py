"""Capture by tracing: run the function eagerly once with `ember._dispatch.tracer` set, recording every op call.

Every `call(op, args, params)` reports (op, args, params, results) here.  Tensors are
matched to graph values by identity: a tensor argument that is neither a
placeholder (the call's tensor inputs) nor an earlier op's result is an
*external* (a parameter, a closure tensor, a factory's result), referenced by
object so replay sees its current values.

What cannot be replayed is a *graph break*, recorded with the user's source line:
reading a traced tensor into Python (item, bool, tolist, numpy), backward() inside
the function, an in-place write to a view of another input's storage (writes
through views of the graph's own tensors are functionalised: _write_through), a write the dispatcher never saw
(out=, no-grad indexing assignment: caught by storage version counters), a
random factory (caught by the default generator's state moving without a
recorded random op), op parameters carrying array data.  In compile mode the
first break stops recording (the call finishes eagerly); `fullgraph=True`
raises `ember.compiler.Unsupported` there; explain mode keeps recording in a new
segment so it can count graphs the way torch._dynamo.explain does.
"""

from __future__ import annotations

import dataclasses
import dis
import linecache
import os
import random
import sys
import weakref

import numpy as np

from .. import _dispatch
from .._autograd.grad_mode import state
from .._ops import view_nodes
from .._ops.view_nodes import view_positions
from .._tensor import Tensor
from .graph import Graph, Node, ReadOf, Rebuilt, Value
from .pyguards import array_digest

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Unsupported(RuntimeError):
    """Raised by fullgraph=True at the first graph break (torch._dynamo.exc.Unsupported)."""


class BreakReason:
    def __init__(self, reason: str, source: str) -> None:
        self.reason = reason
        self.source = source

    def __repr__(self) -> str:
        return f"{self.reason} at {self.source}" if self.source else self.reason


def user_source() -> str:
    """file:line  |  code of the innermost stack frame outside the ember package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_EMBER_DIR):
            line = linecache.getline(filename, frame.f_lineno).strip()
            return f"{os.path.basename(filename)}:{frame.f_lineno}  | {line}"
        frame = frame.f_back
    return ""


_STATIC_TYPES = (int, float, bool, str, type(None), slice, type(Ellipsis), complex)


def _static_param(value) -> bool:
    """Params are baked into the graph: they must not carry array data derived from traced tensors."""
    if isinstance(value, _STATIC_TYPES):
        return True
    if isinstance(value, (tuple, list)):
        return all(_static_param(v) for v in value)
    if isinstance(value, dict):
        return all(_static_param(v) for v in value.values())
    if isinstance(value, (np.ndarray, Tensor)):
        return False
    return True  # dtypes, generators, devices, enum-like objects: referenced as they are


class ArrayArg:
    """An index array in an op's params that came from a tensor (index_select's ids, x[idx]'s idx): at replay
    it is read from the node's trailing graph value number `position` (np.asarray(t, int64), reshaped); a
    `boolean` one is a mask, read as bool (index_put's `x[mask] = v` with a one-element v: Tracer.record)."""

    __slots__ = ("position", "shape", "name", "boolean")

    def __init__(self, position: int, shape, name: str, boolean: bool = False) -> None:
        self.position, self.shape, self.name, self.boolean = position, shape, name, boolean

    def __repr__(self) -> str:
        return f"{'bool' if self.boolean else 'int64'}({self.name})" + (
            "" if self.shape is None else f".reshape({self.shape})")

    def __eq__(self, other) -> bool:
        return isinstance(other, ArrayArg) and (other.position, other.shape, other.boolean) == (
            self.position, self.shape, self.boolean)

    def __hash__(self) -> int:
        return hash((ArrayArg, self.position, self.shape, self.boolean))

    def array(self, tensor):
        array = np.asarray(tensor._data, np.bool_ if self.boolean else np.int64)
        return array if self.shape is None else array.reshape(self.shape)


def fill_arrays(structure, tensors):
    """Params with every ArrayArg replaced by its array, read from `tensors` (the node's index values)."""
    if isinstance(structure, ArrayArg):
        return structure.array(tensors[structure.position])
    if isinstance(structure, tuple):
        items = [fill_arrays(item, tensors) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, list):
        return [fill_arrays(item, tensors) for item in structure]
    if isinstance(structure, dict):
        return {key: fill_arrays(item, tensors) for key, item in structure.items()}
    return structure


class SlotGrad:
    """The `.grad` of whichever tensor a compiled module's parameter entry holds at this call: `p.grad` read in the
    function reads the current parameter's gradient, as the parameter itself is read from its entry."""

    __slots__ = ("table", "name")

    def __init__(self, table, name) -> None:
        self.table, self.name = table, name

    @property
    def _grad(self):
        tensor = self.table.get(self.name)
        return None if tensor is None else tensor._grad


class _Unliftable(Exception):
    pass


# bytecode that may follow a `.item()` read taken as an output (Tracer._returning_frame): loads, calls (watched
# at run time) and container builds -- nothing that could branch on, compare, compute with or store the float
_PASSIVE = frozenset(("CACHE", "NOP", "EXTENDED_ARG", "PUSH_NULL", "PRECALL", "CALL", "KW_NAMES", "LOAD_FAST",
                      "LOAD_FAST_CHECK", "LOAD_CONST", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_ATTR",
                      "LOAD_METHOD", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_CONST_KEY_MAP",
                      "LIST_APPEND", "LIST_EXTEND", "MAP_ADD", "DICT_UPDATE"))


def _mask_fill(op, args, params) -> bool:
    """index_put whose only index array is one boolean mask and whose value has one element (`x[x > 0] = 0`,
    which torch runs as masked_fill_): its result's shape never depends on the mask's values, so the mask can be
    read from its graph value at each replay.  (A value of several elements must match the mask's count.)"""
    if op.name != "index_put" or len(args) < 2 or not isinstance(args[1], Tensor) or args[1].numel() != 1:
        return False
    advanced = getattr(params.get("key"), "advanced", None) or ()
    arrays = [item for item in advanced if isinstance(item, np.ndarray)]
    return len(arrays) == 1 and arrays[0].dtype == np.bool_


# graph breaks that read a tensor's values into Python: the capture can continue after them in a new
# segment, the values read becoming a guard (see frontend.py, chains)
READ_BREAKS = ("Tensor.item()", "Tensor.tolist()", "Tensor.numpy()", "Tensor.__array__()",
               "data-dependent control flow", "indexing with a 0-d tensor")


# graft(new, leaf): new's values, with the gradient passed to leaf unchanged -- a leaf's value after a no-grad
# in-place write, as eager sees it (Tracer.inplace)
GRAFT = _dispatch.OpDef("graft", lambda xp, new, leaf: new, lambda ctx, grad: (None, grad),
                        dtype_rule=lambda args, params: (None, args[1]._dtype), upcast_half=False,
                        meta=lambda args, params: args[0].shape)


class Action:
    """A training-loop call replayed around a graph (Tracer.take_action): `fn(*args)`, run before the graph or
    after it; a backward's args are the position of its loss among the graph's action outputs."""

    __slots__ = ("kind", "fn", "args", "after")

    def __init__(self, kind: str, fn, args: tuple, after: bool) -> None:
        self.kind, self.fn, self.args, self.after = kind, fn, args, after

    def run(self, operands: tuple) -> None:
        if self.kind == "backward":
            self.fn(operands[self.args[0]])
        else:
            self.fn(*self.args)


def _remakes(recipe, tensor) -> bool:
    """Whether the recipe still gives the tensor's values (nothing wrote it outside ember's ops since, such as
    through .numpy()); an uninitialised `empty` is taken as is."""
    _, fn, args, kwargs, _ = recipe
    if fn.__name__ == "_filled" and args[0] is None:
        return True
    tracer, _dispatch.tracer = _dispatch.tracer, None  # (made outside the capture: not a tensor of the call)
    try:
        again = fn(*args, **kwargs)._data
    finally:
        _dispatch.tracer = tracer
    return again.shape == tensor._data.shape and bool((again == tensor._data).all())


def remake(fn, params, requires_grad: bool) -> Tensor:
    """A recipe's tensor at this call's sizes (the runner's call for a size-generic graph, or a random draw),
    a leaf that requires grad if the capture's did (`randn(n).requires_grad_()`)."""
    out = fn(*params["args"], **params["kwargs"])
    out._requires_grad = requires_grad
    return out


def fresh_copy(tensor) -> Tensor:
    """A new leaf with a copy of `tensor`'s values (and its requires_grad): a made tensor's snapshot at capture,
    and each replay's own copy of it."""
    out = Tensor._make(tensor._data.copy(), tensor._dtype, tensor._device)
    out._requires_grad = tensor._requires_grad
    return out


def _host_random_state() -> tuple:
    """Python's and NumPy's global random states (compared around a capture)."""
    numpy_state = np.random.get_state(legacy=True)
    return random.getstate(), numpy_state[1].tobytes(), numpy_state[2:]


def _overlay_markers(node_args, marked):
    """A node's args (with Values) with the Scalar markers of `marked` (the same args, tensors unresolved)."""
    from .scalars import Scalar

    if isinstance(marked, Scalar):
        return marked
    if isinstance(marked, (tuple, list)) and isinstance(node_args, (tuple, list)) and len(marked) == len(node_args):
        items = [_overlay_markers(a, m) for a, m in zip(node_args, marked)]
        return tuple(items) if isinstance(node_args, tuple) else items
    if type(marked) is slice and type(node_args) is slice:
        return slice(*_overlay_markers((node_args.start, node_args.stop, node_args.step),
                                       (marked.start, marked.stop, marked.step)))
    return node_args


class Tracer:
    """Records op calls into graphs; see the module docstring."""

    def __init__(self, *, fullgraph: bool = False, explain: bool = False) -> None:
        self.fullgraph = fullgraph
        self.explain = explain
        self.graphs: list[Graph] = [Graph()]
        self.entry_inference = state.inference
        self.inference_modes: set = set()  # inference_mode states the recorded ops ran under (finish)
        self.breaks: list[BreakReason] = []
        self.broken = False
        self.value_of: dict = {}  # id(tensor) -> Value
        self.keep: list = []  # tensors kept alive so ids stay unique during the trace
        self.storage_users: dict = {}  # id(storage) -> {id(tensor): tensor} tracked with it
        self.written_storages: set = set()  # id(storage) of every tensor written in place (_rebind)
        self.stale: dict = {}  # id(view) -> the tensor owning its storage, written since (see _write_through)
        self.refreshed: dict = {}  # id(view) -> that owner, for the views read again (a copy at replay)
        self.storages: dict = {}  # id(storage) -> (storage, expected version)
        self.internal_storage: dict = {}  # id(storage) -> Value of a call result owning it
        self.mutated: dict = {}  # id(input tensor) -> [its placeholder/external Value, last new Value, grad mode]
        self.owner = None  # the optimizer whose step is being captured (ember.compile(opt.step))
        self.slots: dict = {}  # id(tensor) -> (table, name, path): the compiled module's parameters and buffers
        self.python_writes: list = []  # Python state library code wrote during the capture (a replay would not)
        self.recipes: dict = {}  # id -> (tensor, factory, args, kwargs): made from numbers alone (note_recipe)
        self.exposed: list = []  # (tensor, digest): arrays handed out by .numpy() (see expose)
        self.random_nodes: list = []  # (tensor, node) of random factories (requires_grad_ may come later)
        self.created = weakref.WeakValueDictionary()  # id -> tensor made during the capture (Tensor._make)
        self.grad_reads: dict = {}  # id(tensor) -> (tensor, whether its .grad was None): guarded (read_grad)
        self.grad_owner: dict = {}  # id(gradient) -> the tensor whose .grad it was when read
        self.random_ops = 0
        self.generators: dict = {}  # id -> the Generator a recorded random op drew from
        self.drawing = False  # inside a recorded random op (set by _dispatch.call, read by Generator._rng)
        self.scalars = None  # a scalars.Usage when float arguments are stand-ins (frontend._trace)
        self.untraced_draw = False  # a generator drew outside one: a factory such as randn ran untraced
        self.placeholders: list = []  # (path, Value)
        self.last_break_tensor = None
        self.ops_since_break = 0
        self.previous = None
        self.tensor_of_value: dict = {}
        self.segment_nodes: set = set()
        self.index_notes: list = []  # (tensor or None, array): index arrays made from tensors (index_source)
        self.split = False  # compile mode: continue past read breaks in a new segment (chains)
        self.reads: list = []  # per finished segment: (Value read, its data at capture, BreakReason)
        self.segment_grad_mode: list = []  # grad mode at the start of each segment
        self.actions: list = []  # Action: training-loop calls replayed around the graph (take_action)
        self.action_operands: list = []  # tensors of the graph that epilogue actions act on (loss.backward())
        self.epilogue = False  # an action ran after the ops: no op may follow
        self.zero_grad_moved = False  # a zero_grad() after the first ops was made a prologue action
        self.final_reads: dict = {}  # id(float) -> (float, tensor): `.item()` reads taken as outputs (read_item)
        self.after_read = False  # user code ran, or an op was recorded, after one of them
        self._read_profile = None  # (hook, the profile function it wraps), from the first read_item
        self.action_results: set = set()  # ids of tensors actions returned (clip_grad_norm_'s total norm)

    @property
    def mutations(self) -> list:
        return [tuple(m) for m in self.mutated.values()]

    @property
    def graph(self) -> Graph:
        return self.graphs[-1]

    # ------------------------------------------------------------ lifecycle
    def __enter__(self):

        self.previous = _dispatch.tracer
        self._host_random = _host_random_state()
        _dispatch.tracer = self
        return self

    def __exit__(self, *exc) -> None:
        _dispatch.tracer = self.previous
        if self._read_profile is not None:  # (the Watcher, exiting first, may have cleared it already)
            profile, previous = self._read_profile
            if sys.getprofile() is profile:
                sys.setprofile(previous)
            self._read_profile = None

    def read_item(self, tensor, value) -> bool:
        """`value = tensor.item()` in a training step with actions (whose reads cannot split the graph into
        chains, see frontend): taken as the graph's output, read by `.item()` at each replay (graph.ReadOf),
        when nothing can use the float but the return -- the read is in the compiled function's own frame (no
        user frame between it and the capture), whose remaining bytecode up to its return only loads and
        builds containers (no jump, comparison, arithmetic or store: `_PASSIVE`), and no user function or
        builtin is called from there on (a profile hook: `max(loss.item(), 0)`), nor an op recorded.  Else, or if
        the float is not returned as it is, the read is a graph break at the end of the capture and the call
        runs eagerly, as before.  So a step ending `return loss.item()` replays."""
        if (self.explain or self.fullgraph or self.broken or not self.actions or len(self.graphs) > 1
                or type(value) is not float or id(tensor) not in self.value_of
                or not self._commutes_with_epilogue((tensor,))):
            return False
        frame = self._returning_frame()
        if frame is None:
            return False
        if self._read_profile is None:
            from .pyguards import _library

            previous = sys.getprofile()

            def profile(called, event, arg):
                if previous is not None:
                    previous(called, event, arg)
                if (event == "c_call" and called is frame) or (event == "call" and not _library(
                        called.f_code.co_filename)):
                    self.after_read = True

            sys.setprofile(profile)
            self._read_profile = (profile, previous)
        self.final_reads[id(value)] = (value, tensor)
        self.keep.append(tensor)
        return True

    @staticmethod
    def _returning_frame():
        """The user frame reading a value (below Tensor.item and this tracer), if it is the only user frame above
        the capture (frontend.py) and the rest of its bytecode only loads and builds up to its return."""
        from .pyguards import _library

        frame, user = sys._getframe(3), None
        while frame is not None and not frame.f_code.co_filename.endswith(os.path.join("_compile", "frontend.py")):
            if not _library(frame.f_code.co_filename):
                if user is not None:
                    return None  # a helper's read: what its caller does with the float is not seen
                user = frame
            frame = frame.f_back
        if frame is None or user is None:
            return None
        for instruction in dis.get_instructions(user.f_code):
            if instruction.offset <= user.f_lasti:
                continue
            if instruction.opname in ("RETURN_VALUE", "RETURN_CONST"):
                return user
            if instruction.opname not in _PASSIVE:
                return None
        return None

    def bind_inputs(self, args, kwargs) -> None:
        self.segment_grad_mode = [state.enabled]
        # inference_mode entered inside the function (an @inference_mode() body): its results must be inference
        # tensors at replay too, which the runner can do for the whole call (graph.inference), not for part
        self.entry_inference = state.inference
        for path, tensor in flatten_tensors(args, kwargs):
            if id(tensor) in self.value_of:
                continue
            node = self.graph.add(Node("placeholder", f"p{len(self.placeholders)}", path=path))
            value = self.graph.make_values(node, [tensor])[0]
            self.placeholders.append((path, value))
            self._track(tensor, value)
            # x.detach() / x.data of an input share its array: found by storage (resolve), they are a detach of
            # the placeholder, not an external frozen to this call's tensor
            self.internal_storage.setdefault(id(tensor._storage), value)

    def _track(self, tensor, value) -> None:
        self.value_of[id(tensor)] = value
        self.tensor_of_value.setdefault(id(value), tensor)
        self.segment_nodes.add(id(value.node))
        self.keep.append(tensor)
        storage = tensor._storage
        self.storage_users.setdefault(id(storage), {})[id(tensor)] = tensor
        if id(storage) not in self.storages:
            self.storages[id(storage)] = [storage, storage.version]

    # ------------------------------------------------------------ recording
    def index_source(self, tensor, array, read: bool = True) -> None:
        """ember/_ops: `array` (an index) was made from `tensor` (None: from a Python sequence, a constant)."""
        if self.broken and not self.explain:
            return
        if read and tensor is not None and array.ndim == 0:
            self.graph_break("indexing with a 0-d tensor reads its value into Python", tensor)
            return
        self.index_notes.append((tensor, array))
        if tensor is not None:
            self.keep.append(tensor)
        del self.index_notes[:-64]

    def _find_source(self, leaf):
        notes = self.index_notes[::-1]
        for tensor, array in notes:
            if array is leaf:
                return tensor, array
        pointer = leaf.__array_interface__["data"][0]
        for tensor, array in notes:  # a reshape of the noted array (index_select's .reshape(-1))
            if (array.size == leaf.size and array.dtype == leaf.dtype and leaf.flags.c_contiguous
                    and array.flags.c_contiguous and array.__array_interface__["data"][0] == pointer):
                return tensor, array
        for tensor, array in notes:  # a reshaped copy (of a non-contiguous index)
            if array.size == leaf.size and array.dtype == leaf.dtype and np.array_equal(array.reshape(-1),
                                                                                         leaf.reshape(-1)):
                return tensor, array
        return None

    def _lift_params(self, params, masks: bool = False):
        """Params with tensor-made index arrays as ArrayArgs, and those tensors (the node's extra inputs);
        `masks`: a boolean mask may be one too (see _mask_fill)."""
        sources: list = []

        def walk(value):
            if isinstance(value, np.ndarray):
                found = self._find_source(value)
                if found is None:
                    raise _Unliftable("op parameters carry array data not traced to a tensor (a NumPy index?)")
                tensor, _ = found
                if tensor is None:
                    return value  # from a Python list in the code: a constant of this trace
                if value.dtype == np.bool_ and not masks:
                    raise _Unliftable("boolean mask indexing: the result's shape depends on the mask's values")
                position = next((i for i, known in enumerate(sources) if known is tensor), None)
                if position is None:
                    position = len(sources)
                    sources.append(tensor)
                shape = None if value.shape == tuple(tensor._data.shape) else (-1 if value.ndim == 1 else value.shape)
                return ArrayArg(position, shape, "", boolean=value.dtype == np.bool_)
            if isinstance(value, Tensor):
                raise _Unliftable("op parameters hold a tensor")
            if isinstance(value, tuple):
                items = [walk(item) for item in value]
                return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
            if isinstance(value, list):
                return [walk(item) for item in value]
            if isinstance(value, dict):
                return {key: walk(item) for key, item in value.items()}
            return value

        return walk(params), sources

    def expose(self, tensor) -> None:
        """`tensor`'s array was handed to Python (.numpy()): its contents now, to tell at the end of the capture
        whether something wrote through it (a write no replay would make)."""
        if type(tensor._data) is np.ndarray:
            self.exposed.append((tensor, array_digest(tensor._data)))

    def random_factory(self, tensor, generator, recipe) -> None:
        """A random factory (randn_like, rand, randint) drew `tensor`: a recipe node, placed now so that a replay
        draws from the generator in the order eager does (its recorded random ops, dropout, may follow)."""
        if self.broken and not self.explain:
            return
        self.random_ops += 1
        self.generators[id(generator)] = generator
        self.recipes[id(tensor)] = (tensor, *recipe, True)
        self.random_nodes.append((tensor, self.resolve(tensor).node))

    def record(self, op, args, params, results) -> None:
        self.drawing = False
        if self.broken and not self.explain:
            return
        if self.final_reads:
            self.after_read = True
        if self.epilogue and not self._commutes_with_epilogue(args):
            self.graph_break(f"{op.name}() after backward() or optimizer.step() in the compiled function, on a "
                             "tensor those calls may change (a parameter, a gradient, an optimizer's or scaler's "
                             "state): only ops on the graph's own results may follow them")
            if self.broken:
                return
        sources = ()
        if params and not all(_static_param(v) for v in params.values()):
            try:
                params, sources = self._lift_params(params, masks=_mask_fill(op, args, params))
            except _Unliftable as why:
                self.graph_break(f"{op.name}(): {why}")
                if self.broken and not self.explain:
                    return
                sources = ()
        if op.data_dependent:  # a replay would give later ops this call's shape
            self.graph_break(f"{op.name}(): the result's shape depends on the input's values")
            if self.broken and not self.explain:
                return
        if "generator" in params:
            self.random_ops += 1
            generator = params["generator"]
            self.generators[id(generator)] = generator
        node_args = tuple(self._resolve_arg(a) for a in args)
        if sources:
            extra = tuple(self.resolve(t) for t in sources)
            node_args = node_args + extra
            name_arrays(params, extra)
        node = self.graph.add(Node("call", self.graph.fresh_name(f"{op.name}_"), op=op, args=node_args,
                                   params=dict(params), grad_enabled=state.enabled, source=user_source()))
        self.inference_modes.add(state.inference)
        node.index_args = len(sources)
        if self.scalars is not None and self.scalars.pending and self.scalars.pending[-1][0] is op:
            self._mark_scalars(node, sources)
        tensors = results if isinstance(results, tuple) else (results,)
        values = self.graph.make_values(node, tensors)
        for tensor, value in zip(tensors, values):
            self._track(tensor, value)
            self.storages[id(tensor._storage)][1] = tensor._storage.version
            if not op.view:
                self.internal_storage[id(tensor._storage)] = value
        self.ops_since_break += 1

    def _mark_scalars(self, node, sources) -> None:
        """The node of an op call given float-argument stand-ins: its args and params with Scalar markers
        (scalars.py), bound at each replay; its results' shapes are checked there."""
        _, marked_args, marked_params = self.scalars.pending[-1]
        if sources:  # (params lifted into index arrays: not marked, so this capture stays specialised)
            self.scalars.note(("arg", 0), f"{node.op.name}() with index params")
            return
        if marked_args is not None:
            node.symbolic_args = _overlay_markers(node.args, marked_args)
        if marked_params is not None:
            node.symbolic_params = marked_params
        node.scalar_bound = True

    def _commutes_with_epilogue(self, args) -> bool:
        """Whether an op after the epilogue (backward(), step()...) reads only what those calls leave alone:
        results of the graph's ops and inputs that are not leaves requiring grad.  Then it can run in the graph
        before them, as its values are the same (an accuracy `(out.argmax(1) == y).float().mean()` after
        `opt.step()`); a parameter, a .grad or a scaler's scale may have been changed by them (an EMA update)."""
        for _, tensor in flatten_tensors(args, {}):
            if self.stale and id(tensor) in self.stale:
                return False
            value = self.value_of.get(id(tensor))
            if value is None:  # a detach or .data of a graph value (made outside the ops)
                value = self._alias(tensor)[1]
            if value is None or id(value.node) not in self.segment_nodes:
                if self.created.get(id(tensor)) is tensor and not tensor._requires_grad:
                    continue  # made in the function after the epilogue (a factory's result)
                return False
            # (by the storage's owner: a view the graph made of a parameter, `w = model.weight.t()`, sees the step)
            owner = self.internal_storage.get(id(tensor._storage), value)
            for node, held in ((value.node, tensor), (owner.node, self.tensor_of_value.get(id(owner), tensor))):
                if node.kind == "placeholder" and held._requires_grad and held._grad_fn is None:
                    return False
                if node.kind == "external" and not getattr(node, "created", False):
                    return False
        return True

    def _resolve_arg(self, arg):
        if isinstance(arg, Tensor):
            return self.resolve(arg)
        if isinstance(arg, (list, tuple)):
            return type(arg)(self._resolve_arg(a) for a in arg)
        return arg

    def computes(self, tensor) -> bool:
        """Whether the graph can name this tensor without making it an external: a value it tracks, or a
        detached alias of one (as `resolve` names it)."""
        if id(tensor) in self.value_of:
            return True
        return self._alias(tensor)[1] is not None

    def _alias(self, tensor):
        """(owner, source): the value of this segment owning `tensor`'s storage (None: none), and the value whose
        tensor has `tensor`'s very array, of which `tensor` is a detach or `.data` (None: none) -- the owner, or
        a view an op made of it (`x.t().detach()`, an embedding's reshaped rows: they broke the capture)."""
        owner = self.internal_storage.get(id(tensor._storage))
        if owner is None or id(owner.node) not in self.segment_nodes:
            return None, None
        source = self.tensor_of_value.get(id(owner))
        if source is not None and source._data is tensor._data:
            current = self.value_of.get(id(source))  # (the owner's value since its latest in-place write)
            return owner, current if current is not None and id(current.node) in self.segment_nodes else owner
        for ident, user in list(self.storage_users.get(id(tensor._storage), {}).items()):
            if ident in self.stale:
                self._refresh(user)
            value = self.value_of.get(ident)
            view = None if value is None else self.tensor_of_value.get(id(value))
            if view is not None and id(view) == ident and view._data is tensor._data and (
                    id(value.node) in self.segment_nodes):
                return owner, value
        return owner, None

    def resolve(self, tensor) -> Value:
        """The graph value a tensor stands for: placeholder, earlier result, detached alias, or a new external."""
        if self.action_results and id(tensor) in self.action_results:
            self.graph_break("the compiled function uses a tensor clip_grad_norm_ returned after backward(): a "
                             "replay's graph would hold this call's value")
        if self.stale and id(tensor) in self.stale:
            self._refresh(tensor)
        value = self.value_of.get(id(tensor))
        if value is not None:
            if id(value.node) in self.segment_nodes:
                return value
            # a value from an earlier segment enters this one as a placeholder (an external stays one)
            if value.node.kind == "external":
                node = self.graph.add(Node("external", self.graph.fresh_name("e"), tensor=value.node.tensor,
                                           path=value.node.path))
                if getattr(value.node, "slot", None) is not None:
                    node.slot = value.node.slot
            else:
                node = self.graph.add(Node("placeholder", self.graph.fresh_name("p"),
                                           path=f"graph break ({value.name})"))
                node.source_value = value
            new = self.graph.make_values(node, [tensor])[0]
            self._track(tensor, new)
            return new
        owner, source = self._alias(tensor)
        leaf = tensor._requires_grad and tensor._grad_fn is None
        if source is not None and not leaf:
            node = self.graph.add(Node("detach", self.graph.fresh_name("detach_"), args=(source,),
                                       source=user_source()))
            value = self.graph.make_values(node, [tensor])[0]
            self._track(tensor, value)
            return value
        if owner is not None and source is None:
            self.graph_break("a view of a traced tensor was made outside ember's ops")
        elif owner is not None and id(tensor._storage) in self.written_storages:
            # a leaf that requires grad is its own external (its .grad must be filled), read when a replay starts,
            # before the write-back of an earlier write through its `.data` or a detached alias of it
            self.graph_break("a tensor that requires grad was written in place earlier in the call through its .data "
                             "or a detached alias (a replay writes such writes back only at its end)")
        node = self.graph.add(Node("external", self.graph.fresh_name("e"), tensor=tensor,
                                   path=_describe_external(tensor)))
        if self.created.get(id(tensor)) is tensor:
            # made in the function (zeros, empty_like, tensor([...])): kept as its value now, before any in-place
            # write of this call; writes to it are the call's own (`inplace`), and each replay starts from a
            # copy of it (fresh_copy, in the runner), so its views, returns and gradients are never shared by
            # calls (`buf = zeros(...); buf[0] = x; return buf` returned one object for every call)
            node.created = True
            node.tensor = fresh_copy(tensor)
            node.path = "a tensor made in the function"
            recipe = self.recipes.get(id(tensor))
            if recipe is not None and recipe[0] is tensor and (recipe[4] or _remakes(recipe, tensor)):
                # made from numbers alone (arange(T), zeros(B, T)): its numbers are the node's params, so that
                # a size-generic graph makes it anew at each call's sizes (symbolic.py; printing.runner_source);
                # a random draw (randn_like) is made anew by every replay
                node.recipe = recipe[1]
                node.params = {"args": recipe[2], "kwargs": recipe[3]}
                node.random = recipe[4]
        slot = self.slots.get(id(tensor))
        if slot is not None and not getattr(node, "created", False) and slot[0].get(slot[1]) is tensor:
            node.slot = slot[:2]  # the compiled module's parameter or buffer: read from its entry at each call
            node.path = f"{'parameter' if tensor._is_param else 'buffer'} {slot[2]} (read from the module each call)"
        owner = self.grad_owner.get(id(tensor))
        if owner is not None and owner._grad is tensor:
            node.grad_of = self._grad_holder(owner)
            node.path = f"{node.path} (.grad, read each call)"
        value = self.graph.make_values(node, [tensor])[0]
        self._track(tensor, value)
        self.internal_storage.setdefault(id(tensor._storage), value)  # (a parameter's detach, as an input's)
        return value

    def read_grad(self, owner) -> None:
        """`owner.grad` was read.  The gradient is an external read from `owner` at replay (a new tensor after
        each backward with set_to_none), and whether it was None is guarded (`if p.grad is not None`)."""
        grad = owner._grad
        value = self.value_of.get(id(owner))
        if self.zero_grad_moved and not self.epilogue:
            self.graph_break("reading a .grad after a zero_grad() that follows the graph's first ops (a replay runs "
                             "that zero_grad() before them)")
            return
        if self.epilogue:  # (a replay reads its externals when it starts, before the epilogue's backward())
            self.graph_break("reading a .grad after backward() or optimizer.step() in the compiled function")
            return
        if self.owner is None and value is not None and value.node.kind == "placeholder":
            # the .grad of an argument: a replay would read the capture's argument (an optimizer step passes
            # its grads in as inputs instead, Optimizer._compile_inputs)
            self.graph_break("reading the .grad of an argument inside a compiled function")
            return
        self.grad_reads.setdefault(id(owner), (self._grad_holder(owner), grad is None))
        if grad is not None:
            self.grad_owner[id(grad)] = owner

    def _grad_holder(self, owner):
        """What a replay reads `.grad` from: the owner, or for a compiled module's parameter its entry, which a
        reassigned Parameter (or functional_call's tensors) may fill since the capture (as the slot external)."""
        slot = self.slots.get(id(owner))
        if slot is not None and slot[0].get(slot[1]) is owner:
            return SlotGrad(slot[0], slot[1])
        return owner

    def inplace(self, target, result) -> None:
        """Tensor._inplace_from wrote result's values into target: target now stands for result's value."""
        if self.broken and not self.explain:
            return
        if self.epilogue:  # (backward() may read what it writes: an op on the graph's results may commute, a write
            # does not)
            self.graph_break("an in-place write after backward() or optimizer.step() in the compiled function")
            return
        if target._base is not None or len(self.storage_users.get(id(target._storage), ())) > 1:
            base = self._view_write_base(target)
            if base is None:
                self.graph_break("in-place write to a view, or to a tensor that has views, whose storage is not "
                                 "one tensor of this graph (another input's, or reinterpreted as another dtype)")
                return
            self._write_through(base, target, result)
            return
        self._rebind(target, self.resolve(result))

    def _view_write_base(self, target):
        """The tensor owning `target`'s storage, if a write into target can be recorded as a put into it (see
        _write_through): a result of this graph's ops, a tensor made in the function or an input, whose storage's
        other tensors are views made in the graph with its dtype.  None: the write is a graph break."""
        storage = target._storage
        owner = self.internal_storage.get(id(storage))
        if owner is None or id(owner.node) not in self.segment_nodes:
            return None
        base = self.tensor_of_value.get(id(owner))
        if base is None or base._storage is not storage or type(base._data) is not np.ndarray:
            return None
        if base._requires_grad and base._grad_fn is None or 0 in base._data.strides and base._data.size > 1:
            return None  # a leaf that requires grad (torch refuses, or no-grad: GRAFT's case); an expanded array
        for ident, user in self.storage_users.get(id(storage), {}).items():
            value = self.value_of.get(ident)
            if user is not base and value is not None and value.node.kind in ("placeholder", "external"):
                return None  # another input aliasing this one: a replay's inputs need not alias alike
            if user._dtype is not base._dtype:
                return None  # view(dtype), view_as_real: positions do not express a reinterpretation
        if target is not base and (target._dtype is not base._dtype or view_positions(base, target).min(initial=0) < 0):
            return None
        return base

    def _write_through(self, base, target, result) -> None:
        """Functionalise `target.op_(...)` where target shares its storage with other tensors: the storage's new
        value is the base's value with result's put at target's positions (CopySlices' op, as eager autograd
        records it), and every other tensor of the storage is read again from that value when next used
        (`_refresh`: a gather at its positions, as a regenerated view's grad_fn) -- as torch's functionalization
        replays views of a mutated base.  A view so read is a copy at replay, not an alias of the base."""
        new = self.resolve(result)
        if target is not base:
            current = self.resolve(base)
            node = self.graph.add(Node("call", self.graph.fresh_name("copy_slices_"), op=view_nodes._PUT_POSITIONS,
                                       args=(current, new), params={"positions": view_positions(base, target)},
                                       grad_enabled=state.enabled, source=user_source()))
            new = self.graph.make_values(node, [base])[0]
            self.tensor_of_value.setdefault(id(new), base)
            self.segment_nodes.add(id(node))
        self._rebind(base, new, invisible=not target._requires_grad)
        for ident, user in self.storage_users.get(id(base._storage), {}).items():
            if user is not base:
                self.stale[ident] = base

    def _refresh(self, view) -> None:
        """`view`'s value read again from its storage's owner after a write through another tensor (see
        _write_through)."""
        base = self.stale.pop(id(view))
        self.refreshed[id(view)] = base
        source = self.resolve(base)
        node = self.graph.add(Node("call", self.graph.fresh_name("view_"), op=view_nodes._GATHER_POSITIONS,
                                   args=(source,), params={"positions": view_positions(base, view),
                                                           "shape": tuple(base.shape)},
                                   grad_enabled=view._requires_grad, source=user_source()))  # (its first use may
        # be under no_grad, later ones not)
        self._track(view, self.graph.make_values(node, [view])[0])

    def _rebind(self, target, new, invisible: bool = False) -> None:
        """`target` (not a view of another tensor of the graph) now stands for the value `new`.  `invisible`: a
        write autograd does not see (through a detached alias: `y.data.mul_(3)`), as one under no_grad."""
        self.written_storages.add(id(target._storage))
        old = self.value_of.get(id(target))
        if old is not None and getattr(old.node, "created", False):  # a write to the call's own tensor
            self.value_of[id(target)] = new
            self.storages.setdefault(id(target._storage), [target._storage, 0])[1] = target._storage.version
            return
        if id(target) in self.mutated:
            self.mutated[id(target)][1:] = [new, state.enabled]  # a later write to the same input: keep the last
        elif old is None or old.node.kind in ("placeholder", "external"):
            if old is None:
                old = self.resolve(target)
            self.mutated[id(target)] = [old, new, state.enabled]
        if target._requires_grad and (invisible or not state.enabled) and target._grad_fn is not None and getattr(
                target._grad_fn, "_result", None) is not None:
            # eager's backward then reads the written values as the op's saved result (`y = x.exp();
            # y.data.mul_(0.5)`); a replay's graft would pass the op's own
            self.graph_break("a write autograd does not see (no_grad, .data) into a result its backward saved")
            return
        if target._requires_grad and (invisible or not state.enabled):
            # a no-grad write to a leaf (weight clipping, Embedding's max_norm renorm), or to a result that
            # requires grad (`with no_grad(): y[0] = 0`, `y.data.mul_(3)`): the tensor keeps its place in the
            # graph (a leaf its identity, a result its grad_fn), so later uses must still pass gradients to it as
            # before the write (GRAFT), not read the detached result
            if old is None:
                old = self.resolve(target)
            node = self.graph.add(Node("call", self.graph.fresh_name("graft_"), op=GRAFT, args=(new, old),
                                       params={}, grad_enabled=True, source=user_source()))
            new = self.graph.make_values(node, [target])[0]
            self.tensor_of_value[id(new)] = target
            self.segment_nodes.add(id(node))
        self.value_of[id(target)] = new
        self.storages.setdefault(id(target._storage), [target._storage, 0])[1] = target._storage.version

    # ------------------------------------------------------------ actions
    def take_action(self, kind: str, fn, args: tuple, operand) -> bool:
        """Whether a training-loop call can be replayed around the graph (_dispatch.run_as_action): zero_grad
        before backward() (a prologue: it commutes with ops that read no .grad), or zero_grad,
        `loss.backward()` (a loss the graph computes, no gradient or graph arguments) and `optimizer.step()`
        (no closure) after the ops (an epilogue).  Each replay runs the
        prologue, the graph, then the epilogue on the graph's results, as eager does -- so torch.compile's
        tutorial step (`opt.zero_grad(); loss = f(model(x)); loss.backward(); opt.step()`) compiles its forward
        and loss, with backward() running the graph's generated backward kernels.  Not with a read split
        (the segments would need the actions between them), explain() or fullgraph (torch breaks there)."""
        if self.explain or self.fullgraph or self.broken or len(self.graphs) > 1:
            return False
        after = self.epilogue or bool(self.graph.call_nodes)
        if kind == "backward":
            _, gradient, retain_graph, create_graph, inputs = args
            if not after or gradient is not None or retain_graph or create_graph or inputs is not None:
                return False
            if id(operand) not in self.value_of or operand.grad_fn is None:
                return False
            position = len(self.action_operands)
            self.action_operands.append(operand)
            args = (position,)  # (read from the graph's outputs at replay)
        elif kind == "step":
            if not after or len(args) > 1 and args[1] is not None:
                return False
        elif kind in ("clip", "scaler", "sched"):  # clip_grad_norm_ / _value_, GradScaler.step / update, an lr
            # scheduler's step()
            if not after:
                return False
        elif kind != "zero_grad":
            return False
        elif after and not self.epilogue and not self.grad_reads:
            # zero_grad between the ops and backward() (`fake = G(z).detach(); optD.zero_grad(); ...`, or
            # `out = model(x); opt.zero_grad()`): no op read a .grad, so it commutes with them and joins the
            # prologue (a .grad read after it breaks the graph: read_grad)
            after = False
            self.zero_grad_moved = True
        self.actions.append(Action(kind, fn, args, after))
        self.epilogue = self.epilogue or after
        return True

    def after_action(self, result=None) -> None:
        """The action wrote tensors outside the ops (gradients, a parameter update): those versions are its own,
        not untraced writes of the function.  A tensor it returned (clip_grad_norm_'s norm) is its own too: used
        by the function, it is a break (the graph would return this call's value)."""
        for entry in self.storages.values():
            entry[1] = entry[0].version
        if isinstance(result, Tensor):
            self.keep.append(result)
            self.action_results.add(id(result))

    def graph_break(self, reason: str, tensor=None) -> None:
        if tensor is not None and tensor is self.last_break_tensor and self.ops_since_break == 0:
            return  # bool(t) then t.item(): one read, one break
        if tensor is not None and id(tensor) not in self.value_of and not self.explain:
            pass
        self.last_break_tensor = tensor
        self.ops_since_break = 0
        source = user_source()
        self.breaks.append(BreakReason(reason, source))
        if self.fullgraph:
            raise Unsupported(f"graph break (fullgraph=True): {reason}" + (f"\n  at {source}" if source else ""))
        if self.explain:
            if self.graph.call_nodes:
                self.graphs.append(Graph())
                self.segment_nodes = set()
            return
        if self.split and tensor is not None and reason.startswith(READ_BREAKS) and not self.actions:
            # a value read into Python: this segment ends with it; the next one is guarded on it
            value = self.resolve(tensor)
            self.reads.append((value, np.array(tensor._data, copy=True), self.breaks[-1]))
            self.graphs.append(Graph())
            self.segment_nodes = set()
            self.segment_grad_mode.append(state.enabled)
            return
        self.broken = True
        _dispatch.tracer = self.previous  # the rest of this call runs eagerly, unrecorded

    # ------------------------------------------------------------ finishing
    def finish(self, result):
        """Checks that need the whole run, then the output node.  Returns False when the capture broke."""

        if not self.broken or self.explain:
            for storage, expected in self.storages.values():
                if storage.version != expected:
                    self.graph_break("a tensor was written in place outside ember's dispatch (out=, no-grad "
                                     "index assignment, .data=)")
                    break
            if _host_random_state() != self._host_random:
                self.graph_break("Python's or NumPy's global random generator drew during the call (random.random(), "
                                 "np.random.rand()): a replay would repeat this call's decision")
            if self.untraced_draw:
                self.graph_break("a random factory (randn, rand, randint...) ran untraced: its values would be "
                                 "frozen into the graph")
            if any(array_digest(tensor._data) != digest for tensor, digest in self.exposed):
                self.graph_break("a tensor's .numpy() array was written (or the tensor changed after it was read): "
                                 "a replay would not make that write")
            if len(self.inference_modes) > 1:
                self.graph_break("inference_mode around part of a compiled function: a replay could not make just "
                                 "those results inference tensors")
        if self.broken and not self.explain:
            return False
        for tensor, node in self.random_nodes:  # drawn, then made a leaf that requires grad
            node.tensor._requires_grad = tensor._requires_grad
        inside = self.inference_modes == {True} and not self.entry_inference
        for graph in self.graphs:
            graph.inference = inside
        self.used_reads: set = set()
        try:
            structure = self._output_structure(result)
        except _UnsupportedOutput as error:
            self.graph_break(str(error))
            return not self.broken or self.explain
        if self.final_reads and (self.after_read or len(self.used_reads) != len(self.final_reads)):
            self.graph_break("Tensor.item(): a tensor value read into Python (code ran after it, or its value is "
                             "not returned as it is)")
        if self.broken and not self.explain:  # (an output the graph cannot give: an action's result)
            return False
        self.graph.output = Node("output", "output", structure=structure)
        return True

    def _output_structure(self, value):
        if type(value) is float and id(value) in self.final_reads:
            tensor = self.final_reads[id(value)][1]
            self.used_reads.add(id(value))
            return ReadOf(self.resolve(tensor))
        if isinstance(value, Tensor):
            if id(value._storage) in self.written_storages and id(value) not in self.mutated:
                owner = self.internal_storage.get(id(value._storage))
                if owner is not None and owner.node.kind in ("placeholder", "external") and not getattr(
                        owner.node, "created", False):
                    # eager returns an alias of the caller's tensor (`x[:, 0].mul_(2); return x[0]`), a replay a
                    # view of the written value, which its end copies into the caller's tensor
                    raise _UnsupportedOutput("a returned view of an input, parameter or buffer written in place: a "
                                             "replay would return a copy of it, not an alias")
            written = self.mutated.get(id(value))
            if written is not None and len(self.graphs) == 1:
                # an input written in place and returned (`x.add_(1); return x`): eager returns x itself, so
                # the replay returns the placeholder, which the write-back has updated
                return written[0]
            return self.resolve(value)
        if isinstance(value, tuple):
            items = [self._output_structure(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
        if isinstance(value, list):
            return [self._output_structure(v) for v in value]
        if isinstance(value, dict) and type(value) is not dict or _is_dataclass_instance(value):
            # a dict subclass (ModelOutput) or a dataclass: rebuilt as its own type at replay
            items = {k: self._output_structure(v) for k, v in value.items()} if isinstance(value, dict) else None
            names = (vars(value) if hasattr(value, "__dict__") else {} if isinstance(value, dict)
                     else {f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
            attrs = {k: self._output_structure(v) for k, v in names.items()}
            return Rebuilt(type(value), items, attrs, getattr(value, "default_factory", None))
        if isinstance(value, dict):
            return {k: self._output_structure(v) for k, v in value.items()}
        if isinstance(value, _STATIC_TYPES) or type(value).__module__.startswith("ember"):
            return value
        raise _UnsupportedOutput(f"return value of type {type(value).__name__} is not supported")


def _is_dataclass_instance(value) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


class _UnsupportedOutput(Exception):
    pass


def name_arrays(structure, values) -> None:
    """Give each ArrayArg the name of its graph value (for graph.code)."""
    if isinstance(structure, ArrayArg):
        structure.name = values[structure.position].name
    elif isinstance(structure, (tuple, list)):
        for item in structure:
            name_arrays(item, values)
    elif isinstance(structure, dict):
        for item in structure.values():
            name_arrays(item, values)


def _describe_external(tensor) -> str:
    kind = "parameter" if tensor._is_param else "tensor"
    return f"{kind} {tensor._dtype.name}{list(tensor._data.shape)}"


def flatten_tensors(args, kwargs):
    """(path, tensor) for every tensor in the call's arguments, in a fixed order."""
    found = []

    def walk(value, path):
        if isinstance(value, Tensor):
            found.append((path, value))
        elif isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}[{key!r}]")

    for index, arg in enumerate(args):
        walk(arg, f"args[{index}]")
    for key, arg in kwargs.items():
        walk(arg, f"kwargs[{key!r}]")
    return found
