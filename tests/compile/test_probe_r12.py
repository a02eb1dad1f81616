"""Probe round 12: realistic programs (hooks, custom Functions, QAT observers, autocast, checkpointing, MoE,
parameter updates between calls, generators) compiled and compared with eager call by call; each test here
failed before its fix."""

import numpy as np
import pytest

import ember
import ember.nn as nn


def test_grad_read_follows_a_reassigned_parameter():
    """A compiled module method reading `p.grad` (a hand-written SGD step): the parameter is read from its entry
    at each call, so after `fc.weight = Parameter(...)` the replay updated the new weight with the old weight's
    stale gradient (zero_grad(set_to_none=False) left it not None)."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)

        def sgd(self, lr):
            with ember.no_grad():
                for p in self.parameters():
                    p.sub_(lr * p.grad)

    results = []
    for compiled in (False, True):
        ember.manual_seed(0)
        model = Net()
        step = ember.compile(model.sgd) if compiled else model.sgd
        for i in range(4):
            model(ember.randn(4, 3)).pow(2).sum().backward()
            step(0.1)
            model.zero_grad(set_to_none=False)
            if i == 1:
                model.fc.weight = nn.Parameter(model.fc.weight.detach() * 2)
        results.append([p.detach().numpy().copy() for p in model.parameters()])
    for eager, replayed in zip(*results):
        np.testing.assert_allclose(replayed, eager, rtol=1e-6, atol=1e-6)


def test_write_into_a_user_object_held_by_the_module_is_not_skipped():
    """forward bumping `self.stats.calls` and storing `self.stats.last`: the module's attribute still held the
    same object, so no write was seen, and the key (taken after the capture) already held the new values: every
    later call replayed without the writes (calls stayed 1, `last` the first input)."""
    class Stats:
        def __init__(self):
            self.calls = 0
            self.last = None

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.stats = Stats()

        def forward(self, x):
            self.stats.calls += 1
            self.stats.last = x.detach()
            return self.lin(x)

    model = Net()
    compiled = ember.compile(model)
    for i in range(4):
        x = ember.full((2, 3), float(i))
        np.testing.assert_allclose(compiled(x).detach().numpy(), model.lin(x).detach().numpy(), rtol=1e-6)
        assert model.stats.calls == i + 1
        assert model.stats.last is not None and float(model.stats.last[0, 0]) == float(i)


def test_write_into_a_user_object_argument_is_not_skipped():
    """`st.done = True` / `st.hist.append(...)` on an object passed in: the guard on its contents (taken before
    the call) matched again once the caller reset it, and the replay skipped the write."""
    class State:
        def __init__(self):
            self.done = False
            self.hist = []

    def step(x, st):
        st.done = True
        st.hist.append(1)
        return x * 2

    compiled = ember.compile(step)
    st = State()
    for _ in range(3):
        st.done = False
        st.hist.clear()
        np.testing.assert_allclose(compiled(ember.ones(2), st).numpy(), [2.0, 2.0])
        assert st.done and st.hist == [1]


def test_in_place_write_to_a_numpy_attribute_is_not_skipped():
    """`self.hist += 1` on a NumPy array attribute keeps the attribute's identity: the write went unseen and
    every replay skipped it."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.hist = np.zeros(3)

        def forward(self, x):
            self.hist += 1
            return self.lin(x)

    model = Net()
    compiled = ember.compile(model)
    for i in range(3):
        compiled(ember.ones(2, 3))
        np.testing.assert_array_equal(model.hist, np.full(3, i + 1.0))


def test_detach_of_a_view_result_does_not_break_the_graph():
    """`h.detach()` of a view an op made (`x.t()`, an embedding's reshaped rows, as an observer's
    `x_orig.detach()` in a QAT model) was taken for a view made outside ember's ops: the call ran eagerly."""
    emb = nn.Embedding(20, 8)

    def fn(ids, x):
        h = emb(ids)
        t = (x * 2).t()
        return h.detach() * 2 + h, t.detach() * 3 + t.data

    compiled = ember.compile(fn)
    for i in range(3):
        ids = ember.randint(0, 20, (2, 8))
        x = ember.full((8, 2), float(i), requires_grad=True)
        for got, want in zip(compiled(ids, x), fn(ids, x)):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert compiled.captures == 1 and not compiled.graph_breaks


def test_buffer_rebound_to_a_computed_tensor_replays():
    """Running statistics kept by rebinding a registered buffer (`self.mean = 0.9 * self.mean + ...`) made
    every call run eagerly; the compiled module's buffers are read from their entries, so the replay sets the
    entry again, as it does for a plain attribute the graph computes."""
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", ember.zeros(3))
            self.register_buffer("count", ember.zeros((), dtype=ember.int64))
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            if self.training:
                self.mean = 0.9 * self.mean + 0.1 * x.mean(0).detach()
                self.count = self.count + 1
            return self.lin(x - self.mean)

    runs = []
    for compiled in (False, True):
        ember.manual_seed(0)
        model = Norm()
        fn = ember.compile(model) if compiled else model
        out = []
        for i in range(6):
            y = fn(ember.randn(4, 3))
            y.sum().backward()
            out += [y.detach().numpy().copy(), model.mean.numpy().copy(), int(model.count),
                    model.lin.weight.grad.numpy().copy()]
            if i == 4:
                model.eval()
        runs.append(out)
    for eager, replayed in zip(*runs):
        np.testing.assert_allclose(replayed, eager, rtol=1e-6, atol=1e-7)
    entries = list(fn._compiled.cache.values())
    assert not entries[0].eager and fn._compiled.captures == 3  # first call (eager: a write), its retry, eval


def test_replaced_hook_dict_recaptures():
    """`m._forward_hooks = OrderedDict()` (a common way to drop every hook) is counted as a hook change
    (Module.__setattr__), so the compiled call stops replaying the removed hook and sees hooks added later."""
    from collections import OrderedDict

    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    model[0].register_forward_hook(lambda module, args, out: out * 100)
    compiled = ember.compile(model)
    x = ember.ones(1, 2)
    compiled(x)
    for module in model.modules():
        module._forward_hooks = OrderedDict()
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    model[0].register_forward_hook(lambda module, args, out: out * 3)
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_rebinding_an_equal_value_is_not_a_write():
    """`self.in_shape = x.shape` in forward binds a new (equal) Size object each call: attributes were compared
    by identity, so every capture saw a write and the module ran eagerly for good."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            self.in_shape = x.shape
            self.sizes = (x.shape[0], 3)
            return self.lin(x)

    model = Net()
    compiled = ember.compile(model)
    for _ in range(3):
        x = ember.randn(2, 3)
        np.testing.assert_allclose(compiled(x).detach().numpy(), model.lin(x).detach().numpy(), rtol=1e-6)
        assert model.in_shape == (2, 3) and model.sizes == (2, 3)
    assert not next(iter(compiled._compiled.cache.values())).eager


def test_sdpa_kernel_setting_is_guarded():
    """A graph captured with every SDPA backend allowed must not replay under `sdpa_kernel` restricting them:
    the restricted call raises where eager raises."""
    from ember.nn.attention import SDPBackend, sdpa_kernel

    q = ember.randn(1, 2, 4, 8)
    compiled = ember.compile(lambda q: ember.nn.functional.scaled_dot_product_attention(q, q, q))
    compiled(q)
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):  # no CPU kernel: no viable backend, as torch's CPU build
        with pytest.raises(RuntimeError, match="No viable backend") as eager:
            ember.nn.functional.scaled_dot_product_attention(q, q, q)
        with pytest.raises(RuntimeError) as raised:
            compiled(q)
        assert str(raised.value) == str(eager.value)
    compiled(q)  # allowed again: the first graph replays
