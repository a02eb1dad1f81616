"""Copying movement ops: cat/stack and friends, repeat/tile, flip/roll/rot90, triangles and diagonals, meshgrid.

Unlike the ops in views.py, every result here owns new memory (torch's flip is
a copy even though NumPy's is a view).  The primitives (cat, repeat, flip,
roll, tril/triu, diag_embed) are OpDefs whose backwards are written in ember
ops; the rest (stack, hstack, tile, rot90, diag, meshgrid, combinations, ...)
are compositions of primitives and views, so their gradients come for free.
"""

from __future__ import annotations

import itertools
import numbers
import warnings

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._dispatch import OpDef, call, device_module, keep
from .._tensor import Tensor, wrap_dim
from . import views
from ._api import export, finish_out
from ._shapes import empty_in_order, normalize_dims, suggested_order


def _tensor_list(tensors, name: str) -> list:
    if isinstance(tensors, Tensor):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
    return list(tensors)


def _int_tuple(values) -> tuple:
    if isinstance(values, (numbers.Integral, Tensor)):
        return (int(values),)
    return tuple(int(v) for v in values)


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


# ---------------------------------------------------------------- cat


def _is_legacy_empty(tensor: Tensor) -> bool:
    """torch.cat skips 1-D empty tensors whatever the other shapes (a legacy rule)."""
    return tensor._data.ndim == 1 and tensor._data.shape[0] == 0


def _cat_rule(args, params):
    """Promote across all inputs; every input counts as a dimensioned tensor (0-d ones are rejected earlier)."""
    result = args[0]._dtype
    for tensor in args[1:]:
        if tensor._dtype is not result:
            result = dt.result_type_of([result, tensor._dtype], [], [])
    return result, result


def _cat_shape(shapes, dim):
    kept = [s for s in shapes if not (len(s) == 1 and s[0] == 0)]
    if not kept:
        return shapes[0]
    out = list(kept[0])
    out[dim] = sum(s[dim] for s in kept)
    return tuple(out)


def _cat_impl(xp, *arrays, dim):
    """torch's cat: the result is contiguous, or channels-last when every input suggests channels-last
    (compute_output_memory_format); NumPy's concatenate would follow the first input's layout instead."""
    kept = [a for a in arrays if not (a.ndim == 1 and a.shape[0] == 0)]
    if not kept:
        return xp.empty((0,), arrays[0].dtype)
    orders = [None if a.flags.c_contiguous else suggested_order(a) for a in kept]
    order = orders[0] if orders[0] is not None and all(o == orders[0] for o in orders) else None
    shape = list(kept[0].shape)
    shape[dim] = sum(a.shape[dim] for a in kept)
    out = empty_in_order(xp, tuple(shape), xp.result_type(*kept), order)
    return xp.concatenate(kept, axis=dim, out=out)


def _stack_impl(xp, *arrays, dim):
    """torch's stack: cat along `dim` viewed with the new dim split off (cat of unsqueezed inputs for the
    last dim), so the result takes cat's layout."""
    if dim < arrays[0].ndim:
        joined = _cat_impl(xp, *arrays, dim=dim)
        shape = arrays[0].shape[:dim] + (len(arrays),) + arrays[0].shape[dim:]
        return joined.reshape(shape)  # splitting one dim: always a view, as torch's
    return _cat_impl(xp, *(a[..., None] for a in arrays), dim=dim)


def _cat_backward(ctx, g):
    """Narrow the gradient back into each input's slice (every input's size is kept in params)."""
    dim = ctx.params["dim"]
    grads, start = [], 0
    for shape, needed in zip(ctx.params["shapes"], ctx.needs_input_grad):
        if len(shape) == 1 and shape[0] == 0:
            grads.append(g.new_zeros(shape) if needed else None)
            continue
        length = shape[dim]
        grads.append(g.narrow(dim, start, length) if needed else None)
        start += length
    return tuple(grads)


_CAT = OpDef("cat", lambda xp, *arrays, dim, shapes: _cat_impl(xp, *arrays, dim=dim), _cat_backward,
             dtype_rule=_cat_rule, upcast_half=False, meta=lambda args, p: _cat_shape(p["shapes"], p["dim"]))


def _stack_backward(ctx, g):
    return g.unbind(ctx.params["dim"])


_STACK = OpDef("stack", _stack_impl, _stack_backward, dtype_rule=_cat_rule,
               upcast_half=False, meta=lambda args, p: tuple(args[0].shape[:p["dim"]]) + (len(args),)
               + tuple(args[0].shape[p["dim"]:]))


def _check_cat(tensors: list, dim: int) -> int:
    """torch's checks and messages; returns the wrapped dim."""
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"expected Tensor as element {position} in argument 0, but got {type(tensor).__name__}"
            )
        if tensor._data.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {position}) cannot be concatenated")
    reference_index = next((i for i, t in enumerate(tensors) if not _is_legacy_empty(t)), None)
    if reference_index is None:
        return wrap_dim(dim, 1)
    reference = tensors[reference_index]
    ndim = reference._data.ndim
    dim = wrap_dim(dim, ndim)
    for position, tensor in enumerate(tensors):
        if _is_legacy_empty(tensor) or position == reference_index:
            continue
        if tensor._data.ndim != ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ndim} and {tensor._data.ndim}"
            )
        for d in range(ndim):
            if d != dim and tensor._data.shape[d] != reference._data.shape[d]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{reference._data.shape[d]} but got size {tensor._data.shape[d]} for tensor number {position} "
                    "in the list."
                )
    return dim


@export(method=False, aliases=("concat", "concatenate"))
def cat(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Concatenate tensors along an existing dim (1-D empty tensors are skipped, as torch does)."""
    tensors = _tensor_list(tensors, "cat")
    dim = _check_cat(tensors, dim)
    shapes = tuple(tuple(t._data.shape) for t in tensors)
    result = call(_CAT, tuple(tensors), {"dim": dim, "shapes": shapes})
    return finish_out(result, out)


@export(method=False)
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join tensors of equal shape along a new dim."""
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):  # torch's argument parser rejects it before any shape check
            raise TypeError(f"expected Tensor as element {position} in argument 0, but got {type(tensor).__name__}")
    first = tuple(tensors[0].shape)
    for position, tensor in enumerate(tensors[1:], start=1):
        if tuple(tensor.shape) != first:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {_shape_text(first)} at entry 0 and "
                f"{_shape_text(tensor.shape)} at entry {position}"
            )
    dim = wrap_dim(dim, len(first) + 1)
    # One op over all inputs, not one unsqueeze per input plus a cat: collate stacks a batch per step.
    return finish_out(call(_STACK, tuple(tensors), {"dim": dim}), out)


@export(method=False)
def hstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors); 0-d tensors become 1-D."""
    tensors = atleast_1d(*_tensor_list(tensors, "hstack"))
    if not isinstance(tensors, tuple):
        tensors = (tensors,)
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1, out=out)


@export(method=False, aliases=("row_stack",))
def vstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 0 after making every tensor at least 2-D."""
    tensors = _tensor_list(tensors, "vstack")
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat([atleast_2d(t) for t in tensors], 0, out=out)


@export(method=False)
def dstack(tensors, *, out=None) -> Tensor:
    """Concatenate along dim 2 after making every tensor at least 3-D."""
    tensors = _tensor_list(tensors, "dstack")
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat([atleast_3d(t) for t in tensors], 2, out=out)


@export(method=False)
def column_stack(tensors, *, out=None) -> Tensor:
    """Stack 0-d/1-D tensors as columns (n -> n x 1) beside 2-D ones, along dim 1."""
    tensors = _tensor_list(tensors, "column_stack")
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    columns = [views.reshape(t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return hstack(columns, out=out)


# ---------------------------------------------------------------- atleast_nd


def _atleast(name, make):
    def fn(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(make(t) for t in tensors[0])
        if len(tensors) == 1:
            return make(tensors[0])
        return tuple(make(t) for t in tensors)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: views with at least {name[-2]} dims (a tuple for several inputs)."
    export(fn, method=False)
    return fn


def _make_1d(tensor: Tensor) -> Tensor:
    return views.reshape(tensor, (1,)) if tensor.ndim == 0 else tensor


def _make_2d(tensor: Tensor) -> Tensor:
    if tensor.ndim == 0:
        return views.reshape(tensor, (1, 1))
    if tensor.ndim == 1:
        return views.unsqueeze(tensor, 0)
    return tensor


def _make_3d(tensor: Tensor) -> Tensor:
    if tensor.ndim == 0:
        return views.reshape(tensor, (1, 1, 1))
    if tensor.ndim == 1:
        return views.unsqueeze(views.unsqueeze(tensor, 0), -1)
    if tensor.ndim == 2:
        return views.unsqueeze(tensor, -1)
    return tensor


atleast_1d = _atleast("atleast_1d", _make_1d)
atleast_2d = _atleast("atleast_2d", _make_2d)
atleast_3d = _atleast("atleast_3d", _make_3d)


# ---------------------------------------------------------------- repeat / tile / repeat_interleave


def _repeat_impl(xp, a, repeats):
    lead = len(repeats) - a.ndim
    return xp.tile(a.reshape((1,) * lead + a.shape), repeats)


def _repeat_backward(ctx, g):
    """Sum the gradient over the copies: view each dim as (repeat, size) and reduce the repeat axes."""
    repeats = ctx.params["repeats"]
    shape = ctx.input_meta[0][0]
    lead = len(repeats) - len(shape)
    padded = (1,) * lead + tuple(shape)
    split_shape, sum_dims = [], []
    for i, (r, n) in enumerate(zip(repeats, padded)):
        sum_dims.append(2 * i)
        split_shape += [r, n]
    if 0 in split_shape:
        return g.new_zeros(shape)
    return g.reshape(split_shape).sum(sum_dims).reshape(shape)


def _repeat_meta(args, params):
    repeats = params["repeats"]
    shape = args[0].shape
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    return tuple(r * n for r, n in zip(repeats, padded))


_REPEAT = OpDef("repeat", _repeat_impl, _repeat_backward, dtype_rule=keep, upcast_half=False, meta=_repeat_meta)


def repeat(input: Tensor, *repeats) -> Tensor:
    """Tensor.repeat: tile the tensor `repeats` times along each dim (leading new dims allowed)."""
    repeats = _int_tuple(views._shape_args(repeats))
    if len(repeats) < input.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    padded = (1,) * (len(repeats) - input.ndim) + tuple(input.shape)
    for r, n in zip(repeats, padded):
        if r < 0:
            sizes = [a * b for a, b in zip(repeats, padded)]
            raise RuntimeError(f"Trying to create tensor with negative dimension {r * n}: {_shape_text(sizes)}")
    return call(_REPEAT, (input,), {"repeats": repeats})


export(repeat, function=False)


@export(method=False)
def tile(input: Tensor, dims) -> Tensor:
    """numpy.tile: repeat, with `dims` padded with leading 1s to the tensor's rank."""
    dims = _int_tuple(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, dims)


def _tile_method(self: Tensor, *sizes, dims=None) -> Tensor:
    """Tensor.tile: as torch.tile, the dims given as one sequence, spread (x.tile(2, 1)) or as `dims=`."""
    return tile(self, views._shape_args(sizes) if dims is None else dims)


_tile_method.__name__ = "tile"
_tile_method.__qualname__ = "Tensor.tile"
export(_tile_method, name="tile", function=False)


def _repeat_interleave_index(repeats: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(repeats), dtype=np.int64), repeats)


@export
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *, output_size: int | None = None):
    """Repeat each element (or slice along `dim`) `repeats` times; torch.repeat_interleave(r) alone gives indices."""
    from . import indexing

    counted = input if repeats is None else repeats
    if isinstance(counted, Tensor) and counted.ndim > 0:  # the counts, read on the host, set the result's size
        _dispatch.host_read("repeat_interleave() with tensor repeats")
    if repeats is None:  # repeat_interleave(repeats): arange(len) repeated
        counts = input
        _check_repeats_tensor(counts)
        index = _repeat_interleave_index(np.asarray(counts._data, np.int64).reshape(-1))
        return Tensor._make(index.astype(counts._dtype.np_dtype), counts._dtype, counts._device)
    if dim is None:
        input = views.flatten(input)
        dim = 0
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim] if input.ndim else 1
    if isinstance(repeats, Tensor) and repeats.ndim > 0:
        _check_repeats_tensor(repeats)
        counts = np.asarray(repeats._data, np.int64).reshape(-1)
        if counts.size == 1:
            counts = np.repeat(counts, size)
        elif counts.size != size:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = {counts.size} and "
                f"input.size({dim}) = {size}"
            )
    else:
        count = int(repeats)
        if count < 0:
            raise RuntimeError("Repeats must be non-negative")
        counts = np.full(size, count, np.int64)
    index = _repeat_interleave_index(counts)
    if output_size is not None and output_size != index.size:
        raise RuntimeError("allocated size does not match required size")
    if input.ndim == 0:
        input = views.reshape(input, (1,))
    return indexing.index_select(input, dim, _index_tensor(index, input))


def _index_tensor(index: np.ndarray, like: Tensor) -> Tensor:
    """A host-computed int64 index as a tensor on `like`'s device."""
    array = np.ascontiguousarray(index, np.int64)
    if like._device.type == "meta":  # the index is host metadata: keep its values
        return Tensor._make(array, dt.int64)
    if like._device.type != "cpu":
        array = device_module(like._device).asarray(array)
    return Tensor._make(array, dt.int64, like._device)


def _check_repeats_tensor(repeats: Tensor) -> None:
    if repeats.ndim > 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("repeats has to be Long or Int tensor")
    if repeats.numel() and int(np.min(repeats._data)) < 0:
        raise RuntimeError("repeats can not be negative")


# ---------------------------------------------------------------- flip / roll / rot90


_FLIP = OpDef("flip", lambda xp, a, dims: xp.flip(a, dims).copy() if dims and a.ndim else a.copy(),
              lambda ctx, g: flip(g, ctx.params["dims"]), dtype_rule=keep, upcast_half=False,
              meta=lambda args, p: args[0].shape)
_FLIP.quantized = True  # torch flips quantized tensors too (their integers, same qparams)


@export(method=False)
def flip(input: Tensor, dims) -> Tensor:
    """Reverse the order of elements along `dims` (a copy, as torch's flip is)."""
    if isinstance(dims, numbers.Integral):
        raise TypeError(f"flip(): argument 'dims' (position 2) must be tuple of ints, not {type(dims).__name__}")
    dims = normalize_dims(tuple(dims), input.ndim) if len(dims) else ()
    return call(_FLIP, (input,), {"dims": dims})


def _flip_method(self: Tensor, *dims) -> Tensor:
    """Tensor.flip(*dims) also takes the dims unpacked."""
    return flip(self, views._shape_args(dims))


export(_flip_method, name="flip", function=False)


@export
def fliplr(input: Tensor) -> Tensor:
    """Flip left-right (dim 1)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@export
def flipud(input: Tensor) -> Tensor:
    """Flip up-down (dim 0)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _roll_backward(ctx, g):
    return roll(g, tuple(-s for s in ctx.params["shifts"]), ctx.params["dims"])


_ROLL = OpDef("roll", lambda xp, a, shifts, dims: xp.roll(a, shifts, dims), _roll_backward, dtype_rule=keep,
              upcast_half=False, meta=lambda args, p: args[0].shape)


@export
def roll(input: Tensor, shifts, dims=None) -> Tensor:
    """Rotate elements along `dims` by `shifts` (without dims: over the flattened tensor, shape kept)."""
    shifts = _int_tuple(shifts)
    dims = () if dims is None else _int_tuple(dims)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        flat = views.flatten(input)
        return views.view(call(_ROLL, (flat,), {"shifts": shifts, "dims": (0,)}), input.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    dims = tuple(wrap_dim(d, input.ndim) for d in dims)
    return call(_ROLL, (input,), {"shifts": shifts, "dims": dims})


@export
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees k times in the plane of `dims` (from the first towards the second)."""
    dims = _int_tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {first} and dim1 = {second}")
    k %= 4
    if k == 1:
        return views.transpose(flip(input, (second,)), first, second)
    if k == 2:
        return flip(input, (first, second))
    if k == 3:
        return views.transpose(flip(input, (first,)), first, second)
    from .conversion import clone

    return clone(input)


# ---------------------------------------------------------------- triangles


def _triangle(name, function):
    op = OpDef(name, lambda xp, a, diagonal: getattr(xp, function)(a, diagonal), None, dtype_rule=keep,
               upcast_half=False, meta=lambda args, p: args[0].shape)

    def fn(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return finish_out(call(op, (input,), {"diagonal": int(diagonal)}), out)

    op.backward = lambda ctx, g: fn(g, ctx.params["diagonal"])
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: zero the elements {'above' if name == 'tril' else 'below'} the `diagonal`-th diagonal."
    export(fn, inplace=True)
    return fn


tril = _triangle("tril", "tril")
triu = _triangle("triu", "triu")


# ---------------------------------------------------------------- diagonals


def _diag_embed_impl(xp, a, offset, dim1, dim2):
    n = a.shape[-1]
    size = n + abs(offset)
    out = xp.zeros(a.shape[:-1] + (size, size), a.dtype)
    index = xp.arange(n)
    out[..., index + max(-offset, 0), index + max(offset, 0)] = a
    return xp.moveaxis(out, (-2, -1), (dim1, dim2)).copy()


def _diag_embed_meta(args, params):
    shape = list(args[0].shape[:-1])
    size = args[0].shape[-1] + abs(params["offset"])
    dim1, dim2 = params["dim1"], params["dim2"]
    for d in sorted((dim1, dim2)):
        shape.insert(d, size)
    return tuple(shape)


_DIAG_EMBED = OpDef(
    "diag_embed", _diag_embed_impl,
    lambda ctx, g: views.diagonal(g, ctx.params["offset"], ctx.params["dim1"], ctx.params["dim2"]),
    dtype_rule=keep, upcast_half=False, meta=_diag_embed_meta,
)


@export
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices whose `offset` diagonals (in the planes dim1, dim2) are the last dim of `input`."""
    ndim = input.ndim + 1
    dim1, dim2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input.ndim == 0:
        wrap_dim(-1, 0)
    return call(_DIAG_EMBED, (input,), {"offset": int(offset), "dim1": dim1, "dim2": dim2})


@export
def diag(input: Tensor, diagonal: int = 0, *, out=None) -> Tensor:
    """1-D -> a square matrix with `input` on a diagonal; 2-D -> a copy of that diagonal."""
    if input.ndim == 1:
        result = diag_embed(input, diagonal, 0, 1)
    elif input.ndim == 2:
        from .conversion import clone

        result = clone(views.diagonal(input, diagonal))
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return finish_out(result, out)


@export
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened input on its `offset` diagonal."""
    return diag_embed(views.reshape(input, (-1,)), offset, 0, 1)


# ---------------------------------------------------------------- grids and combinations


@export(method=False)
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids (views, via expand) from 0-d/1-D tensors; 'ij' (default) or 'xy' (first two dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
            UserWarning, stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for tensor in tensors:
        if tensor.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {tensor}"
            )
        if tensor._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if tensor._device != tensors[0]._device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    swap = indexing == "xy" and len(tensors) >= 2
    ordered = list(tensors)
    if swap:
        ordered[0], ordered[1] = ordered[1], ordered[0]
    shape = tuple(t.numel() for t in ordered)
    count = len(ordered)
    grids = []
    for i, tensor in enumerate(ordered):
        view_shape = (1,) * i + (-1,) + (1,) * (count - i - 1)
        grids.append(views.expand(views.view(tensor, view_shape), shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _check_vectors(tensors) -> None:
    for tensor in tensors:
        if tensor.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {_shape_text(tensor.shape)}")


@export(method=False)
def cartesian_prod(*tensors) -> Tensor:
    """All tuples of one element from each 1-D tensor, as rows (one tensor: returned as is)."""
    _check_vectors(tensors)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([views.flatten(g) for g in grids], 1)


@export(method=False)
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """All length-r combinations of the elements of a 1-D tensor, as rows (itertools order)."""
    from . import indexing

    _check_vectors((input,))
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    generate = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = np.array(list(generate(range(input.shape[0]), r)), np.int64).reshape(-1, r)
    columns = [indexing.index_select(input, 0, _index_tensor(rows[:, i], input)) for i in range(r)]
    return stack(columns, 1)

