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
    multithreading = True  # set_multithreading_enabled (ember's engine always runs on the calling thread)
    view_replay = False  # _force_original_view_tracking (ember's views always replay from their base)
    grad_layout_enforced = True  # enforce_grad_layout_policy: AccumulateGrad's NOTE [ Gradient layout ]


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


class _FlagMode(_DecoratorContextManager):
    """A flag of `state` set at once when called and restored on leaving a `with` block (torch's
    set_multithreading_enabled / enforce_grad_layout_policy / _force_original_view_tracking pattern)."""

    _flag = ""

    def __init__(self, mode: bool = True) -> None:
        self.prev = getattr(state, self._flag)
        self.mode = bool(mode)
        setattr(state, self._flag, self.mode)

    def __call__(self, func):
        setattr(state, self._flag, self.prev)  # as a decorator it sets the flag only while the function runs
        return super().__call__(func)

    def __enter__(self) -> None:
        setattr(state, self._flag, self.mode)

    def __exit__(self, *exc) -> None:
        setattr(state, self._flag, self.prev)

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_FlagMode):
    """Whether backward may run on per-device worker threads; recorded for is_multithreading_enabled()
    (ember's engine runs backward on the calling thread either way)."""

    _flag = "multithreading"

    def __call__(self, func):
        return _DecoratorContextManager.__call__(self, func)  # (torch's leaves the flag set by the decoration)


class enforce_grad_layout_policy(_FlagMode):
    """With False, a stealable gradient whose strides differ from its leaf's becomes .grad as it is, where
    the gradient layout contract would copy it to the leaf's layout."""

    _flag = "grad_layout_enforced"


class _force_original_view_tracking(_FlagMode):
    """Whether autograd replays views from their base (torch's view replay); recorded for
    is_view_replay_enabled()."""

    _flag = "view_replay"


def is_multithreading_enabled() -> bool:
    return state.multithreading


def is_view_replay_enabled() -> bool:
    return state.view_replay
