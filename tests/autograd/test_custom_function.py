"""Custom autograd.Function: forward/backward, setup_context, ctx features, errors, double backward, vs torch."""

from __future__ import annotations

import gc
import weakref

import pytest
from conftest import catch

import ember

torch = pytest.importorskip("torch")


def make_functions(lib):
    Function = lib.autograd.Function

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad):
            (result,) = ctx.saved_tensors
            return grad * result

    class ScaledMul(Function):
        """Non-tensor input, attribute on ctx, needs_input_grad, two tensor inputs."""

        @staticmethod
        def forward(ctx, a, scale, b):
            ctx.scale = scale
            ctx.record = ctx.needs_input_grad
            ctx.save_for_backward(a, b)
            return a * b * scale

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            grad_a = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
            grad_b = grad * a * ctx.scale if ctx.needs_input_grad[2] else None
            return grad_a, None, grad_b

    class Cube(Function):
        """setup_context style, backward in ops so double backward works."""

        @staticmethod
        def forward(x, power=3):
            return x**power

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, power = inputs
            ctx.power = power
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * ctx.power * x ** (ctx.power - 1), None

    class SplitTwo(Function):
        """Two outputs plus a non-tensor output."""

        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3, "label"

        @staticmethod
        def backward(ctx, g1, g2, g3):
            return g1 * 2 + g2 * 3

    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class ArgmaxAndDouble(Function):
        @staticmethod
        def forward(ctx, x):
            index = x.argmax()
            doubled = x * 2
            ctx.mark_non_differentiable(index)
            return doubled, index

        @staticmethod
        def backward(ctx, grad, grad_index):
            ctx.seen = grad_index
            return grad * 2

    class NoMaterialize(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            ctx.seen = (g1 is None, g2 is None)
            grad = None
            for g, k in ((g1, 2), (g2, 3)):
                if g is not None:
                    grad = g * k if grad is None else grad + g * k
            return grad

    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class OnceDiff(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    return dict(Exp=Exp, ScaledMul=ScaledMul, Cube=Cube, SplitTwo=SplitTwo, AddOneInplace=AddOneInplace,
                ArgmaxAndDouble=ArgmaxAndDouble, NoMaterialize=NoMaterialize, Identity=Identity, OnceDiff=OnceDiff)


def _x(lib, values=(0.5, -1.0, 2.0), dtype=None):
    return lib.tensor(list(values), dtype=dtype or lib.float64, requires_grad=True)


def test_basic_forward_backward(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["Exp"].apply(x)
        y.sum().backward()
        return y, x.grad, type(y.grad_fn).__name__, y.grad_fn.name(), y.is_leaf, y.requires_grad

    compare(run)


def test_grad_fn_is_ctx_and_next_functions(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        b = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        out = fns["ScaledMul"].apply(x * 1, 2.0, b)
        node = out.grad_fn
        structure = [(type(n).__name__ if n is not None else None, nr) for n, nr in node.next_functions]
        out.sum().backward()
        return out, x.grad, node.scale, node.record, structure

    compare(run)


def test_setup_context_style_and_defaults(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["Cube"].apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        z = fns["Cube"].apply(x, power=2)
        (h,) = lib.autograd.grad(z.sum(), x)
        return y, g, gg, h, y.grad_fn.name()

    compare(run)


def test_double_backward_through_function(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["Exp"].apply(x * x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (ggg,) = lib.autograd.grad(gg.sum(), x)
        return g, gg, ggg

    compare(run)


def test_multiple_and_non_tensor_outputs(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        a, b, label = fns["SplitTwo"].apply(x)
        (a.sum() + b.sum() * 2).backward()
        only_first = fns["SplitTwo"].apply(x)[0]
        (g,) = lib.autograd.grad(only_first.sum(), x)
        return a, b, label, x.grad, g, a.grad_fn is b.grad_fn, (a.output_nr, b.output_nr)

    compare(run)


def test_mark_dirty(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = x * 2
        version = y._version
        out = fns["AddOneInplace"].apply(y)
        out_is_y = out is y
        (out * out).sum().backward()
        leaf_error = catch(lambda: fns["AddOneInplace"].apply(_x(lib)))
        return out, x.grad, y._version - version, out_is_y, y.grad_fn.name(), leaf_error

    compare(run)


def test_mark_dirty_on_view(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib, (1.0, 2.0, 3.0, 4.0))
        base = x * 1
        view = base[1:3]
        fns["AddOneInplace"].apply(view)
        (base * base).sum().backward()
        return base, x.grad, base.grad_fn.name()

    compare(run)


def test_mark_non_differentiable(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        doubled, index = fns["ArgmaxAndDouble"].apply(x)
        doubled.sum().backward()
        node = doubled.grad_fn
        return doubled, index, index.requires_grad, index.grad_fn is None, x.grad, node.seen

    compare(run)


def test_set_materialize_grads(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        a, b = fns["NoMaterialize"].apply(x)
        a.sum().backward()
        seen_off = a.grad_fn.seen
        return x.grad, seen_off

    compare(run)


def test_returned_input_is_a_new_tensor(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["Identity"].apply(x)
        with lib.no_grad():
            z = fns["Identity"].apply(x)
        y.sum().backward()
        return y is x, y._base is x, y.grad_fn.name(), z is x, z.requires_grad, x.grad

    compare(run)


def test_no_grad_and_non_requiring_inputs(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        with lib.no_grad():
            y = fns["Exp"].apply(x)
        plain = fns["Exp"].apply(lib.tensor([1.0, 2.0], dtype=lib.float64))
        return y, y.requires_grad, y.grad_fn is None, plain.requires_grad

    compare(run)


def test_wrong_number_of_gradients(compare):
    def run(lib):
        Function = lib.autograd.Function

        class TooMany(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad, grad

        class TooFew(Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, grad):
                return grad

        class ExtraNone(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2, None, None

        class GradForNonTensor(Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, grad):
                return grad, grad

        class BadShape(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad[:2]

        class Broadcastable(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad.expand(2, 3)  # summed back to [3], as torch does

        x = _x(lib)
        results = [
            catch(lambda: TooMany.apply(x).sum().backward()),
            catch(lambda: TooFew.apply(x, x).sum().backward()),
            catch(lambda: GradForNonTensor.apply(x, 2.0).sum().backward()),
            catch(lambda: BadShape.apply(x).sum().backward()),
        ]
        (extra,) = lib.autograd.grad(ExtraNone.apply(x).sum(), x)
        (broadcast,) = lib.autograd.grad(Broadcastable.apply(x).sum(), x)
        return results, extra, broadcast

    compare(run)


def test_save_for_backward_errors(compare):
    def run(lib):
        Function = lib.autograd.Function

        class SavesInt(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad

        return catch(lambda: SavesInt.apply(_x(lib)))

    compare(run)


def test_saved_tensors_freed_and_retained(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["Exp"].apply(x * 1)
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        twice = catch(lambda: y.sum().backward())
        access = catch(lambda: y.grad_fn.saved_tensors)
        return x.grad, twice, access

    compare(run)


def test_saved_tensor_version_check(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        a = x * 1
        out = fns["ScaledMul"].apply(a, 2.0, x * 3)
        a.mul_(2)
        input_error = catch(lambda: out.sum().backward())
        y = fns["Exp"].apply(x * 1)
        y.add_(1)
        output_error = catch(lambda: y.sum().backward())
        return input_error, output_error

    compare(run)


def test_saved_intermediate_released_after_backward():
    fns = make_functions(ember)
    x = _x(ember)
    hidden = x * 2
    y = fns["Exp"].apply(hidden)
    saved = weakref.ref(y.grad_fn.saved_tensors[0])
    del hidden
    y.sum().backward(retain_graph=True)
    gc.collect()
    assert saved() is not None  # still saved: the graph was retained
    y.sum().backward()
    grad_fn = y.grad_fn
    del y
    gc.collect()
    assert saved() is None and grad_fn is not None


def test_once_differentiable(compare):
    def run(lib):
        fns = make_functions(lib)
        x = _x(lib)
        y = fns["OnceDiff"].apply(x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)  # the incoming grad needs no grad: plain result
        v = lib.ones(3, dtype=lib.float64, requires_grad=True)
        (h,) = lib.autograd.grad(fns["OnceDiff"].apply(x), x, v, create_graph=True)
        second = catch(lambda: h.sum().backward())
        return g, h.detach(), h.requires_grad, h.grad_fn.name(), second

    compare(run)


def test_function_instantiation_and_call(compare):
    def run(lib):
        fns = make_functions(lib)
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            instance = fns["Exp"]()
        return [w.category.__name__ for w in caught], catch(lambda: instance(_x(lib)))

    compare(run)


def test_gradcheck_catches_wrong_backward():
    class WrongSin(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos() * 1.1  # deliberately wrong

    class RightSin(WrongSin):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x.cos()

    x = ember.tensor([0.3, -0.7, 1.2], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(RightSin.apply, (x,))
    assert ember.autograd.gradgradcheck(RightSin.apply, (x,))
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch"):
        ember.autograd.gradcheck(WrongSin.apply, (x,))
    assert ember.autograd.gradcheck(WrongSin.apply, (x,), raise_exception=False) is False

    class WrongSecond(ember.autograd.Function):
        """Right first derivative, wrong second: only gradgradcheck sees it."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x.detach() ** 2 + 0 * x

    assert ember.autograd.gradcheck(WrongSecond.apply, (x,))
    with pytest.raises(ember.autograd.GradcheckError):
        ember.autograd.gradgradcheck(WrongSecond.apply, (x,))


def test_custom_function_in_float32_grad_cast(compare):
    def run(lib):
        Function = lib.autograd.Function

        class ReturnsDouble(Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad.double() * 2

        x = _x(lib, dtype=lib.float32)
        ReturnsDouble.apply(x).sum().backward()
        return x.grad

    compare(run)
