"""scaled_dot_product_attention beyond the op database: dropout, block sizes, memory-efficient blocks."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck

RNG = np.random.default_rng(0)


def _qkv(length, source, dim=3, dtype=np.float64):
    return [ember.tensor(RNG.standard_normal((2, length if i == 0 else source, dim)).astype(dtype),
                         requires_grad=True) for i in range(3)]


@pytest.mark.parametrize("causal", [True, False])
def test_dropout_backward_uses_the_forward_masks(causal):
    """Backward regenerates each block's dropout mask; gradcheck fails if any block's mask differs."""
    q, k, v = _qkv(70, 70)

    def attention(q, k, v):
        ember.manual_seed(3)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=causal)

    assert gradcheck(attention, (q, k, v), atol=1e-6)


def test_dropout_follows_manual_seed():
    q, k, v = _qkv(8, 8, dtype=np.float32)
    ember.manual_seed(0)
    first = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    second = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    ember.manual_seed(0)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert np.array_equal(first.detach().numpy(), again.detach().numpy())
    assert not np.array_equal(first.detach().numpy(), second.detach().numpy())


@pytest.mark.parametrize("block", [1, 7, 32, 200])
@pytest.mark.parametrize("causal", [True, False])
def test_block_size_does_not_change_the_result(block, causal):
    q, k, v = _qkv(45, 45 if causal else 20)
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    reference.sum().backward()
    expected = [t.grad.clone() for t in (q, k, v)]
    previous = F.get_sdpa_block_size()
    try:
        F.set_sdpa_block_size(block)
        for t in (q, k, v):
            t.grad = None
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        out.sum().backward()
    finally:
        F.set_sdpa_block_size(previous)
    ember.testing.assert_close(out, reference)
    for t, grad in zip((q, k, v), expected):
        ember.testing.assert_close(t.grad, grad)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_kept_softmax_and_recomputed_softmax_agree(monkeypatch, causal, dropout):
    """Short keys keep the forward's softmax for backward; long ones recompute it: same gradients."""
    from ember.nn import _functional_attention as attention

    q, k, v = _qkv(40, 40, dim=16)
    assert attention._keeps_probabilities(tuple(q.shape), tuple(k.shape))
    results = []
    for keeps in (True, False):
        monkeypatch.setattr(attention, "_keeps_probabilities", lambda qs, ks, keeps=keeps: keeps)
        for t in (q, k, v):
            t.grad = None
        ember.manual_seed(7)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=dropout)
        (out * out).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    for kept, recomputed in zip(*results):
        np.testing.assert_allclose(kept, recomputed, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("keeps", [True, False])
def test_generated_softmax_blocks_match_numpy_blocks(monkeypatch, causal, keeps):
    """Blocks of >= 16k scores take the softmax from a generated kernel (one loop); smaller ones and
    EMBER_EAGER_KERNELS=0 take NumPy's passes: both give the same output and gradients."""
    from ember._compile import native
    from ember.nn import _functional_attention as attention

    if not native.enabled():
        pytest.skip("no C compiler: blocks always use NumPy")
    monkeypatch.setattr(attention, "_keeps_probabilities", lambda qs, ks: keeps)
    q, k, v = (ember.tensor(RNG.standard_normal((2, 4, 128, 16)).astype(np.float32), requires_grad=True)
               for _ in range(3))
    results = []
    for use_kernel in (True, False):
        calls = []
        real = attention._softmax_kernel
        monkeypatch.setattr(attention, "_softmax_kernel",
                            lambda *args: calls.append(1) or (real(*args) if use_kernel else None))
        for t in (q, k, v):
            t.grad = None
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        (out * out).sum().backward()
        assert calls
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in (q, k, v)])
    assert ("sdpa_softmax_0.25", "float32", 1, False, 0, 0) in native._built  # the scale 1/sqrt(16) folded in
    for generated, passes in zip(*results):
        np.testing.assert_allclose(generated, passes, rtol=1e-5, atol=1e-5)  # torch float32 atol


@pytest.mark.parametrize("heads_last", [True, False])
def test_output_layout_follows_the_query_as_torch(heads_last):
    """torch's CPU flash kernel lays its output out like the query: heads-last queries (split from one qkv
    projection) give a heads-last output, whose transpose(1, 2).reshape back to tokens is a view."""
    import torch

    values = RNG.standard_normal((2, 6, 3 * 8)).astype(np.float32)
    strides, gradients = [], []
    for lib in (torch, ember):
        x = lib.tensor(values, requires_grad=True)
        if heads_last:
            q, k, v = (t.view(2, 6, 2, 4).transpose(1, 2) for t in x.split(8, dim=2))
        else:
            q, k, v = (t.reshape(2, 6, 2, 4).transpose(1, 2).contiguous() for t in x.split(8, dim=2))
        out = lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        strides.append(out.stride())
        tokens = out.transpose(1, 2).reshape(2, 6, 8)
        (tokens * lib.arange(96.0).reshape(2, 6, 8)).sum().backward()
        gradients.append(x.grad.numpy())
    assert strides[0] == strides[1]
    np.testing.assert_allclose(gradients[1], gradients[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("causal", [True, False])
def test_scores_are_scaled_like_torch(causal):
    """The scale multiplies the scores (after Q K^T), as torch's flash kernel does, not the queries: with a
    scale that is not a power of two the two orders round differently, ~1e-4 apart on these inputs, and the
    output must stay within float32 rounding of torch's (~2e-5)."""
    import torch

    arrays = [RNG.standard_normal((2, 4, 128, 64)).astype(np.float32) * 3 for _ in range(3)]
    got = F.scaled_dot_product_attention(*(ember.tensor(a) for a in arrays), is_causal=causal, scale=0.3)
    want = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in arrays),
                                                            is_causal=causal, scale=0.3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=4e-5)
