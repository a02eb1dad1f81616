"""Functions returning Python values (equal, allclose, is_nonzero, is_same_size, is_signed, is_conj, is_neg), the
factories without tensor inputs (tril_indices, triu_indices), and what the op database does not check for
view_as_real/view_as_complex, ravel, unravel_index, vander and as_strided_scatter, against real PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]


def _both(values, dtype=None):
    """The same tensor in ember and torch."""
    return (ember.tensor(values, dtype=getattr(ember, dtype) if dtype else None),
            torch.tensor(values, dtype=getattr(torch, dtype) if dtype else None))


def _raises_like(call_ember, call_torch):
    """Both raise, with the same exception type and message."""
    with pytest.raises(Exception) as expected:
        call_torch()
    with pytest.raises(type(expected.value)) as actual:
        call_ember()
    assert str(actual.value) == str(expected.value)


# ---------------------------------------------------------------- equal, allclose


EQUAL_CASES = [
    ([1, 2], [1, 2], None, None),
    ([1, 2], [1.0, 2.0], None, None),
    ([1, 2], [1, 2, 3], None, None),
    ([1, 2], [[1, 2]], None, None),
    ([NAN], [NAN], None, None),
    ([], [], None, None),
    ([0.0], [-0.0], None, None),
    ([1, 2], [1, 2], "int32", "int64"),
    ([1.5, 2.0], [1.5, 2.0], "float32", "float64"),
    ([True, False], [1, 0], "bool", "int64"),
]


@pytest.mark.parametrize("left,right,left_dtype,right_dtype", EQUAL_CASES)
def test_equal_matches_torch(left, right, left_dtype, right_dtype):
    ember_left, torch_left = _both(left, left_dtype)
    ember_right, torch_right = _both(right, right_dtype)
    expected = torch.equal(torch_left, torch_right)
    assert ember.equal(ember_left, ember_right) is expected
    assert ember_left.equal(ember_right) is expected


def test_equal_type_errors():
    _raises_like(lambda: ember.equal(ember.tensor([1, 2]), [1, 2]), lambda: torch.equal(torch.tensor([1, 2]), [1, 2]))


ALLCLOSE_CASES = [
    ([1.0, 2.0], [1.0, 2.0 + 1e-6], {}),
    ([1.0, 2.0], [1.0, 2.1], {}),
    ([1.0, 2.0], [1.0, 2.1], {"rtol": 0.1}),
    ([1.0, NAN], [1.0, NAN], {}),
    ([1.0, NAN], [1.0, NAN], {"equal_nan": True}),
    ([INF, -INF], [INF, -INF], {}),
    ([INF], [-INF], {"atol": INF}),
    ([1.0, 2.0], [1.0], {}),
    ([3, 5], [5, 3], {"atol": 2}),
    ([True, False], [True, True], {"atol": 1}),
]


@pytest.mark.parametrize("left,right,kwargs", ALLCLOSE_CASES)
def test_allclose_matches_torch(left, right, kwargs):
    ember_left, torch_left = _both(left)
    ember_right, torch_right = _both(right)
    expected = torch.allclose(torch_left, torch_right, **kwargs)
    assert ember.allclose(ember_left, ember_right, **kwargs) is expected
    assert ember_left.allclose(ember_right, **kwargs) is expected


def test_allclose_errors():
    _raises_like(lambda: ember.allclose(ember.tensor([1, 2]), ember.tensor([1.0, 2.0])),
                 lambda: torch.allclose(torch.tensor([1, 2]), torch.tensor([1.0, 2.0])))
    _raises_like(lambda: ember.allclose(ember.ones(2), ember.ones(2), rtol=-1),
                 lambda: torch.allclose(torch.ones(2), torch.ones(2), rtol=-1))
    _raises_like(lambda: ember.allclose(ember.ones(2), ember.ones(3)),
                 lambda: torch.allclose(torch.ones(2), torch.ones(3)))


def test_isclose_integers_measure_in_float():
    """torch measures integer differences in the default float dtype: no wrap-around, float32 rounding."""
    cases = [([3, 200], [5, 100], "uint8", {"rtol": 0.5, "atol": 2}),
             ([100], [-100], "int8", {"rtol": 0, "atol": 200}),
             ([2 ** 24 + 1], [2 ** 24], "int32", {"rtol": 0, "atol": 0.5})]
    for left, right, dtype, kwargs in cases:
        ember_left, torch_left = _both(left, dtype)
        ember_right, torch_right = _both(right, dtype)
        expected = torch.isclose(torch_left, torch_right, **kwargs).numpy()
        np.testing.assert_array_equal(ember.isclose(ember_left, ember_right, **kwargs).numpy(), expected)


def test_isclose_has_no_grad():
    x = ember.ones(3, requires_grad=True)
    result = ember.isclose(x, x * 1.0)
    assert result.dtype is ember.bool and not result.requires_grad


# ---------------------------------------------------------------- predicates


@pytest.mark.parametrize("values", [[0.0], [1.5], [NAN], [0j], [1j], [0], [True], 0.0, 3])
def test_is_nonzero_matches_torch(values):
    ember_tensor, torch_tensor = _both(values)
    assert ember.is_nonzero(ember_tensor) is torch.is_nonzero(torch_tensor)
    assert ember_tensor.is_nonzero() is torch_tensor.is_nonzero()


@pytest.mark.parametrize("values", [[], [1, 2], [[1.0, 2.0]]])
def test_is_nonzero_errors(values):
    ember_tensor, torch_tensor = _both(values)
    _raises_like(lambda: ember.is_nonzero(ember_tensor), lambda: torch.is_nonzero(torch_tensor))


def test_predicates_type_errors():
    for name in ("is_nonzero", "is_signed", "is_conj", "is_neg"):
        _raises_like(lambda: getattr(ember, name)(1), lambda: getattr(torch, name)(1))
    _raises_like(lambda: ember.is_same_size(ember.ones(2), [1, 2]), lambda: torch.is_same_size(torch.ones(2), [1, 2]))


def test_is_same_size():
    for left, right in [((2, 3), (2, 3)), ((2, 3), (3, 2)), ((), ()), ((0,), (0, 1))]:
        expected = torch.is_same_size(torch.ones(left), torch.ones(right, dtype=torch.int64))
        assert ember.is_same_size(ember.ones(left), ember.ones(right, dtype=ember.int64)) is expected
        assert ember.ones(left).is_same_size(ember.ones(right)) is expected


@pytest.mark.parametrize("dtype", DTYPES)
def test_is_signed_matches_torch(dtype):
    expected = torch.is_signed(torch.ones(2, dtype=getattr(torch, dtype)))
    assert ember.is_signed(ember.ones(2, dtype=getattr(ember, dtype))) is expected
    assert ember.ones(2, dtype=getattr(ember, dtype)).is_signed() is expected


def test_is_conj_and_is_neg():
    """ember has no lazy conjugate/negation bits: conj() copies, so both predicates are always False."""
    z = ember.tensor([1 + 2j])
    for tensor in (z, z.conj(), z.conj().imag, ember.ones(2)):
        assert ember.is_conj(tensor) is False and tensor.is_conj() is False
        assert ember.is_neg(tensor) is False and tensor.is_neg() is False
    assert torch.is_conj(torch.ones(2)) is False and torch.is_neg(torch.ones(2)) is False


# ---------------------------------------------------------------- tril_indices, triu_indices


TRIANGLE_CASES = [(3, 3, 0), (3, 4, 1), (4, 3, -1), (0, 4, 0), (3, 0, 0), (3, 3, 100), (3, 3, -100), (5, 2, -2),
                  (2, 5, 3), (1, 1, 0)]


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
@pytest.mark.parametrize("row,col,offset", TRIANGLE_CASES)
def test_triangle_indices_match_torch(name, row, col, offset):
    expected = getattr(torch, name)(row, col, offset)
    actual = getattr(ember, name)(row, col, offset)
    assert actual.dtype is ember.int64 and tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())


@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices_options_and_errors(name):
    ember_fn, torch_fn = getattr(ember, name), getattr(torch, name)
    assert ember_fn(3, 4, dtype=ember.int32).dtype is ember.int32
    assert ember_fn(3, 4, dtype=None).dtype is ember.int64
    meta = ember_fn(3, 4, device="meta")
    assert meta.device.type == "meta" and tuple(meta.shape) == tuple(torch_fn(3, 4, device="meta").shape)
    _raises_like(lambda: ember_fn(-1, 3), lambda: torch_fn(-1, 3))
    _raises_like(lambda: ember_fn(3, -1), lambda: torch_fn(3, -1))
    for dtype in ("float32", "int16", "uint8", "bool"):
        _raises_like(lambda: ember_fn(3, 3, dtype=getattr(ember, dtype)),
                     lambda: torch_fn(3, 3, dtype=getattr(torch, dtype)))


# ---------------------------------------------------------------- views


def test_view_as_real_shares_storage():
    z = ember.tensor([1 + 2j, 3 - 4j])
    real = ember.view_as_real(z)
    assert real._base is z and tuple(real.stride()) == tuple(torch.view_as_real(torch.tensor([1 + 2j])).stride())
    real[1, 1] = 7.0
    assert z[1].item() == 3 + 7j
    z.mul_(2)
    np.testing.assert_array_equal(real.numpy(), [[2.0, 4.0], [6.0, 14.0]])


def test_view_as_complex_shares_storage_and_strides():
    pairs = ember.arange(12.0).reshape(3, 2, 2)
    complex_view = ember.view_as_complex(pairs)
    expected = torch.view_as_complex(torch.arange(12.0).reshape(3, 2, 2))
    assert tuple(complex_view.stride()) == tuple(expected.stride())
    assert complex_view.dtype is ember.complex64
    complex_view[0, 0] = 5 + 6j
    np.testing.assert_array_equal(pairs[0, 0].numpy(), [5.0, 6.0])
    sliced = ember.view_as_complex(ember.arange(16.0).reshape(4, 2, 2)[::2])
    assert tuple(sliced.stride()) == tuple(torch.view_as_complex(torch.arange(16.0).reshape(4, 2, 2)[::2]).stride())
    assert tuple(ember.view_as_complex(ember.ones(0, 2)).shape) == (0,)


def test_view_as_complex_errors():
    for make in (lambda lib: lib.ones(6)[1:5].view(2, 2), lambda lib: lib.ones(2, 2, 3)[:, :, :2],
                 lambda lib: lib.ones(2, 4)[:, ::2], lambda lib: lib.ones(3, 2, dtype=lib.bfloat16)):
        _raises_like(lambda: ember.view_as_complex(make(ember)), lambda: torch.view_as_complex(make(torch)))


def test_view_round_trip_gradient():
    x = ember.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=ember.float64, requires_grad=True)
    y = ember.view_as_real(ember.view_as_complex(x) * (1 + 1j))
    expected_x = torch.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=torch.float64, requires_grad=True)
    expected = torch.view_as_real(torch.view_as_complex(expected_x) * (1 + 1j))
    weights = np.arange(4.0).reshape(2, 2)
    (y * ember.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), expected_x.grad.numpy())


def test_ravel_is_a_view_only_when_contiguous():
    x = ember.arange(6.0).reshape(2, 3)
    flat = ember.ravel(x)
    assert flat.data_ptr() == x.data_ptr()
    flat[1] = 50.0
    assert x[0, 1].item() == 50.0
    transposed = ember.ravel(x.t())
    np.testing.assert_array_equal(transposed.numpy(), torch.ravel(torch.tensor(x.numpy()).t()).numpy())
    transposed[0] = 100.0
    assert x[0, 0].item() == 0.0
    strided = ember.arange(6.0)[::2]
    strided.ravel()[0] = 100.0
    assert strided[0].item() == 0.0  # torch copies a non-contiguous input even when a strided view would do


# ---------------------------------------------------------------- unravel_index, isin, complex, block_diag


def test_unravel_index_returns_a_tuple_of_views():
    result = ember.unravel_index(ember.tensor([4, 1]), (2, 3))
    expected = torch.unravel_index(torch.tensor([4, 1]), (2, 3))
    assert isinstance(result, tuple) and len(result) == len(expected)
    for actual, wanted in zip(result, expected):
        np.testing.assert_array_equal(actual.numpy(), wanted.numpy())
    assert ember.unravel_index(ember.tensor([0]), ()) == ()
    _raises_like(lambda: ember.unravel_index(ember.tensor([1]), "ab"),
                 lambda: torch.unravel_index(torch.tensor([1]), "ab"))
    with pytest.raises(AttributeError):
        ember.unravel_index(4, (2, 3))  # as torch: a plain int has no is_complex


def test_isin_needs_a_tensor():
    _raises_like(lambda: ember.isin(2, 3), lambda: torch.isin(2, 3))
    for scalar in (True, 1j):
        _raises_like(lambda: ember.isin(ember.tensor([1]), scalar), lambda: torch.isin(torch.tensor([1]), scalar))


def test_complex_and_polar_out_dtype():
    real, imag = ember.ones(2), ember.zeros(2)
    out = ember.empty(0, dtype=ember.complex64)
    assert ember.complex(real, imag, out=out) is out
    np.testing.assert_array_equal(out.numpy(), [1 + 0j, 1 + 0j])
    for name in ("complex", "polar"):
        _raises_like(lambda: getattr(ember, name)(ember.ones(2), ember.ones(2), out=ember.empty(0)),
                     lambda: getattr(torch, name)(torch.ones(2), torch.ones(2), out=torch.empty(0)))
        _raises_like(lambda: getattr(ember, name)(ember.ones(2), 3.0), lambda: getattr(torch, name)(torch.ones(2), 3.0))


def test_block_diag_edge_cases():
    empty = ember.block_diag()
    expected = torch.block_diag()
    assert tuple(empty.shape) == tuple(expected.shape) and empty.dtype is ember.float32
    _raises_like(lambda: ember.block_diag([ember.ones(2)]), lambda: torch.block_diag([torch.ones(2)]))
    _raises_like(lambda: ember.block_diag(ember.ones(2), 3), lambda: torch.block_diag(torch.ones(2), 3))
    mixed = ember.block_diag(ember.ones(2, dtype=ember.int8), ember.tensor(2.0))
    assert mixed.dtype is ember.float32


# ---------------------------------------------------------------- gradients torch 2.13 cannot give


def test_vander_gradient_matches_powers():
    """torch 2.13's vander backward raises; its gradient equals that of x ** k, which torch differentiates."""
    values = [0.5, -2.0, 0.0, 1.5]
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    reference = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    weights = np.random.default_rng(0).standard_normal((4, 5))
    (ember.vander(x, N=5) * ember.tensor(weights)).sum().backward()
    powers = reference.unsqueeze(1) ** torch.arange(4, -1, -1, dtype=torch.float64)
    (powers * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), reference.grad.numpy(), rtol=1e-12, atol=1e-12)
    assert ember.autograd.gradcheck(lambda t: ember.vander(t, N=4, increasing=True),
                                    (ember.tensor([0.5, -2.0, 1.5], dtype=ember.float64, requires_grad=True),))


def test_as_strided_scatter_gradients():
    """src's gradient is torch's; input's is the true one (torch 2.13's is not, and fails its own gradcheck)."""
    base = ember.zeros(3, 4, dtype=ember.float64, requires_grad=True)
    src = ember.ones(2, 2, dtype=ember.float64, requires_grad=True)
    result = ember.as_strided_scatter(base, src, (2, 2), (1, 2))
    grad = np.arange(12.0).reshape(3, 4)
    grad_base, grad_src = ember.autograd.grad(result, (base, src), ember.tensor(grad))
    torch_base = torch.zeros(3, 4, dtype=torch.float64, requires_grad=True)
    torch_src = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    torch_result = torch.as_strided_scatter(torch_base, torch_src, (2, 2), (1, 2))
    np.testing.assert_array_equal(result.detach().numpy(), torch_result.detach().numpy())
    _, expected_src = torch.autograd.grad(torch_result, (torch_base, torch_src), torch.tensor(grad))
    np.testing.assert_array_equal(grad_src.numpy(), expected_src.numpy())
    written = np.zeros((3, 4), bool)
    written[0, :] = True  # size (2, 2), stride (1, 2) covers storage 0..3: the first row
    np.testing.assert_array_equal(grad_base.numpy(), np.where(written, 0.0, grad))
