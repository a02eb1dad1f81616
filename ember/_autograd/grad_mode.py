"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

The flag is one module-level attribute read on every op call, so it is kept as
plain as possible (`state.enabled`).  Like torch's, each mode works as a
context manager and as a decorator.
"""

from __future__ import annotations

import functools
import inspect

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State:
    enabled = True
    inference = False
    anomaly = False
    anomaly_check_nan = True
    saved_hooks = ()  # stack of (pack_hook, unpack_hook) from autograd.graph.saved_tensors_hooks
    saved_hooks_disabled = None  # error message while disable_saved_tensors_hooks is active


state = _State()


def is_grad_enabled() -> bool:
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """A context manager usable as a decorator, also on generator functions."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError("grad modes cannot decorate classes")
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def generator(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    with self.clone():
                        try:
                            response = gen.send(request)
                        except StopIteration as stop:
                            return stop.value

            return generator

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return decorated

    def clone(self):
        return self.__class__()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A mode that also decorates without parentheses: `@no_grad` as well as `@no_grad()`, as torch's."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording inside the block."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording inside the block (even within no_grad)."""

    def __init__(self) -> None:
        self.prev = False

    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode: takes effect at once when called, and is undone on leaving a `with` block."""

    def __init__(self, mode: bool) -> None:
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __call__(self, func):
        state.enabled = self.prev  # as a decorator it sets the mode only while the function runs
        return super().__call__(func)

    def __enter__(self) -> None:
        state.enabled = self.mode

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad, and tensors made inside are marked as inference tensors (torch.inference_mode)."""

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode
        self.prev = (True, False)

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __enter__(self) -> None:
        self.prev = (state.enabled, state.inference)
        # torch's InferenceMode(enabled) guard: grad mode off and inference on, or (mode=False, e.g. nested in
        # an inference_mode block) grad mode on and inference off
        state.enabled = not self.mode
        state.inference = bool(self.mode)

    def __exit__(self, *exc) -> None:
        state.enabled, state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)
