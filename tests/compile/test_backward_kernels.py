"""Generated backward kernels of fused groups: gradients equal eager's, one kernel per group backward,
the recompute path for double backward."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._compile import lowering, runtime

pytestmark = pytest.mark.filterwarnings("error:ember.compile:RuntimeWarning")

TOLERANCES = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-4, atol=2e-5)}

# op name -> (function of tensors, number of tensor inputs, input domain); each is fused with a tanh so
# the group has two ops (a kernel) and the op's gradient flows through a formula
UNARY_DOMAIN = {"log": "positive", "sqrt": "positive", "rsqrt": "positive", "log1p": "positive"}
CASES = {
    "add": (lambda a, b: a.add(b, alpha=0.5), 2),
    "sub": (lambda a, b: a.sub(b, alpha=2.0), 2),
    "mul": (lambda a, b: a * b, 2),
    "div": (lambda a, b: a / (b.abs() + 0.5), 2),
    "neg": (lambda a: -a, 1),
    "exp": (lambda a: a.exp(), 1),
    "log": (lambda a: a.log(), 1),
    "log1p": (lambda a: a.log1p(), 1),
    "expm1": (lambda a: a.expm1(), 1),
    "sqrt": (lambda a: a.sqrt(), 1),
    "rsqrt": (lambda a: a.rsqrt(), 1),
    "reciprocal": (lambda a: (a.abs() + 0.5).reciprocal(), 1),
    "sin": (lambda a: a.sin(), 1),
    "cos": (lambda a: a.cos(), 1),
    "tanh": (lambda a: a.tanh(), 1),
    "sigmoid": (lambda a: a.sigmoid(), 1),
    "silu": (lambda a: F.silu(a), 1),
    "relu": (lambda a: F.relu(a), 1),
    "gelu": (lambda a: F.gelu(a), 1),
    "gelu_tanh": (lambda a: F.gelu(a, approximate="tanh"), 1),
    "erf": (lambda a: a.erf(), 1),
    "abs": (lambda a: a.abs(), 1),
    "square": (lambda a: a.square(), 1),
    "pow": (lambda a: a.abs().pow(2.5), 1),
    "pow_tensor": (lambda a, b: (a.abs() + 0.1).pow(b), 2),
    "maximum": (lambda a, b: ember.maximum(a, b), 2),
    "minimum": (lambda a, b: ember.minimum(a, b), 2),
    "where": (lambda a, b, c: ember.where(c > 0, a, b), 3),
    "leaky_relu": (lambda a: F.leaky_relu(a, 0.1), 1),
    "hardtanh": (lambda a: F.hardtanh(a, -0.5, 0.5), 1),
    "lerp": (lambda a, b, c: ember.lerp(a, b, c), 3),
    "addcmul": (lambda a, b, c: ember.addcmul(a, b, c, value=0.3), 3),
    "addcdiv": (lambda a, b, c: ember.addcdiv(a, b, c.abs() + 0.5, value=-2.0), 3),
    "sum": (lambda a: a.sum(-1, keepdim=True) * a, 1),
    "mean": (lambda a: a.mean(-1, keepdim=True) * a, 1),
    "amax": (lambda a: a.amax(-1, keepdim=True) * a, 1),
    "softmax": (lambda a: ember.softmax(a, -1), 1),
    "log_softmax": (lambda a: F.log_softmax(a, -1), 1),
    "layer_norm": (lambda a, w, b: F.layer_norm(a, (a.shape[-1],), w[0, 0], b[0, 0]), 3),
    "broadcast_bias_row": (lambda a, b, c: (a + b[0, 0]) * c[:, :, :1].contiguous(), 3),
}


def test_every_pointwise_op_has_a_derivative():
    assert set(lowering.POINTWISE) - set(lowering.DERIVATIVES) == set()


def _inputs(name, count, dtype, rng):
    shape = (3, 5, 24)
    arrays = [rng.standard_normal(shape) for _ in range(count)]
    if UNARY_DOMAIN.get(name) == "positive":
        arrays[0] = np.abs(arrays[0]) + 0.2
    return [ember.tensor(a.astype(dtype), requires_grad=True) for a in arrays]


@pytest.mark.parametrize("printer", ["c", "numpy"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_eager_through_one_backward_kernel(name, dtype, printer):
    fn, count = CASES[name]

    def wrapped(*tensors):
        return fn(*tensors).tanh()

    rng = np.random.default_rng(0)
    tensors = _inputs(name, count, dtype, rng)
    compiled = ember.compile(wrapped, options={"printer": printer} if printer == "numpy" else {})
    compiled(*tensors)
    out = compiled(*tensors)
    (graph,) = compiled.graphs
    fused = [n for n in graph.nodes if n.kind == "fused"]
    assert fused, graph.code
    grad_out = ember.tensor(rng.standard_normal(tuple(out.shape)).astype(dtype))
    before = dict(runtime.counters)
    grads = ember.autograd.grad(out, tensors, grad_out, allow_unused=True)
    assert runtime.counters["backward_recompute"] == before["backward_recompute"]
    assert runtime.counters["backward_kernel"] - before["backward_kernel"] == len(fused)
    expected = ember.autograd.grad(wrapped(*tensors), tensors, grad_out, allow_unused=True)
    for actual, wanted in zip(grads, expected):
        if wanted is None:
            assert actual is None or not np.any(actual.numpy())
            continue
        assert actual.shape == wanted.shape and actual.dtype == wanted.dtype
        np.testing.assert_allclose(actual.numpy(), wanted.numpy(), **TOLERANCES[dtype])


def test_backward_kernel_source_is_generated_with_the_forward():
    compiled = ember.compile(lambda x, w, b: F.gelu(F.layer_norm(x, (16,), w, b)))
    x = ember.randn(4, 16, requires_grad=True)
    w = ember.randn(16, requires_grad=True)
    b = ember.randn(16, requires_grad=True)
    compiled(x, w, b)
    (source,) = compiled.kernel_sources
    assert "_backward(" in source


def test_no_backward_kernel_without_inputs_requiring_grad():
    compiled = ember.compile(lambda x: ember.softmax(x * 2, -1))
    compiled(ember.randn(4, 16))
    assert "_backward" not in compiled.kernel_sources[0]


def test_double_backward_uses_the_recompute_path():
    x = ember.randn(4, 16, dtype=ember.float64, requires_grad=True)

    def fn(t):
        return (t.tanh() * t.sigmoid()).sum(-1)

    compiled = ember.compile(fn)
    compiled(x)
    out = compiled(x)
    before = dict(runtime.counters)
    (g,) = ember.autograd.grad(out.sum(), x, create_graph=True)
    assert runtime.counters["backward_recompute"] > before["backward_recompute"]
    (gg,) = ember.autograd.grad(g.sum(), x)
    (eg,) = ember.autograd.grad(fn(x).sum(), x, create_graph=True)
    (egg,) = ember.autograd.grad(eg.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), eg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), egg.numpy(), rtol=1e-10, atol=1e-12)


def test_only_some_inputs_need_grad():
    w = ember.randn(16, requires_grad=True)
    x = ember.randn(4, 16)
    compiled = ember.compile(lambda a, b: (a * b).exp().sum(-1))
    compiled(x, w)
    out = compiled(x, w)
    before = runtime.counters["backward_kernel"]
    out.sum().backward()
    assert runtime.counters["backward_kernel"] == before + 1
    expected = ember.autograd.grad((x * w).exp().sum(), w)[0]
    np.testing.assert_allclose(w.grad.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("block, accurate", [(None, True), (1 << 30, False)])
def test_column_gradients_of_many_rows_stay_accurate(monkeypatch, block, accurate):
    """A norm's weight/bias gradients are sums over every row (col outputs): float partial sums over
    codegen.COL_BLOCK rows, added in double.  Over 2^20 rows of a constant 0.1 a float running sum (block =
    all rows) drifts ~1e-3; the blocked sum keeps float32 accuracy."""
    from ember._compile import codegen

    if block is not None:
        monkeypatch.setattr(codegen, "COL_BLOCK", block)
    rows = 1 << 20
    x = ember.tensor(np.random.default_rng(0).standard_normal((rows, 4)).astype(np.float32))
    compiled = ember.compile(lambda x, w, b: (F.layer_norm(x, (4,), w, b) * 0.1).sum())
    for _ in range(2):  # the capturing call runs eagerly; the second runs the kernels
        w, b = ember.ones(4, requires_grad=True), ember.zeros(4, requires_grad=True)
        compiled(x, w, b).backward()
    error = np.max(np.abs(b.grad.numpy() / (0.1 * rows) - 1))
    assert runtime.counters["backward_kernel"] > 0
    assert (error < 2e-6) == accurate, error
