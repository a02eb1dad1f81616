"""Parity with torch for what the op database doesn't drive: histogram's (hist, bin_edges), named result
tuples (frexp, lu family), warnings, and argument-combination errors of statistics and calculus functions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing.opdb import compare

torch = pytest.importorskip("torch")


def _both(array):
    return ember.tensor(array), torch.tensor(array)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", [
    {"bins": 5},
    {"bins": 4, "range": (-1.0, 2.5)},
    {"bins": 7, "density": True},
    {"bins": 3, "weight": True},
    {"bins": 3, "weight": True, "density": True},
    {"bins": "tensor"},
    {"bins": "tensor", "density": True},
])
def test_histogram(dtype, kwargs):
    rng = np.random.default_rng(0)
    data = rng.normal(size=(4, 6)).astype(dtype)
    data[0, 0] = 3.0  # an element outside the given range
    ember_args, torch_args = dict(kwargs), dict(kwargs)
    if kwargs.get("weight"):
        weight = rng.uniform(0, 2, size=(4, 6)).astype(dtype)
        ember_args["weight"], torch_args["weight"] = _both(weight)
    if kwargs["bins"] == "tensor":
        edges = np.array([-2.0, -0.5, 0.0, 0.25, 3.0], dtype)
        ember_args["bins"], torch_args["bins"] = _both(edges)
    x_ember, x_torch = _both(data)
    actual = ember.histogram(x_ember, **ember_args)
    expected = torch.histogram(x_torch, **torch_args)
    compare(tuple(actual), tuple(expected), dtype)
    assert type(actual).__name__ == "histogram" and actual.hist is actual[0]
    method = x_ember.histogram(**ember_args)
    compare(tuple(method), tuple(expected), dtype)


@pytest.mark.parametrize("data", [[], [1.0, 1.0, 1.0], [0.0, 1.0, 2.0, 3.0, 4.0]])
def test_histogram_edge_cases(data):
    x_ember, x_torch = _both(np.array(data, np.float32))
    compare(tuple(ember.histogram(x_ember, 3)), tuple(torch.histogram(x_torch, 3)), "float32")


def test_histogram_out():
    x_ember, x_torch = _both(np.arange(6, dtype=np.float32))
    hist, edges = ember.empty(0), ember.empty(0)
    result = ember.histogram(x_ember, 3, out=(hist, edges))
    assert result[0] is hist and result[1] is edges
    compare((hist, edges), tuple(torch.histogram(x_torch, 3)), "float32")


@pytest.mark.parametrize("call,error", [
    (lambda lib, x: lib.histogram(x, 3, range=(1.0, 0.0)), "min should not exceed max"),
    (lambda lib, x: lib.histogram(x, -1), "bins must be > 0, but got -1"),
    (lambda lib, x: lib.histogram(x, 3, weight=lib.ones(3)), "if weight tensor is provided it should have"),
    (lambda lib, x: lib.histogram(x, lib.tensor([[0.0, 1.0]])), "bins tensor should have one dimension"),
    (lambda lib, x: lib.histogram(x, lib.tensor([0.0, 1.0], dtype=lib.float64)), "should have the same dtype"),
    (lambda lib, x: lib.histogram(x, 3, range=(0.0, float("inf"))), r"range \[0, inf\] is not finite"),
    (lambda lib, x: lib.histogram(x.long(), 3), "\"histogramdd\" not implemented for 'Long'"),
])
def test_histogram_errors(call, error):
    x_ember, x_torch = _both(np.arange(6, dtype=np.float32))
    with pytest.raises(Exception) as expected:
        call(torch, x_torch)
    with pytest.raises(type(expected.value), match=error):
        call(ember, x_ember)


def test_frexp_named_tuple_and_out():
    x_ember, x_torch = _both(np.array([0.0, 3.5, -0.3, 1e-40, np.inf], np.float32))
    mantissa, exponent = ember.frexp(x_ember)
    result = ember.frexp(x_ember)
    assert type(result).__name__ == "frexp" and result.mantissa is result[0]
    compare((mantissa, exponent), tuple(torch.frexp(x_torch)), "float32")
    outs = (ember.empty(0), ember.empty(0, dtype=ember.int32))
    assert ember.frexp(x_ember, out=outs)[0] is outs[0]
    compare(outs, tuple(torch.frexp(x_torch)), "float32")


def test_lu_family_result_types():
    A = np.random.default_rng(1).normal(size=(2, 3, 3))
    a_ember, a_torch = _both(A)
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        packed = ember.lu(a_ember, get_infos=True)
    assert type(packed).__name__ == "_lu_with_info"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(tuple(packed), tuple(torch.lu(a_torch, get_infos=True)), "float64")
    for name, fields in [("lu_factor", ("LU", "pivots")), ("lu_factor_ex", ("LU", "pivots", "info")),
                         ("lu", ("P", "L", "U"))]:
        result = getattr(ember.linalg, name)(a_ember)
        assert result._fields == fields
        compare(tuple(result), tuple(getattr(torch.linalg, name)(a_torch)), "float64")
    unpacked = ember.lu_unpack(*ember.linalg.lu_factor(a_ember))
    P, L, U = unpacked
    np.testing.assert_allclose((P @ L @ U).numpy(), A, atol=1e-12)
    with pytest.raises(RuntimeError, match="zero and using it on lu_solve"):
        ember.linalg.lu_factor(ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented"):
        ember.linalg.lu_factor(a_ember, pivot=False)
    with pytest.raises(RuntimeError, match="int32 dtype"):
        ember.lu_unpack(a_ember, ember.ones(2, 3, dtype=ember.int64))


def test_cov_method_and_warning():
    data = np.random.default_rng(2).normal(size=(3, 4))
    x_ember, x_torch = _both(data)
    compare(x_ember.cov(correction=0), x_torch.cov(correction=0), "float64")
    compare(x_ember.corrcoef(), x_torch.corrcoef(), "float64")
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        result = ember.cov(x_ember, correction=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(result, torch.cov(x_torch, correction=4), "float64")


def test_calculus_argument_errors():
    y_ember, y_torch = _both(np.ones(4, np.float32))
    for lib, y in ((torch, y_torch), (ember, y_ember)):
        with pytest.raises(TypeError):
            lib.trapezoid(y, y, dx=2)
        with pytest.raises(TypeError):
            lib.trapz(y, 2)
        with pytest.raises(TypeError):
            lib.gradient(y, spacing=lib.ones(4))
        with pytest.raises(TypeError):
            lib.ldexp(y, 2)
        with pytest.raises(TypeError):
            lib.nextafter(y, 0.0)
        with pytest.raises(IndexError):
            lib.trapezoid(y[0])
        with pytest.raises(IndexError):
            lib.cumulative_trapezoid(y[0])
    assert ember.gradient(ember.tensor(1.0)) == () == torch.gradient(torch.tensor(1.0))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        ember.arange(3).ldexp_(ember.arange(3))


@pytest.mark.parametrize("p", [0.5, 3.0, float("inf")])
def test_distances_larger(p):
    """cdist's matmul form (more than 25 rows, p = 2) and the direct form, pdist on more rows."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(30, 4)), rng.normal(size=(7, 4))
    for lib_args in [(a, b)]:
        e = [ember.tensor(v, requires_grad=True) for v in lib_args]
        t = [torch.tensor(v, requires_grad=True) for v in lib_args]
        for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
            actual, expected = ember.cdist(*e, p=2.0, compute_mode=mode), torch.cdist(*t, p=2.0, compute_mode=mode)
            compare(actual, expected, "float64")
            compare(ember.autograd.grad(actual.sum(), e), torch.autograd.grad(expected.sum(), t), "float64")
        compare(ember.cdist(*e, p=p), torch.cdist(*t, p=p), "float64")
        actual, expected = ember.pdist(e[0], p), torch.pdist(t[0], p)
        compare(actual, expected, "float64")
        compare(ember.autograd.grad(actual.sum(), e[0]), torch.autograd.grad(expected.sum(), t[0]), "float64")


def test_renorm_general_p_and_inplace():
    data = np.random.default_rng(4).normal(size=(3, 5)) * 3
    x_ember, x_torch = _both(data)
    compare(ember.renorm(x_ember, 3, 1, 2.0), torch.renorm(x_torch, 3, 1, 2.0), "float64")
    mine = x_ember.clone()
    assert mine.renorm_(2, 0, 1.5) is mine
    compare(mine, x_torch.clone().renorm_(2, 0, 1.5), "float64")


def test_matrix_exp_grad_and_large_batch():
    rng = np.random.default_rng(5)
    A = rng.normal(size=(4, 5, 5)) * np.array([0.01, 1.0, 5.0, 30.0])[:, None, None]
    a_ember = ember.tensor(A, requires_grad=True)
    a_torch = torch.tensor(A, requires_grad=True)
    actual, expected = ember.linalg.matrix_exp(a_ember), torch.linalg.matrix_exp(a_torch)
    compare(actual, expected, "float64", {"float64": (1e-9, 1e-9)})
    cotangent = rng.normal(size=A.shape)
    grads = ember.autograd.grad(actual, a_ember, ember.tensor(cotangent))
    expected_grads = torch.autograd.grad(expected, a_torch, torch.tensor(cotangent))
    np.testing.assert_allclose(grads[0].numpy(), expected_grads[0].numpy(), rtol=1e-7,
                               atol=1e-7 * np.abs(expected_grads[0].numpy()).max())


def test_histogram_on_emulated_cuda():
    """histogram's impl uses only `xp` (it is not an OpInfo, so tests/cuda doesn't drive it)."""
    from ember import _backends

    was = _backends.cuda_is_emulated()
    _backends.emulate_cuda(True)
    try:
        x = ember.tensor(np.random.default_rng(6).normal(size=20).astype(np.float32))
        weight = ember.rand(20)
        for bins in (4, ember.tensor([-1.0, 0.0, 0.5, 2.0])):
            expected = ember.histogram(x, bins, weight=weight, density=True)
            device_bins = bins.to("cuda") if isinstance(bins, ember.Tensor) else bins
            actual = ember.histogram(x.to("cuda"), device_bins, weight=weight.to("cuda"), density=True)
            assert actual.hist.device.type == "cuda"
            compare((actual.hist.cpu(), actual.bin_edges.cpu()), tuple(expected), "float32")
    finally:
        _backends.emulate_cuda(was)
