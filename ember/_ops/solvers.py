"""torch's linear solvers around the factorizations: linalg.solve_triangular (and the deprecated
triangular_solve), cholesky_solve, cholesky_inverse, linalg.lu_solve (and the deprecated lu_solve) and
linalg.solve_ex; the deprecated torch.cholesky.

NOTE [ Triangular solves without LAPACK's trsm ]
NumPy has no triangular solver, so `_left_triangular_solve` picks one of two exact-arithmetic-equivalent
routes, measured on this machine against np.linalg.solve and torch's trsm (float64, one thread):
  - blocked substitution: rows in blocks of 64; each block first subtracts the already-solved rows in one
    matmul, then runs a row loop (one small matmul and a division per row).  O(n^2 k) flops like trsm, and
    it reads only the triangle it needs.  n=1024, k=1: 4 ms (gesv: 19-37 ms); n=2000, k=10: 8-15 ms (gesv:
    80-150 ms); 1000 batched 16x16: 1 ms (gesv: 2.2 ms).  Its rounding is trsm's: on random triangular
    matrices of condition 6e14 it agrees with torch to 7e-5 where a pivoted gesv of the lower-triangular
    matrix is off by 1e-2, since gesv's row exchanges destroy the triangular structure.
  - gesv on the upper-triangular form (a lower A is flipped to J A J): with exact zeros below the diagonal,
    partial pivoting never swaps and the multipliers are zero, so LU is U itself and the solve is exactly a
    back substitution.  It only wins where the per-row Python loop dominates: a few matrices with n <= 64
    (n=64, k=1: 0.05 ms against 0.25 ms).  It is used there, when every entry is finite and the diagonal
    has no zero (0 * inf in the elimination would otherwise spread NaNs where trsm gives inf).
The right-sided solve X A = B is the left solve A^T X^T = B^T.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out
from ._shapes import broadcast_shapes
from .decompositions import BOTH, LinAlgError, _conj, _matmul, _return_type, finish_out_exact

_BLOCK = 64
_SUPPORTED = (dt.float32, dt.float64, dt.complex64, dt.complex128)

TriangularSolve = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
LinalgSolveEx = _return_type("linalg_solve_ex", ("result", "info"))


def _type_name(dtype) -> str:
    return SCALAR_NAMES[dtype.name]


def check_kernel_dtype(kernel: str, dtype) -> None:
    """torch's dispatch error for a dtype its LAPACK kernel has no instance for."""
    if dtype not in _SUPPORTED:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_type_name(dtype)}'")


def _square(name: str, A: Tensor, what: str = "A") -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {what} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


def _solve_shape(args, params):
    A, B = args[0].shape, args[1].shape
    return broadcast_shapes(A[:-2], B[:-2]) + tuple(B[-2:])


# ---------------------------------------------------------------- the triangular kernel


def _left_triangular_solve(xp, a, b, upper: bool, unitriangular: bool):
    """X with A X = B, A triangular (only its `upper` or lower triangle read); see NOTE [ Triangular solves
    without LAPACK's trsm ]."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n, k = a.shape[-1], b.shape[-1]
    if n == 0 or k == 0 or 0 in batch:
        return xp.zeros(batch + (n, k), dtype=b.dtype)
    if n <= _BLOCK and math.prod(batch) * n <= 1024:
        solution = _solve_by_lu(xp, a, b, upper, unitriangular, batch)
        if solution is not None:
            return solution
    return _substitute(xp, a, b, upper, unitriangular, batch)


def _solve_by_lu(xp, a, b, upper, unitriangular, batch):
    """gesv on the upper-triangular form: a plain back substitution (no pivoting happens), or None when an
    entry is not finite or a diagonal entry is zero."""
    n = a.shape[-1]
    triangle = xp.triu(a) if upper else xp.tril(a)
    diagonal = xp.arange(n)
    if unitriangular:
        triangle[..., diagonal, diagonal] = 1
    if not bool(xp.isfinite(triangle).all() & (triangle[..., diagonal, diagonal] != 0).all()):
        return None
    rhs = b
    if not upper:
        triangle, rhs = triangle[..., ::-1, ::-1], b[..., ::-1, :]
    triangle = xp.broadcast_to(triangle, batch + (n, n))
    rhs = xp.broadcast_to(rhs, batch + rhs.shape[-2:])
    try:
        solution = xp.linalg.solve(triangle, rhs)
    except xp.linalg.LinAlgError:
        return None
    return solution if upper else xp.ascontiguousarray(solution[..., ::-1, :])


def _substitute(xp, a, b, upper, unitriangular, batch):
    """Blocked forward (lower) or back (upper) substitution over the last two dims, batched."""
    n = a.shape[-1]
    x = xp.array(xp.broadcast_to(b, batch + b.shape[-2:]))
    starts = list(range(0, n, _BLOCK))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a zero pivot gives inf/nan, as trsm
        for start in reversed(starts) if upper else starts:
            stop = min(start + _BLOCK, n)
            if upper and stop < n:
                x[..., start:stop, :] -= a[..., start:stop, stop:] @ x[..., stop:, :]
            elif not upper and start > 0:
                x[..., start:stop, :] -= a[..., start:stop, :start] @ x[..., :start, :]
            for row in range(stop - 1, start - 1, -1) if upper else range(start, stop):
                if upper and row + 1 < stop:
                    x[..., row, :] -= (a[..., row:row + 1, row + 1:stop] @ x[..., row + 1:stop, :])[..., 0, :]
                elif not upper and row > start:
                    x[..., row, :] -= (a[..., row:row + 1, start:row] @ x[..., start:row, :])[..., 0, :]
                if not unitriangular:
                    x[..., row, :] /= a[..., row, row, None]
    return x


# ---------------------------------------------------------------- linalg.solve_triangular


def _solve_triangular_impl(xp, a, b, upper, left, unitriangular):
    if left:
        return _left_triangular_solve(xp, a, b, upper, unitriangular)
    solution = _left_triangular_solve(xp, xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper,
                                      unitriangular)
    return xp.ascontiguousarray(xp.swapaxes(solution, -1, -2))


def _solve_triangular_backward(ctx, g):
    """torch's linalg_solve_triangular_backward: gB = op(A)^{-H} gX, gA = -gB X^H (or -X^H gB), masked to
    A's triangle."""
    A = ctx.inputs[0]
    X = ctx.result
    upper, left, unit = ctx.params["upper"], ctx.params["left"], ctx.params["unitriangular"]
    grad_B = triangular(_conj(A).mT, g, not upper, left, unit)
    grad_A = None
    if ctx.needs_input_grad[0]:
        grad_A = -_matmul(grad_B, _conj(X).mT) if left else -_matmul(_conj(X).mT, grad_B)
        grad_A = grad_A.triu(int(unit)) if upper else grad_A.tril(-int(unit))
    return grad_A, grad_B if ctx.needs_input_grad[1] else None


_SOLVE_TRIANGULAR = OpDef("linalg_solve_triangular", _solve_triangular_impl, _solve_triangular_backward,
                          dtype_rule=lambda args, params: (args[0]._dtype, args[0]._dtype), meta=_solve_shape,
                          saves=BOTH)


def triangular(A: Tensor, B: Tensor, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """solve_triangular without the argument checks, for backward formulas and composites."""
    return call(_SOLVE_TRIANGULAR, (A, B), {"upper": bool(upper), "left": bool(left),
                                            "unitriangular": bool(unitriangular)})


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False,
                     out=None) -> Tensor:
    """The solution X of A X = B (X A = B with left=False) for triangular A: only A's upper (upper=True) or
    lower triangle is read, and its diagonal taken as ones with unitriangular=True.  Batch dims broadcast."""
    name = "linalg.solve_triangular"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _square(name, A)
    n = A.shape[-1]
    rows, columns = B.shape[-2], B.shape[-1]
    if (rows if left else columns) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{name}: Incompatible shapes of A and B for the equation {equation} ({n}x{n} and "
                           f"{rows}x{columns})")
    broadcast_shapes(A.shape[:-2], B.shape[:-2])
    check_kernel_dtype("triangular_solve_cpu", A._dtype)
    return finish_out_exact(triangular(A, B, upper, left, unitriangular), out,
                            "expected scalar type {want} but found {got}")


@export
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out=None):
    """torch.triangular_solve (deprecated for linalg.solve_triangular): (X, a copy of A broadcast to the batch)
    with op(A) X = b, op(A) = A^T when transpose=True."""
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                  "removed in a future PyTorch release.\ntorch.linalg.solve_triangular has its arguments reversed "
                  "and does not return a copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\n"
                  "should be replaced with\nX = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=2)
    b = input
    for what, tensor in (("b", b), ("A", A)):
        if tensor.ndim < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {what} to have at least 2 dimensions, but it has "
                               f"{tensor.ndim} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if A.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-1]} by "
                           f"{A.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    _same_dtype(b, A)
    batch = broadcast_shapes(A.shape[:-2], b.shape[:-2])
    check_kernel_dtype("triangular_solve_cpu", A._dtype)
    coefficient = A.mT if transpose else A
    solution = triangular(coefficient, b, bool(upper) != bool(transpose), True, unitriangular)
    cloned = A.expand(batch + tuple(A.shape[-2:])).clone()
    return finish_out(TriangularSolve(solution, cloned), out)


def _same_dtype(b: Tensor, A: Tensor) -> None:
    if b._dtype is not A._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_type_name(b._dtype)} "
                           f"and A of type {_type_name(A._dtype)} instead.")


# ---------------------------------------------------------------- cholesky_solve, cholesky_inverse


def _cholesky_solve_array(xp, b, factor, upper):
    """A^{-1} B with A = L L^H (or U^H U): two triangular solves."""
    adjoint = xp.conj(xp.swapaxes(factor, -1, -2))
    if upper:
        return _left_triangular_solve(xp, factor, _left_triangular_solve(xp, adjoint, b, False, False), True,
                                      False)
    return _left_triangular_solve(xp, adjoint, _left_triangular_solve(xp, factor, b, False, False), True, False)


def _cholesky_solve_backward(ctx, g):
    """torch's cholesky_solve_backward."""
    _, factor = ctx.inputs
    X = ctx.result
    upper = ctx.params["upper"]
    grad_B = call(_CHOLESKY_SOLVE, (g, factor), {"upper": upper})
    grad_factor = None
    if ctx.needs_input_grad[1]:
        common = _matmul(grad_B, _conj(X).mT)
        common = common + _conj(common).mT
        grad_factor = -_matmul(factor, common) if upper else -_matmul(common, factor)
    return grad_B if ctx.needs_input_grad[0] else None, grad_factor


_CHOLESKY_SOLVE = OpDef("cholesky_solve", _cholesky_solve_array, _cholesky_solve_backward,
                        dtype_rule=lambda args, params: (args[0]._dtype, args[0]._dtype),
                        meta=lambda args, params: _solve_shape(args[::-1], params), saves=BOTH)


@export
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The solution X of A X = B given A's Cholesky factor (input2: L with A = L L^H, or U with A = U^H U when
    upper=True); input is B.  Batch dims broadcast."""
    b, factor = input, input2
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead")
    if factor.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {factor.ndim} dimensions instead")
    _same_dtype(b, factor)
    if factor.shape[-1] != factor.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {factor.shape[-2]} by "
                           f"{factor.shape[-1]} matrices")
    if factor.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {factor.shape[-1]} by "
                           f"{factor.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    broadcast_shapes(b.shape[:-2], factor.shape[:-2])
    check_kernel_dtype("cholesky_solve_cpu", b._dtype)
    return finish_out(call(_CHOLESKY_SOLVE, (b, factor), {"upper": bool(upper)}), out)


def _raise_zero_diagonal(xp, name: str, diagonal) -> None:
    """potri's info: the first zero diagonal entry of a triangular factor makes it singular."""
    zero = diagonal == 0
    if not bool(zero.any()):
        return
    n = diagonal.shape[-1]
    rows = zero.reshape(-1, n)
    index = int(xp.argmax(rows.any(axis=-1)))
    element = int(xp.argmax(rows[index])) + 1
    prefix = f"(Batch element {index}): " if diagonal.ndim > 1 else ""
    raise LinAlgError(f"{name}: {prefix}The diagonal element {element} is zero, the inversion could not be "
                      "completed because the input matrix is singular.")


def _cholesky_inverse_impl(xp, factor, upper):
    n = factor.shape[-1]
    if factor.size == 0:
        return xp.zeros(factor.shape, factor.dtype)
    _raise_zero_diagonal(xp, "cholesky_inverse", factor[..., xp.arange(n), xp.arange(n)])
    identity = xp.eye(n, dtype=factor.dtype)
    # A^{-1} = L^{-H} L^{-1} (lower) or U^{-1} U^{-H} (upper): one triangular solve and one product
    inverse = _left_triangular_solve(xp, factor, xp.broadcast_to(identity, factor.shape), upper, False)
    adjoint = xp.conj(xp.swapaxes(inverse, -1, -2))
    return inverse @ adjoint if upper else adjoint @ inverse


def _cholesky_inverse_backward(ctx, g):
    """torch's cholesky_inverse_backward."""
    (factor,) = ctx.inputs
    inverse = ctx.result
    common = _matmul(inverse, _matmul(g + _conj(g).mT, inverse))
    return -_matmul(factor, common) if ctx.params["upper"] else -_matmul(common, factor)


_CHOLESKY_INVERSE = OpDef("cholesky_inverse", _cholesky_inverse_impl, _cholesky_inverse_backward,
                          dtype_rule=lambda args, params: (args[0]._dtype, args[0]._dtype),
                          meta=lambda args, params: tuple(args[0].shape), saves=BOTH)


@export
def cholesky_inverse(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """The inverse of A = L L^H (or U^H U with upper=True) from its Cholesky factor."""
    _square("cholesky_inverse", input)
    check_kernel_dtype("cholesky_inverse_out_cpu", input._dtype)
    return finish_out(call(_CHOLESKY_INVERSE, (input,), {"upper": bool(upper)}), out)


# ---------------------------------------------------------------- lu_solve


def _pivot_order(xp, pivots, n: int):
    """Row i of P^T A is row order[i] of A, for LAPACK's 1-based sequential row swaps."""
    batch = pivots.shape[:-1]
    order = xp.broadcast_to(xp.arange(n), batch + (n,)).copy()
    positions = xp.arange(n)
    for j in range(pivots.shape[-1]):
        other = (pivots[..., j:j + 1] - 1).astype(xp.int64)
        at_j = order[..., j:j + 1].copy()
        at_other = xp.take_along_axis(order, other, axis=-1)
        order = xp.where(positions == other, at_j, order)
        order = xp.where(positions == j, at_other, order)
    return order


def _permute_impl(xp, b, pivots, inverse):
    """P^T B (inverse=False) or P B, P the permutation of `pivots`, batch dims broadcast."""
    n = b.shape[-2]
    order = _pivot_order(xp, pivots, n)
    if inverse:
        order = xp.argsort(order, axis=-1)
    batch = broadcast_shapes(b.shape[:-2], order.shape[:-1])
    shape = batch + tuple(b.shape[-2:])
    index = xp.broadcast_to(order[..., :, None], shape)
    return xp.take_along_axis(xp.broadcast_to(b, shape), index, axis=-2)


def _permute_backward(ctx, g):
    pivots = ctx.inputs[1]
    return call(_PERMUTE, (g, pivots), {"inverse": not ctx.params["inverse"]}), None


_PERMUTE = OpDef("lu_permute_rows", _permute_impl, _permute_backward,
                 dtype_rule=lambda args, params: (None, args[0]._dtype),
                 meta=lambda args, params: broadcast_shapes(args[0].shape[:-2], args[1].shape[:-1])
                 + tuple(args[0].shape[-2:]), saves=SAVE_INPUTS, upcast_half=False)


def _check_lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, left: bool) -> None:
    name = "torch.linalg.lu_solve"
    if LU.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if LU._dtype.category < 2:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_type_name(LU._dtype)}")
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {LU.shape[-2]} by "
                           f"{LU.shape[-1]} matrices")
    if B._dtype is not LU._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_type_name(LU._dtype)} and B of type {_type_name(B._dtype)} instead")
    if pivots._dtype is not dt.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32")
    if B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensor B must have at least 2 dimensions.")
    n = LU.shape[-1]
    rows, columns = B.shape[-2], B.shape[-1]
    if (rows if left else columns) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} ({n}x{n} "
                           f"and {rows}x{columns})")
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise RuntimeError("linalg.lu_solve: Number of pivots per batch should be same as the dimension of the "
                           "matrix")
    if tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise RuntimeError(f"linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got "
                           f"pivots with shape {list(pivots.shape)} instead")
    broadcast_shapes(LU.shape[:-2], B.shape[:-2])
    check_kernel_dtype("linalg.lu_solve_cpu", LU._dtype)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,
             out=None) -> Tensor:
    """The solution X of A X = B (X A = B with left=False; A^H in place of A with adjoint=True) given A's
    packed LU factorization from linalg.lu_factor.  A composite of a row permutation and two triangular solves
    (unit lower L, upper U), so its gradient with respect to LU is torch's linalg_lu_solve_LU by the chain rule."""
    _check_lu_solve(LU, pivots, B, left)
    LU_h = _conj(LU).mT
    if left and not adjoint:  # X = U^{-1} L^{-1} P^T B
        X = call(_PERMUTE, (B, pivots), {"inverse": False})
        X = triangular(LU, triangular(LU, X, False, True, True), True)
    elif left:  # A^H = U^H L^H P^T: X = P L^{-H} U^{-H} B
        X = triangular(LU_h, triangular(LU_h, B, False), True, True, True)
        X = call(_PERMUTE, (X, pivots), {"inverse": True})
    elif not adjoint:  # X P L U = B: X = B U^{-1} L^{-1} P^T
        X = triangular(LU, triangular(LU, B, True, False), False, False, True)
        X = call(_PERMUTE, (X.mT, pivots), {"inverse": True}).mT
    else:  # X U^H L^H P^T = B: X = B P L^{-H} U^{-H}
        X = call(_PERMUTE, (B.mT, pivots), {"inverse": False}).mT
        X = triangular(LU_h, triangular(LU_h, X, True, False, True), False, False)
    return finish_out_exact(X, out)


@export(name="lu_solve")
def torch_lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out=None) -> Tensor:
    """torch.lu_solve (deprecated for linalg.lu_solve, whose arguments are reversed): A X = b from lu_factor."""
    warnings.warn("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be removed in a future "
                  "PyTorch release.\nNote that torch.linalg.lu_solve has its arguments reversed.\nX = "
                  "torch.lu_solve(B, LU, pivots)\nshould be replaced with\nX = torch.linalg.lu_solve(LU, pivots, B)",
                  UserWarning, stacklevel=2)
    return lu_solve(LU_data, LU_pivots, input, out=out)


# ---------------------------------------------------------------- solve_ex, cholesky


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out=None):
    """(X, info) with A X = B as linalg.solve; info > 0 marks a singular matrix (its first zero pivot) instead of
    an error, unless check_errors=True.  A singular batch takes the LU route, whose X holds inf/nan as torch's."""
    from .decompositions import solve
    from .matrix_functions import lu_factor_ex

    try:
        result = solve(A, B, left=left)
        info = A.new_zeros(tuple(A.shape[:-2]), dtype=dt.int32)
    except LinAlgError:
        packed, pivots, info = lu_factor_ex(A)
        if check_errors:
            flat = info.reshape(-1).tolist()
            index = next(i for i, value in enumerate(flat) if value > 0)
            prefix = f"(Batch element {index}): " if info.ndim else ""
            raise LinAlgError(f"torch.linalg.solve_ex: {prefix}The solver failed because the input matrix is "
                              "singular.") from None
        vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
        if vector:
            result = lu_solve(packed, pivots, B.unsqueeze(-1 if left else -2), left=left)
            result = result.squeeze(-1 if left else -2)
        else:
            result = lu_solve(packed, pivots, B, left=left)
    return finish_out(LinalgSolveEx(result, info), out)


@export
def cholesky(input: Tensor, upper: bool = False, *, out=None) -> Tensor:
    """torch.cholesky (deprecated for linalg.cholesky): L with A = L L^H, or U = L^H with upper=True."""
    from .decompositions import cholesky as linalg_cholesky

    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH\n"
                  "This transform will produce equivalent results for all valid (symmetric positive definite) "
                  "inputs.", UserWarning, stacklevel=2)
    _square("cholesky", input)
    check_kernel_dtype("cholesky_cpu", input._dtype)
    try:
        return linalg_cholesky(input, upper=upper, out=out)
    except LinAlgError as error:
        raise LinAlgError(str(error).replace("linalg.cholesky:", "cholesky:", 1)) from None



# ---------------------------------------------------------------- eig, eigvals


def _complex_of(dtype):
    return dt.complex128 if dtype in (dt.float64, dt.complex128) else dt.complex64


def _eig_impl(xp, a):
    complex_type = np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64
    if a.size == 0:
        return xp.zeros(a.shape[:-1], complex_type), xp.zeros(a.shape, complex_type)
    if not bool(xp.isfinite(a).all()):
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    values, vectors = xp.linalg.eig(a)
    return values.astype(complex_type, copy=False), vectors.astype(complex_type, copy=False)


def eig_backward(gL: Tensor, gV: Tensor, L: Tensor, V: Tensor) -> Tensor:
    """torch's linalg_eig_backward (non-Hermitian): gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(re(V^H gV))) /
    conj(L_j - L_i)) V^H, after checking that the loss does not depend on the eigenvectors' phases."""
    from .decompositions import diag_embed, diagonal_of, solve

    Vh = _conj(V).mT
    if gV is None:
        return solve(Vh, gL.unsqueeze(-1) * Vh)
    VhgV = _matmul(Vh, gV)
    diagonal = diagonal_of(VhgV)
    if V.device.type != "meta" and V.numel() and float(diagonal.imag.abs().max()) > 1e-2:
        raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                           "multiplication by e^{i phi}. The specified loss function depends on this quantity, so "
                           "it is ill-defined.")
    n = L.shape[-1]
    from .creation import eye

    identity = eye(n, dtype=V.dtype, device=V.device)
    conjugate = L.conj()
    E = conjugate.unsqueeze(-2) - conjugate.unsqueeze(-1) + identity
    inner = (VhgV - _matmul(Vh, V * diagonal.real.unsqueeze(-2))) / E
    inner = inner * (1 - identity)
    if gL is not None:
        inner = inner + diag_embed(gL)
    return solve(Vh, _matmul(inner, Vh))


def _eig_backward(ctx, grads):
    L, V = ctx.result
    gL, gV = grads
    return eig_backward(gL, gV, L, V)


def _eig_meta(args, params):
    shape = tuple(args[0].shape)
    return shape[:-1], shape


_EIG = OpDef("linalg_eig", _eig_impl, _eig_backward,
             dtype_rule=lambda args, params: (args[0]._dtype, (_complex_of(args[0]._dtype),) * 2),
             meta=_eig_meta, saves=SAVE_RESULT, outputs=2)

LinalgEig = _return_type("linalg_eig", ("eigenvalues", "eigenvectors"))


def _check_eig(name: str, A: Tensor) -> None:
    if A._dtype.category < 2:
        raise RuntimeError(f"Unknown Complex ScalarType for {_type_name(A._dtype)}")
    _square(name, A)
    check_kernel_dtype("linalg_eig_out_cpu", A._dtype)


def eig(A: Tensor, *, out=None):
    """Eigenvalues and eigenvectors (columns, unit norm) of general square matrices, always complex; the
    vectors' phases are LAPACK's (geev), as torch's, and gradients require a phase-invariant loss."""
    _check_eig("linalg.eig", A)
    return finish_out(LinalgEig(*call(_EIG, (A,))), out)


def _eigvals_impl(xp, a):
    complex_type = np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64
    if a.size == 0:
        return xp.zeros(a.shape[:-1], complex_type)
    finite = xp.isfinite(a).all(axis=(-2, -1))
    if not bool(finite.all()):  # torch's geev returns NaN eigenvalues for such a matrix; NumPy refuses it
        values = xp.full(a.shape[:-1], xp.nan, complex_type)
        if bool(finite.any()):
            values[finite] = xp.linalg.eigvals(a[finite])
        return values
    return xp.linalg.eigvals(a).astype(complex_type, copy=False)


_EIGVALS = OpDef("linalg_eigvals", _eigvals_impl, None,
                 dtype_rule=lambda args, params: (args[0]._dtype, _complex_of(args[0]._dtype)),
                 meta=lambda args, params: tuple(args[0].shape[:-1]))


def eigvals(A: Tensor, *, out=None) -> Tensor:
    """The eigenvalues of general square matrices (complex); differentiable through linalg.eig, as torch."""
    from .._autograd.grad_mode import state

    _check_eig("linalg.eigvals", A)
    if A.requires_grad and state.enabled:
        return finish_out(call(_EIG, (A,))[0], out)
    return finish_out(call(_EIGVALS, (A,)), out)


# ---------------------------------------------------------------- cond, tensorinv, tensorsolve


_COND_ORDERS = (None, "fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def _order_text(p) -> str:
    if isinstance(p, float) and math.isfinite(p):
        return f"{p:.6f}"
    return str(p)


def cond(A: Tensor, p=None, *, out=None) -> Tensor:
    """The condition number of (a batch of) matrices in the norm `p`: the ratio of extreme singular values for
    p in (None, 2, -2) (any shape), norm(A) * norm(A^{-1}) otherwise (square; inf for singular matrices)."""
    from .decompositions import svdvals

    if isinstance(p, str):
        if A.ndim < 2:
            raise RuntimeError(f"linalg.cond(ord={p}): The input tensor A must have at least 2 dimensions.")
        _square(f"linalg.cond(ord={p})", A)
    elif A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if isinstance(p, bool) or p not in _COND_ORDERS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    real = {dt.complex64: dt.float32, dt.complex128: dt.float64}.get(A._dtype, A._dtype)
    if A.numel() == 0:
        return finish_out(A.new_zeros(tuple(A.shape[:-2]), dtype=real), out)
    if p is None or p in (2, -2):
        if A._dtype in (dt.float16, dt.bfloat16):
            check_kernel_dtype("linalg_svd_cpu", A._dtype)
        values = svdvals(A)
        largest, smallest = values[..., 0], values[..., -1]
        result = smallest / largest if p == -2 else largest / smallest
        return finish_out(result, out)
    if not isinstance(p, str):
        _square(f"linalg.cond(ord={_order_text(p)})", A)
    if p == "nuc":
        values = svdvals(A)
        return finish_out(values.sum(-1) * values.reciprocal().sum(-1), out)
    from .norms import matrix_norm

    result = matrix_norm(A, p) * matrix_norm(_inverse_or_inf(A), p)
    return finish_out(result.nan_to_num(math.inf, math.inf, -math.inf), out)


def _inverse_or_inf(A: Tensor) -> Tensor:
    """inv(A), with the matrices that have no inverse filled with inf (torch's linalg_inv_ex + masked_fill)."""
    from .._autograd.grad_mode import no_grad
    from .creation import eye
    from .decompositions import inv
    from .matrix_functions import lu_factor_ex

    try:
        return inv(A)
    except LinAlgError:
        pass
    with no_grad():
        singular = (lu_factor_ex(A.detach()).info > 0).unsqueeze(-1).unsqueeze(-1)
    identity = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    return inv(A.where(~singular, identity)).masked_fill(singular, math.inf)


def tensorinv(A: Tensor, ind: int = 2, *, out=None) -> Tensor:
    """The tensor X with tensordot(X, A, ind) the identity: inv of A reshaped to prod(shape[:ind]) rows."""
    from .decompositions import inv

    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(back) != math.prod(front):
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(back)} != {math.prod(front)}")
    try:
        inverse = inv(A.reshape(math.prod(front), math.prod(back)))  # explicit: -1 is ambiguous when empty
    except LinAlgError as error:
        raise LinAlgError(str(error).replace("linalg.inv:", "inv:", 1)) from None
    return finish_out(inverse.reshape(back + front), out)


def tensorsolve(A: Tensor, B: Tensor, dims=None, *, out=None) -> Tensor:
    """The tensor X with tensordot(A, X, X.ndim) == B; `dims` of A are first moved to the end."""
    from .decompositions import solve

    if dims is not None:
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        A = A.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    result_shape = tuple(A.shape[B.ndim:])
    result_size, other_size = math.prod(result_shape), math.prod(B.shape)
    if result_size != other_size:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {result_size} != {other_size}")
    result = solve(A.reshape(other_size, result_size), B.flatten())
    return finish_out(result.reshape(result_shape), out)


# ---------------------------------------------------------------- householder_product, vander


def householder_product(A: Tensor, tau: Tensor, *, out=None) -> Tensor:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i column i of A below the
    diagonal (a unit entry on it) -- LAPACK's orgqr.  Applied right to left as k rank-1 updates in ember ops,
    so gradients (and double backward) follow by the chain rule."""
    from .creation import eye

    name = "torch.linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal "
                           f"to {tau.ndim} and input.ndim is equal to {A.ndim}")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau._dtype is not A._dtype:
        raise RuntimeError(f"{name}: tau dtype {_type_name(tau._dtype)} does not match input dtype "
                           f"{_type_name(A._dtype)}")
    check_kernel_dtype("orgqr_cpu", A._dtype)
    identity = eye(m, n, dtype=A.dtype, device=A.device)
    reflectors = A.tril(-1) + identity
    Q = identity.expand(tuple(A.shape))
    for i in reversed(range(k)):
        v = reflectors[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * _matmul(v, _matmul(_conj(v).mT, Q))
    if not k:  # the identity, still a function of A (a zero gradient), as torch's result is
        Q = Q + A[..., :0, :].sum(-2, keepdim=True)
    return finish_out(Q, out)


@export
def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """torch.orgqr: linalg.householder_product."""
    return householder_product(input, input2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """torch.linalg.vander: columns x^0, x^1, ..., x^(N-1) (increasing powers, unlike torch.vander), as torch
    builds it: a cumulative product after a column of ones (integer inputs give int64)."""
    from .creation import ones
    from .movement import cat
    from .scan import cumprod

    if x._dtype in (dt.bool_, dt.float16, dt.bfloat16):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer tensors, but got "
                           f"{_type_name(x._dtype)}")
    x = x.unsqueeze(-1) if x.ndim == 0 else x
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    powers = cumprod(x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,)), -1)
    first = ones(tuple(x.shape) + (1,), dtype=powers.dtype, device=x.device)
    return cat([first, powers], -1)
