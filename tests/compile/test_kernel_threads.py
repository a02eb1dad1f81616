"""Performance-shaped behaviour of the C kernels: GELU alone between two matmuls gets a kernel (eager's erf is
a NumPy polynomial), kernels split rows over a thread pool with results equal to one thread, and the
libraries use no OpenMP thread team (its spin-waiting workers slowed the BLAS calls that follow)."""


import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember._compile import codegen, runtime

needs_cc = pytest.mark.skipif(codegen.find_compiler() is None, reason="no C compiler")


def _mlp(x, w1, b1, w2, b2):
    return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


@needs_cc
def test_gelu_between_linears_is_a_kernel_with_a_backward_kernel():
    ember.manual_seed(0)
    x = ember.randn(4, 8, 16)
    params = [ember.randn(32, 16) * 0.2, ember.randn(32), ember.randn(16, 32) * 0.2, ember.randn(16)]
    params = [p.requires_grad_() for p in params]
    compiled = ember.compile(_mlp)
    compiled(x, *params)
    kinds = [(node.kind, node.op.name) for node in compiled.graphs[0].nodes if node.op is not None]
    assert ("call", "gelu") not in kinds and any(kind == "fused" for kind, _ in kinds)
    runtime.counters.update(backward_kernel=0, backward_recompute=0)
    out = compiled(x, *params)
    grads = ember.autograd.grad(out.sum(), params)
    assert runtime.counters["backward_kernel"] == 1 and runtime.counters["backward_recompute"] == 0
    expected_out = _mlp(x, *params)
    expected = ember.autograd.grad(expected_out.sum(), params)
    np.testing.assert_allclose(out.detach().numpy(), expected_out.detach().numpy(), rtol=1e-4, atol=1e-5)
    for got, want in zip(grads, expected):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


@needs_cc
@pytest.mark.parametrize("threads", [2, 3, 7])
def test_rows_split_over_threads_equal_one_thread(monkeypatch, threads):
    def block(x, w, b, s):
        y = F.layer_norm(x, (x.shape[-1],), w, b)
        return x + F.gelu(y) * s, y.sum(-1, keepdim=True)  # full, suffix and row inputs; elem and row outputs

    ember.manual_seed(1)
    args = [ember.randn(5, 7, 96), ember.randn(96), ember.randn(96), ember.randn(5, 7, 1)]
    args = [a.requires_grad_() for a in args]
    results = {}
    for count in (1, threads):
        monkeypatch.setattr(codegen, "_threads_for", lambda R, K, count=count: min(count, R))
        ember.compiler.reset()
        compiled = ember.compile(block)
        out, rows = compiled(*args)
        grads = ember.autograd.grad((out * out).sum() + rows.sum(), args)
        results[count] = [t.detach().numpy() for t in (out, rows, *grads)]
    for one, many in zip(results[1], results[threads]):
        np.testing.assert_array_equal(one, many)


@needs_cc
def test_libraries_build_without_an_openmp_thread_team():
    assert "-fopenmp" not in codegen.CFLAGS  # -fopenmp-simd: the simd pragmas only, no libgomp
    compiled = ember.compile(lambda x: ember.softmax(x * 2.0, -1))
    compiled(ember.randn(300, 300))
    assert "omp simd" in compiled.kernel_sources[0] and "omp parallel" not in compiled.kernel_sources[0]


@needs_cc
@pytest.mark.parametrize("threads", [1, 2])
def test_norm_and_bias_gradients_summed_in_the_kernel(threads):
    """A layer norm's weight/bias and a bias before GELU get their gradients as K column sums accumulated in
    the backward kernel (one buffer of partial sums per thread chunk); they equal eager's."""
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        rng = np.random.default_rng(3)
        x = ember.tensor(rng.standard_normal((64, 48, 256)).astype(np.float32), requires_grad=True)
        w, b, bias = (ember.tensor(rng.standard_normal(256).astype(np.float32), requires_grad=True)
                      for _ in range(3))

        def block(x):
            return F.gelu(F.layer_norm(x, (256,), w, b) + bias)

        compiled = ember.compile(block)
        compiled(x)
        grads = ember.autograd.grad((compiled(x) ** 2).sum(), [x, w, b, bias])
        expected = ember.autograd.grad((block(x) ** 2).sum(), [x, w, b, bias])
        for got, want in zip(grads, expected):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-4, atol=2e-3)
    finally:
        ember.set_num_threads(previous)


@needs_cc
def test_col_outputs_in_the_generated_source():
    compiled = ember.compile(lambda x, w, b: F.layer_norm(x, (8,), w, b).tanh())
    x, w, b = (ember.randn(*s, requires_grad=True) for s in ((4, 8), (8,), (8,)))
    compiled(x, w, b)
    (source,) = compiled.kernel_sources
    assert "double* restrict out1" in source and "out1[k] += (double)" in source


@needs_cc
def test_softmax_keeps_its_exponentials_for_the_division():
    """The exp the sum computed is stored in a row scratch and read back, not recomputed (one exp per element)."""
    compiled = ember.compile(lambda x: ember.softmax(x, -1))
    x = ember.randn(64, 300)
    np.testing.assert_allclose(compiled(x).numpy(), ember.softmax(x, -1).numpy(), rtol=1e-6, atol=1e-7)
    (source,) = compiled.kernel_sources
    body = source[source.index("void fused_softmax"):]
    assert body.count("expf(") == 1 and "malloc" in body and "free(" in body
