"""Anomaly detection, the autograd.graph API and saved-tensor hooks, against torch."""

from __future__ import annotations

import warnings

import pytest
from conftest import catch

import ember

torch = pytest.importorskip("torch")


def test_detect_anomaly_names_the_nan_node(compare):
    def run(lib):
        x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                y = x / x  # forward: the line the warning must point at
                error = catch(lambda: y.sum().backward())
        texts = [str(w.message) for w in caught]
        first = texts[0]
        report = [t for t in texts if t.startswith("Error detected in")]
        points_at_forward = bool(report) and "y = x / x" in report[0]
        return error, first, report[0].splitlines()[0] if report else None, points_at_forward

    compare(run)


def test_set_detect_anomaly_and_check_nan_off(compare):
    def run(lib):
        x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
        states = []
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            states.append(lib.is_anomaly_enabled() if hasattr(lib, "is_anomaly_enabled") else None)
            (x / x).sum().backward()  # NaN gradients, but not checked
        states.append(x.grad.isnan().tolist())
        return states

    def ember_state(lib):
        return run(lib)

    result_torch = run(torch)
    import ember.autograd.anomaly_mode as anomaly

    with ember.autograd.set_detect_anomaly(True, check_nan=False):
        assert anomaly.is_anomaly_enabled() and not anomaly.is_anomaly_check_nan_enabled()
    assert not anomaly.is_anomaly_enabled() and anomaly.is_anomaly_check_nan_enabled()
    x = ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)
    with ember.autograd.set_detect_anomaly(True, check_nan=False):
        (x / x).sum().backward()
    assert x.grad.isnan().tolist() == result_torch[1]


def test_anomaly_version_error_hint(compare):
    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            with lib.autograd.detect_anomaly():
                a = x * 1
                b = a.exp()
                a.add_(1)
                return catch(lambda: b.sum().backward())

    compare(run)


def test_graph_node_api(compare):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 2).sum()
        node = y.grad_fn
        edge = lib.autograd.graph.get_gradient_edge(x)
        return (
            isinstance(node, lib.autograd.graph.Node),
            node.name(),
            [n.name() for n, _ in node.next_functions],
            node.next_functions[0][0].next_functions[0][0].name(),
            edge.node.name(),
            edge.output_nr,
            node.metadata,
            catch(lambda: lib.autograd.graph.get_gradient_edge(lib.ones(2))),
        )

    compare(run)


def test_increment_version(compare):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = x * 1
        b = a * a
        lib.autograd.graph.increment_version(a)
        return a._version, catch(lambda: b.sum().backward())

    compare(run)


def test_saved_tensors_hooks(compare):
    def run(lib):
        events = []

        def pack(t):
            events.append(("pack", t.tolist()))
            return t.detach() * 1

        def unpack(t):
            events.append(("unpack", t.tolist()))
            return t

        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = a * b
            z = y.exp()
        z.sum().backward()
        # the order in which one op packs its operands is an implementation detail: compare as multisets
        return sorted(events), a.grad, b.grad

    compare(run)


def test_saved_tensors_hooks_double_backward_and_functions(compare):
    def run(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return 2 * x * grad

        count = []
        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: (count.append(1), t.detach())[1], lambda t: t):
            y = (x**3).sum() + Square.apply(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg, len(count) >= 2  # how many tensors an op saves is its own detail

    compare(run)


def test_save_on_cpu_and_disable(compare):
    def run(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.autograd.graph.save_on_cpu():
            y = (x * x).sum()
        y.backward()

        def enter():
            with lib.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass

        with lib.autograd.graph.disable_saved_tensors_hooks("hooks are off here"):
            error = catch(enter)
        return x.grad, error

    compare(run)


def test_register_multi_grad_hook(compare):
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0], requires_grad=True)
        seen = []
        lib.autograd.graph.register_multi_grad_hook(
            (a, b), lambda grads: seen.append([g.tolist() if g is not None else None for g in grads])
        )
        ((a * 2).sum() + (b * 3).sum()).backward()
        return seen

    compare(run)
