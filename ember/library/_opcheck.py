"""torch.library.opcheck: the checks torch runs on a custom op, reproduced for ember's.

- test_schema: the op writes only into the arguments its schema marks mutable
  (inputs are compared before and after a call on copies), and returns no alias
  of an input;
- test_autograd_registration: the op has an autograd kernel -- every custom op
  does (the generated one), so it passes as in torch;
- test_faketensor: a fake impl is registered and, run on meta tensors, gives the
  real outputs' shapes and dtypes;
- test_aot_dispatch_dynamic: the op under ember.compile gives eager's outputs,
  and eager's gradients when an input requires grad; like torch, it needs a fake
  impl (torch.compile cannot trace without one, so a torch program would fail).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor
from ._custom_op import _tensors_in, lookup

__all__ = ["opcheck", "OpCheckError"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """opcheck found a problem (torch.testing._internal.optests.generate_tests.OpCheckError)."""


def _copy(value):
    if isinstance(value, Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _to_meta(value):
    if isinstance(value, Tensor):
        return value.detach().to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_meta(v) for k, v in value.items()}
    return value


def _outputs(value) -> list:
    return _tensors_in(value if isinstance(value, (list, tuple)) else [value])


def _test_schema(op, args, kwargs, **_):
    args, kwargs = _copy(args), _copy(kwargs)
    bound = op._bind(args, kwargs)
    before = {a.name: _copy(bound.arguments[a.name]) for a in op._schema.arguments if a.holds_tensors}
    op(*args, **kwargs)
    for argument in op._schema.arguments:
        if not argument.holds_tensors or argument.mutable:
            continue
        old, new = _tensors_in([before[argument.name]]), _tensors_in([bound.arguments[argument.name]])
        for a, b in zip(old, new):
            if a.shape != b.shape or not a.detach().equal(b.detach()) and not _both_nan_equal(a, b):
                raise RuntimeError(f"Argument {argument.name} is not defined as mutable but was mutated")


def _both_nan_equal(a: Tensor, b: Tensor) -> bool:
    import ember

    return bool(ember.equal(ember.nan_to_num(a.detach(), nan=0.0), ember.nan_to_num(b.detach(), nan=0.0))
                and ember.equal(a.detach().isnan(), b.detach().isnan())) if a.is_floating_point() else False


def _test_autograd_registration(op, args, kwargs, **_):
    return None


def _test_faketensor(op, args, kwargs, **_):
    if op._fake_fn is None:
        raise RuntimeError(op._no_fake_message())
    real = _outputs(op(*_copy(args), **_copy(kwargs)))
    fake = _outputs(op(*_to_meta(args), **_to_meta(kwargs)))
    if len(real) != len(fake):
        raise RuntimeError(f"fake impl of {op} returned {len(fake)} tensors, the kernel {len(real)}")
    for index, (r, f) in enumerate(zip(real, fake)):
        if tuple(r.shape) != tuple(f.shape) or r.dtype != f.dtype:
            raise RuntimeError(f"output {index}: the fake impl gave shape {list(f.shape)} dtype {f.dtype}, the "
                               f"kernel shape {list(r.shape)} dtype {r.dtype}")


def _test_aot_dispatch_dynamic(op, args, kwargs, rtol=None, atol=None):
    import ember

    if op._fake_fn is None:
        raise RuntimeError(op._no_fake_message())

    def run(*a, **k):
        return op(*a, **k)

    eager_args, eager_kwargs = _copy(args), _copy(kwargs)
    compiled_args, compiled_kwargs = _copy(args), _copy(kwargs)
    expected = op(*eager_args, **eager_kwargs)
    got = ember.compile(run, dynamic=True)(*compiled_args, **compiled_kwargs)
    expected_out, got_out = _outputs(expected), _outputs(got)
    for e, g in zip(expected_out, got_out):
        ember.testing.assert_close(g.detach(), e.detach(), rtol=rtol, atol=atol)
    differentiable = [o for o in expected_out if o.requires_grad]
    if not differentiable:
        return
    eager_inputs = [t for t in _tensors_in([eager_args, eager_kwargs.values()]) if t.requires_grad]
    compiled_inputs = [t for t in _tensors_in([compiled_args, compiled_kwargs.values()]) if t.requires_grad]
    eager_grads = ember.autograd.grad(sum(o.sum() for o in differentiable), eager_inputs, allow_unused=True)
    got_diff = [o for o in got_out if o.requires_grad]
    got_grads = ember.autograd.grad(sum(o.sum() for o in got_diff), compiled_inputs, allow_unused=True)
    for e, g in zip(eager_grads, got_grads):
        if e is not None and g is not None:
            ember.testing.assert_close(g, e, rtol=rtol, atol=atol)


_TESTS = {"test_schema": _test_schema, "test_autograd_registration": _test_autograd_registration,
          "test_faketensor": _test_faketensor, "test_aot_dispatch_dynamic": _test_aot_dispatch_dynamic}


def opcheck(op, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None, *,
            test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS, raise_exception: bool = True, atol=None,
            rtol=None) -> dict[str, Any]:
    """Run torch's custom-op checks on one sample input; {test name: "SUCCESS" or the exception}, or raise
    OpCheckError at the first failure when raise_exception."""
    op = lookup(op)
    kwargs = {} if kwargs is None else kwargs
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    unknown = set(test_utils) - set(_TESTS)
    if unknown:
        raise ValueError(f"opcheck(op, ...): test_utils is expected to only contain {list(_TESTS)}, but got "
                         f"{sorted(unknown)}")
    results: dict[str, Any] = {}
    for name in test_utils:
        try:
            _TESTS[name](op, args, kwargs, rtol=rtol, atol=atol)
        except Exception as error:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {error} (scroll up for stack trace)") \
                    from error
            results[name] = error
        else:
            results[name] = "SUCCESS"
    return results
