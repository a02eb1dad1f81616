"""The functional inverses of views: select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter.

Each returns a copy of `input` with `src` written where the matching view (select, slice, diagonal, as_strided)
would see.  The first three write through that view op's own impl on the copy; their backward is the same
scatter of zeros (for input) and the view of the gradient (for src).  as_strided_scatter reads its strides
against the storage of input's clone, as torch's does, so it works on element positions instead
(view_nodes.py's gather is its src gradient).
"""

from __future__ import annotations

import math

import numpy as np

from .._dispatch import OpDef, call, keep
from .._tensor import Tensor, wrap_dim
from . import views
from ._api import export, finish_out
from .view_nodes import _GATHER_POSITIONS


def _check_src(src: Tensor, slice_shape) -> None:
    if tuple(src.shape) != tuple(slice_shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(slice_shape)}")


def _require_tensors(name: str, input, src) -> None:
    for position, (argument, value) in enumerate((("input", input), ("src", src)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


# ---------------------------------------------------------------- through a view op


def _view_scatter_impl(xp, a, src, view_op, view_params):
    out = a.copy()
    view_op.impl(xp, out, **view_params)[...] = src
    return out


def _scatter_op(name: str) -> OpDef:
    op = OpDef(name, _view_scatter_impl, None, dtype_rule=keep, upcast_half=False,
               meta=lambda args, params: tuple(args[0].shape))

    def backward(ctx, g):
        params = ctx.params
        view_of_grad = call(params["view_op"], (g,), params["view_params"])
        grad_input = None
        if ctx.needs_input_grad[0]:
            grad_input = call(op, (g, view_of_grad.new_zeros(view_of_grad.shape)), params)
        return grad_input, view_of_grad if ctx.needs_input_grad[1] else None

    op.backward = backward
    return op


_SELECT_SCATTER = _scatter_op("select_scatter")
_SLICE_SCATTER = _scatter_op("slice_scatter")
_DIAGONAL_SCATTER = _scatter_op("diagonal_scatter")


def _scatter(op: OpDef, input: Tensor, src: Tensor, view: Tensor, view_op: OpDef, view_params: dict) -> Tensor:
    _check_src(src, view.shape)
    return call(op, (input, src), {"view_op": view_op, "view_params": view_params})


@export
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of input with src written into input.select(dim, index)."""
    _require_tensors("select_scatter", input, src)
    view = views.select(input.detach(), dim, index)  # torch's errors for dim and index
    dim = wrap_dim(dim, input.ndim)
    key = (slice(None),) * dim + (int(index) % input.shape[dim],)
    return _scatter(_SELECT_SCATTER, input, src, view, views._SELECT, {"key": key})


@export
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1, *, out=None) -> Tensor:
    """A copy of input with src written into input[..., start:end:step, ...] along `dim`."""
    _require_tensors("slice_scatter", input, src)
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    part = slice(None if start is None else int(start), None if end is None else int(end), int(step))
    key = (slice(None),) * dim + (part,)
    shape = list(input.shape)
    shape[dim] = len(range(*part.indices(shape[dim])))
    _check_src(src, shape)
    result = call(_SLICE_SCATTER, (input, src), {"view_op": views._SLICE, "view_params": {"key": key}})
    return finish_out(result, out)


@export
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of input with src written into input.diagonal(offset, dim1, dim2)."""
    _require_tensors("diagonal_scatter", input, src)
    view = views.diagonal(input.detach(), offset, dim1, dim2)  # torch's errors for the dims
    params = {"offset": int(offset), "dim1": wrap_dim(dim1, input.ndim), "dim2": wrap_dim(dim2, input.ndim)}
    return _scatter(_DIAGONAL_SCATTER, input, src, view, views._DIAGONAL, params)


# ---------------------------------------------------------------- as_strided_scatter


def _put_impl(xp, a, src, positions):
    """a's copy with src's elements at the flat positions (-1: a storage gap of input's clone; dropped)."""
    out = a.copy()
    flat = out.reshape(-1)  # a view: the copy is C-contiguous
    positions = positions.reshape(-1)
    values = src.reshape(-1)
    if positions.size and positions.min() < 0:  # host metadata (positions is a NumPy array)
        keep = positions >= 0
        positions, values = positions[keep], values[xp.asarray(keep)]
    flat[xp.asarray(positions)] = values
    return out


_AS_STRIDED_SCATTER = OpDef("as_strided_scatter", _put_impl, None, dtype_rule=keep, upcast_half=False,
                            meta=lambda args, params: tuple(args[0].shape))


def _as_strided_scatter_backward(ctx, g):
    positions = ctx.params["positions"]
    grad_input = grad_src = None
    if ctx.needs_input_grad[0]:
        grad_input = call(_AS_STRIDED_SCATTER, (g, g.new_zeros(positions.shape)), ctx.params)
    if ctx.needs_input_grad[1]:
        grad_src = call(_GATHER_POSITIONS, (g,), {"positions": positions, "shape": tuple(g.shape)})
    return grad_input, grad_src


_AS_STRIDED_SCATTER.backward = _as_strided_scatter_backward


def _offsets(sizes: tuple, strides: tuple, start: int = 0) -> np.ndarray:
    """The storage offset of every element of a strided layout, in row-major order of its elements."""
    offsets = np.full(sizes, start, np.int64)
    for dim, (size, stride) in enumerate(zip(sizes, strides)):
        offsets += (np.arange(size) * stride).reshape((-1,) + (1,) * (len(sizes) - dim - 1))
    return offsets


def _positions(input: Tensor, size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """For each element of the as_strided view, the row-major index of the element of input it writes (-1: none).

    Strides are read against input's clone, which torch allocates with input's own strides from offset 0 (so a
    non-contiguous input's clone has gaps: writes there are lost, as in torch)."""
    shape = tuple(input.shape)
    numel = math.prod(shape)
    layout = tuple(input.stride()) if numel and input._device.type != "meta" else _contiguous_strides(shape)
    element_offsets = _offsets(shape, layout).reshape(-1)
    if np.unique(element_offsets).size < numel:  # an overlapping input (expanded): its clone is contiguous
        layout = _contiguous_strides(shape)
        element_offsets = _offsets(shape, layout).reshape(-1)
    storage_size = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, layout))
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > storage_size:
        itemsize = input._dtype.itemsize
        raise RuntimeError(
            f"setStorage: sizes [{', '.join(map(str, size))}], strides [{', '.join(map(str, stride))}], storage "
            f"offset {offset}, and itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of "
            f"bounds for storage of size {storage_size * itemsize}"
        )
    places = _offsets(size, stride, offset)
    if np.unique(places).size < places.size:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")
    storage_to_index = np.full(max(storage_size, 1), -1, np.int64)
    storage_to_index[element_offsets] = np.arange(numel)
    return storage_to_index[places]


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@export
def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A copy of input with src written into input.clone().as_strided(size, stride, storage_offset)."""
    _require_tensors("as_strided_scatter", input, src)
    size, stride = tuple(int(n) for n in size), tuple(int(n) for n in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    positions = _positions(input, size, stride, 0 if storage_offset is None else int(storage_offset))
    _check_src(src, size)
    return call(_AS_STRIDED_SCATTER, (input, src), {"positions": positions})
