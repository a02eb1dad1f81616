"""Matrix products: matmul and its special cases (mm, bmm, mv, dot), the add-product family (addmm,
baddbmm, addbmm, addmv, addr), einsum, tensordot, kron, cross, trace and multi_dot.

Every product is one `OpDef` whose impl is an `xp.matmul`-like call and whose
backward is again products of ember ops (so double backward works).  The
add-product ops fuse `beta * input + alpha * product` into one op, as torch's
kernels do: half types compute in float32 once, and beta == 0 ignores `input`
(nan and inf in it do not propagate).  The shape checks live in the public
functions and raise torch's messages, which name the shapes at fault.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._dispatch import SAVE_INPUTS, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ._api import export, finish_out, inplace_call
from ._shapes import broadcast_shapes


def _name(tensor: Tensor) -> str:
    return SCALAR_NAMES[tensor._dtype.name]


def _dims(shape) -> str:
    return "x".join(str(n) for n in shape)


def _conj(x: Tensor) -> Tensor:
    return x.conj() if x._dtype.is_complex else x


def _no_bool(kernel: str, *tensors, empty_ok: bool = True) -> None:
    """torch has no bool BLAS kernels; an empty matrix product returns before reaching one."""
    for t in tensors:
        if t.numel() == 0 and empty_ok:
            return
    for t in tensors:
        if t._dtype is dt.bool_:
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _same_dtype_rule(args, params):
    """Products take operands of one dtype (torch does not promote inside BLAS calls)."""
    dtype = args[0]._dtype
    return dtype, dtype


# ---------------------------------------------------------------- the product primitives


def _matmul_meta(args, params):
    a, b = args[0].shape, args[1].shape
    batch = broadcast_shapes(a[:-2], b[:-2])
    return batch + (a[-2], b[-1])


def _matmul_backward(ctx, g):
    a, b = ctx.inputs
    grad_a = matmul(g, _conj(b).mT) if ctx.needs_input_grad[0] else None
    grad_b = matmul(_conj(a).mT, g) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _product_op(name, impl, backward, meta):
    return OpDef(name, impl, backward, dtype_rule=_same_dtype_rule, meta=meta, saves=SAVE_INPUTS)


_MM = _product_op("mm", lambda xp, a, b: xp.matmul(a, b), _matmul_backward, _matmul_meta)
_BMM = _product_op("bmm", lambda xp, a, b: xp.matmul(a, b), _matmul_backward, _matmul_meta)
# matmul of operands with batch dims: one broadcasting batched product (torch folds it into bmm).


def _batched_matmul_impl(xp, a, b):
    if b.ndim == 2 and a.ndim > 2:
        # Fold a's batch dims into rows (as torch does): one GEMM.  NumPy's matmul would call BLAS once per
        # batch slice, which with threaded OpenBLAS on a busy machine is ~100x slower (measured on BERT).
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(a.shape[:-1] + (b.shape[-1],))
    return xp.matmul(a, b)


_BATCHED = _product_op("matmul", _batched_matmul_impl, _matmul_backward, _matmul_meta)
for _op in (_MM, _BMM, _BATCHED):
    _op.grad_reads = ((1,), (0,))  # each operand's gradient reads only the other


def _mv_backward(ctx, g):
    a, v = ctx.inputs
    grad_a = g.unsqueeze(-1) * _conj(v) if ctx.needs_input_grad[0] else None
    grad_v = mv(_conj(a).mT, g) if ctx.needs_input_grad[1] else None
    return grad_a, grad_v


_MV = _product_op("mv", lambda xp, a, v: xp.matmul(a, v), _mv_backward, lambda args, p: args[0].shape[:1])


def _dot_backward(ctx, g):
    a, b = ctx.inputs
    return (g * _conj(b) if ctx.needs_input_grad[0] else None,
            g * _conj(a) if ctx.needs_input_grad[1] else None)


_DOT = _product_op("dot", lambda xp, a, b: xp.dot(a, b), _dot_backward, lambda args, p: ())


def _vdot_backward(ctx, g):
    a, b = ctx.inputs
    return (_conj(g) * b if ctx.needs_input_grad[0] else None,
            g * a if ctx.needs_input_grad[1] else None)


_VDOT = _product_op("vdot", lambda xp, a, b: xp.vdot(a, b), _vdot_backward, lambda args, p: ())


def _check_same_dtype_mm(a: Tensor, b: Tensor) -> None:
    if a._dtype is not b._dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: {dt.CPP_TYPE_NAMES[a._dtype.name]} != "
            f"{dt.CPP_TYPE_NAMES[b._dtype.name]}"
        )


def _check_mm_shapes(a_shape, b_shape) -> None:
    if a_shape[-1] != b_shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({_dims(a_shape)} and {_dims(b_shape)})"
        )


def _check_mv_shapes(a_shape, v_shape) -> None:
    if a_shape[-1] != v_shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a_shape[0]}), mat ({_dims(a_shape)}), vec ({v_shape[0]})"
        )


def _check_dot(a: Tensor, b: Tensor, name: str = "dot") -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found {_name(a)} and {_name(b)}")


def _check_bmm_shapes(a_shape, b_shape, batch: int) -> None:
    if b_shape[-3] != batch or b_shape[-2] != a_shape[-1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {a_shape[-1]}] but got: "
            f"[{b_shape[-3]}, {b_shape[-2]}]."
        )


@export
def mm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """The matrix product of two 2-D tensors (torch.mm)."""
    a, b = input._data, mat2._data  # checks read the arrays' shapes: this is on every small matmul's path
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _check_mm_shapes(a.shape, b.shape)
    if input._dtype is not mat2._dtype:
        _check_same_dtype_mm(input, mat2)
    if input._dtype is dt.bool_:
        _no_bool("addmm_impl_cpu_", input)
    result = call(_MM, (input, mat2))
    return result if out is None else finish_out(result, out)


@export
def bmm(input: Tensor, mat2: Tensor, *, out=None) -> Tensor:
    """Batched matrix product of (b, n, m) and (b, m, p) tensors, no broadcasting (torch.bmm)."""
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_bmm_shapes(input.shape, mat2.shape, input.shape[0])
    if input._dtype is not mat2._dtype:
        raise RuntimeError(f"expected scalar type {_name(input)} but found {_name(mat2)}")
    _no_bool("bmm", input)
    return finish_out(call(_BMM, (input, mat2)), out)


@export
def mv(input: Tensor, vec: Tensor, *, out=None) -> Tensor:
    """Matrix-vector product (torch.mv)."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    _check_mv_shapes(input.shape, vec.shape)
    if input._dtype is not vec._dtype:
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {_name(vec)}, {_name(input)}, and {_name(vec)}"
        )
    _no_bool("addmv_impl_cpu", input)
    return finish_out(call(_MV, (input, vec)), out)


@export
def dot(input: Tensor, tensor: Tensor, *, out=None) -> Tensor:
    """Inner product of two 1-D tensors, no conjugation (torch.dot)."""
    _check_dot(input, tensor)
    _no_bool("dot", input, empty_ok=False)
    return finish_out(call(_DOT, (input, tensor)), out)


@export
def vdot(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Inner product of two 1-D tensors, conjugating the first (torch.vdot)."""
    _check_dot(input, other, "vdot")
    _no_bool("vdot", input, empty_ok=False)
    return finish_out(call(_VDOT, (input, other)), out)


@export
def matmul(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """torch.matmul: dot, mv, mm or a broadcasting batched product, by the operands' dims."""
    a_dims, b_dims = input.ndim, other.ndim
    if a_dims == 0 or b_dims == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a_dims}D and {b_dims}D"
        )
    if a_dims == 1 and b_dims == 1:
        return dot(input, other, out=out)
    if a_dims == 2 and b_dims == 1:
        return mv(input, other, out=out)
    if a_dims == 1 and b_dims == 2:
        _check_mm_shapes((1,) + tuple(input.shape), other.shape)
        return finish_out(mm(input.unsqueeze(0), other).squeeze(0), out)
    if a_dims == 2 and b_dims == 2:
        return mm(input, other, out=out)
    if b_dims <= 2:
        # torch folds the batch dims of `input` into its rows, so its messages name the folded shapes
        folded = (math.prod(input.shape[:-1]), input.shape[-1])
        if b_dims == 1:
            _check_mv_shapes(folded, other.shape)
        else:
            _check_mm_shapes(folded, other.shape)
    else:
        _check_batched_shapes(input.shape, other.shape)
    _check_same_dtype_mm(input, other)
    _no_bool("addmm_impl_cpu_" if b_dims <= 2 else "bmm", input, other)
    a = input.unsqueeze(0) if a_dims == 1 else input
    b = other.unsqueeze(-1) if b_dims == 1 else other
    result = call(_BATCHED, (a, b))
    if b_dims == 1:
        result = result.squeeze(-1)
    if a_dims == 1:
        result = result.squeeze(-2)
    if out is None:  # torch folds a batched matmul into mm / bmm and views the result back, unsafely
        name_node(result, "UnsafeViewBackward0")
    return finish_out(result, out)


def _check_batched_shapes(a_shape, b_shape) -> None:
    a_shape = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    _check_bmm_shapes(a_shape, (math.prod(batch),) + tuple(b_shape[-2:]), math.prod(batch))


# ---------------------------------------------------------------- beta * input + alpha * product


def _scaled(value, factor):
    return value if factor == 1 else value * factor


def _add_product_op(name, product, blas_alpha=False):
    """One op for beta * input + alpha * product(a, b); beta == 0 ignores input, as torch's kernels do.
    With `blas_alpha` (the ops torch hands to BLAS gemm/gemv), alpha == 0 ignores the product too, so a nan or
    inf in a or b does not reach the result."""

    def impl(xp, input, a, b, beta=1, alpha=1):
        if blas_alpha and alpha == 0:
            a, b = xp.zeros_like(a), xp.zeros_like(b)
        result = _scaled(product(xp, a, b), alpha)
        if beta == 0:
            return xp.broadcast_to(result, np.broadcast_shapes(input.shape, result.shape)).copy()
        return _scaled(input, beta) + result

    def backward(ctx, g):
        input, a, b = ctx.inputs
        beta, alpha = ctx.params.get("beta", 1), ctx.params.get("alpha", 1)
        grad_input = _scaled(g, _conj_scalar(beta)) if ctx.needs_input_grad[0] else None
        if beta == 0 and grad_input is not None:
            grad_input = g.new_zeros(g.shape)
        grad_a, grad_b = _PRODUCT_GRADS[name](ctx, _scaled(g, _conj_scalar(alpha)), a, b)
        return grad_input, grad_a, grad_b

    return OpDef(name, impl, backward, dtype_rule=_same_dtype_rule, saves=SAVE_INPUTS)


def _conj_scalar(value):
    return value.conjugate() if isinstance(value, complex) else value


def _mm_grads(ctx, g, a, b):
    return (matmul(g, _conj(b).mT) if ctx.needs_input_grad[1] else None,
            matmul(_conj(a).mT, g) if ctx.needs_input_grad[2] else None)


def _addbmm_grads(ctx, g, a, b):
    g = g.unsqueeze(0)
    return (matmul(g, _conj(b).mT) if ctx.needs_input_grad[1] else None,
            matmul(_conj(a).mT, g) if ctx.needs_input_grad[2] else None)


def _mv_grads(ctx, g, a, v):
    return (g.unsqueeze(-1) * _conj(v) if ctx.needs_input_grad[1] else None,
            mv(_conj(a).mT, g) if ctx.needs_input_grad[2] else None)


def _outer_grads(ctx, g, u, v):
    return (mv(g, _conj(v)) if ctx.needs_input_grad[1] else None,
            mv(g.mT, _conj(u)) if ctx.needs_input_grad[2] else None)


_PRODUCT_GRADS = {"addmm": _mm_grads, "baddbmm": _mm_grads, "addbmm": _addbmm_grads, "addmv": _mv_grads,
                  "addr": _outer_grads}
_ADDMM = _add_product_op("addmm", lambda xp, a, b: xp.matmul(a, b), blas_alpha=True)
_BADDBMM = _add_product_op("baddbmm", lambda xp, a, b: xp.matmul(a, b))
_ADDBMM = _add_product_op("addbmm", lambda xp, a, b: xp.matmul(a, b).sum(0), blas_alpha=True)
_ADDMV = _add_product_op("addmv", lambda xp, a, b: xp.matmul(a, b), blas_alpha=True)
_ADDR = _add_product_op("addr", lambda xp, a, b: a[:, None] * b[None, :])


def _expand_check(input: Tensor, shape: tuple) -> None:
    """torch expands `input` to the product's shape and raises expand's message when it cannot."""
    if input.ndim > len(shape):
        raise RuntimeError(
            f"The expanded size of the tensor ({shape[0] if shape else 0}) must match the existing size "
            f"({input.shape[0]}) at non-singleton dimension 0.  Target sizes: [{', '.join(map(str, shape))}].  "
            f"Tensor sizes: [{', '.join(map(str, input.shape))}]"
        )
    offset = len(shape) - input.ndim
    for i, n in reversed(list(enumerate(input.shape))):
        if n != 1 and n != shape[offset + i]:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[offset + i]}) must match the existing size ({n}) at "
                f"non-singleton dimension {offset + i}.  Target sizes: [{', '.join(map(str, shape))}].  "
                f"Tensor sizes: [{', '.join(map(str, input.shape))}]"
            )


def _add_product(op, input, a, b, shape, beta, alpha, out, kernel):
    _expand_check(input, shape)
    for other in (a, b):
        if other._dtype is not input._dtype:
            raise RuntimeError(
                f"self and mat2 must have the same dtype, but got {_name(input)} and {_name(other)}"
            )
    _no_bool(kernel, input)
    params = {}
    if beta != 1:
        params["beta"] = beta
    if alpha != 1:
        params["alpha"] = alpha
    return finish_out(call(op, (input, a, b), params), out)


@export(inplace=True)
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2) (torch.addmm)."""
    if mat1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {mat1.ndim}-D tensor")
    if mat2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {mat2.ndim}-D tensor")
    _check_mm_shapes(mat1.shape, mat2.shape)
    shape = (mat1.shape[0], mat2.shape[1])
    return _add_product(_ADDMM, input, mat1, mat2, shape, beta, alpha, out, "addmm_impl_cpu_")


def _check_batches(batch1: Tensor, batch2: Tensor) -> None:
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")


@export(inplace=True)
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2) (torch.baddbmm)."""
    _check_batches(batch1, batch2)
    _check_bmm_shapes(batch1.shape, batch2.shape, batch1.shape[0])
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    return _add_product(_BADDBMM, input, batch1, batch2, shape, beta, alpha, out, "baddbmm_cpu")


@export(inplace=True)
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * sum_i(batch1[i] @ batch2[i]) (torch.addbmm)."""
    _check_batches(batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {batch1.shape[0]} and {batch2.shape[0]}"
        )
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
            f"{batch2.shape[1]}x{batch2.shape[2]})"
        )
    shape = (batch1.shape[1], batch2.shape[2])
    return _add_product(_ADDBMM, input, batch1, batch2, shape, beta, alpha, out, "addmm_impl_cpu_")


def _check_addmv_shapes(input: Tensor, mat: Tensor, vec: Tensor) -> None:
    """ATen's addmv meta checks: a vector (or scalar) input, a matrix and a vector of matching sizes."""
    if mat.ndim != 2 or vec.ndim != 1 or input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    if mat.shape[1] != vec.shape[0] or (input.ndim == 1 and input.shape[0] not in (1, mat.shape[0])):
        raise RuntimeError(
            f"size mismatch, got input ({input.shape[0] if input.ndim else 1}), mat ({_dims(mat.shape)}), "
            f"vec ({vec.shape[0]})"
        )


@export
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * (mat @ vec) (torch.addmv)."""
    _check_addmv_shapes(input, mat, vec)
    if input._dtype is not mat._dtype or mat._dtype is not vec._dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_name(input)}, {_name(mat)}, "
                           f"and {_name(vec)}")
    return _add_product(_ADDMV, input, mat, vec, (mat.shape[0],), beta, alpha, out, "addmv_impl_cpu")


def _addmv_inplace(self: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """Tensor.addmv_ (and torch.addmv_): addmv written into self, which must already have the result's size."""
    _check_addmv_shapes(self, mat, vec)
    if tuple(self.shape) != (mat.shape[0],):
        raise RuntimeError(f"Bad in-place call: input tensor size {list(self.shape)} and output tensor size "
                           f"[{mat.shape[0]}] should match")
    return inplace_call(self, addmv, mat, vec, beta=beta, alpha=alpha)


_addmv_inplace.__name__ = "addmv_"
_addmv_inplace.__qualname__ = "Tensor.addmv_"
export(_addmv_inplace, name="addmv_", function=False)


@export(inplace=True)
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1, out=None) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2) (torch.addr)."""
    if vec1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    if input._dtype is dt.bool_:
        # torch's addr accepts bool (logical and/or); ember computes it through int8 and back
        result = addr(input.to(dt.int8), vec1.to(dt.int8), vec2.to(dt.int8), beta=int(beta), alpha=int(alpha))
        return finish_out(result != 0, out)
    return _add_product(_ADDR, input, vec1, vec2, (vec1.shape[0], vec2.shape[0]), beta, alpha, out, "addr")


@export(aliases=("ger",))
def outer(input: Tensor, vec2: Tensor, *, out=None) -> Tensor:
    """Outer product of two 1-D tensors: input[:, None] * vec2, with type promotion (torch.outer)."""
    if input.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input.ndim}-D")
    if vec2.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2.ndim}-D")
    return finish_out(input.unsqueeze(-1) * vec2, out)


@export
def inner(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Sum over the last dims: inner(a, b)[i..., j...] = sum_k a[i..., k] b[j..., k] (torch.inner)."""
    if input.ndim == 0 or other.ndim == 0:
        return finish_out(input * other, out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"[{', '.join(map(str, input.shape))}] and [{', '.join(map(str, other.shape))}]"
        )
    from .einsum import tensordot

    return finish_out(tensordot(input, other, dims=([-1], [-1])), out)


# ---------------------------------------------------------------- kron, cross, trace, multi_dot


@export
def kron(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """Kronecker product: every element of input times the whole of other, blocks laid out in order."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.ndim) + tuple(other.shape))
    interleaved_a, interleaved_b, shape = [], [], []
    for n, m in zip(a.shape, b.shape):
        interleaved_a += [n, 1]
        interleaved_b += [1, m]
        shape.append(n * m)
    return finish_out((a.reshape(interleaved_a) * b.reshape(interleaved_b)).reshape(shape), out)


def _cross_backward(ctx, g):
    a, b = ctx.inputs
    dim = ctx.params["dim"]
    grad_a = call(_CROSS, (_conj(b), g), {"dim": dim}) if ctx.needs_input_grad[0] else None
    grad_b = call(_CROSS, (g, _conj(a)), {"dim": dim}) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


def _cross_impl(xp, a, b, dim):
    a, b = xp.broadcast_arrays(a, b)
    return xp.cross(a, b, axis=dim)


_CROSS = OpDef("linalg_cross", _cross_impl, _cross_backward, saves=SAVE_INPUTS)


def cross_product(input: Tensor, other: Tensor, dim: int, name: str) -> Tensor:
    """The cross product of 3-vectors along `dim`, operands broadcast (shared by torch.cross and linalg.cross)."""
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"{name}: inputs must have the same number of dimensions."
        )
    dim_a, dim_b = wrap_dim(dim, input.ndim), wrap_dim(dim, other.ndim)
    if input.shape[dim_a] != 3 or other.shape[dim_b] != 3:
        raise RuntimeError(
            f"{name}: inputs dimension {dim} must have length 3. Got {input.shape[dim_a]} and {other.shape[dim_b]}"
        )
    broadcast_shapes(input.shape, other.shape)
    if input._dtype is not other._dtype:  # torch's cross kernel takes no promotion
        raise RuntimeError(f"expected scalar type {_name(input)} but found {_name(other)}")
    _no_bool("cross", input)
    return call(_CROSS, (input, other), {"dim": dim_a})


@export
def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out=None) -> Tensor:
    """torch.cross: like linalg.cross, but dim=None means the first dim of size 3 (deprecated in torch)."""
    if dim is None:
        sizes = broadcast_shapes(input.shape, other.shape)
        dim = next((i for i, n in enumerate(sizes) if n == 3), -1)
    return finish_out(cross_product(input, other, dim, "linalg.cross"), out)


@export
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix; integral inputs sum to int64 like torch.sum."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    if input._dtype is dt.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    # a mask rather than diagonal(): the product keeps the gradient a plain multiply
    from .creation import eye

    mask = eye(input.shape[0], input.shape[1], dtype=dt.bool_, device=input.device)
    return (input * mask).sum()


def multi_dot(tensors, *, out=None) -> Tensor:
    """The product of a chain of matrices; the first and last may be vectors (torch.linalg.multi_dot)."""
    tensors = list(tensors)
    count = len(tensors)
    if count < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {count}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for index, t in enumerate(tensors[1:-1], start=1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {index} must be 2D but got {t.ndim}D")
    for index, t in enumerate(tensors):
        if t._dtype is not first._dtype:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{dt.CPP_TYPE_NAMES[first._dtype.name]} and tensor {index} {dt.CPP_TYPE_NAMES[t._dtype.name]}"
            )
    matrices = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1]
    matrices.append(last.unsqueeze(-1) if last.ndim == 1 else last)
    for index in range(count - 1):
        a, b = matrices[index], matrices[index + 1]
        if a.shape[1] != b.shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {index} and {index + 1} with shapes {list(tensors[index].shape)} and "
                f"{list(tensors[index + 1].shape)} cannot be multiplied"
            )
    result = _chain(matrices, _chain_order(matrices), 0, count - 1)
    if first.ndim == 1:
        result = result.squeeze(0)
    if last.ndim == 1:
        result = result.squeeze(-1)
    if out is not None and out._dtype is not result._dtype:  # torch's multi_dot does not cast into out
        from .. import _dtype as dtypes

        raise RuntimeError(f"multi_dot(): expected out tensor to have dtype {dtypes.CPP_TYPE_NAMES[result._dtype.name]}"
                           f" but got {dtypes.CPP_TYPE_NAMES[out._dtype.name]}")
    return finish_out(result, out)


def _chain_order(matrices) -> list:
    """The cheapest parenthesisation (the textbook dynamic programme torch's multi_dot uses)."""
    dims = [matrices[0].shape[0]] + [m.shape[1] for m in matrices]
    count = len(matrices)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                value = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or value < cost[i][j]:
                    cost[i][j], split[i][j] = value, k
    return split


def _chain(matrices, split, i, j):
    if i == j:
        return matrices[i]
    k = split[i][j]
    return mm(_chain(matrices, split, i, k), _chain(matrices, split, k + 1, j))


@export(method=False)
def chain_matmul(*matrices, out=None) -> Tensor:
    """torch.chain_matmul (deprecated in torch for linalg.multi_dot): a product of 2-D tensors."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return finish_out(matrices[0].clone(), out)
    return multi_dot(matrices, out=out)


from . import decompositions, norms  # noqa: E402,F401  (torch.linalg's factorizations register their torch.* names)
