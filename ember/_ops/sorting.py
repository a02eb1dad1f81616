"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode; unique,
unique_consecutive; searchsorted, bucketize, histc, bincount.

NOTE [ NaN ordering ]
torch sorts nan as larger than every number (NumPy's order too): last ascending,
first descending.  Ties keep their input order in a stable sort; descending
stable sorts are built by sorting the reversed dim ascending and reversing back,
which keeps equal elements (and nans) in input order.  Selection ops (median,
kthvalue) pick from that stable order; where torch's own kernel leaves the
index among ties unspecified, ours is the stable one.  topk and the unstable sort
replay torch's kernel on slices with ties (and unsorted topk results), up to
REPLAY_LIMIT elements a call (bigger tie-heavy calls keep the stable order): see _stl_select.

The gradient of every value-selecting op scatters the output gradient back to
the selected positions (torch's value_selecting_reduction_backward).
Ops whose result shape depends on the data (unique, bincount) raise
NotImplementedError on the meta device.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._backends import MetaArray
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, result_type_of_args
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ..return_types import kthvalue as kthvalue_type
from ..return_types import median as median_type
from ..return_types import mode as mode_type
from ..return_types import nanmedian as nanmedian_type
from ..return_types import sort as sort_type
from ..return_types import topk as topk_type
from ._api import export, finish_out, write_out
from .indexing import spread


def _finish_pair(result_type, values, indices, out):
    if out is not None:
        write_out(out[0], values)
        write_out(out[1], indices)
        values, indices = out
    return result_type(values, indices)


def _sortable(a):
    """bfloat16 (an ml_dtypes type) sorts through float32, which holds it exactly."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def stable_order(xp, a, dim: int, descending: bool):
    """Indices that sort `a` along `dim`, stably, nan largest: see NOTE [ NaN ordering ]."""
    a = _sortable(a)
    if not descending:
        return xp.argsort(a, axis=dim, kind="stable")
    order = xp.flip(xp.argsort(xp.flip(a, dim), axis=dim, kind="stable"), dim)
    return a.shape[dim] - 1 - order


def _value_selecting_backward(ctx, grads):
    """Scatter the gradient of the selected values back to where they came from."""
    g, _ = grads
    _, indices = ctx.result
    shape = ctx.input_meta[0][0]
    if not shape:
        return g
    dim = ctx.params["dim"]
    if not ctx.params.get("keepdim", True):
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return spread(g, indices, dim, shape)


def _selection_op(name, impl, grad_name=None):
    return OpDef(name, impl, _value_selecting_backward, dtype_rule=lambda a, p: (None, (a[0]._dtype, dt.int64)),
                 outputs=2, saves=SAVE_RESULT, upcast_half=False, grad_name=grad_name)


def _check_reduction_dim(name: str, input: Tensor, dim: int) -> None:
    if input.ndim and input.shape[dim] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


# ---------------------------------------------------------------- sort, argsort, msort, topk


def _sort_impl(xp, a, dim, descending, stable=True):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = stable_order(xp, a, dim, descending)
    n = a.shape[dim]
    # torch's unstable CPU sort is std::sort on (value, index) pairs: an insertion sort (stable) up to 16
    # elements, introsort beyond, whose order among equal values we replay; its 1-d ascending integer sort of
    # >= 32768 elements is a radix sort, stable.
    radix = a.ndim == 1 and n >= 32768 and a.dtype.kind in "iu" and not descending
    if not stable and xp is np and n > 16 and not radix:
        order = _replay_ties(a, order, dim, n, lambda row: _torch_select_row(row, n, descending, True, "sort"))
    return xp.take_along_axis(a, order, axis=dim), order


_SORT = _selection_op("sort", _sort_impl)


def _refuse(input: Tensor, kernel: str, *, bool_: bool = False) -> None:
    """torch's NotImplementedError where its CPU kernel has no complex (or, with bool_, bool) version."""
    if input._dtype.is_complex or (bool_ and input._dtype is dt.bool_):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")


def _no_complex_sort(input: Tensor, name: str) -> None:
    if input._dtype.is_complex:
        raise RuntimeError(f" {name} does not support complex dtypes on CPU")


@export
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool | None = False, *, out=None):
    """(values, indices) sorted along `dim`; unstable sorts order equal values as torch's std::sort does."""
    _no_complex_sort(input, "Sort")
    params = {"dim": wrap_dim(dim, input.ndim), "descending": bool(descending), "stable": bool(stable)}
    values, indices = call(_SORT, (input,), params)
    return _finish_pair(sort_type, values, indices, out)


@export
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim`."""
    return sort(input, dim, descending, stable).indices


@export
def msort(input: Tensor, *, out=None) -> Tensor:
    """Sorted along the first dim (values only)."""
    return finish_out(sort(input, 0).values, out)


def _topk_rule(args, params):
    if args[0]._dtype is dt.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return None, (args[0]._dtype, dt.int64)


def _torch_select_row(row, k: int, largest: bool, sorted: bool, algorithm: str = "topk") -> list:
    """The indices torch's CPU kernel picks for one slice, on (value, index) pairs compared by value, nan
    largest: topk's nth_element then a sort of the first k - 1 (a partial_sort when k * 64 <= the slice's
    size), or sort's std::sort."""
    from . import _stl_select as stl

    q = list(zip(row.tolist(), range(len(row))))
    isnan = (lambda v: v != v) if row.dtype.kind == "f" else (lambda v: False)
    if largest:
        def less(x, y):
            return (isnan(x[0]) and not isnan(y[0])) or x[0] > y[0]
    else:
        def less(x, y):
            return (not isnan(x[0]) and isnan(y[0])) or x[0] < y[0]
    n = len(q)
    if algorithm == "sort":
        stl.sort(q, 0, n, less)
    elif k * 64 <= n:
        stl.partial_sort(q, 0, k, n, less)
    else:
        stl.nth_element(q, 0, k - 1, n, less)
        if sorted:
            stl.sort(q, 0, k - 1, less)
    return [index for _, index in q[:k]]


# Elements (slices x slice length) up to which tied slices are replayed; a larger call keeps the stable order.
# The replay runs libstdc++'s algorithms in Python (~2 us an element): torch's tie order on the sizes where it
# shows (a router's top-k, a sort of labels: 60,000 tied int64 take 124 ms replayed), NumPy's speed on big
# tie-heavy calls (256 x 1000 int64: 400 ms replayed, 8 ms stable).
REPLAY_LIMIT = 1 << 16


def _replay_ties(a, order, dim, k, replay, every_row=False, also=None):
    """`order` (a stable order along `dim`, at least k long) with its first k positions replaced by
    `replay(slice)` on the slices whose leading values tie, or where the flattened row mask `also` is set (or on
    every slice); calls of more than REPLAY_LIMIT elements keep the stable order."""
    if a.size > REPLAY_LIMIT:  # (not even looked at: big sorts pay nothing for the replay)
        return order
    keys = _sortable(a)
    picked = np.moveaxis(np.take_along_axis(keys, order, axis=dim), dim, -1)
    picked = picked.reshape(-1, picked.shape[-1])
    same = picked[:, 1:] == picked[:, :-1]
    if keys.dtype.kind == "f":
        same |= np.isnan(picked[:, 1:]) & np.isnan(picked[:, :-1])
    tied = same.any(axis=1) if also is None else same.any(axis=1) | also
    rows = np.arange(len(picked)) if every_row else np.flatnonzero(tied)
    if not len(rows) or len(rows) * a.shape[dim] > REPLAY_LIMIT:
        return order
    flat_keys = np.moveaxis(keys, dim, -1).reshape(-1, a.shape[dim])
    moved = np.moveaxis(order, dim, -1)
    shape = moved.shape
    moved = moved.reshape(-1, shape[-1]).copy()
    for r in rows:
        moved[r, :k] = replay(flat_keys[r])
    return np.moveaxis(moved.reshape(shape), -1, dim)


def _topk_impl(xp, a, k, dim, largest, sorted=True):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = stable_order(xp, a, dim, largest)
    order = xp.take(order, xp.arange(k + (k < a.shape[dim])), axis=dim)
    if xp is np and k > 0 and a.size:
        # Among distinct values every kernel agrees, but which of equal values torch returns (and the order of
        # an unsorted result) is its kernel's: replay it on the slices where that matters (see _stl_select).
        order = _replay_ties(a, order, dim, k, lambda row: _torch_select_row(row, k, largest, sorted),
                             every_row=not sorted)
    order = xp.take(order, xp.arange(k), axis=dim)
    return xp.take_along_axis(a, order, axis=dim), order


_TOPK = _selection_op("topk", _topk_impl)
_TOPK.dtype_rule = _topk_rule


@export
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None):
    """The k largest (or smallest) elements along `dim` with their indices, in sorted order."""
    _no_complex_sort(input, "topk")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim] if input.ndim else 1
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    values, indices = call(_TOPK, (input,), {"k": int(k), "dim": dim, "largest": bool(largest),
                                             "sorted": bool(sorted)})
    return _finish_pair(topk_type, values, indices, out)


# ---------------------------------------------------------------- kthvalue, median, nanmedian, mode


def _pick(xp, a, order, position, dim, keepdim):
    """Values and indices at `position` (an array broadcast against the reduced shape) of a sort order."""
    index = xp.take_along_axis(order, position, axis=dim)
    values = xp.take_along_axis(a, index, axis=dim)
    if not keepdim:
        values, index = xp.squeeze(values, dim), xp.squeeze(index, dim)
    return values, index.astype(np.int64)


def _kthvalue_impl(xp, a, k, dim, keepdim):
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    order = stable_order(xp, a, dim, False)
    if xp is np:
        # which of equal values torch returns is its quick-select's: replay it on slices with ties
        order = _replay_ties(a, order, dim, k, lambda row: _torch_kthvalue_row(row, k))
    shape = list(a.shape)
    shape[dim] = 1
    return _pick(xp, a, order, xp.full(shape, k - 1, np.int64), dim, keepdim)


def _torch_kthvalue_row(row, k: int) -> list:
    from . import _stl_select as stl

    q = list(zip(row.tolist(), range(len(row))))
    if row.dtype.kind == "f":
        def greater(x, y):
            return (x[0] != x[0] and y[0] == y[0]) or x[0] > y[0]
    else:
        def greater(x, y):
            return x[0] > y[0]
    stl.torch_quick_select(q, k - 1, greater)
    return [index for _, index in q[:k]]


_KTHVALUE = _selection_op("kthvalue", _kthvalue_impl)


@export
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The k-th smallest element along `dim` (1-based) and its index."""
    _refuse(input, "kthvalue_cpu", bool_=True)
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim] if input.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {dim} to have non-zero size.")
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    values, indices = call(_KTHVALUE, (input,), {"k": int(k), "dim": dim, "keepdim": bool(keepdim)})
    return _finish_pair(kthvalue_type, values, indices, out)


def _median_dim_impl(ignore_nan):
    def impl(xp, a, dim, keepdim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        order = stable_order(xp, a, dim, False)
        nan = xp.isnan(a) if a.dtype.kind in "fcV" else xp.zeros(a.shape, bool)
        if ignore_nan:
            count = a.shape[dim] - xp.sum(nan, axis=dim, keepdims=True)
            position = xp.maximum((count - 1) // 2, 0)
            return _pick(xp, a, order, position, dim, keepdim)
        shape = list(a.shape)
        shape[dim] = 1
        # torch.median: a slice holding nan answers nan at its first nan, which sorts right after the numbers
        nan_count = xp.sum(nan, axis=dim, keepdims=True)
        middle = xp.full(shape, (a.shape[dim] - 1) // 2, np.int64)
        position = xp.where(nan_count > 0, a.shape[dim] - nan_count, middle)
        return _pick(xp, a, order, position, dim, keepdim)

    return impl


# torch names the dim overloads' nodes MedianBackward1 / NanmedianBackward1 (the all-elements ones end in 0)
_MEDIAN_DIM = _selection_op("median", _median_dim_impl(False), "MedianBackward1")
_NANMEDIAN_DIM = _selection_op("nanmedian", _median_dim_impl(True), "NanmedianBackward1")


def _median_all_impl(ignore_nan):
    def impl(xp, a):
        flat = _sortable(a.reshape(-1))
        if ignore_nan and flat.dtype.kind == "f":
            flat = flat[~xp.isnan(flat)]
        elif flat.dtype.kind == "f" and xp.isnan(flat).any():
            return xp.asarray(np.nan, a.dtype)
        if flat.size == 0:
            return xp.asarray(np.nan if a.dtype.kind in "fV" else np.iinfo(np.int64).min).astype(a.dtype)
        return xp.sort(flat, kind="stable")[(flat.size - 1) // 2].astype(a.dtype)

    return impl


def _median_all_backward(ctx, g):
    from .reduction import evenly_distribute_backward

    return evenly_distribute_backward(ctx, g)


_MEDIAN_ALL = OpDef("median", _median_all_impl(False), _median_all_backward,
                    dtype_rule=lambda a, p: (None, a[0]._dtype), meta=lambda args, params: (),
                    saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False)
_NANMEDIAN_ALL = OpDef("nanmedian", _median_all_impl(True), _median_all_backward,
                       dtype_rule=lambda a, p: (None, a[0]._dtype), meta=lambda args, params: (),
                       saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False)


def _median(name, all_op, dim_op, result_type):
    def fn(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out=None):
        _refuse(input, "median_cpu" if dim is None else "median_out", bool_=True)
        if dim is None:
            return finish_out(call(all_op, (input,)), out)
        dim = wrap_dim(dim, input.ndim)
        _check_reduction_dim(name, input, dim)
        values, indices = call(dim_op, (input,), {"dim": dim, "keepdim": bool(keepdim)})
        return _finish_pair(result_type, values, indices, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"{name}(input): the lower median of all elements; {name}(input, dim) -> (values, indices)."
                  + (" nan elements are ignored." if name == "nanmedian" else " nan if any element is nan."))
    return export(fn)


median = _median("median", _MEDIAN_ALL, _MEDIAN_DIM, median_type)
nanmedian = _median("nanmedian", _NANMEDIAN_ALL, _NANMEDIAN_DIM, nanmedian_type)


def _torch_mode_row(row) -> list:
    from . import _stl_select as stl

    q = list(zip(row.tolist(), range(len(row))))
    stl.sort(q, 0, len(q), lambda x, y: x[0] < y[0])
    return [index for _, index in q]


def _mode_impl(xp, a, dim, keepdim):
    """The most frequent value (smallest among equally frequent ones) and the last index holding it."""
    if a.ndim == 0:
        return a.copy(), xp.zeros((), np.int64)
    moved = xp.moveaxis(a, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    size = rows.shape[-1]
    order = stable_order(xp, rows, 1, False)
    if xp is np and rows.size:
        # torch's mode std::sort-s (value, index) pairs by value with a plain `<` and reports the last index of
        # the mode's run: replay that sort on slices with ties or nan (see _stl_select)
        nan = np.isnan(_sortable(rows)).any(axis=1) if rows.dtype.kind in "fV" else None
        order = _replay_ties(rows, order, 1, size, _torch_mode_row, also=nan)
    ordered = xp.take_along_axis(rows, order, axis=1)
    positions = xp.arange(size)
    new_run = xp.ones(ordered.shape, bool)
    new_run[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    run_start = xp.maximum.accumulate(xp.where(new_run, positions, 0), axis=1) if rows.size else new_run
    run_end = xp.ones(ordered.shape, bool)
    run_end[:, :-1] = new_run[:, 1:]
    lengths = xp.where(run_end, positions - run_start + 1, 0)
    best = xp.argmax(lengths, axis=1)[:, None] if rows.size else xp.zeros((rows.shape[0], 1), np.int64)
    values = xp.take_along_axis(ordered, best, axis=1)[:, 0] if rows.size else rows[:, :0].reshape(-1)
    indices = xp.take_along_axis(order, best, axis=1)[:, 0] if rows.size else xp.zeros((0,), np.int64)
    reduced = moved.shape[:-1]
    values, indices = values.reshape(reduced), indices.reshape(reduced).astype(np.int64)
    if keepdim:
        values, indices = xp.expand_dims(values, dim), xp.expand_dims(indices, dim)
    return values, indices


_MODE = _selection_op("mode", _mode_impl)


@export
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None):
    """(values, indices): the most frequent value along `dim` and the index of its last occurrence."""
    _refuse(input, "mode_cpu")
    dim = wrap_dim(dim, input.ndim)
    _check_reduction_dim("mode", input, dim)
    values, indices = call(_MODE, (input,), {"dim": dim, "keepdim": bool(keepdim)})
    return _finish_pair(mode_type, values, indices, out)


# ---------------------------------------------------------------- unique, unique_consecutive


def _data_dependent(name):
    def meta(args, params):
        raise NotImplementedError(f"{name}: the output shape depends on the data, which the meta device lacks")

    return meta


def _unique_impl(xp, a, dim):
    """Sorted unique values (or slices along dim), the inverse map and the counts; nans are all distinct."""
    source = _sortable(a)
    if dim is None:
        values, inverse, counts = xp.unique(source.reshape(-1), return_inverse=True, return_counts=True,
                                            equal_nan=False)
        inverse = inverse.reshape(a.shape)
    else:
        values, inverse, counts = xp.unique(source, return_inverse=True, return_counts=True, axis=dim)
        inverse = inverse.reshape(-1)
    return values.astype(a.dtype), inverse.astype(np.int64), counts.astype(np.int64)


def _consecutive_impl(xp, a, dim):
    """Unique values (or slices) of each run of equal consecutive ones, inverse map and run lengths."""
    source = a.reshape(-1) if dim is None else xp.moveaxis(a, dim, 0)
    size = source.shape[0]
    if size == 0:
        inverse = xp.zeros(a.shape if dim is None else (0,), np.int64)
        return source.copy() if dim is None else a.copy(), inverse, xp.zeros((0,), np.int64)
    changed = source[1:] != source[:-1]
    if changed.ndim > 1:
        changed = changed.reshape(size - 1, -1).any(axis=1)
    starts = xp.concatenate([xp.ones(1, bool), changed])
    inverse = xp.cumsum(starts) - 1
    positions = xp.flatnonzero(starts)
    counts = xp.diff(xp.concatenate([positions, xp.asarray([size])]))
    values = source[starts]
    if dim is not None:
        values = xp.moveaxis(values, 0, dim)
    else:
        inverse = inverse.reshape(a.shape)
    return values, inverse.astype(np.int64), counts.astype(np.int64)


_UNIQUE = OpDef("unique", _unique_impl, dtype_rule=lambda a, p: (None, (a[0]._dtype, dt.int64, dt.int64)),
                meta=_data_dependent("unique"), outputs=3, upcast_half=False)
_UNIQUE_CONSECUTIVE = OpDef("unique_consecutive", _consecutive_impl,
                            dtype_rule=lambda a, p: (None, (a[0]._dtype, dt.int64, dt.int64)),
                            meta=_data_dependent("unique_consecutive"), outputs=3, upcast_half=False)
_UNIQUE.data_dependent = _UNIQUE_CONSECUTIVE.data_dependent = True


def _unique_result(values, inverse, counts, return_inverse, return_counts):
    if not return_inverse and not return_counts:
        return values
    result = (values,)
    if return_inverse:
        result += (inverse,)
    if return_counts:
        result += (counts,)
    return result


@export
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None):
    """The unique elements (or slices along `dim`), sorted, optionally with inverse indices and counts."""
    _refuse(input, "unique" if dim is None else "unique_dim")
    if dim is not None:
        dim = wrap_dim(dim, input.ndim)
    values, inverse, counts = call(_UNIQUE, (input,), {"dim": dim})
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


@export
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse runs of equal consecutive elements (or slices along `dim`)."""
    _refuse(input, "unique")
    if dim is not None:
        dim = wrap_dim(dim, input.ndim)
    values, inverse, counts = call(_UNIQUE_CONSECUTIVE, (input,), {"dim": dim})
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# ---------------------------------------------------------------- searchsorted, bucketize


def _searchsorted_impl(xp, sequence, values, side, sorter, out_int32):
    if sorter is not None:
        sequence = xp.take_along_axis(sequence, sorter, axis=-1)
    sequence, values = _sortable(sequence), _sortable(values)
    result_type = np.int32 if out_int32 else np.int64
    if sequence.dtype.kind == "f" and xp.isnan(sequence).any():
        rows = sequence.reshape(-1, sequence.shape[-1])
        value_rows = values.reshape(1, -1) if sequence.ndim == 1 else values.reshape(rows.shape[0], -1)
        return _nan_binary_search(xp, rows, value_rows, side).astype(result_type).reshape(values.shape)
    if sequence.ndim == 1:
        return xp.searchsorted(sequence, values, side=side).astype(result_type)
    rows = sequence.reshape(-1, sequence.shape[-1])
    value_rows = values.reshape(rows.shape[0], -1)
    result = xp.empty(value_rows.shape, result_type)
    for row in range(rows.shape[0]):
        result[row] = xp.searchsorted(rows[row], value_rows[row], side=side)
    return result.reshape(values.shape)


def _nan_binary_search(xp, rows, value_rows, side):
    """torch's cus_lower_bound / cus_upper_bound, run for all values at once: a probe that lands on a nan
    compares false and moves the search right, where NumPy's searchsorted orders nan after every number."""
    size = rows.shape[-1]
    start = xp.zeros(value_rows.shape, np.int64)
    end = xp.full(value_rows.shape, size, np.int64)
    row_index = xp.arange(rows.shape[0])[:, None]
    active = start < end
    while active.any():
        mid = start + ((end - start) >> 1)
        probe = rows[row_index, xp.minimum(mid, size - 1)]
        right = ~(probe > value_rows) if side == "right" else ~(probe >= value_rows)
        start = xp.where(active & right, mid + 1, start)
        end = xp.where(active & ~right, mid, end)
        active = start < end
    return start


def _searchsorted_rule(args, params):
    compute = result_type_of_args(args[:2])
    if compute is dt.bool_ or compute.is_complex:  # torch's kernel orders real numbers only
        raise NotImplementedError(f"\"searchsorted_out_cpu\" not implemented for '{SCALAR_NAMES[compute.name]}'")
    return compute, dt.int32 if params["out_int32"] else dt.int64


_SEARCHSORTED = OpDef("searchsorted", _searchsorted_impl, dtype_rule=_searchsorted_rule,
                      meta=lambda args, params: tuple(np.shape(args[1]._data)), upcast_half=False)


def _side(right: bool, side: str | None) -> str:
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was "
                "True"
            )
        return side
    return "right" if right else "left"


def _as_tensor_like(value, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    from .creation import scalar_tensor, tensor

    if isinstance(value, bool) or isinstance(value, int):
        return tensor(value, device=like.device)
    return scalar_tensor(value, dtype=dt.get_default_dtype() if like._dtype.category < 2 else like._dtype,
                         device=like.device)


@export(method=False)
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None, out=None) -> Tensor:
    """Indices where `input` would be inserted into the innermost dim of `sorted_sequence` to keep it sorted."""
    side = _side(right, side)
    values = _as_tensor_like(input, sorted_sequence)
    if sorted_sequence.ndim > 1 and (values.ndim != sorted_sequence.ndim
                                     or values.shape[:-1] != sorted_sequence.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
            f"tensor and input value tensor must match, but we got boundaries tensor {list(sorted_sequence.shape)} "
            f"and input value tensor {list(values.shape)}"
        )
    if sorter is not None:
        _check_sorter(sorted_sequence, sorter)
    _warn_non_contiguous({"input value": values, "boundary": sorted_sequence, "sorter": sorter})
    params = {"side": side, "sorter": None if sorter is None else sorter._data, "out_int32": bool(out_int32)}
    return finish_out(call(_SEARCHSORTED, (sorted_sequence, values), params), out)


def _check_sorter(sorted_sequence: Tensor, sorter: Tensor) -> None:
    """torch's checks of searchsorted's sorter (BucketizationUtils.h): NumPy would take an int32 one, wrap a
    negative index or fail with its own error on a shape mismatch."""
    if sorter._dtype is not dt.int64:
        raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                           f"{SCALAR_NAMES[sorter._dtype.name]}")
    if tuple(sorter.shape) != tuple(sorted_sequence.shape):
        raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                           f"tensor {list(sorted_sequence.shape)}and got sorter tensor {list(sorter.shape)}")
    if isinstance(sorter._data, MetaArray):
        return  # (values unknown on the meta device)
    if sorter.numel() and (int(sorter.min()) < 0 or int(sorter.max()) >= sorted_sequence.shape[-1]):
        raise RuntimeError("torch.searchsorted(): sorter index out of range")


_WARNED_NON_CONTIGUOUS: set = set()


def _warn_non_contiguous(tensors: dict) -> None:
    """torch's warn-once per argument (BucketizationUtils.h) for a non-contiguous searchsorted / bucketize
    operand, e.g. an expanded linspace as NeRF's sample_pdf passes (which is why it calls u.contiguous())."""
    from ._api import _user_stacklevel
    from .top_level_functions import _WarnAlways

    for name, tensor in tensors.items():
        if tensor is None or tensor.is_contiguous():
            continue
        if name in _WARNED_NON_CONTIGUOUS and not _WarnAlways.enabled:
            continue
        _WARNED_NON_CONTIGUOUS.add(name)
        import warnings

        warnings.warn(f"torch.searchsorted(): {name} tensor is non-contiguous, this will lower the performance due "
                      "to extra data copy when converting non-contiguous tensor to contiguous, please use "
                      f"contiguous {name} tensor if possible. This message will only appear once per program.",
                      UserWarning, stacklevel=_user_stacklevel())


@export
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False, out=None) -> Tensor:
    """The bucket of each element of `input` among sorted 1-D `boundaries` (right: boundaries[i-1] <= x)."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    values = _as_tensor_like(input, boundaries)
    _warn_non_contiguous({"input value": values, "boundary": boundaries})
    params = {"side": "right" if right else "left", "sorter": None, "out_int32": bool(out_int32)}
    return finish_out(call(_SEARCHSORTED, (boundaries, values), params), out)


# ---------------------------------------------------------------- histc, bincount


def _histc_impl(xp, a, bins, low, high):
    """torch.histc's CPU kernel (LINEAR_INTERPOLATION in ATen's HistogramKernel.cpp): an element of [min, max]
    goes to bin trunc((x - min) * bins / (max - min)), each step rounded to the input's dtype, the last bin
    closed on the right.  Unlike torch.histogram there is no correction against the bin edges, so an element
    within rounding of an edge lands wherever this formula puts it, as in torch."""
    flat = a.reshape(-1)
    if low == high and flat.size:
        low, high = float(flat.min()), float(flat.max())
    if low == high:
        low, high = low - 1, high + 1
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low}, {high}] is not finite")
    # the outer edges of torch's float linspace are min and max themselves, rounded to the input's dtype
    left, right = xp.asarray(low, dtype=a.dtype), xp.asarray(high, dtype=a.dtype)
    inside = flat[(flat >= left) & (flat <= right)]
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = (inside - left) * xp.asarray(bins, dtype=a.dtype) / (right - left)
        position = xp.nan_to_num(scaled, nan=0.0).astype(np.int64)
    position = xp.clip(position, 0, bins - 1)
    return xp.bincount(position, minlength=bins).astype(a.dtype)


def _histc_rule(args, params):
    dtype = args[0]._dtype
    if dtype.category != 2:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{SCALAR_NAMES[dtype.name]}'")
    return dtype, dtype


# upcast_half=False: torch bins float16/bfloat16 in their own arithmetic (c10::Half rounds every step)
_HISTC = OpDef("histc", _histc_impl, dtype_rule=_histc_rule, meta=lambda args, params: (params["bins"],),
               upcast_half=False)


@export
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *, out=None) -> Tensor:
    """A histogram of `bins` equal bins over [min, max] (the data's range when min == max); outliers ignored."""
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    return finish_out(call(_HISTC, (input,), {"bins": int(bins), "low": float(min), "high": float(max)}), out)


def _bincount_impl(xp, a, *weights, minlength):
    if a.size and a.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights and weights[0].dtype == np.float32 and xp.__name__ == "numpy":
        # torch's CPU kernel adds float32 weights into a float32 result one element at a time, in order
        # (numpy's bincount would sum in double); ufunc.at applies the additions unbuffered, in index order
        out = xp.zeros(max(minlength, int(a.max()) + 1 if a.size else 0), dtype=np.float32)
        xp.add.at(out, a.astype(np.int64), weights[0])
        return out
    return xp.bincount(a.astype(np.int64), weights=weights[0] if weights else None, minlength=minlength)


def _bincount_rule(args, params):
    dtype = args[0]._dtype
    if dtype.category != 1:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{SCALAR_NAMES[dtype.name]}'")
    if len(args) == 1 or args[0].numel() == 0:  # torch returns int64 zeros for an empty input, weights or not
        return None, dt.int64
    weights = args[1]._dtype
    return None, weights if weights in (dt.float32, dt.float64) else dt.float64


_BINCOUNT = OpDef("bincount", _bincount_impl, dtype_rule=_bincount_rule, meta=_data_dependent("bincount"),
                  upcast_half=False)
_BINCOUNT.data_dependent = True  # its length is the largest value + 1


@export
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts (or summed weights) of each value in a 1-D tensor of non-negative integers."""
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    args = (input,) if weights is None else (input, weights.to(dt.float64) if weights._dtype not in (
        dt.float32, dt.float64) else weights)
    return call(_BINCOUNT, args, {"minlength": int(minlength)})


