"""torch.jit's Python surface, without TorchScript.

Programs call `torch.jit.script` / `torch.jit.trace` to optimise or to serialise a model, and decorate helpers
with `torch.jit.ignore`, `unused`, `export`, `is_scripting()` checks.  ember has no TorchScript compiler or
archive format, so:

- `script(obj)` and `trace(fn, example_inputs)` return the eager callable itself (trace runs it once on the
  example inputs, as torch does, so shape errors surface at the same place); `ember.compile` is ember's
  optimising path.
- `save` / `load` of TorchScript archives raise NotImplementedError naming the alternative
  (`ember.save(model.state_dict())` and the model's Python class).
- the decorators and helpers behave as they do in eager torch: identity, `is_scripting()` / `is_tracing()`
  False, `annotate(T, v)` is `v`, `fork(f, *a)` runs `f` now and `wait` returns its result.
"""

from __future__ import annotations

from typing import Final  # noqa: F401  (torch.jit.Final is typing.Final)

__all__ = ["script", "trace", "trace_module", "save", "load", "ignore", "unused", "export", "is_scripting",
           "is_tracing", "annotate", "fork", "wait", "freeze", "optimize_for_inference", "ScriptModule",
           "ScriptFunction", "Final", "interface", "enable_onednn_fusion", "onednn_fusion_enabled"]


class ScriptModule:
    """Only for isinstance checks: ember never makes TorchScript modules."""


class ScriptFunction:
    """Only for isinstance checks: ember never makes TorchScript functions."""


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """The object itself: ember runs models eagerly (ember.compile is its optimiser)."""
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Run `func` once on the example inputs (as torch's tracer does) and return it unchanged."""
    if example_kwarg_inputs is not None:
        func(**example_kwarg_inputs)
    elif example_inputs is not None:
        func(*example_inputs) if isinstance(example_inputs, tuple) else func(example_inputs)
    return func


def trace_module(mod, inputs, **kwargs):
    for method, example in inputs.items():
        getattr(mod, method)(*example) if isinstance(example, tuple) else getattr(mod, method)(example)
    return mod


def save(m, f, _extra_files=None) -> None:
    raise NotImplementedError("ember.jit.save: ember has no TorchScript archives; save the weights with "
                              "ember.save(model.state_dict(), path) and rebuild the model from its Python class")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise NotImplementedError("ember.jit.load: ember cannot read TorchScript archives; load a state_dict saved "
                              "with torch.save(model.state_dict()) into the model's Python class instead")


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    return mod


def optimize_for_inference(mod, other_methods=None):
    return mod


def ignore(drop=False, **kwargs):
    """@torch.jit.ignore and @torch.jit.ignore(drop=True): the function, unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    return fn


def export(fn):
    return fn


def interface(obj):
    return obj


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def annotate(the_type, the_value):
    return the_value


class _Future:
    def __init__(self, value) -> None:
        self._value = value

    def wait(self):
        return self._value


def fork(func, *args, **kwargs) -> _Future:
    """Runs `func` now (no TorchScript thread pool); `wait` returns its result."""
    return _Future(func(*args, **kwargs))


def wait(future: _Future):
    return future.wait()


_onednn = [False]


def enable_onednn_fusion(enabled: bool) -> None:
    _onednn[0] = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _onednn[0]
