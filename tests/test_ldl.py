"""linalg.ldl_factor(_ex) / ldl_solve against torch: LAPACK's Bunch-Kaufman pivots exactly, LD and solutions to
rounding, over real, complex-symmetric and Hermitian batches, and torch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float64", "float32", "complex128", "complex64"]


def _symmetric(rng, n, dtype, hermitian, batch=(2,), small_diagonal=False):
    a = rng.standard_normal(batch + (n, n))
    if "complex" in dtype:
        a = a + 1j * rng.standard_normal(batch + (n, n))
    if small_diagonal:  # forces 2x2 pivots and row interchanges
        a[..., np.arange(n), np.arange(n)] *= 1e-3
    other = np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2)
    return ((a + other) / 2).astype(dtype)


CASES = [(n, dtype, hermitian, small) for n in (1, 2, 3, 6, 17) for dtype in DTYPES
         for hermitian in ((False, True) if "complex" in dtype else (False,)) for small in (False, True)]


@pytest.mark.parametrize("n,dtype,hermitian,small", CASES)
def test_factor_and_solve_match_torch(n, dtype, hermitian, small):
    rng = np.random.default_rng(n * 7 + DTYPES.index(dtype) + 100 * hermitian + 1000 * small)
    matrix = _symmetric(rng, n, dtype, hermitian, small_diagonal=small)
    rhs = rng.standard_normal((2, n, 3)).astype(dtype)
    expected = torch.linalg.ldl_factor_ex(torch.from_numpy(matrix), hermitian=hermitian)
    actual = ember.linalg.ldl_factor_ex(ember.from_numpy(matrix), hermitian=hermitian)
    tolerance = 2e-4 if dtype in ("float32", "complex64") else 1e-10
    assert actual.pivots.dtype == ember.int32 and actual.info.dtype == ember.int32
    assert np.array_equal(actual.pivots.numpy(), expected.pivots.numpy())
    assert np.array_equal(actual.info.numpy(), expected.info.numpy())
    np.testing.assert_allclose(actual.LD.numpy(), expected.LD.numpy(), rtol=tolerance, atol=tolerance)
    solved = ember.linalg.ldl_solve(actual.LD, actual.pivots, ember.from_numpy(rhs), hermitian=hermitian)
    reference = torch.linalg.ldl_solve(expected.LD, expected.pivots, torch.from_numpy(rhs), hermitian=hermitian)
    np.testing.assert_allclose(solved.numpy(), reference.numpy(), rtol=tolerance * 50, atol=tolerance * 50)


def _outcome(fn):
    try:
        result = fn()
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return type(error).__name__
    return [r.tolist() if hasattr(r, "tolist") else r for r in result] if isinstance(result, tuple) else \
        (tuple(result.shape), str(result.dtype).split(".")[-1])


def _zero_and_nan(lib):
    return [lib.linalg.ldl_factor_ex(lib.zeros(3, 3)),
            lib.linalg.ldl_factor_ex(lib.tensor([[float("nan"), 1.0], [1.0, 0.0]])),
            lib.linalg.ldl_factor(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))]  # the lower triangle is read


def test_zero_nan_and_lower_triangle_as_torch():
    expected = [[_plain(v) for v in r] for r in _zero_and_nan(torch)]
    assert [[_plain(v) for v in r] for r in _zero_and_nan(ember)] == expected


def _plain(value):
    return [x if x == x else "nan" for x in np.ravel(value.tolist())] if hasattr(value, "tolist") else value


ERRORS = {
    "singular": lambda lib: lib.linalg.ldl_factor(lib.zeros(3, 3)),
    "singular_checked": lambda lib: lib.linalg.ldl_factor_ex(lib.zeros(3, 3), check_errors=True),
    "not_square": lambda lib: lib.linalg.ldl_factor(lib.ones(2, 3)),
    "half": lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.float16)),
    "integer": lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.long)),
    "empty": lambda lib: lib.linalg.ldl_factor(lib.ones(2, 0, 0)),
    "vector_rhs": lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(3)),
    "rhs_rows": lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(4, 2)),
    "rhs_dtype": lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)), lib.ones(3, 2, dtype=lib.float64)),
    "broadcast": lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3).expand(2, 3, 3)), lib.ones(3, 2)),
    "factor_grad": lambda lib: lib.linalg.ldl_factor(lib.eye(3, requires_grad=True) * 2)[0].sum().backward(),
    "solve_grad": lambda lib: lib.linalg.ldl_solve(*lib.linalg.ldl_factor(lib.eye(3)),
                                                   lib.ones(3, 2, requires_grad=True)).sum().backward(),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_and_shapes_as_torch(name):
    assert _outcome(lambda: ERRORS[name](ember)) == _outcome(lambda: ERRORS[name](torch))


def test_derivative_message_is_torchs():
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        ember.linalg.ldl_factor(ember.eye(3, requires_grad=True) * 2)[0].sum().backward()
