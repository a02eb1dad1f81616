"""Norms and matrix powers: linalg.vector_norm (one op, torch's norm_backward), matrix_norm and
norm (composites over vector_norm, svdvals and reductions, as torch's are), torch.norm,
linalg.matrix_power, and the torch-level aliases of linalg functions (det, inverse, ...).
"""

from __future__ import annotations

import math

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out
from ._shapes import normalize_dims
from .decompositions import _conj, _real_of, check_matrix, finish_out_exact

INF = math.inf


def _norm_impl(xp, a, ord, dim, keepdim):
    x = xp.abs(a)
    if ord == INF:
        return xp.max(x, axis=dim, keepdims=keepdim)
    if ord == -INF:
        return xp.min(x, axis=dim, keepdims=keepdim)
    if ord == 0:
        return xp.sum(x != 0, axis=dim, keepdims=keepdim).astype(x.dtype)
    if ord == 1:
        return xp.sum(x, axis=dim, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt(xp.sum(x * x, axis=dim, keepdims=keepdim))
    return xp.sum(x ** ord, axis=dim, keepdims=keepdim) ** (1.0 / ord)


def _norm_backward(ctx, g):
    """torch's norm_backward: the gradient of the ord-norm, 0 where the norm is 0."""
    (x,) = ctx.inputs
    norm = ctx.result
    p, dim, keepdim = ctx.params["ord"], ctx.params["dim"], ctx.params["keepdim"]
    if not keepdim and x.ndim:
        for d in dim:
            g = g.unsqueeze(d)
            norm = norm.unsqueeze(d)
    if p == 0:  # torch's norm_backward returns an undefined gradient: the input's .grad stays None
        return None
    if p == 1:
        return x.sgn() * g
    if p == 2:
        return x * (g / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        mask = x.abs() == norm
        return x.sgn() * (g / mask.sum(dim, keepdim=True)) * mask
    if p < 1:
        scaled = (x.sgn() * x.abs().pow(p - 1)).masked_fill(x == 0, 0)
        return scaled * g * norm.pow(1 - p)
    if p < 2:
        scaled = x.sgn() * x.abs().pow(p - 1)
    else:
        scaled = x * x.abs().pow(p - 2)
    return scaled * (g / norm.pow(p - 1)).masked_fill(norm == 0, 0)


def _norm_rule(args, params):
    dtype = args[0]._dtype
    return dtype, _real_of(dtype)


def _norm_meta(args, params):
    from .reduction import reduced_shape

    return reduced_shape(args[0].shape, params["dim"], params["keepdim"])


_VECTOR_NORM = OpDef("linalg_vector_norm", _norm_impl, _norm_backward, dtype_rule=_norm_rule, meta=_norm_meta,
                     saves=SAVE_INPUTS | SAVE_RESULT)


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """The ord-norm of x over `dim` (all elements by default), like torch.linalg.vector_norm."""
    if x._dtype.category < 2:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[x._dtype.name]}")
    if isinstance(ord, str):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not "
                        f"{type(ord).__name__}")
    if dtype is not None:
        if dtype.category < 2:
            raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got "
                               f"{SCALAR_NAMES[dtype.name]}")
        if x._dtype.is_complex and not dtype.is_complex:
            raise RuntimeError(f"linalg.vector_norm: dtype should be complex for complex inputs, but got "
                               f"{SCALAR_NAMES[dtype.name]}")
        if dt.promote_types(x._dtype, dtype) is not dtype:
            raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({SCALAR_NAMES[x._dtype.name]}) should be "
                               f"convertible without narrowing to the specified dtype ({SCALAR_NAMES[dtype.name]})")
        x = x.to(dtype)
    ord = float(ord)
    dims = normalize_dims(dim, x.ndim) if x.ndim else ()
    if ord < 0 or math.isinf(ord):
        given = (dim,) if isinstance(dim, int) else tuple(dim or ())
        for d, named in zip(dims, given) if given else ():  # torch names the dim as given (its missing space too)
            if x.shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on the dimension "
                                   f"{named}because this dimension is empty and the operation does not have an "
                                   "identity")
        if x.numel() == 0 and not given:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on an empty tensor "
                               "because the operation does not have an identity")
        if x.numel() == 0 and not x.ndim:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_ord_name(ord)} norm on an empty tensor "
                               "because the operation does not have an identity")
    return finish_out_exact(call(_VECTOR_NORM, (x,), {"ord": ord, "dim": dims, "keepdim": bool(keepdim)}), out)


def _ord_name(ord: float) -> str:
    if math.isinf(ord):
        return "inf" if ord > 0 else "-inf"
    return f"{ord:g}"


def _matrix_dims(A: Tensor, dim) -> tuple:
    from .._tensor import wrap_dim

    d0, d1 = wrap_dim(dim[0], A.ndim), wrap_dim(dim[1], A.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Frobenius, nuclear, 1, -1, 2, -2, inf or -inf norm of matrices over the two dims `dim`."""
    return _matrix_norm(A, ord, dim, keepdim, dtype, out, "linalg.matrix_norm")


def _matrix_norm(A: Tensor, ord, dim, keepdim: bool, dtype, out, name: str) -> Tensor:
    """matrix_norm as torch computes it (linalg_matrix_norm); `name` is the function torch's out= message names."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if A._dtype.category < 2:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[A._dtype.name]}")
    if ord not in ("fro", "nuc", 1, -1, 2, -2, INF, -INF):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2) and A._dtype in (dt.float16, dt.bfloat16):  # the SVD-based orders
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got {SCALAR_NAMES[A._dtype.name]}")
    d0, d1 = _matrix_dims(A, dim)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        result = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord == "nuc" or ord in (2, -2):
        from .spectral import svdvals

        values = svdvals(A.movedim((d0, d1), (-2, -1)))
        result = values.sum(-1) if ord == "nuc" else _max_min(values, -1, ord)
        if keepdim:
            for d in sorted((d0, d1)):
                result = result.unsqueeze(d)
    else:
        # torch: the 1-norm reduces |A| over dim[0], then max/min over dim[1]; inf is 1 with the dims swapped
        first, second = (d1, d0) if abs(ord) == INF else (d0, d1)
        if not keepdim and first < second:
            second -= 1
        result = _max_min(vector_norm(A, 1, first, keepdim), second, ord, keepdim)
    if out is not None and out._dtype is not result._dtype:
        raise RuntimeError(f"{name} expected out tensor dtype {SCALAR_NAMES[result._dtype.name]} but got: "
                           f"{SCALAR_NAMES[out._dtype.name]}")
    return finish_out(result, out)


def _max_min(values: Tensor, dim: int, ord, keepdim: bool = False) -> Tensor:
    """amax for a positive order, amin for a negative one.  Norms are >= 0, so torch's amax over an empty dim
    (an empty matrix) gives 0; amin has no identity and raises, as torch's does."""
    if ord > 0 and values.shape[dim] == 0:
        shape = list(values.shape)
        if keepdim:
            shape[dim] = 1
        else:
            del shape[dim]
        return values.new_zeros(shape)
    return values.amax(dim, keepdim) if ord > 0 else values.amin(dim, keepdim)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """torch.linalg.norm: a vector norm, or a matrix norm when ord is a string or dim has two entries."""
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    elif ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.ndim}D.")
    if isinstance(ord, str) or (ord is not None and (dim is not None and len(dim) == 2 or dim is None and A.ndim == 2)):
        return _matrix_norm(A, ord, (0, 1) if dim is None else dim, keepdim, dtype, out, "linalg.norm")
    result = vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if out is not None and out._dtype is not result._dtype:
        raise RuntimeError(f"linalg.norm expected out tensor dtype {SCALAR_NAMES[result._dtype.name]} but got: "
                           f"{SCALAR_NAMES[out._dtype.name]}")
    return finish_out(result, out)


@export(name="norm")
def torch_norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, out=None, dtype=None) -> Tensor:
    """torch.norm (deprecated in torch for linalg's norms): 'fro' or a number is a vector norm over dim."""
    if isinstance(dim, int):
        dim = (dim,)
    if p == "nuc" or (isinstance(p, str) and p != "fro"):
        return matrix_norm(input, p, dim if dim is not None else (-2, -1), keepdim, dtype=dtype, out=out)
    if p == "fro" or p is None:
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


def matrix_power(A: Tensor, n: int, *, out=None) -> Tensor:
    """A to the integer power n by repeated squaring; negative n inverts first; n = 0 is the identity."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    from .linalg import matmul

    if n == 0:
        from .creation import eye

        identity = eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
        return finish_out_exact(A * 0 + identity if A.requires_grad else identity.contiguous(), out)
    if n < 0:
        from .decompositions import inv

        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return finish_out_exact(result if result is not A else A.clone(), out)


_ = (SAVE_RESULT, _conj, check_matrix)


# ---------------------------------------------------------------- torch-level names of linalg functions


@export
def det(input: Tensor) -> Tensor:
    """torch.det: linalg.det."""
    from .decompositions import det as linalg_det

    return linalg_det(input)


@export
def logdet(input: Tensor) -> Tensor:
    """log(det(input)): nan for a negative determinant, -inf for a zero one."""
    from .decompositions import slogdet as linalg_slogdet

    check_matrix("logdet", input)
    sign, logabsdet = linalg_slogdet(input)
    if input._dtype.is_complex:
        return logabsdet + sign.log()
    return logabsdet.masked_fill(sign < 0, math.nan)


@export
def slogdet(input: Tensor):
    """torch.slogdet: linalg.slogdet, as a torch.return_types.slogdet."""
    from .. import return_types
    from .decompositions import slogdet as linalg_slogdet

    return return_types.slogdet(*linalg_slogdet(input))


@export
def inverse(input: Tensor, *, out=None) -> Tensor:
    """torch.inverse: linalg.inv."""
    from .decompositions import inv

    return inv(input, out=out)


# torch.cholesky (deprecated) lives in solvers.py with the other Cholesky helpers


@export
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: linalg.pinv with rtol=rcond."""
    from .spectral import pinv

    return pinv(input, rtol=rcond)


@export(name="matrix_power")
def torch_matrix_power(input: Tensor, n: int) -> Tensor:
    return matrix_power(input, n)


@export(name="svd")
def torch_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out=None):
    """torch.svd: (U, S, V) with V, not Vh; zero-filled U and V when compute_uv=False."""
    from .. import return_types
    from .spectral import svd as linalg_svd

    if not compute_uv:  # torch: zero U (m x m) and V (n x n) whatever `some` says
        from .spectral import svdvals

        S = svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        return return_types.svd(input.new_zeros(batch + (m, m)), S, input.new_zeros(batch + (n, n)))
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return return_types.svd(U, S, _conj(Vh).mT)


@export(name="qr")
def torch_qr(input: Tensor, some: bool = True, *, out=None):
    """torch.qr: linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    from .. import return_types
    from .spectral import qr as linalg_qr

    return return_types.qr(*linalg_qr(input, "reduced" if some else "complete"))


@export(method=False)
def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """torch.norm_except_dim: the p-norm over every dim but `dim` (kept, size 1 elsewhere); dim=-1: whole tensor."""
    for position, (name, value) in enumerate((("pow", pow), ("dim", dim)), start=2):
        if not isinstance(value, int) or isinstance(value, bool):  # (torch's schema: int pow, int dim)
            raise TypeError(f"norm_except_dim(): argument '{name}' (position {position}) must be int, not "
                            f"{type(value).__name__}")
    if dim == -1:
        return vector_norm(v, pow)
    dim = dim % v.ndim
    return vector_norm(v, pow, dim=tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


@export(method=False, name="_weight_norm")
def weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """torch._weight_norm: v * (g / ||v||) with the norm taken over every dim but `dim` (weight_norm's weight)."""
    return v * (g / norm_except_dim(v, 2, dim))
