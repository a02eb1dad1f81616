"""ONNX translations of shape, view, indexing and creation ops (reshape, transpose, slicing, gather, cat...).

Sizes in params may be `Poly`s (sizes that follow a dynamic axis, see _capture.py); `b.ints` and `b.reshape`
compute those from the inputs' shapes at run time.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._compile.tracer import ArrayArg
from ._builder import INT64_MAX, INT64_MIN, onnx_type
from ._capture import Poly


def identity(b, node):
    return b.add("Identity", [b.arg(node, 0)])


def to_copy(b, node):
    """_to_copy (.to(dtype), .float(), a device move): a Cast, or Identity when the dtype is kept."""
    source, target = node.args[0].dtype, node.results[0].dtype
    if source is target:
        return identity(b, node)
    return b.add("Cast", [b.arg(node, 0)], to=onnx_type(b.onnx, target))


def reshape(b, node):
    return b.reshape(b.arg(node, 0), node.params["shape"])


def permute(b, node):
    return b.add("Transpose", [b.arg(node, 0)], perm=[int(d) for d in node.params["dims"]])


def unsqueeze(b, node):
    return b.unsqueeze(b.arg(node, 0), [int(node.params["dim"])])


def squeeze(b, node):
    dims = [int(d) for d in node.params.get("dims", ())]
    if not dims:
        return identity(b, node)
    return b.squeeze(b.arg(node, 0), dims)


def expand(b, node):
    return b.add("Expand", [b.arg(node, 0), b.ints(node.params["shape"])])


def cat(b, node):
    dtype = node.results[0].dtype
    inputs = [b.arg(node, i, dtype) for i in range(len(node.args))]
    return b.add("Concat", inputs, axis=int(node.params["dim"]))


def stack(b, node):
    dtype = node.results[0].dtype
    rank = len(node.results[0].shape)
    dim = int(node.params["dim"]) % rank
    inputs = [b.unsqueeze(b.arg(node, i, dtype), [dim]) for i in range(len(node.args))]
    return b.add("Concat", inputs, axis=dim)


def repeat(b, node):
    x = b.arg(node, 0)
    repeats = list(node.params["repeats"])
    extra = len(repeats) - len(node.args[0].shape)
    if extra > 0:
        x = b.unsqueeze(x, list(range(extra)))
    return b.add("Tile", [x, b.ints(repeats)])


def flip(b, node):
    dims = [int(d) for d in node.params["dims"]]
    count = len(dims)
    return b.add("Slice", [b.arg(node, 0), b.ints([-1] * count), b.ints([INT64_MIN] * count), b.ints(dims),
                           b.ints([-1] * count)])


def triangle(upper: bool):
    """tril/triu(diagonal): Where on a mask from two Ranges (no Trilu, so opset 13 works too)."""

    def translate(b, node):
        x = b.arg(node, 0)
        rank = len(node.args[0].shape)
        rows = _range(b, b.dim(x, rank - 2))
        cols = _range(b, b.dim(x, rank - 1))
        offset = b.add("Sub", [b.unsqueeze(cols, [0]), b.unsqueeze(rows, [1])])  # col - row
        diagonal = b.scalar(int(node.params.get("diagonal", 0)), dt.int64)
        keep = b.add("GreaterOrEqual" if upper else "LessOrEqual", [offset, diagonal])
        return b.add("Where", [keep, x, b.scalar(0, node.results[0].dtype)])

    return translate


def _range(b, limit: str) -> str:
    """0, 1, ..., limit - 1 (limit a 0-d int64)."""
    return b.add("Range", [b.scalar(0, dt.int64), limit, b.scalar(1, dt.int64)])


# ---------------------------------------------------------------- indexing


def basic_index(b, node):
    """slice/select: x[key] for a basic key of ints, slices, None and Ellipsis."""
    return _apply_basic(b, node, b.arg(node, 0), tuple(node.params["key"]), len(node.args[0].shape))


def _expand_ellipsis(key: tuple, rank: int) -> list:
    items = list(key)
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    position = next((i for i, item in enumerate(items) if item is Ellipsis), None)
    if position is not None:
        items[position:position + 1] = [slice(None)] * (rank - used)
    else:
        items += [slice(None)] * (rank - used)
    return items


def _apply_basic(b, node, x: str, key: tuple, rank: int) -> str:
    starts, ends, axes, steps = [], [], [], []
    picks, new_axes = [], []  # picks: (input axis, index); new_axes: output positions of None
    dim = out = 0
    for item in _expand_ellipsis(key, rank):
        if item is None:
            new_axes.append(out)
            out += 1
        elif isinstance(item, slice):
            if item != slice(None):
                step = 1 if item.step is None else item.step
                if isinstance(step, Poly) or step <= 0:
                    raise b.unsupported(f"slice step {step!r}")
                starts.append(0 if item.start is None else item.start)
                ends.append(INT64_MAX if item.stop is None else item.stop)
                axes.append(dim)
                steps.append(step)
            dim += 1
            out += 1
        else:
            picks.append((dim, item))
            dim += 1
    if axes:
        x = b.add("Slice", [x, b.ints(starts), b.ints(ends), b.ints(axes), b.ints(steps)])
    for axis, index in sorted(picks, reverse=True):  # from the last, so earlier axes keep their numbers
        x = b.add("Gather", [x, b.scalar(index, dt.int64)], axis=axis)
    if new_axes:
        x = b.unsqueeze(x, new_axes)
    if not (axes or picks or new_axes):
        x = b.add("Identity", [x])
    return x


def index(b, node):
    """x[key] with one index tensor (embedding lookups, index_select, x[idx], x[:, idx]): a Gather."""
    key = node.params["key"]
    x = b.arg(node, 0)
    rank = len(node.args[0].shape)
    if key.basic is not None:
        x = _apply_basic(b, node, x, tuple(key.basic), rank)
        rank = len(_basic_result_rank(key.basic, rank))
    items = _expand_ellipsis(tuple(key.advanced), rank)
    arrays = [(axis, item) for axis, item in enumerate(items) if not isinstance(item, slice)]
    if len(arrays) != 1 or any(isinstance(item, slice) and item != slice(None) for item in items):
        raise b.unsupported("indexing with several index tensors (or a slice mixed with one) has no translation; "
                            "index one dim at a time")
    axis, item = arrays[0]
    return b.add("Gather", [x, _index_tensor(b, node, item)], axis=axis)


def _basic_result_rank(key, rank) -> list:
    return [i for i in _expand_ellipsis(tuple(key), rank) if i is None or isinstance(i, slice)]


def _index_tensor(b, node, item) -> str:
    """An index array of the key as an int64 ONNX tensor: read from its graph value, or a constant."""
    if isinstance(item, ArrayArg):
        first = len(node.args) - node.index_args
        source = node.args[first + item.position]
        name = b.cast(b.value(source), source.dtype, dt.int64)
        if item.shape is not None:
            name = b.reshape(name, [-1] if item.shape == -1 else list(item.shape))
        return name
    if isinstance(item, np.ndarray):
        if item.dtype == np.bool_:
            raise b.unsupported("boolean mask indexing (the result's shape depends on the mask's values)")
        return b.const(item.astype(np.int64))
    if isinstance(item, (list, tuple)):
        return b.const(np.asarray(item, dtype=np.int64))
    raise b.unsupported(f"index {item!r}")


def gather(b, node):
    index = b.cast(b.arg(node, 1), node.args[1].dtype, dt.int64)
    return b.add("GatherElements", [b.arg(node, 0), index], axis=int(node.params["dim"]))


def index_put(b, node):
    """x[key] = values (or += with accumulate): ScatterND at the key's positions, worked out at export.
    Needs a static shape and a key without index tensors from the graph, except one boolean mask (a Where)."""
    x = b.arg(node, 0, node.results[0].dtype)
    key = node.params["key"]
    if key.advanced is not None and any(isinstance(item, ArrayArg) and item.boolean for item in key.advanced):
        return _mask_fill(b, node, x, key)
    shape = b.static_shape(node.args[0], "index assignment")
    positions = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    try:
        region = positions if key.basic is None else positions[key.basic]
        if key.advanced is not None:
            if any(isinstance(item, ArrayArg) for item in key.advanced):
                raise b.unsupported("index assignment at positions read from a tensor of the graph")
            region = region[key.advanced]
    except IndexError as error:
        raise b.unsupported(f"index assignment key: {error}") from error
    indices = np.stack(np.unravel_index(region, shape), axis=-1).astype(np.int64)
    values = b.add("Expand", [b.arg(node, 1, node.results[0].dtype), b.ints(region.shape)])
    attributes = {}
    if node.params.get("accumulate"):
        if b.opset < 16:
            raise b.unsupported("index_put with accumulate=True needs opset 16 (ScatterND reduction)")
        attributes["reduction"] = "add"
    return b.add("ScatterND", [x, b.const(indices), values], **attributes)


def _mask_fill(b, node, x, key):
    """`x[mask] = v` (v one element; `x[:, mask]` too), recorded with the mask as a graph value (the tracer's
    _mask_fill): Where(mask, v, x), the mask given trailing 1-dims to line up with its dims of x."""
    items = key.advanced
    lead = len(items) - 1
    mask = items[-1]
    if key.basic is not None or not isinstance(mask, ArrayArg) or any(item != slice(None) for item in items[:-1]):
        raise b.unsupported("a boolean mask assignment with other indices than leading full slices")
    source = node.args[len(node.args) - node.index_args + mask.position]
    name = b.cast(b.value(source), source.dtype, dt.bool_)
    mask_shape = b.static_shape(source, "a boolean mask") if mask.shape is None else (
        (-1,) if mask.shape == -1 else tuple(mask.shape))
    trailing = len(node.args[0].shape) - lead - (1 if mask.shape == -1 else len(mask_shape))
    if mask.shape is not None or trailing:
        name = b.reshape(name, list(mask_shape) + [1] * trailing)
    value = b.arg(node, 1, node.results[0].dtype)
    if node.params.get("accumulate"):
        value = b.add("Add", [x, value])
    return b.add("Where", [name, value, x])


def copy_slices(b, node):
    """A write through a view, functionalised by the tracer: the base with the values put at the view's flat
    positions (a constant of the graph)."""
    shape = b.static_shape(node.args[0], "a write through a view")
    flat = b.reshape(b.arg(node, 0, node.results[0].dtype), [-1])
    values = b.reshape(b.arg(node, 1, node.results[0].dtype), [-1])
    positions = b.const(node.params["positions"].reshape(-1).astype(np.int64))
    return b.reshape(b.add("ScatterElements", [flat, positions, values], axis=0), list(shape))


def diagonal(b, node):
    """x.diagonal(offset, dim1, dim2): a Gather of the diagonal's flat positions, worked out at export (the
    diagonal's dim last, as torch's).  Needs a static shape."""
    shape = b.static_shape(node.args[0], "diagonal")
    params = node.params
    positions = np.arange(math.prod(shape), dtype=np.int64).reshape(shape).diagonal(
        int(params.get("offset", 0)), int(params.get("dim1", 0)), int(params.get("dim2", 1)))
    flat = b.reshape(b.arg(node, 0), [-1])
    return b.add("Gather", [flat, b.const(np.ascontiguousarray(positions))], axis=0)


def gather_positions(b, node):
    """A view read again after a write through another view of its base: the base's elements at its flat
    positions.  (ember's as_strided view op, named alike, is not translated.)"""
    if "positions" not in node.params:
        raise b.unsupported("as_strided")
    flat = b.reshape(b.arg(node, 0), [-1])
    return b.add("Gather", [flat, b.const(node.params["positions"].astype(np.int64))], axis=0)


def topk(b, node):
    x = b.arg(node, 0)
    k = b.ints([node.params["k"]])
    values, indices = b.add("TopK", [x, k], outputs=2, axis=int(node.params["dim"]),
                            largest=int(node.params.get("largest", True)), sorted=1)
    return [values, indices]


def sort(b, node):
    x = b.arg(node, 0)
    dim = int(node.params["dim"]) % max(len(node.args[0].shape), 1)
    k = b.unsqueeze(b.dim(x, dim), [0])
    values, indices = b.add("TopK", [x, k], outputs=2, axis=dim, largest=int(node.params.get("descending", False)),
                            sorted=1)
    return [values, indices]
