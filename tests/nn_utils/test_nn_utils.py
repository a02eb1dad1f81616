"""ember.nn.utils against torch.nn.utils: values, gradients, state_dict keys and module structure."""

import math

import numpy as np
import pytest

import ember
import ember.nn as enn

torch = pytest.importorskip("torch")
pytest.importorskip("torch.nn.utils.prune")  # not imported by torch itself

tnn = torch.nn

RNG = np.random.default_rng(0)


def linear_pair(out_f=4, in_f=3):
    w = RNG.standard_normal((out_f, in_f))
    b = RNG.standard_normal(out_f)
    t = tnn.Linear(in_f, out_f, dtype=torch.float64)
    e = enn.Linear(in_f, out_f, dtype=ember.float64)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(w))
        t.bias.copy_(torch.tensor(b))
    e.weight.data = ember.tensor(w)
    e.bias.data = ember.tensor(b)
    return e, t


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()), rtol=tol, atol=tol)


def backward_both(e, t, x=None):
    x = RNG.standard_normal((2, t.in_features)) if x is None else x
    (e(ember.tensor(x)) ** 2).sum().backward()
    (t(torch.tensor(x)) ** 2).sum().backward()


# ---------------------------------------------------------------- clip_grad and vectors


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(norm_type, max_norm):
    grads = [RNG.standard_normal((3, 4)), RNG.standard_normal(5)]
    ep = [ember.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
    tp = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for e, t, g in zip(ep, tp, grads):
        e.grad = ember.tensor(g)
        t.grad = torch.tensor(g)
    close(ember.nn.utils.clip_grad_norm_(ep, max_norm, norm_type), tnn.utils.clip_grad_norm_(tp, max_norm, norm_type))
    for e, t in zip(ep, tp):
        close(e.grad, t.grad)
    close(ember.nn.utils.get_total_norm([e.grad for e in ep], norm_type),
          tnn.utils.get_total_norm([t.grad for t in tp], norm_type))


def test_clip_grad_nonfinite_value_and_with_norm():
    p = ember.zeros(3, requires_grad=True)
    p.grad = ember.tensor([1.0, float("inf"), 0.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        ember.nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    g = RNG.standard_normal(6) * 3
    e, t = ember.zeros(6, dtype=ember.float64, requires_grad=True), torch.zeros(6, dtype=torch.float64, requires_grad=True)
    e.grad, t.grad = ember.tensor(g), torch.tensor(g)
    ember.nn.utils.clip_grad_value_(e, 1.0, foreach=True)
    tnn.utils.clip_grad_value_(t, 1.0)
    close(e.grad, t.grad)
    e.grad, t.grad = ember.tensor(g), torch.tensor(g)
    ember.nn.utils.clip_grads_with_norm_([e], 2.0, ember.tensor(10.0))
    tnn.utils.clip_grads_with_norm_([t], 2.0, torch.tensor(10.0))
    close(e.grad, t.grad)
    assert float(ember.nn.utils.clip_grad_norm_([], 1.0)) == 0.0


def test_parameters_to_vector_and_back():
    e, t = linear_pair()
    ev, tv = ember.nn.utils.parameters_to_vector(e.parameters()), tnn.utils.parameters_to_vector(t.parameters())
    close(ev, tv)
    ember.nn.utils.vector_to_parameters(ev * 2, e.parameters())
    tnn.utils.vector_to_parameters(tv * 2, t.parameters())
    close(e.weight, t.weight)
    close(e.bias, t.bias)
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        ember.nn.utils.vector_to_parameters([1.0], e.parameters())


# ---------------------------------------------------------------- parametrize


class Symmetric(enn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class TSymmetric(tnn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class Split(enn.Module):
    def forward(self, a, b):
        return a + b

    def right_inverse(self, x):
        return x / 2, x / 2


def test_register_parametrization_values_grads_and_structure():
    e, t = linear_pair(3, 3)
    P = ember.nn.utils.parametrize
    P.register_parametrization(e, "weight", Symmetric())
    tnn.utils.parametrize.register_parametrization(t, "weight", TSymmetric())
    assert type(e).__name__ == type(t).__name__ == "ParametrizedLinear"
    assert P.type_before_parametrizations(e) is enn.Linear
    assert P.is_parametrized(e) and P.is_parametrized(e, "weight") and not P.is_parametrized(e, "bias")
    assert list(e.state_dict()) == list(t.state_dict())
    close(e.weight, t.weight)
    close(e.parametrizations.weight.original, t.parametrizations.weight.original)
    backward_both(e, t)
    close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad)
    # assignment goes through right_inverse
    value = RNG.standard_normal((3, 3))
    e.weight = ember.tensor(value)
    t.weight = torch.tensor(value)
    close(e.parametrizations.weight.original, t.parametrizations.weight.original)
    with P.cached():
        assert e.weight is e.weight
    assert e.weight is not e.weight
    P.remove_parametrizations(e, "weight", leave_parametrized=True)
    tnn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=True)
    assert type(e) is enn.Linear and isinstance(e.weight, enn.Parameter)
    close(e.weight, t.weight)


def test_parametrization_sequence_unsafe_and_errors():
    e, _ = linear_pair(3, 3)
    P = ember.nn.utils.parametrize
    before = e.weight.detach().clone()
    P.register_parametrization(e, "weight", Split())
    assert sorted(n for n, _ in e.named_parameters()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    close(e.weight, before)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(e, "weight", leave_parametrized=False)
    P.remove_parametrizations(e, "weight")
    close(e.weight, before)

    class Widen(enn.Module):
        def forward(self, x):
            return ember.cat([x, x])

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(e, "weight", Widen())
    P.register_parametrization(e, "weight", Widen(), unsafe=True)
    assert e.weight.shape == (6, 3)
    P.remove_parametrizations(e, "weight", leave_parametrized=False)
    close(e.weight, before)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(e, "nope", Widen())


# ---------------------------------------------------------------- parametrizations


@pytest.mark.parametrize("shape,omap", [((4, 4), None), ((4, 4), "cayley"), ((4, 4), "householder"),
                                        ((6, 3), None), ((3, 6), None), ((6, 3), "matrix_exp")])
def test_orthogonal(shape, omap):
    e, t = linear_pair(*shape)
    ember.nn.utils.parametrizations.orthogonal(e, orthogonal_map=omap)
    tnn.utils.parametrizations.orthogonal(t, orthogonal_map=omap)
    close(e.weight, t.weight, 1e-9)
    w = e.weight.detach()
    small = min(shape)
    gram = w @ w.mT if shape[0] < shape[1] else w.mT @ w
    close(gram, torch.eye(small, dtype=torch.float64), 1e-9)
    # the completion of a tall basis is random: share torch's to compare gradients
    e.parametrizations.weight[0].base = ember.tensor(t.parametrizations.weight[0].base.numpy())
    close(e.parametrizations.weight.original, t.parametrizations.weight.original)
    backward_both(e, t)
    close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad, 1e-8)


@pytest.mark.parametrize("shape", [(4, 4), (6, 3)])
def test_orthogonal_without_trivialization(shape):
    e, t = linear_pair(*shape)
    ember.nn.utils.parametrizations.orthogonal(e, use_trivialization=False)
    tnn.utils.parametrizations.orthogonal(t, use_trivialization=False)
    close(e.parametrizations.weight.original, t.parametrizations.weight.original, 1e-9)
    close(e.weight, t.weight, 1e-9)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    e, t = linear_pair(5, 3)
    ember.nn.utils.parametrizations.weight_norm(e, dim=dim)
    tnn.utils.parametrizations.weight_norm(t, dim=dim)
    assert list(e.state_dict()) == list(t.state_dict())
    close(e.parametrizations.weight.original0, t.parametrizations.weight.original0)
    close(e.weight, t.weight)
    backward_both(e, t)
    for name in ("original0", "original1"):
        close(getattr(e.parametrizations.weight, name).grad, getattr(t.parametrizations.weight, name).grad)


@pytest.mark.parametrize("n_power_iterations", [1, 3])
def test_spectral_norm_parametrization(n_power_iterations):
    e, t = linear_pair(5, 3)
    ember.nn.utils.parametrizations.spectral_norm(e, n_power_iterations=n_power_iterations, eps=1e-10)
    tnn.utils.parametrizations.spectral_norm(t, n_power_iterations=n_power_iterations, eps=1e-10)
    assert list(e.state_dict()) == list(t.state_dict())
    sn_e, sn_t = e.parametrizations.weight[0], t.parametrizations.weight[0]
    close(ember.linalg.matrix_norm(e.weight.detach(), 2), torch.tensor(1.0, dtype=torch.float64), 1e-6)
    sn_e._u.copy_(ember.tensor(sn_t._u.numpy()))  # the random start is not comparable; the iteration is
    sn_e._v.copy_(ember.tensor(sn_t._v.numpy()))
    for _ in range(2):
        close(e.weight, t.weight)
    close(sn_e._u, sn_t._u)
    backward_both(e, t)
    close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad)
    e.eval()
    t.eval()
    close(e.weight, t.weight)


def test_legacy_weight_norm_and_spectral_norm():
    e, t = linear_pair(5, 3)
    with pytest.warns(FutureWarning):
        ember.nn.utils.weight_norm(e)
    with pytest.warns(FutureWarning):
        tnn.utils.weight_norm(t)
    assert list(e.state_dict()) == list(t.state_dict())
    backward_both(e, t)
    close(e.weight_g.grad, t.weight_g.grad)
    close(e.weight_v.grad, t.weight_v.grad)
    ember.nn.utils.remove_weight_norm(e)
    tnn.utils.remove_weight_norm(t)
    close(e.weight, t.weight)

    e, t = linear_pair(5, 3)
    ember.nn.utils.spectral_norm(e)
    tnn.utils.spectral_norm(t)
    assert list(e.state_dict()) == list(t.state_dict())
    e.weight_u.copy_(ember.tensor(t.weight_u.numpy()))
    e.weight_v.copy_(ember.tensor(t.weight_v.numpy()))
    backward_both(e, t)
    close(e.weight, t.weight)
    close(e.weight_orig.grad, t.weight_orig.grad)
    ember.nn.utils.remove_spectral_norm(e)
    tnn.utils.remove_spectral_norm(t)
    close(e.weight, t.weight)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        ember.nn.utils.remove_spectral_norm(e)


# ---------------------------------------------------------------- prune


def distinct_pair(out_f=4, in_f=5):
    e, t = linear_pair(out_f, in_f)
    values = (RNG.permutation(out_f * in_f) + 1.0).reshape(out_f, in_f) * RNG.choice([-1.0, 1.0], (out_f, in_f))
    e.weight.data = ember.tensor(values)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(values))
    return e, t


@pytest.mark.parametrize("method,kwargs", [
    ("l1_unstructured", {"amount": 0.3}), ("l1_unstructured", {"amount": 7}),
    ("ln_structured", {"amount": 0.5, "n": 2, "dim": 0}), ("ln_structured", {"amount": 2, "n": 1, "dim": 1}),
    ("identity", {}),
])
def test_deterministic_pruning(method, kwargs):
    e, t = distinct_pair()
    getattr(ember.nn.utils.prune, method)(e, "weight", **kwargs)
    getattr(tnn.utils.prune, method)(t, "weight", **kwargs)
    assert list(e.state_dict()) == list(t.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    close(e.weight_mask, t.weight_mask)
    close(e.weight, t.weight)
    backward_both(e, t, RNG.standard_normal((2, 5)))
    close(e.weight_orig.grad, t.weight_orig.grad)
    assert ember.nn.utils.prune.is_pruned(e)
    ember.nn.utils.prune.remove(e, "weight")
    tnn.utils.prune.remove(t, "weight")
    assert list(e.state_dict()) == ["bias", "weight"] and not ember.nn.utils.prune.is_pruned(e)
    close(e.weight, t.weight)


def test_random_pruning_counts_and_iterative_pruning():
    prune = ember.nn.utils.prune
    e, _ = distinct_pair(6, 10)
    prune.random_unstructured(e, "weight", amount=0.25)
    assert int((e.weight_mask == 0).sum()) == 15
    prune.l1_unstructured(e, "weight", amount=10)  # prunes 10 of the 45 remaining
    assert int((e.weight_mask == 0).sum()) == 25
    prune.random_structured(e, "weight", amount=2, dim=0)
    zero_rows = int((e.weight_mask.sum(1) == 0).sum())
    assert zero_rows >= 2
    hooks = list(e._forward_pre_hooks.values())
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer)
    out = e(ember.randn(2, 10, dtype=ember.float64))
    assert out.shape == (2, 6)


def test_global_unstructured_and_custom_mask():
    e1, t1 = distinct_pair()
    e2, t2 = distinct_pair()
    ember.nn.utils.prune.global_unstructured([(e1, "weight"), (e2, "weight")],
                                             pruning_method=ember.nn.utils.prune.L1Unstructured, amount=12)
    tnn.utils.prune.global_unstructured([(t1, "weight"), (t2, "weight")],
                                        pruning_method=tnn.utils.prune.L1Unstructured, amount=12)
    close(e1.weight_mask, t1.weight_mask)
    close(e2.weight_mask, t2.weight_mask)
    mask = (RNG.random((4, 5)) > 0.5).astype(np.float64)
    ember.nn.utils.prune.custom_from_mask(e1, "bias", ember.tensor(mask[0, :4]))
    tnn.utils.prune.custom_from_mask(t1, "bias", torch.tensor(mask[0, :4]))
    close(e1.bias, t1.bias)


# ---------------------------------------------------------------- functional_call


def test_functional_call_grads_tied_and_strict():
    e, t = linear_pair(3, 3)
    w = RNG.standard_normal((3, 3))
    ew = ember.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    x = RNG.standard_normal((2, 3))
    eo = ember.func.functional_call(e, {"weight": ew}, (ember.tensor(x),))
    to = torch.func.functional_call(t, {"weight": tw}, (torch.tensor(x),))
    close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    close(ew.grad, tw.grad)
    assert e.weight.grad is None and isinstance(e.weight, enn.Parameter)
    with pytest.warns(FutureWarning):
        close(ember.nn.utils.stateless.functional_call(e, {"bias": ember.zeros(3)}, ember.tensor(x)),
              torch.tensor(x) @ t.weight.detach().T)
    with pytest.raises(RuntimeError, match="Missing key"):
        ember.func.functional_call(e, {"weight": ew}, (ember.tensor(x),), strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        ember.func.functional_call(e, ({"weight": ew}, {"weight": ew}), (ember.tensor(x),))

    class Tied(enn.Module):
        def __init__(self):
            super().__init__()
            self.a = enn.Linear(3, 3, bias=False)
            self.b = enn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    new = ember.eye(3) * 2
    out = ember.func.functional_call(m, {"a.weight": new}, (ember.ones(1, 3),))
    assert out.tolist() == [[4.0, 4.0, 4.0]]
    out = ember.func.functional_call(m, {"a.weight": new}, (ember.ones(1, 3),), tie_weights=False)
    close(out, torch.tensor(m.b(ember.ones(1, 3) * 2).detach().numpy()))


# ---------------------------------------------------------------- fusion


def test_fuse_conv_bn_and_linear_bn():
    x = RNG.standard_normal((2, 3, 6, 6))
    conv, bn = enn.Conv2d(3, 4, 3, dtype=ember.float64), enn.BatchNorm2d(4, dtype=ember.float64)
    bn.running_mean.copy_(ember.tensor(RNG.standard_normal(4)))
    bn.running_var.copy_(ember.tensor(RNG.random(4) + 0.5))
    bn.weight.data = ember.tensor(RNG.standard_normal(4))
    conv.eval()
    bn.eval()
    fused = ember.nn.utils.fuse_conv_bn_eval(conv, bn)
    close(fused(ember.tensor(x)), torch.tensor(bn(conv(ember.tensor(x))).detach().numpy()), 1e-9)
    lin, bn1 = enn.Linear(3, 4, dtype=ember.float64), enn.BatchNorm1d(4, dtype=ember.float64)
    bn1.running_var.copy_(ember.tensor(RNG.random(4) + 0.5))
    lin.eval()
    bn1.eval()
    fused = ember.nn.utils.fuse_linear_bn_eval(lin, bn1)
    xl = ember.tensor(RNG.standard_normal((5, 3)))
    close(fused(xl), torch.tensor(bn1(lin(xl)).detach().numpy()), 1e-9)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        ember.nn.utils.fuse_linear_bn_eval(lin.train(), bn1)
    tw, tb = tnn.utils.fuse_conv_bn_weights(
        torch.tensor(conv.weight.detach().numpy()), None, torch.tensor(bn.running_mean.numpy()),
        torch.tensor(bn.running_var.numpy()), 1e-5, None, None)
    ew, eb = ember.nn.utils.fuse_conv_bn_weights(conv.weight, None, bn.running_mean, bn.running_var, 1e-5, None, None)
    close(ew, tw)
    close(eb, tb)
