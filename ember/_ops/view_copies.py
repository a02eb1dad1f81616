"""torch's `*_copy` functions (transpose_copy, split_copy, view_copy, ...): a view op, then a contiguous copy.

torch exposes one for every view op (the functionalization pass replaces views by them).  Each is generated
here from the view it copies: the view is taken, then cloned into new contiguous memory, so values, errors and
gradients are the view's (the clone passes gradients through unchanged).  `out=` takes a tensor, or a list of
tensors for the ops that return several (split_copy, split_with_sizes_copy, unbind_copy).
"""

from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor, wrap_dim
from ._api import export, write_out


def _slice(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """aten::slice: input[..., start:end:step, ...] along `dim` (bounds clamp, as Python slicing)."""
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = wrap_dim(dim, input.ndim)
    return input[(slice(None),) * dim + (slice(start, end, step),)]


def _view(input: Tensor, size) -> Tensor:
    """aten::view_copy takes a size list or a dtype."""
    if isinstance(size, dt.dtype):
        return input.view(size)
    return input.view(tuple(size) if not isinstance(size, int) else (size,))


def _squeeze(input: Tensor, dim=None) -> Tensor:
    return input.squeeze() if dim is None else input.squeeze(dim)


def _expand(input: Tensor, size, *, implicit: bool = False) -> Tensor:
    return input.expand(tuple(size) if not isinstance(size, int) else (size,))


_VIEWS = {
    "alias_copy": lambda input: input.view_as(input),
    "as_strided_copy": lambda input, size, stride, storage_offset=None: input.as_strided(size, stride,
                                                                                          storage_offset),
    "detach_copy": lambda input: input.detach(),
    "diagonal_copy": lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2),
    "expand_copy": _expand,
    "permute_copy": lambda input, dims: input.permute(*dims),
    "select_copy": lambda input, dim, index: input.select(dim, index),
    "slice_copy": _slice,
    "split_copy": lambda input, split_size, dim=0: input.split(split_size, dim),
    "split_with_sizes_copy": lambda input, split_sizes, dim=0: input.split_with_sizes(split_sizes, dim),
    "squeeze_copy": _squeeze,
    "t_copy": lambda input: input.t(),
    "transpose_copy": lambda input, dim0, dim1: input.transpose(dim0, dim1),
    "unbind_copy": lambda input, dim=0: input.unbind(dim),
    "unfold_copy": lambda input, dimension, size, step: input.unfold(dimension, size, step),
    "unsqueeze_copy": lambda input, dim: input.unsqueeze(dim),
    "view_as_complex_copy": lambda input: _view_as_complex(input),
    "view_as_real_copy": lambda input: _complex_ops().view_as_real(input),
    "view_copy": _view,
}


def _view_as_complex(input: Tensor) -> Tensor:
    """torch has no derivative formula for view_as_complex_copy: it refuses inputs that require grad."""
    from .._autograd.grad_mode import state

    if input.requires_grad and state.enabled:
        raise RuntimeError("view_as_complex_copy does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return _complex_ops().view_as_complex(input)


def _complex_ops():
    from . import complex_ops

    return complex_ops


def _copy(view: Tensor) -> Tensor:
    """The view in new contiguous memory, as ATen's *_copy ops (clone's gradient is the identity)."""
    from .. import contiguous_format

    return view.clone(memory_format=contiguous_format)


def _make_copy_function(name: str, view_fn):
    """torch.<name>(input, ...): view_fn's view (or views), each copied into new memory."""

    def function(input: Tensor, *args, out=None, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        views = view_fn(input, *args, **kwargs)
        if isinstance(views, Tensor):
            result = _copy(views)
            return result if out is None else write_out(out, result)
        results = tuple(_copy(each) for each in views)
        if out is None:
            return results
        if len(out) != len(results):
            raise RuntimeError(f"{name}(): expected out to have {len(results)} tensors, but got {len(out)}")
        for target, value in zip(out, results):
            write_out(target, value)
        return None

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"torch.{name}: torch.{name[:-5]}'s result in new, contiguous memory."
    return function


for _name, _view_fn in _VIEWS.items():
    export(_make_copy_function(_name, _view_fn), method=False)
