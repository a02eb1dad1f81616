"""Autograd graph nodes: what `tensor.grad_fn` is.

Every differentiable op call records one `OpNode` whose class is named like
torch's (`MulBackward0`).  It holds the edges to the nodes of its inputs
(`next_functions`), what the op declared it saves (inputs and/or result, with
their versions), and the input shapes and dtypes so that gradients can be
summed back and cast centrally: see NOTE [ Gradient unbroadcasting ].
Leaves that require grad end in an `AccumulateGrad` node.
"""

from __future__ import annotations

import itertools
import traceback

from .grad_mode import state

_sequence = itertools.count()

# Set by ember._tensor at import: builds a Tensor from (array, dtype, device, storage).
tensor_factory = None

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


class Node:
    """A function of the backward graph: takes output gradients, returns input gradients per edge."""

    __slots__ = ("next_functions", "_sequence_nr", "_tensor_hooks", "_pre_hooks", "_post_hooks", "_retain_hooks",
                 "_trace", "metadata", "__weakref__")

    def __init__(self) -> None:
        self.next_functions = ()
        self._sequence_nr = next(_sequence)
        self._tensor_hooks = None  # {output_nr: [hook, ...]} from Tensor.register_hook on non-leaves
        self._retain_hooks = None  # {output_nr: hook} from retain_grad, run after the others
        self._pre_hooks = None
        self._post_hooks = None
        self._trace = traceback.format_stack()[:-3] if state.anomaly else None
        self.metadata = {}

    def name(self) -> str:
        return type(self).__name__

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

    def apply(self, grads: list) -> list:
        grad = grads[0]
        variable = self.variable
        if grad is None:
            return []
        if state.enabled:  # create_graph: keep the graph of the gradient itself
            variable.grad = grad if variable.grad is None else variable.grad + grad
        elif variable.grad is None:
            variable.grad = grad.detach()
        elif variable.grad.requires_grad:
            variable.grad = variable.grad + grad.detach()
        else:
            variable.grad.add_(grad)
        hooks = variable._post_accumulate_hooks
        if hooks:
            for hook in list(hooks.values()):
                hook(variable)
        return []


def version_error(tensor, node: Node, saved_version: int, output_nr: int = 0) -> RuntimeError:
    shape = "[" + ", ".join(str(n) for n in tensor.shape) + "]"
    kind = type(tensor)._type_name(tensor) if hasattr(type(tensor), "_type_name") else "Tensor"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an inplace operation: "
        f"[{kind} {shape}], which is output {output_nr} of {node.name()}, is at version {tensor._version}; "
        f"expected version {saved_version} instead. Hint: enable anomaly detection to find the operation that "
        "failed to compute its gradient, with torch.autograd.set_detect_anomaly(True)."
    )


class OpNode(Node):
    """The backward of one op call.  Subclassed per op so that `type(grad_fn).__name__` reads like torch's."""

    __slots__ = ("op", "params", "input_meta", "needs_input_grad", "_saved", "_saved_versions", "_result",
                 "_released", "_output_count")

    def __init__(self, op, params, args, results, input_meta, needs_input_grad) -> None:
        Node.__init__(self)
        self.op = op
        self.params = params
        self.input_meta = input_meta
        self.needs_input_grad = needs_input_grad
        self._released = False
        self._output_count = len(results)
        saves = op.saves
        if saves & 1:
            self._saved = args
            self._saved_versions = tuple(a._storage.version if hasattr(a, "_storage") else None for a in args)
        else:
            self._saved = None
            self._saved_versions = None
        if saves & 2:
            # Save the result's data, not the Tensor: the Tensor points back at this node (a cycle).
            self._result = tuple((r._data, r._storage, r._storage.version, r._dtype, r._device) for r in results)
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
        for value, version in zip(saved, self._saved_versions):
            if version is not None and value._storage.version != version:
                raise version_error(value, self, version)
        return saved

    @property
    def result(self):
        results = self._result
        if results is None:
            if self._released:
                raise RuntimeError(FREED_MESSAGE)
            raise RuntimeError(f"{self.name()} did not save its result")
        unpacked = []
        for nr, (data, storage, version, dtype, device) in enumerate(results):
            if storage.version != version:
                raise version_error(tensor_factory(data, dtype, device, storage), self, version, nr)
            tensor = tensor_factory(data, dtype, device, storage)
            if dtype.category >= 2:
                tensor._grad_fn = self
                tensor._output_nr = nr
                tensor._requires_grad = True
            unpacked.append(tensor)
        return unpacked[0] if len(unpacked) == 1 else tuple(unpacked)

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
        if self._output_count == 1:
            out = self.op.backward(self, grads[0])
        else:
            grads = [g if g is not None else _zeros_for(self, nr) for nr, g in enumerate(grads)]
            out = self.op.backward(self, tuple(grads))
        if type(out) is not tuple and type(out) is not list:
            out = (out,)
        return [
            None if meta is None or grad is None else _fit_gradient(grad, meta)
            for meta, grad in zip(self.input_meta, out)
        ]


def _zeros_for(node: OpNode, output_nr: int):
    data, _storage, _version, dtype, device = node._result[output_nr] if node._result else (None,) * 5
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
