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
