"""Matrix functions and the LU factorization: linalg.matrix_exp, linalg.lu_factor(_ex), linalg.lu, lu_unpack
and the deprecated torch.lu.

matrix_exp is scaling and squaring around a degree-13 Padé approximant (Higham 2005), computed in double
precision; its backward is torch's: the exponential of the block matrix [[A^H, G], [0, A^H]], whose upper
right block is the gradient (so double backward is matrix_exp again).  LU is partial pivoting as LAPACK's
getrf does it (first largest |re| + |im| pivot, 1-based int32 pivots, info = first zero pivot), vectorised
over the batch, with torch's linalg_lu_backward written in ember ops.
"""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ..return_types import _make
from ._api import export, finish_out
from .decompositions import _conj

# Padé [13/13] coefficients and the 1-norm below which it is accurate to double precision (Higham 2005)
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0,
           960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152

for _name, _fields in {"linalg_lu_factor": ("LU", "pivots"), "linalg_lu_factor_ex": ("LU", "pivots", "info"),
                       "linalg_lu": ("P", "L", "U"), "lu_unpack": ("P", "L", "U"),
                       "_lu_with_info": ("LU", "pivots", "info")}.items():
    _make(_name, _fields)


# ---------------------------------------------------------------- matrix_exp


def _matrix_exp_impl(xp, a):
    if a.size == 0:
        return a.copy()
    wide = xp.complex128 if a.dtype.kind == "c" else xp.float64
    matrices = a.astype(wide)
    n = matrices.shape[-1]
    norm = xp.abs(matrices).sum(axis=-2).max(axis=-1)
    with_scaling = xp.ceil(xp.log2(xp.maximum(norm, 1e-300) / _THETA13))
    squarings = xp.where(xp.isfinite(with_scaling) & (with_scaling > 0), with_scaling, 0).astype(xp.int64)
    matrices = matrices / (2.0 ** squarings.astype(wide))[..., None, None]
    identity = xp.eye(n, dtype=wide)
    b = _PADE13
    a2 = matrices @ matrices
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * identity
    u = matrices @ u
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * identity
    result = xp.linalg.solve(v - u, v + u)
    most = int(squarings.max()) if squarings.size else 0
    for step in range(most):
        result = xp.where((squarings > step)[..., None, None], result @ result, result)
    return result.astype(a.dtype)


def _matrix_exp_backward(ctx, g):
    """torch's linalg_matrix_exp_differential(A, G, adjoint=True): a block of exp([[A^H, G], [0, A^H]])."""
    from .movement import cat

    (A,) = ctx.inputs
    n = A.shape[-1]
    adjoint = _conj(A).mT
    g = g.expand(A.shape)
    top = cat([adjoint, g], -1)
    bottom = cat([adjoint * 0, adjoint], -1)
    return (linalg_matrix_exp(cat([top, bottom], -2))[..., :n, n:],)


def _float_or_complex(args, params):
    dtype = args[0]._dtype
    return dtype, dtype


_MATRIX_EXP = OpDef("linalg_matrix_exp", _matrix_exp_impl, _matrix_exp_backward, dtype_rule=_float_or_complex,
                    meta=lambda args, params: args[0].shape, saves=SAVE_INPUTS)


def linalg_matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of (a batch of) square matrices."""
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if A._dtype.category < 2:
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got "
                           f"{SCALAR_NAMES[A._dtype.name]}")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they are {A.shape[-2]} "
                           f"by {A.shape[-1]} matrices")
    return call(_MATRIX_EXP, (A,))


@export
def matrix_exp(input: Tensor) -> Tensor:
    """torch.matrix_exp: linalg.matrix_exp."""
    return linalg_matrix_exp(input)


# ---------------------------------------------------------------- LU


def _pivot_magnitude(xp, column):
    """LAPACK's i?amax measure: |x| for real, |re| + |im| for complex."""
    if column.dtype.kind == "c":
        return xp.abs(column.real) + xp.abs(column.imag)
    return xp.abs(column)


def _lu_impl(xp, a):
    """(LU, pivots, info): getrf's partial pivoting, one column at a time over the whole batch."""
    lu = a.copy()
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    batch = lu.shape[:-2]
    pivots = xp.zeros(batch + (k,), dtype=xp.int32)
    info = xp.zeros(batch, dtype=xp.int32)
    rows = xp.arange(m)[:, None]
    for j in range(k):
        pivot_row = xp.argmax(_pivot_magnitude(xp, lu[..., j:, j]), axis=-1) + j
        pivots[..., j] = (pivot_row + 1).astype(xp.int32)
        current = lu[..., j:j + 1, :]
        chosen = xp.take_along_axis(lu, pivot_row[..., None, None], axis=-2)
        selected = rows == pivot_row[..., None, None]
        lu = xp.where(rows == j, chosen, xp.where(selected, current, lu))
        pivot = lu[..., j, j]
        singular = pivot == 0
        info = xp.where(singular & (info == 0), j + 1, info).astype(xp.int32)
        divisor = xp.where(singular, 1, pivot)
        lu[..., j + 1:, j] = lu[..., j + 1:, j] / divisor[..., None]
        lu[..., j + 1:, j + 1:] -= lu[..., j + 1:, j:j + 1] * lu[..., j:j + 1, j + 1:]
    return lu, pivots, info


def _lu_rule(args, params):
    dtype = args[0]._dtype
    return dtype, (dtype, dt.int32, dt.int32)


def _lu_meta(args, params):
    shape = tuple(args[0].shape)
    k = min(shape[-2:])
    return shape, shape[:-2] + (k,), shape[:-2]


def _lu_backward(ctx, g):
    """torch's lu_factor_ex_backward: linalg_lu_backward with L_grad = G.tril(-1), U_grad = G.triu()."""
    lu, pivots, _ = ctx.result
    g = g[0]
    if g is None:
        return (None,)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    P, L, U = _unpack(lu, pivots)
    L_grad = g[..., :, :k].tril(-1)
    U_grad = g[..., :k, :].triu()
    if m == n:
        A_grad = _conj(L).mT.matmul(L_grad).tril(-1) + U_grad.matmul(_conj(U).mT).triu()
        A_grad = _solve_right(_conj(U).mT, A_grad)
        A_grad = _solve_left(_conj(L).mT, A_grad)
    elif m < n:
        from .movement import cat

        U1, U2_grad = U[..., :, :k], U_grad[..., :, k:]
        A_grad = _conj(L).mT.matmul(L_grad) - U_grad.matmul(_conj(U).mT)
        A_grad = _solve_right(_conj(U1).mT, A_grad.tril(-1))
        A_grad = cat([A_grad + U_grad[..., :, :k], U2_grad], -1)
        A_grad = _solve_left(_conj(L).mT, A_grad)
    else:
        from .movement import cat

        L1, L2_grad = L[..., :k, :], L_grad[..., k:, :]
        A_grad = U_grad.matmul(_conj(U).mT) - _conj(L).mT.matmul(L_grad)
        A_grad = _solve_left(_conj(L1).mT, A_grad.triu())
        A_grad = cat([A_grad + L_grad[..., :k, :], L2_grad], -2)
        A_grad = _solve_right(_conj(U).mT, A_grad)
    return (P.matmul(A_grad),)


def _solve_left(A: Tensor, B: Tensor) -> Tensor:
    """X with A X = B, A = L^H unit upper triangular (as torch's backward, a triangular solve)."""
    from .solvers import triangular

    return triangular(A, B, upper=True, left=True, unitriangular=True)


def _solve_right(A: Tensor, B: Tensor) -> Tensor:
    """X with X A = B, A = U^H lower triangular."""
    from .solvers import triangular

    return triangular(A, B, upper=False, left=False)


_LU = OpDef("linalg_lu_factor_ex", _lu_impl, _lu_backward, dtype_rule=_lu_rule, meta=_lu_meta, saves=SAVE_RESULT,
            outputs=3, differentiable_outputs=(True, False, False), upcast_half=False)


def _permutation_impl(xp, pivots, like, m):
    """The permutation matrix P (A = P L U) of LAPACK's sequential row swaps, in `like`'s dtype."""
    batch = pivots.shape[:-1]
    order = xp.broadcast_to(xp.arange(m), batch + (m,)).copy()
    for j in range(pivots.shape[-1]):
        other = (pivots[..., j:j + 1] - 1).astype(xp.int64)
        at_j = order[..., j:j + 1].copy()
        at_other = xp.take_along_axis(order, other, axis=-1)
        positions = xp.arange(m)
        order = xp.where(positions == other, at_j, order)
        order = xp.where(positions == j, at_other, order)
    # row i of P^T A is row order[i] of A, so P[order[i], i] = 1
    return (order[..., None, :] == xp.arange(m)[:, None]).astype(like.dtype)


_PERMUTATION = OpDef("lu_pivots_to_permutation", _permutation_impl, None,
                     dtype_rule=lambda args, params: (None, args[1]._dtype),
                     meta=lambda args, params: tuple(args[0].shape[:-1]) + (params["m"], params["m"]),
                     upcast_half=False)


def _unpack(lu: Tensor, pivots: Tensor):
    """(P, L, U) from a packed LU: L unit lower (m x k), U upper (k x n)."""
    from .creation import eye

    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    L = lu[..., :, :k].tril(-1) + eye(m, k, dtype=lu.dtype, device=lu.device)
    U = lu[..., :k, :].triu()
    P = call(_PERMUTATION, (pivots, lu.detach()), {"m": m})
    return P, L, U


def _check_lu(name: str, A: Tensor, pivot: bool) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    if A._dtype.category < 2 or A._dtype in (dt.float16, dt.bfloat16):
        raise NotImplementedError(f"\"lu_cpu\" not implemented for '{SCALAR_NAMES[A._dtype.name]}'")
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out=None):
    """(LU, pivots, info): the packed LU factorization with partial pivoting, info > 0 for a zero pivot."""
    from .. import return_types

    _check_lu("torch.lu_factor", A, pivot)
    lu, pivots, info = call(_LU, (A,))
    if check_errors:
        _raise_singular(info, "torch.linalg.lu_factor_ex")
    return finish_out(return_types.linalg_lu_factor_ex(lu, pivots, info), out)


def _raise_singular(info: Tensor, name: str = "torch.linalg.lu_factor") -> None:
    """torch's error for a zero pivot: a plain RuntimeError (not LinAlgError) for lu_factor(_ex), as torch's."""
    if info.device.type == "meta":
        return
    flat = info.reshape(-1).tolist()
    for index, value in enumerate(flat):
        if value > 0:
            prefix = f"(Batch element {index}): " if info.ndim else ""
            raise RuntimeError(f"{name}: {prefix}U[{value},{value}] is zero and using it on lu_solve "
                              "would result in a division by zero. If you still want to perform the factorization, "
                              "consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A: Tensor, *, pivot: bool = True, out=None):
    """(LU, pivots): lu_factor_ex that raises for a singular matrix."""
    from .. import return_types

    lu, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_singular(info)
    return finish_out(return_types.linalg_lu_factor(lu, pivots), out)


def lu(A: Tensor, *, pivot: bool = True, out=None):
    """(P, L, U) with A = P L U."""
    from .. import return_types

    if A.ndim < 2:
        raise RuntimeError(f"linalg.lu: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} instead")
    packed, pivots, _ = lu_factor_ex(A, pivot=pivot)
    return finish_out(return_types.linalg_lu(*_unpack(packed, pivots)), out)


@export(method=False)
def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *, out=None):
    """(P, L, U) from lu_factor's packed result; the parts not asked for are empty tensors."""
    from .. import return_types

    if LU_pivots._dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by torch.linalg."
                           "lu_factor")
    m = LU_data.shape[-2]
    if LU_pivots.numel() and LU_pivots.device.type != "meta" and not 1 <= LU_pivots.min().item() <= \
            LU_pivots.max().item() <= m:
        raise RuntimeError("pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive.Did you properly "
                           "pass the result of lu_factor?")
    P, L, U = _unpack(LU_data, LU_pivots)
    empty = LU_data.new_zeros((0,))
    if not unpack_data:
        L, U = empty, empty
    if not unpack_pivots:
        P = empty
    return finish_out(return_types.lu_unpack(P, L, U), out)


@export(name="lu")
def torch_lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out=None):
    """torch.lu (deprecated in torch for linalg.lu_factor): (LU, pivots), plus infos with get_infos=True."""
    from .. import return_types

    warnings.warn("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will "
                  "be removed in a future PyTorch release.", UserWarning, stacklevel=2)
    packed, pivots, info = lu_factor_ex(A, pivot=pivot)
    if get_infos:
        return finish_out(return_types._lu_with_info(packed, pivots, info), out)
    return finish_out((packed, pivots), out)

