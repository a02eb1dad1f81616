"""Tensor methods built from other ops (ember/_ops/tensor_extras.py) against torch."""

import numpy as np
import pytest
import torch

import ember


def _pair(array):
    return ember.tensor(array), torch.tensor(array)


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((5, 3), True), ((5, 3), False), ((3, 5), True),
                                         ((2, 2, 2), False), ((7, 2), True)])
def test_fill_diagonal(shape, wrap):
    mine, theirs = _pair(np.zeros(shape, np.float32))
    mine.fill_diagonal_(4.0, wrap=wrap)
    theirs.fill_diagonal_(4.0, wrap=wrap)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_fill_diagonal_gradient_and_errors():
    x = ember.ones(3, 3, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * (1 - np.eye(3, dtype=np.float32)))
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.zeros(2, 3, 4).fill_diagonal_(1)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    index = np.array([0, 5, -1, 5])
    source = np.array([10.0, 20.0, 30.0, 40.0])
    mine = ember.tensor(base).t().put(ember.tensor(index), ember.tensor(source), accumulate=accumulate)
    theirs = torch.tensor(base).t().put(torch.tensor(index), torch.tensor(source), accumulate=accumulate)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    m, t = _pair(base)
    m.put_(ember.tensor(index[:2]), ember.tensor(source[:2]))
    t.put_(torch.tensor(index[:2]), torch.tensor(source[:2]))
    np.testing.assert_array_equal(m.numpy(), t.numpy())
    with pytest.raises(IndexError, match="tried to access index 12 on a tensor of 12 elements"):
        m.put_(ember.tensor([12]), ember.tensor([1.0], dtype=ember.float64))


def test_put_gradient():
    x = ember.arange(6.0, requires_grad=True)
    source = ember.tensor([1.0, 2.0], requires_grad=True)
    x.put(ember.tensor([1, 4]), source).mul(ember.arange(6.0)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 2, 3, 0, 5])
    np.testing.assert_array_equal(source.grad.numpy(), [1, 4])


def test_resize():
    mine, theirs = _pair(np.arange(6, dtype=np.float32))
    for size in [(2, 2), (3,), (2, 3)]:
        mine.resize_(*size)
        theirs.resize_(*size)
        assert tuple(mine.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(mine.numpy().reshape(-1)[:3], theirs.numpy().reshape(-1)[:3])
    mine.resize_as_(ember.zeros(4, 4))
    assert tuple(mine.shape) == (4, 4)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(2, requires_grad=True).resize_(3)


@pytest.mark.parametrize("size", [(1, 3), (3,), (2, 1), (1, 1), (2, 3)])
def test_sum_to_size(size):
    mine, theirs = _pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(mine.sum_to_size(size).numpy(), theirs.sum_to_size(size).numpy())


def test_new_follows_dtype_and_device():
    for lib in (ember, torch):
        x = lib.ones(2, dtype=lib.float64)
        assert x.new((2, 3)).tolist() == [2.0, 3.0] and x.new((2, 3)).dtype == lib.float64
        assert tuple(x.new(2, 3).shape) == (2, 3) and tuple(x.new().shape) == (0,)


def test_small_methods():
    x, t = _pair(np.arange(24.0).reshape(2, 3, 4))
    assert x.permute(2, 0, 1).dim_order() == t.permute(2, 0, 1).dim_order()
    np.testing.assert_array_equal(x.narrow_copy(1, 1, 2).numpy(), t.narrow_copy(1, 1, 2).numpy())
    for size in (0, 2, 6):
        np.testing.assert_array_equal(ember.nonzero_static(ember.tensor([0, 1, 0, 2]), size=size).numpy(),
                                      torch.nonzero_static(torch.tensor([0, 1, 0, 2]), size=size).numpy())
    assert [c.shape for c in x.unsafe_chunk(2, 2)] == [tuple(c.shape) for c in t.unsafe_chunk(2, 2)]
    y, u = _pair(np.arange(4.0))
    y.apply_(lambda v: v * v + 1)
    u.apply_(lambda v: v * v + 1)
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    y.map_(ember.tensor([1.0]), lambda a, b: a - b)
    u.map_(torch.tensor([1.0], dtype=torch.float64), lambda a, b: a - b)
    np.testing.assert_array_equal(y.numpy(), u.numpy())
    assert not x.is_mps and not x.is_nested and x.const_data_ptr() == x.data_ptr()


def test_numpy_of_a_tensor_that_requires_grad_is_allowed_under_no_grad():
    """torch refuses .numpy() on a tensor requiring grad only while grad mode is on (so a custom op's kernel,
    which runs below autograd, and `with no_grad(): x.numpy()` read the values)."""
    for lib in (ember, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
            x.numpy()
        with lib.no_grad():
            assert x.numpy().tolist() == [1.0, 1.0]
