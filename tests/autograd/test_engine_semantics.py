"""backward / autograd.grad semantics, graph structure, hooks, grad modes and errors, compared with torch."""

from __future__ import annotations

import gc
import sys
import warnings
import weakref

import pytest
from conftest import catch

import ember

torch = pytest.importorskip("torch")


def leaf(lib, values=(1.0, -2.0, 3.0), dtype=None):
    return lib.tensor(list(values), dtype=dtype or lib.float64, requires_grad=True)


def test_backward_gradient_retain_graph_and_accumulation(compare):
    def run(lib):
        x = leaf(lib)
        y = x * x * 3
        y.backward(gradient=lib.tensor([1.0, 0.5, 2.0], dtype=lib.float64), retain_graph=True)
        first = x.grad.clone()
        y.sum().backward()
        return first, x.grad, catch(lambda: y.sum().backward())

    compare(run)


def test_backward_twice_without_retain_graph_error(compare):
    def run(lib):
        x = leaf(lib)
        y = (x.exp() * x).sum()
        y.backward()
        return catch(lambda: y.backward())

    compare(run)


def test_backward_create_graph_and_inputs(compare):
    def run(lib):
        x, w = leaf(lib), leaf(lib, (0.5, 0.25, 2.0))
        y = (x * x * w).sum()
        y.backward(create_graph=True)
        grad_x, grad_w = x.grad, w.grad
        x.grad = None
        w.grad = None
        z = (x * w).sum()
        z.backward(inputs=[w])
        return grad_x, grad_w, x.grad, w.grad, catch(lambda: z.backward(inputs=[]))

    compare(run)


def test_backward_inputs_non_leaf(compare):
    def run(lib):
        x = leaf(lib)
        h = x * 2
        (h * h).sum().backward(inputs=[h])
        return x.grad, h.grad

    compare(run)


def test_implicit_gradient_errors(compare):
    def run(lib):
        x = leaf(lib)
        return (
            catch(lambda: (x * 2).backward()),
            catch(lambda: lib.tensor([1.0]).backward()),
            catch(lambda: (x * 2).backward(lib.ones(2, dtype=lib.float64))),
        )

    compare(run)


def test_autograd_grad_options(compare):
    def run(lib):
        x, y, unused = leaf(lib), leaf(lib, (2.0, 1.0, 0.5)), leaf(lib, (7.0, 7.0, 7.0))
        out = x * y * x
        v = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        gx, gy = lib.autograd.grad(out, (x, y), grad_outputs=v, retain_graph=True)
        gu = lib.autograd.grad(out.sum(), [x, unused], allow_unused=True, retain_graph=True)
        gm = lib.autograd.grad(out.sum(), [x, unused], materialize_grads=True, retain_graph=True)
        unused_error = catch(lambda: lib.autograd.grad(out.sum(), [x, unused], retain_graph=True))
        twice = lib.autograd.grad(out.sum(), [x, x], retain_graph=True)
        h = x * 3
        non_leaf = lib.autograd.grad((h * h).sum(), [h, x])
        bad = catch(lambda: lib.autograd.grad(out.sum(), [x], allow_unused=False, materialize_grads=True))
        no_grad_input = catch(lambda: lib.autograd.grad(out.sum(), [v]))
        return gx, gy, gu, gm, unused_error, twice, non_leaf, bad, no_grad_input, x.grad

    compare(run)


def test_grad_create_graph_higher_order(compare):
    def run(lib):
        x = leaf(lib, (0.5, 1.5, -2.0))
        y = (x**4).sum()
        (d1,) = lib.autograd.grad(y, x, create_graph=True)
        (d2,) = lib.autograd.grad(d1.sum(), x, create_graph=True)
        (d3,) = lib.autograd.grad(d2.sum(), x, create_graph=True)
        (d4,) = lib.autograd.grad(d3.sum(), x, create_graph=True)
        z = (x.sin() * x.exp()).sum()
        (e1,) = lib.autograd.grad(z, x, create_graph=True)
        (e2,) = lib.autograd.grad(e1.sum(), x, create_graph=True)
        (e3,) = lib.autograd.grad(e2.sum(), x)
        return d1, d2, d3, d4, e1, e2, e3, d4.requires_grad

    compare(run, rtol=1e-10)


def test_grad_fn_names_and_next_functions(compare):
    def describe(node, depth=0):
        if node is None or depth > 6:
            return None
        return (node.name(), type(node).__name__, [(describe(n, depth + 1), nr) for n, nr in node.next_functions])

    def run(lib):
        x, w = leaf(lib), leaf(lib, (0.1, 0.2, 0.3))
        c = lib.tensor([1.0, 1.0, 1.0], dtype=lib.float64)
        y = ((x * w + c).exp() / 2).sum()
        return describe(y.grad_fn), x.is_leaf, y.is_leaf, c.is_leaf, y.requires_grad, (c * 2).requires_grad

    compare(run)


def test_requires_grad_propagation_and_detach(compare):
    def run(lib):
        x = leaf(lib)
        plain = lib.tensor([1.0, 2.0, 3.0])
        y = x * 2
        d = y.detach()
        d_shares = d.data_ptr() == y.data_ptr()
        z = x * 3
        z.detach_()
        view_detach_ = catch(lambda: (x * 1)[:2].detach_())
        non_leaf_flag = catch(lambda: y.requires_grad_(False))
        int_flag = catch(lambda: lib.tensor([1, 2]).requires_grad_())
        plain.requires_grad_()
        return (d.requires_grad, d.is_leaf, d_shares, z.requires_grad, z.grad_fn is None, z.is_leaf, view_detach_,
                non_leaf_flag, int_flag, plain.requires_grad, (plain * x).requires_grad)

    compare(run)


def test_inplace_errors(compare):
    def run(lib):
        x = leaf(lib)
        on_leaf = catch(lambda: x.add_(1))
        on_leaf_view = catch(lambda: x[:2].mul_(2))
        with lib.no_grad():
            x.add_(1)  # allowed under no_grad
        a = x * 1
        b = a.exp()
        a.mul_(2)
        saved_modified = catch(lambda: b.sum().backward())
        c = x.sigmoid()
        c.mul_(2)
        result_modified = catch(lambda: c.sum().backward())
        plain = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        p = x * plain
        plain.add_(1)
        leaf_modified = catch(lambda: p.sum().backward())
        return on_leaf, on_leaf_view, x, saved_modified, result_modified, leaf_modified

    compare(run)


def test_non_leaf_grad_warning_and_retain_grad(compare):
    def run(lib):
        x = leaf(lib)
        h = x * 2
        kept = x * 3
        kept.retain_grad()
        (h * kept).sum().backward()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = h.grad
        messages = [str(w.message).split(" (Triggered internally")[0] for w in caught]
        leaf_retain = x.retain_grad()
        return value, messages, kept.grad, kept.retains_grad, h.retains_grad, leaf_retain

    compare(run)


def test_tensor_hooks(compare):
    def run(lib):
        x = leaf(lib)
        calls = []
        handle = x.register_hook(lambda g: g * 10)
        h = x * 2
        h.register_hook(lambda g: calls.append(("h", g.clone())))
        h.register_hook(lambda g: g + 1)
        (h * h).sum().backward()
        first = x.grad.clone()
        handle.remove()
        x.grad = None
        (x * 2).sum().backward()
        no_hook_error = catch(lambda: lib.tensor([1.0]).register_hook(lambda g: g))
        return first, x.grad, calls, no_hook_error

    compare(run)


def test_post_accumulate_grad_hook(compare):
    def run(lib):
        x = leaf(lib)
        seen = []
        handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        (x * x).sum().backward()
        (x * 3).sum().backward()
        handle.remove()
        (x * 3).sum().backward()
        non_leaf = catch(lambda: (x * 2).register_post_accumulate_grad_hook(lambda t: None))
        return seen, x.grad, non_leaf

    compare(run)


def test_node_hooks_and_prehooks(compare):
    def run(lib):
        x = leaf(lib)
        y = x * x
        z = y.sum()
        events = []

        def prehook(grad_outputs):
            events.append(("pre", [g.clone() for g in grad_outputs]))
            return (grad_outputs[0] * 2,)

        def hook(grad_inputs, grad_outputs):
            events.append(("post", [g.clone() for g in grad_inputs], [g.clone() for g in grad_outputs]))
            return tuple(g + 1 for g in grad_inputs)

        pre = y.grad_fn.register_prehook(prehook)
        post = y.grad_fn.register_hook(hook)
        z.backward(retain_graph=True)
        first = x.grad.clone()
        pre.remove()
        post.remove()
        x.grad = None
        z.backward()
        y.grad_fn.metadata["tag"] = 1
        return events, first, x.grad, y.grad_fn.metadata

    compare(run)


def test_grad_modes(compare):
    def run(lib):
        x = leaf(lib)
        results = []
        with lib.no_grad():
            results.append((x * 2).requires_grad)
            with lib.enable_grad():
                results.append((x * 2).requires_grad)
        with lib.set_grad_enabled(False):
            results.append((x * 2).requires_grad)
        results.append(lib.is_grad_enabled())
        lib.set_grad_enabled(False)
        results.append(lib.is_grad_enabled())
        lib.set_grad_enabled(True)
        with lib.inference_mode():
            results.append(((x * 2).requires_grad, lib.is_inference_mode_enabled()))
        with lib.inference_mode(False):
            results.append((x * 2).requires_grad)

        @lib.no_grad()
        def decorated(t):
            return (t * 2).requires_grad

        @lib.enable_grad()
        def enabled(t):
            return (t * 2).requires_grad

        @lib.inference_mode()
        def inferred(t):
            return (t * 2).requires_grad

        @lib.no_grad()
        def generator(t):
            for _ in range(2):
                yield (t * 2).requires_grad, lib.is_grad_enabled()

        results.append(decorated(x))
        with lib.no_grad():
            results.append(enabled(x))
        results.append(inferred(x))
        results.append(list(generator(x)))
        results.append(lib.is_grad_enabled())
        return results

    compare(run)


def test_long_chain_has_no_recursion_limit():
    x = ember.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(10_000):
        y = y * 1.0001
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        y.sum().backward()
    finally:
        sys.setrecursionlimit(limit)
    assert abs(x.grad.item() - 1.0001**10_000) < 1e-2


def test_saved_intermediate_freed_after_backward():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    hidden = x * 2
    probe = weakref.ref(hidden)
    y = (hidden * hidden).sum()  # MulBackward0 saves `hidden`
    del hidden
    y.backward(retain_graph=True)
    gc.collect()
    assert probe() is not None
    y.backward()
    gc.collect()
    assert probe() is None


def test_inplace_version_counter(compare):
    def run(lib):
        x = leaf(lib)
        a = x * 1
        versions = [a._version]
        a.add_(1)
        versions.append(a._version)
        a[0] = 5
        versions.append(a._version)
        a.sum().backward()
        return versions, x.grad

    compare(run)


def test_inference_tensor_saved_for_backward_raises_only_where_a_gradient_reads_it(compare):
    """torch refuses to save an inference tensor that a needed gradient reads (mul's other operand), and
    accepts one no gradient formula saves (add) or reads."""

    def run(lib):
        with lib.inference_mode():
            frozen = lib.ones(3, dtype=lib.float64)
        weight = leaf(lib)
        return [catch(lambda: (weight * frozen).sum().item()), catch(lambda: (frozen * weight).sum().item()),
                catch(lambda: (weight.exp() * frozen).sum().item()), catch(lambda: (weight + frozen).sum().item()),
                catch(lambda: lib.nn.functional.linear(weight, frozen.reshape(1, 3)).sum().item())]

    compare(run)
