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
