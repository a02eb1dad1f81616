"""ember.autocast against torch.autocast on the CPU: result dtypes per op class, values, nesting, caching."""

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

RNG = np.random.default_rng(0)


def arrays(*shapes):
    return [RNG.standard_normal(s).astype(np.float32) for s in shapes]


def both(arrs, dtypes=None):
    dtypes = dtypes or ["float32"] * len(arrs)
    e = [ember.tensor(a).to(getattr(ember, d)) for a, d in zip(arrs, dtypes)]
    t = [torch.tensor(a).to(getattr(torch, d)) for a, d in zip(arrs, dtypes)]
    return e, t


def target(n):
    return np.array(RNG.integers(0, 3, n))


# (name, shapes, call(lib, F, *tensors)) -- the same call on ember and torch
CASES = [
    ("mm", [(4, 3), (3, 5)], lambda L, F, a, b: L.mm(a, b)),
    ("matmul_2d", [(4, 3), (3, 5)], lambda L, F, a, b: a @ b),
    ("matmul_batched", [(2, 4, 3), (3, 5)], lambda L, F, a, b: L.matmul(a, b)),
    ("matmul_vec", [(4, 3), (3,)], lambda L, F, a, b: L.matmul(a, b)),
    ("bmm", [(2, 4, 3), (2, 3, 5)], lambda L, F, a, b: L.bmm(a, b)),
    ("addmm", [(4, 5), (4, 3), (3, 5)], lambda L, F, c, a, b: L.addmm(c, a, b)),
    ("baddbmm", [(2, 4, 5), (2, 4, 3), (2, 3, 5)], lambda L, F, c, a, b: L.baddbmm(c, a, b)),
    ("addbmm", [(4, 5), (2, 4, 3), (2, 3, 5)], lambda L, F, c, a, b: L.addbmm(c, a, b)),
    ("linear", [(4, 3), (5, 3), (5,)], lambda L, F, x, w, b: F.linear(x, w, b)),
    ("conv1d", [(2, 3, 8), (4, 3, 3)], lambda L, F, x, w: F.conv1d(x, w)),
    ("conv2d", [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], lambda L, F, x, w, b: F.conv2d(x, w, b, padding=1)),
    ("conv_transpose2d", [(2, 3, 5, 5), (3, 4, 3, 3)], lambda L, F, x, w: F.conv_transpose2d(x, w)),
    ("prelu", [(2, 3, 4), (3,)], lambda L, F, x, w: F.prelu(x, w)),
    ("sdpa", [(2, 4, 8), (2, 4, 8), (2, 4, 8)], lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v)),
    ("softmax", [(4, 5)], lambda L, F, x: F.softmax(x, -1)),
    ("relu", [(4, 5)], lambda L, F, x: F.relu(x)),
    ("add", [(4, 5), (4, 5)], lambda L, F, a, b: a + b),
    ("layer_norm", [(4, 5)], lambda L, F, x: F.layer_norm(x, (5,))),
    ("mse_loss", [(4, 5), (4, 5)], lambda L, F, a, b: F.mse_loss(a, b)),
    ("l1_loss", [(4, 5), (4, 5)], lambda L, F, a, b: F.l1_loss(a, b)),
    ("smooth_l1_loss", [(4, 5), (4, 5)], lambda L, F, a, b: F.smooth_l1_loss(a, b)),
    ("huber_loss", [(4, 5), (4, 5)], lambda L, F, a, b: F.huber_loss(a, b)),
    ("kl_div", [(4, 5), (4, 5)], lambda L, F, a, b: F.kl_div(a, b.abs(), reduction="batchmean")),
    ("bce_logits", [(4, 5), (4, 5)], lambda L, F, a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid())),
    ("bce", [(4, 5), (4, 5)], lambda L, F, a, b: F.binary_cross_entropy(a.sigmoid(), b.sigmoid())),
    ("soft_margin", [(4, 5), (4, 5)], lambda L, F, a, b: F.soft_margin_loss(a, b.sign())),
    ("prod", [(4, 5)], lambda L, F, x: L.prod(x, 1)),
    ("trace", [(4, 4)], lambda L, F, x: L.trace(x)),
    ("linalg_inv", [(4, 4)], lambda L, F, x: L.linalg.inv(x + 4 * L.eye(4))),
    ("avg_pool3d", [(1, 2, 4, 4, 4)], lambda L, F, x: F.avg_pool3d(x, 2)),
    ("max_pool3d", [(1, 2, 4, 4, 4)], lambda L, F, x: F.max_pool3d(x, 2)),
    ("avg_pool2d", [(1, 2, 4, 4)], lambda L, F, x: F.avg_pool2d(x, 2)),
    ("pad_reflect", [(1, 2, 5, 5)], lambda L, F, x: F.pad(x, (1, 1, 1, 1), mode="reflect")),
    ("pad_constant", [(1, 2, 5, 5)], lambda L, F, x: F.pad(x, (1, 1, 1, 1))),
    ("sum", [(4, 5)], lambda L, F, x: x.sum()),
    ("exp", [(4, 5)], lambda L, F, x: x.exp()),
]


def run(case, lib, F, tensors, dtype, device="cpu"):
    with lib.autocast(device, dtype=dtype):
        return case[2](lib, F, *tensors)


@pytest.mark.parametrize("dtype_name", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_result_dtype_and_values_match_torch(case, dtype_name):
    arrs = arrays(*case[1])
    e, t = both(arrs)
    expected = run(case, torch, TF, t, getattr(torch, dtype_name))
    got = run(case, ember, EF, e, getattr(ember, dtype_name))
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    # values agree with the float32 result within the low-precision rounding
    reference = case[2](torch, TF, *t).detach().double().numpy()
    tol = 3e-2 if dtype_name == "bfloat16" else 5e-3
    np.testing.assert_allclose(got.detach().double().numpy(), reference, rtol=tol * 4, atol=tol * 4)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in ("mm", "linear", "mse_loss", "conv1d", "bmm")],
                         ids=lambda c: c[0])
def test_mixed_input_dtypes_match_torch(case):
    """A bfloat16 activation meeting float32 weights: torch casts both by the op's policy."""
    arrs = arrays(*case[1])
    kinds = ["bfloat16"] + ["float32"] * (len(arrs) - 1)
    e, t = both(arrs, kinds)
    expected = run(case, torch, TF, t, torch.bfloat16)
    got = run(case, ember, EF, e, ember.bfloat16)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]


@pytest.mark.parametrize("kinds", [("bfloat16", "float32"), ("bfloat16", "bfloat16"), ("float32", "float64"),
                                   ("float16", "bfloat16")])
@pytest.mark.parametrize("region", ["bfloat16", "float16"])
def test_promote_ops_match_torch(kinds, region):
    arrs = arrays((2, 3), (2, 3))
    e, t = both(arrs, list(kinds))
    for fn in (lambda L, a, b: L.cat([a, b]), lambda L, a, b: L.stack([a, b])):
        with torch.autocast("cpu", dtype=getattr(torch, region)):
            try:
                expected = fn(torch, *t)
            except RuntimeError as error:
                with ember.autocast("cpu", dtype=getattr(ember, region)):
                    with pytest.raises(RuntimeError, match=str(error)):
                        fn(ember, *e)
                continue
        with ember.autocast("cpu", dtype=getattr(ember, region)):
            got = fn(ember, *e)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]


def test_float64_is_not_cast():
    a, b = both(arrays((3, 3), (3, 3)), ["float64", "float64"])[0]
    with ember.autocast("cpu"):
        assert ember.mm(a, b).dtype == ember.float64


def test_gradients_reach_float32_leaves():
    x, w = arrays((4, 3), (5, 3))
    ew = ember.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    with ember.autocast("cpu"):
        ember.nn.functional.linear(ember.tensor(x), ew).float().pow(2).sum().backward()
    with torch.autocast("cpu"):
        TF.linear(torch.tensor(x), tw).float().pow(2).sum().backward()
    assert ew.grad.dtype == ember.float32
    np.testing.assert_allclose(ew.grad.numpy(), tw.grad.numpy(), rtol=5e-2, atol=5e-2)


def test_state_nesting_and_disable():
    assert not ember.is_autocast_enabled("cpu")
    assert ember.get_autocast_dtype("cpu") == ember.bfloat16
    x = ember.randn(3, 3)
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu")
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(x, x).dtype == ember.float32
        with ember.amp.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
            assert ember.mm(x, x).dtype == ember.float16
        assert ember.get_autocast_dtype("cpu") == ember.bfloat16
        assert ember.mm(x, x).dtype == ember.bfloat16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(x, x).dtype == ember.float32


def test_decorator_and_unsupported_dtype_warning():
    @ember.autocast("cpu")
    def f(a):
        return a @ a

    assert f(ember.randn(2, 2)).dtype == ember.bfloat16
    with pytest.warns(UserWarning, match="Disabling autocast"):
        region = ember.autocast("cpu", dtype=ember.float64)
    with region:
        assert not ember.is_autocast_enabled("cpu")
    with pytest.raises(ValueError, match="device_type"):
        ember.autocast(0)


def test_cuda_region_without_cuda_warns_and_disables():
    if ember.cuda.is_available():
        pytest.skip("CUDA present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with ember.autocast("cuda"):
            assert not ember.is_autocast_enabled("cuda")


def test_weight_cast_is_cached_inside_region():
    w = ember.randn(3, 3, requires_grad=True)
    with ember.autocast("cpu"):
        a = ember.mm(w, w)
        b = ember.mm(w, w)
        assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]
    with ember.autocast("cpu", cache_enabled=False):
        a = ember.mm(w, w)
        b = ember.mm(w, w)
        assert a.grad_fn.next_functions[0][0] is not b.grad_fn.next_functions[0][0]
