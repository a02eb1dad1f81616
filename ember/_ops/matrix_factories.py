"""Structured matrices and index tensors: tril_indices, triu_indices, vander, block_diag, unravel_index.

tril/triu_indices are factories (index arithmetic on the host, then onto the device, as eye is); vander is
torch's composition (a column of ones, then a cumulative product), so its values round as torch's do and its
gradient is cumprod's; block_diag and unravel_index are single ops.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import numpy as np

from .. import _dtype as dt
from .._dispatch import OpDef, call, promote
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export
from .creation import _creation_out, zeros

# ---------------------------------------------------------------- triangle indices


def _triangle_indices(name: str, numpy_indices, row: int, col: int, offset: int, dtype, device) -> Tensor:
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = dt.int64 if dtype is None else dtype
    if dtype not in (dt.int32, dt.int64):
        raise NotImplementedError(f'"{name}" not implemented for \'{SCALAR_NAMES[dtype.name]}\'')
    rows, cols = numpy_indices(row, offset, col)
    values = np.stack((rows, cols)).astype(dtype.np_dtype).reshape(2, -1)
    return _creation_out(values, dtype, device, False, None)


@export(method=False)
def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None,
                 pin_memory: bool = False) -> Tensor:
    """The (2, N) coordinates of the lower triangle of a row x col matrix (below diagonal `offset`), row-major."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


@export(method=False)
def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None,
                 pin_memory: bool = False) -> Tensor:
    """The (2, N) coordinates of the upper triangle of a row x col matrix (above diagonal `offset`), row-major."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


# ---------------------------------------------------------------- vander


@export(method=False)
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803 - torch's name
    """The Vandermonde matrix of a 1-D x: columns x^(N-1) ... x^0 (or x^0 ... x^(N-1) when increasing).

    Integer and bool inputs give int64, as torch's (its cumulative product promotes them)."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    count = x.shape[0]
    columns = count
    if N is not None:
        columns = int(N)
        if columns < 0:
            raise RuntimeError("N must be non-negative.")
    dtype = dt.promote_types(x._dtype, dt.int64)
    result = x.new_ones((count, min(columns, 1)), dtype=dtype)
    if columns > 1:
        from .movement import cat

        powers = x.to(dtype).unsqueeze(1).expand(count, columns - 1).cumprod(1)
        result = cat((result, powers), 1)
    if not increasing:
        from .movement import flip

        result = flip(result, (1,))
    return result


# ---------------------------------------------------------------- block_diag


def _as_block_shape(shape: tuple) -> tuple:
    """A block's (rows, columns): a 0-d tensor is 1 x 1, a 1-d tensor one row."""
    if len(shape) == 0:
        return (1, 1)
    if len(shape) == 1:
        return (1, shape[0])
    return shape


def _block_diag_impl(xp, *arrays, shapes):
    rows = sum(_as_block_shape(s)[0] for s in shapes)
    columns = sum(_as_block_shape(s)[1] for s in shapes)
    out = xp.zeros((rows, columns), arrays[0].dtype)
    row = column = 0
    for array, shape in zip(arrays, shapes):
        height, width = _as_block_shape(shape)
        out[row:row + height, column:column + width] = array.reshape(height, width)
        row, column = row + height, column + width
    return out


def _block_diag_backward(ctx, g):
    grads, row, column = [], 0, 0
    for shape, needed in zip(ctx.params["shapes"], ctx.needs_input_grad):
        height, width = _as_block_shape(shape)
        grads.append(g[row:row + height, column:column + width].reshape(shape) if needed else None)
        row, column = row + height, column + width
    return tuple(grads)


def _block_diag_meta(args, params):
    blocks = [_as_block_shape(s) for s in params["shapes"]]
    return (sum(b[0] for b in blocks), sum(b[1] for b in blocks))


_BLOCK_DIAG = OpDef("block_diag", _block_diag_impl, _block_diag_backward, dtype_rule=promote, upcast_half=False,
                    meta=_block_diag_meta)


@export(method=False)
def block_diag(*tensors) -> Tensor:
    """A 2-D block-diagonal matrix of the inputs (0-d, 1-d or 2-d), their dtypes promoted."""
    for index, tensor in enumerate(tensors):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected Tensor as element {index} in argument 0, but got {type(tensor).__name__}")
        if tensor.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {index} has "
                               f"{tensor.ndim} dimensions")
    if not tensors:
        return zeros((1, 0))
    return call(_BLOCK_DIAG, tensors, {"shapes": tuple(tuple(t.shape) for t in tensors)})


# ---------------------------------------------------------------- unravel_index


def _unravel_impl(xp, indices, shape):
    """torch's formula: (indices // coefficients) % shape over a new last dim, in int64."""
    coefficients = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)), func=operator.mul))))
    flat = indices.astype(xp.int64)[..., None]
    return xp.floor_divide(flat, xp.asarray(coefficients, dtype=xp.int64)) % xp.asarray(shape, dtype=xp.int64)


_UNRAVEL_INDEX = OpDef("unravel_index", _unravel_impl, None, dtype_rule=lambda args, params: (None, dt.int64),
                       upcast_half=False, meta=lambda args, params: tuple(args[0].shape) + (len(params["shape"]),))


@export(method=False)
def unravel_index(indices: Tensor, shape) -> tuple:
    """The coordinates, one int64 tensor per dim of `shape`, of flat (row-major) indices into that shape."""
    if indices.is_complex() or indices.is_floating_point() or indices.dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if not isinstance(shape, (int, Sequence)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if isinstance(shape, int):
        shape = (shape,)
    for size in shape:
        if not isinstance(size, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(size)}")
    shape = tuple(int(size) for size in shape)
    if any(size < 0 for size in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices.numel() and indices._device.type != "meta":
        raise RuntimeError("ZeroDivisionError")  # torch's integer division by a zero size
    return call(_UNRAVEL_INDEX, (indices,), {"shape": shape}).unbind(-1)

