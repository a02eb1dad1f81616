"""OpInfos for the linear solvers and the general eigendecomposition (ember/_ops/solvers.py).

Triangular factors are sampled triangular and well conditioned (random entries plus n * I), and the calls
re-apply tril/triu, so gradcheck's perturbations of the unread triangle change nothing on either side.
linalg.eig's eigenvectors are fixed up to a phase per column: the calls multiply each column by the
(differentiable) phase that makes its first entry real and positive, which makes the loss phase-invariant as
torch's backward requires, and return real and imaginary parts so the gradient tests see real outputs.
"""

from __future__ import annotations

import math

import numpy as np

from ..core import COMPLEX, ErrorSample, OpInfo, Sample, make_array
from .linalg import DECOMP_TOLERANCE, LINALG_TYPES, _f32, _general, _linalg, rect_samples

TRIANGULAR_TOLERANCE = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4), "float64": (1e-9, 1e-9),
                        "complex128": (1e-9, 1e-9)}


def _error(args, error, match, **kwargs):
    return ErrorSample(Sample(args, kwargs), error, match)


def _errors(*items):
    return lambda: list(items)


def _rhs(shape, dtype, rng):
    return make_array(shape, dtype, rng, -1, 1)


def _factor(shape, dtype, rng):
    """Well conditioned, with a real diagonal as Cholesky factors have (LAPACK's potri reads only its real part)."""
    values = _general(shape, dtype, rng)
    n = shape[-1]
    values[..., range(n), range(n)] = values[..., range(n), range(n)].real
    return values


def _lower(shape, dtype, rng):
    return np.tril(_factor(shape, dtype, rng))


def _upper(shape, dtype, rng):
    return np.triu(_factor(shape, dtype, rng))


def _triangle(A, upper):
    """A's upper or lower triangle (error inputs with fewer than 2 dims pass through to the op's own check)."""
    if A.ndim < 2:
        return A
    return A.triu() if upper else A.tril()


def _int64(*shape):
    return np.ones(shape, np.int64)


# ---------------------------------------------------------------- solve_triangular, triangular_solve


def solve_triangular_call(lib, A, B, upper, **kwargs):
    return lib.linalg.solve_triangular(_triangle(A, upper), B, upper=upper, **kwargs)


def solve_triangular_samples(dtype, rng):
    samples = [
        Sample((_upper((3, 3), dtype, rng), _rhs((3, 2), dtype, rng)), {"upper": True}),
        Sample((_lower((3, 3), dtype, rng), _rhs((3, 2), dtype, rng)), {"upper": False}),
        Sample((_upper((3, 3), dtype, rng), _rhs((2, 3), dtype, rng)), {"upper": True, "left": False}),
        Sample((_lower((2, 2, 2), dtype, rng), _rhs((1, 2), dtype, rng)), {"upper": False, "left": False}),
        Sample((_lower((3, 3), dtype, rng), _rhs((3, 1), dtype, rng)), {"upper": False, "unitriangular": True}),
        Sample((_upper((2, 1, 2, 2), dtype, rng), _rhs((3, 2, 1), dtype, rng)), {"upper": True}),
        Sample((_upper((3, 3), dtype, rng), _rhs((3, 2), dtype, rng)), {"upper": True}, noncontiguous=True),
        Sample((_upper((0, 2, 2), dtype, rng), _rhs((2, 3), dtype, rng)), {"upper": True}),
        Sample((_lower((1, 1), dtype, rng), _rhs((1, 0), dtype, rng)), {"upper": False}),
        # n > 64: the blocked substitution (NOTE [ Triangular solves without LAPACK's trsm ])
        Sample((_lower((70, 70), dtype, rng), _rhs((2, 70, 3), dtype, rng)), {"upper": False}, grad=False),
        # (a unit diagonal with O(1) entries above it is ill-conditioned at n = 70: scaled, float32's rounding in
        # two correct solvers stays within the tolerance)
        Sample((_upper((70, 70), dtype, rng) / 70, _rhs((5, 70), dtype, rng)),
               {"upper": True, "left": False, "unitriangular": True}, grad=False),
    ]
    return samples


def solve_triangular_errors():
    return [
        _error((_f32(3, 3), _f32(3)), RuntimeError, "The input tensor B must have at least 2 dimensions", upper=True),
        _error((_f32(3), _f32(3, 2)), RuntimeError, "The input tensor A must have at least 2 dimensions", upper=True),
        _error((_f32(2, 3), _f32(3, 2)), RuntimeError, "A must be batches of square matrices, but they are 2 by 3",
               upper=True),
        _error((_f32(3, 3), _f32(4, 2)), RuntimeError, r"Incompatible shapes of A and B for the equation AX = B "
                                                       r"\(3x3 and 4x2\)", upper=True),
        _error((_f32(3, 3), _f32(4, 2)), RuntimeError, r"equation XA = B \(3x3 and 4x2\)", upper=True, left=False),
        _error((_f32(2, 3, 3), _f32(4, 3, 2)), RuntimeError, r"The size of tensor a \(2\) must match", upper=True),
        _error((_int64(3, 3), _int64(3, 2)), NotImplementedError, "\"triangular_solve_cpu\" not implemented for "
                                                                  "'Long'", upper=True),
    ]


def triangular_solve_call(lib, b, A, **kwargs):
    upper = kwargs.get("upper", True)
    return lib.triangular_solve(b, _triangle(A, upper), **kwargs)


def triangular_solve_samples(dtype, rng):
    return [
        Sample((_rhs((3, 2), dtype, rng), _upper((3, 3), dtype, rng))),
        Sample((_rhs((3, 2), dtype, rng), _lower((3, 3), dtype, rng)), {"upper": False}),
        Sample((_rhs((2, 3, 1), dtype, rng), _upper((3, 3), dtype, rng)), {"transpose": True}),
        Sample((_rhs((3, 2), dtype, rng), _lower((2, 3, 3), dtype, rng)),
               {"upper": False, "transpose": True, "unitriangular": True}),
        Sample((_rhs((3, 2), dtype, rng), _upper((3, 3), dtype, rng)), noncontiguous=True),
    ]


def triangular_solve_errors():
    return [
        _error((_f32(3), _f32(3, 3)), RuntimeError, "Expected b to have at least 2 dimensions, but it has 1"),
        _error((_f32(3, 2), _f32(3)), RuntimeError, "Expected A to have at least 2 dimensions, but it has 1"),
        _error((_f32(3, 2), _f32(2, 3)), RuntimeError, "A must be batches of square matrices"),
        _error((_f32(4, 2), _f32(3, 3)), RuntimeError, "Incompatible matrix sizes for triangular_solve: each A "
                                                       "matrix is 3 by 3 but each b matrix is 4 by 2"),
        _error((np.ones((3, 2)), _f32(3, 3)), RuntimeError, "Expected b and A to have the same dtype, but found b of "
                                                            "type Double and A of type Float instead"),
        _error((_int64(3, 2), _int64(3, 3)), NotImplementedError, "not implemented for 'Long'"),
    ]


# ---------------------------------------------------------------- cholesky_solve, cholesky_inverse


def cholesky_solve_call(lib, B, factor, upper=False):
    return lib.cholesky_solve(B, _triangle(factor, upper), upper)


def cholesky_solve_samples(dtype, rng):
    return [
        Sample((_rhs((3, 2), dtype, rng), _lower((3, 3), dtype, rng))),
        Sample((_rhs((3, 2), dtype, rng), _upper((3, 3), dtype, rng)), {"upper": True}),
        Sample((_rhs((2, 1, 2, 1), dtype, rng), _lower((3, 2, 2), dtype, rng))),
        Sample((_rhs((2, 2), dtype, rng), _upper((2, 2, 2), dtype, rng)), {"upper": True}),
        Sample((_rhs((0, 2, 1), dtype, rng), _lower((2, 2), dtype, rng))),
        Sample((_rhs((3, 2), dtype, rng), _lower((3, 3), dtype, rng)), noncontiguous=True),
    ]


def cholesky_solve_errors():
    return [
        _error((_f32(3), _f32(3, 3)), RuntimeError, "b should have at least 2 dimensions, but has 1 dimensions"),
        _error((_f32(3, 2), _f32(3)), RuntimeError, "u should have at least 2 dimensions, but has 1 dimensions"),
        _error((_f32(3, 2), _f32(2, 3)), RuntimeError, "A must be batches of square matrices, but they are 2 by 3"),
        _error((_f32(4, 2), _f32(3, 3)), RuntimeError, "Incompatible matrix sizes for cholesky_solve: each A matrix "
                                                       "is 3 by 3 but each b matrix is 4 by 2"),
        _error((np.ones((3, 2)), _f32(3, 3)), RuntimeError, "Expected b and A to have the same dtype"),
        _error((_f32(2, 3, 2), _f32(4, 3, 3)), RuntimeError, r"The size of tensor a \(2\) must match the size of "
                                                             r"tensor b \(4\)"),
        _error((_int64(3, 2), _int64(3, 3)), NotImplementedError, "\"cholesky_solve_cpu\" not implemented for "
                                                                  "'Long'"),
    ]


def cholesky_inverse_call(lib, factor, upper=False):
    return lib.cholesky_inverse(_triangle(factor, upper), upper)


def cholesky_inverse_samples(dtype, rng):
    return [
        Sample((_lower((3, 3), dtype, rng),)),
        Sample((_upper((3, 3), dtype, rng),), {"upper": True}),
        Sample((_lower((2, 2, 2), dtype, rng),)),
        Sample((_upper((2, 2, 2), dtype, rng),), {"upper": True}),
        Sample((_lower((0, 2, 2), dtype, rng),)),
        Sample((_lower((70, 70), dtype, rng),), grad=False),
        Sample((_lower((3, 3), dtype, rng),), noncontiguous=True),
    ]


def cholesky_inverse_errors():
    singular = np.eye(3, dtype=np.float32)
    singular[1, 1] = 0
    return [
        _error((_f32(3),), RuntimeError, "cholesky_inverse: The input tensor A must have at least 2 dimensions"),
        _error((_f32(2, 3),), RuntimeError, "cholesky_inverse: A must be batches of square matrices"),
        _error((_int64(3, 3),), NotImplementedError, "\"cholesky_inverse_out_cpu\" not implemented for 'Long'"),
        _error((singular,), RuntimeError, "cholesky_inverse: The diagonal element 2 is zero, the inversion could not "
                                          "be completed because the input matrix is singular"),
    ]


# ---------------------------------------------------------------- lu_solve, solve_ex


def _pivots(batch, n, rng):
    """Valid LAPACK pivots (1-based, pivot i in [i + 1, n]) for any packed LU."""
    low = np.arange(1, n + 1)
    return (low + np.floor(rng.random(tuple(batch) + (n,)) * (n + 1 - low))).astype(np.int32)


def lu_solve_samples(dtype, rng):
    cases = [((3, 3), (3, 2), {}), ((3, 3), (2, 3), {"left": False}), ((3, 3), (3, 2), {"adjoint": True}),
             ((3, 3), (2, 3), {"left": False, "adjoint": True}), ((2, 2, 2), (3, 1, 2, 1), {}),
             ((0, 2, 2), (2, 1), {})]
    samples = [Sample((_general(a, dtype, rng), _pivots(a[:-2], a[-1], rng), _rhs(b, dtype, rng)), kwargs)
               for a, b, kwargs in cases]
    samples.append(Sample((_general((3, 3), dtype, rng), _pivots((), 3, rng), _rhs((3, 2), dtype, rng)),
                          noncontiguous=True))
    return samples


def lu_solve_errors():
    pivots = np.array([1, 2, 3], np.int32)
    return [
        _error((_f32(3), pivots, _f32(3, 2)), RuntimeError, "The input tensor A must have at least 2 dimensions"),
        _error((_int64(3, 3), pivots, _int64(3, 2)), RuntimeError, "Expected a floating point or complex tensor as "
                                                                   "input. Got Long"),
        _error((_f32(2, 3), pivots, _f32(3, 2)), RuntimeError, "A must be batches of square matrices"),
        _error((_f32(3, 3), pivots, np.ones((3, 2))), RuntimeError, "Expected LU and B to have the same dtype, but "
                                                                    "found LU of type Float and B of type Double"),
        _error((_f32(3, 3), pivots.astype(np.int64), _f32(3, 2)), RuntimeError, "pivots should be a Tensor of "
                                                                                "scalar type torch.int32"),
        _error((_f32(3, 3), pivots, _f32(3)), RuntimeError, "The input tensor B must have at least 2 dimensions"),
        _error((_f32(3, 3), pivots, _f32(4, 2)), RuntimeError, r"equation AX = B \(3x3 and 4x2\)"),
        _error((_f32(3, 3), pivots, _f32(2, 4)), RuntimeError, r"equation XA = B \(3x3 and 2x4\)", left=False),
        _error((_f32(3, 3), pivots[:2], _f32(3, 2)), RuntimeError, "Number of pivots per batch should be same"),
        _error((_f32(4, 3, 3), pivots, _f32(3, 2)), RuntimeError, r"Expected LU.shape\[:-1\] and pivots.shape to "
                                                                  r"be the same, but got pivots with shape \[3\]"),
    ]


def factor_and_solve_call(lib, A, B, **kwargs):
    """lu_factor then lu_solve: the gradient also runs through lu_factor's backward."""
    LU, pivots = lib.linalg.lu_factor(A)
    return lib.linalg.lu_solve(LU, pivots, B, **kwargs)


def factor_and_solve_samples(dtype, rng):
    return [Sample(s.args[::2], s.kwargs) for s in lu_solve_samples(dtype, rng)[:5]]


def old_lu_solve_samples(dtype, rng):
    return [Sample((s.args[2], s.args[0], s.args[1])) for s in lu_solve_samples(dtype, rng) if not s.kwargs]


def solve_ex_samples(dtype, rng):
    cases = [((3, 3), (3,), {}), ((3, 3), (3, 2), {}), ((2, 3, 3), (2, 3), {}), ((2, 2), (3, 2), {"left": False}),
             ((3, 3), (3, 2), {"check_errors": True})]
    return [Sample((_general(a, dtype, rng), _rhs(b, dtype, rng)), kwargs) for a, b, kwargs in cases]


def singular_solve_samples(dtype, rng):
    singular = _general((2, 3, 3), dtype, rng)
    singular[1, :, 0] = 0
    return [Sample((singular, _rhs((3, 2), dtype, rng)), grad=False),
            Sample((np.zeros((3, 3), singular.dtype), _rhs((3,), dtype, rng)), grad=False)]


def singular_solve_errors():
    singular = np.ones((2, 3, 3), np.float32)
    singular[0] = np.eye(3)
    return [_error((singular, _f32(3, 2)), RuntimeError, r"torch.linalg.solve_ex: \(Batch element 1\): The solver "
                                                         "failed because the input matrix is singular",
                   check_errors=True),
            _error((_f32(2, 3), _f32(3)), RuntimeError, "linalg.solve: A must be batches of square matrices")]


# ---------------------------------------------------------------- eig, eigvals


def _fixed_phase(V):
    """Each column times the phase that makes its first entry real and positive (kept on the graph)."""
    first = V[..., :1, :]
    return V * (first.conj() / first.abs())


def _sorted(L, V=None):
    """Eigenpairs by ascending real part, then imaginary part (LAPACK builds may order them differently)."""
    order = (L.real + 1e-3 * L.imag).detach().argsort(-1)
    L = L.gather(-1, order)
    if V is None:
        return L
    return L, V.gather(-1, order.unsqueeze(-2).expand(V.shape))


def eig_call(lib, A):
    L, V = _sorted(*lib.linalg.eig(A))
    V = _fixed_phase(V)
    return L.real, L.imag, V.real, V.imag


def eigvals_call(lib, A):
    L = _sorted(lib.linalg.eigvals(A))
    return L.real, L.imag


def eig_samples(dtype, rng):
    samples = []
    for shape in [(3, 3), (2, 2, 2), (1, 1), (0, 2, 2)]:
        n = shape[-1]
        values = make_array(shape, dtype, rng, -1, 1)
        samples.append(Sample(((values + np.diag(np.arange(n) * 3.0)).astype(values.dtype),)))
    rotation = np.array([[0.3, -2.0, 0.1], [2.0, 0.2, 0.3], [0.1, 0.4, 4.0]])  # a complex pair from a real matrix
    samples.append(Sample(((rotation + make_array((3, 3), dtype, rng, -0.1, 0.1)).astype(samples[0].args[0].dtype),)))
    samples.append(Sample((samples[0].args[0],), noncontiguous=True))
    return samples


def eig_errors():
    return [
        _error((_f32(2, 3),), RuntimeError, "linalg.eig: A must be batches of square matrices, but they are 2 by 3"),
        _error((_f32(3),), RuntimeError, "linalg.eig: The input tensor A must have at least 2 dimensions"),
        _error((_int64(3, 3),), RuntimeError, "Unknown Complex ScalarType for Long"),
        _error((np.full((2, 2), np.nan, np.float32),), RuntimeError, "input tensor should not contain infs or NaNs"),
    ]


# ---------------------------------------------------------------- cond, tensorinv, tensorsolve


def cond_samples(dtype, rng):
    rect = rect_samples(dtype, rng)
    square = _general((3, 3), dtype, rng)
    batch = _general((2, 2, 2), dtype, rng)
    samples = [Sample(rect[0].args), Sample(rect[1].args, {"p": 2}), Sample(rect[3].args, {"p": -2})]
    samples.append(Sample((square,), {"p": "nuc"}))
    # torch's backward fails for these orders (linalg_cond_helper fills its inverse in place): forward only here,
    # ember's gradients are gradchecked in tests/test_solvers.py
    for p in ("fro", math.inf, -math.inf, 1, -1):
        samples.append(Sample((square,), {"p": p}, grad=False))
    samples += [Sample((batch,), {"p": 1}, grad=False), Sample((np.zeros((0, 3, 3), square.dtype),), {"p": "fro"}),
                Sample((np.zeros((2, 2), square.dtype),), {"p": 1}, grad=False, name="singular")]
    return samples


def cond_errors():
    return [
        _error((_f32(2, 3),), RuntimeError, r"linalg.cond\(ord=fro\): A must be batches of square matrices", p="fro"),
        _error((_f32(2, 3),), RuntimeError, r"linalg.cond\(ord=1\): A must be batches of square matrices", p=1),
        _error((_f32(3),), RuntimeError, "linalg.cond: The input tensor must have at least 2 dimensions", p=1),
        _error((_f32(3, 3),), RuntimeError, "linalg.cond got an invalid norm type: 3", p=3),
        _error((_f32(3, 3),), RuntimeError, "linalg.cond got an invalid norm type: foo", p="foo"),
    ]


def tensorinv_samples(dtype, rng):
    matrix = _general((6, 6), dtype, rng)
    return [Sample((matrix.reshape(2, 3, 6),)), Sample((matrix.reshape(6, 2, 3),), {"ind": 1}),
            Sample((_general((2, 2), dtype, rng),), {"ind": 1})]


def tensorinv_errors():
    return [
        _error((_f32(4, 6, 8, 3),), RuntimeError, "Expected a strictly positive integer for 'ind', but got 0", ind=0),
        _error((_f32(4, 6, 8, 3),), RuntimeError, r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but "
                                                  "got 144 != 4", ind=1),
        _error((np.zeros((2, 3, 6), np.float32),), RuntimeError, "inv: The diagonal element 1 is zero"),
    ]


def tensorsolve_samples(dtype, rng):
    matrix = _general((6, 6), dtype, rng)
    return [Sample((matrix.reshape(2, 3, 6), _rhs((2, 3), dtype, rng))),
            Sample((np.moveaxis(matrix.reshape(2, 3, 2, 3), 2, 0), _rhs((2, 3), dtype, rng)), {"dims": (0,)}),
            Sample((_general((3, 3), dtype, rng), _rhs((3,), dtype, rng)))]


def tensorsolve_errors():
    return [_error((_f32(2, 3, 6), _f32(2, 4)), RuntimeError, "but got 6 != 8"),
            _error((_f32(2, 3, 6), np.ones((2, 3))), RuntimeError, "linalg.solve: Expected A and B to have the same "
                                                                   "dtype")]


# ---------------------------------------------------------------- householder_product, vander, cholesky


def householder_samples(dtype, rng):
    cases = [((4, 3), (2,)), ((3, 3), (3,)), ((2, 3, 2), (2, 2)), ((3, 2), (0,)), ((4, 3), (3,))]
    samples = [Sample((make_array(a, dtype, rng, -1, 1), make_array(t, dtype, rng, 0.2, 1.5))) for a, t in cases]
    samples.append(Sample(samples[0].args, noncontiguous=True))
    return samples


def householder_errors():
    return [
        _error((_f32(4), _f32(2)), RuntimeError, "input must have at least 2 dimensions"),
        _error((_f32(3, 4), _f32(2)), RuntimeError, r"input.shape\[-2\] must be greater than or equal to "
                                                    r"input.shape\[-1\]"),
        _error((_f32(4, 3), _f32(4)), RuntimeError, r"input.shape\[-1\] must be greater than or equal to "
                                                    r"tau.shape\[-1\]"),
        _error((_f32(2, 4, 3), _f32(2)), RuntimeError, "Expected tau to have one dimension less than input"),
        _error((_f32(2, 4, 3), _f32(3, 2)), RuntimeError, r"Expected batch dimensions of tau to be equal to "
                                                          r"input.shape\[:-2\], but got \[3\]"),
        _error((_f32(4, 3), np.ones(2)), RuntimeError, "tau dtype Double does not match input dtype Float"),
        _error((_int64(4, 3), _int64(2)), NotImplementedError, "\"orgqr_cpu\" not implemented for 'Long'"),
    ]


def vander_samples(dtype, rng):
    low, high = (-3, 4) if dtype.startswith("int") else (-1.5, 1.5)
    return [Sample((make_array((3,), dtype, rng, low, high),)),
            Sample((make_array((2, 3), dtype, rng, low, high),), {"N": 4}),
            Sample((make_array((), dtype, rng, low, high),), {"N": 3}),
            Sample((np.zeros((2, 0), make_array((1,), dtype, rng).dtype),), {"N": 2}),
            Sample((np.array([0.0, 2.0, -1.0]).astype(make_array((1,), dtype, rng).dtype),), name="zero")]


def vander_errors():
    return [_error((_f32(3),), RuntimeError, "N must be greater than 1", N=1),
            _error((np.ones(3, np.float16),), RuntimeError, "linalg.vander supports floating point, complex, and "
                                                            "integer tensors, but got Half"),
            _error((np.ones(3, bool),), RuntimeError, "but got Bool")]


def deprecated_cholesky_call(lib, X, raw=False, **kwargs):
    if raw:
        return lib.cholesky(X, **kwargs)
    n = X.shape[-1]
    return lib.cholesky(lib.matmul(X, X.mH) + n * lib.eye(n, dtype=X.dtype, device=X.device), **kwargs)


def deprecated_cholesky_samples(dtype, rng):
    return [Sample((make_array(s, dtype, rng, -1, 1),), kwargs)
            for s, kwargs in [((3, 3), {}), ((2, 2, 2), {"upper": True}), ((0, 2, 2), {})]]


def deprecated_cholesky_errors():
    return [
        _error((-np.eye(3, dtype=np.float32),), RuntimeError, r"^cholesky: The factorization could not be completed "
                                                              "because the input is not positive-definite", raw=True),
        _error((_f32(2, 3),), RuntimeError, "^cholesky: A must be batches of square matrices", raw=True),
        _error((_f32(3),), RuntimeError, "^cholesky: The input tensor A must have at least 2 dimensions", raw=True),
        _error((_int64(3, 3),), NotImplementedError, "\"cholesky_cpu\" not implemented for 'Long'", raw=True),
    ]


OPS = [
    OpInfo("linalg.solve_triangular", solve_triangular_samples, call=solve_triangular_call, dtypes=LINALG_TYPES,
           tolerances=TRIANGULAR_TOLERANCE, supports_out=True, error_inputs=solve_triangular_errors),
    OpInfo("triangular_solve", triangular_solve_samples, call=triangular_solve_call, dtypes=LINALG_TYPES,
           tolerances=TRIANGULAR_TOLERANCE, error_inputs=triangular_solve_errors),
    OpInfo("cholesky_solve", cholesky_solve_samples, call=cholesky_solve_call, dtypes=LINALG_TYPES,
           method="cholesky_solve", tolerances=TRIANGULAR_TOLERANCE, error_inputs=cholesky_solve_errors),
    OpInfo("cholesky_inverse", cholesky_inverse_samples, call=cholesky_inverse_call, dtypes=LINALG_TYPES,
           method="cholesky_inverse", tolerances=TRIANGULAR_TOLERANCE, error_inputs=cholesky_inverse_errors),
    OpInfo("linalg.lu_solve", lu_solve_samples, call=_linalg("lu_solve"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, supports_out=True, error_inputs=lu_solve_errors),
    OpInfo("linalg.lu_solve after lu_factor", factor_and_solve_samples, call=factor_and_solve_call,
           dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE, meta=False),
    OpInfo("lu_solve", old_lu_solve_samples, dtypes=LINALG_TYPES, method="lu_solve", tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.solve_ex", solve_ex_samples, call=_linalg("solve_ex"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.solve_ex singular", singular_solve_samples,
           call=lambda lib, A, B, **k: lib.linalg.solve_ex(A, B, **k).info, dtypes=("float32", "float64"),
           grad=False, meta=False, error_inputs=singular_solve_errors),
    OpInfo("linalg.eig", eig_samples, call=eig_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           grad_tolerance=(1e-6, 1e-6), error_inputs=eig_errors),
    OpInfo("linalg.eigvals", eig_samples, call=eigvals_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.cond", cond_samples, call=_linalg("cond"), dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=cond_errors),
    OpInfo("linalg.tensorinv", tensorinv_samples, call=_linalg("tensorinv"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, error_inputs=tensorinv_errors),
    OpInfo("linalg.tensorsolve", tensorsolve_samples, call=_linalg("tensorsolve"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, error_inputs=tensorsolve_errors),
    OpInfo("linalg.householder_product", householder_samples, call=_linalg("householder_product"),
           dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE, error_inputs=householder_errors),
    OpInfo("orgqr", householder_samples, dtypes=("float64",), method="orgqr", tolerances=DECOMP_TOLERANCE,
           max_samples=3),
    OpInfo("linalg.vander", vander_samples, call=_linalg("vander"),
           dtypes=("float32", "float64", "int64", "int8", "uint8") + COMPLEX, error_inputs=vander_errors),
    OpInfo("cholesky", deprecated_cholesky_samples, call=deprecated_cholesky_call, dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, error_inputs=deprecated_cholesky_errors),
]
