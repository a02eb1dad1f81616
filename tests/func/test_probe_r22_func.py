"""Probe round 22a: ember.func against torch.func on small programs -- vmap's batching errors (in-place writes
into unbatched tensors, .item()/bool() of batched values, dynamic-shape ops, randomness="same"), in_dims and
out_dims edge cases, outputs that are inputs, jacrev/jacfwd dtypes and checks, forward-mode input checks,
stack_module_state and the other module helpers.  Each case runs the same function with lib=torch and
lib=ember and compares values, shapes, dtypes, or the exception type raised."""

from __future__ import annotations

import collections
import copy
import functools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(22)
A = _rng.standard_normal((3, 4))
B = _rng.standard_normal((3, 4))
V = _rng.standard_normal(4)
W = _rng.standard_normal(4)
M = _rng.standard_normal((2, 3, 4))
X = _rng.standard_normal((6, 4))
Y = np.array([0, 1, 2, 1, 0, 2])
I3 = np.array([0, 2, 1])
W1, B1, W2, B2 = (_rng.standard_normal(s) for s in ((5, 4), (5,), (3, 5), (3,)))
NT = collections.namedtuple("NT", "a b")


def t(lib, value, dtype=None):
    return lib.tensor(np.asarray(value), dtype=dtype)


def plain(value):
    """Results in a comparable form: tensors as (array, dtype name); exceptions as their type name."""
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return ("tensor", np.array(value.detach().numpy()), str(value.dtype).split(".")[-1])
    if isinstance(value, (tuple, list)):
        return ("list" if isinstance(value, list) else "tuple", [plain(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, plain(v)) for k, v in value.items()])
    return ("value", value)


def outcome(fn, lib):
    try:
        return plain(fn(lib))
    except Exception as error:  # noqa: BLE001 - the test compares whatever was raised
        return ("raised", type(error).__name__)


def assert_same(actual, expected, path="result"):
    assert actual[0] == expected[0], f"{path}: {actual!r} != {expected!r}"
    if expected[0] == "tensor":
        assert actual[2] == expected[2], f"{path}: dtype {actual[2]} != {expected[2]}"
        assert actual[1].shape == expected[1].shape, f"{path}: shape {actual[1].shape} != {expected[1].shape}"
        np.testing.assert_allclose(actual[1], expected[1], rtol=1e-6, atol=1e-8, err_msg=path)
    elif expected[0] in ("list", "tuple", "dict"):
        assert len(actual[1]) == len(expected[1]), f"{path}: {actual!r} != {expected!r}"
        for index, (a, e) in enumerate(zip(actual[1], expected[1])):
            if expected[0] == "dict":
                assert a[0] == e[0], f"{path}: keys {a[0]!r} != {e[0]!r}"
                a, e = a[1], e[1]
            assert_same(a, e, f"{path}[{index}]")
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"


def check(fn):
    expected = outcome(fn, torch)
    assert_same(outcome(fn, ember), expected)
    return expected


CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


# ---------------------------------------------------------------- vmap: what torch refuses on batched values


@case
def item_of_batched(L):
    return L.func.vmap(lambda x: x.sum().item())(t(L, A))


@case
def float_of_batched(L):
    return L.func.vmap(lambda x: float(x.sum()))(t(L, A))


@case
def bool_of_batched(L):
    return L.func.vmap(lambda x: x * 2 if x.sum() > 0 else x)(t(L, A))


@case
def any_in_control_flow(L):
    return L.func.vmap(lambda x: x if (x > 0).any() else -x)(t(L, A))


@case
def tolist_of_batched(L):
    return L.func.vmap(lambda x: x.tolist())(t(L, A))


@case
def numpy_of_batched(L):
    return L.func.vmap(lambda x: x.numpy())(t(L, A))


@case
def item_of_unbatched(L):
    y = t(L, 2.0)
    return L.func.vmap(lambda x: x * y.item())(t(L, A))


@case
def bool_of_unbatched(L):
    y = t(L, 2.0)
    return L.func.vmap(lambda x: x if y > 0 else -x)(t(L, A))


@case
def library_reads_are_fine(L):  # cross_entropy's, one_hot's and repr's own reads of values are not the user's
    def f(x, y):
        repr(x)
        return L.nn.functional.cross_entropy(x, y, label_smoothing=0.1) + L.nn.functional.one_hot(y, 4).sum()
    return L.func.vmap(f)(t(L, A), t(L, I3))


@case
def add_batched_into_unbatched(L):
    y = t(L, V)
    return L.func.vmap(lambda x: y.add_(x))(t(L, A))


@case
def iadd_batched_into_fresh_unbatched(L):
    def f(x):
        acc = L.zeros(4, dtype=L.float64)
        acc += x
        return acc
    return L.func.vmap(f)(t(L, A))


@case
def copy_batched_into_unbatched(L):
    y = t(L, V)
    return L.func.vmap(lambda x: y.copy_(x))(t(L, A))


@case
def setitem_batched_into_fresh_zeros(L):
    def f(x):
        z = L.zeros(4, dtype=L.float64)
        z[0] = x[0]
        return z
    return L.func.vmap(f)(t(L, A))


@case
def setitem_batched_into_unmapped_input(L):
    def f(x, z):
        z[0] = x[0]
        return z
    return L.func.vmap(f, in_dims=(0, None))(t(L, A), t(L, V))


@case
def setitem_into_zeros_like(L):  # a *_like of a batched tensor is batched: writing into it is fine
    def f(x):
        z = L.zeros_like(x)
        z[0] = x[0]
        return z
    return L.func.vmap(f)(t(L, A))


@case
def setitem_into_new_zeros(L):
    def f(x):
        z = x.new_zeros(4)
        z[1:] = x[1:]
        return z
    return L.func.vmap(f)(t(L, A))


@case
def setitem_into_detached(L):
    def f(x):
        d = x.detach() * 1
        d[0] = x[1]
        return d
    return L.func.vmap(f)(t(L, A))


@case
def inplace_unbatched_into_batched(L):
    return L.func.vmap(lambda x: x.clone().mul_(t(L, V)))(t(L, A))


@case
def inplace_on_mapped_input_reaches_it(L):
    a = t(L, A).clone()
    L.func.vmap(lambda x: x.add_(1), in_dims=1)(a)
    return a


@case
def out_of_batched_into_unbatched(L):
    o = L.empty(4, dtype=L.float64)
    return L.func.vmap(lambda x: L.sin(x, out=o))(t(L, A))


@case
def out_batched(L):
    return L.func.vmap(lambda x: L.sin(x, out=L.empty_like(x)))(t(L, A))


@case
def library_scratch_writes_are_fine(L):  # F.pad fills a new tensor in place; torch's kernel does it in C++
    return L.func.vmap(lambda x: L.nn.functional.pad(x, (1, 2), value=3.0))(t(L, A))


@case
def nonzero_of_batched(L):
    return L.func.vmap(lambda x: L.nonzero(x > 0))(t(L, A))


@case
def unique_of_batched(L):
    return L.func.vmap(lambda x: L.unique(x))(t(L, A))


@case
def bincount_with_minlength(L):
    return L.func.vmap(lambda i: L.bincount(i, minlength=5))(t(L, np.array([[0, 4, 2], [1, 1, 3]])))


@case
def out_dims_none_of_batched_zeros(L):  # equal values, but batched: torch refuses
    return L.func.vmap(lambda x: x * 0, out_dims=None)(t(L, A))


@case
def batch_norm_training_under_vmap(L):
    return L.func.vmap(L.nn.BatchNorm1d(4).double())(t(L, X.reshape(2, 3, 4)))


@case
def batch_norm_without_running_stats(L):
    m = L.func.replace_all_batch_norm_modules_(L.nn.BatchNorm1d(4).double())
    return L.func.vmap(m)(t(L, X.reshape(2, 3, 4)))


@case
def batch_norm_eval_under_vmap(L):
    return L.func.vmap(L.nn.BatchNorm1d(4).double().eval())(t(L, X.reshape(2, 3, 4)))


# ---------------------------------------------------------------- vmap: randomness


@case
def same_randomness_batched_mean(L):
    return L.func.vmap(lambda x: L.normal(x, 1.0), randomness="same")(t(L, A)).shape


@case
def same_randomness_multinomial_batched(L):
    return L.func.vmap(lambda x: L.multinomial(x.softmax(0), 2), randomness="same")(t(L, A)).shape


@case
def same_randomness_dropout_is_fine(L):
    return L.func.vmap(lambda x: L.nn.functional.dropout(x, 0.5), randomness="same")(t(L, A)).shape


@case
def same_randomness_inplace_fill_is_fine(L):
    return L.func.vmap(lambda x: x.clone().normal_(), randomness="same")(t(L, A)).shape


@case
def different_randomness_bernoulli(L):
    return L.func.vmap(lambda x: L.bernoulli(x.sigmoid()), randomness="different")(t(L, A)).shape


# ---------------------------------------------------------------- vmap: in_dims / out_dims and outputs


@case
def in_dims_bool(L):
    return L.func.vmap(lambda x: x, in_dims=(True,))(t(L, A))


@case
def in_dims_dict_other_key_order(L):  # torch pairs a dict prefix's entries by position (its key order)
    return L.func.vmap(lambda d: d["a"] - d["b"], in_dims=({"b": 1, "a": 0},))({"a": t(L, A), "b": t(L, A.T)})


@case
def out_dims_dict_other_key_order(L):
    return L.func.vmap(lambda x: {"a": x, "b": x * 2}, out_dims={"b": 1, "a": 0})(t(L, A))


@case
def namedtuple_in_dims(L):
    return L.func.vmap(lambda p: p.a + p.b, in_dims=(NT(0, None),))(NT(t(L, A), t(L, V)))


@case
def identity_returns_the_input(L):
    x = t(L, A)
    return L.func.vmap(lambda r: r)(x) is x


@case
def identity_in_dims_1(L):
    x = t(L, A)
    return L.func.vmap(lambda r: r, in_dims=1, out_dims=1)(x) is x


@case
def identity_moved_is_a_view(L):
    x = t(L, A)
    y = L.func.vmap(lambda r: r, in_dims=0, out_dims=1)(x)
    return y, y.data_ptr() == x.data_ptr()


@case
def unbatched_output_is_expanded_view(L):
    y = t(L, V)
    r = L.func.vmap(lambda x: y)(t(L, A))
    return r, r.stride(), r.data_ptr() == y.data_ptr()


@case
def chunked_grad_per_sample(L):
    return L.func.vmap(L.func.grad(lambda w, x: (w * x).sum() ** 2), in_dims=(None, 0), chunk_size=2)(t(L, V), t(L, A))


# ---------------------------------------------------------------- grad / vjp / jvp / linearize checks


@case
def grad_complex_output(L):
    return L.func.grad(lambda x: (x * x).sum())(t(L, V + 1j * W))


@case
def vjp_float_cotangent(L):
    _, fn = L.func.vjp(L.sin, t(L, V))
    return fn(1.0)


@case
def vjp_empty_output(L):
    return L.func.vjp(lambda x: (), t(L, V))


@case
def jvp_integer_primal(L):
    return L.func.jvp(lambda x: x * 2, (t(L, np.arange(3)),), (t(L, np.arange(3)),))


@case
def jvp_integer_tangent(L):
    return L.func.jvp(lambda x: x * 2, (t(L, V),), (t(L, np.arange(4)),))


@case
def linearize_integer_primal(L):
    return L.func.linearize(lambda x: x * 2, t(L, np.arange(3)))


# ---------------------------------------------------------------- jacrev / jacfwd / hessian


@case
def jacfwd_integer_input(L):
    return L.func.jacfwd(lambda x: x * 2)(t(L, np.arange(3)))


@case
def jacfwd_integer_output(L):
    return L.func.jacfwd(lambda x: (x > 0).long())(t(L, V))


@case
def jacrev_integer_output(L):
    return L.func.jacrev(lambda x: (x > 0).long())(t(L, V))


@case
def jacfwd_independent_output_dtype(L):
    return L.func.jacfwd(lambda x: L.ones(3))(t(L, V))


@case
def jacrev_independent_output_dtype(L):
    return L.func.jacrev(lambda x: L.ones(3))(t(L, V))


@case
def jacfwd_blocks_take_output_dtype(L):
    return L.func.jacfwd(lambda x, y: x.double() * y, argnums=(0, 1))(t(L, V, L.float32), t(L, W))


@case
def jacrev_blocks_take_input_dtype(L):
    return L.func.jacrev(lambda x, y: x.double() * y, argnums=(0, 1))(t(L, V, L.float32), t(L, W))


@case
def jacfwd_float32_output(L):
    return L.func.jacfwd(lambda x: x.float() * 2)(t(L, V))


@case
def jacfwd_argnums_none(L):
    return L.func.jacfwd(lambda x, y: x * y, argnums=None)(t(L, V), t(L, W))


@case
def jacrev_argnums_none(L):
    return L.func.jacrev(lambda x, y: x * y, argnums=None)(t(L, V), t(L, W))


@case
def jacrev_complex_input(L):
    return L.func.jacrev(lambda x: x * 2)(t(L, V + 0j))


@case
def jacfwd_complex_input(L):
    return L.func.jacfwd(lambda x: x * 2)(t(L, V + 0j))


@case
def jacrev_complex_output(L):
    return L.func.jacrev(lambda x: x * 1j)(t(L, V))


@case
def jacrev_keyword_arguments(L):
    return L.func.jacrev(lambda x, *, k: x * k)(t(L, V), k=t(L, W))


@case
def jacfwd_keyword_arguments(L):
    return L.func.jacfwd(lambda x, *, k: x * k)(t(L, V), k=t(L, W))


@case
def hessian_two_argnums(L):
    return L.func.hessian(lambda x, y: (x * y ** 2).sum(), argnums=(0, 1))(t(L, V), t(L, W))


# ---------------------------------------------------------------- module helpers


def _mlp(L):
    m = L.nn.Sequential(L.nn.Linear(4, 5), L.nn.ReLU(), L.nn.Linear(5, 3)).double()
    with L.no_grad():
        for param, value in zip(m.parameters(), (W1, B1, W2, B2)):
            param.copy_(t(L, value))
    return m


def _scaled_mlps(L, n=3):
    models = [_mlp(L) for _ in range(n)]
    with L.no_grad():
        for index, model in enumerate(models):
            model[0].weight.mul_(index + 1)
    return models


@case
def stack_module_state_values(L):
    params, buffers = L.func.stack_module_state(_scaled_mlps(L))
    return params, buffers, [(p.requires_grad, p.is_leaf) for p in params.values()]


@case
def stack_module_state_buffers(L):
    models = [L.nn.BatchNorm1d(4).double() for _ in range(2)]
    return L.func.stack_module_state(models)


@case
def stack_module_state_no_models(L):
    return L.func.stack_module_state([])


@case
def stack_module_state_mixed_modes(L):
    a, b = L.nn.Linear(2, 2), L.nn.Linear(2, 2)
    b.eval()
    return L.func.stack_module_state([a, b])


@case
def stack_module_state_mixed_classes(L):
    return L.func.stack_module_state([L.nn.Linear(2, 2), L.nn.Bilinear(2, 2, 2)])


@case
def stack_module_state_mixed_requires_grad(L):
    a, b = L.nn.Linear(2, 2), L.nn.Linear(2, 2)
    b.weight.requires_grad_(False)
    return L.func.stack_module_state([a, b])


@case
def ensembling_recipe(L):
    models = _scaled_mlps(L)
    params, buffers = L.func.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def call(p, b, x):
        return L.func.functional_call(base, (p, b), (x,))

    same_batch = L.func.vmap(call, in_dims=(0, 0, None))(params, buffers, t(L, X))
    own_batches = L.func.vmap(call)(params, buffers, t(L, np.stack([X, 2 * X, 3 * X])))
    return same_batch, own_batches


@case
def per_sample_grads_recipe(L):
    model = _mlp(L)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = L.func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return L.nn.functional.cross_entropy(predictions, target.unsqueeze(0))

    return L.func.vmap(L.func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, t(L, X), t(L, Y))


@case
def replace_all_batch_norm_modules(L):
    m = L.nn.Sequential(L.nn.Linear(4, 4), L.nn.BatchNorm2d(4), L.nn.Sequential(L.nn.BatchNorm1d(4)))
    result = L.func.replace_all_batch_norm_modules_(m)
    return result is m, [(bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.track_running_stats)
                         for bn in (m[1], m[2][0])]


@case
def debug_unwrap_plain(L):
    return L.func.debug_unwrap(t(L, A))


@case
def functionalize_mutating_input(L):
    def f(x):
        x.add_(1)
        return x * 2
    x = t(L, A)
    return L.func.functionalize(f)(x), x


@case
def functionalize_bad_remove(L):
    return L.func.functionalize(lambda x: x, remove="views")


@case
def allclose_of_batched(L):
    return L.func.vmap(lambda x: x * L.allclose(x, x))(t(L, A))


@case
def equal_of_batched(L):
    return L.func.vmap(lambda x: x * L.equal(x, x))(t(L, A))


@case
def allclose_of_unbatched(L):
    c = t(L, V)
    return L.func.vmap(lambda x: x * L.allclose(c, c))(t(L, A))


@case
def boolean_mask_indexing(L):
    return L.func.vmap(lambda x: x[x * 0 == 0])(t(L, A))  # (the same count per sample: a loop could stack them)


@case
def boolean_mask_setitem(L):
    def f(x):
        z = x.clone()
        z[x > 0] = 0.0
        return z
    return L.func.vmap(f)(t(L, A))


@case
def unbatched_mask_indexing(L):
    mask = t(L, np.array([True, False, True, True]))
    return L.func.vmap(lambda x: x[mask])(t(L, A))


@case
def batched_index_into_unbatched(L):
    def f(i):
        z = L.zeros(4, dtype=L.float64)
        z[i] = 1.0
        return z
    return L.func.vmap(f)(t(L, np.array([0, 1, 3])))


@case
def batched_index_gather(L):
    return L.func.vmap(lambda x, i: x[i])(t(L, A), t(L, np.array([0, 1, 3])))


@case
def explicit_generator_in_error_mode(L):
    g = L.Generator().manual_seed(0)
    return L.func.vmap(lambda x: x + L.randn(4, generator=g, dtype=L.float64))(t(L, A)).shape


@case
def explicit_generator_randint_in_error_mode(L):
    g = L.Generator().manual_seed(0)
    return L.func.vmap(lambda x: x + L.randint(0, 3, (4,), generator=g))(t(L, A)).shape


@case
def explicit_generator_in_same_mode(L):
    g = L.Generator().manual_seed(0)
    return L.func.vmap(lambda x: x + L.randn(4, generator=g, dtype=L.float64), randomness="same")(t(L, A)).shape


@case
def requires_grad_inside_vmap(L):
    return L.func.vmap(lambda x: x.clone().requires_grad_() * 2)(t(L, A))


@case
def requires_grad_of_fresh_tensor_inside_grad(L):
    return L.func.grad(lambda x: (x * L.zeros(4, dtype=L.float64).requires_grad_()).sum())(t(L, V))


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    check(CASES[name])


def test_error_messages_match():
    """The wording of the new vmap errors is torch's."""
    def message(fn, lib):
        with pytest.raises(Exception) as info:
            fn(lib)
        return str(info.value)

    for fn in (item_of_batched, bool_of_batched, nonzero_of_batched, same_randomness_batched_mean,
               batch_norm_training_under_vmap, stack_module_state_no_models, jacfwd_integer_input,
               jacrev_complex_input, functionalize_bad_remove, setitem_batched_into_fresh_zeros,
               allclose_of_batched, equal_of_batched, boolean_mask_indexing, boolean_mask_setitem,
               batched_index_into_unbatched, explicit_generator_in_error_mode, requires_grad_inside_vmap,
               requires_grad_of_fresh_tensor_inside_grad):
        expected = message(fn, torch).replace("torch.", "ember.")
        assert message(fn, ember) == expected, fn.__name__


def test_vmap_marks_do_not_leak():
    """After vmap returns nothing is batched any more: item() of a former per-sample value works."""
    kept = []
    ember.func.vmap(lambda x: kept.append(x.sum()) or x)(ember.ones(3, 2))
    assert kept[0].item() == 2.0
    z = ember.zeros(2)
    z.add_(kept[1])
    assert z.tolist() == [2.0, 2.0]


# ---------------------------------------------------------------- known differences (a per-sample loop)

KNOWN = {
    "unbatched_inplace_runs_once": "vmap runs the function once per sample, so an in-place op on an unbatched "
                                   "tensor runs batch-size times (torch runs it once)",
    "debug_unwrap_inside_vmap": "debug_unwrap inside vmap gives the sample, not the whole batch",
}


def _known(L, name):
    if name == "unbatched_inplace_runs_once":
        y = t(L, V)
        L.func.vmap(lambda x, z: (x, z.mul_(2)), in_dims=(0, None), out_dims=(0, None))(t(L, A), y)
        return y
    if name == "debug_unwrap_inside_vmap":
        return L.func.vmap(lambda x: L.func.debug_unwrap(x))(t(L, A))
    raise AssertionError(name)


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_known_differences(name, request):
    request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN[name]))
    check(functools.partial(_known, name=name))


def test_requires_grad_refusal_sees_through_torch_function_dispatch():
    """Once a __torch_function__ subclass turns method dispatch on, Tensor methods are called through a
    wrapper inside ember; a user's requires_grad_() inside vmap is still refused (fresh process: activation
    is global)."""
    code = textwrap.dedent("""
        import ember
        class Sub(ember.Tensor):
            @classmethod
            def __torch_function__(cls, func, types, args=(), kwargs=None):
                return super().__torch_function__(func, types, args, kwargs or {})
        ember._torch_function.activate()
        try:
            ember.func.vmap(lambda x: x.clone().requires_grad_() * 2)(ember.ones(3, 4))
        except RuntimeError as error:
            print("refused" if "functorch transform" in str(error) else error)
        print(ember.func.grad(lambda x: (x * x).sum())(ember.ones(2)).tolist())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["refused", "[2.0, 2.0]"]
