"""Transforms (forward, inverse, log_abs_det_jacobian, gradients), constraints and biject_to/transform_to vs torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

from .test_parity import assert_close

TRANSFORMS = [
    ("Exp", lambda T: T.ExpTransform(), (3,)),
    ("Affine", lambda T: T.AffineTransform(0.5, -2.0), (3,)),
    ("Sigmoid", lambda T: T.SigmoidTransform(), (3,)),
    ("Tanh", lambda T: T.TanhTransform(), (3,)),
    ("Softmax", lambda T: T.SoftmaxTransform(), (2, 3)),
    ("StickBreaking", lambda T: T.StickBreakingTransform(), (2, 3)),
    ("Compose", lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()]), (3,)),
    ("Power", lambda T: T.PowerTransform(2.5), (3,)),
    ("Abs", lambda T: T.AbsTransform(), (3,)),
    ("Inverse_Exp", lambda T: T.ExpTransform().inv, (3,)),
    ("LowerCholesky", lambda T: T.LowerCholeskyTransform(), (3, 3)),
    ("Softplus", lambda T: T.SoftplusTransform(), (3,)),
    ("CorrCholesky", lambda T: T.CorrCholeskyTransform(), (2, 3)),
    ("Independent_Exp", lambda T: T.IndependentTransform(T.ExpTransform(), 1), (2, 3)),
    ("Reshape", lambda T: T.ReshapeTransform((2, 3), (6,)), (2, 3)),
    ("Cat", lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(0.0, 3.0)], dim=0, lengths=[1, 1]), (2, 3)),
    ("Stack", lambda T: T.StackTransform([T.ExpTransform(), T.SigmoidTransform()], dim=0), (2, 3)),
    ("Cumulative", lambda T: T.CumulativeDistributionTransform(torch.distributions.Normal(0.0, 1.0) if T is
                                                               torch.distributions.transforms else
                                                               ember.distributions.Normal(0.0, 1.0)), (3,)),
]


@pytest.mark.parametrize("name,make,shape", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform(name, make, shape):
    x = np.random.default_rng(7).normal(size=shape)
    if name == "Power":
        x = np.abs(x) + 0.2
    torch_t, ember_t = make(torch.distributions.transforms), make(ember.distributions.transforms)
    torch_x = torch.tensor(x, requires_grad=True)
    ember_x = ember.tensor(x, requires_grad=True)
    torch_y, ember_y = torch_t(torch_x), ember_t(ember_x)
    assert_close(ember_y, torch_y)
    assert_close(ember_t.inv(ember_y.detach()), torch_t.inv(torch_y.detach()), rtol=1e-7, atol=1e-8)
    assert ember_t.bijective == torch_t.bijective and ember_t.sign == torch_t.sign if name in ("Exp", "Affine") else True
    assert ember_t.domain.event_dim == torch_t.domain.event_dim
    assert ember_t.codomain.event_dim == torch_t.codomain.event_dim
    assert tuple(ember_t.forward_shape(shape)) == tuple(torch_t.forward_shape(shape))
    try:
        expected = torch_t.log_abs_det_jacobian(torch_x, torch_y)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ember_t.log_abs_det_jacobian(ember_x, ember_y)
        return
    actual = ember_t.log_abs_det_jacobian(ember_x, ember_y)
    assert_close(actual, expected, rtol=1e-8)
    (gt,) = torch.autograd.grad(expected.sum() + torch_y.sum(), torch_x)
    (ge,) = ember.autograd.grad(actual.sum() + ember_y.sum(), ember_x)
    assert_close(ge, gt, rtol=1e-8)


def test_transform_equality_and_repr():
    T = ember.distributions.transforms
    assert T.ExpTransform() == T.ExpTransform()
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    assert repr(T.ExpTransform()) == "ExpTransform()"
    assert T.ComposeTransform([]) == T.identity_transform


CONSTRAINT_VALUES = [
    ("real", lambda C: C.real, [[0.0, float("inf"), float("nan")]]),
    ("positive", lambda C: C.positive, [[1.0, 0.0, -1.0]]),
    ("nonnegative", lambda C: C.nonnegative, [[1.0, 0.0, -1.0]]),
    ("interval", lambda C: C.interval(0.0, 2.0), [[0.0, 1.0, 2.0, 3.0]]),
    ("half_open", lambda C: C.half_open_interval(0.0, 2.0), [[0.0, 1.0, 2.0, 3.0]]),
    ("greater_than", lambda C: C.greater_than(1.0), [[0.5, 1.0, 2.0]]),
    ("less_than", lambda C: C.less_than(1.0), [[0.5, 1.0, 2.0]]),
    ("unit_interval", lambda C: C.unit_interval, [[0.0, 0.5, 1.0, 1.5]]),
    ("boolean", lambda C: C.boolean, [[0.0, 1.0, 0.5]]),
    ("integer_interval", lambda C: C.integer_interval(0, 3), [[0.0, 3.0, 1.5, 4.0]]),
    ("nonnegative_integer", lambda C: C.nonnegative_integer, [[0.0, 2.0, -1.0, 1.5]]),
    ("simplex", lambda C: C.simplex, [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]),
    ("one_hot", lambda C: C.one_hot, [[0.0, 1.0], [1.0, 1.0]]),
    ("lower_triangular", lambda C: C.lower_triangular, [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 1.0], [2.0, 3.0]]]),
    ("lower_cholesky", lambda C: C.lower_cholesky, [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 0.0], [2.0, -3.0]]]),
    ("positive_definite", lambda C: C.positive_definite, [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("positive_semidefinite", lambda C: C.positive_semidefinite, [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("symmetric", lambda C: C.symmetric, [[[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]]),
    ("square", lambda C: C.square, [[[1.0, 2.0], [2.0, 1.0]]]),
    ("corr_cholesky", lambda C: C.corr_cholesky, [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.9]]]),
    ("real_vector", lambda C: C.real_vector, [[0.0, 1.0], [0.0, float("nan")]]),
    ("multinomial", lambda C: C.multinomial(3), [[1.0, 2.0], [2.0, 2.0]]),
]


@pytest.mark.parametrize("name,make,value", CONSTRAINT_VALUES, ids=[c[0] for c in CONSTRAINT_VALUES])
def test_constraint_check(name, make, value):
    torch_c, ember_c = make(torch.distributions.constraints), make(ember.distributions.constraints)
    expected = torch_c.check(torch.tensor(value, dtype=torch.float64))
    actual = ember_c.check(ember.tensor(value, dtype=ember.float64))
    assert_close(actual, expected)
    assert ember_c.event_dim == torch_c.event_dim and ember_c.is_discrete == torch_c.is_discrete
    assert repr(ember_c) == repr(torch_c)


BIJECTIONS = [
    ("real", lambda C: C.real, (3,)),
    ("positive", lambda C: C.positive, (3,)),
    ("greater_than", lambda C: C.greater_than(2.0), (3,)),
    ("less_than", lambda C: C.less_than(-1.0), (3,)),
    ("interval", lambda C: C.interval(-1.0, 3.0), (3,)),
    ("unit_interval", lambda C: C.unit_interval, (3,)),
    ("simplex", lambda C: C.simplex, (2, 3)),
    ("lower_cholesky", lambda C: C.lower_cholesky, (3, 3)),
    ("positive_definite", lambda C: C.positive_definite, (3, 3)),
    ("corr_cholesky", lambda C: C.corr_cholesky, (3,)),
    ("independent", lambda C: C.independent(C.positive, 1), (2, 3)),
    ("stack", lambda C: C.stack([C.positive, C.real], dim=0), (2, 3)),
    ("cat", lambda C: C.cat([C.positive, C.real], dim=0, lengths=[1, 1]), (2, 3)),
]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("name,make,shape", BIJECTIONS, ids=[b[0] for b in BIJECTIONS])
def test_biject_to_and_transform_to(registry, name, make, shape):
    x = np.random.default_rng(11).normal(size=shape)
    try:
        torch_t = getattr(torch.distributions, registry)(make(torch.distributions.constraints))
    except NotImplementedError as error:
        with pytest.raises(NotImplementedError, match=str(error)):
            getattr(ember.distributions, registry)(make(ember.distributions.constraints))
        return
    ember_t = getattr(ember.distributions, registry)(make(ember.distributions.constraints))
    assert type(ember_t).__name__ == type(torch_t).__name__
    torch_y = torch_t(torch.tensor(x))
    ember_y = ember_t(ember.tensor(x))
    assert_close(ember_y, torch_y)
    assert bool(make(ember.distributions.constraints).check(ember_y).all())
    if torch_t.bijective:
        assert_close(ember_t.inv(ember_y), torch_t.inv(torch_y), rtol=1e-7, atol=1e-8)
