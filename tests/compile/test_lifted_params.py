"""A compiled module's parameters and buffers are read from their entries at each call (as torch lifts them to
graph inputs): functional_call on a compiled module (MAML's inner loop) replays one graph with the given
tensors, gradients reach them, and buffer writes land in the given buffers."""

import warnings

import numpy as np

import ember
from ember import nn
from ember.func import functional_call


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def _maml(model, steps=6):
    """A few MAML inner steps through `model`, each with fresh (non-leaf) parameters; the meta-gradient."""
    x = ember.linspace(-1, 1, 20).reshape(5, 4)
    start = {k: v.detach().clone().requires_grad_() for k, v in _mlp().named_parameters()}
    params = dict(start)
    losses = []
    for _ in range(steps):
        loss = functional_call(model, params, (x,)).pow(2).mean()
        grads = ember.autograd.grad(loss, list(params.values()), create_graph=True)
        params = {k: v - 0.5 * g for (k, v), g in zip(params.items(), grads)}
        losses.append(loss.item())
    meta = functional_call(model, params, (x,)).sum()
    meta.backward()
    return losses, [start[k].grad.numpy() for k in start]


def test_functional_call_on_a_compiled_module_replays_one_graph():
    eager_losses, eager_grads = _maml(_mlp())
    compiled = ember.compile(_mlp())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no recompile-limit warning
        losses, grads = _maml(compiled)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    for got, want in zip(grads, eager_grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    assert compiled._compiled.captures == 1 and compiled._compiled.recompiles == 0


def test_buffers_given_to_functional_call_take_the_writes():
    bn = nn.BatchNorm1d(3)
    compiled = ember.compile(bn)
    x = ember.randn(8, 3)
    compiled(x)  # captured with the module's own buffers
    own_mean = bn.running_mean.clone()
    mine = {"running_mean": ember.zeros(3), "running_var": ember.ones(3),
            "num_batches_tracked": ember.tensor(0)}
    out = functional_call(compiled, mine, (x,))
    np.testing.assert_allclose(out.detach().numpy(), functional_call(nn.BatchNorm1d(3), {
        "running_mean": ember.zeros(3), "running_var": ember.ones(3),
        "num_batches_tracked": ember.tensor(0)}, (x,)).detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(mine["running_mean"].numpy(), 0.1 * x.mean(0).numpy(), rtol=1e-5, atol=1e-7)
    assert int(mine["num_batches_tracked"]) == 1
    np.testing.assert_array_equal(bn.running_mean.numpy(), own_mean.numpy())  # the module's own: untouched
    assert compiled._compiled.captures == 1


def test_a_replaced_parameter_gets_the_gradient():
    layer = nn.Linear(3, 2)
    compiled = ember.compile(layer)
    x = ember.randn(4, 3)
    compiled(x).sum().backward()
    old = layer.weight
    layer.weight = nn.Parameter(ember.randn(2, 3))
    compiled(x).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.tile(x.numpy().sum(0), (2, 1)), rtol=1e-5)
    np.testing.assert_allclose(old.grad.numpy(), np.tile(x.numpy().sum(0), (2, 1)), rtol=1e-5)  # first call's only
    assert compiled._compiled.captures == 1


class _Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 3, bias=False)
        self.head = nn.Linear(3, 3, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, x):
        return self.head(self.embed(x))


def test_untying_weights_recaptures():
    model = _Tied()
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    model.head.weight = nn.Parameter(ember.eye(3))  # untied: the graph read one entry for both
    np.testing.assert_allclose(compiled(x).detach().numpy(), model.embed(x).detach().numpy(), rtol=1e-6)
    assert compiled._compiled.captures == 2


def test_graph_code_names_the_entry():
    layer = nn.Linear(3, 2)
    compiled = ember.compile(layer)
    compiled(ember.randn(4, 3))
    code = compiled._compiled.graphs[0].code
    assert "parameter weight (read from the module each call)" in code


def test_orthogonal_parametrization_captures_one_graph():
    """orthogonal()'s matrix_exp is ember's op (no norm read into Python): one graph, no break, eager's numbers."""
    for omap in ("matrix_exp", "householder"):
        ember.manual_seed(0)
        layer = nn.utils.parametrizations.orthogonal(nn.Linear(5, 5), orthogonal_map=omap)
        compiled = ember.compile(layer)
        x = ember.randn(3, 5)
        for _ in range(3):
            out = compiled(x)
            np.testing.assert_allclose(out.detach().numpy(), layer(x).detach().numpy(), rtol=1e-5, atol=1e-6)
            with ember.no_grad():
                layer.parametrizations.weight.original.add_(0.05)
        assert compiled._compiled.captures == 1 and not compiled._compiled.graph_breaks, omap
