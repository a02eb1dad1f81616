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

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import state
from .._autograd.node import name_node
from .._backends import MetaArray, to_host
from .._dispatch import SAVE_INPUTS, OpDef, call, keep
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim, write_array
from ._api import export, finish_out
from ._index_keys import (
    IndexKey,
    _index_array,
    _select,
    _specified_dims,
    _traced_index,
    _zero_dim_key_error,
    advanced_key,
    apply_key,
    normalize_key,
    scalar_array,
)
from .views import _SLICE

# ---------------------------------------------------------------- getitem


_BASIC_INDEX = _SLICE  # x[ints, slices, None, ...]: the one slicing view op (views.py declares it)


def _index_impl(xp, a, key):
    return apply_key(a, key)


def _index_backward(ctx, g):
    zeros = g.new_zeros(ctx.input_meta[0][0])
    return call(_INDEX_PUT, (zeros, g), {"key": ctx.params["key"], "accumulate": True})


_INDEX = OpDef("index", _index_impl, _index_backward, dtype_rule=keep, upcast_half=False)


def getitem(self: Tensor, key) -> Tensor:
    """self[key] with torch's semantics: NOTE [ torch's indexing, in two stages ]."""
    if type(key) is int and self._data.ndim:  # the common case, without building an IndexKey
        _select(self._data.shape[0], key, 0)
        result = call(_BASIC_INDEX, (self,), {"key": (key, Ellipsis)})
        if result._grad_fn is not None:
            name_node(result, "SelectBackward0")
        return result
    _zero_dim_key_error(self, key)
    index_key = normalize_key(self, key)
    result = self
    if index_key.basic is not None or index_key.advanced is None:
        result = call(_BASIC_INDEX, (self,), {"key": index_key.basic or (Ellipsis,)})
    if index_key.advanced is not None:
        result = call(_INDEX, (result,), {"key": IndexKey(None, index_key.advanced)})
    elif result._grad_fn is not None:
        name = _basic_index_name(self.shape, key)
        if name is not None:
            name_node(result, name)
    return result


def _basic_index_name(shape: tuple, key) -> str | None:
    """torch applies a basic index part by part: select for an int, slice, unsqueeze for None, nothing for a
    slice that keeps a whole dim; its result's grad_fn is the last node applied (AliasBackward0 if none; a
    bare `[:]` is a slice).  ember indexes in one op: this is the name torch's chain would end with (None for
    a key of other parts, left as it is)."""
    if isinstance(key, slice) and key == slice(None):
        return "SliceBackward0"
    parts = key if isinstance(key, tuple) else (key,)
    name, dim = "AliasBackward0", 0
    indexed = sum(1 for part in parts if part is not None and part is not Ellipsis)
    for part in parts:
        if part is Ellipsis:
            dim += len(shape) - indexed
        elif part is None:
            name = "UnsqueezeBackward0"
        elif isinstance(part, slice):
            if dim >= len(shape):
                return None
            if part.indices(shape[dim]) != (0, shape[dim], 1):
                name = "SliceBackward0"
            dim += 1
        elif isinstance(part, (int, np.integer)) and not isinstance(part, bool):
            name, dim = "SelectBackward0", dim + 1
        else:
            return None
    return name


# ---------------------------------------------------------------- index_put / setitem


def _index_put_impl(xp, a, values, key, accumulate):
    out = a.copy()
    region = out if key.basic is None else out[key.basic]
    if key.advanced is None:
        region[...] = values
    elif accumulate:
        _add_at(xp, region, key.advanced, values)
    else:
        region[key.advanced] = values
    return out


def _add_at(xp, region, advanced, values) -> None:
    """region[advanced] += values with repeated indices adding up (ufunc.at).  NumPy's add.at is slow for rows
    (embedding backward: 4.5 ms for 2048 rows of 256); rows picked by one index array are added by a C loop in
    index order as torch's CPU kernel does (ember/_compile/loops.py, ~0.1 ms; same bits as torch) or, without a
    compiler, grouped by a stable sort and summed with add.reduceat (0.7 ms; reduceat's own summation order)."""
    index = advanced[0] if len(advanced) == 1 else None
    if (xp.__name__ != "numpy" or getattr(index, "ndim", 0) != 1 or index.dtype.kind not in "iu" or region.ndim < 2
            or values.shape != index.shape + region.shape[1:]):
        xp.add.at(region, advanced, values)
        return
    index = xp.where(index < 0, index + region.shape[0], index)  # -1 and n-1 are one row
    if index.size and 0 <= index.min() and index.max() < region.shape[0]:
        from .._compile.loops import add_rows

        if add_rows(region, index, values):
            return
    order = xp.argsort(index, kind="stable")
    ordered = index[order]
    starts = xp.flatnonzero(xp.concatenate(([True], ordered[1:] != ordered[:-1]))) if ordered.size else ordered
    if not starts.size:
        return
    region[ordered[starts]] += xp.add.reduceat(values[order], starts, axis=0)


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


def _snapshot_key(params: dict) -> dict:
    """The params with the key's index arrays copied: they are views of the index tensors (a mask, a LongTensor),
    which the caller may overwrite before backward.  torch saves those tensors and raises at backward if they
    changed; ember's backward uses the values the forward used."""
    key = params["key"]
    if key.advanced is None:
        return params
    advanced = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in key.advanced)
    return {**params, "key": IndexKey(key.basic, advanced)}


_INDEX.snapshot = _INDEX_PUT.snapshot = _snapshot_key

def _setitem_value(self: Tensor, value) -> Tensor:
    """torch's valueToTensor: tensors as they are, Python numbers as 0-d tensors of self's dtype."""
    if isinstance(value, Tensor):
        if value._device != self._device and value._data.ndim:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, {self._device} and "
                f"{value._device}!"
            )
        return value
    if isinstance(value, (numbers.Number, np.bool_)) and not isinstance(value, np.ndarray):
        return Tensor._make(scalar_array(value, self._dtype), self._dtype, self._device)
    kind = type(value)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    raise TypeError(f"can't assign a {name} to a torch.{SCALAR_NAMES[self._dtype.name]}Tensor")


def _strip_leading_ones(value: Tensor) -> Tensor:
    shape = tuple(value.shape)
    lead = 0
    while lead < len(shape) and shape[lead] == 1:
        lead += 1
    return value if lead == 0 else value.reshape(shape[lead:])


def _region_shape(shape: tuple, key: IndexKey) -> tuple:
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape, (0,) * len(shape))
    return apply_key(dummy, key).shape


def _format(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _copy_to_value(self: Tensor, value: Tensor, region: tuple) -> Tensor:
    """The value of a basic-index assignment (torch's copy_to): cast, leading 1s dropped, expandable."""
    if tuple(value.shape) != region and value.ndim:
        value = _strip_leading_ones(value)
        if value.ndim > len(region):
            raise RuntimeError(
                f"expand(torch.{SCALAR_NAMES[value._dtype.name]}Tensor{{{_format(value.shape)}}}, size="
                f"{_format(region)}): the number of sizes provided ({len(region)}) must be greater or equal to the "
                f"number of dimensions in the tensor ({value.ndim})"
            )
        lead = len(region) - value.ndim
        for i, (want, have) in enumerate(zip(region[lead:], value.shape)):
            if have != want and have != 1:
                raise RuntimeError(
                    f"The expanded size of the tensor ({want}) must match the existing size ({have}) at "
                    f"non-singleton dimension {lead + i}.  Target sizes: {_format(region)}.  Tensor sizes: "
                    f"{_format(value.shape)}"
                )
    return value if value._dtype is self._dtype else value.to(self._dtype)


def _index_put_value(self: Tensor, value: Tensor, key: IndexKey, region: tuple, accumulate: bool) -> Tensor:
    """The value of an advanced-index assignment (torch's index_put_): a one-element value with one boolean mask
    is a masked_fill (cast); otherwise dtypes must match and the value must broadcast to the indexed region."""
    arrays = [a for a in key.advanced if isinstance(a, np.ndarray)]
    if not accumulate and value.numel() == 1 and len(arrays) == 1 and arrays[0].dtype == np.bool_:
        value = value.reshape(())
        return value if value._dtype is self._dtype else value.to(self._dtype)
    if value._dtype is not self._dtype:
        raise RuntimeError(
            "Index put requires the source and destination dtypes match, got "
            f"{SCALAR_NAMES[self._dtype.name]} for the destination and {SCALAR_NAMES[value._dtype.name]} for the "
            "source."
        )
    try:
        if np.broadcast_shapes(tuple(value.shape), region) != region:
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {_format(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {_format(region)}") from None
    return value


def _put(self: Tensor, key: IndexKey, value: Tensor, accumulate: bool = False) -> Tensor:
    """Write value into self[key] in place (out of place + _inplace_from under autograd: _tensor.py NOTE)."""
    # (under ember.compile's tracer the write must be an op the graph records: written straight into the
    # array, a capture replayed the tensor's first contents, e.g. F.pad's zeros without the copied input)
    if (state.enabled and (self._requires_grad or value._requires_grad) or _dispatch.tracer is not None
            or _dispatch.forward_ad is not None):  # (forward AD: the op call gives the tangent)
        self._check_inplace()
        result = call(_INDEX_PUT, (self, value), {"key": key, "accumulate": accumulate})
        return self._inplace_from(result)
    self._check_inference_write()
    if self._device.type != "meta":
        region = self._data if key.basic is None else self._data[key.basic]
        if key.advanced is None:
            write_array(region, value._data)
        elif accumulate:
            np.add.at(region, key.advanced, value._data)
        else:
            region[key.advanced] = value._data
    self._bump_version()
    return self


def _basic_key_is_view(self: Tensor, basic) -> bool:
    """Whether torch's slicing for a basic key makes a view rather than returning self: an int, a None or a
    slice not spanning its whole dim (torch skips a slice [0:size:1])."""
    if basic is None:
        return False
    shape = tuple(self.shape)
    explicit = sum(1 for k in basic if k is not None and k is not Ellipsis)
    dim = 0
    for k in basic:
        if k is Ellipsis:
            dim += len(shape) - explicit
        elif isinstance(k, slice):
            if k.indices(shape[dim]) != (0, shape[dim], 1):
                return True
            dim += 1
        else:
            return True
    return False


def setitem(self: Tensor, key, value) -> None:
    """self[key] = value with torch's semantics (python_variable_indexing.cpp THPVariable_setitem)."""
    scalar = not isinstance(value, Tensor) or value.ndim == 0
    _refuse_byte_mask_fill(key if isinstance(key, tuple) else (key,), value, False)
    value = _setitem_value(self, value)
    if key is False:  # torch's single-key fast path: nothing to write
        return
    if key is True:
        key = None
    _zero_dim_key_error(self, key)
    index_key = normalize_key(self, key)
    region = _region_shape(tuple(self.shape), index_key)
    if index_key.advanced is None:
        if state.enabled and self._requires_grad and self._grad_fn is None and self._base is None \
                and _basic_key_is_view(self, index_key.basic):
            # torch writes through the view self[key] (a copy_), so it names the view
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
        value = _copy_to_value(self, value, region)
    else:
        value = _index_put_value(self, _strip_leading_ones(value), index_key, region, False)
    _put(self, index_key, value)
    if index_key.advanced is None and self._base is None and self._grad_fn is not None:
        # torch's node: a whole-tensor key writes self itself (fill_ a scalar, else copy_); any other key copies
        # into the view self[key], which makes the base's node CopySlices
        whole = (isinstance(key, slice) and key == slice(None)) or _basic_index_name(self.shape, key) == \
            "AliasBackward0"
        name_node(self, "CopySlices" if not whole else "FillBackward3" if scalar else "CopyBackwards")


def _refuse_byte_mask_fill(items: tuple, value, accumulate: bool) -> None:
    """torch sends index_put_ / setitem with one mask as the only tensor index and a one-element value to
    masked_fill_ (canDispatchToMaskedFill), which refuses a uint8 mask: x[byte_mask] = 0 fails in torch while
    x[byte_mask] = values (more than one element) still works, with the deprecation warning."""
    if accumulate or (isinstance(value, Tensor) and value.numel() != 1):
        return
    advanced = [item for item in items if isinstance(item, (Tensor, list, np.ndarray))
                and not (isinstance(item, Tensor) and item.ndim == 0 and item._dtype.category == 1
                         and item._dtype not in (dt.bool_, dt.uint8))]
    if len(advanced) != 1:
        return
    mask = advanced[0]
    if (isinstance(mask, Tensor) and mask._dtype is dt.uint8) or (isinstance(mask, np.ndarray)
                                                                 and mask.dtype == np.uint8):
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype unsigned char")


def _index_put_key(input: Tensor, indices) -> IndexKey:
    """torch.index_put's indices (a tuple of integer/boolean tensors) as an IndexKey."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    if _specified_dims(indices) > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim}")
    arrays, dim = [], 0
    for position, index in enumerate(indices):
        if not isinstance(index, Tensor):
            raise TypeError(f"expected Tensor as element {position} in argument 1, but got {type(index).__name__}")
        array = _index_array(index)
        arrays.append((dim, array))
        dim += array.ndim if array.dtype == np.bool_ else 1
    if not arrays:
        raise RuntimeError("index_put_(): Expected at least one non-None index")  # unreachable in practice
    return IndexKey(None, advanced_key(tuple(input.shape), arrays))


@export(inplace=True)
def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:
    """input with input[indices] = values (or += with accumulate); indices: a tuple of index tensors."""
    if isinstance(indices, (tuple, list)):
        _refuse_byte_mask_fill(tuple(indices), values, accumulate)
    key = _index_put_key(input, indices)
    region = _region_shape(tuple(input.shape), key)
    values = _index_put_value(input, values, key, region, bool(accumulate))
    return call(_INDEX_PUT, (input, values), {"key": key, "accumulate": bool(accumulate)})


# ---------------------------------------------------------------- gather / scatter


def _check_index_tensor(name: str, index: Tensor) -> None:
    if index._dtype is not dt.int64 and index._dtype is not dt.int32:  # (torch 2.x takes int32 indices too)
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")


def _gather_impl(xp, a, index, dim):
    if a.ndim == 0:
        return a[()] if index.ndim == 0 else xp.broadcast_to(a, index.shape).copy()
    return xp.take_along_axis(a, index, axis=dim)


def _gather_backward(ctx, g):
    return spread(g, ctx.inputs[1], ctx.params["dim"], ctx.input_meta[0][0]), None


# NOTE [ Value-selecting gradients ]
# gather, max(dim), sort, topk, kthvalue, median, mode, cummax: the gradient of selected values goes back to
# the positions they were selected from.  `spread` is scatter_add into zeros; gather and scatter_add are each
# other's adjoints, so double backward works; both leave the int64 indices uncast.


def spread(g: Tensor, indices: Tensor, dim: int, shape) -> Tensor:
    """A zero tensor of `shape` with g added at `indices` along `dim`: see NOTE [ Value-selecting gradients ]."""
    return g.new_zeros(shape).scatter_add(dim, indices, g)


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
    _bounds(index, input.shape[dim] if input.ndim else 1, dim)
    if index.shape != input.shape:
        cropped = tuple(slice(0, index.shape[d]) if d != dim else slice(None) for d in range(input.ndim))
        input = input[cropped] if input.ndim else input
    result = call(_GATHER, (input, index), {"dim": dim})
    return finish_out(result, out)


def _bounds(index: Tensor, size: int, dim: int, error=RuntimeError, message: str = "", negative: bool = False) -> None:
    """The first index outside [0, size) (or [-size, size) with `negative`), with ATen's message for it."""
    if not index.numel() or isinstance(index._data, MetaArray):
        return
    values = np.asarray(to_host(index._data)).reshape(-1)  # host-side check (a sync on cuda)
    low = -size if negative else 0
    if values.min() < low or values.max() >= size:  # two reductions, no temporaries: the common case passes
        bad = (values < low) | (values >= size)
        value = int(values[np.argmax(bad)])
        raise error(message.format(value=value, dim=dim, size=size)
                    or f"index {value} is out of bounds for dimension {dim} with size {size}")


def _host_index(index: Tensor) -> np.ndarray:
    """An index tensor's values as int64 (zeros on the meta device, where only shapes matter)."""
    if isinstance(index._data, MetaArray):
        return np.zeros(index._data.shape, np.int64)
    array = np.asarray(index._data, np.int64)
    return array if _dispatch.tracer is None else _traced_index(index, array, read=False)  # ember.compile


def _scatter_positions(xp, index, dim):
    grids = list(xp.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


# the array module's ufunc (by name, so CuPy's on cuda) whose .at applies each reduce mode
_REDUCERS = {"sum": "add", "add": "add", "prod": "multiply", "multiply": "multiply",
             "amax": "maximum", "amin": "minimum"}


def _scatter_impl(xp, a, index, src, dim, reduce, fill=None):
    """a with src scattered at index along dim (reduced by `reduce`); `fill` first resets the scattered-to
    positions to a reduce's identity (scatter_reduce with include_self=False)."""
    out = a.copy()
    if out.ndim == 0:
        out = out.reshape(1)
        index = index.reshape(-1)
        src = xp.broadcast_to(src, index.shape)
        dim = 0
    if getattr(src, "ndim", 0) == 0:  # a Python scalar or 0-d array
        src = xp.broadcast_to(src, index.shape)
    else:
        src = src[tuple(slice(0, n) for n in index.shape)]
    positions = _scatter_positions(xp, index, dim)
    if fill is not None:
        out[positions] = fill
    if reduce is None:
        out[positions] = src
    else:
        getattr(xp, _REDUCERS[reduce]).at(out, positions, src)
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
    elif reduce == "prod":
        grad_self, grad_src = _scatter_prod_backward(ctx, g)
    else:
        grad_self, grad_src = _scatter_extremum_backward(ctx, g)
    return grad_self, None, grad_src


def _scatter_prod_backward(ctx, g):
    """torch's scatter_reduce 'prod' gradient (FunctionsManual.cpp): exclusive products, a lone zero handled."""
    self, index, src = ctx.inputs
    dim = ctx.params["dim"]
    result = call(_SCATTER, (self, index, src), ctx.params)
    masked_self = self.masked_fill(self == 0, 1)
    grad_self = g * call(_SCATTER, (masked_self, index, src), ctx.params) / masked_self
    src_zero = src == 0
    zeros_per_target = self.new_zeros(self.shape).scatter_add(dim, index, src_zero.to(self._dtype)).gather(dim, index)
    single_zero = src_zero & (zeros_per_target == 1)
    masked_src_result = call(_SCATTER, (self, index, src.masked_fill(single_zero, 1)), ctx.params)
    grad_src = ember_where(single_zero, (g * masked_src_result).gather(dim, index),
                           (g * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    return grad_self, grad_src


def _scatter_extremum_backward(ctx, g):
    """torch's scatter_reduce 'amax'/'amin' gradient: shared evenly among the elements equal to the result."""
    self, index, src = ctx.inputs
    dim = ctx.params["dim"]
    result = call(_SCATTER, (self.detach(), index, src.detach()), ctx.params)
    value = result.gather(dim, index)
    self_is_result = (self == result).to(self._dtype)
    src_is_result = (src == value).to(self._dtype)
    distributed = g / self_is_result.scatter_add(dim, index, src_is_result)
    grad_self = self_is_result * distributed
    if ctx.params.get("fill") is not None:
        # include_self=False: as torch, self still counts in the tie above, but gets no gradient where scattered
        grad_self = grad_self.scatter(dim, index, 0.0)
    return grad_self, src_is_result * distributed.gather(dim, index)


def ember_where(condition, input, other):
    from .elementwise import where

    return where(condition, input, other)


def _crop_to(grad, src):
    if isinstance(src, Tensor) and tuple(grad.shape) != tuple(src.shape):
        padded = grad.new_zeros(src.shape)
        key = tuple(slice(0, n) for n in grad.shape)
        padded[key] = grad
        return padded
    return grad


_SCATTER = OpDef("scatter", _scatter_impl, _scatter_backward, dtype_rule=lambda a, p: (None, a[0]._dtype),
                 upcast_half=False, saves=SAVE_INPUTS, meta=lambda args, p: args[0].shape)


def _scatter_checks(name, input, dim, index, src):
    _check_index_tensor(name, index)
    dim = wrap_dim(dim, input.ndim)
    if index.ndim != input.ndim and input.ndim and index.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and src._dtype is not input._dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    _bounds(index, input.shape[dim] if input.ndim else 1, dim)
    return dim


@export(inplace=True)
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce: str | None = None) -> Tensor:
    """Out-of-place scatter: input with input[index[i][j]][j] = src[i][j] along `dim`."""
    if src is None:
        src = value
    dim = _scatter_checks("scatter", input, dim, index, src)
    if reduce is not None:
        reduce = {"add": "sum", "multiply": "prod"}[reduce]
    result = call(_SCATTER, (input, index, src), {"dim": dim, "reduce": reduce})
    if reduce is None and not isinstance(src, Tensor):  # torch's overloads: scatter(value) is ScatterBackward1
        name_node(result, "ScatterBackward1")
    return result


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
    if reduce not in ("sum", "prod", "mean", "amax", "amin", "max", "min"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # torch's get_reduction_enum takes both spellings
    if reduce == "mean" and input._dtype is dt.bool_:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    counts = None
    base = input
    if not include_self:
        identity = {"sum": 0, "mean": 0, "prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if input._dtype.category < 2 and reduce in ("amax", "amin"):
            if input._dtype is dt.bool_:
                identity = reduce == "amin"
            else:
                info = dt.iinfo(input._dtype)
                identity = info.min if reduce == "amax" else info.max
        if reduce in ("amax", "amin"):  # reset inside the op: its backward follows torch's tie rule
            return call(_SCATTER, (input, index, src), {"dim": dim, "reduce": reduce, "fill": identity})
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
    return IndexKey(None, (slice(None),) * dim + (index,))


@export
def index_select(input: Tensor, dim: int, index: Tensor, *, out=None) -> Tensor:
    """The slices of `input` along `dim` at `index` (a 1-D or 0-d integer tensor)."""
    dim = wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
    _bounds(index, input.shape[dim] if input.ndim else 1, dim, IndexError, "index out of range in self")
    positions = _host_index(index).reshape(-1)
    if input.ndim == 0:
        result = call(_INDEX, (input.reshape(1),), {"key": _dim_key(1, 0, positions)}).reshape(())
    else:
        result = call(_INDEX, (input,), {"key": _dim_key(input.ndim, dim, positions)})
    if out is None:
        name_node(result, "IndexSelectBackward0")
    return finish_out(result, out)


def _index_along(name, input, dim, index, source, accumulate, alpha=1):
    """index_add / index_copy: source's slices written (or added) at `index` along `dim`."""
    dim = wrap_dim(dim, input.ndim)
    if index.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if source._dtype is not input._dtype:
        if name == "index_add_":
            raise RuntimeError(f"index_add_(): self ({SCALAR_NAMES[input._dtype.name]}) and source "
                               f"({SCALAR_NAMES[source._dtype.name]}) must have the same scalar type")
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{SCALAR_NAMES[input._dtype.name]} and (source) {SCALAR_NAMES[source._dtype.name]}")
    source_size = source.shape[dim] if source.ndim else 1
    if index.numel() != source_size:
        raise RuntimeError(f"{name}(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({source_size}), for dim: {dim}")
    size = input.shape[dim] if input.ndim else 1
    if name == "index_copy_":
        _bounds(index, size, dim, IndexError, "index_copy_(): index {value} is out of bounds for dimension {dim} "
                "with size {size}", negative=True)
    else:
        _bounds(index, size, dim, negative=True)
    positions = _host_index(index).reshape(-1)
    if input.ndim == 0:
        key = IndexKey(None, (positions.reshape(-1)[:1] * 0 if positions.size else positions,))
        source = source.reshape(-1)
        result = call(_INDEX_PUT, (input.reshape(1), source * alpha if alpha != 1 else source),
                      {"key": key, "accumulate": accumulate})
        return result.reshape(())
    if alpha != 1:
        source = source * alpha
    return call(_INDEX_PUT, (input, source.to(input._dtype)), {"key": _dim_key(input.ndim, dim, positions),
                                                              "accumulate": accumulate})


@export(inplace=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:
    """input with alpha * source's slices added at `index` along `dim` (repeated indices accumulate)."""
    return _index_along("index_add_", input, dim, index, source, True, alpha)


@export(inplace=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """input with source's slices copied to `index` along `dim`."""
    return _index_along("index_copy_", input, dim, index, source, False)


@export(inplace=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """input with the slices at `index` along `dim` set to `value` (a number or a 0-d tensor)."""
    dim = wrap_dim(dim, input.ndim)
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        value = value.to(input._dtype)
    else:
        value = Tensor._make(scalar_array(value, input._dtype), input._dtype, input._device)
    _bounds(index, input.shape[dim] if input.ndim else 1, dim, IndexError, negative=True)
    positions = _host_index(index).reshape(-1)
    if input.ndim == 0:
        key = IndexKey(None, (positions * 0,))
        return call(_INDEX_PUT, (input.reshape(1), value), {"key": key, "accumulate": False}).reshape(())
    return call(_INDEX_PUT, (input, value), {"key": _dim_key(input.ndim, dim, positions), "accumulate": False})


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
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{dt.CPP_TYPE_NAMES.get(mask._dtype.name, mask._dtype.name)}")
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
        result = call(_MASKED_FILL, (input, mask, value.to(input._dtype)))
        name_node(result, "MaskedFillBackward1")  # torch's overloads: masked_fill(Tensor value) is Backward1
        return result
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
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    result = call(_MASKED_SELECT, (input, mask))
    return finish_out(result, out)


def _masked_scatter_impl(xp, a, mask, source):
    out = a.copy()
    mask = xp.broadcast_to(mask, a.shape)
    count = int(mask.sum())  # (checked here, not by the caller's .item(): a compiled replay checks each call)
    if count > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
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
                        dtype_rule=keep, upcast_half=False, saves=SAVE_INPUTS,
                        meta=lambda args, p: args[0].shape)


@export(inplace=True)
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """input with the positions where mask is True filled, in order, from source."""
    if mask._dtype is not dt.bool_:  # (a uint8 mask too: NumPy would take it for integer indices)
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{SCALAR_NAMES[mask._dtype.name]}")
    return call(_MASKED_SCATTER, (input, mask, source))


# ---------------------------------------------------------------- take, nonzero


def _take_impl(xp, a, index):
    return a.reshape(-1)[index]


def _take_backward(ctx, g):
    _, index = ctx.inputs
    shape = ctx.input_meta[0][0]
    flat = g.new_zeros(int(np.prod(shape)))
    positions = np.asarray(index._data, np.int64).reshape(-1)
    flat = call(_INDEX_PUT, (flat, g.reshape(-1)), {"key": _dim_key(1, 0, positions),
                                                    "accumulate": True})
    return flat.reshape(shape), None


_TAKE = OpDef("take", _take_impl, _take_backward, dtype_rule=keep, upcast_half=False, saves=SAVE_INPUTS,
              meta=lambda args, p: args[1].shape)


@export
def take(input: Tensor, index: Tensor) -> Tensor:
    """Elements of the flattened input at `index` (result has index's shape)."""
    if index._dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {SCALAR_NAMES[index._dtype.name]}")
    _bounds(index, input.numel(), 0, IndexError, "out of range: tried to access index {value} on a tensor of {size} "
            "elements.", negative=True)
    return call(_TAKE, (input, index))


@export
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """gather along `dim` with broadcasting of the non-indexed dims (numpy.take_along_axis)."""
    if dim is None:
        return finish_out(take(input, indices.reshape(-1)), out)
    dim = wrap_dim(dim, input.ndim)
    from ._shapes import broadcast_shapes

    shape_in = list(input.shape)
    shape_idx = list(indices.shape)
    shape_in[dim] = shape_idx[dim] = 1
    common = list(broadcast_shapes(tuple(shape_in), tuple(shape_idx)))
    input_shape, index_shape = list(common), list(common)
    input_shape[dim], index_shape[dim] = input.shape[dim], indices.shape[dim]
    result = gather(input.expand(input_shape), dim, indices.expand(index_shape))
    return finish_out(result, out)


_NONZERO = OpDef("nonzero", lambda xp, a: xp.argwhere(a).astype(np.int64), None,
                 dtype_rule=lambda a, p: (None, dt.int64), upcast_half=False)


def _nonzero_meta(args, params):
    raise NotImplementedError("aten::nonzero: the meta device cannot compute a data-dependent output shape")


_NONZERO.meta = _nonzero_meta
_NONZERO.data_dependent = True


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
    return finish_out(result, out)


@export
def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


def _item_method_install():
    return {"__getitem__": getitem, "__setitem__": setitem}
