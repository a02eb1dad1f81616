"""torch.autograd.forward_ad (dual tensors) against real torch: each test runs the same program with lib=torch
and lib=ember and compares primals, tangents (values, dtypes, shapes) and errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_same, catch, to_plain

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64"]
TOLERANCE = {"float32": 1e-5, "float64": 1e-10}


def data(*shape, seed: int = 0, positive: bool = False) -> np.ndarray:
    array = np.random.default_rng(seed + 7 * len(shape)).standard_normal(shape)
    return np.abs(array) + 0.5 if positive else array


def dual(lib, array, tangent, dtype: str = "float64"):
    """A dual tensor of lib built from two numpy arrays (inside an active level)."""
    dtype = getattr(lib, dtype)
    return lib.autograd.forward_ad.make_dual(lib.tensor(array, dtype=dtype), lib.tensor(tangent, dtype=dtype))


def unpacked(lib, tensor):
    """(primal, tangent) of a result, as plain values (tangent None when it has none)."""
    primal, tangent = lib.autograd.forward_ad.unpack_dual(tensor)
    return to_plain(primal.detach()), None if tangent is None else to_plain(tangent.detach())


def compare_jvp(fn, shapes, dtype: str = "float64", positive: bool = False, **kwargs) -> None:
    """fn(lib, *duals) inside a dual level, with one dual input per shape: same outputs and tangents."""

    def run(lib):
        with lib.autograd.forward_ad.dual_level():
            inputs = [dual(lib, data(*shape, seed=i, positive=positive), data(*shape, seed=100 + i), dtype)
                      for i, shape in enumerate(shapes)]
            out = fn(lib, *inputs, **kwargs)
            outs = out if isinstance(out, tuple) else (out,)
            return [unpacked(lib, o) for o in outs]

    tolerance = TOLERANCE[dtype]
    assert_same(run(ember), run(torch), rtol=tolerance, atol=tolerance)


# ---------------------------------------------------------------- tangents through ops


ELEMENTWISE = {
    "sin": lambda lib, x, y: x.sin(),
    "exp_mul": lambda lib, x, y: x.exp() * y,
    "div": lambda lib, x, y: x * y + y / (x.abs() + 1),
    "tanh_sigmoid": lambda lib, x, y: lib.tanh(x) + lib.sigmoid(y),
    "pow": lambda lib, x, y: x.abs().pow(y) + x.pow(2),
    "where": lambda lib, x, y: lib.where(x > 0, x, y * 2),
    "clamp_relu": lambda lib, x, y: x.clamp(-0.5, 0.5) + lib.relu(y),
    "scalar_ops": lambda lib, x, y: 3.0 - x / 2 + x ** 3,
    "atan2_hypot": lambda lib, x, y: lib.atan2(x, y) + lib.hypot(x, y),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise(name, dtype):
    compare_jvp(ELEMENTWISE[name], [(3, 4), (3, 4)], dtype)


@pytest.mark.parametrize("name", ["square", "sin", "abs", "conj_mul", "real"])
def test_complex(name):
    fn = {"square": lambda x: x * x, "sin": lambda x: x.sin(), "abs": lambda x: x.abs(),
          "conj_mul": lambda x: x.conj() * x, "real": lambda x: x.real * 2}[name]

    def run(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            x = fwAD.make_dual(lib.tensor(data(3) + 1j * data(3, seed=1)), lib.tensor(data(3, seed=2) - 1j))
            primal, tangent = fwAD.unpack_dual(fn(x))
            return primal.detach().resolve_conj().numpy(), tangent.resolve_conj().numpy()

    for ours, theirs in zip(run(ember), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)


def test_broadcasting_and_mixed_dual():
    """One operand dual, the other a plain tensor, broadcast against each other."""

    def run(lib):
        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(3, 1), data(3, 1, seed=1))
            y = lib.tensor(data(1, 4, seed=2))
            return unpacked(lib, x * y + y.exp() - x)

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


REDUCTIONS = {
    "sum": lambda lib, x: x.sum(),
    "sum_dim": lambda lib, x: x.sum(dim=1, keepdim=True),
    "mean": lambda lib, x: x.mean(0),
    "prod": lambda lib, x: x.prod(1),
    "max_dim": lambda lib, x: x.max(dim=1).values,
    "logsumexp": lambda lib, x: lib.logsumexp(x, dim=0),
    "var": lambda lib, x: x.var(dim=1),
    "norm": lambda lib, x: lib.linalg.vector_norm(x),
    "cumsum": lambda lib, x: x.cumsum(1),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name, dtype):
    compare_jvp(REDUCTIONS[name], [(3, 4)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul(dtype):
    compare_jvp(lambda lib, a, b: a @ b, [(3, 4), (4, 2)], dtype)
    compare_jvp(lambda lib, a, b: lib.bmm(a, b), [(2, 3, 4), (2, 4, 5)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv2d(dtype):
    compare_jvp(lambda lib, x, w, b: lib.nn.functional.conv2d(x, w, b, stride=1, padding=1),
                [(2, 3, 5, 5), (4, 3, 3, 3), (4,)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_layer_norm(dtype):
    compare_jvp(lambda lib, x: (lib.softmax(x, dim=-1), lib.log_softmax(x, dim=0)), [(3, 5)], dtype)
    compare_jvp(lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (5,), w, b), [(3, 5), (5,), (5,)], dtype)


VIEWS = {
    "view": lambda lib, x: x.view(4, 3),
    "getitem_int": lambda lib, x: x[0],
    "getitem_slice": lambda lib, x: x[:, 1:3],
    "transpose": lambda lib, x: x.t(),
    "reshape": lambda lib, x: x.t().reshape(-1),
    "expand": lambda lib, x: x[:, :1].expand(3, 5),
    "advanced_index": lambda lib, x: x[lib.tensor([0, 2, 2])],
    "unbind": lambda lib, x: x.unbind(1),
    "chain": lambda lib, x: x.unsqueeze(0).permute(2, 0, 1)[1:].squeeze(1) * 2,
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_and_indexing(name):
    compare_jvp(VIEWS[name], [(3, 4)])


def test_view_tangent_is_a_view_of_the_tangent():
    """As torch's: the tangent of x[0] is a view of x's tangent (it shares its memory)."""
    for lib in (torch, ember):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            tangent = lib.tensor(data(3, 4, seed=1))
            x = fwAD.make_dual(lib.tensor(data(3, 4)), tangent)
            assert fwAD.unpack_dual(x).tangent is tangent
            row = fwAD.unpack_dual(x[1]).tangent
            assert row._base is tangent and row.data_ptr() == tangent[1].data_ptr()


def test_inplace_on_dual_tensors():
    """x.mul_(y) on dual tensors, seen through an earlier view of x; a view written from a dual tensor gives its
    base a tangent; writes from constants zero the tangent (copy_, zero_); a write with no tangent anywhere
    leaves none."""

    def run(lib):
        fwAD = lib.autograd.forward_ad
        out = {}
        with fwAD.dual_level():
            x = dual(lib, data(3), data(3, seed=1))
            y = dual(lib, data(3, seed=2), data(3, seed=3))
            row = x[0:2]
            x.mul_(y)
            out["mul_"] = unpacked(lib, x)
            out["view_of_mul_"] = unpacked(lib, row)
            z = lib.zeros(3, dtype=lib.float64)
            tail = z[1:]
            tail.add_(y[1:])
            out["base_of_written_view"] = unpacked(lib, z)
            out["written_view"] = unpacked(lib, tail)
            plain = lib.zeros(3, dtype=lib.float64)
            plain.add_(2.0)
            out["no_tangent"] = unpacked(lib, plain)
            copied = dual(lib, data(3), data(3, seed=1))
            copied.copy_(lib.ones(3, dtype=lib.float64))
            out["copy_constant"] = unpacked(lib, copied)
            copied.copy_(y)
            out["copy_dual"] = unpacked(lib, copied)
            y.zero_()
            out["zero_"] = unpacked(lib, y)
            w = dual(lib, data(2, 3), data(2, 3, seed=1))
            w[0] = x
            out["setitem"] = unpacked(lib, w)
        return out

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


def test_integer_and_piecewise_constant_outputs():
    """Integer and bool results carry no tangent; floor/round get a zero tangent, as torch's."""

    def run(lib):
        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(5), data(5, seed=1))
            return [unpacked(lib, r) for r in (x.argmax(), x > 0, x.long(), x.floor(), x.round(), x.detach())]

    assert_same(run(ember), run(torch))


# ---------------------------------------------------------------- modules


def test_linear_mlp_with_dual_input():
    def run(lib):
        lib.manual_seed(0)
        fwAD = lib.autograd.forward_ad
        model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3))
        state = {k: lib.tensor(data(*v.shape, seed=i)) for i, (k, v) in enumerate(model.state_dict().items())}
        model.load_state_dict(state)
        with fwAD.dual_level():
            x = fwAD.make_dual(lib.tensor(data(2, 4), dtype=lib.float32), lib.tensor(data(2, 4, seed=9),
                                                                                      dtype=lib.float32))
            return unpacked(lib, model(x))

    assert_same(run(ember), run(torch), rtol=1e-5, atol=1e-5)


def test_dual_parameters_functional_call():
    """The forward-AD tutorial's pattern: parameters made dual, the module run with functional_call."""

    def run(lib):
        fwAD = lib.autograd.forward_ad
        model = lib.nn.Sequential(lib.nn.Linear(4, 6), lib.nn.ReLU(), lib.nn.Linear(6, 2)).double()
        model.load_state_dict({k: lib.tensor(data(*v.shape, seed=i), dtype=lib.float64)
                               for i, (k, v) in enumerate(model.state_dict().items())})
        params = dict(model.named_parameters())
        tangents = {name: lib.tensor(data(*p.shape, seed=50 + i), dtype=lib.float64)
                    for i, (name, p) in enumerate(params.items())}
        x = lib.tensor(data(3, 4, seed=99), dtype=lib.float64)
        with fwAD.dual_level():
            dual_params = {name: fwAD.make_dual(p, tangents[name]) for name, p in params.items()}
            out = lib.func.functional_call(model, dual_params, (x,))
            return unpacked(lib, out)

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


def test_dual_parameters_by_setattr():
    """The tutorial's other pattern: delete each parameter and set a dual tensor in its place."""

    def run(lib):
        fwAD = lib.autograd.forward_ad
        model = lib.nn.Linear(3, 2).double()
        model.load_state_dict({"weight": lib.tensor(data(2, 3), dtype=lib.float64),
                               "bias": lib.tensor(data(2, seed=1), dtype=lib.float64)})
        params = {name: p.detach() for name, p in model.named_parameters()}
        with fwAD.dual_level():
            for i, (name, p) in enumerate(params.items()):
                delattr(model, name)
                setattr(model, name, fwAD.make_dual(p, lib.tensor(data(*p.shape, seed=10 + i), dtype=lib.float64)))
            return unpacked(lib, model(lib.tensor(data(4, 3, seed=5), dtype=lib.float64)))

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- levels, make_dual, unpack_dual


def test_nested_level_and_exit_errors():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        out = [catch(fwAD.exit_dual_level)]
        with fwAD.dual_level() as level:
            out.append(level)
            out.append(catch(lambda: fwAD.dual_level().__enter__()))
            out.append(catch(lambda: fwAD.exit_dual_level(level=3)))
        out.append(catch(lambda: fwAD.unpack_dual(lib.ones(2))))
        return out

    ours, theirs = run(ember), run(torch)
    assert ours[:4] == theirs[:4]
    assert ours[4][1][1] is None and theirs[4][1][1] is None


def test_enter_exit_functions_and_decorator():
    fwAD = ember.autograd.forward_ad
    assert fwAD.enter_dual_level() == 0
    x = fwAD.make_dual(ember.ones(2), ember.ones(2))
    fwAD.exit_dual_level()
    assert fwAD.unpack_dual(x).tangent is None

    @fwAD.dual_level()
    def tangent_of_square(value, direction):
        return fwAD.unpack_dual(fwAD.make_dual(value, direction) ** 2).tangent

    assert tangent_of_square(ember.tensor([3.0]), ember.tensor([1.0])).tolist() == [6.0]


def test_make_dual_errors():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.ones(3)
        out = [catch(lambda: fwAD.make_dual(x, lib.ones(3)))]
        with fwAD.dual_level():
            out.append(catch(lambda: fwAD.make_dual(x, lib.ones(4))))
            out.append(catch(lambda: fwAD.make_dual(x, lib.arange(3))))
            out.append(catch(lambda: fwAD.make_dual(lib.arange(3), lib.ones(3))))
            out.append(catch(lambda: fwAD.make_dual(x, lib.ones(3), level=2)))
        return out

    ours = [(kind, message.replace("ember.", "torch.")) for kind, message in run(ember)]
    assert ours == run(torch)


def test_unpack_dual_and_tangent_lifetime():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor(data(3))
        out = [type(fwAD.unpack_dual(x)).__name__, fwAD.UnpackedDualTensor._fields]
        with fwAD.dual_level():
            d = fwAD.make_dual(x, lib.tensor(data(3, seed=1)))
            y = d * 2
            primal, tangent = fwAD.unpack_dual(d)
            out += [d._base is x, primal._base is x, fwAD.unpack_dual(primal).tangent, fwAD.unpack_dual(x).tangent]
            out.append(unpacked(lib, y))
        out += [fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(d).tangent]
        return out

    assert_same(run(ember), run(torch))


def test_tangent_gets_the_primal_layout():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            tangent = lib.tensor(data(3, 2)).t()
            d = fwAD.make_dual(lib.tensor(data(2, 3)), tangent)
            kept = fwAD.unpack_dual(d).tangent
            return kept is tangent, kept.stride(), unpacked(lib, d.view(6))

    assert_same(run(ember), run(torch))


# ---------------------------------------------------------------- grad modes, reverse mode, out=


def test_no_grad_keeps_tangents_inference_mode_drops_them():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            x = dual(lib, data(3), data(3, seed=1))
            with lib.no_grad():
                kept = unpacked(lib, x.sin())
                view = unpacked(lib, x.view(3))
            with lib.inference_mode():
                dropped = fwAD.unpack_dual(x * 2).tangent
            return kept, view, dropped

    assert_same(run(ember), run(torch))


def test_reverse_mode_through_tangents():
    """A tangent keeps a graph to primals and tangents that require grad (reverse-over-forward)."""

    def run(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor(data(3), requires_grad=True)
        v = lib.tensor(data(3, seed=1), requires_grad=True)
        with fwAD.dual_level():
            out = (fwAD.make_dual(x, v) ** 2).sin()
            primal, tangent = fwAD.unpack_dual(out)
            tangent.sum().backward()
            return to_plain(x.grad), to_plain(v.grad), tangent.requires_grad, primal.requires_grad

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


def test_forward_over_reverse_hessian_vector_product():
    """Backward ops inside a level carry tangents too: the tangent of grad(f)(x) is the Hessian times t."""

    def run(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            x = fwAD.make_dual(lib.tensor(data(4), requires_grad=True), lib.tensor(data(4, seed=1)))
            y = (x.sin() * x).sum() + (x @ x) ** 2
            (gradient,) = lib.autograd.grad(y, x, create_graph=True)
            return unpacked(lib, gradient)

    assert_same(run(ember), run(torch), rtol=1e-10, atol=1e-10)


def test_repr_and_inplace_view_op():
    def run(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            x = fwAD.make_dual(lib.tensor([[1.0, 2.0, 3.0]]), lib.tensor([[0.5, 0.0, -1.0]]))
            text = repr(x * 2).replace("ember.", "torch.")
            x.t_()
            return text, unpacked(lib, x), unpacked(lib, x.squeeze_(1))

    assert_same(run(ember), run(torch))


def test_out_argument_raises():
    def run(lib):
        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(3), data(3, seed=1))
            error = catch(lambda: lib.mul(x, 2, out=lib.zeros(3, dtype=lib.float64)))
            return error[0], "out= function" in error[1]

    assert run(ember) == run(torch) == ("NotImplementedError", True)


# ---------------------------------------------------------------- custom Functions


def test_custom_function_jvp():
    def run(lib):
        seen = {}

        class ScaleAdd(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, scale):
                seen["forward_sees_dual"] = lib.autograd.forward_ad.unpack_dual(a).tangent is not None
                ctx.save_for_forward(a)
                ctx.scale = scale
                return a * b * scale, a + b

            @staticmethod
            def jvp(ctx, a_t, b_t, scale_t):
                (a,) = ctx.saved_tensors
                seen["tangents"] = (to_plain(b_t), scale_t)
                return a_t * 2 * a, a_t + b_t

        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(3), data(3, seed=1))
            outs = ScaleAdd.apply(x, lib.ones(3, dtype=lib.float64), 2.0)
            return [unpacked(lib, o) for o in outs], seen

    assert_same(run(ember), run(torch))


def test_custom_function_jvp_errors():
    def run(lib):
        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        class WrongCount(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def jvp(ctx, a_t):
                return a_t * 2, a_t

        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(3), data(3, seed=1))
            return catch(lambda: NoJvp.apply(x)), catch(lambda: WrongCount.apply(x))

    assert run(ember) == run(torch)


@pytest.mark.parametrize("name", ["zeta", "gammainc"])
def test_op_without_forward_ad_raises(name):
    """An op whose backward cannot be differentiated again (torch has no forward formula either) raises torch's
    NotImplementedError."""

    def run(lib):
        with lib.autograd.forward_ad.dual_level():
            x = dual(lib, data(3, positive=True), data(3, seed=1))
            error = catch(lambda: getattr(lib.special, name)(x + 1, x))
            return error[0], "forward AD" in error[1] and "does not support it" in error[1]

    assert run(ember) == run(torch) == ("NotImplementedError", True)


# ---------------------------------------------------------------- torch.func.jvp agrees


@pytest.mark.parametrize("dtype", DTYPES)
def test_func_jvp_agrees_with_forward_ad(dtype):
    def f(lib, x, w):
        return lib.tanh(x @ w).sum(0) * x.mean()

    def run(lib):
        dtype_ = getattr(lib, dtype)
        x, w = lib.tensor(data(3, 4), dtype=dtype_), lib.tensor(data(4, 2, seed=1), dtype=dtype_)
        tx, tw = lib.tensor(data(3, 4, seed=2), dtype=dtype_), lib.tensor(data(4, 2, seed=3), dtype=dtype_)
        _, by_func = lib.func.jvp(lambda a, b: f(lib, a, b), (x, w), (tx, tw))
        with lib.autograd.forward_ad.dual_level():
            out = f(lib, lib.autograd.forward_ad.make_dual(x, tx), lib.autograd.forward_ad.make_dual(w, tw))
            by_dual = lib.autograd.forward_ad.unpack_dual(out).tangent
        return to_plain(by_func), to_plain(by_dual)

    ours, theirs = run(ember), run(torch)
    tolerance = TOLERANCE[dtype]
    assert_same(ours, theirs, rtol=tolerance, atol=tolerance)
    assert_same(ours[0], ours[1], rtol=tolerance, atol=tolerance)
