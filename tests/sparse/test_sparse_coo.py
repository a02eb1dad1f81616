"""Sparse COO tensors (ember/_ops/sparse_ops.py, sparse_kernels.py, ember/sparse) against real torch:
values, indices, coalescing flags, reprs, errors, gradients, sparse embedding gradients, optimizer steps and
serialization."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message="Sparse invariant checks")

INDICES = [[1, 0, 1, 0], [2, 0, 2, 1]]  # (1, 2) twice: uncoalesced
VALUES = [3.0, 4.0, 5.0, -2.0]


def pair(indices=INDICES, values=VALUES, size=(2, 3), dtype="float32", requires_grad=False):
    e = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor(values, dtype=getattr(ember, dtype)), size,
                                requires_grad=requires_grad)
    t = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values, dtype=getattr(torch, dtype)), size,
                                requires_grad=requires_grad)
    return e, t


def dense_pair(array, requires_grad=False):
    array = np.asarray(array, np.float32)
    return (ember.tensor(array).requires_grad_(requires_grad), torch.tensor(array).requires_grad_(requires_grad))


def same_repr(e, t):
    assert repr(e).replace("ember.", "torch.") == repr(t)


def check(e, t, rtol=1e-6, atol=1e-6):
    """Same layout, shape, dtype name and values; for sparse, same indices, values and is_coalesced."""
    assert e.is_sparse == t.is_sparse
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    if t.is_sparse:
        assert e.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(e._values().detach().numpy(), t._values().detach().numpy(), rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def check_dense_equal(e, t, rtol=1e-6, atol=1e-6):
    """Same tensor up to layout details: compares to_dense() values (for grads accumulated in other orders)."""
    assert e.is_sparse == t.is_sparse
    e_dense = e.to_dense() if e.is_sparse else e
    t_dense = t.to_dense() if t.is_sparse else t
    np.testing.assert_allclose(e_dense.detach().numpy(), t_dense.detach().numpy(), rtol=rtol, atol=atol)


# ---------------------------------------------------------------- construction, metadata, repr


def test_metadata_and_layout():
    e, t = pair()
    assert e.layout is ember.sparse_coo and repr(e.layout) == repr(t.layout)
    assert ember.ones(2).layout is ember.strided and not ember.ones(2).is_sparse
    for name in ("sparse_dim", "dense_dim", "_nnz", "is_coalesced", "dim", "numel"):
        assert getattr(e, name)() == getattr(t, name)(), name
    assert tuple(e.shape) == tuple(t.shape) and e.dtype is ember.float32 and e.device.type == "cpu"
    check(e, t)
    np.testing.assert_array_equal(e.to_dense().numpy(), t.to_dense().numpy())


@pytest.mark.parametrize("case", ["plain", "coalesced", "float64", "int32", "dense_dims", "empty", "grad",
                                  "inferred"])
def test_repr(case):
    if case == "plain":
        e, t = pair()
    elif case == "coalesced":
        e, t = pair()
        e, t = e.coalesce(), t.coalesce()
    elif case == "float64":
        e, t = pair(dtype="float64")
    elif case == "int32":
        e, t = pair(values=[1, 2, 3, 4], dtype="int32")
    elif case == "dense_dims":
        e, t = pair(indices=[[1, 0, 1]], values=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], size=(2, 2))
    elif case == "empty":
        e, t = pair(indices=[[], []], values=[], size=(2, 3))
    elif case == "grad":
        e, t = pair(requires_grad=True)
        same_repr(e, t)
        e, t = e * 2, t * 2
    else:
        e = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0])
        t = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0])
    same_repr(e, t)


def test_construction_options_and_errors():
    e = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2], dtype=ember.float64)
    t = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1, 2], dtype=torch.float64)
    check(e, t)
    e, t = (m.sparse_coo_tensor(m.tensor(INDICES), m.tensor(VALUES), (2, 3), is_coalesced=True)
            for m in (ember, torch))
    assert e.is_coalesced() == t.is_coalesced() is True
    cases = [
        lambda m: m.sparse_coo_tensor(m.tensor(INDICES), m.tensor(VALUES), (2, 3, 4)),
        lambda m: m.sparse_coo_tensor(m.tensor(INDICES), m.tensor(VALUES[:2]), (2, 3)),
        lambda m: m.sparse_coo_tensor(m.tensor(INDICES), m.tensor(VALUES), (1, 3), check_invariants=True),
    ]
    for make in cases:
        with pytest.raises(RuntimeError) as torch_error:
            make(torch)
        with pytest.raises(RuntimeError) as ember_error:
            make(ember)
        assert str(ember_error.value) == str(torch_error.value)


def test_indices_values_coalesce():
    e, t = pair()
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError, match="uncoalesced") as torch_error:
            getattr(t, name)()
        with pytest.raises(RuntimeError) as ember_error:
            getattr(e, name)()
        assert str(ember_error.value) == str(torch_error.value)
    check(e._values(), t._values())
    check(e._indices(), t._indices())
    ec, tc = e.coalesce(), t.coalesce()
    check(ec, tc)
    check(ec.indices(), tc.indices())
    check(ec.values(), tc.values())
    assert ec.coalesce() is ec
    with pytest.raises(RuntimeError) as torch_error:
        torch.ones(2).is_coalesced()
    with pytest.raises(RuntimeError) as ember_error:
        ember.ones(2).is_coalesced()
    assert str(ember_error.value) == str(torch_error.value)


def test_to_sparse_and_back():
    array = [[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]
    e, t = dense_pair(array)
    check(e.to_sparse(), t.to_sparse())
    check(e.to_sparse_coo(), t.to_sparse_coo())
    check(e.to_sparse(1), t.to_sparse(1))
    e3, t3 = dense_pair(np.arange(12.0).reshape(2, 3, 2) % 5)
    check(e3.to_sparse(2), t3.to_sparse(2))
    check(e3.to_sparse(2).to_dense(), t3.to_sparse(2).to_dense())
    check(ember.zeros(2, 3).to_sparse(), torch.zeros(2, 3).to_sparse())
    es, ts = pair()
    assert es.to_sparse() is es
    with pytest.raises(RuntimeError) as torch_error:
        ts.to_sparse(1)
    with pytest.raises(RuntimeError) as ember_error:
        es.to_sparse(1)
    assert str(ember_error.value) == str(torch_error.value)


def test_copies_and_conversions():
    e, t = pair()
    for fn in (lambda x: x.clone(), lambda x: x.detach(), lambda x: x.double(), lambda x: x.to(x.dtype),
               lambda x: x.coalesce().to(torch.float64 if x.__class__.__module__.startswith("torch")
                                         else ember.float64)):
        check(fn(e), fn(t))
    r_e, r_t = e.clone().requires_grad_(), t.clone().requires_grad_()
    assert r_e.requires_grad and r_e.is_leaf and r_t.requires_grad
    same_repr(r_e, r_t)


def test_dense_only_methods_refuse():
    e, t = pair()
    for name, fn in [("numpy", lambda x: x.numpy()), ("tolist", lambda x: x.tolist()),
                     ("data_ptr", lambda x: x.data_ptr()), ("exp", lambda x: x.exp()),
                     ("view", lambda x: x.view(-1)), ("mean", lambda x: x.mean()),
                     ("sub scalar", lambda x: x - 1), ("add dense", lambda x: x + x.to_dense())]:
        with pytest.raises(Exception) as torch_error:
            fn(t)
        with pytest.raises(Exception) as ember_error:
            fn(e)
        assert type(ember_error.value) is type(torch_error.value), name
        ember_text, torch_text = str(ember_error.value), str(torch_error.value)
        if torch_text.startswith("Could not run"):  # the same operator (torch also names its overload)
            assert ember_text.split("'")[1] == torch_text.split("'")[1].split(".")[0], name
            assert "'SparseCPU' backend" in ember_text
        else:
            assert ember_text == torch_text, name
    assert e.is_contiguous() == t.is_contiguous()


# ---------------------------------------------------------------- math


def _binary_cases(m, s, c, d):
    return {
        "s+s": lambda: s + s, "c+c": lambda: c + c, "c+s": lambda: c + s, "s-s": lambda: s - s,
        "add alpha": lambda: s.add(c, alpha=2), "d+s": lambda: d + s, "d-s": lambda: d - s,
        "d.add alpha": lambda: d.add(s, alpha=-0.5), "s*2": lambda: s * 2, "2*c": lambda: 2 * c,
        "s*s": lambda: s * s, "c*c": lambda: c * c, "s*c": lambda: s * c, "s*d": lambda: s * d,
        "d*s": lambda: d * s, "s/2": lambda: s / 2, "c/0-d": lambda: c / m.tensor(4.0), "-s": lambda: -s,
        "neg c": lambda: c.neg(), "s**2": lambda: s ** 2, "pow 3": lambda: c.pow(3),
        "t": lambda: s.t(), "ct": lambda: c.t(), "transpose": lambda: c.transpose(0, 1),
        "sum": lambda: s.sum(), "sum0": lambda: s.sum(0), "sparse.sum": lambda: m.sparse.sum(s),
        "sparse.sum dim": lambda: m.sparse.sum(s, 1), "sparse.sum dims": lambda: m.sparse.sum(s, (0, 1)),
        "sparse.sum dtype": lambda: m.sparse.sum(s, dtype=m.float64),
    }


@pytest.mark.parametrize("name", list(_binary_cases(torch, None, None, None)))
def test_elementwise_and_sums(name):
    e, t = pair()
    de, dt_ = dense_pair(np.arange(6.0).reshape(2, 3) - 2)
    result_e = _binary_cases(ember, e, e.coalesce(), de)[name]()
    result_t = _binary_cases(torch, t, t.coalesce(), dt_)[name]()
    check(result_e, result_t)


def test_elementwise_errors():
    e, t = pair()
    cases = [lambda x, m: x.pow(0), lambda x, m: x / m.ones(2, 3), lambda x, m: x + m.ones(3, 2).to_sparse(),
             lambda x, m: m.ones(3, 3) + x]
    for fn in cases:
        with pytest.raises(RuntimeError) as torch_error:
            fn(t, torch)
        with pytest.raises(RuntimeError) as ember_error:
            fn(e, ember)
        assert str(torch_error.value).startswith(str(ember_error.value)[:70])


@pytest.mark.parametrize("name", ["sparse.mm", "mm", "matmul", "@", "spmm", "sparse.addmm", "addmm", "mv",
                                  "dense@sparse"])
def test_products(name):
    e, t = pair()
    rng = np.random.default_rng(0)
    de, dt_ = dense_pair(rng.standard_normal((3, 4)))
    me, mt = dense_pair(rng.standard_normal((2, 4)))
    ve, vt = dense_pair(rng.standard_normal(3))
    le, lt = dense_pair(rng.standard_normal((5, 2)))

    def run(m, s, d, mat, vec, left):
        return {
            "sparse.mm": lambda: m.sparse.mm(s, d), "mm": lambda: m.mm(s, d), "matmul": lambda: m.matmul(s, d),
            "@": lambda: s @ d, "spmm": lambda: m.spmm(s, d),
            "sparse.addmm": lambda: m.sparse.addmm(mat, s, d, beta=0.5, alpha=2.0),
            "addmm": lambda: m.addmm(mat, s, d, beta=0.5, alpha=2.0), "mv": lambda: s @ vec,
            "dense@sparse": lambda: m.mm(left, s),
        }[name]()

    check(run(ember, e, de, me, ve, le), run(torch, t, dt_, mt, vt, lt), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError) as torch_error:
        torch.sparse.mm(t, torch.ones(4, 2))
    with pytest.raises(RuntimeError) as ember_error:
        ember.sparse.mm(e, ember.ones(4, 2))
    assert str(ember_error.value) == str(torch_error.value)


# ---------------------------------------------------------------- autograd


GRAD_CASES = {
    "sparse.mm": lambda m, s, d: (m.sparse.mm(s, d) ** 2).sum(),
    "sparse.addmm": lambda m, s, d: (m.sparse.addmm(m.ones(2, 4, dtype=m.float64), s, d, beta=0.5, alpha=3.0)
                                     ** 2).sum(),
    "mm": lambda m, s, d: (m.mm(s, d) ** 2).sum(),
    "matmul": lambda m, s, d: ((s @ d) * 3).sum(),
    "to_dense": lambda m, s, d: (s.to_dense() * m.arange(6.0, dtype=m.float64).reshape(2, 3)).sum(),
    "sparse.sum": lambda m, s, d: m.sparse.sum(s * 2),
    "sparse.sum dim": lambda m, s, d: (m.sparse.sum(s, 1).to_dense() * m.tensor([1.0, -2.0],
                                                                                 dtype=m.float64)).sum(),
    "Tensor.sum": lambda m, s, d: s.sum(),
    "coalesce values": lambda m, s, d: (s.coalesce().values() ** 2).sum(),
    "mul then mm": lambda m, s, d: (m.sparse.mm(s * s, d)).sum(),
    "add sparse": lambda m, s, d: ((s + s.coalesce()).to_dense() ** 2).sum(),
    "dense + sparse": lambda m, s, d: ((m.ones(2, 3, dtype=m.float64) + s) ** 2).sum(),
    "pow": lambda m, s, d: (s.pow(3).to_dense()).sum(),
    "transpose": lambda m, s, d: (m.sparse.mm(s.t(), m.ones(2, 2, dtype=m.float64)) ** 2).sum(),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_match_torch(name):
    e, t = pair(dtype="float64", requires_grad=True)
    rng = np.random.default_rng(1)
    array = rng.standard_normal((3, 4))
    de = ember.tensor(array).requires_grad_()
    dt_ = torch.tensor(array).requires_grad_()
    out_e, out_t = GRAD_CASES[name](ember, e, de), GRAD_CASES[name](torch, t, dt_)
    assert out_e.grad_fn.name() == out_t.grad_fn.name()
    np.testing.assert_allclose(out_e.item(), out_t.item(), rtol=1e-10)
    out_e.backward()
    out_t.backward()
    assert e.grad.is_sparse == t.grad.is_sparse
    check_dense_equal(e.grad, t.grad, rtol=1e-10, atol=1e-10)
    if t.grad.is_sparse and name in ("sparse.mm", "sparse.addmm", "to_dense", "sparse.sum dim"):
        check(e.grad, t.grad, rtol=1e-10, atol=1e-10)
    if dt_.grad is not None:
        check_dense_equal(de.grad, dt_.grad, rtol=1e-10, atol=1e-10)


def test_gradient_through_values_finite_differences():
    """d/dvalues of sparse.mm(sparse_coo_tensor(i, v), d): checked against torch and finite differences."""
    rng = np.random.default_rng(2)
    values = rng.standard_normal(4)
    dense = rng.standard_normal((3, 2))

    def loss(m, v, d):
        s = m.sparse_coo_tensor(m.tensor(INDICES), v, (2, 3))
        return (m.sparse.mm(s, d) ** 2).sum()

    ve, de = ember.tensor(values).requires_grad_(), ember.tensor(dense).requires_grad_()
    vt, dt_ = torch.tensor(values).requires_grad_(), torch.tensor(dense).requires_grad_()
    le, lt = loss(ember, ve, de), loss(torch, vt, dt_)
    assert ve.grad is None
    le.backward()
    lt.backward()
    np.testing.assert_allclose(ve.grad.numpy(), vt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(de.grad.numpy(), dt_.grad.numpy(), rtol=1e-10)
    assert ember.autograd.gradcheck(lambda v, d: loss(ember, v, d), (ve, de))


def test_grad_accumulates_sparse():
    e, t = pair(requires_grad=True)
    for m, s in ((ember, e), (torch, t)):
        d = m.ones(3, 2)
        m.sparse.mm(s, d).sum().backward()
        m.sparse.mm(s, d).sum().backward()
    check_dense_equal(e.grad, t.grad)
    assert e.grad.is_sparse


# ---------------------------------------------------------------- embeddings and optimizers


def _embeddings(module_e, module_t):
    with torch.no_grad():
        module_t.weight.copy_(torch.arange(float(module_t.weight.numel())).reshape(module_t.weight.shape) / 10)
    with ember.no_grad():
        module_e.weight.copy_(ember.arange(float(module_e.weight.numel())).reshape(module_e.weight.shape) / 10)


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_grad(padding_idx):
    module_e = ember.nn.Embedding(5, 3, sparse=True, padding_idx=padding_idx)
    module_t = torch.nn.Embedding(5, 3, sparse=True, padding_idx=padding_idx)
    _embeddings(module_e, module_t)
    assert repr(module_e) == repr(module_t)
    index = [[0, 2, 0], [1, 4, 2]]
    out_e, out_t = module_e(ember.tensor(index)), module_t(torch.tensor(index))
    assert out_e.grad_fn.name() == out_t.grad_fn.name()
    check(out_e, out_t)
    (out_e * ember.arange(18.0).reshape(2, 3, 3)).sum().backward()
    (out_t * torch.arange(18.0).reshape(2, 3, 3)).sum().backward()
    check(module_e.weight.grad, module_t.weight.grad)
    module_e(ember.tensor([3])).sum().backward()  # a second backward concatenates entries
    module_t(torch.tensor([3])).sum().backward()
    check(module_e.weight.grad, module_t.weight.grad)
    same_repr(module_e.weight.grad, module_t.weight.grad)


def test_functional_embedding_sparse_and_errors():
    w = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    we, wt = ember.tensor(w).requires_grad_(), torch.tensor(w).requires_grad_()
    ember.nn.functional.embedding(ember.tensor([4, 4, 0]), we, sparse=True).sum().backward()
    torch.nn.functional.embedding(torch.tensor([4, 4, 0]), wt, sparse=True).sum().backward()
    check(we.grad, wt.grad)
    module_e = ember.nn.Embedding(5, 3, sparse=True, scale_grad_by_freq=True)
    module_t = torch.nn.Embedding(5, 3, sparse=True, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError) as torch_error:
        module_t(torch.tensor([1, 1])).sum().backward()
    with pytest.raises(RuntimeError) as ember_error:
        module_e(ember.tensor([1, 1])).sum().backward()
    assert str(ember_error.value) == str(torch_error.value)


@pytest.mark.parametrize("mode, padding_idx, weighted", [("mean", None, False), ("sum", None, True),
                                                         ("mean", 2, False), ("sum", None, False)])
def test_embedding_bag_sparse_grad(mode, padding_idx, weighted):
    bag_e = ember.nn.EmbeddingBag(5, 3, mode=mode, sparse=True, padding_idx=padding_idx)
    bag_t = torch.nn.EmbeddingBag(5, 3, mode=mode, sparse=True, padding_idx=padding_idx)
    _embeddings(bag_e, bag_t)
    inputs, offsets = [0, 2, 0, 1, 4], [0, 2]
    weights = [1.0, 2.0, 3.0, 4.0, 5.0]
    kwargs_e = {"per_sample_weights": ember.tensor(weights)} if weighted else {}
    kwargs_t = {"per_sample_weights": torch.tensor(weights)} if weighted else {}
    out_e = bag_e(ember.tensor(inputs), ember.tensor(offsets), **kwargs_e)
    out_t = bag_t(torch.tensor(inputs), torch.tensor(offsets), **kwargs_t)
    check(out_e, out_t, rtol=1e-5)
    (out_e * ember.arange(6.0).reshape(2, 3)).sum().backward()
    (out_t * torch.arange(6.0).reshape(2, 3)).sum().backward()
    check(bag_e.weight.grad, bag_t.weight.grad, rtol=1e-5)


def test_embedding_bag_max_sparse_refused():
    for m in (ember, torch):
        bag = m.nn.EmbeddingBag(5, 3, mode="max", sparse=True)
        with pytest.raises(ValueError, match="max mode does not support sparse weights"):
            bag(m.tensor([0, 1]), m.tensor([0]))


OPTIMIZERS = [
    ("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}), ("SGD", {"lr": 0.1, "maximize": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.5}), ("SGD", {"lr": 0.1, "momentum": 0.5, "foreach": True}),
    ("Adagrad", {"lr": 0.1}), ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1}),
    ("Adagrad", {"lr": 0.1, "maximize": True}), ("SparseAdam", {"lr": 0.1}),
    ("SparseAdam", {"lr": 0.05, "betas": (0.8, 0.99), "maximize": True}),
]


def _train(m, name, kwargs, steps=4):
    module = m.nn.Embedding(6, 3, sparse=True)
    with m.no_grad():
        module.weight.copy_(m.arange(18.0).reshape(6, 3) / 10 - 0.5)
    optimizer = getattr(m.optim, name)(module.parameters(), **kwargs)
    batches = [[[1, 2, 1], [3, 1, 0]], [[5, 5, 2], [0, 1, 4]], [[2, 3, 3], [1, 1, 1]], [[0, 4, 5], [2, 2, 3]]]
    for step in range(steps):
        optimizer.zero_grad()
        (module(m.tensor(batches[step])) ** 2).sum().backward()
        optimizer.step()
    return module, optimizer


@pytest.mark.parametrize("name, kwargs", OPTIMIZERS)
def test_optimizers_with_sparse_grads(name, kwargs):
    module_e, optimizer_e = _train(ember, name, kwargs)
    module_t, optimizer_t = _train(torch, name, kwargs)
    np.testing.assert_allclose(module_e.weight.detach().numpy(), module_t.weight.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    state_e, state_t = optimizer_e.state[module_e.weight], optimizer_t.state[module_t.weight]
    assert set(state_e) == set(state_t)
    for key, value in state_t.items():
        if isinstance(value, torch.Tensor):
            assert state_e[key].is_sparse == value.is_sparse, key
            check_dense_equal(state_e[key], value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, kwargs", [("SGD", {"lr": 0.1, "weight_decay": 0.1}),
                                          ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}), ("Adam", {}),
                                          ("AdamW", {}), ("RMSprop", {}), ("Adadelta", {}), ("Adamax", {}),
                                          ("NAdam", {}), ("RAdam", {}), ("ASGD", {}), ("Rprop", {})])
def test_optimizers_refusing_sparse_grads(name, kwargs):
    with pytest.raises(RuntimeError) as torch_error:
        _train(torch, name, kwargs, steps=1)
    with pytest.raises(RuntimeError) as ember_error:
        _train(ember, name, kwargs, steps=1)
    assert str(ember_error.value) == str(torch_error.value)


def test_sparse_adam_refuses_dense_grads():
    for m in (ember, torch):
        w = m.nn.Parameter(m.ones(2))
        optimizer = m.optim.SparseAdam([w])
        (w * 2).sum().backward()
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
            optimizer.step()


def test_clip_grad_norm_with_sparse_grads_raises_as_torch():
    errors = []
    for m in (ember, torch):
        module = m.nn.Embedding(5, 3, sparse=True)
        module(m.tensor([1, 2])).sum().backward()
        with pytest.raises(NotImplementedError) as error:
            m.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        errors.append(str(error.value))
    assert errors[1].startswith(errors[0])


def test_zero_grad_without_set_to_none():
    module_e, optimizer_e = _train(ember, "SGD", {"lr": 0.1}, steps=1)
    module_t, optimizer_t = _train(torch, "SGD", {"lr": 0.1}, steps=1)
    optimizer_e.zero_grad(set_to_none=False)
    optimizer_t.zero_grad(set_to_none=False)
    check(module_e.weight.grad, module_t.weight.grad)


# ---------------------------------------------------------------- serialization


def test_save_load_round_trip(tmp_path):
    e, _ = pair()
    path = tmp_path / "sparse.pt"
    ember.save({"u": e, "c": e.coalesce(), "dense": ember.ones(2)}, path)
    loaded = ember.load(path)
    for key, original in (("u", e), ("c", e.coalesce())):
        assert loaded[key].is_sparse and loaded[key].is_coalesced() == original.is_coalesced()
        np.testing.assert_array_equal(loaded[key]._indices().numpy(), original._indices().numpy())
        np.testing.assert_array_equal(loaded[key]._values().numpy(), original._values().numpy())
    from_torch = torch.load(path, weights_only=True)  # ember's file is torch's format
    check(loaded["u"], from_torch["u"])
    check(loaded["c"], from_torch["c"])
    buffer = io.BytesIO()
    torch.save({"s": pair()[1]}, buffer)
    buffer.seek(0)
    check(ember.load(buffer, weights_only=True)["s"], pair()[1])


def test_pickle_and_deepcopy():
    import copy
    import pickle

    e, t = pair(requires_grad=True)
    for clone in (copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        check(clone, t)
        assert clone.requires_grad


# ---------------------------------------------------------------- sparse @ sparse


def _sparse_pair(array, requires_grad=False):
    return (ember.tensor(array).to_sparse().requires_grad_(requires_grad),
            torch.tensor(array).to_sparse().requires_grad_(requires_grad))


@pytest.mark.parametrize("name", ["mm", "matmul", "@", "sparse.mm"])
@pytest.mark.parametrize("upstream", ["sparse", "dense"])
def test_sparse_sparse_product_and_gradients(name, upstream):
    """A sparse product (coalesced, cancelling sums kept as entries); mm's gradients are the full products
    (MmBackward0), torch.sparse.mm's keep each operand's pattern (SparseSparseMatmulBackward0)."""
    rng = np.random.default_rng(2)
    a_array = np.maximum(rng.standard_normal((5, 6)), 0)
    b_array = np.maximum(rng.standard_normal((6, 4)), 0)
    weights = rng.standard_normal((5, 4))
    results = []
    ae, at = _sparse_pair(a_array, True)
    be, bt = _sparse_pair(b_array, True)
    for m, a, b in ((ember, ae, be), (torch, at, bt)):
        product = {"mm": lambda: m.mm(a, b), "matmul": lambda: m.matmul(a, b), "@": lambda: a @ b,
                   "sparse.mm": lambda: m.sparse.mm(a, b)}[name]()
        w = m.tensor(weights)
        loss = m.sparse.sum(product * w.to_sparse()) if upstream == "sparse" else (product.to_dense() * w).sum()
        loss.backward()
        results.append((product, a.grad, b.grad))
    (pe, gae, gbe), (pt, gat, gbt) = results
    assert pe.grad_fn.name() == pt.grad_fn.name()
    check(pe, pt, rtol=1e-12, atol=1e-12)
    for e, t in ((gae, gat), (gbe, gbt)):
        assert e.is_sparse == t.is_sparse
        if t.is_sparse:
            assert e._nnz() == t._nnz()
        check_dense_equal(e, t, rtol=1e-12, atol=1e-12)


def test_sparse_sparse_product_errors_and_empty():
    a_array = np.ones((2, 3))
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            m.mm(m.tensor(a_array).to_sparse(), m.tensor(a_array).to_sparse())
    empty = ember.mm(ember.zeros(3, 2).to_sparse(), ember.zeros(2, 3).to_sparse())
    assert empty.is_sparse and empty._nnz() == 0 and tuple(empty.shape) == (3, 3) and empty.is_coalesced()
