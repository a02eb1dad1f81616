"""Solver behaviour the OpInfo tests (ember/testing/opdb/families/solvers.py) don't reach: both triangular-solve
routes, singular and non-finite inputs, deprecation warnings, phase-dependent eig losses, cond's gradients."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from ember._ops import solvers

torch = pytest.importorskip("torch")


def _both(array, requires_grad=False):
    return (ember.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_triangular_routes_agree_with_trsm(upper, unitriangular, dtype):
    """The gesv route (small n) and the blocked substitution both give torch's trsm result."""
    rng = np.random.default_rng(0)
    n = 9
    a = (rng.standard_normal((2, n, n)) + n * np.eye(n)).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * rng.standard_normal((2, n, n))
    b = rng.standard_normal((3, 1, n, 2)).astype(dtype)
    batch = (3, 2)
    expected = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=upper,
                                             unitriangular=unitriangular).numpy()
    by_lu = solvers._solve_by_lu(np, a, b, upper, unitriangular, batch)
    by_substitution = solvers._substitute(np, a, b, upper, unitriangular, batch)
    np.testing.assert_allclose(by_lu, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(by_substitution, expected, rtol=1e-12, atol=1e-12)


def test_ill_conditioned_triangular_matches_trsm():
    """A random lower-triangular matrix has a huge condition number; substitution keeps trsm's rounding."""
    rng = np.random.default_rng(1)
    for n in (20, 50, 130):
        a = np.tril(rng.standard_normal((n, n)))
        b = a @ rng.standard_normal((n, 1))
        mine, theirs = _both(a)
        rhs, rhs_torch = _both(b)
        actual = ember.linalg.solve_triangular(mine, rhs, upper=False).numpy()
        expected = torch.linalg.solve_triangular(theirs, rhs_torch, upper=False).numpy()
        residual = np.abs(a @ actual - b).max() / (np.abs(a).max() * np.abs(actual).max())
        assert residual < 1e-14  # backward stable, as trsm
        # forward errors of backward-stable solvers differ by at most about cond * eps
        bound = np.linalg.cond(a) * np.finfo(np.float64).eps
        assert np.abs(actual - expected).max() / np.abs(expected).max() < bound


@pytest.mark.parametrize("n", [3, 70])
def test_singular_triangular_gives_inf_not_error(n):
    """trsm divides by a zero pivot without complaint: inf/nan, no exception, no NumPy warning."""
    a = np.triu(np.ones((n, n))) + np.eye(n)
    a[n - 1, n - 1] = 0
    b = np.ones((n, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=True).numpy()
    expected = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=True).numpy()
    np.testing.assert_array_equal(np.isfinite(actual), np.isfinite(expected))
    assert np.isinf(actual[n - 1]).all()


def test_non_finite_triangular_entries_follow_trsm():
    a = np.array([[2.0, math.inf], [0.0, 1.0]])
    b = np.array([[1.0], [0.0]])
    actual = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=True).numpy()
    expected = torch.linalg.solve_triangular(torch.tensor(a), torch.tensor(b), upper=True).numpy()
    np.testing.assert_array_equal(actual, expected)


def test_solve_triangular_casts_B_to_A_dtype():
    A = ember.eye(3, dtype=ember.float64)
    assert ember.linalg.solve_triangular(A, ember.ones(3, 2), upper=True).dtype == ember.float64
    assert ember.linalg.solve_triangular(A.float(), ember.ones(3, 2, dtype=ember.float64), upper=True).dtype == \
        ember.float32


def test_deprecated_functions_warn_and_methods_exist():
    b, A = ember.ones(3, 2), ember.eye(3) * 2
    with pytest.warns(UserWarning, match="torch.triangular_solve is deprecated"):
        solution, cloned = b.triangular_solve(A)
    np.testing.assert_allclose(solution.numpy(), 0.5)
    assert cloned.shape == (3, 3)
    LU, pivots = ember.linalg.lu_factor(A)
    with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
        np.testing.assert_allclose(b.lu_solve(LU, pivots).numpy(), 0.5)
    with pytest.warns(UserWarning, match="torch.cholesky is deprecated"):
        np.testing.assert_allclose(A.cholesky().numpy(), math.sqrt(2) * np.eye(3), rtol=1e-6)
    assert type(solution).__name__ == "Tensor"
    assert ember.orgqr(ember.ones(3, 2), ember.zeros(1)).shape == (3, 2)
    assert ember.ones(3, 2).orgqr(ember.zeros(1)).shape == (3, 2)


def test_out_arguments():
    L = ember.eye(3) * 2
    B = ember.ones(3, 2)
    out = ember.empty(0)
    assert ember.cholesky_solve(B, L, out=out) is out
    np.testing.assert_allclose(out.numpy(), 0.25)
    out = ember.empty(0)
    assert ember.cholesky_inverse(L, out=out) is out
    np.testing.assert_allclose(out.numpy(), 0.25 * np.eye(3))
    LU, pivots = ember.linalg.lu_factor(L)
    out = ember.empty(0)
    assert ember.linalg.lu_solve(LU, pivots, B, out=out) is out
    result, info = ember.empty(0), ember.empty(0, dtype=ember.int32)
    assert ember.linalg.solve_ex(L, B, out=(result, info))[0] is result
    np.testing.assert_allclose(result.numpy(), 0.5)


def test_solve_ex_singular_result_and_info():
    A = np.zeros((2, 3, 3))
    A[0] = np.eye(3)
    mine = ember.linalg.solve_ex(ember.tensor(A), ember.ones(3, dtype=ember.float64))
    theirs = torch.linalg.solve_ex(torch.tensor(A), torch.ones(3, dtype=torch.float64))
    np.testing.assert_array_equal(mine.info.numpy(), theirs.info.numpy())
    np.testing.assert_allclose(mine.result.numpy()[0], theirs.result.numpy()[0])
    assert not np.isfinite(mine.result.numpy()[1]).all()
    assert type(mine).__name__ == "linalg_solve_ex"


def test_eig_phase_dependent_loss_raises():
    A = ember.tensor([[1.0, 2.0], [0.5, 3.0]], dtype=ember.float64, requires_grad=True)
    _, V = ember.linalg.eig(A)
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the complex case are "
                                           "specified up to multiplication by e\\^\\{i phi\\}"):
        V.imag.sum().backward()


def test_eig_of_real_matrix_with_complex_pair():
    A = np.array([[0.0, -1.0], [1.0, 0.0]])
    values, vectors = ember.linalg.eig(ember.tensor(A))
    assert values.dtype == ember.complex128 and vectors.dtype == ember.complex128
    np.testing.assert_allclose(sorted(values.numpy(), key=lambda z: z.imag), [-1j, 1j], atol=1e-12)
    np.testing.assert_allclose(A @ vectors.numpy(), vectors.numpy() * values.numpy(), atol=1e-12)


def test_eig_meta_shapes():
    values, vectors = ember.linalg.eig(ember.empty(2, 3, 3, device="meta"))
    assert values.shape == (2, 3) and values.dtype == ember.complex64
    assert vectors.shape == (2, 3, 3) and vectors.device.type == "meta"


@pytest.mark.parametrize("p", ["fro", 1, -1, math.inf, -math.inf, "nuc", None, -2])
def test_cond_gradcheck(p):
    """torch's cond backward fails for the inverse-based orders (it fills its inverse in place); ember's works."""
    rng = np.random.default_rng(2)
    A = ember.tensor(rng.uniform(-1, 1, (3, 3)) + 3 * np.eye(3), requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: ember.linalg.cond(x, p), (A,))


def test_cond_of_singular_matrices():
    A = ember.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]])
    result = ember.linalg.cond(A, 1)
    expected = torch.linalg.cond(torch.tensor(A.numpy()), 1)
    np.testing.assert_allclose(result.numpy(), expected.numpy())
    assert math.isinf(result[0].item())


def test_lu_backward_uses_triangular_solves():
    """lu_factor's backward solves with L^H and U^H by substitution, as torch does, so a singular U gives
    non-finite gradients instead of an error."""
    A = ember.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=ember.float64, requires_grad=True)
    LU, _ = ember.linalg.lu_factor_ex(A)[:2]
    (grad,) = ember.autograd.grad(LU.sum(), A)
    At = torch.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=torch.float64, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.linalg.lu_factor_ex(At)[0].sum(), At)
    np.testing.assert_array_equal(np.isfinite(grad.numpy()), np.isfinite(expected.numpy()))


def test_large_triangular_solve_and_lu_solve_match_torch():
    rng = np.random.default_rng(3)
    n = 200
    A = rng.standard_normal((n, n)) + n * np.eye(n)
    B = rng.standard_normal((n, 3))
    LU, pivots = torch.linalg.lu_factor(torch.tensor(A))
    actual = ember.linalg.lu_solve(ember.tensor(LU.numpy()), ember.tensor(pivots.numpy()), ember.tensor(B),
                                   adjoint=True)
    expected = torch.linalg.lu_solve(LU, pivots, torch.tensor(B), adjoint=True)
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


def _complex_grad_ops():
    from ember.testing.opdb.families import solvers as family

    return [op for op in family.OPS if op.grad and "complex128" in op.dtypes]


@pytest.mark.parametrize("op", _complex_grad_ops(), ids=lambda op: op.name)
def test_complex_gradients_match_torch(op):
    """tests/test_opdb.py compares gradients in float64; the complex formulas (conjugates, adjoints) here."""
    from ember.testing.opdb.core import build_value, to_numpy

    rng = np.random.default_rng(7)
    compared = 0
    for sample in op.sample_inputs("complex128", rng)[:op.max_samples]:
        if not sample.grad:
            continue
        mine = tuple(build_value(ember, a, True) for a in sample.args)
        theirs = tuple(build_value(torch, a, True) for a in sample.args)
        expected_outputs = [o for o in _outputs(op.run(torch, sample, theirs)) if o.requires_grad]
        actual_outputs = [o for o in _outputs(op.run(ember, sample, mine)) if o.requires_grad]
        if not expected_outputs:
            continue
        cotangents = [rng.standard_normal(tuple(o.shape)) * (1 + 1j if o.is_complex() else 1)
                      for o in expected_outputs]
        expected = torch.autograd.grad(expected_outputs, [t for t in theirs if isinstance(t, torch.Tensor)
                                                          and t.requires_grad],
                                       [torch.tensor(c) for c in cotangents], allow_unused=True)
        actual = ember.autograd.grad(actual_outputs, [t for t in mine if isinstance(t, ember.Tensor)
                                                      and t.requires_grad],
                                     [ember.tensor(c) for c in cotangents], allow_unused=True)
        for a, e in zip(actual, expected):
            if e is not None and e.numel():
                np.testing.assert_allclose(to_numpy(a), to_numpy(e), rtol=1e-8, atol=1e-10)
                compared += 1
    assert compared


def _outputs(result):
    return result if isinstance(result, (tuple, list)) else (result,)
