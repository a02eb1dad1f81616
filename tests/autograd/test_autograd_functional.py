"""ember.autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp) against torch.autograd.functional."""

from __future__ import annotations

import pytest
from conftest import catch

torch = pytest.importorskip("torch")


def inputs(lib):
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64)
    y = lib.tensor([1.5, 0.25, -0.5], dtype=lib.float64)
    return x, y


def vector_fn(a, b):
    return a.exp() * b, (a * b).sum()


def scalar_fn(a, b):
    return (a**3 * b + a.sin() * b * b).sum()


def test_vjp_and_jvp(compare):
    def run(lib):
        F = lib.autograd.functional
        x, y = inputs(lib)
        v_out = (lib.ones(3, dtype=lib.float64), lib.tensor(2.0, dtype=lib.float64))
        out, vjp = F.vjp(vector_fn, (x, y), v_out)
        out2, jvp = F.jvp(vector_fn, (x, y), (y, x))
        single = F.vjp(lambda a: (a * a).sum(), x)
        graph = F.vjp(lambda a: a * a, x.clone().requires_grad_(), lib.ones(3, dtype=lib.float64), create_graph=True)
        return out, vjp, out2, jvp, single, graph

    compare(run)


def test_jacobian_and_hessian(compare):
    def run(lib):
        F = lib.autograd.functional
        x, y = inputs(lib)
        return (
            F.jacobian(lambda a: a.exp() * a, x),
            F.jacobian(vector_fn, (x, y)),
            F.jacobian(lambda a: a * 2, x, vectorize=True),
            F.jacobian(lambda a: a * 2, x, vectorize=True, strategy="forward-mode"),
            F.hessian(lambda a: (a**4).sum(), x),
            F.hessian(scalar_fn, (x, y)),
            F.jacobian(lambda a: a * a, x, create_graph=True),
        )

    compare(run, rtol=1e-10)


def test_hvp_and_vhp(compare):
    def run(lib):
        F = lib.autograd.functional
        x, y = inputs(lib)
        v = (lib.ones(3, dtype=lib.float64), y)
        return F.hvp(scalar_fn, (x, y), v), F.vhp(scalar_fn, (x, y), v)

    compare(run, rtol=1e-10)


def test_strict_and_argument_errors(compare):
    def run(lib):
        F = lib.autograd.functional
        x, y = inputs(lib)
        return (
            catch(lambda: F.vjp(lambda a, b: a * 2, (x, y), lib.ones(3, dtype=lib.float64), strict=True)),
            F.vjp(lambda a, b: a * 2, (x, y), lib.ones(3, dtype=lib.float64)),
            catch(lambda: F.jacobian(lambda a: a * 2, x, strategy="bad")),
            catch(lambda: F.jacobian(lambda a: a * 2, x, strategy="forward-mode")),
            catch(lambda: F.jacobian(lambda a: lib.ones(3, dtype=lib.float64), x, strict=True)),
            catch(lambda: F.hessian(lambda a: a * 2, x)),
            catch(lambda: F.vjp(lambda a: a * 2, x)),
            catch(lambda: F.jvp(lambda a: a * 2, x, lib.ones(2, dtype=lib.float64))),
            catch(lambda: F.vjp(lambda a: a * 2, [x])),
            catch(lambda: F.hvp(lambda a: (a * 2).sum(), x, lib.ones(3, dtype=lib.float64), strict=True)),
        )

    compare(run)
