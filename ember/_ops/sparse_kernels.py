"""The SparseCPU kernels of dense ops, and torch.sparse's own products and sums.

Each kernel is registered under the dense op's name (`@kernel("mul")`) and receives that op's call when an
operand is sparse (NOTE [ Sparse COO tensors ] in sparse_ops.py).  It computes on the index/value arrays
and records the backward torch uses for the sparse case.  Pointwise kernels run the dense op's own `impl`
on the values array, so their numbers are the dense op's.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from .sparse_ops import (
    _gather,
    _is_scalar,
    _linear,
    _lookup,
    _scalar_array,
    _values_of,
    coalesce_array,
    is_sparse,
    kernel,
    make_sparse,
    run,
    sparse_backend_error,
    sparse_mask,
    sparse_op,
    variant,
)


def _sizes_message(tensor: Tensor) -> str:
    return str(list(tensor._data.shape))


# ---------------------------------------------------------------- add, sub


def _scaled(grad, factor):
    return grad if factor == 1 else grad * factor


def _add_backward(ctx, grad):
    factor = ctx.params.get("alpha", 1) * ctx.params.get("sign", 1)
    return grad, _scaled(grad, factor)


@kernel("add", "sub")
def _add_kernel(op: OpDef, args: tuple, params: dict):
    a, b = args
    if not is_sparse(a):  # dense + sparse: a dense result
        if tuple(a._data.shape) != tuple(b._data.shape):
            raise RuntimeError(
                f"add: expected 'self' and 'other' to have same size, but self has size {_sizes_message(a)} while "
                f"other has size {_sizes_message(b)} (FYI: dense-sparse addition does not currently support "
                "broadcasting)")
        impl = _add_dense_sparse
    elif not is_sparse(b):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    else:
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"add: expected sizes of 'self' and 'other' to match, but {_sizes_message(a)} != "
                               f"{_sizes_message(b)}")
        if a._data.sparse_dim != b._data.sparse_dim:
            raise RuntimeError(f"add: expected 'self' and 'other' to have same sparse dimensions, but got "
                               f"{a._data.sparse_dim} and {b._data.sparse_dim}")
        impl = _add_sparse_sparse
    params = {"alpha": params.get("alpha", 1), "sign": -1 if op.name == "sub" else 1,
              "dtype": _result_dtype(op, args, params)}
    return run(variant(op, impl, _add_backward, f"sparse_{op.name}_{impl.__name__}"), args, params)


def _result_dtype(op, args, params):
    return op.dtype_rule(args, params)[1]


def _add_dense_sparse(a: Tensor, b: Tensor, alpha=1, sign=1, dtype=None) -> Tensor:
    out = np.array(a._data, dtype=dtype.np_dtype, copy=True)
    array = b._data
    if array.nnz:
        np.add.at(out, tuple(array.indices), _values_of(b, dtype.np_dtype) * np.asarray(alpha * sign,
                                                                                         dtype.np_dtype))
    return Tensor._make(out, dtype, a._device)


def _add_sparse_sparse(a: Tensor, b: Tensor, alpha=1, sign=1, dtype=None) -> Tensor:
    """torch's CPU kernel (add_out_sparse_cpu): when both values arrays are contiguous, one two-pointer merge
    of the entry lists by linear index, adding entries whose indices meet (coalesced operands: their sorted
    union; uncoalesced ones: that same walk, neither a sort nor a concatenation), coalesced when both operands
    are; otherwise (an expanded gradient's values) the concatenation, uncoalesced."""
    left, right = a._data, b._data
    mine, other = _values_of(a, dtype.np_dtype), _values_of(b, dtype.np_dtype)
    factor = alpha * sign
    if factor != 1:
        other = other * np.asarray(factor, dtype.np_dtype)
    if right.nnz == 0 or left.nnz == 0:  # one operand as it is
        source, values = (left, mine) if right.nnz == 0 else (right, other)
        return make_sparse(source.indices.copy(), np.array(values), left.shape, source.coalesced, dtype, a._device)
    contiguous = left.values.flags.c_contiguous and right.values.flags.c_contiguous
    coalesced = contiguous and left.coalesced and right.coalesced
    if coalesced or not contiguous:  # the merge of sorted lists is their union; torch concatenates the others
        indices = np.concatenate([left.indices, right.indices], axis=1)
        values = np.concatenate([mine, other], axis=0)
        array = type(left)(indices, values, left.shape, False)
        array = coalesce_array(array) if coalesced else array
        return make_sparse(array.indices, array.values, left.shape, coalesced, dtype, a._device)
    sizes = left.shape[:left.sparse_dim]
    order, meets = _merge_order(_linear(left.indices, sizes).tolist(), _linear(right.indices, sizes).tolist())
    take_left, take_right = order >= 0, order < 0
    # each output entry: a left entry (order >= 0), a right entry (-1 - j), or a left entry with its meeting
    # right entry added (meets)
    values = np.empty((len(order),) + mine.shape[1:], dtype.np_dtype)
    indices = np.empty((left.sparse_dim, len(order)), np.int64)
    values[take_left] = mine[order[take_left]]
    indices[:, take_left] = left.indices[:, order[take_left]]
    right_positions = -1 - order[take_right]
    values[take_right] = other[right_positions]
    indices[:, take_right] = right.indices[:, right_positions]
    outputs, partners = meets
    if len(outputs):
        values[outputs] += other[partners]
    return make_sparse(indices, values, left.shape, False, dtype, a._device)


def _merge_order(left: list, right: list):
    """The two-pointer merge of two key lists: for each output entry, i (left entry i) or -1 - j (right entry
    j); and (outputs, right partners) for the outputs where a left and a right key met."""
    order, outputs, partners = [], [], []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i] < right[j]:
            order.append(i)
            i += 1
        elif right[j] < left[i]:
            order.append(-1 - j)
            j += 1
        else:
            outputs.append(len(order))
            partners.append(j)
            order.append(i)
            i += 1
            j += 1
    order.extend(range(i, len(left)))
    order.extend(-1 - k for k in range(j, len(right)))
    return np.asarray(order, np.int64), (np.asarray(outputs, np.int64), np.asarray(partners, np.int64))


# ---------------------------------------------------------------- mul, div, neg, pow


def _mul_backward(ctx, grad):
    a, b = ctx.inputs
    return (grad * b if ctx.needs_input_grad[0] else None,
            grad * a if ctx.needs_input_grad[1] else None)


@kernel("mul")
def _mul_kernel(op: OpDef, args: tuple, params: dict):
    dtype = _result_dtype(op, args, params)
    return run(variant(op, lambda a, b: _mul_impl(op, a, b, dtype), _mul_backward), args)


def _mul_impl(op: OpDef, a, b, dtype) -> Tensor:
    np_dtype = dtype.np_dtype
    if not is_sparse(a):  # dense * sparse is sparse * dense
        a, b = b, a
    array = a._data
    if _is_scalar(b):
        values = op.impl(np, _values_of(a, np_dtype), _scalar_array(b, np_dtype))
        return make_sparse(array.indices, np.asarray(values, np_dtype), array.shape, array.coalesced, dtype,
                           a._device)
    if is_sparse(b):
        if a._data.shape != b._data.shape:
            raise RuntimeError(f"mul operands have incompatible sizes {_sizes_message(a)} and {_sizes_message(b)}")
        other = coalesce_array(b._data)
        found, position = _lookup(other, array.indices)
        values = _values_of(a, np_dtype)[found] * other.values[position[found]].astype(np_dtype)
        return make_sparse(array.indices[:, found], values, array.shape, array.coalesced, dtype, a._device)
    dense = np.broadcast_to(np.asarray(b._data, np_dtype), array.shape)
    values = _values_of(a, np_dtype) * dense[tuple(array.indices)]
    return make_sparse(array.indices, values, array.shape, array.coalesced, dtype, a._device)


def _div_backward(ctx, grad):
    a, b = ctx.inputs
    grad_a = grad / b if ctx.needs_input_grad[0] else None
    grad_b = None
    if ctx.needs_input_grad[1]:
        grad_b = -(grad * a).sum() / (b * b)
    return grad_a, grad_b


@kernel("div")
def _div_kernel(op: OpDef, args: tuple, params: dict):
    a, b = args
    if not is_sparse(a) or not _is_scalar(b):
        divisor = b._data.shape if isinstance(b, Tensor) else ()
        raise RuntimeError("Sparse division requires a scalar or zero-dim dense tensor divisor (got shape "
                           f"{list(divisor)} for divisor)")
    dtype = _result_dtype(op, args, params)

    def impl(a, b):
        array = a._data
        values = op.impl(np, _values_of(a, dtype.np_dtype), _scalar_array(b, dtype.np_dtype))
        return make_sparse(array.indices, np.asarray(values, dtype.np_dtype), array.shape, array.coalesced, dtype,
                           a._device)

    return run(variant(op, impl, _div_backward), args)


@kernel("neg")
def _neg_kernel(op: OpDef, args: tuple, params: dict):
    def impl(a):
        array = a._data
        return make_sparse(array.indices, op.impl(np, array.values), array.shape, array.coalesced, a._dtype,
                           a._device)

    return run(variant(op, impl, lambda ctx, grad: -grad), args)


def _pow_backward(ctx, grad):
    a, exponent = ctx.inputs
    array = coalesce_array(a._data)
    derivative = exponent * array.values.astype(grad._dtype.np_dtype) ** (exponent - 1)
    return grad * make_sparse(array.indices, np.asarray(derivative, grad._dtype.np_dtype), array.shape, True,
                              grad._dtype, grad._device), None


@kernel("pow")
def _pow_kernel(op: OpDef, args: tuple, params: dict):
    a, exponent = args
    if not is_sparse(a) or isinstance(exponent, Tensor):
        raise _backend_error(op)
    if exponent == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor "
                           "dense")
    dtype = _result_dtype(op, args, params)

    def impl(a, exponent):
        array = coalesce_array(a._data)
        values = op.impl(np, array.values.astype(dtype.np_dtype), exponent)
        return make_sparse(array.indices, np.asarray(values, dtype.np_dtype), array.shape, True, dtype, a._device)

    return run(variant(op, impl, _pow_backward), args)


def _backend_error(op: OpDef):
    return sparse_backend_error(op.name)


# ---------------------------------------------------------------- movement, copies, conversion


@kernel("t", "transpose", "permute")
def _permute_kernel(op: OpDef, args: tuple, params: dict):
    (a,) = args
    order = tuple(params["dims"])
    array = a._data
    sparse_dim = array.sparse_dim
    if order[sparse_dim:] != tuple(range(sparse_dim, array.ndim)):
        if op.name == "t":
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but got {sparse_dim} "
                               f"sparse and {array.dense_dim} dense dimensions")
        raise NotImplementedError(f"ember: {op.name} of a sparse tensor moves only its sparse dimensions")

    def impl(a, dims):
        source = a._data
        shape = tuple(source.shape[d] for d in dims)
        return make_sparse(source.indices[list(dims[:sparse_dim])], source.values, shape, False, a._dtype,
                           a._device)

    def backward(ctx, grad):
        inverse = tuple(int(i) for i in np.argsort(ctx.params["dims"]))
        return grad.permute(inverse)

    return run(variant(op, impl, backward), args, {"dims": order})


@kernel("clone")
def _clone_kernel(op: OpDef, args: tuple, params: dict):
    def impl(a):
        return Tensor._make(a._data.copy(), a._dtype, a._device)

    return run(variant(op, impl, lambda ctx, grad: grad), args)


@kernel("_to_copy")
def _to_copy_kernel(op: OpDef, args: tuple, params: dict):
    (a,) = args
    device = params.get("device")
    if device is not None and getattr(device, "type", device) != "cpu":
        raise NotImplementedError("ember: sparse tensors are supported on the CPU only")
    dtype = params.get("dtype") or a._dtype

    def impl(a):
        array = a._data
        return make_sparse(array.indices.copy(), array.values.astype(dtype.np_dtype), array.shape, array.coalesced,
                           dtype, a._device)

    return run(variant(op, impl, lambda ctx, grad: grad), args)


@kernel("zero")
def _zero_kernel(op: OpDef, args: tuple, params: dict):
    """zero_() of a sparse tensor: no entries left (torch resizes it to nnz 0)."""
    array = args[0]._data
    empty = np.zeros((0,) + array.values.shape[1:], array.values.dtype)
    return make_sparse(np.zeros((array.sparse_dim, 0), np.int64), empty, array.shape, True, args[0]._dtype,
                       args[0]._device)


# ---------------------------------------------------------------- products


def spmm_array(array, dense: np.ndarray, np_dtype) -> np.ndarray:
    """sparse (2-D, no dense dims) @ dense (2-D) as an array, summing entries in order."""
    rows, columns = array.indices
    out = np.zeros((array.shape[0], dense.shape[1]), np_dtype)
    if array.nnz:
        np.add.at(out, rows, array.values.astype(np_dtype)[:, None] * dense[columns])
    return out


def _check_matrix(tensor: Tensor, name: str) -> None:
    if is_sparse(tensor) and (tensor._data.sparse_dim != 2 or tensor._data.dense_dim != 0):
        raise RuntimeError(f"{name}: expected a sparse matrix with 2 sparse and 0 dense dimensions, but got "
                           f"{tensor._data.sparse_dim} sparse and {tensor._data.dense_dim} dense dimensions")


def sparse_product_array(a, b, np_dtype):
    """a @ b of two sparse matrices (SparseCOOArrays), coalesced: each entry (i, p) of a meets the entries of
    b's row p; products landing on one (i, j) are summed, and a sum that cancels to 0 stays an entry, as in
    torch."""
    a, b = coalesce_array(a), coalesce_array(b)  # b's entries sorted by row: each row is one run
    b_rows = b.indices[0]
    starts = np.searchsorted(b_rows, a.indices[1], "left")
    counts = np.searchsorted(b_rows, a.indices[1], "right") - starts
    a_entry = np.repeat(np.arange(a.nnz), counts)
    b_entry = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(int(counts.sum()))
    indices = np.stack([a.indices[0][a_entry], b.indices[1][b_entry]]).astype(np.int64)
    values = a.values.astype(np_dtype, copy=False)[a_entry] * b.values.astype(np_dtype, copy=False)[b_entry]
    return coalesce_array(type(a)(indices, values, (a.shape[0], b.shape[1]), False))


def _sparse_mm_impl(a: Tensor, b: Tensor) -> Tensor:
    product = sparse_product_array(a._data, b._data, a._dtype.np_dtype)
    return make_sparse(product.indices, product.values, product.shape, True, a._dtype, a._device)


def _sparse_mm_backward(ctx, grad):
    """MmBackward0's formula on sparse operands: grad @ b^T and a^T @ grad, whatever their layouts."""
    a, b = ctx.inputs
    return (grad.mm(b.t()) if a._requires_grad else None, a.t().mm(grad) if b._requires_grad else None)


def _sparse_sparse_matmul_backward(ctx, grad):
    """torch.sparse.mm's (SparseSparseMatmulBackward0): the same products, kept at each operand's own entries."""
    a, b = ctx.inputs
    grads = _sparse_mm_backward(ctx, grad)
    return tuple(None if g is None else sparse_mask(g, operand) for g, operand in zip(grads, (a, b)))


SPARSE_MM = sparse_op("mm", "MmBackward0", _sparse_mm_impl, _sparse_mm_backward)
SPARSE_SPARSE_MATMUL = sparse_op("_sparse_sparse_matmul", "SparseSparseMatmulBackward0", _sparse_mm_impl,
                                 _sparse_sparse_matmul_backward)


def sparse_sparse_matmul(a: Tensor, b: Tensor) -> Tensor:
    """torch.sparse.mm of two sparse matrices: a sparse product whose gradients keep the operands' patterns."""
    for tensor in (a, b):
        _check_matrix(tensor, "sparse.mm")
    _check_product(a, b)
    return run(SPARSE_SPARSE_MATMUL, (a, b))


def _check_product(a: Tensor, b: Tensor) -> None:
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected mat1 and mat2 to have the same dtype, but got: {a._dtype} != {b._dtype}")


def _product(a: Tensor, b: Tensor) -> np.ndarray:
    """a @ b with one sparse operand, as a dense array."""
    np_dtype = a._dtype.np_dtype
    if is_sparse(a):
        return spmm_array(a._data, np.asarray(b._data, np_dtype), np_dtype)
    array = b._data  # dense @ sparse = (sparse^T @ dense^T)^T
    transposed = type(array)(array.indices[::-1], array.values, array.shape[::-1], False)
    return spmm_array(transposed, np.asarray(a._data, np_dtype).T, np_dtype).T.copy()


@kernel("mm")
def _mm_kernel(op: OpDef, args: tuple, params: dict):
    for tensor in args:
        _check_matrix(tensor, "mm")
    if is_sparse(args[0]) and is_sparse(args[1]):  # a sparse result
        _check_product(*args)
        return run(SPARSE_MM, args)

    def impl(a, b):
        return Tensor._make(_product(a, b), a._dtype, a._device)

    # torch runs mm's dense formula (MmBackward0): the sparse operand's gradient is dense
    return run(variant(op, impl, None), args, record=op)


@kernel("mv")
def _mv_kernel(op: OpDef, args: tuple, params: dict):
    a, vector = args
    if not is_sparse(a):
        raise _backend_error(op)
    _check_matrix(a, "mv")

    def impl(a, vector):
        column = np.asarray(vector._data, a._dtype.np_dtype)[:, None]
        return Tensor._make(spmm_array(a._data, column, a._dtype.np_dtype)[:, 0], a._dtype, a._device)

    return run(variant(op, impl, None), args, record=op)


@kernel("addmm")
def _addmm_kernel(op: OpDef, args: tuple, params: dict):
    input, a, b = args
    if is_sparse(input):
        raise _backend_error(op)
    for tensor in (a, b):
        _check_matrix(tensor, "addmm")
    beta, alpha = params.get("beta", 1), params.get("alpha", 1)

    def impl(input, a, b, beta=1, alpha=1):
        product = _product(a, b) * np.asarray(alpha, a._dtype.np_dtype)
        if beta != 0:
            product = product + np.asarray(input._data, a._dtype.np_dtype) * np.asarray(beta, a._dtype.np_dtype)
        return Tensor._make(product, a._dtype, a._device)

    return run(variant(op, impl, None), args, {"beta": beta, "alpha": alpha}, record=op)


def _sparse_addmm_impl(input, sparse, dense, beta=1, alpha=1) -> Tensor:
    dtype = sparse._dtype
    product = spmm_array(sparse._data, np.asarray(dense._data, dtype.np_dtype), dtype.np_dtype)
    if alpha != 1:
        product = product * np.asarray(alpha, dtype.np_dtype)
    if input is not None and beta != 0:
        product = product + np.asarray(input._data, dtype.np_dtype) * np.asarray(beta, dtype.np_dtype)
    return Tensor._make(product, dtype, sparse._device)


def _sparse_addmm_backward(ctx, grad):
    input, sparse, dense = ctx.inputs
    beta, alpha = ctx.params.get("beta", 1), ctx.params.get("alpha", 1)
    needs = ctx.needs_input_grad
    grad_input = _scaled(grad, beta) if needs[0] else None
    grad_sparse = sparse_mask(_scaled(grad.mm(dense.t()), alpha), sparse) if needs[1] else None
    grad_dense = _scaled(sparse.t().mm(grad), alpha) if needs[2] else None
    return grad_input, grad_sparse, grad_dense


SPARSE_ADDMM = sparse_op("_sparse_addmm", "SparseAddmmBackward0", _sparse_addmm_impl, _sparse_addmm_backward)


def sparse_addmm(input, sparse: Tensor, dense: Tensor, beta=1, alpha=1) -> Tensor:
    """torch.sparse.addmm / torch.sparse.mm (input None): the sparse operand's gradient is sparse."""
    _check_matrix(sparse, "addmm")
    if dense._data.ndim != 2:
        raise RuntimeError(f"addmm: matrices expected, got {dense._data.ndim}D tensor")
    if sparse._data.shape[1] != dense._data.shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {sparse._data.shape[1]}, got "
                           f"{dense._data.shape[0]}")
    if sparse._dtype is not dense._dtype:
        raise RuntimeError(f"expected scalar type {dense._dtype} but found {sparse._dtype}")
    return run(SPARSE_ADDMM, (input, sparse, dense), {"beta": beta, "alpha": alpha})


# ---------------------------------------------------------------- sums


def _sum_arrays(array, dims: tuple):
    """(indices, values, shape) of the sum over `dims`, or a dense array when every sparse dim is summed."""
    sparse_dim = array.sparse_dim
    dense_axes = tuple(d - sparse_dim + 1 for d in dims if d >= sparse_dim)
    values = array.values.sum(axis=dense_axes) if dense_axes else array.values
    keep = [d for d in range(sparse_dim) if d not in dims]
    if not keep:
        return np.asarray(values.sum(axis=0), array.values.dtype)
    shape = tuple(array.shape[d] for d in keep) + values.shape[1:]
    return coalesce_array(type(array)(array.indices[keep], values, shape, False))


def _sparse_sum_impl(input: Tensor, dims: tuple) -> Tensor:
    result = _sum_arrays(input._data, dims)
    if isinstance(result, np.ndarray):
        return Tensor._make(result, input._dtype, input._device)
    return make_sparse(result.indices, result.values, result.shape, True, input._dtype, input._device)


def _sparse_sum_backward(ctx, grad):
    """The gradient on the input's (coalesced) entries: the output gradient at each entry's kept coordinates,
    repeated over the summed dense dims."""
    (input,) = ctx.inputs
    dims = ctx.params["dims"]
    array = coalesce_array(input._data)
    sparse_dim = array.sparse_dim
    keep = [d for d in range(sparse_dim) if d not in dims]
    kept_dense = tuple(n for d, n in enumerate(array.shape[sparse_dim:], sparse_dim) if d not in dims)
    np_dtype = grad._dtype.np_dtype
    if keep:
        values = _gather(grad, array.indices[keep], kept_dense, np_dtype)
    else:
        values = np.broadcast_to(np.asarray(grad.to_dense()._data, np_dtype), (array.nnz,) + kept_dense)
    for d in sorted(d for d in dims if d >= sparse_dim):
        values = np.expand_dims(values, d - sparse_dim + 1)
    values = np.ascontiguousarray(np.broadcast_to(values, array.values.shape))
    return make_sparse(array.indices, values, array.shape, False, grad._dtype, grad._device)


SPARSE_SUM = sparse_op("_sparse_sum", "SumBackward1", _sparse_sum_impl, _sparse_sum_backward)


def sparse_sum(input: Tensor, dims: tuple) -> Tensor:
    dims = tuple(sorted({wrap_dim(d, input._data.ndim) for d in dims}))
    return run(SPARSE_SUM, (input,), {"dims": dims})


@kernel("sum")
def _sum_kernel(op: OpDef, args: tuple, params: dict):
    (a,) = args
    dims = tuple(params.get("dim", ()))
    ndim = a._data.ndim
    if params.get("keepdim"):
        raise NotImplementedError("ember: sum(keepdim=True) of a sparse tensor is not supported")
    if len(set(dims)) == ndim:  # Tensor.sum(): a dense 0-d result, with sum's dense formula (SumBackward0)
        dtype = _result_dtype(op, args, params)

        def impl(a, **params):
            return Tensor._make(np.asarray(a._data.values.sum(dtype=dtype.np_dtype)), dtype, a._device)

        return run(variant(op, impl, None), args, params, record=op)
    return sparse_sum(a, dims)


# ---------------------------------------------------------------- embedding with a sparse gradient


def _embedding_impl(weight: Tensor, input: Tensor, padding_idx=None, scale_grad_by_freq=False) -> Tensor:
    return Tensor._make(weight._data[input._data], weight._dtype, weight._device)


def _embedding_backward(ctx, grad):
    weight, input = ctx.inputs
    if ctx.params["scale_grad_by_freq"]:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    flat = np.asarray(input._data).reshape(-1).astype(np.int64)
    rows = np.asarray(grad._data).reshape(flat.shape[0], -1)
    padding_idx = ctx.params["padding_idx"]
    if padding_idx is not None:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    # a view of the gradient where torch's is one (no padding): an expanded gradient keeps non-contiguous
    # values, which decides how torch's sparse add combines it (_add_sparse_sparse)
    values = rows.reshape((flat.shape[0],) + tuple(weight._data.shape[1:]))
    return make_sparse(flat[None, :], values, weight._data.shape, False, grad._dtype, grad._device), None


EMBEDDING = OpDef("embedding_sparse", _embedding_impl, _embedding_backward, saves=SAVE_INPUTS,
                  grad_name="EmbeddingBackward0")


def embedding_sparse(input: Tensor, weight: Tensor, padding_idx=None, scale_grad_by_freq=False) -> Tensor:
    """F.embedding(sparse=True): the rows of weight, whose gradient is a sparse COO tensor (uncoalesced, one
    entry per looked-up index, padding_idx entries left out), as torch's embedding_sparse_backward."""
    return run(EMBEDDING, (weight, input), {"padding_idx": padding_idx, "scale_grad_by_freq": scale_grad_by_freq})




# ---------------------------------------------------------------- zero-preserving unary ops

# torch's SparseCPU unary kernels (f(0) == 0): they coalesce the input and apply the dense op to the values,
# keeping the pattern (neg, above, keeps an uncoalesced input as it is).  Gradients follow torch's formulas
# on sparse tensors: the gradient times the derivative on the input's coalesced pattern (sparse * sparse, so
# the pattern and coalesced flag are the gradient's), an empty sparse gradient for the piecewise-constant
# ops, the dense op's own formula where it runs on sparse operands here as in torch (frac, deg2rad, ...; sqrt,
# sin, sinh and expm1, whose formulas need a sparse kernel torch lacks too, raise torch's error through it),
# and torch's error where its formula fails on an op ember computes differently.
SPARSE_UNARY = ("abs", "sqrt", "sin", "tan", "tanh", "relu", "sinh", "asin", "asinh", "atan", "atanh", "expm1",
                "log1p", "sign", "sgn", "ceil", "floor", "round", "trunc", "frac", "erf", "erfinv", "deg2rad",
                "rad2deg", "isnan", "isinf", "isposinf", "isneginf", "signbit", "nan_to_num")

_DERIVATIVES = {
    "abs": lambda x, y: np.sign(x),
    "relu": lambda x, y: y > 0,
    "log1p": lambda x, y: 1 / (x + 1),
}
_ZERO_GRADIENT = ("sign", "ceil", "floor", "round", "trunc")
_ADD_SPARSE_DENSE = "add(sparse, dense) is not supported. Use add(dense, sparse) instead."
_BACKWARD_ERRORS = {
    "tan": lambda: RuntimeError(_ADD_SPARSE_DENSE), "asin": lambda: RuntimeError(_ADD_SPARSE_DENSE),
    "asinh": lambda: RuntimeError(_ADD_SPARSE_DENSE), "atan": lambda: RuntimeError(_ADD_SPARSE_DENSE),
    "atanh": lambda: RuntimeError("memory format option is only supported by strided tensors"),
    "tanh": lambda: sparse_backend_error("tanh_backward"), "sgn": lambda: sparse_backend_error("_efficientzerotensor"),
    "erf": lambda: sparse_backend_error("exp"), "erfinv": lambda: sparse_backend_error("exp"),
    "nan_to_num": lambda: sparse_backend_error("ne.Scalar"),
}
_GRAD_NAMES = {"deg2rad": "Deg2RadBackward0", "rad2deg": "Rad2DegBackward0", "log1p": "Log1PBackward0"}


def _unary_backward(name: str, dense_backward):
    if name in _DERIVATIVES:
        derivative = _DERIVATIVES[name]

        def backward(ctx, grad):
            array = coalesce_array(ctx.inputs[0]._data)
            np_dtype = grad._dtype.np_dtype
            values = derivative(array.values.astype(np_dtype), ctx.result._data.values.astype(np_dtype))
            return grad * make_sparse(array.indices, np.asarray(values, np_dtype), array.shape, True, grad._dtype,
                                      grad._device)

        return backward
    if name in _ZERO_GRADIENT:
        def backward(ctx, grad):
            shape = grad._data.shape
            sparse_dim = ctx.inputs[0]._data.sparse_dim
            values = np.zeros((0,) + tuple(shape[sparse_dim:]), grad._dtype.np_dtype)
            return make_sparse(np.zeros((sparse_dim, 0), np.int64), values, shape, True, grad._dtype, grad._device)

        return backward
    if name in _BACKWARD_ERRORS:
        error = _BACKWARD_ERRORS[name]

        def backward(ctx, grad):
            raise error()

        return backward
    return dense_backward


@kernel(*SPARSE_UNARY)
def _unary_kernel(op: OpDef, args: tuple, params: dict):
    compute, dtype = op.dtype_rule(args, params)

    def impl(a, **params):
        array = coalesce_array(a._data)
        values = array.values
        if compute is not None and values.dtype != compute.np_dtype:
            values = values.astype(compute.np_dtype)
        values = np.asarray(op.impl(np, values, **params), dtype.np_dtype)
        return make_sparse(array.indices, values, array.shape, True, dtype, a._device)

    sparse = OpDef("sparse_" + op.name, impl, _unary_backward(op.name, op.backward), saves=SAVE_INPUTS | SAVE_RESULT,
                   grad_name=_GRAD_NAMES.get(op.name, op.grad_name))
    return run(sparse, args, params)


@kernel("square")
def _square_kernel(op: OpDef, args: tuple, params: dict):
    """torch.square is pow(x, 2) (PowBackward0)."""
    return args[0].pow(2)


# ---------------------------------------------------------------- torch.sparse.softmax / log_softmax


def _softmax_groups(array, dim: int):
    """For a sparse dim: each (coalesced) entry's group, the entries sharing every other sparse index."""
    keep = [d for d in range(array.sparse_dim) if d != dim]
    keys = _linear(array.indices[keep], [array.shape[d] for d in keep])
    _, groups = np.unique(keys, return_inverse=True)
    return groups.reshape(-1), int(groups.max()) + 1 if len(groups) else 0


def _group_reduce(ufunc, values, groups, count, initial):
    out = np.full((count,) + values.shape[1:], initial, values.dtype)
    ufunc.at(out, groups, values)
    return out


def _sparse_softmax_impl(input: Tensor, dim: int, log: bool) -> Tensor:
    array = coalesce_array(input._data)
    x = array.values
    if dim >= array.sparse_dim:  # a dense dim: softmax within each entry's values
        axis = dim - array.sparse_dim + 1
        shifted = x - x.max(axis=axis, keepdims=True) if x.size else x
        total = np.exp(shifted).sum(axis=axis, keepdims=True)
    else:
        groups, count = _softmax_groups(array, dim)
        shifted = x - _group_reduce(np.maximum, x, groups, count, -np.inf)[groups]
        total = _group_reduce(np.add, np.exp(shifted), groups, count, 0)[groups]
    values = shifted - np.log(total) if log else np.exp(shifted) / total
    return make_sparse(array.indices, np.asarray(values, x.dtype), array.shape, True, input._dtype, input._device)


def _sparse_softmax_backward(ctx, grad):
    result = ctx.result._data
    dim, log = ctx.params["dim"], ctx.params["log"]
    np_dtype = result.values.dtype
    g = _gather(grad, result.indices, result.values.shape[1:], np_dtype)
    y = result.values
    term = g if log else g * y
    if dim >= result.sparse_dim:
        total = term.sum(axis=dim - result.sparse_dim + 1, keepdims=True)
    else:
        groups, count = _softmax_groups(result, dim)
        total = _group_reduce(np.add, term, groups, count, 0)[groups]
    values = g - np.exp(y) * total if log else y * (g - total)
    return make_sparse(result.indices, np.asarray(values, np_dtype), result.shape, False, grad._dtype, grad._device)


SPARSE_SOFTMAX = OpDef("_sparse_softmax", _sparse_softmax_impl, _sparse_softmax_backward,
                       saves=SAVE_INPUTS | SAVE_RESULT, grad_name="SparseSoftmaxBackward0")
SPARSE_LOG_SOFTMAX = OpDef("_sparse_log_softmax", _sparse_softmax_impl, _sparse_softmax_backward,
                           saves=SAVE_INPUTS | SAVE_RESULT, grad_name="SparseLogSoftmaxBackward0")


def sparse_softmax(input: Tensor, dim: int, dtype=None, log: bool = False) -> Tensor:
    """torch.sparse.softmax / log_softmax: over the specified entries only (unspecified ones count as -inf),
    a coalesced sparse result with the input's pattern."""
    if not is_sparse(input):
        raise NotImplementedError(f"Could not run 'aten::_sparse_{'log_' if log else ''}softmax' with arguments "
                                  "from the 'CPU' backend.")
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype.category < 2:
        raise NotImplementedError(f"\"{'log_' if log else ''}softmax\" not implemented for "
                                  f"'{SCALAR_NAMES[input._dtype.name]}'")
    dim = wrap_dim(dim, input._data.ndim)
    return run(SPARSE_LOG_SOFTMAX if log else SPARSE_SOFTMAX, (input,), {"dim": dim, "log": log})
