"""Autograd edges found by comparing with torch: which saved inputs a backward checks for in-place changes,
views made under no_grad then written with grad on, and integer dtype= of reductions and scans."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("form", ["matmul", "mul", "linear"])  # (torch's convolution saves both: it raises)
def test_an_input_no_gradient_reads_may_change_before_backward(form):
    """torch saves only what a needed gradient reads: a parameter updated in place under no_grad between
    forward and backward is fine when the other operand needs no gradient (ember raised a version error)."""
    results = []
    for lib in (ember, torch):
        p = lib.ones(3, 3, requires_grad=True)
        x = lib.ones(3, 3)
        y = {"matmul": lambda: x @ p, "mul": lambda: x * p, "linear": lambda: lib.nn.functional.linear(x, p)}[form]().sum()
        with lib.no_grad():
            p.add_(1)
        y.backward()
        results.append(p.grad.numpy())
    np.testing.assert_array_equal(*results)


def test_a_changed_input_a_gradient_reads_still_raises():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        p = lib.ones(3, requires_grad=True)
        y = (x * p).sum()
        with lib.no_grad():
            p.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()


def test_view_made_under_no_grad_written_with_grad_raises():
    for lib in (ember, torch):
        x = lib.ones(3, requires_grad=True)
        y = x * 1
        with lib.no_grad():
            v = y[:2]
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            v.mul_(5.0)
        p = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            w = p[:2]
        with pytest.raises(RuntimeError, match="created in no_grad mode"):
            w.mul_(2.0)
        with lib.no_grad():
            w.mul_(2.0)  # inside no_grad: allowed


def test_integer_dtype_of_reductions_and_scans():
    outs = []
    for lib in (ember, torch):
        x = lib.tensor([100, 100, 100], dtype=lib.int32)
        results = (x.sum(dtype=lib.int8), x.sum(0, dtype=lib.int32), x.prod(dtype=lib.int16),
                   x.cumsum(0, dtype=lib.int8), lib.tensor([1.5, 2.5]).sum(dtype=lib.int32))
        outs.append([(str(r.dtype).split(".")[-1], r.tolist()) for r in results])
    assert outs[0] == outs[1]


def test_int32_indices_for_gather_and_scatter():
    outs = []
    for lib in (ember, torch):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_()
        i = lib.tensor([[1], [0], [2]], dtype=lib.int32)
        results = [x.gather(1, i), x.scatter(1, i, 1.0), x.scatter_add(1, i, lib.ones(3, 1)),
                   x.scatter_reduce(1, i, lib.ones(3, 1), "sum")]
        sum(r.sum() for r in results).backward()
        outs.append([r.detach().numpy() for r in results] + [x.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(RuntimeError, match="int32/int64"):
        ember.arange(4.0).gather(0, ember.tensor([0], dtype=ember.int16))


def test_meta_gradients_accumulate_when_an_input_is_used_twice():
    q = ember.randn(1, 1, 4, 2, device="meta", requires_grad=True)
    ember.nn.functional.scaled_dot_product_attention(q, q, q).sum().backward()
    assert q.grad.shape == q.shape and q.grad.device.type == "meta"
