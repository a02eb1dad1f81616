"""The registry that turns op functions into ember.* functions, Tensor methods and in-place variants.

Each family module decorates its public functions with `export`; ember/__init__
installs them once.  An in-place variant is never written by hand: it is the
out-of-place function followed by `Tensor._inplace_from` (see NOTE [ In-place
ops and views ] in _tensor.py), so its values, dtype checks and gradients are
the out-of-place op's.  Where no gradient is recorded, the op writes straight
into the tensor instead (NOTE [ In-place ops without a copy ] in _dispatch.py).
"""

from __future__ import annotations

from .. import _dispatch
from .._tensor import SCALAR_NAMES, Tensor, write_array

FUNCTIONS: dict = {}
METHODS: dict = {}


def export(fn=None, *, name: str | None = None, method: bool = True, function: bool = True,
           inplace: bool = False, aliases: tuple = ()):
    """Register `fn` as ember.<name> and/or Tensor.<name>; `inplace` also makes Tensor.<name>_."""

    def register(fn):
        names = (name or fn.__name__,) + tuple(aliases)
        for each in names:
            if function:
                FUNCTIONS[each] = fn
            if method:
                METHODS[each] = fn
            if inplace:
                METHODS[each + "_"] = make_inplace(fn, each + "_")
        return fn

    return register(fn) if fn is not None else register


def make_inplace(fn, name: str):
    """Tensor.<op>_: compute out of place, then write into self (dtype must be castable, shape must match);
    or, when the function's op can, straight into self (NOTE [ In-place ops without a copy ] in _dispatch.py)."""

    def method(self, *args, **kwargs):
        return inplace_call(self, fn, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = f"In-place version of :meth:`Tensor.{name[:-1]}`."
    return method


def inplace_call(self: Tensor, fn, *args, **kwargs) -> Tensor:
    """fn(self, *args, **kwargs) written into self: by its first op call's out_impl when NOTE [ In-place ops
    without a copy ] (_dispatch.py) allows, else computed out of place and copied in (Tensor._inplace_from)."""
    self._check_inplace()
    if not _dispatch.INPLACE_OUT:
        return self._inplace_from(fn(self, *args, **kwargs))
    _dispatch.inplace_target = self
    _dispatch.inplace_written = False
    try:
        result = fn(self, *args, **kwargs)
    finally:
        _dispatch.inplace_target = None
    if _dispatch.inplace_written:
        _dispatch.inplace_written = False
        if result is not self:
            raise AssertionError(f"{getattr(fn, '__name__', fn)}: its first op call wrote in place, but it returned "
                                 "another tensor; an op with out_impl must be the function's result")
        return self
    return self._inplace_from(result)


def write_out(out: Tensor, result: Tensor) -> Tensor:
    """The `out=` contract: resize an empty/mismatched out to the result's shape, cast, write, bump version."""
    from .. import _dispatch

    if _dispatch.tracer is not None:  # written outside the ops (a resize, a cast): ember.compile would miss it
        _dispatch.capture_break("out= inside a compiled function")
    if not isinstance(out, Tensor):
        raise TypeError(f"out argument must be a Tensor, not {type(out).__name__}")
    out._check_inference_write()
    if _dispatch.forward_ad is not None:
        _dispatch.forward_ad.check_out(result)
    if out._requires_grad and result._requires_grad:
        from .._autograd.grad_mode import state

        if state.enabled:
            raise RuntimeError(
                "functions with out=... arguments don't support automatic differentiation, but one of the "
                "arguments requires grad."
            )
    from .. import _dtype as dt

    if not dt.can_cast(result._dtype, out._dtype):
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(
            f"result type {SCALAR_NAMES[result._dtype.name]} can't be cast to the desired output type "
            f"{SCALAR_NAMES[out._dtype.name]}"
        )
    if out._data.shape != result._data.shape:
        if out._data.size:
            import warnings

            warnings.warn(
                f"An output with one or more elements was resized since it had shape {list(out._data.shape)}, which "
                f"does not match the required output shape {list(result._data.shape)}. This behavior is "
                "deprecated, and in a future PyTorch release outputs will not be resized unless they have zero "
                "elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                "t.resize_(0).", UserWarning, stacklevel=_user_stacklevel())
        from .._tensor import Storage

        out._take_storage(Storage(result._data.astype(out._dtype.np_dtype)))
    else:
        write_array(out._data, result._data)
    out._bump_version()
    return out


def _user_stacklevel() -> int:
    """The warnings.warn stacklevel (for its caller) of the first frame outside ember: torch's C++ warnings
    point at the user's line."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(2), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def not_implemented(kernel: str, dtype) -> NotImplementedError:
    """torch's error for a CPU kernel not dispatched for a dtype: '"kernel" not implemented for 'Long''."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES[dtype.name]}\'')


def as_requested(result, dtype):
    """An integer `dtype=` is the result's dtype (torch accumulates in it, wrapping; int64 then a cast wraps
    the same), not only the input's: integer scans and reductions otherwise give int64."""
    return result if dtype is None or result._dtype is dtype else result.to(dtype)


def finish_out(result, out):
    """Return `result`, or write it into `out` (a tensor, or a tuple of them for a tuple result) and return that."""
    if out is None:
        return result
    if isinstance(result, tuple):
        for target, value in zip(out, result):
            write_out(target, value)
        return out
    return write_out(out, result)


def install(namespace: dict) -> None:
    """Put the registered functions into ember's namespace and the methods on Tensor."""
    for each, fn in METHODS.items():
        if not hasattr(Tensor, each) or each in _OVERRIDABLE:
            setattr(Tensor, each, fn)
    for each, fn in FUNCTIONS.items():
        namespace.setdefault(each, fn)


_OVERRIDABLE: set = set()
