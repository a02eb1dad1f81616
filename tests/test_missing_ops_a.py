"""Parity with torch for index_reduce, histogramdd, addmv_, geqrf/ormqr, the removed linear-algebra names,
Tensor.hardshrink / Tensor.prelu and empty_permuted: values, dtypes, shapes, errors and gradients beyond what
the op database's samples reach (ties, zeros, double backward, layouts, argument forms)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.testing.opdb import compare
from ember.testing.opdb.core import to_numpy

torch = pytest.importorskip("torch")

LIBS = (ember, torch)


def _outcome(fn, lib):
    """(result, None) or (None, (type name, message)) of fn(lib)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(lib), None
    except Exception as error:  # the parity check compares whatever torch raises
        return None, (type(error).__name__, str(error))


def _same_error(fn):
    """fn raises in torch, and ember raises the same exception type with the same message."""
    _, expected = _outcome(fn, torch)
    _, actual = _outcome(fn, ember)
    assert expected is not None, "torch did not raise"
    assert actual == expected


def _grads(lib, fn, arrays, cotangent_seed=0):
    """fn's output and the gradients of a fixed random cotangent with respect to every array (as float64)."""
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, *inputs)
    cotangent = np.random.default_rng(cotangent_seed).standard_normal(tuple(out.shape))
    if out.dtype.is_complex:
        cotangent = cotangent + 1j * np.random.default_rng(cotangent_seed + 1).standard_normal(tuple(out.shape))
    grad = (torch.autograd.grad if lib is torch else ember.autograd.grad)(
        [out], inputs, [lib.tensor(cotangent)], allow_unused=True)
    return to_numpy(out), [None if g is None else to_numpy(g) for g in grad]


def _assert_same_grads(fn, arrays, rtol=1e-10, atol=1e-12):
    expected_out, expected = _grads(torch, fn, arrays)
    actual_out, actual = _grads(ember, fn, arrays)
    np.testing.assert_allclose(actual_out, expected_out, rtol=rtol, atol=atol)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)


# ---------------------------------------------------------------- index_reduce


def _index_reduce(lib, x, source, dim, index, reduce, include_self):
    return lib.index_reduce(x, dim, lib.tensor(index), source, reduce, include_self=include_self)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8"])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_forward(dtype, reduce, include_self):
    """Exact equality with torch: ember folds in index order in the input's dtype, as ATen's kernel."""
    rng = np.random.default_rng(7)
    cases = [((3, 4), 0, (6, 4)), ((3, 5), 1, (3, 7)), ((6,), 0, (9,)), ((2, 3, 4), -1, (2, 3, 5)), ((), 0, ())]
    for shape, dim, source_shape in cases:
        size = shape[dim] if shape else 1
        count = source_shape[dim] if source_shape else 1
        index = rng.integers(0, size, count)
        if dtype in ("float32", "float64", "float16", "bfloat16"):
            x, source = rng.uniform(-3, 3, shape), rng.uniform(-3, 3, source_shape)
        else:
            low = 0 if dtype == "uint8" else -6
            x, source = rng.integers(low, 7, shape), rng.integers(low, 7, source_shape)
        results = []
        for lib in LIBS:
            lib_dtype = getattr(lib, dtype)
            results.append(_outcome(lambda lib: _index_reduce(
                lib, lib.tensor(x).to(lib_dtype), lib.tensor(source).to(lib_dtype), dim, index, reduce, include_self),
                lib))
        (actual, _), (expected, _) = results
        compare(actual, expected, dtype, {dtype: (0, 0)}, path=f"{shape} dim={dim}")


def test_index_reduce_nan_and_infinite_identity():
    x = np.array([[np.nan, 1.0, 2.0], [3.0, 4.0, 5.0]])
    source = np.array([[0.5, np.nan, -np.inf], [1.0, 1.0, 1.0]])
    for reduce in ("amax", "amin", "prod", "mean"):
        for include_self in (True, False):
            expected = _index_reduce(torch, torch.tensor(x), torch.tensor(source), 0, [0, 0], reduce, include_self)
            actual = _index_reduce(ember, ember.tensor(x), ember.tensor(source), 0, [0, 0], reduce, include_self)
            compare(actual, expected, "float64", {"float64": (0, 0)}, path=f"{reduce} {include_self}")


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_extremum_ties_gradient(reduce, include_self):
    """torch shares the gradient evenly among the elements equal to the result, self included."""
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [0.0, 0.0, 0.0]])
    source = np.array([[1.0, 2.0, -1.0], [1.0, 7.0, 3.0], [0.0, 0.0, 3.0]])
    index = [0, 0, 2]
    _assert_same_grads(lambda lib, a, b: _index_reduce(lib, a, b, 0, index, reduce, include_self), [x, source])


@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_prod_zeros_gradient(include_self):
    """Zeros in self, one zero or two zeros in source at one target: torch's masked formulas."""
    x = np.array([[0.0, 2.0, 3.0], [4.0, 5.0, 0.0]])
    source = np.array([[0.0, 2.0, 0.0], [3.0, 0.0, 0.0], [2.0, 0.5, 1.5]])
    index = [0, 0, 1]
    _assert_same_grads(lambda lib, a, b: _index_reduce(lib, a, b, 0, index, "prod", include_self), [x, source])


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_gradcheck(reduce, include_self):
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.permutation(np.linspace(0.5, 2.0, 8)).reshape(4, 2), requires_grad=True)
    source = ember.tensor(rng.permutation(np.linspace(-3.0, 3.1, 10)).reshape(5, 2), requires_grad=True)
    index = ember.tensor([3, 0, 3, 1, 3])

    def fn(a, b):
        return ember.index_reduce(a, 0, index, b, reduce, include_self=include_self)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.autograd.gradcheck(fn, (x, source))
        assert ember.autograd.gradgradcheck(fn, (x, source))


def test_index_reduce_prod_double_backward_error_with_two_zeros():
    def second_order(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64, requires_grad=True)
        source = lib.tensor([[0.0, 2.0], [0.0, 3.0]], dtype=lib.float64, requires_grad=True)
        out = lib.index_reduce(x, 0, lib.tensor([0, 0]), source, "prod")
        grad = (torch.autograd.grad if lib is torch else ember.autograd.grad)(out.sum(), [source], create_graph=True)
        return (torch.autograd.grad if lib is torch else ember.autograd.grad)(grad[0].sum(), [source])

    _same_error(second_order)


def test_index_reduce_inplace_and_autograd_through_it():
    for lib in LIBS:
        target = lib.ones(3, 2)
        version = target._version
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = target.index_reduce_(0, lib.tensor([0, 2, 0]), lib.tensor([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]),
                                          "prod")
        assert result is target and target._version > version
        assert to_numpy(target).tolist() == [[12.0, 21.0], [1.0, 1.0], [4.0, 5.0]]

    def inplace_on_view(lib, x, source):
        y = x * 2
        y.index_reduce_(1, lib.tensor([1, 1, 0]), source, "amax", include_self=False)
        return y

    rng = np.random.default_rng(0)
    _assert_same_grads(inplace_on_view, [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))])
    _same_error(lambda lib: lib.ones(2, requires_grad=True).index_reduce_(0, lib.tensor([0]), lib.ones(1), "amax"))


@pytest.mark.parametrize("call", [
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), L.ones(2,2), 'sum')",
    "L.ones(3,2).index_reduce(0, L.tensor([[0,1]]), L.ones(2,2), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0.,1.]), L.ones(2,2), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1], dtype=L.int16), L.ones(2,2), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,3]), L.ones(2,2), 'prod')",
    "L.ones(3).index_reduce(0, L.tensor([0,-1]), L.ones(2), 'mean')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), L.ones(2,2).double(), 'amin')",
    "L.ones(3,2).index_reduce(1, L.tensor([0,1]), L.ones(2), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1,2]), L.ones(2,2), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), L.ones(2,3), 'prod')",
    "L.ones(3,2).index_reduce(2, L.tensor([0,1]), L.ones(2,2), 'prod')",
    "L.tensor(5.).index_reduce(0, L.tensor([0,0]), L.tensor(1.), 'mean')",
    "L.tensor([5.]).index_reduce(0, L.tensor([0]), L.tensor(1.), 'mean')",
    "L.ones(2,0).index_reduce(1, L.tensor([0]), L.ones(2,1), 'mean')",
    "L.ones(3).bool().index_reduce(0, L.tensor([0]), L.ones(1).bool(), 'amax')",
    "L.ones(3,2).bool().index_reduce(0, L.tensor([0]), L.ones(1,2).bool(), 'mean')",
    "L.ones(3,2).bool().index_reduce(0, L.tensor([0]), L.ones(1,2).bool(), 'prod', include_self=False)",
    "L.ones(3,2).cfloat().index_reduce(0, L.tensor([0]), L.ones(1,2).cfloat(), 'amin')",
    "L.ones(3).cfloat().index_reduce(0, L.tensor([0]), L.ones(1).cfloat(), 'prod')",
    "L.ones(3,2).index_reduce(0, [0, 1], L.ones(2,2), 'prod')",
    "L.index_reduce(L.ones(3,2), 0, [0, 1], L.ones(2,2), 'prod')",
    "L.index_reduce([1.], 0, L.tensor([0]), L.ones(1), 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), 2.0, 'prod')",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), L.ones(2,2), 1)",
    "L.ones(3,2).index_reduce(0, L.tensor([0,1]), L.ones(2,2), 'prod', include_self=None)",
])
def test_index_reduce_errors(call):
    _same_error(eval("lambda L: " + call))


def test_index_reduce_values_and_warning():
    from ember._ops import index_reduce as module

    module._warned = False
    with pytest.warns(UserWarning, match=r"index_reduce\(\) is in beta"):
        result = ember.index_reduce(ember.tensor([1.0, 2.0]), 0, ember.tensor([1, 1]), ember.tensor([3.0, 5.0]),
                                    "mean", include_self=False)
    assert result.tolist() == [1.0, 4.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # only the first call warns, as torch's TORCH_WARN_ONCE
        ember.tensor([1.0]).index_reduce(0, ember.tensor([0]), ember.tensor([2.0]), "amax")


# ---------------------------------------------------------------- histogramdd


def _histogramdd_both(points, bins, **kwargs):
    results = []
    for lib in LIBS:
        lib_bins = [lib.tensor(b) for b in bins] if isinstance(bins, list) and isinstance(bins[0], np.ndarray) \
            else bins
        lib_kwargs = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        results.append(lib.histogramdd(lib.tensor(points), lib_bins, **lib_kwargs))
    return results


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kwargs", [
    {"bins": 5},
    {"bins": [3, 4]},
    {"bins": (2, 6), "range": [-1.0, 1.0, -0.5, 2.0]},
    {"bins": [4, 4], "weight": True},
    {"bins": [4, 3], "weight": True, "density": True},
    {"bins": "tensors"},
    {"bins": "tensors", "weight": True, "density": True},
])
def test_histogramdd(dtype, kwargs):
    rng = np.random.default_rng(1)
    points = rng.normal(size=(200, 2)).astype(dtype)
    points[0] = (4.0, 0.0)
    kwargs = dict(kwargs)
    bins = kwargs.pop("bins")
    if bins == "tensors":
        bins = [np.array([-2.0, -0.5, 0.0, 0.25, 3.0], dtype), np.array([-1.0, 0.0, 1.5], dtype)]
    if kwargs.pop("weight", False):
        kwargs["weight"] = rng.uniform(0, 2, size=200).astype(dtype)
    actual, expected = _histogramdd_both(points, bins, **kwargs)
    assert type(actual).__name__ == "histogramdd" and actual._fields == ("hist", "bin_edges")
    assert isinstance(actual.bin_edges, tuple) and len(actual.bin_edges) == 2
    compare(actual.hist, expected.hist, dtype, {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12)})
    for a, e in zip(actual.bin_edges, expected.bin_edges):
        compare(a, e, dtype, {"float32": (1e-6, 1e-6), "float64": (1e-12, 1e-12)})
    if "weight" not in kwargs and not kwargs.get("density"):
        assert actual.hist.sum().item() == expected.hist.sum().item()  # the same points counted


def test_histogramdd_shapes_and_identity():
    rng = np.random.default_rng(2)
    points = rng.normal(size=(3, 4, 3)).astype(np.float32)
    actual, expected = _histogramdd_both(points, [2, 3, 4], weight=rng.uniform(size=(3, 4)).astype(np.float32))
    compare(actual.hist, expected.hist, "float32")
    assert tuple(actual.hist.shape) == (2, 3, 4)
    edges = [ember.tensor([0.0, 1.0]), ember.tensor([-1.0, 0.0, 1.0]), ember.tensor([0.0, 2.0])]
    result = ember.histogramdd(ember.tensor(points), edges)
    assert all(a is b for a, b in zip(result.bin_edges, edges))  # torch returns the given edge tensors
    empty_actual, empty_expected = _histogramdd_both(np.zeros((0, 2), np.float32), 3, density=True)
    compare(empty_actual, empty_expected, "float32")
    none_actual, none_expected = _histogramdd_both(np.zeros((4, 0), np.float32), 3)
    compare(none_actual, none_expected, "float32")
    grad_input = ember.tensor(points, requires_grad=True)
    assert not ember.histogramdd(grad_input, 2).hist.requires_grad


def test_histogramdd_half_with_range():
    points = np.array([[0.1, 0.2], [0.5, 0.9], [0.33, 0.66], [0.66, 0.1]], np.float32)
    weight = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    results = [lib.histogramdd(lib.tensor(points).half(), 3, range=[0.0, 1.0, 0.0, 1.0],
                               weight=lib.tensor(weight).half(), density=True) for lib in LIBS]
    compare(results[0], results[1], "float16", {"float16": (0, 0)})


@pytest.mark.parametrize("call", [
    "L.histogramdd(L.ones(5), 3)",
    "L.histogramdd(L.ones(5, 2), [3])",
    "L.histogramdd(L.ones(5, 2), [3, 0])",
    "L.histogramdd(L.ones(5, 2), [-1, 3])",
    "L.histogramdd(L.ones(5, 2), [-2, 3])",
    "L.histogramdd(L.ones(5, 2), [3, 3], range=[0., 1.])",
    "L.histogramdd(L.ones(5, 2), [3, 3], range=[1., 0., 0., 1.])",
    "L.histogramdd(L.ones(5, 2), [3, 3], range=[0., float('inf'), 0., 1.])",
    "L.histogramdd(L.tensor([[0., float('nan')], [1., 1.]]), 2)",
    "L.histogramdd(L.ones(5, 2), [3, 3], weight=L.ones(5).double())",
    "L.histogramdd(L.ones(5, 2), [3, 3], weight=L.ones(5, 1))",
    "L.histogramdd(L.ones(5, 2), [L.ones(3)])",
    "L.histogramdd(L.ones(5, 2), [L.ones(3), L.ones(3).double()])",
    "L.histogramdd(L.ones(5, 2), [L.ones(3), L.ones(1, 3)])",
    "L.histogramdd(L.ones(5, 2), [L.ones(3), L.ones(0)])",
    "L.histogramdd(L.ones(5, 2), [L.ones(3), L.ones(1)])",
    "L.histogramdd(L.ones(5, 2).half(), 3)",
    "L.histogramdd(L.ones(5, 2).long(), 3)",
    "L.histogramdd(L.ones(5, 2).long(), 3, range=[0., 1., 0., 1.])",
    "L.histogramdd(L.ones(5, 2).bool(), 3, range=[0., 1., 0., 1.])",
    "L.histogramdd(L.ones(5, 2), 3.0)",
    "L.histogramdd(L.ones(5, 2), L.ones(3))",
    "L.histogramdd(L.ones(5, 2), [3.0, 3])",
])
def test_histogramdd_errors(call):
    _same_error(eval("lambda L: " + call))


# ---------------------------------------------------------------- addmv_


def test_addmv_inplace_function():
    rng = np.random.default_rng(4)
    vector, matrix, other = rng.standard_normal(3), rng.standard_normal((3, 4)), rng.standard_normal(4)
    results = []
    for lib in LIBS:
        target = lib.tensor(vector)
        result = lib.addmv_(target, lib.tensor(matrix), lib.tensor(other), beta=0.5, alpha=-2)
        assert result is target
        results.append(result)
    compare(results[0], results[1], "float64")
    _assert_same_grads(lambda lib, v, m, o: lib.addmv_(v * 1, m, o, alpha=3), [vector, matrix, other])


@pytest.mark.parametrize("call", [
    "L.addmv_(L.ones(2).double(), L.ones(2, 3), L.ones(3))",
    "L.addmv_(L.ones(2), L.ones(2, 3), L.ones(3).double())",
    "L.addmv_(L.ones(1), L.ones(2, 3), L.ones(3))",
    "L.addmv_(L.ones(()), L.ones(2, 3), L.ones(3))",
    "L.addmv_(L.ones(2, 1), L.ones(2, 3), L.ones(3))",
    "L.addmv_(L.ones(2), L.ones(2, 4), L.ones(3))",
    "L.addmv_([1., 1.], L.ones(2, 3), L.ones(3))",
    "L.addmv_(L.ones(2, requires_grad=True), L.ones(2, 3), L.ones(3))",
    "L.addmv(L.ones(2), L.ones(2, 3).double(), L.ones(3))",
    "L.ones(1).addmv_(L.ones(2, 3), L.ones(3))",
])
def test_addmv_errors(call):
    _same_error(eval("lambda L: " + call))


# ---------------------------------------------------------------- geqrf, ormqr


@pytest.mark.parametrize("dtype", ["float64", "complex128", "float32"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (2, 4, 3)])
def test_geqrf_matches_lapack_layout(dtype, shape):
    rng = np.random.default_rng(5)
    A = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        A = A + 1j * rng.standard_normal(shape)
    A = A.astype(dtype)
    actual, expected = ember.geqrf(ember.tensor(A)), torch.geqrf(torch.tensor(A))
    assert type(actual).__name__ == "geqrf" and actual._fields == ("a", "tau")
    tolerance = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12), "complex128": (1e-12, 1e-12)}
    compare(actual, expected, dtype, tolerance)
    assert actual.a.stride() == expected.a.stride()  # column-major, as LAPACK writes it
    # the reflectors and R rebuild A: Q = householder_product(a, tau) (first n columns), R = triu(a)
    k = min(shape[-2], shape[-1])
    Q = ember.linalg.householder_product(actual.a[..., :, :k], actual.tau)
    np.testing.assert_allclose(to_numpy(Q @ actual.a.triu()[..., :k, :]), A, rtol=1e-4, atol=1e-4)


def test_geqrf_out_empty_and_method():
    A = np.random.default_rng(6).standard_normal((4, 3))
    out = (ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.float64))
    result = ember.geqrf(ember.tensor(A), out=out)
    assert result[0] is out[0] and result[1] is out[1]
    compare(out, torch.geqrf(torch.tensor(A)), "float64")
    compare(ember.tensor(A).geqrf(), torch.tensor(A).geqrf(), "float64")
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        compare(ember.geqrf(ember.zeros(shape)), torch.geqrf(torch.zeros(shape)), "float32")


def test_geqrf_has_no_derivative():
    for lib in LIBS:
        result = lib.geqrf(lib.ones(3, 2, dtype=lib.float64, requires_grad=True) + lib.eye(3, 2, dtype=lib.float64))
        assert result.a.grad_fn.name() == "GeqrfBackward0" and result.tau.requires_grad
    _same_error(lambda lib: lib.geqrf(lib.eye(3, 2, dtype=lib.float64).requires_grad_()).tau.sum().backward())
    _same_error(lambda lib: lib.geqrf(lib.eye(3, 2, dtype=lib.float64).requires_grad_()).a.sum().backward())


@pytest.mark.parametrize("complex_values", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shapes", [((5, 3), (5, 2), (2, 5)), ((3, 5), (3, 4), (4, 3)), ((2, 4, 4), (2, 4, 3),
                                                                                          (2, 3, 4))])
def test_ormqr_values_and_gradients(complex_values, left, transpose, shapes):
    """ormqr on geqrf's factors and on arbitrary (input, tau): Q applied, and torch's gradients for all three."""
    rng = np.random.default_rng(8)
    input_shape, left_shape, right_shape = shapes

    def draw(shape):
        values = rng.standard_normal(shape)
        return values + 1j * rng.standard_normal(shape) if complex_values else values

    A = draw(input_shape)
    a, tau = (to_numpy(t) for t in torch.geqrf(torch.tensor(A)))
    other = draw(left_shape if left else right_shape)
    _assert_same_grads(lambda lib, x, t, c: lib.ormqr(x, t, c, left, transpose), [np.ascontiguousarray(a), tau, other],
                       rtol=1e-9, atol=1e-10)
    random_tau = draw(tau.shape)
    _assert_same_grads(lambda lib, x, t, c: lib.ormqr(x, t, c, left=left, transpose=transpose), [A, random_tau, other],
                       rtol=1e-9, atol=1e-10)


def test_ormqr_gradcheck_and_forms():
    rng = np.random.default_rng(9)
    a, tau, other = rng.standard_normal((4, 3)), rng.uniform(0.2, 1.5, 3), rng.standard_normal((2, 4))
    inputs = tuple(ember.tensor(v, requires_grad=True) for v in (a, tau, other))

    def fn(x, t, c):
        return ember.ormqr(x, t, c, False, True)

    assert ember.autograd.gradcheck(fn, inputs)
    assert ember.autograd.gradgradcheck(fn, inputs)
    expected = torch.tensor(a).ormqr(input2=torch.tensor(tau), input3=torch.tensor(other), left=False)
    compare(ember.tensor(a).ormqr(input2=ember.tensor(tau), input3=ember.tensor(other), left=False), expected,
            "float64")
    out = ember.empty(0, dtype=ember.float64)
    assert ember.ormqr(*(ember.tensor(v) for v in (a, tau, other)), left=False, out=out) is out
    compare(out, expected, "float64")
    identity = ember.ormqr(ember.tensor(a), ember.tensor(tau), ember.eye(4, dtype=ember.float64))
    padded = ember.cat([ember.tensor(a), ember.zeros(4, 1, dtype=ember.float64)], 1)
    compare(identity, ember.linalg.householder_product(padded, ember.tensor(tau)), "float64")


@pytest.mark.parametrize("call", [
    "L.ormqr(L.ones(3), L.ones(3), L.ones(4, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(3), L.ones(2))",
    "L.ormqr(L.ones(4, 3), L.ones(3), L.ones(3, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(3), L.ones(2, 3), left=False)",
    "L.ormqr(L.ones(2, 3), L.ones(3), L.ones(2, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(4), L.ones(4, 2))",
    "L.ormqr(L.ones(2, 3), L.tensor(1.), L.ones(2, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(1, 3), L.ones(4, 2))",
    "L.ormqr(L.ones(2, 4, 3), L.ones(3), L.ones(2, 4, 2))",
    "L.ormqr(L.ones(2, 4, 3), L.ones(3, 3), L.ones(2, 4, 2))",
    "L.ormqr(L.ones(2, 4, 3), L.ones(2, 3), L.ones(3, 4, 2))",
    "L.ormqr(L.ones(2, 4, 3), L.ones(2, 3), L.ones(4, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(3), L.ones(4, 2).double())",
    "L.ormqr(L.ones(4, 3), L.ones(3).double(), L.ones(4, 2))",
    "L.ormqr(L.ones(4, 3).half(), L.ones(3).half(), L.ones(4, 2).half())",
    "L.ormqr(L.ones(4, 3).long(), L.ones(3).long(), L.ones(4, 2).long())",
    "L.ormqr(L.ones(4, 3), [1.], L.ones(4, 2))",
    "L.ormqr(L.ones(4, 3), L.ones(3), L.ones(4, 2), left=1)",
    "L.geqrf(L.ones(3))",
    "L.geqrf(L.ones(()))",
    "L.geqrf(L.ones(3, 2).half())",
    "L.geqrf(L.ones(3, 2).bfloat16())",
    "L.geqrf(L.ones(3, 2).long())",
    "L.geqrf(L.ones(3, 2).bool())",
    "L.geqrf([[1.]])",
])
def test_householder_errors(call):
    _same_error(eval("lambda L: " + call))


# ---------------------------------------------------------------- removed linear-algebra names


@pytest.mark.parametrize("call", [
    "L.solve(L.ones(3, 2), L.eye(3))",
    "L.ones(3, 2).solve(L.eye(3))",
    "L.eig(L.eye(3))",
    "L.eig(L.eye(3), True)",
    "L.eye(3).eig(eigenvectors=True)",
    "L.symeig(L.eye(3))",
    "L.symeig(L.eye(3), eigenvectors=True, upper=False)",
    "L.eye(3).symeig()",
    "L.lstsq(L.ones(3, 2), L.eye(3))",
    "L.ones(3, 2).lstsq(L.eye(3))",
    "L.matrix_rank(L.eye(3))",
    "L.matrix_rank(L.eye(3), 1e-3, True)",
    "L.eye(3).matrix_rank()",
])
def test_removed_linalg_functions(call):
    _same_error(eval("lambda L: " + call))


def test_removed_linalg_error_type_and_pointer():
    with pytest.raises(RuntimeError, match=r"torch.linalg.solve\(A, B\)$"):
        ember.solve(ember.ones(3, 2), ember.eye(3))
    with pytest.raises(RuntimeError, match="is now removed"):
        ember.eye(2).symeig(eigenvectors=True)


# ---------------------------------------------------------------- Tensor.hardshrink, Tensor.prelu


def test_hardshrink_and_prelu_methods():
    rng = np.random.default_rng(10)
    x = rng.uniform(-2, 2, (2, 3, 4))
    _assert_same_grads(lambda lib, t: t.hardshrink(), [x])
    _assert_same_grads(lambda lib, t: t.hardshrink(0.9), [x])
    _assert_same_grads(lambda lib, t: t.hardshrink(lambd=-0.5), [x])
    _assert_same_grads(lambda lib, t, w: t.prelu(w), [x, rng.uniform(0, 1, 3)])
    _assert_same_grads(lambda lib, t, w: t.prelu(weight=w), [x, rng.uniform(0, 1, 1)])
    _assert_same_grads(lambda lib, t, w: t.prelu(w), [np.array(-1.5), np.array([0.25])])
    for lib in LIBS:
        assert lib.ones(3, dtype=lib.float16).hardshrink(0.3).dtype == lib.float16


@pytest.mark.parametrize("call", [
    "L.ones(2, dtype=L.int32).hardshrink()",
    "L.ones(2, dtype=L.bool).hardshrink()",
    "L.ones(2, dtype=L.cfloat).hardshrink()",
    "L.nn.functional.hardshrink(L.ones(2, dtype=L.int64))",
    "L.ones(2, 3).hardshrink('a')",
    "L.ones(2, 2).prelu(L.ones(3))",
    "L.ones(2).prelu(L.ones(2))",
    "L.ones(()).prelu(L.ones(2))",
    "L.ones(2, 3).prelu(L.ones(3, 1))",
    "L.ones(2, 3).prelu(L.ones(1).double())",
    "L.ones(2, 3).prelu(0.25)",
    "L.ones(2, 2, dtype=L.int32).prelu(L.ones(1, dtype=L.int32))",
])
def test_hardshrink_prelu_errors(call):
    _same_error(eval("lambda L: " + call))


# ---------------------------------------------------------------- empty_permuted


@pytest.mark.parametrize("size,layout", [((2, 3, 5, 7), (0, 2, 3, 1)), ((2, 3, 5, 7), (3, 2, 1, 0)),
                                         ((2, 3, 5, 7), (0, 1, 2, 3)), ((4, 6), [1, 0]), ((), ()), ((3,), (0,))])
def test_empty_permuted_layout(size, layout):
    actual, expected = ember.empty_permuted(size, layout), torch.empty_permuted(size, layout)
    assert tuple(actual.shape) == tuple(expected.shape)
    assert actual.stride() == expected.stride()
    assert actual.is_contiguous() == expected.is_contiguous()
    assert actual.dtype == ember.float32 and actual._base is None and actual.storage_offset() == 0
    actual.fill_(2.0)  # dense and writable
    assert float(actual.sum()) == 2.0 * max(1, int(np.prod(size)))


def test_empty_permuted_options():
    for lib in LIBS:
        t = lib.empty_permuted((2, 3), (1, 0), dtype=lib.float64, requires_grad=True)
        assert t.dtype == lib.float64 and t.requires_grad and t.is_leaf and t.grad_fn is None
        assert lib.empty_permuted(lib.Size([2, 3]), (1, 0), layout=lib.strided, device="cpu",
                                  pin_memory=False).stride() == (1, 2)
        assert lib.empty_permuted([2, 3], [1, 0], dtype=lib.int32).dtype == lib.int32


@pytest.mark.parametrize("call", [
    "L.empty_permuted((2, 3), (0,))",
    "L.empty_permuted((2, 3), (0, 0))",
    "L.empty_permuted((2, 3), (0, 2))",
    "L.empty_permuted((2, 3), (1, -1))",
    "L.empty_permuted((2, -3), (1, 0))",
    "L.empty_permuted((2, 3), (1, 0), dtype=L.int64, requires_grad=True)",
    "L.empty_permuted(2, (1, 0))",
    "L.empty_permuted((2, 3), 1)",
    "L.empty_permuted((2, 3.5), (0, 1))",
    "L.empty_permuted((2, 3), (0, 1.))",
])
def test_empty_permuted_errors(call):
    _same_error(eval("lambda L: " + call))
