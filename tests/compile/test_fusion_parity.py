"""Compiled vs eager: every lowerable op of the op database (forward and gradients), composites, an MLP step."""

import copy

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._compile import lowering
from ember.testing.opdb import all_ops
from ember.testing.opdb.core import build_value

pytestmark = pytest.mark.filterwarnings("error:ember.compile:RuntimeWarning")

LOWERED = set(lowering.POINTWISE) | set(lowering.REDUCTIONS) | {"softmax", "log_softmax", "layer_norm"}
OPS = [op for op in all_ops() if op.name in LOWERED and "float32" in op.dtypes]


def _samples(op, dtype="float32"):
    return op.sample_inputs(dtype, np.random.default_rng(0))[: op.max_samples]


def _tensors(sample, requires_grad):
    return tuple(build_value(ember, a, requires_grad=requires_grad, noncontiguous=sample.noncontiguous)
                 for a in sample.args)


def _close(actual, expected, rtol=2e-5, atol=2e-5):
    if isinstance(expected, (tuple, list)):
        for a, e in zip(actual, expected):
            _close(a, e, rtol, atol)
        return
    if not isinstance(expected, ember.Tensor):
        assert actual == expected
        return
    assert tuple(actual.shape) == tuple(expected.shape) and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True)


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_op_kernel_matches_eager(op, dtype):
    """Each op alone as a kernel (fuse_single) must equal eager on the opdb samples; grads too."""
    if dtype not in op.dtypes:
        pytest.skip("dtype not in the op's dtypes")
    kernels = 0
    for sample in _samples(op, dtype):

        def fn(*a, sample=sample):
            return op.run(ember, sample, a)

        compiled = ember.compile(fn, options={"fuse_single": True})
        tensors = _tensors(sample, False)
        expected = fn(*tensors)
        compiled(*tensors)  # capture
        _close(compiled(*tensors), expected)  # replay
        kernels += sum(len(e.compiled.groups) for e in compiled.cache.values() if e.compiled is not None)
        if op.grad and sample.grad and dtype == "float64":
            leaves = _tensors(sample, True)
            eager_leaves = _tensors(sample, True)
            compiled(*leaves)
            out = compiled(*leaves)
            out = out[0] if isinstance(out, tuple) else out
            if out.requires_grad:
                out.sum().backward()
                ref = fn(*eager_leaves)
                (ref[0] if isinstance(ref, tuple) else ref).sum().backward()
                for a, b in zip(leaves, eager_leaves):
                    if isinstance(a, ember.Tensor) and a.grad is not None:
                        _close(a.grad, b.grad)
    if kernels == 0:
        pytest.skip("no sample of this op was lowered to a kernel (all broke the graph or were not fusible)")


def _layer_block(x, weight, bias, residual):
    h = F.layer_norm(x, (x.shape[-1],), weight, bias)
    return residual + F.gelu(h)


def _manual_softmax(x):
    shifted = x - x.amax(-1, keepdim=True)
    e = shifted.exp()
    return e / e.sum(-1, keepdim=True)


@pytest.mark.parametrize("printer", ["c", "numpy"])
def test_composites_fuse_into_one_kernel(printer):
    options = {"printer": printer} if printer == "numpy" else {}
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((4, 6, 32)).astype(np.float32), requires_grad=True)
    w = ember.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
    b = ember.tensor(rng.standard_normal(32).astype(np.float32), requires_grad=True)
    r = ember.tensor(rng.standard_normal((4, 6, 32)).astype(np.float32), requires_grad=True)
    for fn, args in ((_layer_block, (x, w, b, r)), (_manual_softmax, (x,)),
                     (lambda t: ember.softmax(t, -1) * 2, (x,)), (lambda t: F.log_softmax(t, -1), (x,))):
        compiled = ember.compile(fn, options=options)
        compiled(*args)
        out = compiled(*args)
        expected = fn(*args)
        _close(out, expected, rtol=1e-5, atol=1e-5)
        (graph,) = compiled.graphs
        assert [n.kind for n in graph.nodes if n.kind in ("call", "fused")] == ["fused"], graph.code
        grads = ember.autograd.grad(out.sum(), args)
        expected_grads = ember.autograd.grad(expected.sum(), args)
        for a, e in zip(grads, expected_grads):
            _close(a, e, rtol=1e-4, atol=1e-5)


def test_mlp_training_steps_match_eager():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 32), nn.GELU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 5))
    reference = copy.deepcopy(model)
    x = ember.randn(16, 20)
    y = ember.randint(0, 5, (16,))

    def step(m, params):
        loss = F.cross_entropy(m(x), y)
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 0.1 * p.grad
        return loss

    compiled_step = ember.compile(lambda: F.cross_entropy(model(x), y))
    for _ in range(3):
        loss = compiled_step()
        for p in model.parameters():
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        ref_loss = step(reference, list(reference.parameters()))
        _close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), reference.parameters()):
        _close(p, q, rtol=1e-5, atol=1e-6)
    assert len(compiled_step.cache) == 1


def test_module_compile_in_place():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    x = ember.randn(3, 8)
    expected = model(x)
    model.compile()
    model(x)
    _close(model(x), expected)
    optimized = ember.compile(nn.Linear(4, 4))
    assert isinstance(optimized, nn.Module) and len(list(optimized.parameters())) == 2
    optimized(ember.randn(2, 4))


@pytest.mark.parametrize("block, accurate", [(None, True), (1 << 30, False)])
def test_long_row_sums_are_blocked(monkeypatch, block, accurate):
    """Row sums add float lanes per block of codegen.SUM_BLOCK and the blocks in double: a 4M-element row
    keeps float32 accuracy, where float accumulators over the whole row drift (a constant addend rounds the same
    way at every step, so the error grows linearly)."""
    from ember._compile import codegen

    if block is not None:
        monkeypatch.setattr(codegen, "SUM_BLOCK", block)
    x = np.full((2, 1 << 22), 0.1, np.float32)
    compiled = ember.compile(lambda t: (t * 3.0).sum(-1))
    compiled(ember.tensor(x))  # the capturing call returns eager's result
    out = compiled(ember.tensor(x)).numpy()
    error = np.max(np.abs(out / (3.0 * x.astype(np.float64).sum(-1)) - 1))
    assert (error < 2e-6) == accurate, error
