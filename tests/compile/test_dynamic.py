"""Size-generic graphs: after a second batch size, one graph replays for any batch size (symbolic.py)."""

import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

pytestmark = pytest.mark.filterwarnings("error:ember.compile:RuntimeWarning")


class Block(nn.Module):
    """A pre-norm transformer block: view/reshape targets and split sizes depend on the batch size."""

    def __init__(self, width=32, heads=4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


def _mlp():
    return nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.LayerNorm(32), nn.Tanh(),
                         nn.Linear(32, 4))


@pytest.mark.parametrize("dynamic", [True, None])
@pytest.mark.parametrize("name", ["mlp", "block"])
def test_one_graph_for_every_batch_size(name, dynamic):
    ember.manual_seed(0)
    model, shape = (_mlp(), (12,)) if name == "mlp" else (Block(), (8, 32))
    compiled = ember.compile(model, dynamic=dynamic)
    params = list(model.parameters())
    for B in (2, 3, 5, 8, 3, 1):
        x = ember.randn(B, *shape, requires_grad=True)
        out = compiled(x)
        expected = model(x)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
        grads = ember.autograd.grad(out.sum(), [x] + params)
        expected_grads = ember.autograd.grad(expected.sum(), [x] + params)
        for a, e in zip(grads, expected_grads):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)
    state = compiled._compiled
    # the first size, then the size-generic graph; B=1 gets its own graph (sizes 0 and 1 are never symbolic)
    assert state.captures == 3, state.dynamic_status
    assert state.dynamic_status.startswith("size-generic"), state.dynamic_status
    assert sum(getattr(graph, "generic", False) for graph in state.graphs) == 1


class ManualAttention(nn.Module):
    """nanoGPT's attention without SDPA: a causal mask sliced from a buffer with [:T, :T] and a softmax over the
    sequence, so the size that changes is the fused kernels' row length."""

    def __init__(self, width=32, heads=4, block=1200) -> None:
        super().__init__()
        self.heads = heads
        self.ln, self.qkv = nn.LayerNorm(width), nn.Linear(width, 3 * width)
        self.register_buffer("bias", ember.tril(ember.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
        att = F.softmax(att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")), dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)


def test_sequence_length_is_the_symbolic_size_when_only_it_changes():
    """A fixed batch and a growing sequence: one graph serves every length, including 1 and one longer than a
    reduction block (1024), forward and gradients."""
    ember.manual_seed(0)
    model = ManualAttention()
    compiled = ember.compile(model)
    params = list(model.parameters())
    for T in (8, 12, 1, 5, 1100, 3):
        x = ember.randn(2, T, 32, requires_grad=True)
        out, expected = compiled(x), model(x)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
        weight = ember.randn(*out.shape)
        grads = ember.autograd.grad((out * weight).sum(), [x] + params)
        expected_grads = ember.autograd.grad((expected * weight).sum(), [x] + params)
        for a, e in zip(grads, expected_grads):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=2e-4, atol=2e-4)
    state = compiled._compiled
    assert state.captures == 3 and state.dynamic_status.startswith("size-generic"), state.dynamic_status


@pytest.mark.parametrize("fn", [lambda x: F.softmax(x * 2, -1) + 1, lambda x: F.layer_norm(x, (x.shape[-1],)),
                                lambda x: F.log_softmax(x, -1).sum(-1), lambda x: (x - x.mean(-1, True)).pow(2)],
                         ids=["softmax", "layer_norm", "log_softmax_sum", "centered_square"])
def test_fused_row_length_is_symbolic(fn):
    compiled = ember.compile(fn)
    for K in (7, 9, 1, 1500, 33):
        x = ember.randn(3, K, requires_grad=True)
        out, expected = compiled(x), fn(x)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
        grad, = ember.autograd.grad(out.sum(), [x])
        expected_grad, = ember.autograd.grad(expected.sum(), [x])
        np.testing.assert_allclose(grad.numpy(), expected_grad.numpy(), rtol=1e-4, atol=1e-4)
    assert compiled.captures == 3 and compiled.dynamic_status.startswith("size-generic"), compiled.dynamic_status


def test_batch_and_sequence_length_are_two_symbols():
    """Sizes that differ in two dims at once give two symbols, B and T (torch gives each dynamic dim its own);
    reshape(B * T, C) is their product.  Later calls with any batch and length replay that graph."""
    ember.manual_seed(0)
    model = ManualAttention()
    compiled = ember.compile(model)
    for B, T in ((2, 8), (3, 10), (4, 5), (2, 30), (5, 7)):
        x = ember.randn(B, T, 32)
        np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    state = compiled._compiled
    assert state.captures == 2 and state.dynamic_status == "size-generic graph, symbolic sizes B (2 -> 3), T (8 -> 10)"
    assert "L=(B, 4, T), K=T" in state.graphs[-1].code  # the softmax over the sequence


def test_ambiguous_sizes_are_refused_not_guessed():
    """B 2 -> 3 and T 4 -> 6 change by the same factor: an int 8 -> 18 is B*T or 2*B**2, so no generic graph."""
    compiled = ember.compile(lambda x: x.reshape(-1).exp())
    for B, T in ((2, 4), (3, 6), (2, 6)):
        x = ember.randn(B, T)
        np.testing.assert_allclose(compiled(x).numpy(), x.reshape(-1).exp().numpy(), rtol=1e-6)
    assert "ambiguous" in compiled.dynamic_status or compiled.captures == 3


def test_size_one_is_never_symbolic():
    """x.squeeze() drops a batch of 1: a generic graph replayed at B=1 returned a [4] sum where eager sums the
    squeezed [4] vector to a scalar.  As in torch, 0 and 1 get their own graphs."""
    fn = lambda x: (x.squeeze() * 2).sum(0)  # noqa: E731
    compiled = ember.compile(fn)
    for B in (2, 3, 1, 4, 1):
        x = ember.randn(B, 4)
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-6)
    assert compiled.captures == 3 and compiled.dynamic_status.startswith("size-generic")


def test_a_miss_after_a_generic_match_recaptures():
    """A size served by the generic graph, then another guard missing (the dtype): a plain recapture (the
    matched key had no guard labels, which raised KeyError)."""
    compiled = ember.compile(lambda x: (x * 2 + 1).relu().sum(-1))
    for B in (2, 3, 5):
        compiled(ember.randn(B, 4))
    x = ember.randn(5, 4, dtype=ember.float64)
    np.testing.assert_allclose(compiled(x).numpy(), (x * 2 + 1).relu().sum(-1).numpy())
    assert compiled.captures == 3


def _branch_on_size(x):
    if x.shape[0] > 4:
        return x * 3
    return x + 1


def _crop_like_generate(x):
    x = x if x.shape[1] <= 6 else x[:, -6:]  # nanoGPT's generate() crops the context to the block size
    return x * 2 + ember.arange(6.0)[:x.shape[1]]


@pytest.mark.parametrize("fn, sizes", [
    (_branch_on_size, [(2, 3), (3, 3), (8, 3), (4, 3), (9, 3)]),
    (lambda x: x[:, :min(x.shape[1], 10)] * 2, [(2, 4), (2, 6), (2, 16), (2, 7)]),
    (lambda x: x[:, :x.shape[1] - 1].sum(1), [(3, 4), (5, 6), (2, 4), (7, 8)]),  # T - 1 == B in both captures
    (_crop_like_generate, [(2, 2), (2, 3), (2, 4), (2, 7), (2, 5)]),
], ids=["if_on_size", "min_of_size", "coincidence", "generate_crop"])
def test_python_decisions_on_sizes_are_checked_before_a_generic_replay(fn, sizes):
    """A Python `if`, `min` or arithmetic on a size leaves nothing in the graph: a new size that fit the key
    pattern replayed a graph it would not have built (x * 3 gave x + 1; a crop to 6 replayed uncropped and
    failed).  A new size is traced once and replays the generic graph only if its capture is that graph."""
    compiled = ember.compile(fn)
    for size in sizes:
        x = ember.rand(*size)
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-6)
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-6)  # the replay of this size


def test_a_validated_size_replays_without_a_trace():
    compiled = ember.compile(lambda x: (x * 2).softmax(-1))
    for T in (4, 6, 9, 9, 9, 11, 4):
        compiled(ember.randn(3, T))
    # 4 and 6 captured (the generic graph); 9 and 11 traced once each to check they fit; repeats replay
    assert compiled.captures == 2 and compiled.validations == 2 and len(compiled.matched) == 2


def test_a_returned_size_is_not_generic():
    compiled = ember.compile(lambda x: (x * 2, x.shape[0]))
    for B in (2, 3, 5):
        assert compiled(ember.ones(B, 2))[1] == B
    assert "returned Python number" in compiled.dynamic_status


def test_size_dependent_float_literal_falls_back_to_a_graph_per_size():
    compiled = ember.compile(lambda x: (x * math.sqrt(x.shape[0])).exp().sum(-1))
    for B in (2, 3, 4):
        x = ember.randn(B, 5)
        np.testing.assert_allclose(compiled(x).numpy(), (x * math.sqrt(B)).exp().sum(-1).numpy(), rtol=1e-6)
    assert compiled.captures == 3
    assert compiled.dynamic_status.startswith("not size-generic"), compiled.dynamic_status


@pytest.mark.parametrize("fn, reference", [
    (lambda x: (x / x.shape[0]).exp().sum(-1), lambda x, n: (x / n).exp().sum(-1)),
    (lambda x: x * x.shape[0], lambda x, n: x * n),
    (lambda x: ((x - x.mean(0)) ** 2).sum(0) / (x.shape[0] - 1), lambda x, n: x.var(0)),
])
def test_int_operands_that_are_sizes_are_bound_at_each_call(fn, reference):
    """x / x.shape[0], x * B, an unbiased variance's / (B - 1): the int operand is a Batch of the size-generic
    graph, bound to each call's size (an earlier version of the graph replayed one size's number: ember.export's
    tests found sizes 4 and 5 returning 3 * x), and its node runs unfused."""
    compiled = ember.compile(fn)
    for n in (2, 3, 4, 5, 7):
        x = ember.randn(n, 3)
        np.testing.assert_allclose(compiled(x).numpy(), reference(x, n).numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures == 2 and compiled.dynamic_status.startswith("size-generic"), compiled.dynamic_status


def test_dynamic_false_never_generalizes():
    compiled = ember.compile(lambda x: x.tanh() * 2, dynamic=False)
    for B in (2, 3, 4):
        compiled(ember.randn(B, 5))
    assert compiled.captures == 3 and not compiled.generic


def test_tensors_made_in_the_function_compare_by_contents():
    """AdaptiveAvgPool2d((2, 2)) makes its kernel of ones in forward: each capture made a new one, so two batch
    sizes never gave a size-generic graph (a CNN got a graph per batch size).  Made tensors now compare
    by dtype, shape and contents; one whose contents depend on the size still gets a graph per size, and a
    size at which they differ from the generic graph's is traced to its own graph."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                          nn.Linear(16, 2)).eval()
    compiled = ember.compile(model)
    with ember.no_grad():
        for B in (8, 5, 3, 6):
            x = ember.randn(B, 3, 8, 8)
            np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
    assert compiled._compiled.captures == 2 and compiled._compiled.validations == 2

    def capped(x):
        return x * ember.full((4,), float(min(x.shape[0], 6)))

    compiled = ember.compile(capped)
    for B in (8, 7, 3, 9):
        x = ember.ones(B, 4)
        np.testing.assert_array_equal(compiled(x).numpy(), capped(x).numpy())
    # 8 and 7 captured (generic); 3 and 9 traced to check: 3 does not fit (its own graph), 9 does
    assert (compiled.captures, compiled.validations, len(compiled.cache), len(compiled.matched)) == (2, 2, 3, 1)

    compiled = ember.compile(lambda x: x * ember.full((4,), float(x.shape[0])))
    for B in (2, 3, 4):
        np.testing.assert_array_equal(compiled(ember.ones(B, 4)).numpy(), np.full((B, 4), B, np.float32))
    assert compiled.captures == 3


def test_batchnorm_training_is_batch_generic_and_updates_running_stats():
    """The running variance's n/(n-1) was a Python float, a literal of the graph: training BatchNorm got a
    graph per batch size.  It is an op now (unbiased_var).  And a validation capture's in-place writes (the
    running stats) were compared before they were attached to its graph, so no size with buffer writes ever
    fit a generic graph."""
    import copy

    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.InstanceNorm2d(4, track_running_stats=True, affine=True), nn.Flatten(),
                          nn.Linear(4 * 36, 2))
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    for B in (8, 5, 3, 7, 3):
        x = ember.randn(B, 3, 6, 6)
        out, expected = compiled(x), twin(x)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
        out.square().sum().backward()
        expected.square().sum().backward()
        for (name, a), b in zip(model.state_dict().items(), twin.state_dict().values()):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
        for (name, a), b in zip(model.named_parameters(), twin.parameters()):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert compiled._compiled.captures == 2 and compiled._compiled.validations == 2


class _Positions(nn.Module):
    """A GPT-style model: positions from arange(T) and a causal mask from ones(T, T).tril(), made in forward."""

    def __init__(self) -> None:
        super().__init__()
        self.tok, self.pos, self.head = nn.Embedding(11, 8), nn.Embedding(32, 8), nn.Linear(8, 11)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(0, T, dtype=ember.long))
        mask = ember.ones(T, T).tril()
        att = (x @ x.transpose(1, 2)).masked_fill(mask == 0, float("-inf")).softmax(-1)
        return self.head(att @ x)


def test_factories_of_sizes_are_made_at_each_calls_sizes():
    """arange(T) and ones(T, T) made in forward were constants of the graph, whose contents differ with T: every
    sequence length got its own graph (nanoGPT's generate() ran eagerly past the cache limit).  A tensor made
    from numbers alone is now a recipe, its numbers params that may be sizes, made anew at each call."""
    ember.manual_seed(0)
    model = _Positions()
    compiled = ember.compile(model)
    for B, T in ((2, 5), (2, 7), (2, 9), (3, 4), (2, 12), (2, 9)):
        idx = ember.randint(0, 11, (B, T))
        out, expected = compiled(idx), model(idx)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
        out.sum().backward()
        grad = model.pos.weight.grad.clone()
        model.zero_grad()
        expected.sum().backward()
        np.testing.assert_allclose(grad.numpy(), model.pos.weight.grad.numpy(), rtol=1e-5, atol=1e-5)
        model.zero_grad()
    assert compiled._compiled.captures == 3  # T generic at 5 -> 7; B and T at 3 x 4
    assert "T" in compiled._compiled.dynamic_status


def test_generate_with_a_cropped_context_keeps_one_graph():
    """nanoGPT's generate(): the context grows, then is cropped to idx[:, -block:], whose row stride grows with
    idx.  The layout guard keyed the exact strides, so each token recaptured until the recompile limit; it
    keys how strides relate now, and positions come from arange(T) (a recipe)."""
    ember.manual_seed(0)
    model = _Positions().eval()
    compiled = ember.compile(model)

    @ember.no_grad()
    def generate(net, idx, n, block=8):
        for _ in range(n):
            cond = idx if idx.size(1) <= block else idx[:, -block:]
            idx = ember.cat([idx, net(cond)[:, -1, :].argmax(-1, keepdim=True)], 1)
        return idx

    start = ember.randint(0, 11, (2, 1))
    assert generate(compiled, start, 24).tolist() == generate(model, start, 24).tolist()
    state = compiled._compiled
    assert not state.gave_up and state.captures <= 4 and state.recompiles <= 1, (state.captures, state.recompiles)


def test_sizes_offset_from_a_symbol_are_generic():
    """`T - 1` (a shifted target), `split([T - 2, 2])` and a KV cache grown by cat (past + 1) were refused as
    not `m * T`, so language-model steps and cached decoding got a graph per length.  One symbol times m plus a
    small constant is a size now (ember.compile only; each new size is still checked by a traced call)."""
    ember.manual_seed(0)
    emb, head = nn.Embedding(11, 8), nn.Linear(8, 11)

    def step(idx):
        x = emb(idx)
        logits = head(x.cumsum(1))[:, :-1]
        a, b = x.split([x.shape[1] - 2, 2], dim=1)
        return F.cross_entropy(logits.reshape(-1, 11), idx[:, 1:].reshape(-1)) + a.mean() + b.sum()

    compiled = ember.compile(step)
    for T in (6, 8, 10, 5, 12):
        idx = ember.randint(0, 11, (2, T))
        np.testing.assert_allclose(compiled(idx).item(), step(idx).item(), rtol=1e-6)
    assert compiled.captures == 2 and compiled.validations == 3

    def decode(x, past, table):
        k = ember.cat([past, x], dim=1)
        q = x + table[ember.arange(past.shape[1], past.shape[1] + x.shape[1])]
        return (q @ k.transpose(1, 2)).softmax(-1) @ k, k

    table = ember.randn(64, 8)
    compiled = ember.compile(decode)
    prompt = ember.randn(1, 4, 8)
    cache = expected_cache = prompt[:, :0]
    for i in range(20):
        x = prompt if i == 0 else prompt[:, -1:]
        out, cache = compiled(x, cache, table)
        expected, expected_cache = decode(x, expected_cache, table)
        np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert compiled.captures <= 3


def test_strided_convolution_lengths_fit_one_size_generic_graph():
    """A stride-2 convolution's output length is (T + c) // 2, not m * T: sizes take a floor-division form,
    and a size where the first guess of c was wrong (two even sizes cannot tell T // 2 from (T + 1) // 2) is
    fitted again with the earlier captures, after which odd and even lengths replay one graph (each new size
    traced once to validate, as for every size-generic graph)."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(4, 8, 3, stride=2, padding=1), nn.GELU(),
                          nn.Conv1d(8, 8, 3, stride=2, padding=1), nn.Flatten())
    compiled = ember.compile(model)
    inner = compiled._compiled

    def check(length):
        x = ember.randn(2, 4, length, requires_grad=True)
        out = compiled(x)
        np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        out.sum().backward()

    for length in (12, 14, 16, 13):
        check(length)
    graphs, generics = len(inner.cache), len(inner.generic)
    for length in (15, 18, 20, 24, 17, 30, 21):
        check(length)
    assert inner.captures == 2 and len(inner.cache) == graphs and len(inner.generic) == generics
    divisors = {dim.divisor for node in inner.generic[-1][1].compiled.graph.nodes for value in node.results
                for dim in (value.symbolic_shape or ()) if hasattr(dim, "divisor")}
    assert {2, 4} <= divisors  # (T + 1) // 2 after the first convolution, (T + 3) // 4 after the second


def test_flattened_conv_map_with_height_and_width_varying_fits_one_graph():
    """A conv map flattened over its spatial dims (`h.flatten(2)`: spatial tokens for attention) is
    H' * W', a product of two floor terms, each found from the conv outputs' own shapes: images of any size
    then replay one size-generic graph (it took a graph per size, up to the cache limit, before)."""
    ember.manual_seed(0)

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)

        def forward(self, x):
            t = self.c2(self.c1(x).relu()).flatten(2).transpose(1, 2)  # (B, H'W', C)
            return ((t @ t.transpose(1, 2)).softmax(-1) @ t).mean(1)

    model = Tokens()
    compiled = ember.compile(model)
    inner = compiled._compiled
    sizes = [(16, 16), (24, 20), (32, 28), (20, 36), (40, 16), (28, 28), (36, 44), (44, 36), (12, 20), (48, 48)]
    for height, width in sizes:
        x = ember.randn(2, 3, height, width, requires_grad=True)
        out = compiled(x)
        np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
        (grad,) = ember.autograd.grad(out.sum(), [x])
        (want,) = ember.autograd.grad(model(x).sum(), [x])
        np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    assert len(inner.cache) <= 3 and inner.generic and "size-generic" in inner.dynamic_status
    factors = {dim.factors for node in inner.generic[-1][1].compiled.graph.nodes for value in node.results
               for dim in (value.symbolic_shape or ()) if getattr(dim, "factors", ())}
    assert any(len(f) == 2 for f in factors)  # H' * W' as one size


def test_square_images_flattened_map_is_a_squared_floor_term():
    """Square images give one symbol, and the flattened map is H' * H' (the same floor term twice)."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.Flatten(2))
    compiled = ember.compile(model)
    for side in (16, 24, 32, 20, 40, 28):
        x = ember.randn(2, 3, side, side)
        np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    # (two sizes also fit 10 * S - 96: that guess fails the third size's validation and is fitted again)
    assert len(compiled._compiled.cache) <= 3 and compiled._compiled.generic


@pytest.mark.parametrize("layer", ["nearest", "bilinear", "bicubic", "reflect", "replicate", "circular"])
def test_upsampling_and_padding_tables_are_remade_at_each_size(layer):
    """Interpolation's indices and weights and padding's source positions are host tables of the sizes: noted
    as recipes, a size-generic graph makes them again at each call's sizes (a graph per size before)."""
    ember.manual_seed(0)
    resize = (nn.Upsample(scale_factor=2, mode=layer) if layer in ("nearest", "bilinear", "bicubic") else
              nn.ReflectionPad2d(2) if layer == "reflect" else nn.ReplicationPad2d(1) if layer == "replicate" else
              nn.CircularPad2d(1))
    model = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), resize, nn.Conv2d(4, 2, 3, padding=1))
    compiled = ember.compile(model)
    for height in (16, 24, 32, 40, 20, 28, 36):
        x = ember.randn(2, 3, height, height + 4, requires_grad=True)
        out = compiled(x)
        np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
        (grad,) = ember.autograd.grad(out.square().sum(), [x])
        (want,) = ember.autograd.grad(model(x).square().sum(), [x])
        np.testing.assert_allclose(grad.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    inner = compiled._compiled
    assert inner.generic and len(inner.cache) <= 3, inner.dynamic_status
