"""Custom autograd Functions (torch.autograd.Function) on the same engine as built-in ops.

`MyFn.apply(*args)` runs `MyFn.forward` with grad recording off and records one
node for the call, exactly as dispatch records an op: the node *is* the `ctx`
the user's forward saw (as in torch, `out.grad_fn is ctx`), an instance of the
class `MyFnBackward` that the metaclass makes per Function.  The engine runs it
like any other node; its `apply` calls the user's `backward` and then checks
and fits the returned gradients as torch does (count, None for non-tensor
inputs, shapes, broadcast sums and dtype casts).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import sys
import warnings

from .grad_mode import no_grad, state
from .node import (
    FREED_MESSAGE,
    INFERENCE_SAVE_MESSAGE,
    Node,
    SavedTensor,
    _fit_gradient,
    input_version_error,
    version_error,
)

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable", "InplaceFunction"]

_function_ids = itertools.count()


class FunctionCtx:
    """What `ctx` offers inside forward / setup_context."""

    def save_for_backward(self, *tensors) -> None:
        """Save tensors (or None) for backward; they come back version-checked from `ctx.saved_tensors`."""
        self.to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        self.saved_for_forward = tensors

    def mark_dirty(self, *args) -> None:
        """Declare the inputs that forward modified in place."""
        self.dirty_tensors = args

    def mark_shared_storage(self, *pairs) -> None:
        warnings.warn("mark_shared_storage is deprecated. Tensors with shared storages are automatically tracked. "
                      "Note that calls to `set_()` are not tracked", stacklevel=2)

    def mark_non_differentiable(self, *args) -> None:
        """Declare outputs that get no grad_fn; their gradients in backward are zeros (or None)."""
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether backward gets zeros (True, the default) or None for outputs that got no gradient."""
        self.materialize_grads = value


class BackwardCFunction(Node, FunctionCtx):
    """The node (and ctx) of one custom Function call; subclassed per Function as `<Name>Backward`."""

    _forward_cls = None

    def __init__(self) -> None:
        Node.__init__(self)
        self.to_save = None
        self.dirty_tensors = None
        self.non_differentiable = None
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._saved_values = None  # [(tensor, version, is_output)] or [SavedTensor]; None when nothing saved
        self._released = False
        self._output_meta = ()  # per forward output: (shape, dtype, device) for tensors, else None
        self._input_meta = ()  # per tensor input: (shape, dtype) where it needs grad, else None
        self._is_tensor_input = ()  # per forward argument
        self._jvp_inputs = None  # inside a forward-mode torch.func transform: the tensor inputs' (shape, dtype, device)

    @property
    def num_outputs(self) -> int:
        return len(self._output_meta)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to save_for_backward, checked against in-place modification since."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved_values is None:
            return ()
        out = []
        for entry in self._saved_values:
            if type(entry) is SavedTensor:
                out.append(entry.unpack(self))
                continue
            tensor, version, is_output = entry
            if tensor is not None and tensor._version != version:
                if is_output:
                    raise version_error(tensor, self, version, tensor._output_nr)
                raise input_version_error(tensor, version)
            out.append(tensor)
        return tuple(out)

    saved_variables = saved_tensors

    def release(self) -> None:
        if self._saved_values is not None:
            self._saved_values = None
            self._released = True

    def apply(self, grads: list) -> list:
        grads = self._materialize(grads)
        forward_cls = self._forward_cls
        backward_fn, vjp_fn = forward_cls.backward, forward_cls.vjp
        if backward_fn is not Function.backward and vjp_fn is not Function.vjp:
            raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                               "should only implement one of them.")
        user_fn = vjp_fn if vjp_fn is not Function.vjp else backward_fn
        if self._jvp_inputs is not None:  # made inside a forward-mode torch.func transform
            user_fn = functools.partial(_transposed_jvp, forward_cls)
        result = user_fn(self, *grads)
        return self._check_gradients(result)

    def __call__(self, *grads):
        return self.apply(list(grads))

    def _materialize(self, grads: list) -> list:
        if not self.materialize_grads:
            return grads
        from .._tensor import zeros_for

        return [
            zeros_for(meta[0], meta[1], meta[2]) if grad is None and meta is not None else grad
            for grad, meta in zip(grads, self._output_meta)
        ]

    def _check_gradients(self, result) -> list:
        """torch's checks on what backward returned, then one fitted gradient per tensor input."""
        if not isinstance(result, tuple):
            result = tuple(result) if isinstance(result, list) else (result,)
        expected = len(self._is_tensor_input)
        if len(result) > expected and all(g is None for g in result[expected:]):
            result = result[:expected]
        if len(result) != expected:
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients (expected "
                               f"{expected}, got {len(result)})")
        grads = []
        for position, (grad, is_tensor) in enumerate(zip(result, self._is_tensor_input)):
            if not is_tensor:
                if grad is not None:
                    raise RuntimeError(
                        f"function {self.name()} returned a gradient different than None at position {position + 1}"
                        ", but the corresponding forward input was not a Variable"
                    )
                continue
            if grad is not None and not hasattr(grad, "_data"):
                raise TypeError(f"expected Variable or None (got {type(grad).__name__})")
            grads.append(grad)
        return [self._fit(index, grad) for index, grad in enumerate(grads)]

    def _fit(self, index: int, grad):
        meta = self._input_meta[index]
        if grad is None or meta is None:
            return None
        shape = tuple(meta[0])
        if tuple(grad.shape) != shape and not _expandable(shape, tuple(grad.shape)):
            raise RuntimeError(
                f"Function {self.name()} returned an invalid gradient at index {index} - got "
                f"[{', '.join(map(str, grad.shape))}] but expected shape compatible with [{', '.join(map(str, shape))}]"
            )
        return _fit_gradient(grad, meta)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object at {hex(id(self))}>"


def _expandable(shape: tuple, desired: tuple) -> bool:
    """torch's is_expandable_to: `shape` broadcasts to `desired`."""
    if len(shape) > len(desired):
        return False
    for size, target in zip(reversed(shape), reversed(desired)):
        if size != target and size != 1:
            return False
    return True


class FunctionMeta(type):
    """Makes `<Name>Backward`, the node class of each Function, at class creation."""

    def __init__(cls, name, bases, attrs) -> None:
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        backward_cls.__module__ = "ember.autograd.function"
        backward_cls._autograd_function_id = next(_function_ids)
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom autograd operations: static `forward` and `backward`, called via `apply`.

    Example::

        >>> class Exp(Function):
        ...     @staticmethod
        ...     def forward(ctx, i):
        ...         result = i.exp()
        ...         ctx.save_for_backward(result)
        ...         return result
        ...     @staticmethod
        ...     def backward(ctx, grad_output):
        ...         result, = ctx.saved_tensors
        ...         return grad_output * result
        >>> output = Exp.apply(input)
    """

    generate_vmap_rule = False

    def __init__(self, *args, **kwargs) -> None:
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all static, so you "
            "should invoke them on the class itself. Instantiating an autograd function will raise an error in a "
            "future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd "
            "function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it with "
                                  "forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and record the call for backward."""
        uses_setup_context = cls.setup_context is not Function.setup_context
        if "ember.func._levels" in sys.modules and not cls.__module__.startswith("ember."):
            _check_transforms(cls, uses_setup_context)
        if uses_setup_context:
            bound = inspect.signature(cls.forward).bind(*args, **kwargs)
            bound.apply_defaults()
            args, kwargs = bound.args, bound.kwargs
        return _apply(cls, args, kwargs, uses_setup_context)


_EXTENDING_FUNC = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


def _check_transforms(cls, uses_setup_context: bool) -> None:
    """torch's checks of a user's Function applied inside torch.func transforms (autograd/function.py's
    Function.apply, then custom_function_call's vmap and jvp rules): setup_context style is required; under
    vmap (jacfwd and hessian vmap too) a vmap rule; under jvp a jvp.  ember's own Functions are exempt, as
    torch's custom ops and built-ins do not pass through Function.apply."""
    from ..func._levels import active_transforms

    active, vmap, forward = active_transforms()
    if not active:
        return
    if not uses_setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, grad, jvp, "
                           f"jacrev, ...), it must override the setup_context staticmethod. {_EXTENDING_FUNC}")
    has_vmap = getattr(cls, "vmap", None) is not None and "vmap" in _defined_names(cls)
    if vmap and not cls.generate_vmap_rule and not has_vmap:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap support. Please "
                           "override and implement the vmap staticmethod or set generate_vmap_rule=True. "
                           f"{_EXTENDING_FUNC}")
    if forward and cls.jvp is Function.jvp:
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")


def _innermost_transform_is_forward() -> bool:
    from ..func._levels import _running

    return bool(_running) and _running[-1].forward


def _transposed_jvp(cls, ctx, *grads):
    """The backward of a custom Function applied inside a forward-mode torch.func transform (jvp, jacfwd,
    linearize).  ember computes those by reverse passes (the double-vjp trick, func/_forward.py), which would run
    the user's backward; torch's forward mode runs the Function's jvp instead.  So here backward is the transpose
    of jvp: J^T u, the vjp of the linear map t -> jvp(ctx, t) at the cotangents u, kept differentiable in u,
    and the transform's J t is then the jvp's own (a jvp that is not the backward's transpose shows it).  During
    jvp, ctx.saved_tensors gives the save_for_forward tensors, as in ember.autograd.forward_ad."""
    from .. import autograd, zeros
    from .forward_ad import run_jvp
    from .grad_mode import enable_grad

    create_graph = state.enabled  # the transform's first reverse pass records its graph (create_graph=True)
    tangents, leaves, metas = [], [], iter(ctx._jvp_inputs)
    with enable_grad():
        for is_tensor, needs_grad in zip(ctx._is_tensor_input, ctx.needs_input_grad):
            if not is_tensor:
                tangents.append(None)
                continue
            shape, dtype, device = next(metas)
            tangent = zeros(shape, dtype=dtype, device=device)
            if needs_grad:
                tangent.requires_grad_()
                leaves.append(tangent)
            tangents.append(tangent)
        products = run_jvp(cls, ctx, tangents, len(grads))
    pairs = [(p, g) for p, g in zip(products, grads)
             if p is not None and g is not None and getattr(p, "requires_grad", False)]
    found = iter(autograd.grad([p for p, _ in pairs], leaves, [g for _, g in pairs], allow_unused=True,
                               create_graph=create_graph) if pairs and leaves else [None] * len(leaves))
    return tuple((next(found) if needs_grad else None) if is_tensor else None
                 for is_tensor, needs_grad in zip(ctx._is_tensor_input, ctx.needs_input_grad))


def _defined_names(cls) -> set:
    """Attribute names a Function subclass (or a base between it and Function) defines."""
    names: set = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(vars(klass))
    return names


class InplaceFunction(Function):
    """Kept for backward compatibility, as torch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


def _apply(cls, args: tuple, kwargs: dict, uses_setup_context: bool):
    from .._tensor import Tensor

    is_tensor = tuple(isinstance(a, Tensor) for a in args)
    tensors = [a for a, flag in zip(args, is_tensor) if flag]
    ctx = cls._backward_cls()
    ctx.needs_input_grad = tuple(flag and a.requires_grad for a, flag in zip(args, is_tensor))
    if _innermost_transform_is_forward():
        ctx._jvp_inputs = tuple((t._data.shape, t._dtype, t._device) for t in tensors)
    ctx._is_tensor_input = is_tensor
    executable = state.enabled and any(t.requires_grad for t in tensors)
    if executable:  # edges before forward: an in-place forward must not see its own effect
        from .. import _dispatch

        if _dispatch.tracer is not None:  # ember.compile records ops, and this backward is Python it cannot see
            _dispatch.capture_break(f"custom autograd.Function {cls.__name__}: its backward is Python code "
                                         "that a replay could not record")
        ctx.next_functions = tuple(t._edge() if t.requires_grad else (None, 0) for t in tensors)
        ctx._input_meta = tuple((t._data.shape, t._dtype) if t.requires_grad else None for t in tensors)
    from .. import _dispatch

    previous = state.enabled
    forward_ad = _dispatch.forward_ad
    state.enabled = False
    _dispatch.forward_ad = None  # forward runs without tangents; jvp gives them (NOTE [ Forward AD ])
    try:
        if uses_setup_context:
            output = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, output)
        else:
            output = cls.forward(ctx, *args, **kwargs)
    finally:
        state.enabled = previous
        _dispatch.forward_ad = forward_ad
    output = _process_outputs(ctx, tensors, output, executable)
    if forward_ad is not None:
        forward_ad.function_jvp(cls, ctx, args, output)
    return output


def _process_outputs(ctx, inputs: list, output, executable: bool):
    """Give the outputs their place in the graph (torch's _wrap_outputs), then save what ctx asked to save."""
    is_tuple = isinstance(output, tuple)
    outputs = list(output) if is_tuple else [output]
    dirty = _mark_dirty(ctx)
    non_differentiable = {id(t) for t in ctx.non_differentiable or ()}
    input_ids = {id(t) for t in inputs}
    ctx._output_meta = tuple(
        (o._data.shape, o._dtype, o._device) if hasattr(o, "_data") else None for o in outputs
    )
    tensor_count = sum(1 for o in outputs if hasattr(o, "_data"))
    for nr, value in enumerate(outputs):
        if not hasattr(value, "_data"):
            continue
        is_input = id(value) in input_ids
        is_modified = id(value) in dirty
        differentiable = executable and id(value) not in non_differentiable and value._dtype.category >= 2
        if not differentiable:
            outputs[nr] = _non_differentiable_output(value, is_input, is_modified)
        elif is_modified:
            _rebase(ctx, value, nr, is_input, tensor_count)
        else:
            if is_input:
                value = _alias_of_input(value)
                outputs[nr] = value
            if value._base is not None:  # torch's CreationMeta::IN_CUSTOM_FUNCTION: no in-place writes
                value.__dict__.pop("_no_grad_view", None)
                value.__dict__["_custom_function_view"] = f"Output {nr} of {type(ctx).__name__[:-len('Backward')]}"
            value._grad_fn = ctx
            value._output_nr = nr
            value._requires_grad = True
    if executable:
        _save_variables(ctx, outputs)
    return tuple(outputs) if is_tuple else outputs[0]


def _mark_dirty(ctx) -> set:
    """The ids of the tensors given to mark_dirty; their version is bumped, as torch does."""
    dirty = set()
    for position, tensor in enumerate(ctx.dirty_tensors or ()):
        if not hasattr(tensor, "_data"):
            raise TypeError(f"mark_dirty can only accept variables, but argument {position} is of type "
                            f"{type(tensor).__name__}")
        tensor._bump_version()
        dirty.add(id(tensor))
    return dirty


def _alias_of_input(tensor):
    """A returned, unmodified input comes back as a new view of it (never the same Python object)."""
    with no_grad():
        return tensor.view_as(tensor)


def _non_differentiable_output(value, is_input: bool, is_modified: bool):
    if not value.requires_grad:
        return _alias_of_input(value) if is_input and not is_modified else value
    if is_input:
        return value.detach()
    if value._base is None:
        value.detach_()
    return value


def _rebase(ctx, value, nr: int, is_input: bool, tensor_count: int) -> None:
    """An input modified in place in forward becomes an output of this node (its history is rewritten)."""
    if value._grad_fn is None and value._base is None and value._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
    if not is_input:
        warnings.warn("Only input Tensors should be given to ctx.mark_dirty(). If a Tensor is not an input, there "
                      "is no need to pass it to mark_dirty().", stacklevel=4)
    if value._base is not None:
        if tensor_count > 1:
            raise RuntimeError(
                "If your Function modifies inplace an input that is a view of another Tensor, your Function cannot "
                "return more than one Tensor. This is not supported by the current autograd engine. You should "
                "either make sure the input is not a view (using .clone() for example) or make your Function only "
                "return one Tensor (potentially splitting it into two Functions: one doing the inplace that returns "
                "a single Tensor and a second one that does the other operations). You can ask on the forum "
                "https://discuss.pytorch.org/ if you need help to do this change."
            )
        from .._ops import view_nodes
        from .._tensor import Tensor

        result = Tensor._make(value._data, value._dtype, value._device, value._storage)
        result._grad_fn = ctx
        result._output_nr = nr
        result._requires_grad = True
        view_nodes.rebase_view(value, result)
        return
    value._grad_fn = ctx
    value._output_nr = nr
    value._requires_grad = True


def _save_variables(ctx, outputs: list) -> None:
    to_save = ctx.to_save
    ctx.to_save = None
    if to_save is None:
        return
    output_ids = {id(o) for o in outputs}
    hooks = state.saved_hooks[-1] if state.saved_hooks else None
    saved = []
    for position, tensor in enumerate(to_save):
        if tensor is None:
            saved.append((None, 0, False))
            continue
        if not hasattr(tensor, "_data"):
            raise TypeError(f"save_for_backward can only save variables, but argument {position} is of type "
                            f"{type(tensor).__name__}")
        is_output = id(tensor) in output_ids
        if hooks is not None:
            saved.append(SavedTensor(tensor, hooks, is_output=is_output and tensor._grad_fn is ctx))
        else:
            if tensor._storage.inference:
                raise RuntimeError(INFERENCE_SAVE_MESSAGE)
            saved.append((tensor, tensor._version, is_output))
    ctx._saved_values = saved


# ---------------------------------------------------------------- once_differentiable


class DelayedError(Node):
    """The grad_fn of a once_differentiable backward's outputs: differentiating them again raises."""

    __slots__ = ("message", "_count")

    def __init__(self, message: str, count: int) -> None:
        super().__init__()
        self.message = message
        self._count = count

    def name(self) -> str:
        return "torch::autograd::Error"

    @property
    def num_outputs(self) -> int:
        return self._count

    def apply(self, grads: list) -> list:
        raise RuntimeError(self.message)


def once_differentiable(fn):
    """Decorate a backward that is not itself differentiable: it runs under no_grad, and double backward through
    its results raises torch's error."""

    @functools.wraps(fn)
    def wrapper(ctx, *args, **kwargs):
        with no_grad():
            outputs = fn(ctx, *args, **kwargs)
        if not state.enabled:
            return outputs
        if not any(hasattr(a, "_data") and a.requires_grad for a in args):
            return outputs
        was_tuple = isinstance(outputs, tuple)
        values = outputs if was_tuple else (outputs,)
        node = DelayedError("trying to differentiate twice a function that was marked with @once_differentiable",
                            len(values))
        wrapped = []
        for nr, value in enumerate(values):
            if value is not None:
                value = value.detach()
                value._grad_fn = node
                value._output_nr = nr
                value._requires_grad = True
            wrapped.append(value)
        return tuple(wrapped) if was_tuple else wrapped[0]

    return wrapper
