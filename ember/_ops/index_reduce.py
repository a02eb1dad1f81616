"""torch.index_reduce (and Tensor.index_reduce / index_reduce_): source's slices along `dim` folded into the
slices of input at `index` with 'prod', 'mean', 'amax' or 'amin'.

The forward follows ATen's CPU kernel (index_reduce_func_impl, TensorAdvancedIndexing.cpp): the result starts
as a copy of input (its indexed slices set to the reduction's identity when include_self=False), each slice of
source is folded in, in index order, in input's own dtype (so float16 rounds at every step, integers wrap),
and 'mean' divides by the counts (floor division for integers).  The gradient is torch's
index_reduce_backward (FunctionsManual.cpp) written in ember ops, so double backward works.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from .._autograd.function import DelayedError
from .._autograd.grad_mode import state
from .._backends import MetaArray, to_host
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, keep
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ._api import export, finish_out

_REDUCES = ("prod", "mean", "amax", "amin")
_UFUNCS = {"prod": "multiply", "mean": "add", "amax": "maximum", "amin": "minimum"}
_warned = False


def _identity(reduce: str, dtype: np.dtype):
    """The value include_self=False starts an indexed slice from (ATen: -inf/lowest for amax, inf/max for amin)."""
    if reduce == "prod":
        return 1
    if reduce == "mean":
        return 0
    if dtype.kind == "f" or dtype == dt.bfloat16.np_dtype:
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _index_reduce_impl(xp, a, source, index, dim, reduce, include_self):
    out = a.copy()
    if out.ndim == 0:
        out, source = out.reshape(1), source.reshape(1)
    slices = xp.moveaxis(out, dim, 0)  # a view: writes reach `out`
    values = xp.moveaxis(source, dim, 0)
    positions = index  # host int64 positions (the op's params)
    index = xp.asarray(positions)
    if not include_self:
        slices[index] = _identity(reduce, out.dtype)
    reducer = getattr(xp, _UFUNCS[reduce])
    with np.errstate(invalid="ignore", over="ignore"):
        if xp is np:
            reducer.at(slices, index, values)
        else:  # CuPy has ufunc.at for few ufuncs: fold the slices one at a time, in index order
            for i, position in enumerate(positions.tolist()):
                slices[position] = reducer(slices[position], values[i])
        if reduce == "mean":
            counts = np.full(slices.shape[0], 1 if include_self else 0, dtype=out.dtype)
            np.add.at(counts, positions, np.ones(positions.shape, dtype=out.dtype))
            counts[counts == 0] = 1
            counts = xp.asarray(counts.reshape((-1,) + (1,) * (slices.ndim - 1)))
            divide = xp.floor_divide if out.dtype.kind in "iu" else xp.true_divide
            slices[...] = divide(slices, counts)
    return out.reshape(a.shape)


def _index_reduce_backward(ctx, g):
    """torch's index_reduce_backward: grads for (input, source)."""
    self, source = ctx.inputs
    result = ctx.result
    params = ctx.params
    dim, reduce, include_self = params["dim"], params["reduce"], params["include_self"]
    index = _index_tensor(params["index"], g)
    if reduce == "prod":
        grad_self, grad_source = _prod_backward(g, self, source, params, index, result)
    elif reduce == "mean":
        counts = g.new_ones(g.shape) if include_self else g.new_zeros(g.shape)
        counts = _index_add(counts, dim, index, source.new_ones(source.shape))
        counts = counts.masked_fill(counts == 0, 1)
        grad_self = g / counts
        grad_source = _select(g, dim, index) / _select(counts, dim, index)
    else:
        value = _select(result, dim, index)
        self_is_result = (self == result).to(self.dtype)
        source_is_result = (source == value).to(self.dtype)
        grad_distributed = g / _index_add(self_is_result, dim, index, source_is_result)
        grad_self = self_is_result * grad_distributed
        grad_source = source_is_result * _select(grad_distributed, dim, index)
    if not include_self:
        grad_self = _along(grad_self, dim).index_fill(0, index, 0)
        grad_self = _back(grad_self, dim, g.ndim)
    return grad_self, grad_source


def _prod_backward(g, self, source, params, index, result):
    dim = params["dim"]
    masked_self = self.masked_fill(self == 0, 1)
    grad_self = g * call(_INDEX_REDUCE, (masked_self, source), params) / masked_self
    source_zero = source == 0
    source_zeros = _select(_index_add(self.new_zeros(self.shape), dim, index, source_zero.to(self.dtype)), dim, index)
    single_zero = source_zero & (source_zeros == 1)
    masked_source_result = call(_INDEX_REDUCE, (self, source.masked_fill(single_zero, 1)), params)
    grad_source = _select(g * masked_source_result, dim, index).where(
        single_zero, _select(g * result, dim, index) / source.masked_fill(source_zero, 1))
    if state.enabled and grad_source.requires_grad and bool((source_zeros > 1).any()):
        # torch's DelayedError: the first-order gradient is right, differentiating it again raises
        node = DelayedError("index_reduce(): Double backward is unsupported for source when >1 zeros in source are "
                            "scattered to the same position in self", 1)
        node.next_functions = (grad_source._edge(),)
        grad_source = grad_source.detach()
        grad_source._grad_fn = node
        grad_source._output_nr = 0
        grad_source._requires_grad = True
    return grad_self, grad_source


def _index_tensor(positions: np.ndarray, like: Tensor) -> Tensor:
    from .creation import tensor

    return tensor(positions, dtype=dt.int64, device=like.device)


def _along(tensor: Tensor, dim: int) -> Tensor:
    """`dim` moved to the front (a 0-d tensor as one element), so index_add/index_fill work on dim 0."""
    return tensor.reshape(1) if tensor.ndim == 0 else tensor.movedim(dim, 0)


def _back(tensor: Tensor, dim: int, ndim: int) -> Tensor:
    """Undo _along."""
    return tensor.reshape(()) if ndim == 0 else tensor.movedim(0, dim)


def _index_add(tensor: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """tensor.index_add(dim, index, source), 0-d tensors included (source 0-d with one index)."""
    return _back(_along(tensor, dim).index_add(0, index, _along(source, dim)), dim, tensor.ndim)


def _select(tensor: Tensor, dim: int, index: Tensor) -> Tensor:
    """tensor.index_select(dim, index); a 0-d tensor (one index) is its own selection."""
    return tensor if tensor.ndim == 0 else tensor.index_select(dim, index)


_INDEX_REDUCE = OpDef("index_reduce", _index_reduce_impl, _index_reduce_backward, dtype_rule=keep, upcast_half=False,
                      saves=SAVE_INPUTS | SAVE_RESULT, meta=lambda args, params: tuple(args[0].shape))


# ---------------------------------------------------------------- checks, in ATen's order


def _require(name: str, position: int | None, value, kind: type, kind_name: str) -> None:
    if not isinstance(value, kind) or (kind is bool and not isinstance(value, (bool, np.bool_))):
        where = f"argument '{name}'" + (f" (position {position})" if position is not None else "")
        raise TypeError(f"index_reduce(): {where} must be {kind_name}, not {type(value).__name__}")


def _check(input: Tensor, dim, index, source, reduce, include_self, first: int) -> int:
    """ATen's index_reduce meta checks; returns the wrapped dim.  `first` is index's argument position."""
    _require("index", first, index, Tensor, "Tensor")
    _require("source", first + 1, source, Tensor, "Tensor")
    _require("reduce", first + 2, reduce, str, "str")
    if type(include_self) is not bool:
        raise TypeError(f"index_reduce(): argument 'include_self' must be bool, not {type(include_self).__name__}")
    if reduce not in _REDUCES:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    dim = wrap_dim(dim, input.ndim)
    index_type = SCALAR_NAMES[index._dtype.name]
    if index.ndim > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index_type} and size: {list(index.shape)}")
    if index._dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {index_type}")
    if source._dtype is not input._dtype:
        raise RuntimeError(f"index_reduce_(): self ({SCALAR_NAMES[input._dtype.name]}) and source "
                           f"({SCALAR_NAMES[source._dtype.name]}) must have the same scalar type")
    if not (dim == 0 or dim < source.ndim):
        raise RuntimeError(f"index_reduce_(): Indexing dim {dim} is out of bounds of the source tensor with dim "
                           f"{source.ndim}")
    count = index.numel()
    if count != (1 if source.ndim == 0 else source.shape[dim]):
        if source.ndim == 0:  # ATen's message reads source.size(dim) of a 0-d tensor
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        raise RuntimeError(f"index_reduce_(): Number of indices ({count}) should be equal to source.size(dim): "
                           f"({source.shape[dim]}), for dim: {dim}")
    self_sizes, source_sizes = list(input.shape), list(source.shape)
    if input.ndim and source.ndim:
        del self_sizes[dim], source_sizes[dim]
    if self_sizes != source_sizes:
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    return dim


def _check_kernel(input: Tensor, dim: int, positions: np.ndarray, reduce: str, include_self: bool) -> None:
    """The errors ATen's CPU kernel raises while running: unsupported dtypes and out-of-range indices."""
    dtype = input._dtype
    name = SCALAR_NAMES[dtype.name]
    unsupported = dtype is dt.bool_ or dtype.is_complex
    if unsupported and not include_self:
        raise NotImplementedError(f"\"index_reduce_func_exclude_input_init\" not implemented for '{name}'")
    if input.ndim <= 1:
        if unsupported:
            raise NotImplementedError(f"\"index_func_\" not implemented for '{name}'")
        size = input.numel()
    else:
        if not positions.size:
            return
        size = input.shape[dim]
        if size == 0:
            raise IndexError(f"select(): index 0 out of range for tensor of size {list(input.shape)} at dimension "
                             f"{dim}")
        if dtype.is_complex and reduce in ("amax", "amin"):
            kernel = "maximum_cpu" if reduce == "amax" else "minimum_cpu"
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{name}'")
    if positions.size and (positions.min() < 0 or positions.max() >= size):
        raise IndexError("index out of range in self")
    if dtype is dt.bool_ and reduce == "mean":
        raise NotImplementedError("\"div_floor_cpu\" not implemented for 'Bool'")


def _index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, include_self: bool,
                  first: int) -> Tensor:
    global _warned
    dim = _check(input, dim, index, source, reduce, include_self, first)
    if isinstance(index._data, MetaArray):
        positions = np.zeros(index.shape, np.int64).reshape(-1)
    else:
        positions = np.asarray(to_host(index._data), np.int64).reshape(-1)  # host positions (a sync on cuda)
    if input._device.type != "meta":
        _check_kernel(input, dim, positions, reduce, include_self)
    if not _warned:  # ATen's TORCH_WARN_ONCE
        _warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=3)
    return call(_INDEX_REDUCE, (input, source), {"index": positions, "dim": dim, "reduce": reduce,
                                                  "include_self": include_self})


@export(method=False)
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True, out: Tensor | None = None) -> Tensor:
    """input with source's slices along `dim` reduced ('prod', 'mean', 'amax', 'amin') into its slices at
    `index`; include_self=False leaves input's own values out of the indexed slices."""
    _require("input", 1, input, Tensor, "Tensor")
    return finish_out(_index_reduce(input, dim, index, source, reduce, include_self, 3), out)


def _index_reduce_method(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                         include_self: bool = True) -> Tensor:
    """Tensor.index_reduce: see torch.index_reduce."""
    return _index_reduce(self, dim, index, source, reduce, include_self, 2)


_index_reduce_method.__name__ = _index_reduce_method.__qualname__ = "index_reduce"
export(_index_reduce_method, name="index_reduce", function=False, inplace=True)
