"""ember.func's transforms (grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, linearize) against
torch.func: each test runs the same program with lib=torch and lib=ember and compares values, dtypes, shapes,
requires_grad and error messages (float64, tight tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

TOL = 1e-10


def plain(value):
    """Tensors to ("tensor", array, dtype name, requires_grad); containers recursively; the rest unchanged."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return ("tensor", np.array(value.detach().numpy()), str(value.dtype).split(".")[-1], value.requires_grad)
    if isinstance(value, (tuple, list)):
        return type(value)(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def assert_same(actual, expected, path: str = "result") -> None:
    if isinstance(expected, tuple) and expected and expected[0] == "tensor":
        assert isinstance(actual, tuple) and actual[0] == "tensor", f"{path}: {actual!r} is not a tensor"
        assert actual[2] == expected[2], f"{path}: dtype {actual[2]} != {expected[2]}"
        assert actual[3] == expected[3], f"{path}: requires_grad {actual[3]} != {expected[3]}"
        assert actual[1].shape == expected[1].shape, f"{path}: shape {actual[1].shape} != {expected[1].shape}"
        np.testing.assert_allclose(actual[1], expected[1], rtol=TOL, atol=TOL, err_msg=path)
        return
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, f"{path}[{index}]")
        return
    if isinstance(expected, dict):
        assert list(actual) == list(expected), path
        for key in expected:
            assert_same(actual[key], expected[key], f"{path}[{key!r}]")
        return
    assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def compare(fn):
    """fn(lib) run with torch and with ember must give the same result."""
    expected = plain(fn(torch))
    actual = plain(fn(ember))
    assert_same(actual, expected)
    return actual


def outcome(fn):
    try:
        return ("ok", plain(fn()))
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return (type(error).__name__, str(error).replace("ember.", "torch."))


def compare_errors(fn):
    """fn(lib) must raise the same exception type and message under torch and ember."""
    expected = outcome(lambda: fn(torch))
    actual = outcome(lambda: fn(ember))
    assert expected[0] != "ok", expected
    assert actual == expected


def vec(lib, values=(0.5, -1.0, 2.0)):
    return lib.tensor(list(values), dtype=lib.float64)


def mat(lib, rows=3, cols=4, offset=0.0):
    data = np.sin(np.arange(rows * cols, dtype=np.float64) * 0.7 + offset).reshape(rows, cols)
    return lib.tensor(data.tolist(), dtype=lib.float64)


def poly(a):
    return (a**3 - 2 * a**2 + a).sum()


def smooth(a):
    return (a.tanh() * a.exp() + (a * 0.5).sin()).sum()


# ---------------------------------------------------------------------------------------------- grad


def test_grad_polynomial_and_compositions():
    compare(lambda lib: (lib.func.grad(poly)(vec(lib)), lib.func.grad(smooth)(vec(lib))))


def test_grad_argnums_has_aux_and_kwargs():
    def f(a, b, *, scale):
        out = (a * b.exp()).sum() * scale
        return out, {"prod": a * b, "n": [b.sum()]}

    def run(lib):
        F = lib.func
        x, y = vec(lib), vec(lib, (1.5, 0.25, -0.5))
        return (
            F.grad(f, argnums=1, has_aux=True)(x, y, scale=2.0),
            F.grad(f, argnums=(0, 1), has_aux=True)(x, y, scale=3.0),
            F.grad(f, argnums=-2, has_aux=True)(x, y, scale=1.0),
            F.grad(lambda a, b: (a * a).sum(), argnums=(0, 1))(x, y),  # unused input: zeros
            F.grad(lambda a: lib.zeros((), dtype=lib.float64))(x),  # constant output: zeros
        )

    compare(run)


def test_grad_dict_and_list_inputs():
    def loss(params, data):
        hidden = (data @ params["w"] + params["b"]).tanh()
        return (hidden * params["extra"][0]).sum()

    def run(lib):
        params = {"w": mat(lib, 4, 2), "b": vec(lib, (0.1, -0.2)), "extra": [vec(lib, (2.0, 3.0))]}
        return lib.func.grad(loss)(params, mat(lib, 3, 4, 1.0))

    compare(run)


def test_grad_and_value():
    def run(lib):
        x = vec(lib)
        return (lib.func.grad_and_value(smooth)(x),
                lib.func.grad_and_value(lambda a: (poly(a), a.cos()), has_aux=True)(x))

    compare(run)


def test_grad_of_grad_and_closures():
    def run(lib):
        F = lib.func
        s = lib.tensor(1.5, dtype=lib.float64)
        cube = lambda a: a**3 + a.sin()
        # inner differentiates w.r.t. b only: x is a constant there (no perturbation confusion)
        mixed = F.grad(lambda a: F.grad(lambda b: (a * b * b).sum())(a).sum())(vec(lib))
        return F.grad(F.grad(cube))(s), F.grad(F.grad(F.grad(cube)))(s), mixed

    compare(run)


def test_grad_composes_with_outer_autograd():
    def run(lib):
        x = vec(lib).requires_grad_()
        w = vec(lib, (1.0, 2.0, 3.0)).requires_grad_()
        g = lib.func.grad(lambda a: (a**3 * w).sum())(x)  # depends on x and on the closed-over w
        constant = lib.func.grad(lambda a: a.sum())(x)  # ones: nothing to differentiate
        (g * g).sum().backward()
        with lib.no_grad():
            detached = lib.func.grad(lambda a: (a**3).sum())(x)
        return g, constant, x.grad, w.grad, detached

    compare(run)


def test_grad_errors():
    cases = [
        lambda lib: lib.func.grad(lambda a: a)(vec(lib)),
        lambda lib: lib.func.grad(lambda a: 3)(vec(lib)),
        lambda lib: lib.func.grad(lambda a: a.sum(), has_aux=True)(vec(lib)),
        lambda lib: lib.func.grad(lambda a: (a.sum(), 2), has_aux=True)(vec(lib)),
        lambda lib: lib.func.grad(lambda a: a.sum(), argnums=1)(vec(lib)),
        lambda lib: lib.func.grad(lambda a: a.sum(), argnums=())(vec(lib)),
        lambda lib: lib.func.grad(lambda a: a.sum(), argnums=[0])(vec(lib)),
        lambda lib: lib.func.grad(lambda a, b: a.sum(), argnums=(0, -2))(vec(lib), vec(lib)),
        lambda lib: lib.func.grad(lambda a: a.sum())(3.0),
        lambda lib: lib.func.grad(lambda a: a["x"].sum())({"x": vec(lib), "y": 3}),
        lambda lib: lib.func.grad(lambda a: a.sum())(lib.arange(3)),
    ]
    for case in cases:
        compare_errors(case)


# ---------------------------------------------------------------------------------------------- vjp


def test_vjp():
    def run(lib):
        F = lib.func
        x, y = vec(lib), vec(lib, (1.5, 0.25, -0.5))
        out, fn = F.vjp(lambda a, b: {"p": a * b.exp(), "q": [(a * b).sum()]}, x, y)
        first = fn({"p": vec(lib, (1.0, 2.0, 3.0)), "q": [lib.tensor(2.0, dtype=lib.float64)]})
        again = fn({"p": lib.ones(3, dtype=lib.float64), "q": [lib.tensor(0.0, dtype=lib.float64)]})
        out2, fn2, aux = F.vjp(lambda a: (a.tanh(), a.sum()), x, has_aux=True)
        unused = F.vjp(lambda a, b: a * 2, x, y)[1](lib.ones(3, dtype=lib.float64))
        dict_primal = F.vjp(lambda d: d["a"].sin(), {"a": x})[1](lib.ones(3, dtype=lib.float64))
        return out, first, again, out2, fn2(lib.ones(3, dtype=lib.float64)), aux, unused, dict_primal

    compare(run)


def test_grad_through_vjp_fn():
    def run(lib):
        F = lib.func

        def f(v):
            return F.vjp(lambda a: a.sin() * a, vec(lib))[1](v)[0].sum()

        return F.grad(f)(vec(lib, (1.0, -1.0, 0.5))), F.grad(lambda x: F.vjp(smooth, x)[1](
            lib.tensor(1.0, dtype=lib.float64))[0].sum())(vec(lib))

    compare(run)


def test_vjp_errors():
    cases = [
        lambda lib: lib.func.vjp(lambda a: (a, a), vec(lib))[1](lib.ones(3, dtype=lib.float64)),
        lambda lib: lib.func.vjp(lambda a: a, vec(lib))[1](lib.ones(2, dtype=lib.float64)),
        lambda lib: lib.func.vjp(lambda a: 3, vec(lib)),
        lambda lib: lib.func.vjp(lambda a: a, 3.0),
        lambda lib: lib.func.vjp(lambda a: a, vec(lib), has_aux=True),
        lambda lib: lib.func.vjp(lambda a: (a, 2), vec(lib), has_aux=True),
    ]
    for case in cases:
        compare_errors(case)


# ---------------------------------------------------------------------------------------------- jvp


def test_jvp():
    def run(lib):
        F = lib.func
        x, y = vec(lib), vec(lib, (1.5, 0.25, -0.5))
        t, u = vec(lib, (1.0, 0.0, -1.0)), vec(lib, (0.5, 0.5, 2.0))
        single = F.jvp(smooth, (x,), (t,))
        multi = F.jvp(lambda a, b: (a * b.exp(), {"s": (a @ b).tanh()}), (x, y), (t, u))
        aux = F.jvp(lambda a: (a.exp(), a.sum()), (x,), (t,), has_aux=True)
        tree = F.jvp(lambda d: d["a"] * d["b"], ({"a": x, "b": y},), ({"a": t, "b": u},))
        independent = F.jvp(lambda a, b: b * 2, (x, y), (t, u), strict=True)
        matmul = F.jvp(lambda m: m @ m.T, (mat(lib),), (mat(lib, offset=2.0),))
        return single, multi, aux, tree, independent, matmul

    compare(run)


def test_jvp_of_grad_and_grad_of_jvp():
    def run(lib):
        F = lib.func
        x, t = vec(lib), vec(lib, (1.0, 2.0, -1.0))
        hvp = F.jvp(F.grad(smooth), (x,), (t,))
        grad_of_jvp = F.grad(lambda a: F.jvp(lambda b: (b**3).sum(), (a,), (t,))[1])(x)
        return hvp, grad_of_jvp

    compare(run)


def test_jvp_errors():
    cases = [
        lambda lib: lib.func.jvp(lambda a: a, vec(lib), vec(lib)),
        lambda lib: lib.func.jvp(lambda a: a, (vec(lib),), vec(lib)),
        lambda lib: lib.func.jvp(lambda a: a, (vec(lib),), (vec(lib), vec(lib))),
        lambda lib: lib.func.jvp(lambda a: a, (vec(lib),), (lib.ones(2, dtype=lib.float64),)),
        lambda lib: lib.func.jvp(lambda a: a, (3.0,), (3.0,)),
        lambda lib: lib.func.jvp(lambda a: a, (), ()),
        lambda lib: lib.func.jvp(lambda a: 3, (vec(lib),), (vec(lib),)),
        lambda lib: lib.func.jvp(lambda a: a, (vec(lib),), (vec(lib),), has_aux=True),
        lambda lib: lib.func.jvp(lambda a: a, ({"a": vec(lib)},), ({"b": vec(lib)},)),
        lambda lib: lib.func.jvp(lambda a: vec(lib) * 2, (vec(lib),), (vec(lib),), strict=True),
    ]
    for case in cases:
        compare_errors(case)


# ---------------------------------------------------------------------------------------------- jacobians


def test_jacrev_and_jacfwd():
    def f(a, b):
        return {"m": (a.unsqueeze(1) * b).tanh() @ b.exp(), "s": [(a * a * b).sum()]}

    def run(lib):
        F = lib.func
        x, y = vec(lib), vec(lib, (1.5, 0.25, -0.5))
        results = []
        for jac in (F.jacrev, F.jacfwd):
            results.append(jac(f)(x, y))
            results.append(jac(f, argnums=(0, 1))(x, y))
            results.append(jac(lambda m: m @ m.T)(mat(lib)))
            results.append(jac(lambda a: (a.exp(), a.sum()), has_aux=True)(x))
            results.append(jac(lambda d: d["a"].sin() * d["b"])({"a": x, "b": y}))
        results.append(F.jacrev(smooth, chunk_size=1)(x))
        return results

    compare(run)


def test_hessian_and_nested_jacobians():
    def run(lib):
        F = lib.func
        x, y = vec(lib), vec(lib, (1.5, 0.25, -0.5))
        return (
            F.hessian(smooth)(x),
            F.hessian(lambda a, b: (a * a * b.exp()).sum(), argnums=(0, 1))(x, y),
            F.jacrev(F.jacrev(poly))(x),
            F.jacfwd(F.jacrev(lambda m: (m @ m.T).sin().sum()))(mat(lib, 2, 2)),
            F.jacrev(F.grad(smooth))(x),
        )

    compare(run)


def test_jacobian_errors_and_randomness():
    cases = [
        lambda lib: lib.func.jacrev(lambda a: 3)(vec(lib)),
        lambda lib: lib.func.jacrev(lambda a: a, chunk_size=0),
        lambda lib: lib.func.jacrev(lambda a: a.long())(vec(lib)),
        lambda lib: lib.func.jacfwd(lambda a: a + lib.rand(3, dtype=lib.float64))(vec(lib)),
        lambda lib: lib.func.jacfwd(lambda a: a, has_aux=True)(vec(lib)),
    ]
    for case in cases:
        compare_errors(case)
    same = ember.func.jacfwd(lambda a: a * ember.rand(3, dtype=ember.float64), randomness="same")(vec(ember))
    assert same.shape == (3, 3)


def test_linearize():
    def run(lib):
        x = vec(lib)
        out, jvp_fn = lib.func.linearize(lambda a: (a.sin() * a.exp(), a.sum()), x)
        return out, jvp_fn(vec(lib, (1.0, 0.0, 2.0))), jvp_fn(vec(lib, (0.0, 1.0, 0.0)))

    compare(run)
    compare_errors(lambda lib: lib.func.linearize(lambda a: a.sin(), vec(lib))[1](vec(lib), vec(lib)))
    compare_errors(lambda lib: lib.func.linearize(lambda a: a.sin(), vec(lib))[1](lib.ones(2, dtype=lib.float64)))


# ---------------------------------------------------------------------------------------------- vmap


def test_vmap_in_dims_and_out_dims():
    def run(lib):
        vmap = lib.vmap
        x, m = mat(lib), mat(lib, 4, 3, 1.0)
        return (
            vmap(lambda r: r.sin() * r.sum())(x),
            vmap(lib.dot, in_dims=(0, None))(x, vec(lib, (1.0, 2.0, 3.0, 4.0))),
            vmap(lambda r, s: r * s, in_dims=(1, 0))(x, m),
            vmap(lambda r: r.exp(), out_dims=1)(x),
            vmap(lambda r: (r.cos(), r.sum()), in_dims=1, out_dims=(1, 0))(x),
            vmap(lambda r, k: r * k, in_dims=-1)(x, k=2.0),
            vmap(lambda d, c: d["a"] @ d["b"] + c, in_dims=({"a": 0, "b": None}, None))(
                {"a": x, "b": m}, 1.0),
            vmap(lambda r: {"p": r, "q": [r.sum()]}, out_dims={"p": 1, "q": [0]})(x),
            vmap(lambda r: (r, 2), out_dims=(0, None))(x),
            vmap(lambda r: x.sum() * 2, out_dims=None)(x),
            vmap(lambda r: r * 2)(lib.zeros(0, 3, dtype=lib.float64)),
            vmap(lambda r: r @ r, chunk_size=2)(x),
            vmap(lambda r: r.tanh(), in_dims=1, out_dims=-1, chunk_size=3)(x),
        )

    compare(run)


def test_nested_vmap_and_matmul():
    def run(lib):
        vmap = lib.func.vmap
        a = lib.tensor(np.linspace(-1, 1, 2 * 3 * 4).reshape(2, 3, 4).tolist(), dtype=lib.float64)
        b = lib.tensor(np.linspace(0, 2, 2 * 3 * 4).reshape(2, 3, 4).tolist(), dtype=lib.float64)
        return (
            vmap(vmap(lib.dot))(a, b),
            vmap(vmap(lambda r, s: r * s.exp(), in_dims=(0, None)), in_dims=(0, None))(a, b[0, 0]),
            vmap(lambda m: m @ m.T)(a),
            vmap(vmap(lambda r: r.sum(), in_dims=1), in_dims=2)(a),
        )

    compare(run)


def test_vmap_composes_with_autograd():
    def run(lib):
        F = lib.func
        x = mat(lib)
        per_row_grads = F.vmap(F.grad(smooth))(x)
        grad_of_vmap = F.grad(lambda m: F.vmap(lambda r: (r**3).sum())(m).sum())(x)
        jac_rows = F.vmap(F.jacrev(lambda r: r.sin() * r.sum()))(x)
        hvps = F.vmap(lambda t: F.jvp(F.grad(smooth), (vec(lib),), (t,))[1])(mat(lib, 2, 3))
        leaf = x.clone().requires_grad_()
        F.vmap(lambda r: r.exp().sum())(leaf).sum().backward()
        return per_row_grads, grad_of_vmap, jac_rows, hvps, leaf.grad

    compare(run)


def test_per_sample_gradients_of_a_linear_model():
    torch.manual_seed(0)
    torch_model = torch.nn.Linear(4, 3).double()
    ember_model = ember.nn.Linear(4, 3).double()
    ember_model.load_state_dict({k: ember.tensor(v.tolist(), dtype=ember.float64)
                                 for k, v in torch_model.state_dict().items()})
    models = {torch: torch_model, ember: ember_model}

    def run(lib):
        F = lib.func
        model = models[lib]
        params = {name: p.detach() for name, p in model.named_parameters()}

        def loss(params, sample, target):
            prediction = F.functional_call(model, params, (sample.unsqueeze(0),))
            return ((prediction.squeeze(0) - target) ** 2).sum()

        data, targets = mat(lib, 5, 4), mat(lib, 5, 3, 0.5)
        per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, data, targets)
        chunked = F.vmap(F.grad_and_value(loss), in_dims=(None, 0, 0), chunk_size=2)(params, data, targets)
        return per_sample, chunked

    compare(run)


def test_vmap_randomness():
    def run(lib):
        lib.manual_seed(0)
        x = lib.zeros(4, 3, dtype=lib.float64)
        same = lib.vmap(lambda r: r + lib.rand(3, dtype=lib.float64), randomness="same")(x)
        different = lib.vmap(lambda r: r + lib.rand(3, dtype=lib.float64), randomness="different")(x)
        dropout = lib.vmap(lambda r: lib.nn.functional.dropout(r + 1, 0.5), randomness="same")(x)
        return [bool((same[i] == same[0]).all()) for i in range(4)], bool((different[1] != different[0]).any()), \
            [bool((dropout[i] == dropout[0]).all()) for i in range(4)]

    compare(run)
    compare_errors(lambda lib: lib.vmap(lambda r: r + lib.rand(3, dtype=lib.float64))(lib.zeros(4, 3)))
    compare_errors(lambda lib: lib.vmap(lambda r: r.normal_())(lib.zeros(4, 3)))
    # "same" draws the numbers a single unbatched draw would
    ember.manual_seed(7)
    same = ember.vmap(lambda r: ember.rand(3), randomness="same")(ember.zeros(2))
    ember.manual_seed(7)
    assert bool((same[1] == ember.rand(3)).all())
    assert ember.vmap is ember.func.vmap


def test_vmap_errors():
    x = lambda lib: mat(lib)  # noqa: E731
    cases = [
        lambda lib: lib.vmap(lib.sin, in_dims=(0, 1))(x(lib)),
        lambda lib: lib.vmap(lib.sin, in_dims=2)(x(lib)),
        lambda lib: lib.vmap(lib.sin, in_dims=-3)(x(lib)),
        lambda lib: lib.vmap(lambda a, b: a * b, in_dims=(0, 0))(x(lib), 3),
        lambda lib: lib.vmap(lambda a, b: a + b)(x(lib), lib.zeros(4, 4, dtype=lib.float64)),
        lambda lib: lib.vmap(lambda a: 3)(x(lib)),
        lambda lib: lib.vmap(lambda a: a, out_dims=None)(x(lib)),
        lambda lib: lib.vmap(lambda a: (a, a), out_dims=(0,))(x(lib)),
        lambda lib: lib.vmap(lambda a: a, out_dims=2)(x(lib)),
        lambda lib: lib.vmap(lambda a: a, chunk_size=0),
        lambda lib: lib.vmap(lambda a: a, randomness="foo"),
        lambda lib: lib.vmap(lambda a: a, in_dims=[0])(x(lib)),
        lambda lib: lib.vmap(lambda a: a, in_dims=None)(x(lib)),
        lambda lib: lib.vmap(lambda a: a)(),
        lambda lib: lib.vmap(lambda a: a, in_dims=({"a": 0},))({"b": x(lib)}),
        lambda lib: lib.vmap(lambda a: a["a"], in_dims=({"a": 0, "b": 0},))({"a": x(lib), "b": 1}),
        lambda lib: lib.vmap(lambda a: a)(lib.tensor(3.0)),
        lambda lib: lib.vmap(lambda a, b: a * b, in_dims=(None, None))(x(lib), x(lib)),
        lambda lib: lib.vmap(lambda a: a, in_dims=(0.5,))(x(lib)),
        lambda lib: lib.vmap(lambda a: a, out_dims=(0.5,))(x(lib)),
        lambda lib: lib.vmap(lambda a: (a, a.sum()), out_dims=(1, None))(x(lib)),
    ]
    for case in cases:
        compare_errors(case)
