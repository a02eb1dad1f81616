"""View ops: results share their input's storage (view, reshape when possible, transpose, expand, ...).

Every view op is an OpDef with view=True; its impl returns a NumPy view.  The
backward of a view op that selects elements (select, narrow, diagonal, slicing,
unfold) is one generic op, `view_scatter`: zeros of the input's shape with the
gradient written through the same view.  This file also holds the two nodes of
NOTE [ In-place ops and views ] (_tensor.py): regenerating a view's grad_fn
from its base, and CopySlices for the base after an in-place op on a view (those nodes: view_nodes.py).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.node import name_node, node_class
from .._dispatch import OpDef, call, keep
from .._tensor import Size, Tensor, wrap_dim
from ._api import export
from ._shapes import normalize_dims


def _view_op(name, impl, backward, meta=None, grad_name=None):
    return OpDef(name, impl, backward, dtype_rule=keep, view=True, upcast_half=False, meta=meta,
                 grad_name=grad_name)


def _input_shape(ctx):
    return ctx.input_meta[0][0]


# ---------------------------------------------------------------- reshaping


def infer_size(shape, numel: int) -> tuple:
    """Resolve one -1 in `shape` against numel, with torch's errors."""
    for n in shape:  # the common case (plain non-negative ints, right product) in one cheap pass
        if type(n) is not int or n < 0:
            break
    else:
        if math.prod(shape) == numel:
            return tuple(shape)
    shape = tuple(int(n) for n in shape)
    infer = [i for i, n in enumerate(shape) if n == -1]
    if len(infer) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for n in shape:
        if n < -1:
            raise RuntimeError(f"invalid shape dimension {n}")
    known = math.prod(n for n in shape if n != -1)
    if infer:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '[{', '.join(str(n) for n in shape)}]' is invalid for input of size {numel}")
        shape = shape[: infer[0]] + (numel // known,) + shape[infer[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '[{', '.join(str(n) for n in shape)}]' is invalid for input of size {numel}")
    return shape


def _shape_args(shape, name: str = "") -> tuple:
    if not shape and name:
        raise TypeError(f"{name}() missing 1 required positional arguments: \"shape\"")
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)) and not (
        isinstance(shape[0], Tensor) and shape[0].ndim == 0
    ):
        return tuple(shape[0])
    return shape


def _view_impl(xp, a, shape):
    try:
        return a.reshape(shape, copy=False)
    except ValueError:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans "
            "across two contiguous subspaces). Use .reshape(...) instead."
        ) from None


def _reshape_back(ctx, g):
    return g.reshape(_input_shape(ctx))


def _shape_meta(args, params):
    return params["shape"]


_VIEW = _view_op("view", _view_impl, _reshape_back, meta=_shape_meta)
_RESHAPE_VIEW = _view_op("reshape", _view_impl, _reshape_back, meta=_shape_meta, grad_name="ViewBackward0")
_RESHAPE_COPY = OpDef("reshape", lambda xp, a, shape: xp.reshape(a, shape).copy(), _reshape_back, dtype_rule=keep,
                      upcast_half=False, meta=_shape_meta, grad_name="UnsafeViewBackward0")


def _reshape_any_impl(xp, a, shape):
    try:
        return a.reshape(shape, copy=False)
    except ValueError:  # strides the capture did not see: a copy (replays only, see REPLAY_VIEWS)
        return a.reshape(shape)


# ember.compile replays a captured view/reshape-as-view with this op: a fused kernel's output is row-major where
# eager's elementwise result kept its input's layout (`x.transpose(1, 2) * a` stays transposed), so a view that
# eager's strides allowed (HF attention's `o.transpose(1, 2).contiguous().view(B, T, -1)`, whose contiguous()
# was a no-op and left no op behind) may need a copy at replay.
_RESHAPE_ANY = _view_op("reshape", _reshape_any_impl, _reshape_back, meta=_shape_meta, grad_name="ViewBackward0")
REPLAY_VIEWS = {id(_VIEW): _RESHAPE_ANY, id(_RESHAPE_VIEW): _RESHAPE_ANY}


def view(input: Tensor, *shape) -> Tensor:
    """A view with a new shape (no copy); a dtype argument reinterprets the bytes (Tensor.view(dtype))."""
    if len(shape) == 1 and hasattr(shape[0], "np_dtype"):
        return _view_dtype(input, shape[0])
    if not shape or type(shape[0]) is not int:
        shape = _shape_args(shape, "view")
    shape = infer_size(shape, input._data.size)
    return call(_VIEW, (input,), {"shape": shape})


def _view_dtype(input: Tensor, dtype) -> Tensor:
    if dtype is input._dtype:
        return input
    if dtype.itemsize != input._dtype.itemsize and input.ndim and input.stride(-1) != 1:
        raise RuntimeError("self.stride(-1) must be 1 to view with a different element size")
    array = input._data.view(dtype.np_dtype)
    return Tensor._make_view(array, dtype, input._device, input)


export(view, function=False)


@export
def reshape(input: Tensor, *shape) -> Tensor:
    """A view when strides allow, else a copy (torch.reshape)."""
    data = input._data
    shape = infer_size(_shape_args(shape, "reshape"), data.size)
    if input._device.type == "meta" or data.flags.c_contiguous:  # a contiguous tensor always has a view
        return call(_RESHAPE_VIEW, (input,), {"shape": shape})
    try:
        data.reshape(shape, copy=False)
    except ValueError:
        return call(_RESHAPE_COPY, (input,), {"shape": shape})
    return call(_RESHAPE_VIEW, (input,), {"shape": shape})


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other.shape)


export(view_as, function=False)
export(reshape_as, function=False)


@export
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims start_dim..end_dim into one."""
    ndim = input.ndim
    if ndim == 0:
        return reshape(input, (1,))
    start, end = wrap_dim(start_dim, ndim), wrap_dim(end_dim, ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input
    shape = input.shape
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


@export
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor: a view of a contiguous input, else a contiguous copy (torch.ravel)."""
    return view(input if input.is_contiguous() else input.contiguous(), -1)


@export
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Split one dim into `sizes` (one of which may be -1)."""
    if input.ndim == 0:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    if len(tuple(sizes)) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    dim = wrap_dim(dim, input.ndim)
    sizes = infer_size(tuple(sizes), input.shape[dim]) if -1 in tuple(sizes) else tuple(sizes)
    if math.prod(sizes) != input.shape[dim]:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({input.shape[dim]}) in the input tensor"
        )
    return view(input, input.shape[:dim] + tuple(sizes) + input.shape[dim + 1:])


def _squeeze_meta(args, params):
    return params["shape"]


def _squeeze_impl(xp, a, shape, dims):
    """Drop the size-1 `dims`, keeping the other strides."""
    strides = tuple(s for i, s in enumerate(a.strides) if i not in dims)
    return _as_strided(xp, a, shape, strides)


def _unsqueeze_impl(xp, a, shape, dim):
    """torch's stride for the new size-1 dim: size * stride of the dim it precedes (1 at the end)."""
    inner = a.shape[dim] * a.strides[dim] if dim < a.ndim else a.itemsize
    return _as_strided(xp, a, shape, a.strides[:dim] + (inner,) + a.strides[dim:])


_SQUEEZE = _view_op("squeeze", _squeeze_impl, _reshape_back, meta=_squeeze_meta)
_UNSQUEEZE = _view_op("unsqueeze", _unsqueeze_impl, _reshape_back, meta=_squeeze_meta)


@export
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Remove size-1 dims (all, or those in `dim`)."""
    shape = input.shape
    if dim is None:
        dims = range(input.ndim)
    elif isinstance(dim, (tuple, list)) and not dim:
        dims = ()  # an empty dim list squeezes nothing (normalize_dims would read it as "all dims")
    else:
        dims = normalize_dims(dim, input.ndim)
    dropped = tuple(i for i in dims if i < len(shape) and shape[i] == 1)  # 0-d: dim 0 names no real dim
    new = tuple(n for i, n in enumerate(shape) if i not in dropped)
    result = call(_SQUEEZE, (input,), {"shape": new, "dims": dropped})
    if dim is not None:  # torch's overloads: squeeze() SqueezeBackward0, squeeze(dim) 1, squeeze(dims) 2
        _name_grad_fn(result, _SQUEEZE, "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1")
    return result


def _name_grad_fn(result: Tensor, op: OpDef, grad_name: str) -> None:
    """Give the node `op` just recorded for `result` torch's name for the overload that was called (torch has
    one backward per overload; ember one per op)."""
    node = result._grad_fn
    if node is not None and getattr(node, "op", None) is op and type(node).__name__ != grad_name:
        node.__class__ = node_class(grad_name)  # the same slots: node classes differ by name only


@export
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at `dim`."""
    dim = wrap_dim(dim, input.ndim + 1)
    shape = input.shape
    return call(_UNSQUEEZE, (input,), {"shape": shape[:dim] + (1,) + shape[dim:], "dim": dim})


# ---------------------------------------------------------------- permuting


def _permute_back(ctx, g):
    inverse = np.argsort(ctx.params["dims"]).tolist()
    return g.permute(inverse)


_PERMUTE = _view_op("permute", lambda xp, a, dims: xp.transpose(a, dims), _permute_back,
                    meta=lambda args, p: tuple(args[0].shape[d] for d in p["dims"]))
_TRANSPOSE = _view_op("transpose", lambda xp, a, dims: xp.transpose(a, dims), _permute_back,
                      meta=lambda args, p: tuple(args[0].shape[d] for d in p["dims"]))
_T = _view_op("t", lambda xp, a, dims: xp.transpose(a, dims), _permute_back,
              meta=lambda args, p: tuple(args[0].shape[d] for d in p["dims"]))


@export
def permute(input: Tensor, *dims) -> Tensor:
    """Reorder dims."""
    dims = _shape_args(dims)
    ndim = input.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
            f"desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to len(dims) = {len(dims)}"
        )
    dims = tuple(wrap_dim(d, ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return call(_PERMUTE, (input,), {"dims": dims})


@export(aliases=("swapaxes", "swapdims"))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dims."""
    ndim = input.ndim
    if ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return call(_TRANSPOSE, (input,), {"dims": ()})
    dim0, dim1 = wrap_dim(dim0, ndim), wrap_dim(dim1, ndim)
    order = list(range(ndim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    return call(_TRANSPOSE, (input,), {"dims": tuple(order)})


@export
def t(input: Tensor) -> Tensor:
    """Transpose a matrix; 0-d and 1-d tensors are returned as they are."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    if input.ndim == 2:
        return call(_T, (input,), {"dims": (1, 0)})
    return call(_T, (input,), {"dims": tuple(range(input.ndim))})


@export
def adjoint(input: Tensor) -> Tensor:
    return transpose(input, -2, -1).conj()


@export
def movedim(input: Tensor, source, destination) -> Tensor:
    """Move dims from `source` positions to `destination` positions."""
    ndim = input.ndim
    source = [source] if isinstance(source, int) else list(source)
    destination = [destination] if isinstance(destination, int) else list(destination)
    if len(source) != len(destination):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({source} dims) should contain the same number "
            f"of dims as destination ({destination} dims)"
        )
    source = [wrap_dim(d, ndim) for d in source]
    destination = [wrap_dim(d, ndim) for d in destination]
    for name, dims in (("source", source), ("destination", destination)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    if ndim == 0:
        return permute(input, ())
    order = [d for d in range(ndim) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return permute(input, order)


export(movedim, name="moveaxis")


# ---------------------------------------------------------------- expanding


def _expand_back(ctx, g):
    return g  # summed back to the input's shape centrally: NOTE [ Gradient unbroadcasting ]


_EXPAND = _view_op("expand", lambda xp, a, shape: xp.broadcast_to(a, shape), _expand_back,
                   meta=lambda args, p: p["shape"])


def expand(input: Tensor, *sizes) -> Tensor:
    """Broadcast size-1 dims to `sizes` without copying (-1 keeps a size)."""
    sizes = tuple(int(s) for s in _shape_args(sizes))
    ndim = input.ndim
    if len(sizes) < ndim:
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(
            f"expand(torch.{SCALAR_NAMES[input._dtype.name]}Tensor{{[{', '.join(str(n) for n in input.shape)}]}}, "
            f"size=[{', '.join(map(str, sizes))}]): the number of sizes provided ({len(sizes)}) must be greater or "
            f"equal to the number of dimensions in the tensor ({ndim})"
        )
    lead = len(sizes) - ndim
    shape = []
    for i, size in enumerate(sizes):
        if i < lead:
            if size < 0:
                raise RuntimeError(f"The expanded size of the tensor ({size}) isn't allowed in a leading, "
                                   "non-existing dimension 0")
            shape.append(size)
            continue
        current = input.shape[i - lead]
        if size == -1:
            size = current
        elif current != size and current != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({size}) must match the existing size ({current}) at "
                f"non-singleton dimension {i}.  Target sizes: [{', '.join(map(str, sizes))}].  Tensor sizes: "
                f"[{', '.join(str(n) for n in input.shape)}]"
            )
        shape.append(size)
    return call(_EXPAND, (input,), {"shape": tuple(shape)})


export(expand, function=False)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


export(expand_as, function=False)


@export(method=False)
def broadcast_to(input: Tensor, size) -> Tensor:
    return expand(input, tuple(size))


export(lambda self, size: expand(self, tuple(size)), name="broadcast_to", function=False)


@export(method=False)
def broadcast_tensors(*tensors):
    """Expand all tensors to their common broadcast shape."""
    from ._shapes import broadcast_shapes

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


@export(method=False)
def broadcast_shapes(*shapes):
    from ._shapes import broadcast_shapes as rule

    return Size(rule(*(tuple(s) if not isinstance(s, int) else (s,) for s in shapes)))


# ---------------------------------------------------------------- element-selecting views


def _view_scatter_impl(xp, g, shape, view_impl, view_params, overlapping):
    out = xp.zeros(shape, g.dtype)
    target = None if overlapping else view_impl(xp, out, **view_params)
    if overlapping or not isinstance(target, xp.ndarray):  # integer indexing to 0-d gives a scalar, not a view
        positions = view_impl(xp, xp.arange(out.size).reshape(shape), **view_params)
        xp.add.at(out.reshape(-1), positions.reshape(-1), g.reshape(-1))
        return out
    if xp is np and not target.flags.writeable:  # CuPy arrays have no read-only flag
        target = np.lib.stride_tricks.as_strided(target, target.shape, target.strides, writeable=True)
    target[...] = g
    return out


def _view_scatter_back(ctx, g):
    view_op = ctx.params["view_op"]
    return call(view_op, (g,), ctx.params["view_params"])


_VIEW_SCATTER = OpDef(
    "view_scatter",
    lambda xp, g, shape, view_op, view_params: _view_scatter_impl(
        xp, g, shape, view_op.impl, view_params, view_op.name in _OVERLAPPING
    ),
    _view_scatter_back,
    dtype_rule=keep,
    upcast_half=False,
    meta=lambda args, p: p["shape"],
)


def view_scatter(g: Tensor, shape: tuple, view_op: OpDef, view_params: dict) -> Tensor:
    """Zeros of `shape` with `g` written through the view `view_op(**view_params)`: a view op's backward."""
    return call(_VIEW_SCATTER, (g,), {"shape": shape, "view_op": view_op, "view_params": view_params})


_OVERLAPPING = {"unfold", "as_strided"}  # views whose elements may alias each other


def selecting_view(name, impl, meta=None, grad_name=None):
    """An op that returns a view of some of its input's elements; its backward scatters into zeros."""
    def viewing_impl(xp, a, **params):
        if "key" in params:
            params["key"] = view_key(params["key"])
        return impl(xp, a, **params)

    op = _view_op(name, viewing_impl, None, meta=meta, grad_name=grad_name)
    op.backward = lambda ctx, g: view_scatter(g, _input_shape(ctx), op, ctx.params)
    # the engine may add this op's gradient straight into its input's gradient buffer (engine._scatter_in_place)
    op.scatters_into_buffer = name not in _OVERLAPPING
    return op


_SLICE = selecting_view("slice", lambda xp, a, key: a[key], grad_name="SliceBackward0")
_SELECT = selecting_view("select", lambda xp, a, key: a[key], grad_name="SelectBackward0")
# movement ops torch also runs on (per-tensor) quantized tensors: NOTE [ Quantized dtypes ] in _dtype.py
for _op in (_VIEW, _RESHAPE_VIEW, _RESHAPE_COPY, _SQUEEZE, _UNSQUEEZE, _PERMUTE, _TRANSPOSE, _T, _EXPAND, _SLICE,
            _SELECT):
    _op.quantized = True
del _op


def view_key(key: tuple) -> tuple:
    """A basic-indexing key that makes NumPy return a view even when every dim is indexed by an int
    (a[1] of a 1-D array is a scalar copy; a[1, ...] is a 0-d view)."""
    for part in key:
        if part is Ellipsis:
            return key
    return key + (Ellipsis,)


@export
def narrow(input: Tensor, dim: int, start, length: int) -> Tensor:
    """The view input[..., start:start+length, ...] along `dim`."""
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    start, length = int(start), int(length)
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * dim + (slice(start, start + length),)
    return call(_SLICE, (input,), {"key": key})


@export
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """input[..., index, ...] along `dim` (removes the dim)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    index = int(index)
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {dim}")
    key = (slice(None),) * dim + (index % size if size else index,)
    return call(_SELECT, (input,), {"key": key})


def _diagonal_impl(xp, a, offset, dim1, dim2):
    """a writable strided view (xp.diagonal's is read-only, so writes through it would fail)."""
    start1, start2 = max(-offset, 0), max(offset, 0)
    length = max(min(a.shape[dim1] - start1, a.shape[dim2] - start2), 0)
    key = [slice(None)] * a.ndim
    key[dim1] = slice(min(start1, a.shape[dim1]), None)
    key[dim2] = slice(min(start2, a.shape[dim2]), None)
    corner = a[tuple(key)]
    keep_dims = [d for d in range(a.ndim) if d not in (dim1, dim2)]
    shape = tuple(a.shape[d] for d in keep_dims) + (length,)
    strides = tuple(a.strides[d] for d in keep_dims) + (a.strides[dim1] + a.strides[dim2],)
    return _as_strided(xp, corner, shape, strides)


_DIAGONAL = selecting_view("diagonal", _diagonal_impl)


@export
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of a diagonal (appended as the last dim)."""
    dim1, dim2 = wrap_dim(dim1, input.ndim), wrap_dim(dim2, input.ndim)
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return call(_DIAGONAL, (input,), {"offset": offset, "dim1": dim1, "dim2": dim2})


def _unfold_impl(xp, a, dimension, size, step):
    shape, strides = list(a.shape), list(a.strides)
    if a.ndim == 0:
        return _as_strided(xp, a, (1,), (a.itemsize,))
    count = (shape[dimension] - size) // step + 1
    new_shape = shape[:dimension] + [count] + shape[dimension + 1:] + [size]
    new_strides = strides[:dimension] + [strides[dimension] * step] + strides[dimension + 1:] + [strides[dimension]]
    return _as_strided(xp, a, new_shape, new_strides, writeable=False)


_UNFOLD = selecting_view("unfold", _unfold_impl)


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Tensor.unfold: a view of all windows of `size` with `step` along `dimension`, as a new last dim."""
    dimension = wrap_dim(dimension, input.ndim)
    extent = input.shape[dimension] if input.ndim else 1
    if size > extent:
        raise RuntimeError(f"maximum size for tensor at dimension {dimension} is {extent} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return call(_UNFOLD, (input,), {"dimension": dimension, "size": size, "step": step})


export(unfold, function=False)


def _as_strided_impl(xp, a, size, stride, storage_offset):
    itemsize = a.itemsize
    return _as_strided(xp, _flat_storage(a, xp)[storage_offset:], size, tuple(s * itemsize for s in stride))


def _flat_storage(a, xp=np):
    """A 1-D view of the memory from `a`'s first element (as_strided is relative to the tensor's storage)."""
    return _as_strided(xp, a, (max(_extent(a), 1),), (a.itemsize,))


def _as_strided(xp, a, shape, strides, writeable=None):
    """xp's as_strided.  CuPy's takes no `writeable` (its arrays have no read-only flag), so the flag is
    NumPy-only: writes through overlapping views are not caught on cuda."""
    if xp is np and writeable is not None:
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=writeable)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def _extent(a) -> int:
    if a.size == 0:
        return 0
    return 1 + sum((n - 1) * s // a.itemsize for n, s in zip(a.shape, a.strides) if s > 0)


_AS_STRIDED = selecting_view("as_strided", _as_strided_impl, meta=lambda args, p: tuple(p["size"]))


@export
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """A view with explicit sizes and strides (elements), relative to the input's storage."""
    offset = input.storage_offset() if storage_offset is None else storage_offset
    size, stride = tuple(int(n) for n in size), tuple(int(n) for n in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    _check_storage_bounds(input, size, stride, offset)
    relative = offset - input.storage_offset()
    if relative < 0:
        raise RuntimeError("as_strided before the tensor's first element is not supported")
    return call(_AS_STRIDED, (input,), {"size": size, "stride": stride, "storage_offset": relative})


def _check_storage_bounds(input: Tensor, size: tuple, stride: tuple, offset: int) -> None:
    """torch's setStorage check: the strided view must lie inside the storage (else as_strided reads wild memory)."""
    if input._device.type == "meta":
        return
    itemsize = input._dtype.itemsize
    needed = 0 if 0 in size else (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * itemsize
    available = input._storage.array.nbytes
    if needed > available:
        raise RuntimeError(
            f"setStorage: sizes [{', '.join(map(str, size))}], strides [{', '.join(map(str, stride))}], storage "
            f"offset {offset}, and itemsize {itemsize} requiring a storage size of {needed} are out of bounds for "
            f"storage of size {available}"
        )


# ---------------------------------------------------------------- splitting


@export
def unbind(input: Tensor, dim: int = 0) -> tuple:
    """All slices along `dim`, as views."""
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = wrap_dim(dim, input.ndim)
    return _mark_multi_view(tuple(select(input, dim, i) for i in range(input.shape[dim])), "Unbind")


@export
def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Views of chunks of `split_size` (the last may be smaller), or of the given section sizes."""
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = wrap_dim(dim, tensor.ndim)
    size = tensor.shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        starts = range(0, size, step) if step and size else [0]
        return _mark_multi_view(tuple(narrow(tensor, dim, s, min(step, size - s)) for s in starts), "Split")
    sections = [int(s) for s in split_size_or_sections]
    if sum(sections) != size:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
            f"{dim}), but got split_sizes={sections}"
        )
    out, start = [], 0
    for length in sections:
        out.append(narrow(tensor, dim, start, length))
        start += length
    return _mark_multi_view(tuple(out), "SplitWithSizes")


def _mark_multi_view(pieces: tuple, creator: str) -> tuple:
    """torch forbids in-place ops (with grad) on the outputs of ops returning several views; remember the op.
    Each piece's node gets the op's name too (UnbindBackward0, SplitBackward0, ...), as torch's pieces show."""
    for index, piece in enumerate(pieces):
        piece._multi_view = (creator, index)
        if piece._grad_fn is not None:
            name_node(piece, creator + "Backward0")
    return pieces


def multi_view_error(view: Tensor) -> RuntimeError:
    creator, index = view._multi_view
    return RuntimeError(
        f"Output {index} of {creator} is a view and is being modified inplace. This view is the output of a "
        "function that returns multiple views. Such functions do not allow the output views to be modified "
        "inplace. You should replace the inplace operation by an out-of-place one."
    )


export(split, name="split_with_sizes")


@export
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Split into `chunks` views of ceil(size / chunks) (fewer if the size is small)."""
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if size == 0:
        return split(input, [0] * chunks, dim)
    return split(input, -(-size // chunks), dim)


@export
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:
    """numpy.array_split semantics: n near-equal sections, or split before the given indices."""
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    dim = wrap_dim(dim, input.ndim)
    size = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections._dtype is not dt.int64:
            from .._tensor import SCALAR_NAMES

            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{SCALAR_NAMES[indices_or_sections._dtype.name]}")
        if indices_or_sections.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {indices_or_sections.ndim} dims")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        sizes = [base + 1] * extra + [base] * (n - extra)
        bounds, start = [], 0
        for s in sizes:
            bounds.append((start, s))
            start += s
    else:
        points = [0] + [min(max(int(i) if i >= 0 else int(i) + size, 0), size) for i in indices_or_sections] + [size]
        bounds = [(a, max(b - a, 0)) for a, b in zip(points[:-1], points[1:])]
    return tuple(narrow(input, dim, start, length) for start, length in bounds)


def _split_dims(name, axis, minimum):
    def fn(input, indices_or_sections):
        if input.ndim < minimum:
            raise RuntimeError(
                f"torch.{name} requires a tensor with at least {minimum} dimension, but got a tensor with "
                f"{input.ndim} dimensions!"
            )
        dim = axis if input.ndim > 1 or name != "hsplit" else 0
        if isinstance(indices_or_sections, int) and input.shape[dim] % indices_or_sections:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                f"{input.shape[dim]} is not divisible by the split_size {indices_or_sections}!"
            )
        return tensor_split(input, indices_or_sections, dim)

    fn.__name__ = name
    export(fn)


_split_dims("hsplit", 1, 1)
_split_dims("vsplit", 0, 2)
_split_dims("dsplit", 2, 3)


# ---------------------------------------------------------------- complex views


_REAL = selecting_view("real", lambda xp, a: a.real)
_IMAG = selecting_view("imag", lambda xp, a: a.imag)


def real(input: Tensor) -> Tensor:
    """The real part (a view for complex tensors, the tensor itself for real ones)."""
    if not input._dtype.is_complex:
        return input
    out = call(_REAL, (input,))
    return out


def imag(input: Tensor) -> Tensor:
    if not input._dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return call(_IMAG, (input,))


def _real_rule_fix(op):
    base = op.dtype_rule

    def rule(args, params):
        _, out = base(args, params)
        return None, out.to_real()

    op.dtype_rule = rule


_real_rule_fix(_REAL)
_real_rule_fix(_IMAG)
_REAL.backward = lambda ctx, g: g.to(ctx.input_meta[0][1])
_IMAG.backward = lambda ctx, g: g.to(ctx.input_meta[0][1]) * 1j
export(real, method=False)
export(imag, method=False)


# ---------------------------------------------------------------- in-place view ops (squeeze_, t_, ...)


def _inplace_view(name: str, fn, op: OpDef, grad_name) -> None:
    """Tensor.<name>: self takes the shape/strides of fn(self, ...) and its place in the graph (version bumped).
    grad_name(args, kwargs) is torch's name for the in-place overload's backward (TBackward1 for t_)."""

    def method(self, *args, **kwargs):
        self._check_inplace()
        result = fn(self, *args, **kwargs)
        self._data = result._data
        self._bump_version()
        if result._grad_fn is not None:
            _name_grad_fn(result, op, grad_name(args, kwargs))
            self._grad_fn = result._grad_fn
            self._output_nr = result._output_nr
            self._requires_grad = True
            self._view_version = self._counter_value()  # (torch leaves a retain_grad hook where it was)
        if result._fw_tangent is not None:  # forward AD: the tangent takes the new shape too
            _dispatch.forward_ad.reshaped_in_place(self, result)
        return self

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place version of :meth:`Tensor.{name[:-1]}` (changes this tensor's shape, not its data)."
    export(method, name=name, function=False)


def _squeeze_inplace_name(args, kwargs) -> str:
    dim = args[0] if args else kwargs.get("dim")
    if dim is None:
        return "SqueezeBackward3"
    return "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4"


_inplace_view("squeeze_", squeeze, _SQUEEZE, _squeeze_inplace_name)
_inplace_view("unsqueeze_", unsqueeze, _UNSQUEEZE, lambda args, kwargs: "UnsqueezeBackward1")
_inplace_view("t_", t, _T, lambda args, kwargs: "TBackward1")
_inplace_view("transpose_", transpose, _TRANSPOSE, lambda args, kwargs: "TransposeBackward1")
_inplace_view("swapaxes_", transpose, _TRANSPOSE, lambda args, kwargs: "TransposeBackward1")
_inplace_view("swapdims_", transpose, _TRANSPOSE, lambda args, kwargs: "TransposeBackward1")
_inplace_view("as_strided_", as_strided, _AS_STRIDED, lambda args, kwargs: "AsStridedBackward1")
