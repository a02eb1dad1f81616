"""Custom operators: torch.library.custom_op and the registrations on it.

A custom op is a Python function registered under "namespace::name", callable
as the returned `CustomOpDef`, as `ember.ops.namespace.name` and as
`ember.ops.namespace.name.default`.  A call:

  1. binds the arguments to the op's schema (torch's RuntimeErrors for a wrong
     count, a missing argument, a non-tensor where a Tensor goes);
  2. picks the kernel for the device of its tensors (a `register_kernel` one,
     else the function itself when its device_types allow), or the fake
     (`register_fake`) on the meta device;
  3. runs it with autograd off, as torch runs kernels below the autograd key;
  4. checks that no output is an input or shares an input's memory (or
     another output's): torch's RuntimeError;
  5. when grad mode is on and an input requires grad, gives the outputs a
     grad_fn: a generated autograd.Function whose backward is the
     `register_autograd` formula, or torch's error when none was registered.

Under ember.compile the kernel's ember ops are captured like any other code;
an op with a registered backward is an autograd.Function, so when gradients
are needed the capture breaks there (docs/compile.md) and the call runs
eagerly: results are eager's.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence

from .. import _device
from .._autograd.grad_mode import state
from .._tensor import Tensor
from ._schema import Schema, infer_schema, parse_schema

__all__ = ["CustomOpDef", "custom_op", "lookup", "OPS"]

OPS: dict[str, CustomOpDef] = {}  # "namespace::name" -> its definition


def lookup(op) -> CustomOpDef:
    """A CustomOpDef from itself, its qualified name, or an ember.ops packet/overload of it."""
    if isinstance(op, CustomOpDef):
        return op
    definition = getattr(op, "_custom_op", None)
    if isinstance(definition, CustomOpDef):
        return definition
    if isinstance(op, str):
        if op in OPS:
            return OPS[op]
        raise RuntimeError(f"Operator {op} does not exist: define it with ember.library.custom_op first")
    raise TypeError(f"Expected a custom op, its 'namespace::name' or an ember.ops overload, got {type(op).__name__}")


def _device_types(device_types) -> tuple[str, ...] | None:
    if device_types is None:
        return None
    if isinstance(device_types, str):
        device_types = (device_types,)
    return tuple(_device.device(d).type for d in device_types)


class CustomOpDef:
    """A registered custom op (torch._library.custom_ops.CustomOpDef): call it like its function."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, device_types=None) -> None:
        self._namespace = namespace
        self._name = name
        self._qualname = f"{namespace}::{name}"
        self._schema_text = schema
        self._schema: Schema = parse_schema(schema)
        self._init_fn = fn
        self._signature = inspect.signature(fn)
        self._default_devices = _device_types(device_types)
        self._kernels: dict[str, Callable] = {}
        self._fake_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        self._function_class = None
        self._opoverload = OpOverload(self)
        self._opoverloadpacket = OpOverloadPacket(self)
        self.__name__ = name
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    # ---------------------------------------------------------------- registrations

    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """Use `fn` as the op's kernel on these device types (a decorator without fn)."""
        devices = _device_types(device_types)

        def inner(fn: Callable) -> Callable:
            for device_type in devices if devices is not None else ("cpu", "cuda"):
                self._kernels[device_type] = fn
            return fn

        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """The op's shape function: given meta tensors, it returns outputs of the right shapes and dtypes."""
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """Make the op differentiable: setup_context(ctx, inputs, output) saves what backward(ctx, *grads)
        reads; backward returns one gradient (or None) per input."""
        if self._schema.mutable_names:
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator {self} with schema "
                               f"{self._qualname}{self._schema_text[self._schema_text.index('('):]}. Please create a "
                               "functional operator and register an autograd formula for that.")
        self._backward_fn = backward
        self._setup_context_fn = setup_context

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        raise NotImplementedError("ember has no __torch_dispatch__: register_torch_dispatch is not supported")

    def register_autocast(self, device_type: str, cast_inputs) -> CustomOpDef:
        """Run the op in `cast_inputs` (floating-point tensors cast) inside an autocast region of device_type."""
        previous = self._init_fn
        dtype = cast_inputs

        def kernel(*args, **kwargs):
            from .. import is_autocast_enabled

            if is_autocast_enabled(device_type):
                cast = (lambda v: v.to(dtype) if isinstance(v, Tensor) and v.is_floating_point() else v)
                args = tuple(cast(a) for a in args)
                kwargs = {k: cast(v) for k, v in kwargs.items()}
            return previous(*args, **kwargs)

        self._init_fn = kernel
        return self

    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        raise NotImplementedError("set_kernel_enabled is not supported by ember's custom ops")

    # ---------------------------------------------------------------- calling

    def _bind(self, args: tuple, kwargs: dict) -> inspect.BoundArguments:
        declaration = f"Declaration: {self._qualname}{self._schema_text[self._schema_text.index('('):]}"
        positional = sum(1 for a in self._schema.arguments if not a.keyword_only)
        if len(args) > positional:
            raise RuntimeError(f"{self._qualname}() expected at most {positional} argument(s) but received "
                               f"{len(args)} argument(s). {declaration}")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as error:
            missing = [a.name for a in self._schema.arguments[len(args):]
                       if a.name not in kwargs and self._signature.parameters[a.name].default is inspect._empty]
            if missing:
                raise RuntimeError(f"{self._qualname}() is missing value for argument '{missing[0]}'. "
                                   f"{declaration}") from None
            raise RuntimeError(f"{self._qualname}(): {error}. {declaration}") from None
        bound.apply_defaults()
        for position, argument in enumerate(self._schema.arguments):
            value = bound.arguments[argument.name]
            if argument.type == "Tensor" and not isinstance(value, Tensor) or \
                    argument.type == "Tensor?" and value is not None and not isinstance(value, Tensor):
                raise RuntimeError(f"{self._qualname}() Expected a value of type 'Tensor' for argument "
                                   f"'{argument.name}' but instead found type '{type(value).__name__}'.\n"
                                   f"Position: {position}\nValue: {value!r}\n{declaration}\n"
                                   f"Cast error details: Unable to cast {value!r} to Tensor")
        return bound

    def _kernel(self, tensors: list[Tensor]) -> Callable:
        device_type = tensors[0]._device.type if tensors else "cpu"
        if device_type == "meta":
            if self._fake_fn is None:
                raise RuntimeError(self._no_fake_message())
            return self._fake_fn
        kernel = self._kernels.get(device_type)
        if kernel is not None:
            return kernel
        if self._default_devices is None or device_type in self._default_devices:
            return self._init_fn
        backend = {"cpu": "CPU", "cuda": "CUDA"}.get(device_type, device_type)
        available = sorted({"cpu": "CPU", "cuda": "CUDA"}[d] for d in set(self._default_devices)
                           | set(self._kernels) if d in ("cpu", "cuda")) + ["Meta"]
        raise NotImplementedError(f"Could not run '{self._qualname}' with arguments from the '{backend}' backend. "
                                  f"'{self._qualname}' is only available for these backends: "
                                  f"[{', '.join(available)}].")

    def _no_fake_message(self) -> str:
        return (f"There was no fake impl registered for {self}. This is necessary for torch.compile/export/fx "
                f"tracing to work. Please use `{self._init_fn.__name__}.register_fake` to add an fake impl.")

    def __call__(self, *args, **kwargs):
        bound = self._bind(args, kwargs)
        inputs = [bound.arguments[a.name] for a in self._schema.arguments]
        tensors = _tensors_in(inputs)
        kernel = self._kernel(tensors)
        needs_grad = state.enabled and any(t.requires_grad for t in tensors) and not self._schema.mutable_names
        if needs_grad:
            output = self._function().apply(self, kernel, bound, *_flatten(inputs))
            return list(output) if self._schema.returns == "Tensor[]" else output
        previous = state.enabled
        state.enabled = False
        try:
            output = kernel(*bound.args, **bound.kwargs)
        finally:
            state.enabled = previous
        self._check_aliasing(tensors, output, kernel)
        return output

    def _check_aliasing(self, tensors: list[Tensor], output, kernel) -> None:
        """torch's rule: an output is never an input, nor a view of one, nor of another output."""
        outputs = _tensors_in(output if isinstance(output, (tuple, list)) else [output])
        storages = {id(t._storage) for t in tensors}
        seen: set[int] = set()
        for tensor in outputs:
            key = id(tensor._storage)
            if key in storages or key in seen:
                raise RuntimeError(
                    f"{getattr(kernel, '__name__', self._name)} (with implementation in {inspect.getmodule(kernel)}): "
                    "The output of this custom operator (1) must not also be an input to this custom operator and "
                    "(2) may not alias any inputs to this custom operator or other returns. The most common way to "
                    "trigger this error is if we have y = custom_op(x) and y and x are the same Tensor. Please "
                    "instead return a clone of the offending output tensor(s) (e.g. return x.clone()) or refactor "
                    "the custom operator to not return y.")
            seen.add(key)

    def _function(self):
        """The generated autograd.Function (made once, torch's GeneratedBackwardFor_<ns>_<name>_default)."""
        if self._function_class is None:
            from .._autograd.function import Function

            self._function_class = type(f"GeneratedBackwardFor_{self._namespace}_{self._name}_default", (Function,),
                                        {"forward": staticmethod(_forward), "backward": staticmethod(_backward)})
        return self._function_class


def _forward(ctx, op: CustomOpDef, kernel: Callable, bound: inspect.BoundArguments, *flat):
    """The generated Function's forward: the kernel (grad mode is already off), then setup_context."""
    inputs = tuple(bound.arguments[a.name] for a in op._schema.arguments)
    output = kernel(*bound.args, **bound.kwargs)
    op._check_aliasing(_tensors_in(list(inputs)), output, kernel)
    ctx._custom_op = op
    ctx._custom_inputs = inputs
    ctx.needs_input_grad = tuple(
        (v.requires_grad if isinstance(v, Tensor) else
         any(t.requires_grad for t in _tensors_in(v)) if isinstance(v, (list, tuple)) else False) for v in inputs)
    if op._setup_context_fn is not None:
        op._setup_context_fn(ctx, inputs, output)
    return tuple(output) if isinstance(output, list) else output  # a Function returns a tensor or a tuple


def _backward(ctx, *grads):
    """The registered backward, its gradients laid out per flattened input (None for op, kernel, bound)."""
    op: CustomOpDef = ctx._custom_op
    if op._backward_fn is None:
        raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but no autograd formula "
                           "was registered. Please use register_autograd to add one.")
    result = op._backward_fn(ctx, *grads)
    inputs = ctx._custom_inputs
    if not isinstance(result, tuple):
        result = (result,)
    if len(result) != len(inputs):
        raise RuntimeError(f"function {type(ctx).__name__} returned an incorrect number of gradients (expected "
                           f"{len(inputs)}, got {len(result)})")
    flat = [None, None, None]
    for value, grad in zip(inputs, result):
        if isinstance(value, (list, tuple)):
            grads = list(grad) if grad is not None else [None] * len(value)
            flat.extend(grads[i] if isinstance(v, Tensor) else None for i, v in enumerate(value))
        else:
            flat.append(grad if isinstance(value, Tensor) else None)
    return tuple(flat)


def _flatten(inputs: list) -> list:
    """Each input, with lists of tensors spread out, so the autograd.Function sees every tensor."""
    flat = []
    for value in inputs:
        if isinstance(value, (list, tuple)):
            flat.extend(value)
        else:
            flat.append(value)
    return flat


def _tensors_in(values) -> list[Tensor]:
    found = []
    for value in values:
        if isinstance(value, Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, Tensor))
    return found


class OpOverload:
    """ember.ops.<namespace>.<name>.default: the op's one overload."""

    def __init__(self, op: CustomOpDef) -> None:
        self._custom_op = op
        self._overloadname = "default"
        self.__name__ = f"{op._name}.default"
        self.__qualname__ = self.__name__

    @property
    def _schema(self) -> str:
        op = self._custom_op
        return f"{op._qualname}{op._schema_text[op._schema_text.index('('):]}"

    def __call__(self, *args, **kwargs):
        return self._custom_op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._custom_op._namespace}.{self._custom_op._name}.default"


class OpOverloadPacket:
    """ember.ops.<namespace>.<name>: callable; `.default` is the overload."""

    def __init__(self, op: CustomOpDef) -> None:
        self._custom_op = op
        self.default = op._opoverload
        self.__name__ = op._name
        self.__qualname__ = op._name

    def overloads(self) -> list[str]:
        return ["default"]

    @property
    def _schema(self) -> str:
        return self.default._schema

    def __call__(self, *args, **kwargs):
        return self._custom_op(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._custom_op._namespace}.{self._custom_op._name}"


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Sequence[str] | None = None, schema: str | None = None, tags=None):
    """Register `fn` as the op "namespace::name" (a decorator without fn).  mutates_args names the arguments it
    writes into ("unknown": any); the schema is inferred from fn's type hints unless given."""
    namespace, opname = name.split("::")

    def inner(fn: Callable) -> CustomOpDef:
        text = infer_schema(fn, mutates_args=mutates_args) if schema is None else schema
        op = CustomOpDef(namespace, opname, text, fn, device_types)
        OPS[name] = op
        return op

    return inner if fn is None else inner(fn)
