"""Indexing: __getitem__/__setitem__ (basic, advanced, boolean), gather/scatter, index_* ops, masks, nonzero.

Basic indexing (ints, slices, None, Ellipsis) is a view (views.selecting_view);
anything with an integer or boolean tensor/list is advanced indexing, a copy,
whose backward is index_put with accumulate=True.  NumPy's indexing rules are
torch's (including where advanced dims land), so a normalised key is handed to
the array module as is.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import _dtype as dt
from .._autograd.grad_mode import state
from .._dispatch import SAVE_INPUTS, OpDef, call, keep
from .._tensor import Tensor, wrap_dim
from ._api import export, write_out
from .views import selecting_view

# ---------------------------------------------------------------- keys


def _component(item, size_of_dim):
    """One index component as NumPy wants it; advanced components become int64/bool arrays."""
    if isinstance(item, Tensor):
        if item._dtype is dt.bool_ or item._dtype is dt.uint8:
            return np.asarray(item._data, bool), True
        if item._dtype.category != 1:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return np.asarray(item._data, np.int64), True
    if isinstance(item, (list, tuple)):
        array = np.array([i.item() if isinstance(i, Tensor) else i for i in item])
        if array.dtype == np.bool_:
            return array, True
        if array.size == 0:
            array = array.astype(np.int64)
        if array.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return array.astype(np.int64), True
    if isinstance(item, np.ndarray):
        return item, True
    if isinstance(item, slice):
        step = item.step
        if step is not None and _int(step) <= 0:
            raise ValueError("step must be greater than zero")
        return slice(_int_or_none(item.start), _int_or_none(item.stop), _int_or_none(step)), False
    if item is None or item is Ellipsis:
        return item, False
    if isinstance(item, (bool, np.bool_)):
        return np.array(item), True
    if isinstance(item, numbers.Integral):
        return int(item), False
    raise IndexError(
        "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got "
        f"{type(item).__name__})"
    )


def _int(value):
    return int(value.item()) if isinstance(value, Tensor) else int(value)


def _int_or_none(value):
    return None if value is None else _int(value)


def normalize_key(tensor: Tensor, key) -> tuple:
    """(key tuple, advanced?) with ints bounds-checked against torch's message."""
    if not isinstance(key, tuple):
        key = (key,)
    parts, advanced = [], False
    for item in key:
        part, is_advanced = _component(item, None)
        parts.append(part)
        advanced = advanced or is_advanced
    _check_bounds(tensor.shape, parts)
    return tuple(parts), advanced


def _check_bounds(shape, parts) -> None:
    consumed = [p for p in parts if p is not None and p is not Ellipsis]
    dims_used = sum(p.ndim if isinstance(p, np.ndarray) and p.dtype == np.bool_ else 1 for p in consumed)
    if dims_used > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for index, part in enumerate(parts):
        if part is Ellipsis:
            remaining = [p for p in parts[index + 1:] if p is not None and p is not Ellipsis]
            dim = len(shape) - sum(p.ndim if isinstance(p, np.ndarray) and p.dtype == np.bool_ else 1
                                   for p in remaining)
            continue
        if part is None:
            continue
        if isinstance(part, int):
            size = shape[dim]
            if part < -size or part >= size:
                raise IndexError(f"index {part} is out of bounds for dimension {dim} with size {size}")
        elif isinstance(part, np.ndarray) and part.dtype != np.bool_ and part.size:
            size = shape[dim]
            bad = part[(part < -size) | (part >= size)]
            if bad.size:
                raise IndexError(f"index {int(bad.flat[0])} is out of bounds for dimension {dim} with size {size}")
        elif isinstance(part, np.ndarray) and part.dtype == np.bool_ and part.ndim:
            expected = shape[dim:dim + part.ndim]
            if tuple(part.shape) != tuple(expected):
                raise IndexError(
                    f"The shape of the mask [{', '.join(map(str, part.shape))}] at index {dim} does not match the "
                    f"shape of the indexed tensor [{', '.join(map(str, expected))}] at index {dim}"
                )
            dim += part.ndim
            continue
        dim += 1


# ---------------------------------------------------------------- getitem


_BASIC_INDEX = selecting_view("slice", lambda xp, a, key: a[key], grad_name="SliceBackward0")


def _index_impl(xp, a, key):
    return a[key]


def _index_backward(ctx, g):
    zeros = g.new_zeros(ctx.input_meta[0][0])
    return call(_INDEX_PUT, (zeros, g), {"key": ctx.params["key"], "accumulate": True})


_INDEX = OpDef("index", _index_impl, _index_backward, dtype_rule=keep, upcast_half=False)


def getitem(self: Tensor, key) -> Tensor:
    """self[key] with torch's semantics."""
    if type(key) is int and self._data.ndim:
        size = self._data.shape[0]
        if key < -size or key >= size:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {size}")
        return call(_BASIC_INDEX, (self,), {"key": (key,)})
    if self._data.ndim == 0 and key is not None and key is not Ellipsis and not (
        isinstance(key, tuple) and all(k is None or k is Ellipsis for k in key)
    ) and not isinstance(key, (Tensor, list, bool)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    parts, advanced = normalize_key(self, key)
    if advanced:
        return call(_INDEX, (self,), {"key": parts})
    return call(_BASIC_INDEX, (self,), {"key": parts})


# ---------------------------------------------------------------- index_put / setitem


def _index_put_impl(xp, a, values, key, accumulate):
    out = a.copy()
    if accumulate:
        xp.add.at(out, key, values)
    else:
        out[key] = values
    return out


def _index_put_backward(ctx, g):
    key = ctx.params["key"]
    grad_self = grad_values = None
    if ctx.needs_input_grad[0]:
        grad_self = g if ctx.params["accumulate"] else call(
            _INDEX_PUT, (g, g.new_zeros(())), {"key": key, "accumulate": False}
        )
    if ctx.needs_input_grad[1]:
        grad_values = call(_INDEX, (g,), {"key": key})
    return grad_self, grad_values


def _index_put_rule(args, params):
    return args[0]._dtype, args[0]._dtype


_INDEX_PUT = OpDef("index_put", _index_put_impl, _index_put_backward, dtype_rule=_index_put_rule,
                   upcast_half=False, meta=lambda args, p: args[0].shape)


def _as_value(self: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        if value._device != self._device and value._data.ndim:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {self._device} and "
                f"{value._device}!"
            )
        return value if value._dtype is self._dtype else value.to(self._dtype)
    return Tensor._make(np.asarray(value, self._dtype.np_dtype), self._dtype, self._device)


def setitem(self: Tensor, key, value) -> None:
    """self[key] = value: an in-place index_put; with autograd, computed out of place (see _tensor.py NOTE)."""
    parts, _ = normalize_key(self, key)
    value = _as_value(self, value)
    if state.enabled and (self._requires_grad or value._requires_grad):
        self._check_inplace()
        result = call(_INDEX_PUT, (self, value), {"key": parts, "accumulate": False})
        self._inplace_from(result)
        return
    if self._device.type != "meta":
        target = self._data
        try:
            target[parts] = value._data
        except ValueError as error:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                               f"indexing result of shape {list(np.shape(target[parts]))}") from error
    self._storage.version += 1


def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """Out-of-place index_put: input with input[indices] = values (or += with accumulate)."""
    parts, _ = normalize_key(input, tuple(indices))
    values = _as_value(input, values)
    return call(_INDEX_PUT, (input, values), {"key": parts, "accumulate": bool(accumulate)})


export(index_put, inplace=True)


# ---------------------------------------------------------------- gather / scatter


def _check_index_tensor(name: str, index: Tensor) -> None:
    if index._dtype is not dt.int64:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")


def _gather_impl(xp, a, index, dim):
    if a.ndim == 0:
        return a[()] if index.ndim == 0 else xp.broadcast_to(a, index.shape).copy()
    return xp.take_along_axis(a, index, axis=dim)


def _gather_backward(ctx, g):
    _, index = ctx.inputs
    shape = ctx.input_meta[0][0]
    return g.new_zeros(shape).scatter_add(ctx.params["dim"], index, g), None


_GATHER = OpDef("gather", _gather_impl, _gather_backward, dtype_rule=keep, upcast_half=False, saves=SAVE_INPUTS,
                meta=lambda args, p: args[1].shape)


@export
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False, out=None) -> Tensor:
    """out[i][j] = input[index[i][j]][j] along `dim`."""
    _check_index_tensor("gather", index)
    dim = wrap_dim(dim, input.ndim)
    if index.ndim != input.ndim and input.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d in range(index.ndim):
        if d != dim and index.shape[d] > input.shape[d]:
            raise RuntimeError(
                f"Size does not match at dimension {d} expected index {list(index.shape)} to be no larger than "
                f"self {list(input.shape)} apart from dimension {dim}"
            )
    _bounds(index, input.shape[dim] if input.ndim else 1, "gather")
    if index.shape != input.shape:
        cropped = tuple(slice(0, index.shape[d]) if d != dim else slice(None) for d in range(input.ndim))
        input = input[cropped] if input.ndim else input
    result = call(_GATHER, (input, index), {"dim": dim})
    return result if out is None else write_out(out, result)


def _bounds(index: Tensor, size: int, name: str) -> None:
    if index.numel() and index._device.type != "meta":
        low, high = int(index._data.min()), int(index._data.max())
        if low < -size or high >= size:
            bad = low if low < -size else high
            raise RuntimeError(f"index {bad} is out of bounds for dimension with size {size}")


def _scatter_positions(xp, index, dim):
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


_REDUCERS = {"sum": np.add, "add": np.add, "prod": np.multiply, "multiply": np.multiply,
             "amax": np.maximum, "amin": np.minimum}


def _scatter_impl(xp, a, index, src, dim, reduce):
    out = a.copy()
    if out.ndim == 0:
        out = out.reshape(1)
        index = index.reshape(-1)
        src = np.broadcast_to(src, index.shape)
        dim = 0
    if np.ndim(src) == 0:
        src = np.broadcast_to(src, index.shape)
    else:
        src = src[tuple(slice(0, n) for n in index.shape)]
    positions = _scatter_positions(xp, index, dim)
    if reduce is None:
        out[positions] = src
    else:
        _REDUCERS[reduce].at(out, positions, src)
    return out.reshape(a.shape)


def _scatter_backward(ctx, g):
    _, index, src = ctx.inputs
    dim = ctx.params["dim"]
    reduce = ctx.params["reduce"]
    grad_self = grad_src = None
    if reduce is None:
        if ctx.needs_input_grad[0]:
            grad_self = g.scatter(dim, index, 0.0)
        if ctx.needs_input_grad[2]:
            grad_src = _crop_to(g.gather(dim, index), src)
    elif reduce in ("sum", "add"):
        grad_self = g
        if ctx.needs_input_grad[2]:
            grad_src = _crop_to(g.gather(dim, index), src)
    else:
        raise NotImplementedError(f"the gradient of scatter with reduce='{reduce}' is not implemented")
    return grad_self, None, grad_src


def _crop_to(grad, src):
    if isinstance(src, Tensor) and tuple(grad.shape) != tuple(src.shape):
        padded = grad.new_zeros(src.shape)
        key = tuple(slice(0, n) for n in grad.shape)
        padded[key] = grad
        return padded
    return grad


_SCATTER = OpDef("scatter", _scatter_impl, _scatter_backward, dtype_rule=lambda a, p: (a[0]._dtype, a[0]._dtype),
                 upcast_half=False, saves=SAVE_INPUTS, meta=lambda args, p: args[0].shape)


def _scatter_checks(name, input, dim, index, src):
    _check_index_tensor(name, index)
    dim = wrap_dim(dim, input.ndim)
    if index.ndim != input.ndim and input.ndim and index.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and src._dtype is not input._dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    _bounds(index, input.shape[dim] if input.ndim else 1, name)
    return dim


@export(inplace=True)
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """Out-of-place scatter: input with input[index[i][j]][j] = src[i][j] along `dim`."""
    if src is None:
        src = value
    dim = _scatter_checks("scatter", input, dim, index, src)
    if reduce is not None:
        reduce = {"add": "sum", "multiply": "prod"}[reduce]
    return call(_SCATTER, (input, index, src), {"dim": dim, "reduce": reduce})


@export(inplace=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Like scatter, adding src into the selected positions."""
    dim = _scatter_checks("scatter_add", input, dim, index, src)
    return call(_SCATTER, (input, index, src), {"dim": dim, "reduce": "sum"})


@export(inplace=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Scatter with reduce in {'sum','prod','mean','amax','amin'}; include_self as torch."""
    dim = _scatter_checks("scatter_reduce", input, dim, index, src)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    counts = None
    base = input
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if input._dtype.category < 2 and reduce in ("amax", "amin"):
            info = dt.iinfo(input._dtype)
            identity = info.min if reduce == "amax" else info.max
        touched = input.new_zeros(input.shape, dtype=dt.bool_).scatter(dim, index, True)
        base = input.masked_fill(touched, identity)
    if reduce == "mean":
        ones = src.new_ones(src.shape)
        counts = input.new_zeros(input.shape).scatter_add(dim, index, ones)
        if include_self:
            counts = counts + 1
        total = call(_SCATTER, (base, index, src), {"dim": dim, "reduce": "sum"})
        result = total / counts.clamp(min=1)
        if input._dtype.category < 2:
            result = result.div(1, rounding_mode="floor").to(input._dtype)
        return result.where(counts > 0, input) if not include_self else result
    result = call(_SCATTER, (base, index, src), {"dim": dim, "reduce": reduce})
    if not include_self:
        touched = input.new_zeros(input.shape, dtype=dt.bool_).scatter(dim, index, True)
        result = result.where(touched, input)
    return result


# ---------------------------------------------------------------- index_* along one dim


def _dim_key(ndim, dim, index):
    return (slice(None),) * dim + (index,)


@export
def index_select(input: Tensor, dim: int, index: Tensor, *, out=None) -> Tensor:
    """The slices of `input` along `dim` at `index` (a 1-D integer tensor)."""
    dim = wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    size = input.shape[dim] if input.ndim else 1
    _bounds(index, size, "index_select")
    if input.ndim == 0:
        return call(_INDEX, (input.reshape(1),), {"key": (np.asarray(index._data, np.int64).reshape(-1),)}).reshape(
            index.shape)
    key = _dim_key(input.ndim, dim, np.asarray(index._data, np.int64).reshape(-1))
    result = call(_INDEX, (input,), {"key": key})
    return result if out is None else write_out(out, result)


def _index_along(input, dim, index, source, accumulate, alpha=1):
    dim = wrap_dim(dim, input.ndim)
    key = _dim_key(input.ndim, dim, np.asarray(index._data, np.int64).reshape(-1))
    if alpha != 1:
        source = source * alpha
    return call(_INDEX_PUT, (input, _as_value(input, source)), {"key": key, "accumulate": accumulate})


@export(inplace=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """input with source's slices added at `index` along `dim` (repeated indices accumulate)."""
    return _index_along(input, dim, index, source, True, alpha)


@export(inplace=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    return _index_along(input, dim, index, source, False)


@export(inplace=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    dim = wrap_dim(dim, input.ndim)
    key = _dim_key(input.ndim, dim, np.asarray(index._data, np.int64).reshape(-1))
    value = value if isinstance(value, Tensor) else Tensor._make(np.asarray(value, input._dtype.np_dtype),
                                                                  input._dtype, input._device)
    return call(_INDEX_PUT, (input, value.to(input._dtype)), {"key": key, "accumulate": False})


# ---------------------------------------------------------------- masks


def _masked_fill_impl(xp, a, mask, value):
    return xp.where(mask, value, a)


def _masked_fill_backward(ctx, g):
    mask = ctx.inputs[1]
    grad_value = None
    if ctx.needs_input_grad[2]:
        grad_value = g.masked_fill(~mask, 0.0).sum()
    return g.masked_fill(mask, 0.0), None, grad_value


_MASKED_FILL = OpDef("masked_fill", _masked_fill_impl, _masked_fill_backward,
                     dtype_rule=lambda a, p: (a[0]._dtype, a[0]._dtype), upcast_half=False, saves=SAVE_INPUTS,
                     meta=lambda args, p: args[0].shape)


@export(inplace=True)
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """input with `value` where mask is True (mask broadcasts to input)."""
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask._dtype}")
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    from ._shapes import broadcast_shapes

    if broadcast_shapes(input.shape, mask.shape) != tuple(input.shape):
        raise RuntimeError(
            f"The size of tensor a ({input.shape[-1] if input.ndim else 1}) must match the size of tensor b "
            f"({mask.shape[-1]}) at non-singleton dimension {max(mask.ndim, input.ndim) - 1}"
        )
    if isinstance(value, Tensor):
        value = value.to(input._dtype)
    return call(_MASKED_FILL, (input, mask, value))


_MASKED_SELECT = OpDef("masked_select", lambda xp, a, mask: xp.broadcast_arrays(a, mask)[0][
    xp.broadcast_arrays(a, mask)[1]], None, dtype_rule=keep, upcast_half=False, saves=SAVE_INPUTS)


def _masked_select_backward(ctx, g):
    a, mask = ctx.inputs
    from ._shapes import broadcast_shapes

    shape = broadcast_shapes(a.shape, mask.shape)
    return g.new_zeros(shape).masked_scatter(mask.expand(shape), g), None


_MASKED_SELECT.backward = _masked_select_backward


@export
def masked_select(input: Tensor, mask: Tensor, *, out=None) -> Tensor:
    """The 1-D tensor of elements where mask (broadcast) is True."""
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask")
    result = call(_MASKED_SELECT, (input, mask))
    return result if out is None else write_out(out, result)


def _masked_scatter_impl(xp, a, mask, source):
    out = a.copy()
    mask = xp.broadcast_to(mask, a.shape)
    count = int(mask.sum())
    out[mask] = source.reshape(-1)[:count]
    return out


def _masked_scatter_backward(ctx, g):
    _, mask, source = ctx.inputs
    grad_source = None
    if ctx.needs_input_grad[2]:
        selected = g.masked_select(mask)
        flat = source.new_zeros(source.numel())
        flat[: selected.numel()] = selected
        grad_source = flat.reshape(source.shape)
    return g.masked_fill(mask, 0.0), None, grad_source


_MASKED_SCATTER = OpDef("masked_scatter", _masked_scatter_impl, _masked_scatter_backward,
                        dtype_rule=lambda a, p: (a[0]._dtype, a[0]._dtype), upcast_half=False, saves=SAVE_INPUTS,
                        meta=lambda args, p: args[0].shape)


@export(inplace=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """input with the positions where mask is True filled, in order, from source."""
    if int(mask.sum().item()) > source.numel():
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as ones in mask")
    return call(_MASKED_SCATTER, (input, mask, source))


# ---------------------------------------------------------------- take, nonzero


def _take_impl(xp, a, index):
    return a.reshape(-1)[index]


def _take_backward(ctx, g):
    _, index = ctx.inputs
    shape = ctx.input_meta[0][0]
    flat = g.new_zeros(int(np.prod(shape)))
    flat = call(_INDEX_PUT, (flat, g.reshape(-1)), {"key": (np.asarray(index._data, np.int64).reshape(-1),),
                                                    "accumulate": True})
    return flat.reshape(shape), None


_TAKE = OpDef("take", _take_impl, _take_backward, dtype_rule=keep, upcast_half=False, saves=SAVE_INPUTS,
              meta=lambda args, p: args[1].shape)


@export
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened input at `index` (result has index's shape)."""
    _bounds(index, input.numel(), "take")
    if index._dtype is not dt.int64:
        raise RuntimeError("take(): Expected a long tensor for index, but got " + str(index._dtype))
    return call(_TAKE, (input, index))


@export
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """gather along `dim` with broadcasting of the non-indexed dims (numpy.take_along_axis)."""
    if dim is None:
        return take(input, indices.reshape(-1)) if out is None else write_out(out, take(input, indices.reshape(-1)))
    dim = wrap_dim(dim, input.ndim)
    from ._shapes import broadcast_shapes

    shape_in = list(input.shape)
    shape_idx = list(indices.shape)
    shape_in[dim] = shape_idx[dim] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_idx)))
    input_shape, index_shape = list(common), list(common)
    input_shape[dim], index_shape[dim] = input.shape[dim], indices.shape[dim]
    result = gather(input.expand(input_shape), dim, indices.expand(index_shape))
    return result if out is None else write_out(out, result)


_NONZERO = OpDef("nonzero", lambda xp, a: xp.argwhere(a).astype(np.int64), None,
                 dtype_rule=lambda a, p: (None, dt.int64), upcast_half=False)


def _nonzero_meta(args, params):
    raise NotImplementedError("aten::nonzero: the meta device cannot compute a data-dependent output shape")


_NONZERO.meta = _nonzero_meta


@export
def nonzero(input: Tensor, *, out=None, as_tuple: bool = False):
    """Indices of nonzero elements: (n, ndim) int64, or a tuple of 1-D index tensors."""
    result = call(_NONZERO, (input if input.ndim else input.reshape(1),))
    if as_tuple:
        if input.ndim == 0:
            return (result[:, 0],)
        return tuple(result[:, d] for d in range(input.ndim))
    if input.ndim == 0:
        result = result[:, :0]
    return result if out is None else write_out(out, result)


@export
def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


def _item_method_install():
    return {"__getitem__": getitem, "__setitem__": setitem}
