"""Zero-preserving unary ops on sparse COO tensors and torch.sparse.softmax / log_softmax against real torch:
values, indices, coalesced flags, dtypes, gradients (float64) and the errors torch's backward raises."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="Sparse invariant checks")

INDICES = [[1, 0, 1, 0, 1], [2, 0, 2, 1, 0]]  # (1, 2) twice: uncoalesced
VALUES = [0.3, 0.4, 0.5, -0.2, 0.1]


def pair(dtype="float64", coalesce=False, requires_grad=False, indices=INDICES, values=VALUES, size=(2, 3)):
    out = []
    for m in (ember, torch):
        s = m.sparse_coo_tensor(m.tensor(indices), m.tensor(values, dtype=getattr(m, dtype)), size)
        s = s.coalesce() if coalesce else s
        out.append(s.requires_grad_(requires_grad))
    return out


def check(e, t, rtol=1e-12, atol=1e-12):
    assert e.is_sparse and t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    assert e.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().detach().numpy(), t._values().detach().numpy(), rtol=rtol, atol=atol)


UNARY = ["abs", "neg", "sqrt", "sin", "tan", "tanh", "relu", "sinh", "asin", "asinh", "atan", "atanh", "expm1",
         "log1p", "sign", "sgn", "ceil", "floor", "round", "trunc", "frac", "square", "erf", "erfinv", "deg2rad",
         "rad2deg", "isnan", "isinf", "isposinf", "isneginf", "signbit", "nan_to_num"]


def _fn(m, name):
    return getattr(m, name, None) or getattr(m.nn.functional, name)


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_layout(name, dtype, coalesce):
    e, t = pair(dtype, coalesce)
    check(_fn(ember, name)(e), _fn(torch, name)(t), rtol=1e-6, atol=1e-6)
    if hasattr(t, name):
        check(getattr(e, name)(), getattr(t, name)(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["abs", "neg", "sign", "square", "ceil"])
def test_unary_integer_dtypes(name):
    e, t = pair("int64", values=[3, -4, 5, -2, 1])
    check(_fn(ember, name)(e), _fn(torch, name)(t))


def test_unary_promotes_integers_to_float():
    e, t = pair("int64", values=[3, 4, 5, 2, 1])
    check(ember.sqrt(e), torch.sqrt(t), rtol=1e-6)


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("name", UNARY)
def test_unary_gradients(name, coalesce):
    """The gradient torch computes (sparse, its pattern and coalesced flag) or the error its backward raises."""
    e, t = pair("float64", coalesce, requires_grad=True)
    weight = np.arange(6.0).reshape(2, 3) - 2.5
    out_e, out_t = _fn(ember, name)(e), _fn(torch, name)(t)
    if out_t.grad_fn is None:
        assert out_e.grad_fn is None
        return
    assert out_e.grad_fn.name() == out_t.grad_fn.name()
    loss_e = (out_e.to_dense() * ember.tensor(weight)).sum()
    loss_t = (out_t.to_dense() * torch.tensor(weight)).sum()
    try:
        loss_t.backward()
    except (RuntimeError, NotImplementedError) as torch_error:
        with pytest.raises(type(torch_error)) as ember_error:
            loss_e.backward()
        assert str(torch_error).startswith(str(ember_error.value)[:60])
        return
    loss_e.backward()
    check(e.grad, t.grad)


def test_mul_by_dense_scalar_tensor():
    for coalesce in (False, True):
        e, t = pair(coalesce=coalesce, requires_grad=True)
        out_e, out_t = e * ember.tensor(2.5, dtype=ember.float64), t * torch.tensor(2.5, dtype=torch.float64)
        check(out_e, out_t)
        check(ember.tensor(-1.5, dtype=ember.float64) * e, torch.tensor(-1.5, dtype=torch.float64) * t)
        out_e.to_dense().sum().backward()
        out_t.to_dense().sum().backward()
        np.testing.assert_allclose(e.grad.to_dense().numpy(), t.grad.to_dense().numpy())


# ---------------------------------------------------------------- torch.sparse.softmax / log_softmax

SOFTMAX = ["softmax", "log_softmax"]


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_values(name, dim, coalesce):
    e, t = pair(coalesce=coalesce)
    out_e, out_t = getattr(ember.sparse, name)(e, dim), getattr(torch.sparse, name)(t, dim)
    check(out_e, out_t)
    e32, t32 = pair("float32", coalesce)
    check(getattr(ember.sparse, name)(e32, dim), getattr(torch.sparse, name)(t32, dim), rtol=1e-6, atol=1e-6)
    check(getattr(ember.sparse, name)(e32, dim, dtype=ember.float64),
          getattr(torch.sparse, name)(t32, dim, dtype=torch.float64), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_hybrid_and_3d(name, dim):
    rng = np.random.default_rng(0)
    hybrid = [rng.standard_normal((4, 3)).tolist()]
    indices = [[0, 2, 1, 2], [1, 0, 3, 3]]
    for size, values, sparse_indices in (((3, 4, 3), hybrid[0], indices),
                                         ((2, 3, 4), rng.standard_normal(4).tolist(),
                                          [[0, 1, 1, 0], [2, 0, 2, 1], [3, 3, 0, 3]])):
        e, t = pair(indices=sparse_indices, values=values, size=size, requires_grad=True)
        out_e, out_t = getattr(ember.sparse, name)(e, dim), getattr(torch.sparse, name)(t, dim)
        check(out_e, out_t)
        weight = rng.standard_normal(size)
        (out_e.to_dense() * ember.tensor(weight)).sum().backward()
        (out_t.to_dense() * torch.tensor(weight)).sum().backward()
        check(e.grad, t.grad)


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_gradients(name, dim, coalesce):
    """Non-negative dims: torch 2.13's backward with a negative dim disagrees with its own positive-dim result."""
    e, t = pair(coalesce=coalesce, requires_grad=True)
    weight = np.arange(6.0).reshape(2, 3) - 2.5
    out_e, out_t = getattr(ember.sparse, name)(e, dim), getattr(torch.sparse, name)(t, dim)
    assert out_e.grad_fn.name() == out_t.grad_fn.name()
    (out_e.to_dense() * ember.tensor(weight)).sum().backward()
    (out_t.to_dense() * torch.tensor(weight)).sum().backward()
    check(e.grad, t.grad)


def test_softmax_gradient_through_values_gradcheck():
    indices = ember.tensor(INDICES)

    def loss(v):
        s = ember.sparse_coo_tensor(indices, v, (2, 3))
        return (ember.sparse.log_softmax(s, 1).to_dense() * ember.arange(6.0, dtype=ember.float64).reshape(2, 3)
                ).sum() + (ember.sparse.softmax(s, 0).to_dense() ** 2).sum()

    v = ember.tensor(np.random.default_rng(3).standard_normal(5)).requires_grad_()
    assert ember.autograd.gradcheck(loss, (v,))


@pytest.mark.parametrize("name", SOFTMAX)
def test_softmax_errors(name):
    e, t = pair()
    ei, ti = pair("int64", values=[3, 4, 5, 2, 1])
    for fn_e, fn_t in ((lambda: getattr(ember.sparse, name)(e, 2), lambda: getattr(torch.sparse, name)(t, 2)),
                       (lambda: getattr(ember.sparse, name)(ei, 0), lambda: getattr(torch.sparse, name)(ti, 0))):
        with pytest.raises(Exception) as torch_error:
            fn_t()
        with pytest.raises(type(torch_error.value)) as ember_error:
            fn_e()
        assert str(ember_error.value) == str(torch_error.value)
