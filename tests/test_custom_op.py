"""ember.library.custom_op and its registrations (torch.library.custom_op): schemas, calls, errors, autograd,
kernels per device, fake impls, opcheck and ember.compile -- each behaviour checked against real PyTorch
where torch runs the same program."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.library as L
from ember import Tensor

torch = pytest.importorskip("torch")

_ids = itertools.count()


def _define(lib, body, *, mutates_args=(), annotations=None, name=None, **options):
    """Register `body` as a fresh custom op in both libraries' registries (names are global per process)."""
    qualname = f"ember_test::{name or body.__name__}_{next(_ids)}"
    fn = _with_annotations(body, lib, annotations)
    return lib.library.custom_op(qualname, mutates_args=mutates_args, **options)(fn)


def _with_annotations(body, lib, annotations):
    """A copy of body whose type hints name lib.Tensor (annotations: {arg: type-or-'Tensor'})."""
    import types

    fn = types.FunctionType(body.__code__, body.__globals__, body.__name__, body.__defaults__, body.__closure__)
    fn.__kwdefaults__ = body.__kwdefaults__
    hints = dict(annotations if annotations is not None else {"x": "Tensor", "return": "Tensor"})
    fn.__annotations__ = {k: (lib.Tensor if v == "Tensor" else None if v is type(None) else v)
                          for k, v in hints.items()}
    return fn


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as error:  # noqa: BLE001 - the error type is what is compared
        return (type(error).__name__, str(error))


def _sin(x):
    return x.sin()


def _double(x):
    return x * 2


# ---------------------------------------------------------------- schemas


def _schema_fn_a(x: Tensor, y: Tensor, n: int, f: float = 2.5, *, flag: bool = False) -> tuple[Tensor, Tensor]:
    return x, y


def _schema_fn_b(xs: list[Tensor], dim: int | None = None, s: str = "a", w: Tensor | None = None,
                 sizes: list[int] | None = None, scale: list[float] | None = None) -> list[Tensor]:
    return xs


def _schema_fn_c(x: Tensor, out: Tensor, values: list[Tensor | None]) -> None:
    return None


def _schema_fn_d(x: Tensor) -> tuple[Tensor]:
    return (x,)


def _schema_fn_e(x: Tensor, n: int = 3) -> int:
    return n


@pytest.mark.parametrize("fn,mutates", [(_schema_fn_a, ()), (_schema_fn_b, ()), (_schema_fn_c, ("out",)),
                                        (_schema_fn_c, "unknown"), (_schema_fn_d, ()), (_schema_fn_e, ())])
def test_infer_schema_matches_torch(fn, mutates):
    mine_fn = _with_annotations(fn, ember, {k: ("Tensor" if v is Tensor else v)
                                            for k, v in _resolved(fn).items()})
    theirs_fn = _with_annotations(fn, torch, {k: ("Tensor" if v is Tensor else v)
                                              for k, v in _resolved(fn).items()})
    mine = L.infer_schema(mine_fn, mutates_args=mutates)
    theirs = torch.library.infer_schema(_retype(theirs_fn), mutates_args=mutates)
    assert mine == theirs


def _resolved(fn):
    import typing

    return typing.get_type_hints(fn)


def _retype(fn):
    """Replace ember.Tensor inside generic hints by torch.Tensor (list[Tensor], Tensor | None)."""
    import typing

    def convert(hint):
        if hint is ember.Tensor:
            return torch.Tensor
        args = typing.get_args(hint)
        if not args:
            return hint
        origin = typing.get_origin(hint)
        converted = tuple(convert(a) for a in args)
        if origin is typing.Union or type(hint).__name__ == "UnionType":
            return typing.Union[converted]
        return origin[converted if len(converted) > 1 else converted[0]] if origin is not tuple else \
            tuple[converted]

    fn.__annotations__ = {k: convert(v) for k, v in fn.__annotations__.items()}
    return fn


@pytest.mark.parametrize("case", ["no_annotation", "dict_arg", "dict_return", "tuple_arg", "bad_mutates",
                                  "mutates_int", "tuple_default", "varargs", "no_return"])
def test_infer_schema_errors_match_torch(case):
    def make(lib):
        T = lib.Tensor
        fns = {
            "no_annotation": (lambda x: x, ()),
            "dict_arg": (_annotated(lambda x, y: x, {"x": T, "y": dict, "return": T}), ()),
            "dict_return": (_annotated(lambda x: x, {"x": T, "return": dict}), ()),
            "tuple_arg": (_annotated(lambda x, y: x, {"x": T, "y": tuple[int, int], "return": T}), ()),
            "bad_mutates": (_annotated(lambda x: x, {"x": T, "return": T}), ("y",)),
            "mutates_int": (_annotated(lambda x, n: x, {"x": T, "n": int, "return": T}), ("n",)),
            "tuple_default": (_annotated(lambda x, n=(1,): x, {"x": T, "n": list[int], "return": T}), ()),
            "varargs": (_annotated(lambda *x: x, {"x": T, "return": T}), ()),
            "no_return": (_annotated(lambda x: x, {"x": T}), ()),
        }
        fn, mutates = fns[case]
        return _outcome(lambda: lib.library.infer_schema(fn, mutates_args=mutates))

    mine, theirs = make(ember), make(torch)
    assert mine[0] == theirs[0] == "ValueError"
    # the first clause (which parameter, what is wrong) is torch's; the list of valid types is worded differently
    assert mine[1].split(". ")[0].replace("ember._tensor.", "torch.") == theirs[1].split(". ")[0]


def _annotated(fn, annotations):
    fn.__annotations__ = annotations
    return fn


def test_custom_op_needs_mutates_args():
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="mutates_args"):
            lib.library.custom_op("ember_test::nomut")(_sin)


def test_explicit_schema():
    def body(x):
        return x * 2

    op = L.custom_op("ember_test::explicit", mutates_args=(), schema="(Tensor x) -> Tensor")(body)
    assert op(ember.ones(2)).tolist() == [2.0, 2.0]
    assert ember.ops.ember_test.explicit.default._schema == "ember_test::explicit(Tensor x) -> Tensor"


# ---------------------------------------------------------------- calling


def test_call_paths_and_namespace():
    op = _define(ember, _sin, name="mysin")
    name = op._name
    x = ember.tensor([0.5, 1.0])
    expected = x.sin().tolist()
    assert op(x).tolist() == expected
    packet = getattr(ember.ops.ember_test, name)
    assert packet is getattr(ember.ops.ember_test, name)
    assert packet(x).tolist() == expected and packet.default(x).tolist() == expected
    assert repr(packet) == f"ember_test.{name}" and repr(packet.default) == f"ember_test.{name}.default"
    assert repr(op) == f"<CustomOpDef(ember_test::{name})>"
    with pytest.raises(AttributeError, match="'_OpNamespace' 'ember_test' object has no attribute 'missing'"):
        _ = ember.ops.ember_test.missing


@pytest.mark.parametrize("call", ["op(3)", "op(lib.ones(1), 3)", "op(y=lib.ones(1))", "op(x=lib.ones(1)).tolist()"])
def test_call_errors_match_torch(call):
    def run(lib):
        op = _define(lib, _double, name="callerr")
        result = _outcome(lambda: eval(call, {"op": op, "lib": lib}))
        return result[0], result[1].replace(op._name, "OP") if isinstance(result[1], str) else result[1]

    mine, theirs = run(ember), run(torch)
    assert mine[0] == theirs[0]
    if mine[0] == "ok":
        assert mine == theirs
    else:
        assert mine[1] == theirs[1]


def test_multiple_outputs_keywords_and_lists():
    def body(x, y, n, f=2.0, *, flag=False):
        return x * n + y * f, (x - y) if not flag else x.clone()

    def lists(xs, scale):
        return [x * scale for x in xs]

    hints = {"x": "Tensor", "y": "Tensor", "n": int, "f": float, "flag": bool}
    for lib in (ember, torch):
        op = _define(lib, body, annotations={**hints, "return": tuple[lib.Tensor, lib.Tensor]})
        a, b = op(lib.ones(2), lib.ones(2), 3)
        assert a.tolist() == [5.0, 5.0] and b.tolist() == [0.0, 0.0]
        assert op(lib.ones(2), lib.ones(2), 3, flag=True)[1].tolist() == [1.0, 1.0]
        listed = _define(lib, lists, annotations={"xs": list[lib.Tensor], "scale": float,
                                                  "return": list[lib.Tensor]})
        out = listed([lib.ones(1), lib.ones(2)], 2.0)
        assert isinstance(out, list) and [o.tolist() for o in out] == [[2.0], [2.0, 2.0]]


@pytest.mark.parametrize("body", ["return x", "return x.view(-1)", "return x[:1]", "y = x * 2\n    return y, y"])
def test_returning_an_alias_is_an_error_like_torch(body):
    namespace: dict = {}
    exec(f"def alias(x):\n    {body}\n", namespace)
    fn = namespace["alias"]
    returns = "two" if "," in body else "one"
    for lib in (ember, torch):
        ret = tuple[lib.Tensor, lib.Tensor] if returns == "two" else "Tensor"
        op = _define(lib, fn, annotations={"x": "Tensor", "return": ret})
        with pytest.raises(RuntimeError, match=r"The output of this custom operator \(1\) must not also be an input"):
            op(lib.ones(2, 2))


def test_mutating_op():
    def body(x, out):
        out.copy_(x * 3)

    for lib in (ember, torch):
        op = _define(lib, body, mutates_args=("out",), annotations={"x": "Tensor", "out": "Tensor", "return": None})
        out = lib.zeros(2)
        assert op(lib.ones(2), out) is None
        assert out.tolist() == [3.0, 3.0]
        with pytest.raises(RuntimeError, match="Cannot register autograd formula for non-functional operator"):
            op.register_autograd(lambda ctx, grad: grad)


def test_unlisted_mutation_runs_but_opcheck_reports_it():
    def body(x):
        x.add_(1)
        return x.clone()

    for lib in (ember, torch):
        op = _define(lib, body)
        t = lib.zeros(2)
        assert op(t).tolist() == [1.0, 1.0] and t.tolist() == [1.0, 1.0]  # eager does not check, as torch
        results = lib.library.opcheck(op, (lib.zeros(2),), raise_exception=False)
        assert str(results["test_schema"]) == "Argument x is not defined as mutable but was mutated"
        assert results["test_autograd_registration"] == "SUCCESS"


# ---------------------------------------------------------------- autograd


def _setup_sin(ctx, inputs, output):
    x, = inputs
    ctx.save_for_backward(x)


def _backward_sin(ctx, grad):
    x, = ctx.saved_tensors
    return grad * x.cos()


def test_backward_without_formula_is_torchs_error():
    for lib in (ember, torch):
        op = _define(lib, _sin, name="nograd")
        x = lib.ones(3, requires_grad=True)
        y = op(x)
        assert y.requires_grad
        assert type(y.grad_fn).__name__ == f"GeneratedBackwardFor_ember_test_{op._name}_defaultBackward"
        with pytest.raises(RuntimeError, match=f"Trying to backward through ember_test.{op._name}.default but no "
                                               "autograd formula was registered"):
            y.sum().backward()


def test_register_autograd_gradients_match_torch():
    data = np.linspace(-1, 1, 5)
    grads = []
    for lib in (ember, torch):
        op = _define(lib, _sin, name="gradsin")
        op.register_autograd(_backward_sin, setup_context=_setup_sin)
        x = lib.tensor(data, requires_grad=True)
        op(x).pow(2).sum().backward()
        grads.append(x.grad.numpy())
        with lib.no_grad():
            assert op(x).grad_fn is None
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_register_autograd_by_name_with_non_tensor_inputs_and_needs_input_grad():
    def body(x, y, alpha):
        return x * y * alpha

    def setup(ctx, inputs, output):
        x, y, alpha = inputs
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        ctx.seen = ctx.needs_input_grad

    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        return grad * y * ctx.alpha, grad * x * ctx.alpha, None

    results = []
    for lib in (ember, torch):
        op = _define(lib, body, annotations={"x": "Tensor", "y": "Tensor", "alpha": float, "return": "Tensor"})
        lib.library.register_autograd(f"ember_test::{op._name}", backward, setup_context=setup)
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0])
        out = op(a, b, 2.0)
        out.sum().backward()
        results.append((a.grad.tolist(), out.grad_fn.seen[:3]))  # torch's tuple has one more (internal) entry
    assert results[0] == results[1]


def test_backward_returning_the_wrong_count_is_an_error():
    def body(x, y):
        return x * y

    for lib in (ember, torch):
        op = _define(lib, body, annotations={"x": "Tensor", "y": "Tensor", "return": "Tensor"})
        op.register_autograd(lambda ctx, grad: grad)
        a = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
            op(a, lib.ones(2)).sum().backward()


def test_register_autograd_without_setup_context_and_list_inputs():
    def body(xs, scale):
        return xs[0] * scale + xs[1]

    def backward(ctx, grad):
        return [grad * 2.0, grad], None

    grads = []
    for lib in (ember, torch):
        op = _define(lib, body, annotations={"xs": list[lib.Tensor], "scale": float, "return": "Tensor"})
        op.register_autograd(backward)
        a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        op([a, b], 2.0).sum().backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]


# ---------------------------------------------------------------- kernels, fake impls


def test_register_kernel_and_device_types():
    def plus_one(x):
        return x + 1

    for lib in (ember, torch):
        only_cuda = _define(lib, plus_one, device_types="cuda")
        with pytest.raises(NotImplementedError, match=f"Could not run 'ember_test::{only_cuda._name}' with "
                                                      "arguments from the 'CPU' backend"):
            only_cuda(lib.zeros(1))
        lib.library.register_kernel(f"ember_test::{only_cuda._name}", "cpu", lambda x: x + 7)
        assert only_cuda(lib.zeros(1)).tolist() == [7.0]
        anywhere = _define(lib, plus_one)

        @anywhere.register_kernel("cpu")
        def _(x):
            return x + 100

        assert anywhere(lib.zeros(1)).tolist() == [100.0]


def test_fake_impl_runs_on_meta():
    def body(x):
        return ember.cat([x, x])

    op = _define(ember, body)
    with pytest.raises(RuntimeError, match="There was no fake impl registered"):
        op(ember.zeros(3, device="meta"))

    @op.register_fake
    def _(x):
        return x.new_empty(2 * x.shape[0])

    out = op(ember.zeros(3, device="meta"))
    assert out.device.type == "meta" and out.shape == (6,)
    assert L.register_fake(op) is not None  # the decorator form


def test_define_and_impl_low_level_api():
    L.define("ember_test::scaled", "(Tensor x, float alpha=2.0) -> Tensor")
    with pytest.raises(NotImplementedError, match="ember_test::scaled"):
        ember.ops.ember_test.scaled(ember.ones(1))
    L.impl("ember_test::scaled", "cpu", lambda x, alpha=2.0: x * alpha)
    assert ember.ops.ember_test.scaled(ember.ones(1)).tolist() == [2.0]
    assert ember.ops.ember_test.scaled(ember.ones(1), 3.0).tolist() == [3.0]


# ---------------------------------------------------------------- opcheck


def test_opcheck_results_match_torch():
    def body(x):
        return x * 2

    outcomes = []
    for lib in (ember, torch):
        op = _define(lib, body, name="checked")
        no_fake = lib.library.opcheck(op, (lib.ones(2),), raise_exception=False)
        with pytest.raises(Exception, match="test_faketensor failed with There was no fake impl registered"):
            lib.library.opcheck(op, (lib.ones(2),))
        op.register_fake(lambda x: lib.empty_like(x))
        clean = lib.library.opcheck(op, (lib.ones(2),))
        needs_grad = lib.library.opcheck(op, (lib.ones(2, requires_grad=True),), raise_exception=False)
        op.register_autograd(lambda ctx, grad: grad * 2)
        with_grad = lib.library.opcheck(op, (lib.ones(2, requires_grad=True),))
        outcomes.append([{k: (v if v == "SUCCESS" else str(v).replace(op._name, "OP").replace("torch", "ember"))
                          for k, v in r.items()} for r in (no_fake, clean, needs_grad, with_grad)])
    assert outcomes[0] == outcomes[1]


def test_opcheck_catches_a_wrong_fake():
    def body(x):
        return x.sum(0)

    op = _define(ember, body)
    op.register_fake(lambda x: ember.empty_like(x))
    results = L.opcheck(op, (ember.ones(2, 3),), raise_exception=False)
    assert results["test_schema"] == "SUCCESS" and results["test_faketensor"] != "SUCCESS"


# ---------------------------------------------------------------- ember.compile


def test_compile_captures_a_custom_op_without_a_break():
    op = _define(ember, _sin, name="compiled")

    def f(x):
        return getattr(ember.ops.ember_test, op._name)(x) * 2 + 1

    x = ember.randn(5)
    explanation = ember.compiler.explain(f)(x)
    assert explanation.graph_break_count == 0
    compiled = ember.compile(f, fullgraph=True)
    for value in (x, x * 3):
        np.testing.assert_allclose(compiled(value).numpy(), f(value).numpy(), rtol=1e-6)


def test_compile_with_gradients_gives_eager_results():
    op = _define(ember, _sin, name="compiledgrad")
    op.register_autograd(_backward_sin, setup_context=_setup_sin)

    def f(x):
        return op(x).pow(2).sum()

    compiled = ember.compile(f)
    for seed in range(2):
        data = np.random.default_rng(seed).standard_normal(4)
        x_eager, x_compiled = ember.tensor(data, requires_grad=True), ember.tensor(data, requires_grad=True)
        f(x_eager).backward()
        compiled(x_compiled).backward()
        np.testing.assert_allclose(x_compiled.grad.numpy(), x_eager.grad.numpy(), rtol=1e-12)


def test_compile_with_a_numpy_kernel_gives_eager_results():
    def body(x):
        return ember.from_numpy(np.sin(x.numpy()))

    op = _define(ember, body, name="numpykernel")

    def f(x):
        return op(x) * 3

    compiled = ember.compile(f)
    for scale in (1.0, 2.0):
        x = ember.linspace(0, 1, 4) * scale
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-6)
