"""NOTE [ Eager ops on generated kernels ] (ember/_compile/native.py): eager softmax, log_softmax, GELU and
layer norm on large float rows run generated C kernels (forward and backward); values and gradients equal
torch's."""

import numpy as np
import pytest
import torch

import ember
from ember._compile import codegen, native

pytestmark = pytest.mark.skipif(codegen.find_compiler() is None, reason="no C compiler")

OPS = {
    "softmax": (lambda lib, x: lib.softmax(x, -1)),
    "log_softmax": (lambda lib, x: lib.log_softmax(x, -1)),
    "gelu": (lambda lib, x: lib.nn.functional.gelu(x)),
    "gelu_tanh": (lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh")),
    "layer_norm": (lambda lib, x: lib.nn.functional.layer_norm(x, (x.shape[-1],))),
}
# float32: glibc's vector tanhf is an ulp short of -1 far out, so tanh-GELU's gradient there is ~3e-6, not 0
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_kernel_path_matches_torch(name, dtype):
    rng = np.random.default_rng(0)
    values = (rng.standard_normal((96, 3, 257)) * 3).astype(dtype)  # 74k elements: over MIN_ELEMENTS
    grad = rng.standard_normal(values.shape).astype(dtype)
    assert native.usable(values, -1)
    results = []
    for lib in (ember, torch):
        x = lib.tensor(values, requires_grad=True)
        y = OPS[name](lib, x)
        y.backward(lib.tensor(grad))
        results.append((y.detach().numpy(), x.grad.numpy()))
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, **TOLERANCE[dtype])
    key = {"gelu": "gelu_none", "gelu_tanh": "gelu_tanh", "layer_norm": "layer_norm_1e-05_00"}.get(name, name)
    assert any(k[0] == key for k, v in native._built.items() if v is not None)  # the kernel was built and used


@pytest.mark.parametrize("name", OPS)
def test_double_backward_keeps_the_op_formulas(name):
    """create_graph=True records the backward: the formulas in ember ops run, not the kernels."""
    rng = np.random.default_rng(1)
    values = rng.standard_normal((64, 300))
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(values, requires_grad=True)
        (g,) = lib.autograd.grad(OPS[name](lib, x).pow(2).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        grads.append((g.detach().numpy(), h.numpy()))
    for mine, theirs in zip(*grads):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


def test_disabled_kernels_give_the_same_values(monkeypatch):
    values = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    with_kernels = ember.softmax(ember.tensor(values), -1).numpy()
    monkeypatch.setattr(native, "_enabled", [False])
    without = ember.softmax(ember.tensor(values), -1).numpy()
    np.testing.assert_allclose(with_kernels, without, rtol=1e-6, atol=1e-7)


def test_other_dims_and_small_inputs_use_numpy():
    assert not native.usable(np.zeros((4, 4), np.float32), -1)
    assert not native.usable(np.zeros((300, 300), np.float32), 0)
    assert not native.usable(np.zeros((300, 300), np.int64), -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, False)], ids=["wb", "w", "none"])
def test_layer_norm_kernels_match_torch(dtype, affine):
    rng = np.random.default_rng(4)
    values = rng.standard_normal((64, 40, 96)).astype(dtype)
    grad = rng.standard_normal(values.shape).astype(dtype)
    weight, bias = (rng.standard_normal(96).astype(dtype) for _ in range(2))
    results = []
    for lib in (ember, torch):
        x = lib.tensor(values, requires_grad=True)
        w = lib.tensor(weight, requires_grad=True) if affine[0] else None
        b = lib.tensor(bias, requires_grad=True) if affine[1] else None
        lib.nn.functional.layer_norm(x, (96,), w, b, eps=1e-3).backward(lib.tensor(grad))
        results.append([x.grad.numpy()] + [t.grad.numpy() for t in (w, b) if t is not None])
    scale = {np.float32: dict(rtol=1e-4, atol=5e-4), np.float64: dict(rtol=1e-10, atol=1e-11)}[dtype]
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, **scale)  # weight/bias grads sum 2560 rows: float32 atol
    flags = f"{affine[0]:d}{affine[1]:d}"
    assert native._built.get((f"layer_norm_0.001_{flags}", np.dtype(dtype).name, 1, True, sum(affine), 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("shape, module", [((16, 8, 12, 12), "BatchNorm2d"), ((64, 300), "BatchNorm1d"),
                                           ((32, 6, 100), "BatchNorm1d")], ids=["2d", "1d-flat", "1d-seq"])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_batch_norm_channel_kernels_match_torch(dtype, shape, module, affine):
    """Training batch norm: per-channel statistics computed as rows of the (C, N * spatial) transpose."""
    rng = np.random.default_rng(5)
    values = rng.standard_normal(shape).astype(dtype)
    grad = rng.standard_normal(shape).astype(dtype)
    channels = shape[1]
    results = []
    for lib in (ember, torch):
        norm = getattr(lib.nn, module)(channels, affine=affine).to(lib.float32 if dtype == np.float32 else lib.float64)
        if affine:
            with lib.no_grad():
                norm.weight.copy_(lib.tensor(np.linspace(0.5, 2.0, channels).astype(dtype)))
                norm.bias.copy_(lib.tensor(np.linspace(-1.0, 1.0, channels).astype(dtype)))
        x = lib.tensor(values, requires_grad=True)
        norm(x).backward(lib.tensor(grad))
        results.append([x.grad.numpy(), norm.running_mean.numpy(), norm.running_var.numpy()]
                       + ([norm.weight.grad.numpy(), norm.bias.grad.numpy()] if affine else []))
    scale = {np.float32: dict(rtol=1e-4, atol=1e-4), np.float64: dict(rtol=1e-10, atol=1e-11)}[dtype]
    for mine, theirs in zip(*results):
        np.testing.assert_allclose(mine, theirs, **scale)
    assert native._built.get((f"channel_norm_1e-05_{affine:d}{affine:d}", np.dtype(dtype).name, 1, True, 0,
                              2 * affine))


@pytest.mark.parametrize("name", OPS)
def test_a_kernel_that_cannot_be_built_falls_back_to_numpy(monkeypatch, name):
    """A compiler failure (or an unwritable kernel cache) makes native.kernels return None: forward and backward
    run their NumPy/ember-op code instead of failing."""
    monkeypatch.setattr(native, "kernels", lambda *args, **kwargs: None)
    values = np.random.default_rng(6).standard_normal((64, 300))
    results = []
    for lib in (ember, torch):
        x = lib.tensor(values, requires_grad=True)
        OPS[name](lib, x).pow(2).sum().backward()
        results.append(x.grad.numpy())
    np.testing.assert_allclose(*results, rtol=1e-10, atol=1e-12)
