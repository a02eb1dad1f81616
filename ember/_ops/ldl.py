"""torch.linalg.ldl_factor(_ex) and ldl_solve: LAPACK's symmetric-indefinite LDL^T factorization.

torch calls LAPACK's sytrf/hetrf (lower triangle) and sytrs/hetrs; NumPy exposes neither, so this is their
unblocked form, xSYTF2/xHETF2 with Bunch-Kaufman pivoting and xSYTRS/xHETRS, one column (or 2x2 block) at a
time with NumPy doing each step's vector work.  The pivots and the packed LD (L's unit lower triangle below
a block-diagonal D of 1x1 and symmetric 2x2 blocks) are LAPACK's: the same pivot sequence and, up to
rounding, the same values as torch's (tests/test_ldl.py checks both against torch).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._backends import to_host
from .._dispatch import SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ..return_types import _make
from ._api import finish_out
from .decompositions import check_matrix

_make("linalg_ldl_factor", ("LD", "pivots"))
_make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))

_ALPHA = (1 + np.sqrt(17.0)) / 8  # Bunch-Kaufman's threshold: bounds element growth


def _sytf2(a: np.ndarray, hermitian: bool) -> tuple:
    """One matrix's (LD, 1-based pivots, info), factored in place in `a` (a copy): xSYTF2 / xHETF2, uplo 'L'.
    A 2x2 block at k, k+1 stores -p at both pivots; info is the first zero pivot's column (1-based), or 0.
    Complex entries are measured by |re| + |im| (LAPACK's cabs1); Hermitian matrices keep D's diagonal real."""
    n = a.shape[0]
    herm = hermitian and np.iscomplexobj(a)
    size = (lambda z: np.abs(z.real) + np.abs(z.imag)) if np.iscomplexobj(a) else np.abs  # i*amax's measure
    diag_size = (lambda z: np.abs(z.real)) if herm else size
    conj = np.conj if herm else (lambda z: z)
    pivots = np.zeros(n, np.int32)
    info = 0
    if herm:
        a[np.diag_indices(n)] = a.diagonal().real
    k = 0
    while k < n:
        step = 1
        absakk = diag_size(a[k, k])
        if k < n - 1:
            column = size(a[k + 1:, k])
            imax = k + 1 + int(np.argmax(column))  # LAPACK's i*amax: the first largest
            colmax = column[imax - k - 1]
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0:  # a zero column: D(k) = 0 (no NaN test, as torch's LAPACK)
            info = info or k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                rowmax = size(a[imax, k:imax]).max()
                if imax < n - 1:
                    rowmax = max(rowmax, size(a[imax + 1:, imax]).max())
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif diag_size(a[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:  # interchange rows and columns kk and kp of the trailing lower triangle
                a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                middle = slice(kk + 1, kp)
                a[middle, kk], a[kp, middle] = conj(a[kp, middle]).copy(), conj(a[middle, kk]).copy()
                if herm:
                    a[kp, kk] = np.conj(a[kp, kk])
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if step == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            _update(a, k, step, herm)
        pivots[k] = kp + 1 if step == 1 else -(kp + 1)
        if step == 2:
            pivots[k + 1] = -(kp + 1)
        k += step
    return np.tril(a), pivots, info


def _update(a: np.ndarray, k: int, step: int, herm: bool) -> None:
    """The rank-1 (1x1 pivot) or rank-2 (2x2 pivot) update of the trailing lower triangle, and L's columns."""
    n = a.shape[0]
    rest = slice(k + step, n)
    if step == 1:
        if k < n - 1:
            inverse = 1.0 / (a[k, k].real if herm else a[k, k])
            x = a[rest, k].copy()
            a[rest, rest] -= np.tril(np.outer(x, np.conj(x) if herm else x) * inverse)
            if herm:
                a[rest, rest][np.diag_indices(n - k - 1)] = a[rest, rest].diagonal().real
            a[rest, k] *= inverse
        return
    if k >= n - 2:
        return
    if herm:
        magnitude = np.abs(a[k + 1, k])
        d11, d22 = a[k + 1, k + 1].real / magnitude, a[k, k].real / magnitude
        d21 = a[k + 1, k] / magnitude
        scale = 1.0 / (d11 * d22 - 1) / magnitude
        wk = scale * (d11 * a[rest, k] - d21 * a[rest, k + 1])
        wkp1 = scale * (d22 * a[rest, k + 1] - np.conj(d21) * a[rest, k])
        a[rest, rest] -= np.tril(np.outer(a[rest, k], np.conj(wk)) + np.outer(a[rest, k + 1], np.conj(wkp1)))
        a[rest, rest][np.diag_indices(n - k - 2)] = a[rest, rest].diagonal().real
    else:
        d21 = a[k + 1, k]
        d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
        scale = (1.0 / (d11 * d22 - 1)) / d21
        wk = scale * (d11 * a[rest, k] - a[rest, k + 1])
        wkp1 = scale * (d22 * a[rest, k + 1] - a[rest, k])
        a[rest, rest] -= np.tril(np.outer(a[rest, k], wk) + np.outer(a[rest, k + 1], wkp1))
    a[rest, k], a[rest, k + 1] = wk, wkp1


def _ldl_factor_impl(xp, a, hermitian):
    host = to_host(a)
    batch, n = host.shape[:-2], host.shape[-1]
    flat = host.reshape((math.prod(batch), n, n))
    factors = np.empty_like(flat)
    pivots = np.empty(flat.shape[:2], np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    with np.errstate(all="ignore"):  # a zero or NaN pivot's divisions give inf/NaN, as LAPACK's
        for index, matrix in enumerate(flat):
            factors[index], pivots[index], info[index] = _sytf2(matrix.copy(), hermitian)
    results = (factors.reshape(host.shape), pivots.reshape(batch + (n,)), info.reshape(batch))
    return tuple(xp.asarray(r) for r in results)


def _no_derivative(name):
    def backward(ctx, grads):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return backward


_LDL_FACTOR = OpDef("linalg_ldl_factor_ex", _ldl_factor_impl, _no_derivative("linalg_ldl_factor_ex"),
                    dtype_rule=lambda args, params: (None, (args[0]._dtype, dt.int32, dt.int32)), outputs=3,
                    differentiable_outputs=(True, False, False), upcast_half=False, saves=SAVE_RESULT,
                    meta=lambda args, params: (tuple(args[0].shape), tuple(args[0].shape[:-1]),
                                               tuple(args[0].shape[:-2])))


def _check_factor_input(A: Tensor) -> None:
    check_matrix("torch.linalg.ldl_factor_ex", A, low_precision="ldl_factor_kernel_cpu")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None):
    """(LD, pivots, info): A = P L D L^H P^T from A's lower triangle (torch.linalg.ldl_factor_ex)."""
    from .. import return_types

    _check_factor_input(A)
    LD, pivots, info = call(_LDL_FACTOR, (A,), {"hermitian": bool(hermitian)})
    if check_errors:
        _raise_singular(info, "torch.linalg.ldl_factor_ex")
    return finish_out(return_types.linalg_ldl_factor_ex(LD, pivots, info), out)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None):
    """(LD, pivots): ldl_factor_ex that raises for a singular matrix."""
    from .. import return_types

    _check_factor_input(A)
    LD, pivots, info = call(_LDL_FACTOR, (A,), {"hermitian": bool(hermitian)})
    _raise_singular(info, "torch.linalg.ldl_factor")
    return finish_out(return_types.linalg_ldl_factor(LD, pivots), out)


def _raise_singular(info: Tensor, name: str) -> None:
    """A zero pivot: torch's CPU build fails an internal assert there (a RuntimeError); this one says why."""
    if info.device.type == "meta":
        return
    for index, value in enumerate(info.reshape(-1).tolist()):
        if value > 0:
            prefix = f"(Batch element {index}): " if info.ndim else ""
            raise RuntimeError(f"{name}: {prefix}The factorization could not be completed because the input is "
                              f"singular (D[{value},{value}] is zero).")


# ---------------------------------------------------------------- ldl_solve


def _sytrs(factor: np.ndarray, pivots: np.ndarray, b: np.ndarray, hermitian: bool) -> np.ndarray:
    """xSYTRS / xHETRS, uplo 'L': solve A X = B from one matrix's (LD, pivots); b is overwritten and returned."""
    n = factor.shape[0]
    herm = hermitian and np.iscomplexobj(factor)
    conj = np.conj if herm else (lambda z: z)
    k = 0
    while k < n:  # L D Y = P^T B, forwards
        if pivots[k] > 0:
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(factor[k + 1:, k], b[k])
            b[k] /= factor[k, k].real if herm else factor[k, k]
            k += 1
        else:
            kp = -pivots[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(factor[k + 2:, k], b[k]) + np.outer(factor[k + 2:, k + 1], b[k + 1])
            akm1k = factor[k + 1, k]
            akm1, ak = factor[k, k] / conj(akm1k), factor[k + 1, k + 1] / akm1k
            denominator = akm1 * ak - 1
            bkm1, bk = b[k] / conj(akm1k), b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denominator, (akm1 * bk - bkm1) / denominator
            k += 2
    k = n - 1
    while k >= 0:  # L^H P^T X = Y, backwards
        if pivots[k] > 0:
            b[k] -= conj(factor[k + 1:, k]) @ b[k + 1:]
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= conj(factor[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= conj(factor[k + 1:, k - 1]) @ b[k + 1:]
            kp = -pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def _ldl_solve_impl(xp, factor, pivots, b, hermitian):
    factor, pivots, b = to_host(factor), to_host(pivots), to_host(b)
    batch = np.broadcast_shapes(factor.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    n = factor.shape[-1]
    factors = np.broadcast_to(factor, batch + factor.shape[-2:]).reshape((-1, n, n))
    pivot_rows = np.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape((-1, n))
    rhs = np.array(np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:]))
    with np.errstate(all="ignore"):
        for index in range(rhs.shape[0]):
            _sytrs(factors[index], pivot_rows[index].astype(np.int64), rhs[index], hermitian)
    return xp.asarray(rhs.reshape(batch + b.shape[-2:]))


def _solve_meta(args, params):
    LD, pivots, B = args
    return np.broadcast_shapes(tuple(LD.shape[:-2]), tuple(pivots.shape[:-1]), tuple(B.shape[:-2])) + \
        tuple(B.shape[-2:])


_LDL_SOLVE = OpDef("linalg_ldl_solve", _ldl_solve_impl, _no_derivative("linalg_ldl_solve"),
                   dtype_rule=lambda args, params: (None, args[0]._dtype), upcast_half=False, meta=_solve_meta)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out=None) -> Tensor:
    """The solution X of A X = B from ldl_factor's (LD, pivots) (torch.linalg.ldl_solve)."""
    if LD.ndim < 2:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD to have at least 2 dimensions, but it has {LD.ndim} "
                           "dimensions instead")
    if B.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(B.ndim, 1)}, "
                         f"{max(B.ndim, 1) - 1}], but got -2)")
    if LD.shape[-1] != LD.shape[-2]:
        raise RuntimeError(f"torch.linalg.ldl_solve: A must be batches of square matrices, but they are "
                           f"{LD.shape[-2]} by {LD.shape[-1]} matrices")
    if B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {LD.shape[-1]} "
                           f"by {LD.shape[-1]} but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if B._dtype is not LD._dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{SCALAR_NAMES[B._dtype.name]} and A of type {SCALAR_NAMES[LD._dtype.name]} instead.")
    if pivots._dtype.category != 1:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{SCALAR_NAMES[pivots._dtype.name]}")
    return finish_out(call(_LDL_SOLVE, (LD, pivots, B), {"hermitian": bool(hermitian)}), out)
