"""Shape rules shared by ops: broadcasting with torch's messages, dim lists."""

from __future__ import annotations

from .._tensor import wrap_dim


def broadcast_shapes(*shapes) -> tuple:
    """Broadcast shapes right-aligned; torch's RuntimeError names the sizes and dimension that clash."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        offset = ndim - len(shape)
        for i, n in enumerate(shape):
            current = result[offset + i]
            if n == current or n == 1:
                continue
            if current == 1:
                result[offset + i] = n
                continue
            raise RuntimeError(
                f"The size of tensor a ({current}) must match the size of tensor b ({n}) at non-singleton "
                f"dimension {offset + i}"
            )
    return tuple(result)


def tensor_shapes(args) -> list:
    return [a._data.shape for a in args if hasattr(a, "_data")]


def broadcast_meta(args, params) -> tuple:
    """The meta function of every pointwise op: the broadcast of its tensor operands' shapes."""
    return broadcast_shapes(*tensor_shapes(args))


def normalize_dims(dim, ndim: int) -> tuple:
    """dim=None|int|sequence -> a sorted tuple of non-negative dims (None: all dims)."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        return (wrap_dim(dim, ndim),)
    dims = tuple(wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(dims)) if dims else tuple(range(ndim))


# NOTE [ preserve_format ]
# A copy made with memory_format=torch.preserve_format (the default of clone, the *_like factories and
# .to(dtype)) keeps its input's layout, as torch's empty_like does: a non-overlapping and dense input (x.t(), a
# permutation, a channels-last tensor) gives its strides to the copy; any other input (a slice with gaps, an
# expanded tensor) gives a dense layout in the order of its strides (torch's infer_dense_strides, which leaves
# stride-0 dimensions where they are).  Both come down to an order of the dims, innermost first.
def preserve_format_order(shape, strides) -> list | None:
    """The dims of a preserve_format copy of an array with `shape` and element `strides`, innermost first;
    None when that is C order (the common case, a plain contiguous copy)."""
    ndim = len(shape)
    if ndim < 2 or any(s < 0 for s in strides) or 0 in shape:
        return None
    order = list(range(ndim - 1, -1, -1))

    def should_swap(dim0: int, dim1: int) -> int:  # torch's infer_dense_strides comparison
        stride0, stride1 = strides[dim0], strides[dim1]
        if stride0 == 0 or stride1 == 0:
            return 0
        if stride0 != stride1:
            return 1 if stride0 > stride1 else -1
        return 1 if shape[dim0] > shape[dim1] else 0

    for i in range(1, ndim):  # a stable insertion sort, as torch's (stride-0 dims do not move)
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            comparison = should_swap(order[dim0], order[dim1])
            if comparison > 0:
                order[dim0], order[dim1] = order[dim1], order[dim0]
                dim1 = dim0
            elif comparison < 0:
                break
    return None if order == list(range(ndim - 1, -1, -1)) else order


CHANNELS_LAST_ORDER = [1, 3, 2, 0]  # NHWC, innermost first
CHANNELS_LAST_3D_ORDER = [1, 4, 3, 2, 0]  # NDHWC, innermost first


def format_order(memory_format, ndim: int) -> list | None:
    """The dim order (innermost first) torch.channels_last / channels_last_3d asks for, with torch's error for a
    tensor of another rank; None for the other formats (contiguous, preserve, None)."""
    from .._tensor import LAST_FORMATS

    name = getattr(memory_format, "name", None)
    if name not in LAST_FORMATS:
        return None
    rank, order = LAST_FORMATS[name]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return list(order)


def suggested_order(array) -> list | None:
    """torch's suggest_memory_format() of a strided array as a dim order: CHANNELS_LAST(_3D)_ORDER when its
    strides are like channels-last (c10's is_channels_last_strides_2d/3d: each of C, W, H(, D), N at least the
    extent of the previous, a zero C stride and the N111 ambiguity falling back to contiguous), else None."""
    if array.ndim not in (4, 5):
        return None
    order = CHANNELS_LAST_ORDER if array.ndim == 4 else CHANNELS_LAST_3D_ORDER
    itemsize = array.itemsize
    strides = [s // itemsize for s in array.strides]
    if strides[1] == 0:
        return None
    minimum = 0
    for d in order:
        size = array.shape[d]
        if size == 0 or strides[d] < minimum:
            return None
        if d == 0 and minimum == strides[1]:
            return None
        minimum = strides[d] * size if size > 1 else strides[d]
    return order


def empty_in_order(xp, shape, np_dtype, order):
    """An uninitialised array of `shape` laid out densely with the dims in `order` (innermost first)."""
    if order is None:
        return xp.empty(shape, np_dtype)
    outer = order[::-1]
    buffer = xp.empty(tuple(shape[d] for d in outer), np_dtype)
    return buffer.transpose(tuple(outer.index(d) for d in range(len(shape))))


def in_suggested_layout(xp, result, *references):
    """`result` (a C-order conv / pool output) laid out channels-last when one of `references` (its input, its
    weight) suggests channels-last, as torch's CPU conv, conv_transpose and pooling kernels return: a channels_last
    model keeps channels_last activations (their strides, is_contiguous(memory_format=...) and what .view allows)."""
    for reference in references:
        if getattr(reference, "ndim", 0) != result.ndim or not hasattr(reference, "strides"):
            continue
        order = suggested_order(reference)
        if order is not None and hasattr(result, "strides"):
            laid_out = empty_in_order(xp, result.shape, result.dtype, order)
            laid_out[...] = result
            return laid_out
    return result


def array_order(array) -> list | None:
    """preserve_format_order for an array (NOTE [ preserve_format ])."""
    if array.ndim < 2 or array.flags.c_contiguous:
        return None
    itemsize = array.itemsize
    return preserve_format_order(array.shape, tuple(s // itemsize for s in array.strides))


def copy_preserving_format(xp, array, np_dtype=None):
    """A copy of `array` (cast to np_dtype) in its preserve_format layout (NOTE [ preserve_format ])."""
    order = array_order(array)
    if order is None:
        return array.astype(np_dtype, order="C") if np_dtype is not None else array.copy()
    out = empty_in_order(xp, array.shape, array.dtype if np_dtype is None else np_dtype, order)
    xp.copyto(out, array, casting="unsafe")
    return out


def is_non_overlapping_and_dense(array) -> bool:
    """torch's is_non_overlapping_and_dense: the elements fill a block of memory, each once, in some order
    of the dims (size-1 dims ignored)."""
    if array.flags.c_contiguous:
        return True
    itemsize = array.itemsize
    dims = sorted((d for d in range(array.ndim) if array.shape[d] >= 2), key=lambda d: array.strides[d])
    required = 1
    for d in dims:
        if array.strides[d] != required * itemsize:
            return False
        required *= array.shape[d]
    return True
