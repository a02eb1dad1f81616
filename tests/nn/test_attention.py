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
