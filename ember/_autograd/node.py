"""Autograd graph nodes: what `tensor.grad_fn` is.

Every differentiable op call records one `OpNode` whose class is named like
torch's (`MulBackward0`).  It holds the edges to the nodes of its inputs
(`next_functions`), what the op declared it saves (inputs and/or result, with
their versions), and the input shapes and dtypes so that gradients can be
summed back and cast centrally: see NOTE [ Gradient unbroadcasting ].
Leaves that require grad end in an `AccumulateGrad` node.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import sys
import traceback

from .grad_mode import no_grad, state

SAME_DTYPE = object()  # Tensor._grad_dtype's default: .grad has the tensor's own dtype (Tensor.grad_dtype)

_sequence = itertools.count()

# Set by ember._tensor at import: builds a Tensor from (array, dtype, device, storage).
tensor_factory = None
# Set by ember._tensor at import: a version counter's value from (storage, counter); NOTE [ Version counters ].
counter_version = None

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


# Nodes that torch defines in C++ outside the generated ones report a qualified name() (their type name is plain).
_QUALIFIED_NAMES = {name: "torch::autograd::" + name
                    for name in ("AccumulateGrad", "CopySlices", "CopyBackwards", "Error")}


class Node:
    """A function of the backward graph: takes output gradients, returns input gradients per edge."""

    __slots__ = ("next_functions", "_sequence_nr", "_tensor_hooks", "_pre_hooks", "_post_hooks", "_retain_hooks",
                 "_trace", "_metadata", "__weakref__")

    def __init__(self) -> None:
        self.next_functions = ()
        self._sequence_nr = next(_sequence)
        self._tensor_hooks = None  # {output_nr: [hook, ...]} from Tensor.register_hook on non-leaves
        self._retain_hooks = None  # {output_nr: hook} from retain_grad, run after the others
        self._pre_hooks = None
        self._post_hooks = None
        self._trace = forward_trace() if state.anomaly else None
        self._metadata = None

    @property
    def metadata(self) -> dict:
        """A dict for user annotations (torch's Node.metadata), created on first use."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        name = type(self).__name__
        return _QUALIFIED_NAMES.get(name, name)

    def apply(self, grads: list) -> list:
        raise NotImplementedError

    def release(self) -> None:
        """Free saved values after a backward without retain_graph."""

    def __call__(self, *grads):
        return self.apply(list(grads))

    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) runs after this node; it may return replacement grad_inputs."""
        from .hooks import RemovableHandle

        if self._post_hooks is None:
            self._post_hooks = {}
        handle = RemovableHandle(self._post_hooks)
        self._post_hooks[handle.id] = fn
        return handle

    def register_prehook(self, fn):
        """fn(grad_outputs) runs before this node; it may return replacement grad_outputs."""
        from .hooks import RemovableHandle

        if self._pre_hooks is None:
            self._pre_hooks = {}
        handle = RemovableHandle(self._pre_hooks)
        self._pre_hooks[handle.id] = fn
        return handle

    def _register_tensor_hook(self, output_nr: int, fn):
        from .hooks import RemovableHandle

        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        hooks = self._tensor_hooks.setdefault(output_nr, {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = fn
        return handle

    @property
    def num_outputs(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """The sink for a leaf tensor: adds the incoming gradient into `variable.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable) -> None:
        super().__init__()
        self.variable = variable
        # As torch's (UINT64_MAX): a ready AccumulateGrad runs before anything else, so a leaf's .grad and
        # its post-accumulate hooks (DDP's bucket all-reduce) happen as soon as its gradient is complete.
        self._sequence_nr = sys.maxsize

    def apply(self, grads: list) -> list:
        grad = grads[0]
        variable = self.variable
        if grad is None:
            return []
        wanted = variable._grad_dtype  # (Tensor.grad_dtype: a dtype the gradient is cast to, or None for any)
        if wanted is not None and wanted is not SAME_DTYPE and grad._dtype is not wanted:
            grad = grad.to(wanted)
        current = variable._grad
        if state.enabled:  # create_graph: keep the graph of the gradient itself
            variable.grad = _copy_obeying_layout(grad, variable) if current is None else current + grad
        elif current is None:
            # Keep the gradient's array only if nothing else can see it: a view or broadcast (read-only) array,
            # or the variable's own memory, is copied (torch steals only an unshared gradient laid out as
            # the variable is: NOTE [ Gradient layout ]).
            data = grad._data
            flags = getattr(data, "flags", None)
            shared = getattr(data, "base", None) is not None or (flags is not None and not flags.writeable)
            if shared or grad._storage is variable._storage or (state.grad_layout_enforced
                                                                 and not _obeys_layout(data, variable._data)):
                grad = _copy_obeying_layout(grad, variable)
            variable._grad = grad.detach()
        elif current._requires_grad:
            variable.grad = current + grad.detach()
        elif (current._dtype is grad._dtype and current._data.shape == grad._data.shape
              and getattr(current._data, "flags", None) is not None and current._data.flags.writeable
              and getattr(grad._data, "flags", None) is not None):  # (a sparse gradient has no flags)
            current._data += grad._data  # accumulate in place, as torch does, without a dispatch
            current._bump_version()
        elif current.is_sparse and not grad.is_sparse:  # torch: a dense gradient replaces sparse + dense
            variable._grad = grad.detach() + current
        else:
            current.add_(grad)
        hooks = variable._post_accumulate_hooks
        if hooks:
            for hook in list(hooks.values()):
                result = hook(variable)
                if result is not None:  # torch's messages: a non-tensor is checked first
                    if not hasattr(result, "_data"):
                        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return []


# NOTE [ Gradient layout ]
# As torch's AccumulateGrad (its "layout contract"), a leaf's .grad is laid out as the leaf: with the leaf's
# strides when the leaf is non-overlapping and dense (a transposed weight gets a transposed gradient, a
# contiguous one a contiguous gradient whatever layout the backward produced), else contiguous.
def _leaf_order(variable_array):
    from .._ops._shapes import array_order, is_non_overlapping_and_dense

    if not is_non_overlapping_and_dense(variable_array):
        return None
    return array_order(variable_array)


def _obeys_layout(grad_array, variable_array) -> bool:
    flags = getattr(variable_array, "flags", None)
    if flags is None or getattr(grad_array, "flags", None) is None:
        return True  # the meta device: no layout
    if flags.c_contiguous:
        return grad_array.flags.c_contiguous
    from .._ops._shapes import is_non_overlapping_and_dense

    if not is_non_overlapping_and_dense(variable_array):
        return grad_array.flags.c_contiguous
    return all(size == 1 or g // grad_array.itemsize == v // variable_array.itemsize
               for size, g, v in zip(variable_array.shape, grad_array.strides, variable_array.strides))


def _copy_obeying_layout(grad, variable):
    """A copy of `grad` laid out as `variable` asks (NOTE [ Gradient layout ]); differentiable, as torch's
    new_empty_strided().copy_() (CopyBackwards)."""
    from .._dispatch import device_module
    from .._ops._shapes import empty_in_order

    data = grad._data
    if getattr(data, "flags", None) is None or getattr(variable._data, "flags", None) is None:
        return grad.clone()  # the meta device, or a sparse gradient or variable: no strides to follow
    order = _leaf_order(variable._data) if not variable._data.flags.c_contiguous else None
    array = empty_in_order(device_module(grad._device), data.shape, data.dtype, order)
    target = tensor_factory(array, grad._dtype, grad._device)
    if state.enabled and grad._requires_grad:
        return target.copy_(grad)
    array[...] = data  # a plain copy: no graph to keep
    return target


def forward_trace() -> list:
    """The user's stack at node creation (anomaly mode), without ember's own frames at its end."""
    frames = traceback.extract_stack()[:-2]
    while frames and frames[-1].filename.startswith(_PACKAGE_DIR):
        frames.pop()
    return traceback.format_list(frames)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def forward_name(node) -> str:
    """torch names the producer of a modified tensor by its forward op: MulBackward0 -> Mul."""
    return re.sub(r"Backward\d*$", "", node.name())


def version_error(tensor, producer, saved_version: int, output_nr: int = 0) -> RuntimeError:
    """torch's error for a saved tensor modified in place; `producer` is the node that made it (None: a leaf)."""
    shape = "[" + ", ".join(str(n) for n in tensor.shape) + "]"
    kind = tensor.type() if hasattr(tensor, "type") else "Tensor"
    clause = f", which is output {output_nr} of {forward_name(producer)}," if producer is not None else ""
    if state.anomaly:
        hint = ("Hint: the backtrace further above shows the operation that failed to compute its gradient. The "
                "variable in question was changed in there or anywhere later. Good luck!")
    else:
        hint = ("Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{kind} {shape}]{clause} is at version {tensor._version}; expected version {saved_version} instead. "
        + hint
    )


def input_version_error(tensor, saved_version: int) -> RuntimeError:
    """A saved input was modified: torch names the op that now produces it (its current grad_fn; a view's is
    regenerated from its base, AsStrided, whatever the grad mode)."""
    if tensor._base is not None:
        from .grad_mode import enable_grad

        with enable_grad():
            producer = tensor.grad_fn
    else:
        producer = tensor._grad_fn
    return version_error(tensor, producer, saved_version, tensor._output_nr if producer is not None else 0)


class SavedTensor:
    """A tensor saved through `saved_tensors_hooks`: the packed object, and how to restore the autograd
    identity of what unpacking returns.  As in torch, no version check is possible through hooks."""

    __slots__ = ("packed", "unpack_hook", "grad_fn", "output_nr", "accumulator", "is_output")

    def __init__(self, tensor, hooks, is_output: bool = False) -> None:
        pack_hook, self.unpack_hook = hooks
        self.is_output = is_output
        self.output_nr = tensor._output_nr
        self.grad_fn = None if is_output else tensor._grad_fn
        self.accumulator = tensor._grad_accumulator() if tensor._requires_grad and tensor._grad_fn is None else None
        with no_grad():  # as torch, a pack hook runs without recording a graph
            self.packed = pack_hook(tensor)

    def unpack(self, node):
        value = self.unpack_hook(self.packed)
        if not hasattr(value, "_data"):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(value).__name__}"
            )
        grad_fn = self.grad_fn
        if self.is_output:
            grad_fn = node if value._dtype.category >= 2 else None
        if grad_fn is None and self.accumulator is None:
            return value
        alias = tensor_factory(value._data, value._dtype, value._device, value._storage)
        alias._requires_grad = True
        if grad_fn is not None:
            alias._grad_fn = grad_fn
            alias._output_nr = self.output_nr
        else:
            alias._accumulator = self.accumulator
        return alias


class _CheckedSaved(SavedTensor):
    """A saved input kept as it was (version-checked at use) beside one repacked by _raw_saved hooks."""

    __slots__ = ("value", "version")

    def __init__(self, value, version) -> None:  # noqa: D107 - no packing: the value itself is kept
        self.value = value
        self.version = version

    def unpack(self, node):
        if self.version is not None and self.value._version != self.version:
            raise input_version_error(self.value, self.version)
        return self.value


class RawSavedTensor:
    """torch._C._autograd.SavedTensor: one value a node saved (`grad_fn._raw_saved_self`, `_other`, `_result`).
    register_hooks(pack, unpack) packs it now and unpacks it when backward reads it, as SavedVariable's hooks
    (no version check through hooks, as there)."""

    __slots__ = ("_node", "_input", "_output")

    def __init__(self, node, input_index, output_index) -> None:
        self._node, self._input, self._output = node, input_index, output_index

    def unpack(self):
        node = self._node
        if self._output is not None:
            return node.saved_output(self._output)
        return node.inputs[self._input]

    @property
    def data(self):
        return self.unpack().detach()

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("register_hooks(): incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: collections.abc.Callable, "
                            "arg1: collections.abc.Callable) -> None")
        node, hooks = self._node, (pack_hook, unpack_hook)
        if self._output is not None:
            entries = list(node._result)
            if type(entries[self._output]) is SavedTensor:
                raise RuntimeError(_HOOKS_SET)
            value = node.saved_output(self._output)
            entries[self._output] = SavedTensor(_output_alias(node, self._output, value), hooks, is_output=True)
            node._result = tuple(entries)
            return
        saved, versions = node._saved, node._saved_versions
        if versions is None and type(saved[self._input]) is SavedTensor:
            raise RuntimeError(_HOOKS_SET)
        value = node.inputs[self._input]
        entries = []
        for index, entry in enumerate(saved):
            if index == self._input:
                entries.append(SavedTensor(value, hooks))
            elif versions is None or not hasattr(entry, "_storage"):
                entries.append(entry)  # packed already, or a number
            else:
                entries.append(_CheckedSaved(entry, versions[index]))
        node._saved, node._saved_versions, node._unpacked = tuple(entries), None, None


_HOOKS_SET = ("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of "
              "hooks is allowed at a time.")


class OpNode(Node):
    """The backward of one op call.  Subclassed per op so that `type(grad_fn).__name__` reads like torch's."""

    __slots__ = ("op", "params", "input_meta", "needs_input_grad", "_saved", "_saved_versions", "_result",
                 "_released", "_output_count", "_unpacked")

    def __init__(self, op, params, args, results, input_meta, needs_input_grad) -> None:
        Node.__init__(self)
        self.op = op
        self.params = params
        self.input_meta = input_meta
        self.needs_input_grad = needs_input_grad
        self._released = False
        self._output_count = len(results)
        self._unpacked = None  # inputs unpacked through saved-tensor hooks, kept for one backward call
        saves = op.saves
        hooks = state.saved_hooks[-1] if state.saved_hooks else None
        if saves & 1:
            self._saved = args
            reads = op.grad_reads
            # only the inputs a needed gradient reads are version-checked (all of them without grad_reads)
            needed = None if reads is None else _needed_inputs(reads, needs_input_grad)
            versions = []
            for i, a in enumerate(args):
                storage = getattr(a, "_storage", None)
                if storage is None or (needed is not None and i not in needed):
                    versions.append(None)
                elif storage.inference:  # no version counter to check: torch refuses to save it
                    raise RuntimeError(INFERENCE_SAVE_MESSAGE)
                else:  # Tensor._version, inlined (one call per saved operand of every recorded op)
                    counter = a._counter
                    versions.append(storage.version - storage.detached_writes if counter is None else counter.value)
            self._saved_versions = tuple(versions)
            if hooks is not None:  # see SavedTensor; versions None marks the packed form
                self._saved = tuple(SavedTensor(a, hooks) if hasattr(a, "_storage") else a for a in args)
                self._saved_versions = None
        else:
            self._saved = None
            self._saved_versions = None
        if saves & 2:
            # Save the result's data, not the Tensor: the Tensor points back at this node (a cycle).
            self._result = tuple((r._data, r._storage, r._counter, r._version, r._dtype, r._device) for r in results)
            if hooks is not None:
                self._result = tuple(SavedTensor(_output_alias(self, nr, r), hooks, is_output=True)
                                     for nr, r in enumerate(results))
        else:
            self._result = None

    # ---- the ctx interface used by backward formulas ----
    @property
    def inputs(self) -> tuple:
        saved = self._saved
        if saved is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            raise RuntimeError(f"{self.name()} did not save its inputs")
        if self._saved_versions is None:
            if self._unpacked is None:
                self._unpacked = tuple(a.unpack(self) if isinstance(a, SavedTensor) else a for a in saved)
            return self._unpacked
        for value, version in zip(saved, self._saved_versions):
            if version is not None and value._version != version:
                raise input_version_error(value, version)
        return saved

    @property
    def result(self):
        results = self._result
        if results is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            raise RuntimeError(f"{self.name()} did not save its result")
        unpacked = []
        for nr, entry in enumerate(results):
            if type(entry) is SavedTensor:  # saved through hooks (saved_tensors_hooks, _raw_saved_result)
                unpacked.append(entry.unpack(self))
                continue
            data, storage, counter, version, dtype, device = entry
            tensor = _saved_result_tensor(data, storage, counter, dtype, device)
            if counter_version(storage, counter) != version:
                raise version_error(tensor, self, version, nr)
            if dtype.category >= 2:
                tensor._grad_fn = self
                tensor._output_nr = nr
                tensor._requires_grad = True
            unpacked.append(tensor)
        return unpacked[0] if len(unpacked) == 1 else tuple(unpacked)

    def saved_output(self, nr: int):
        """Output `nr` of the saved result, checking only that output's version.

        For a backward that needs some outputs but not others: batch norm needs mean and rstd, not y, and
        torch lets y be modified in place (BatchNorm followed by ReLU(inplace=True)).
        """
        results = self._result
        if results is None:
            return self.result  # raises the freed / not-saved error
        saved = results[nr]
        if type(saved) is SavedTensor:
            return saved.unpack(self)
        data, storage, counter, version, dtype, device = saved
        tensor = _saved_result_tensor(data, storage, counter, dtype, device)
        if counter_version(storage, counter) != version:
            raise version_error(tensor, self, version, nr)
        if dtype.category >= 2:
            tensor._grad_fn = self
            tensor._output_nr = nr
            tensor._requires_grad = True
        return tensor

    def __getattr__(self, name: str):
        """torch's saved-value accessors: `_saved_result`, and `_saved_self` / `_saved_other` for the first
        two inputs of an op that saves its inputs."""
        saves = self.op.saves
        if name == "_saved_result" and saves & 2:
            return self.result
        index = {"_saved_self": 0, "_saved_other": 1}.get(name)
        if index is not None and saves & 1 and index < len(self.input_meta):
            return self.inputs[index]
        if name == "_raw_saved_result" and saves & 2:
            return RawSavedTensor(self, None, 0)
        index = {"_raw_saved_self": 0, "_raw_saved_other": 1}.get(name)
        if index is not None and saves & 1 and index < len(self.input_meta):
            return RawSavedTensor(self, index, None)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def num_outputs(self) -> int:
        return self._output_count

    def release(self) -> None:
        self._saved = None
        self._result = None
        self._released = True

    def apply(self, grads: list) -> list:
        if self._released and self.op.saves:
            raise RuntimeError(FREED_MESSAGE)
        ctx = self
        if self.op.opmath_backward and grads[0] is not None and grads[0]._dtype.name in _HALF_NAMES:
            ctx = _OpmathContext(self)  # see OpDef.opmath_backward
            grads = [_widened(g) for g in grads]
        try:
            if self._output_count == 1:
                out = self.op.backward(ctx, grads[0])
            else:
                grads = [g if g is not None else _zeros_for(self, nr) for nr, g in enumerate(grads)]
                out = self.op.backward(ctx, tuple(_widened(g) for g in grads) if ctx is not self else tuple(grads))
        finally:
            self._unpacked = None
        if type(out) is not tuple and type(out) is not list:
            out = (out,)
        return [
            None if meta is None or grad is None else _fit_gradient(grad, meta)
            for meta, grad in zip(self.input_meta, out)
        ]


_HALF_NAMES = frozenset(("float16", "bfloat16"))


def _widened(value):
    """A float16/bfloat16 tensor as float32 (a differentiable cast, so create_graph still works); else itself."""
    return value.float() if getattr(value, "_dtype", None) is not None and value._dtype.name in _HALF_NAMES \
        else value


class _OpmathContext:
    """The ctx an opmath_backward formula sees for a float16/bfloat16 node: the node, with its saved inputs and
    outputs widened to float32.  The engine casts the float32 gradients it returns to the inputs' dtypes, so
    each is rounded once, as by torch's backward kernels."""

    __slots__ = ("_node",)

    def __init__(self, node) -> None:
        self._node = node

    def __getattr__(self, name: str):
        return getattr(self._node, name)

    @property
    def inputs(self) -> tuple:
        return tuple(_widened(a) for a in self._node.inputs)

    @property
    def result(self):
        result = self._node.result
        return tuple(_widened(r) for r in result) if type(result) is tuple else _widened(result)

    def saved_output(self, nr: int):
        return _widened(self._node.saved_output(nr))


def keep_original_input(node, tensor) -> None:
    """`tensor` is about to be overwritten by the in-place op whose node is `node`: if the node saved it as an
    input, save a copy of its current values instead, with its autograd identity (torch's original self), so the
    backward neither reads the new values nor fails the version check."""
    saved = getattr(node, "_saved", None)
    if not saved or node._saved_versions is None or not any(a is tensor for a in saved):
        return
    data = tensor._data
    original = tensor_factory(data.copy() if hasattr(data, "copy") else data, tensor._dtype, tensor._device)
    if tensor._requires_grad:
        original._requires_grad = True
        if tensor._grad_fn is not None:
            original._grad_fn = tensor._grad_fn
            original._output_nr = tensor._output_nr
        else:
            original._accumulator = tensor._grad_accumulator()
    node._saved = tuple(original if a is tensor else a for a in saved)
    node._saved_versions = tuple(0 if a is tensor else v for a, v in zip(saved, node._saved_versions))


INFERENCE_SAVE_MESSAGE = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in "
    "computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it "
    "in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.")


@functools.lru_cache(maxsize=256)
def _needed_inputs(reads: tuple, needs_input_grad: tuple) -> frozenset:
    """The operands that the needed gradients read (OpDef.grad_reads), per op and needs pattern."""
    return frozenset(i for j, flag in enumerate(needs_input_grad) if flag and j < len(reads) for i in reads[j])


def _saved_result_tensor(data, storage, counter, dtype, device):
    tensor = tensor_factory(data, dtype, device, storage)
    if counter is not None:  # NOTE [ Version counters ] in ember/_tensor.py
        tensor._counter = counter
    return tensor


def _output_alias(node: OpNode, output_nr: int, result):
    """What a pack hook sees for a saved result: the output tensor, grad_fn included, as torch passes it."""
    alias = tensor_factory(result._data, result._dtype, result._device, result._storage)
    if result._dtype.category >= 2:
        alias._grad_fn = node
        alias._output_nr = output_nr
        alias._requires_grad = True
    return alias


def _zeros_for(node: OpNode, output_nr: int):
    saved = node._result[output_nr] if node._result else (None,) * 6
    if type(saved) is SavedTensor:
        unpacked = saved.unpack(node)
        saved = (unpacked._data, None, None, None, unpacked._dtype, unpacked._device)
    data, _storage, _counter, _version, dtype, device = saved
    if data is None:
        raise RuntimeError(f"{node.name()}: missing gradient for output {output_nr}")
    from .. import _tensor

    return _tensor.zeros_for(data.shape, dtype, device)


# NOTE [ Gradient unbroadcasting ]
# Dispatch broadcasts and promotes operands once, so a backward formula sees the
# broadcast shape and the computation dtype.  Here, in one place, a gradient is
# summed back over the broadcast dimensions to its input's shape, a complex
# gradient of a real input keeps its real part, and the result is cast to the
# input's dtype.  Every formula is written for the same-shape, same-dtype case.
def _fit_gradient(grad, meta):
    shape, dtype = meta
    if grad._data.shape != shape:
        grad = sum_to_shape(grad, shape)
    if grad._dtype is not dtype:
        if grad._dtype.is_complex and not dtype.is_complex:
            grad = grad.real
        grad = grad.to(dtype)
    return grad


def sum_to_shape(grad, shape: tuple):
    """Sum `grad` over the dimensions that broadcasting added or expanded, giving `shape`."""
    lead = grad.ndim - len(shape)
    dims = list(range(lead))
    dims += [lead + i for i, n in enumerate(shape) if n == 1 and grad.shape[lead + i] != 1]
    if dims:
        grad = grad.sum(dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


_node_classes: dict = {}


def node_class(grad_name: str):
    """One OpNode subclass per backward name, e.g. MulBackward0."""
    cls = _node_classes.get(grad_name)
    if cls is None:
        cls = type(grad_name, (OpNode,), {"__slots__": ()})
        _node_classes[grad_name] = cls
    return cls


def name_node(tensor, grad_name: str) -> None:
    """Give the node that made `tensor` torch's name `grad_name`, where ember reaches a result by other ops than
    torch's: a loss decomposed into several ops (torch: one kernel, `grad_fn=<NllLossBackward0>` in
    `print(loss)`), linear / matmul as one fused op (torch: addmm or mm and a view).  Only the class changes:
    node classes differ by name only (the same slots), so the backward is untouched.  No-op for a tensor
    without a recorded op node (no grad, a leaf, a custom Function's output)."""
    node = getattr(tensor, "_grad_fn", None)
    kind = type(node)
    if kind.__name__ != grad_name and _node_classes.get(kind.__name__) is kind:  # one of node_class's classes
        node.__class__ = node_class(grad_name)
