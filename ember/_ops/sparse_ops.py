"""Sparse COO tensors: construction, conversion, the kernels dense ops run on them, and their gradients.

NOTE [ Sparse COO tensors ]
A sparse tensor is an ordinary `Tensor` (so isinstance, Parameter, .grad, hooks, the autograd engine and
the optimizers all take it as they are) whose `_data` is a `SparseCOOArray` (ember/_backends/sparse_coo.py):
int64 `indices` (sparse_dim x nnz), `values` (nnz x dense dims), the full shape and torch's is_coalesced
flag.  Its `layout` is `ember.sparse_coo`.  Shape, dtype, device, requires_grad and grad_fn need nothing
new: the array record answers shape/ndim/size like an ndarray.

Dispatch.  `_dispatch.call` looks at each tensor operand once; a sparse one sends the whole call to
`dispatch` below (torch's SparseCPU dispatch key), which looks the op up by name in KERNELS.  An op
without a sparse kernel raises torch's NotImplementedError naming the SparseCPU backend, so a dense kernel
never sees a sparse array (NumPy would refuse it anyway: SparseCOOArray sets `__array_ufunc__ = None`).

Autograd.  Each kernel computes with NumPy on the index/value arrays, then records a node exactly as the
dispatcher does (`_dispatch._record`), for an OpDef whose backward is torch's formula for the sparse case
and whose node name is torch's (`SparseAddmmBackward0`, `ToDenseBackward0`, ...).  Where torch runs the
dense formula (torch.mm / @ with a sparse operand: MmBackward0, whose gradient for the sparse operand is
dense) the dense op's own OpDef is recorded.  Gradients may be sparse or dense tensors; the engine adds
them with the ops here (sparse + sparse concatenates, dense + sparse scatters), and AccumulateGrad keeps a
sparse gradient sparse.  The backward formulas that build sparse results from a gradient's arrays
(sparse_mask, the sparse sum's expansion) are first-order: create_graph through them is not supported.

Coalescing follows torch's rules: construction and concatenating ops leave `is_coalesced()` False, while
coalesce(), to_sparse(), pow and partial sums produce coalesced results; `indices()`/`values()` require a
coalesced tensor, `_indices()`/`_values()` do not.  Sparse tensors live on the CPU only.
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._autograd.grad_mode import state
from .._backends.sparse_coo import SparseCOOArray
from .._device import CPU, as_device
from .._dispatch import EMPTY, SAVE_INPUTS, OpDef
from .._tensor import Tensor
from ._api import export

# ---------------------------------------------------------------- making and reading sparse tensors


def is_sparse(value) -> bool:
    return isinstance(value, Tensor) and type(value._data) is SparseCOOArray


def make_sparse(indices: np.ndarray, values: np.ndarray, shape, coalesced: bool, dtype=None, device=CPU) -> Tensor:
    """A sparse COO Tensor over these arrays (no copy, no checks)."""
    if dtype is None:
        dtype = dt.from_numpy_dtype(values.dtype)
    elif values.dtype != dtype.np_dtype:
        values = values.astype(dtype.np_dtype)
    return Tensor._make(SparseCOOArray(indices, values, shape, coalesced), dtype, device)


def _like(tensor: Tensor, indices, values, shape=None, coalesced=False) -> Tensor:
    """A sparse tensor with tensor's dtype and device."""
    shape = tensor._data.shape if shape is None else shape
    return make_sparse(indices, values, shape, coalesced, tensor._dtype, tensor._device)


def _sparse_only(tensor: Tensor, what: str) -> SparseCOOArray:
    if not is_sparse(tensor):
        raise RuntimeError(f"{what} expected sparse coordinate tensor layout but got Strided")
    return tensor._data


def sparse_backend_error(name: str) -> NotImplementedError:
    """torch's error for an operator with no SparseCPU kernel."""
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' backend. This could be because the "
        "operator doesn't exist for this backend, or was omitted during the selective/custom build process (if "
        "using custom build)."
    )


# ---------------------------------------------------------------- index arithmetic (NumPy)


def _linear(indices: np.ndarray, sizes) -> np.ndarray:
    """Row-major linear positions of the index columns over the sparse dims `sizes`."""
    if indices.shape[0] == 0:
        return np.zeros(indices.shape[1], np.int64)
    return np.ravel_multi_index(tuple(indices), tuple(sizes), mode="wrap") if indices.shape[1] else \
        np.zeros(0, np.int64)


def coalesce_array(array: SparseCOOArray) -> SparseCOOArray:
    """Indices sorted and unique, duplicate entries' values summed (in the values' dtype, in entry order)."""
    if array.coalesced:
        return array
    sparse_dim = array.sparse_dim
    sizes = array.shape[:sparse_dim]
    if array.nnz == 0:
        return SparseCOOArray(array.indices, array.values, array.shape, True)
    linear = _linear(array.indices, sizes)
    order = np.argsort(linear, kind="stable")
    linear = linear[order]
    starts = np.flatnonzero(np.concatenate(([True], linear[1:] != linear[:-1])))
    values = array.values[order]
    if len(starts) != len(linear):
        values = np.add.reduceat(values, starts, axis=0).astype(array.values.dtype, copy=False)
    indices = np.stack(np.unravel_index(linear[starts], sizes)).astype(np.int64) if sparse_dim else \
        np.zeros((0, len(starts)), np.int64)
    return SparseCOOArray(indices, values, array.shape, True)


def _lookup(coalesced: SparseCOOArray, indices: np.ndarray):
    """For each index column, (found, position) in a coalesced array's entries."""
    sizes = coalesced.shape[:coalesced.sparse_dim]
    keys = _linear(coalesced.indices, sizes)
    wanted = _linear(indices, sizes)
    position = np.searchsorted(keys, wanted)
    position = np.minimum(position, max(len(keys) - 1, 0))
    found = (keys[position] == wanted) if len(keys) else np.zeros(len(wanted), bool)
    return found, position


def _gather(source, indices: np.ndarray, dense_shape: tuple, np_dtype) -> np.ndarray:
    """The values of `source` (a sparse or dense Tensor) at the index columns: (nnz, *dense_shape)."""
    if is_sparse(source):
        array = coalesce_array(source._data)
        found, position = _lookup(array, indices)
        out = np.zeros((indices.shape[1],) + tuple(dense_shape), np_dtype)
        out[found] = array.values[position[found]]
        return out
    return np.asarray(source._data[tuple(indices)], np_dtype)


def sparse_mask(dense: Tensor, mask: Tensor) -> Tensor:
    """`dense` at the entries of `mask` (coalesced), as a sparse tensor (torch's Tensor.sparse_mask)."""
    pattern = coalesce_array(mask._data)
    values = _gather(dense, pattern.indices, pattern.values.shape[1:], dense._dtype.np_dtype)
    return make_sparse(pattern.indices, values, mask._data.shape, False, dense._dtype, dense._device)


def _to_dense_array(array: SparseCOOArray) -> np.ndarray:
    out = np.zeros(array.shape, array.values.dtype)
    if array.nnz:
        np.add.at(out, tuple(array.indices), array.values)
    return out


# ---------------------------------------------------------------- running an op: compute, then record


def run(op: OpDef, args: tuple, params: dict = EMPTY, *, record=None):
    """op.impl(*args, **params) on tensors, then the autograd node the dispatcher would record: for `op`, or
    for `record` (a dense op whose formula torch uses here)."""
    result = op.impl(*args, **params)
    if state.enabled and any(isinstance(a, Tensor) and a._requires_grad for a in args):
        node_op = record or op
        if node_op.backward is not None:
            _dispatch._record(node_op, args, params, result)
    return result


def sparse_op(name: str, grad_name: str, impl, backward) -> OpDef:
    return OpDef(name, impl, backward, saves=SAVE_INPUTS, grad_name=grad_name)


def dispatch(op: OpDef, args: tuple, params: dict):
    """Where `_dispatch.call` sends an op call with a sparse operand (see NOTE [ Sparse COO tensors ])."""
    if _dispatch.tracer is not None:
        _dispatch.capture_break(f"{op.name} on a sparse tensor")
    kernel = KERNELS.get(op.name)
    if kernel is None:
        raise sparse_backend_error(op.name)
    return kernel(op, args, params)


KERNELS: dict = {}


def kernel(*names):
    def register(fn):
        for name in names:
            KERNELS[name] = fn
        return fn

    return register


def variant(op: OpDef, impl, backward, name: str | None = None) -> OpDef:
    """The sparse form of a dense op for one call: its kernel (a closure over the call's dtype) and backward,
    under the dense op's node name (torch names `s * 2`'s node MulBackward0 whatever the layout)."""
    return OpDef(name or "sparse_" + op.name, impl, backward, saves=SAVE_INPUTS, grad_name=op.grad_name)


def _result_dtype(op: OpDef, args: tuple, params: dict):
    return op.dtype_rule(args, params)[1]


def _values_of(tensor: Tensor, np_dtype) -> np.ndarray:
    values = tensor._data.values
    return values if values.dtype == np_dtype else values.astype(np_dtype)


def _is_scalar(value) -> bool:
    """A Python number or a 0-d dense tensor: what sparse * / scalar accept."""
    if isinstance(value, Tensor):
        return not is_sparse(value) and value._data.ndim == 0
    return isinstance(value, (bool, int, float, complex))


def _scalar_array(value, np_dtype):
    return np.asarray(value._data if isinstance(value, Tensor) else value).astype(np_dtype)


# ---------------------------------------------------------------- construction and conversion


@export(method=False)
def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad: bool = False, check_invariants=None, is_coalesced=None) -> Tensor:
    """A sparse COO tensor with the given indices (sparse_dim x nnz) and values (nnz x dense dims)."""
    from .creation import tensor as make_tensor

    if device is not None and as_device(device).type != "cpu":
        raise NotImplementedError("ember: sparse tensors are supported on the CPU only")
    index_array = np.asarray((indices if isinstance(indices, Tensor) else make_tensor(indices))._data)
    if index_array.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(index_array.shape)}")
    index_array = index_array.astype(np.int64)
    if not isinstance(values, Tensor):
        values = make_tensor(values, dtype=dtype)
    elif dtype is not None and values._dtype is not dtype:
        values = values.to(dtype)
    if values._data.ndim == 0:
        raise RuntimeError("values must be at least 1-dimensional")  # (torch: values.dim() >= 1)
    sparse_dim, dense_dim, nnz = index_array.shape[0], values._data.ndim - 1, index_array.shape[1]
    if values._data.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {nnz}, nnz from "
                           f"values: {values._data.shape[0]}")
    if size is None:
        sparse_sizes = tuple(int(n) + 1 for n in index_array.max(axis=1)) if nnz else (0,) * sparse_dim
        size = sparse_sizes + tuple(values._data.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = {len(size)}, "
                           f"sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    if tuple(values._data.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {list((nnz,) + size[sparse_dim:])}, got "
                           f"{list(values._data.shape)}")
    if check_invariants:
        _check_index_bounds(index_array, size)
    params = {"indices": index_array, "shape": size, "coalesced": bool(is_coalesced)}
    result = run(_SPARSE_COO_TENSOR, (values,), params)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _check_index_bounds(indices: np.ndarray, size: tuple) -> None:
    for dim, row in enumerate(indices):
        if row.size and row.min() < 0:
            raise RuntimeError(f"found negative index {int(row.min())} for dim {dim}")
        if row.size and row.max() >= size[dim]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {dim}, size is {size[dim]} but found "
                               f"index {int(row.max())}")


def _coo_impl(values: Tensor, indices, shape, coalesced) -> Tensor:
    return make_sparse(indices, values._data, shape, coalesced, values._dtype, values._device)


def _coo_backward(ctx, grad):
    indices = ctx.params["indices"]
    (values,) = ctx.inputs
    return Tensor._make(_gather(grad, indices, values._data.shape[1:], grad._dtype.np_dtype), grad._dtype,
                        grad._device)


_SPARSE_COO_TENSOR = sparse_op("sparse_coo_tensor", "SparseCooTensorWithDimsAndTensorsBackward0", _coo_impl,
                               _coo_backward)


def _to_dense_impl(input: Tensor) -> Tensor:
    return Tensor._make(_to_dense_array(input._data), input._dtype, input._device)


_TO_DENSE = sparse_op("to_dense", "ToDenseBackward0", _to_dense_impl,
                      lambda ctx, grad: sparse_mask(grad.to_dense(), ctx.inputs[0]))


@export(function=False)
def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """The dense tensor with this sparse tensor's values (self, for a dense tensor)."""
    result = run(_TO_DENSE, (self,)) if is_sparse(self) else self
    return result if dtype is None else result.to(dtype)


def _to_sparse_impl(input: Tensor, sparse_dim=None) -> Tensor:
    array = input._data
    ndim = array.ndim
    sparse_dim = ndim if sparse_dim is None else sparse_dim
    if not 0 <= sparse_dim <= ndim:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{ndim}] range, but {sparse_dim} "
                           "is given")
    nonzero = array != 0
    if ndim > sparse_dim:
        nonzero = nonzero.any(axis=tuple(range(sparse_dim, ndim)))
    indices = np.stack(np.nonzero(nonzero)).astype(np.int64) if sparse_dim else \
        np.zeros((0, int(bool(nonzero))), np.int64)
    values = array[tuple(indices)] if sparse_dim else array[None]
    return make_sparse(indices, np.ascontiguousarray(values), array.shape, True, input._dtype, input._device)


def _to_sparse_backward(ctx, grad):
    return grad.to_dense() if is_sparse(grad) else grad


_TO_SPARSE = sparse_op("to_sparse", "ToSparseBackward1", _to_sparse_impl, _to_sparse_backward)
_TO_SPARSE_DIM = sparse_op("to_sparse_dim", "ToSparseBackward0", _to_sparse_impl, _to_sparse_backward)


@export(function=False)
def to_sparse(self: Tensor, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None) -> Tensor:
    """A sparse COO copy of a dense tensor (the first `sparse_dim` dims sparse, default all)."""
    if layout is not None and layout.name != "sparse_coo":
        raise NotImplementedError(f"ember: to_sparse(layout={layout}) is not supported (only sparse_coo)")
    if is_sparse(self):
        if sparse_dim is not None and sparse_dim != self._data.sparse_dim:
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim argument !=self."
                               "sparse_dim() is not supported")
        return self
    if self._device.type != "cpu":
        raise NotImplementedError("ember: sparse tensors are supported on the CPU only")
    if sparse_dim is None:
        return run(_TO_SPARSE, (self,))
    return run(_TO_SPARSE_DIM, (self,), {"sparse_dim": sparse_dim})


@export(function=False)
def to_sparse_coo(self: Tensor) -> Tensor:
    return to_sparse(self)


def _coalesce_impl(input: Tensor) -> Tensor:
    array = coalesce_array(input._data)
    return make_sparse(array.indices, array.values, array.shape, True, input._dtype, input._device)


_COALESCE = sparse_op("coalesce", "CoalesceBackward0", _coalesce_impl, lambda ctx, grad: grad)


@export(function=False)
def coalesce(self: Tensor) -> Tensor:
    """Sorted, unique indices with duplicate values summed (self when already coalesced)."""
    array = _sparse_only(self, "coalesce")
    return self if array.coalesced else run(_COALESCE, (self,))


@export(function=False)
def is_coalesced(self: Tensor) -> bool:
    return _sparse_only(self, "is_coalesced").coalesced


@export(function=False)
def _coalesced_(self: Tensor, coalesced: bool) -> Tensor:
    _sparse_only(self, "_coalesced_").coalesced = bool(coalesced)
    return self


@export(function=False)
def sparse_dim(self: Tensor) -> int:
    return self._data.sparse_dim if is_sparse(self) else 0


@export(function=False)
def dense_dim(self: Tensor) -> int:
    return self._data.dense_dim if is_sparse(self) else self._data.ndim


@export(function=False)
def _nnz(self: Tensor) -> int:
    return _sparse_only(self, "_nnz").nnz


@export(function=False)
def _indices(self: Tensor) -> Tensor:
    return Tensor._make(_sparse_only(self, "_indices").indices, dt.int64, self._device)


@export(function=False)
def _values(self: Tensor) -> Tensor:
    """The values array as a tensor, coalesced or not; outside autograd, as torch's."""
    return Tensor._make(_sparse_only(self, "_values").values, self._dtype, self._device)


@export(function=False)
def indices(self: Tensor) -> Tensor:
    if not _sparse_only(self, "indices").coalesced:
        raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    return _indices(self)


def _values_backward(ctx, grad):
    (input,) = ctx.inputs
    return _like(grad, input._data.indices, np.asarray(grad._data), input._data.shape, coalesced=True)


_VALUES = sparse_op("values", "ValuesBackward0", lambda input: _values(input), _values_backward)


@export(function=False)
def values(self: Tensor) -> Tensor:
    if not _sparse_only(self, "values").coalesced:
        raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    return run(_VALUES, (self,))


export(sparse_mask, function=False)


# ---------------------------------------------------------------- repr and pickling


def sparse_repr(tensor: Tensor) -> str:
    """torch's repr of a sparse COO tensor: its indices and values (printed without their dtype), then size,
    nnz, dtype (when torch shows one), layout and autograd state."""
    from .. import sparse_coo
    from .._tensor_str import tensor_repr

    array = tensor._data
    default = dt.get_default_dtype().name
    inner_dtype = default if tensor._dtype.is_floating_point else "int64" if tensor._dtype.category == 1 else \
        tensor._dtype.name
    indices_text = tensor_repr(array.indices, shape=array.indices.shape, dtype_name="int64",
                               default_dtype_name=default, device=None, prefix="tensor(indices=tensor(")
    values_text = tensor_repr(array.values, shape=array.values.shape, dtype_name=inner_dtype,
                              default_dtype_name=default, device=None, prefix="       values=tensor(")
    if array.nnz == 0:  # torch prints empty parts with their sizes and no dtype
        indices_text = f"tensor(indices=tensor([], size={tuple(array.indices.shape)})"
        values_text = f"       values=tensor([], size={tuple(array.values.shape)})"
    fields = [f"size={tuple(array.shape)}", f"nnz={array.nnz}"]
    if tensor._dtype.name not in (default, "int64", "bool"):
        fields.append(f"dtype=ember.{tensor._dtype.name}")
    fields.append(f"layout={sparse_coo!r}")
    grad_fn = tensor.grad_fn
    if grad_fn is not None:
        fields.append(f"grad_fn=<{grad_fn.name()}>")
    elif tensor._requires_grad:
        fields.append("requires_grad=True")
    return f"{indices_text},\n{values_text.rstrip()},\n       {', '.join(fields)})"


def rebuild_sparse(indices, values, shape, coalesced, requires_grad=False) -> Tensor:
    """Unpickling (copy, deepcopy, multiprocessing) of a sparse tensor: see Tensor.__reduce_ex__."""
    tensor = make_sparse(indices, values, shape, coalesced)
    tensor._requires_grad = requires_grad
    return tensor


def assign_inplace(target: Tensor, result: Tensor) -> None:
    """The write of an in-place op on a sparse tensor (Tensor._inplace_from): the target takes the result's
    entries, cast to its dtype.  The old arrays are left untouched for whoever shares them."""
    if not is_sparse(result):
        raise RuntimeError("ember: an in-place op on a sparse tensor produced a dense result")
    array = result._data
    if array.values.dtype != target._dtype.np_dtype:
        array = SparseCOOArray(array.indices, array.values.astype(target._dtype.np_dtype), array.shape,
                               array.coalesced)
    target._data = array
    target._storage.array = array




_dispatch.sparse_dispatch = dispatch


@export(method=False)
def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """torch.spmm: torch.mm with a sparse first operand (mm's dense gradient formula)."""
    return input.mm(mat2)
