"""A module attribute the call sets to a tensor the graph computes is an extra graph output, set again by each
replay (from the second capture of a guard set that writes it on: the first may be one-time setup, see
test_capture.py's test_one_time_setup_writes_are_retried_once): the old-style weight hooks (spectral_norm, weight_norm, pruning: `module.weight = f(weight_orig)` in a
forward pre-hook) and a stored attention map compile to one graph instead of running eagerly."""

import warnings

import numpy as np

import ember
from ember import nn


def _train(make, compiled: bool, steps: int = 4):
    ember.manual_seed(0)
    model = make()
    run = ember.compile(model) if compiled else model
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.linspace(-1, 1, 24).reshape(4, 6)
    losses, weights = [], []
    for _ in range(steps):
        loss = run(x).pow(2).sum()
        weights.append(model.weight.detach().numpy().copy())  # the attribute the hook set, as after eager
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, weights, run


def _hooked(kind):
    def make():
        layer = nn.Linear(6, 3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            if kind == "spectral_norm":
                return nn.utils.spectral_norm(layer)
            if kind == "weight_norm":
                return nn.utils.weight_norm(layer)
        return nn.utils.prune.l1_unstructured(layer, "weight", 0.5)
    return make


def test_weight_hooks_compile_to_one_graph():
    for kind in ("spectral_norm", "weight_norm", "prune"):
        eager_losses, eager_weights, _ = _train(_hooked(kind), False)
        losses, weights, run = _train(_hooked(kind), True)
        np.testing.assert_allclose(losses, eager_losses, rtol=1e-5, err_msg=kind)
        for got, want in zip(weights, eager_weights):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=kind)
        # (the first capture wrote: run eagerly, in case it was one-time setup; the second wrote again)
        assert run._compiled.captures == 2 and not run._compiled.cache[next(iter(run._compiled.cache))].eager, kind


class _KeepsAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        attention = (self.proj(x) @ x.mT).softmax(-1)
        self.last_attention = attention.detach()
        self.last_scores = attention
        return attention @ x


def test_a_stored_attention_map_is_set_by_each_replay():
    ember.manual_seed(0)
    model = _KeepsAttention()
    compiled = ember.compile(model)
    for _ in range(3):
        x = ember.randn(2, 3, 4)
        out = compiled(x)
        np.testing.assert_allclose(out.detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        eager_map = model.last_attention.numpy().copy()
        compiled(x)
        np.testing.assert_allclose(model.last_attention.numpy(), eager_map, rtol=1e-6)
        assert not model.last_attention.requires_grad and model.last_scores.grad_fn is not None
    assert compiled._compiled.captures == 2 and not compiled._compiled.cache[next(iter(compiled._compiled.cache))].eager


def test_a_python_attribute_write_still_runs_eagerly():
    class Counts(nn.Module):
        def forward(self, x):
            self.calls = getattr(self, "calls", 0) + 1
            return x * 2

    model = Counts()
    compiled = ember.compile(model)
    for _ in range(3):
        compiled(ember.ones(2))
    assert model.calls == 3


def test_a_first_call_cache_is_not_replayed_as_a_write():
    """`if self.center is None: self.center = x.mean(0)` writes on the first call only: replays must keep the
    first call's center, not set it from each new x."""
    class Centers(nn.Module):
        def __init__(self):
            super().__init__()
            self.center = None

        def forward(self, x):
            if self.center is None:
                self.center = x.mean(0)
            return x - self.center

    model = Centers()
    compiled = ember.compile(model)
    first = ember.randn(4, 3)
    compiled(first)
    for _ in range(3):
        x = ember.randn(4, 3)
        np.testing.assert_allclose(compiled(x).numpy(), (x - first.mean(0)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(model.center.numpy(), first.mean(0).numpy(), rtol=1e-6)


def test_weight_hooks_with_varying_batch_sizes_get_a_size_generic_graph():
    def run(compiled):
        ember.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            model = nn.Sequential(nn.utils.spectral_norm(nn.Linear(6, 5)), nn.ReLU(),
                                  nn.utils.weight_norm(nn.Linear(5, 2)))
        run = ember.compile(model) if compiled else model
        optimizer = ember.optim.Adam(model.parameters(), lr=0.01)
        seen = []
        for i, batch in enumerate([4, 6, 8, 10, 4, 12, 3]):
            x = ember.linspace(-1, 1, batch * 6).reshape(batch, 6) * (i + 1)
            loss = run(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen.append((loss.item(), model[0].weight.detach().numpy().copy(), model[0].weight_u.numpy().copy()))
        return seen, run

    eager, _ = run(False)
    compiled, run = run(True)
    for (loss, weight, u), (loss2, weight2, u2) in zip(eager, compiled):
        np.testing.assert_allclose(loss2, loss, rtol=1e-5)
        np.testing.assert_allclose(weight2, weight, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(u2, u, rtol=1e-5, atol=1e-7)
    assert len(run._compiled.generic) == 1 and run._compiled.captures <= 4
