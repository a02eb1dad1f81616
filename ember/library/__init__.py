"""torch.library: define custom operators in Python.

    @ember.library.custom_op("mylib::mysin", mutates_args=())
    def mysin(x: Tensor) -> Tensor:
        return x.sin()

    mysin.register_autograd(backward, setup_context=setup_context)
    ember.ops.mylib.mysin(x)

See _custom_op.py for what a call does, _schema.py for schemas and
_opcheck.py for opcheck.  Not provided: the low-level `Library` class with
`fallthrough_kernel`, `register_torch_dispatch` and `register_vmap` (ember has
no dispatcher keys), and triton ops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._custom_op import CustomOpDef, OpOverload, OpOverloadPacket, custom_op, lookup
from ._opcheck import OpCheckError, opcheck
from ._schema import infer_schema

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_autograd", "register_kernel", "register_autocast",
           "impl_abstract", "opcheck", "OpCheckError", "infer_schema", "get_ctx", "define", "impl", "OpOverload",
           "OpOverloadPacket"]


def register_fake(op, func: Callable | None = None, /, *, lib=None, _stacklevel: int = 1,
                  allow_override: bool = True):
    """Register the op's fake (meta) impl; a decorator when func is omitted."""
    definition = lookup(op)
    if func is None:
        return definition.register_fake
    return definition.register_fake(func)


impl_abstract = register_fake  # its old name


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None, lib=None) -> None:
    """Make the op differentiable with backward(ctx, *grads) and setup_context(ctx, inputs, output)."""
    lookup(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op, device_types: str | Sequence[str] | None, func: Callable | None = None, /, *, lib=None):
    """Register the op's kernel for these device types; a decorator when func is omitted."""
    definition = lookup(op)
    if func is None:
        return definition.register_kernel(device_types)
    return definition.register_kernel(device_types, func)


def register_autocast(op, device_type: str, cast_inputs, /, *, lib=None) -> None:
    """Inside autocast for device_type, call the op with its floating-point tensor inputs cast to cast_inputs."""
    lookup(op).register_autocast(device_type, cast_inputs)


def define(qualname: str, schema: str, *, lib=None, tags=()) -> None:
    """Declare "namespace::name" with a schema; give it kernels with `impl` (or register_kernel)."""
    namespace, name = qualname.split("::")

    def undefined(*args, **kwargs):
        raise NotImplementedError(f"Could not run '{qualname}': no kernel was registered for it (ember.library.impl)")

    import inspect

    from ._schema import parse_schema

    parsed = parse_schema(schema)
    parameters = []
    for argument in parsed.arguments:
        kind = inspect.Parameter.KEYWORD_ONLY if argument.keyword_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = inspect.Parameter.empty if argument.default is None else argument.default_value()
        parameters.append(inspect.Parameter(argument.name, kind, default=default))
    undefined.__signature__ = inspect.Signature(parameters)
    undefined.__name__ = name
    from ._custom_op import OPS

    OPS[qualname] = CustomOpDef(namespace, name, schema, undefined, device_types=())


def impl(qualname: str, types: str | Sequence[str], func: Callable | None = None, *, lib=None):
    """Register a kernel of a `define`d op for device types ("cpu", "cuda", "CompositeExplicitAutograd": all)."""
    if isinstance(types, str):
        types = (types,)
    devices = []
    for kind in types:
        lowered = kind.lower()
        if lowered.startswith("composite") or lowered == "default":
            devices.extend(("cpu", "cuda", "meta"))
        else:
            devices.append(lowered)
    definition = lookup(qualname)

    def inner(fn: Callable) -> Callable:
        for device in devices:
            if device == "meta":
                if definition._fake_fn is None:
                    definition._fake_fn = fn
            else:
                definition._kernels[device] = fn
        return fn

    return inner if func is None else inner(func)


class _FakeImplContext:
    """get_ctx() inside a fake impl: data-dependent output sizes."""

    def new_dynamic_size(self, *, min: int = 0, max: int | None = None):
        raise RuntimeError("ember has no symbolic sizes: an op whose output size depends on its data cannot have a "
                           "fake impl; ember.compile breaks the graph at such ops instead")

    create_unbacked_symint = new_dynamic_size


def get_ctx() -> _FakeImplContext:
    """The context of the fake impl being run."""
    return _FakeImplContext()
