"""Index arrays as graph values (nn.Embedding, x[idx]) and captures split at reads (item, bool, tolist)."""

import numpy as np
import pytest

import ember
from ember import nn


def _grads(module):
    out = [p.grad.numpy().copy() for p in module.parameters()]
    for p in module.parameters():
        p.grad = None
    return out


class EmbedLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.linear = nn.Linear(16, 7)

    def forward(self, idx):
        return self.linear(self.embed(idx)).relu()


def test_embedding_linear_one_graph_new_ids():
    ember.manual_seed(0)
    model = EmbedLinear()
    ids = ember.randint(0, 50, (4, 9))
    explained = ember.compiler.explain(model)(ids)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = ember.compile(model)
    for _ in range(3):
        ids = ember.randint(0, 50, (4, 9))  # new token ids: replayed, not recaptured
        out = compiled(ids)
        out.square().sum().backward()
        got = _grads(model)
        ref = model(ids)
        ref.square().sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
        for a, b in zip(got, _grads(model)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert compiled._compiled.captures == 1
    assert not compiled._compiled.graph_breaks
    assert "int64(" in compiled._compiled.graphs[0].code  # the index read from a graph value


def test_getitem_with_index_tensor_and_int32():
    def f(x, idx):
        return (x[idx] * 2).sum(-1) + x.index_select(0, idx.to(ember.int32))[:, 0]

    compiled = ember.compile(f, fullgraph=True)
    x = ember.randn(10, 4)
    for _ in range(3):
        idx = ember.randint(0, 10, (6,))
        np.testing.assert_allclose(compiled(x, idx).numpy(), f(x, idx).numpy(), rtol=1e-6)
    assert compiled.captures == 1


def test_index_from_closure_buffer_is_read_at_replay():
    table = ember.arange(5)

    def f(x):
        return x[table]

    compiled = ember.compile(f, fullgraph=True)
    x = ember.randn(5, 3)
    compiled(x)
    table.copy_(ember.tensor([4, 3, 2, 1, 0]))
    np.testing.assert_array_equal(compiled(x).numpy(), x.numpy()[::-1])


def test_boolean_mask_still_breaks():
    def f(x):
        return x[x > 0] * 2

    explained = ember.compiler.explain(f)(ember.randn(8))
    assert explained.graph_break_count >= 1
    assert "boolean mask" in str(explained.break_reasons[0])


@pytest.mark.slow
def test_gpt_compiles_whole():
    from bench.nn import GPT_VOCAB, gpt_model

    ember.manual_seed(0)
    model = gpt_model(ember)
    rng = np.random.default_rng(0)
    ids = ember.from_numpy(rng.integers(0, GPT_VOCAB, (2, 16)))
    explained = ember.compiler.explain(model)(ids)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = ember.compile(model)
    for _ in range(2):
        ids = ember.from_numpy(rng.integers(0, GPT_VOCAB, (2, 16)))
        out = compiled(ids)
        out.square().mean().backward()
        got = _grads(model)
        ref = model(ids)
        ref.square().mean().backward()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-5)
        for a, b in zip(got, _grads(model)):
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)
    assert compiled._compiled.captures == 1 and not compiled._compiled.graph_breaks


# ---------------------------------------------------------------- split captures


def branchy(x):
    y = x.exp().sin()
    if y.sum() > 0:
        return y * 2
    return y * 3


def test_split_at_bool_explain_and_replay():
    explained = ember.compiler.explain(branchy)(ember.ones(5))
    assert explained.graph_count == 2 and explained.graph_break_count == 1
    assert "Tensor.__bool__" in explained.break_reasons[0].reason
    compiled = ember.compile(branchy)
    xs = [ember.full((5,), 0.3), ember.full((5,), 1.5), ember.full((5,), 0.2), ember.full((5,), 1.4)]
    signs = [float(np.sin(np.exp(x.numpy())).sum()) > 0 for x in xs]
    assert signs == [True, False, True, False]
    for x in xs * 2:
        x = x.clone().requires_grad_()
        out = compiled(x)
        out.sum().backward()
        got = x.grad.numpy().copy()
        x.grad = None
        ref = branchy(x)
        ref.sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert compiled.captures == 2  # one per path; later calls replay compiled segments only
    entry = next(iter(compiled.cache.values()))
    assert len(entry.chains) == 2 and all(len(c.segments) == 2 for c in entry.chains)
    assert len(compiled.graphs) == 4


def test_split_item_value_guard_and_give_up():
    def f(x):
        n = int(x.sum().item())
        return x * n

    compiled = ember.compile(f)
    x = ember.ones(3)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(x).numpy(), [3, 3, 3])
    assert compiled.captures == 1
    np.testing.assert_array_equal(compiled(x * 2).numpy(), [12, 12, 12])  # another value read: recaptured
    assert compiled.captures == 2
    for k in range(3, 3 + ember.compiler.config.max_chains):  # values that keep changing: eager in the end
        np.testing.assert_array_equal(compiled(x * k).numpy(), [9 * k * k / 3] * 3)
    assert next(iter(compiled.cache.values())).eager


def test_split_not_with_mutation_and_fullgraph():
    def f(x, buf):
        buf.add_(1)
        if x.sum() > 0:
            return x + buf
        return x - buf

    compiled = ember.compile(f)
    buf = ember.zeros(2)
    compiled(ember.ones(2), buf)
    compiled(ember.ones(2), buf)
    np.testing.assert_array_equal(buf.numpy(), [2, 2])
    with pytest.raises(ember.compiler.Unsupported):
        ember.compile(branchy, fullgraph=True)(ember.ones(3))


def test_split_random_ops_rewind():
    def f(x):
        y = x + ember.rand_like(x)
        if y.sum() > 0:
            return y
        return -y

    compiled = ember.compile(f)
    for value in (1.0, -5.0, 1.0, -5.0):
        x = ember.full((4,), value)
        ember.manual_seed(3)
        got = compiled(x)
        ember.manual_seed(3)
        np.testing.assert_allclose(got.numpy(), f(x).numpy())
