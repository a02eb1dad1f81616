"""Lazy modules, fractional max pooling, CrossMapLRN2d, AdaptiveLogSoftmaxWithLoss, DataParallel, NLLLoss2d and
the functional forms that came with them, against torch.

The module cases reuse _parity.check_module (torch's weights copied, outputs, gradients, buffers, state_dict
keys, repr, train and eval).  Lazy modules are primed by one forward in both libraries first, so the table
compares the initialised modules; their lazy behaviour (uninitialized state_dict, load_state_dict,
cls_to_become, in_channels inference) is checked separately.  Fractional pooling is random: the cases pass
torch's `_random_samples` so both libraries place the same windows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _parity import C, Case, F, L, check_module

import ember

torch = pytest.importorskip("torch")

CASES = []


def case(name, build, inputs=(), **options):
    CASES.append(Case(name, build, tuple(inputs), **options))


def both(fn):
    expected = fn(torch)
    actual = fn(ember)
    assert actual == expected, f"\nember: {actual}\ntorch: {expected}"
    return actual


def raises_both(fn):
    with pytest.raises(Exception) as torch_error:
        fn(torch)
    with pytest.raises(Exception) as ember_error:
        fn(ember)
    assert type(ember_error.value) is type(torch_error.value), (ember_error.value, torch_error.value)
    return str(ember_error.value), str(torch_error.value)


def _primed(module, lib, shape):
    """A lazy module after its first forward (which fixes its shapes)."""
    module(lib.ones(shape))
    return module


# ---------------------------------------------------------------- lazy modules, once initialised
X2, X4, X5 = F((2, 3, 6)), F((2, 3, 5, 6)), F((1, 2, 4, 5, 4))
LAZY = [
    ("LazyConv1d", lambda nn: nn.LazyConv1d(4, 3, padding=1), X2),
    ("LazyConv2d", lambda nn: nn.LazyConv2d(4, (2, 3), stride=2, bias=False), X4),
    ("LazyConv3d", lambda nn: nn.LazyConv3d(2, 2, padding="same"), X5),
    ("LazyConvTranspose1d", lambda nn: nn.LazyConvTranspose1d(6, 3, groups=3, stride=2), X2),
    ("LazyConvTranspose2d", lambda nn: nn.LazyConvTranspose2d(2, 3, output_padding=1, stride=2), X4),
    ("LazyConvTranspose3d", lambda nn: nn.LazyConvTranspose3d(3, 2, dilation=(1, 2, 1)), X5),
    ("LazyBatchNorm1d", lambda nn: nn.LazyBatchNorm1d(momentum=0.3), X2),
    ("LazyBatchNorm2d", lambda nn: nn.LazyBatchNorm2d(affine=False), X4),
    ("LazyBatchNorm3d", lambda nn: nn.LazyBatchNorm3d(track_running_stats=False), X5),
    ("LazyInstanceNorm1d", lambda nn: nn.LazyInstanceNorm1d(), X2),
    ("LazyInstanceNorm2d", lambda nn: nn.LazyInstanceNorm2d(affine=False, track_running_stats=False), X4),
    ("LazyInstanceNorm3d", lambda nn: nn.LazyInstanceNorm3d(bias=False), X5),
]
for _name, _build, _x in LAZY:
    case(_name, lambda lib, b=_build, s=_x.shape: _primed(b(lib.nn), lib, s), [_x])

# ---------------------------------------------------------------- fractional max pooling (fixed samples)
SAMPLES2 = np.random.default_rng(0).random((2, 3, 2))
SAMPLES3 = np.random.default_rng(1).random((1, 2, 3))
case("FractionalMaxPool2d", lambda lib: lib.nn.FractionalMaxPool2d(
    2, output_size=(3, 4), return_indices=True, _random_samples=lib.tensor(SAMPLES2)), [F((2, 3, 7, 9))])
case("FractionalMaxPool2d-ratio", lambda lib: lib.nn.FractionalMaxPool2d(
    (3, 2), output_ratio=0.5, _random_samples=lib.tensor(SAMPLES2)), [F((2, 3, 10, 11))])
case("FractionalMaxPool2d-unbatched", lambda lib: lib.nn.FractionalMaxPool2d(
    2, output_size=3, _random_samples=lib.tensor(SAMPLES2[:1])), [F((3, 6, 6))])
case("FractionalMaxPool3d", lambda lib: lib.nn.FractionalMaxPool3d(
    2, output_size=(2, 3, 2), return_indices=True, _random_samples=lib.tensor(SAMPLES3)), [X5])
case("FractionalMaxPool3d-ratio", lambda lib: lib.nn.FractionalMaxPool3d(
    (1, 2, 2), output_ratio=(0.5, 0.6, 0.7), _random_samples=lib.tensor(SAMPLES3)), [F((1, 2, 6, 7, 8))])

# ---------------------------------------------------------------- the rest
case("CrossMapLRN2d", lambda lib: lib.nn.CrossMapLRN2d(3, alpha=0.5, beta=0.7, k=1.5), [F((2, 6, 3, 4))])
case("CrossMapLRN2d-size5", lambda lib: lib.nn.CrossMapLRN2d(5), [F((2, 7, 2, 3))])
case("AdaptiveLogSoftmaxWithLoss", lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0),
     [F((6, 8)), C([0, 4, 9, 2, 7, 5])])
case("AdaptiveLogSoftmaxWithLoss-head_bias-unbatched",
     lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4], head_bias=True), [F((8,)), C(7)])
case("DataParallel", lambda lib: lib.nn.DataParallel(lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3))),
     [F((5, 4))])
case("NLLLoss2d", lambda lib: lib.nn.NLLLoss2d(ignore_index=1), [F((2, 3, 4, 2)), L(3, (2, 4, 2))],
     call=lambda m, x, t: m(x.log_softmax(1), t))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_module_parity(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # NLLLoss2d's deprecation
        check_module(case)


# ---------------------------------------------------------------- lazy behaviour


@pytest.mark.parametrize("name,build,x", LAZY, ids=[n for n, _, _ in LAZY])
def test_lazy_lifecycle(name, build, x):
    def run(lib):
        module = build(lib.nn)
        before = [type(module).__name__, module.has_uninitialized_params(),
                  {k: type(v).__name__ for k, v in module.state_dict().items()}]
        module(lib.ones(x.shape))
        after = [type(module).__name__, hasattr(module, "has_uninitialized_params"), repr(module),
                 {k: tuple(v.shape) for k, v in module.state_dict().items()}, len(module._forward_pre_hooks),
                 len(module._load_state_dict_pre_hooks)]
        return before, after

    both(run)


def test_lazy_unbatched_and_repr():
    def run(lib):
        conv = lib.nn.LazyConv1d(2, 3)
        lazy_repr = repr(conv)
        out = conv(lib.ones(5, 7))  # unbatched: channels from dim 0
        return lazy_repr, repr(conv), tuple(out.shape), tuple(conv.weight.shape)

    both(run)


def test_lazy_load_state_dict_materialises():
    def run(lib):
        source = _primed(lib.nn.LazyConv2d(3, 2), lib, (1, 4, 5, 5))
        target = lib.nn.LazyConv2d(3, 2)
        result = target.load_state_dict(source.state_dict())
        norm = lib.nn.LazyBatchNorm2d()
        norm.load_state_dict({"weight": lib.ones(3), "bias": lib.zeros(3), "running_mean": lib.zeros(3),
                              "running_var": lib.ones(3), "num_batches_tracked": lib.tensor(2)})
        lazy_into_lazy = lib.nn.LazyConv2d(3, 2).load_state_dict(lib.nn.LazyConv2d(3, 2).state_dict())
        return (str(result), type(target).__name__, tuple(target.weight.shape), target.in_channels,
                bool((target.weight == source.weight).all()), tuple(norm.running_mean.shape), str(lazy_into_lazy),
                type(target(lib.ones(1, 4, 5, 5))).__name__, type(target).__name__)

    both(run)


def test_lazy_errors():
    def groups(lib):
        lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5))

    def rank(lib):
        lib.nn.LazyConv2d(4, 3)(lib.ones(3, 5))

    def data_parallel(lib):
        lib.nn.LazyLinear(3)._replicate_for_data_parallel()

    for fn in (groups, rank, data_parallel):
        message, torch_message = raises_both(fn)
        assert message.replace("ember", "torch") == torch_message


def test_lazy_init_uses_inferred_fan_in():
    ember.manual_seed(0)
    conv = _primed(ember.nn.LazyConv2d(64, 3), ember, (1, 16, 5, 5))
    bound = 1 / np.sqrt(16 * 9)
    weight = conv.weight.detach().numpy()
    assert np.abs(weight).max() <= bound + 1e-7 and np.abs(weight).max() > 0.9 * bound


# ---------------------------------------------------------------- functional forms


def _run_both(fn, *arrays, grad=True):
    """fn(lib, *tensors) in both libraries: outputs (and input grads of the float outputs' sum) compared."""
    results = []
    for lib in (torch, ember):
        tensors = [lib.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
        out = fn(lib, *tensors)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        floats = [o for o in outs if o is not None and o.is_floating_point() and o.requires_grad]
        if floats:
            sum((o * o).sum() for o in floats).backward()
        results.append(([None if o is None else o.detach().numpy() for o in outs],
                        [t.grad.numpy() if t.grad is not None else None for t in tensors]))
    (actual, actual_grads), (expected, expected_grads) = results[1], results[0]
    for a, e in zip(actual + actual_grads, expected + expected_grads):
        assert (a is None) == (e is None)
        if e is not None:
            assert a.dtype == e.dtype and a.shape == e.shape
            np.testing.assert_allclose(a, e, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_with_indices_wrappers(dims):
    x = np.random.default_rng(dims).standard_normal((2, 3) + (6,) * dims)
    _run_both(lambda lib, t: getattr(lib.nn.functional, f"max_pool{dims}d_with_indices")(t, 3, 2, 1), x)
    _run_both(lambda lib, t: getattr(lib.nn.functional, f"adaptive_max_pool{dims}d_with_indices")(t, 4), x)


@pytest.mark.parametrize("name,args", [("elu_", (0.7,)), ("celu_", (1.3,)), ("selu_", ()),
                                       ("rrelu_", (0.1, 0.3, False)), ("elu_", ())])
def test_inplace_activations(name, args):
    x = np.random.default_rng(0).standard_normal((3, 4))

    def run(lib, t):
        y = t * 1.0
        result = getattr(lib.nn.functional, name)(y, *args)
        assert result is y
        return y

    _run_both(run, x)


def test_rrelu_inplace_training_keeps_sign_and_bounds():
    x = ember.tensor(np.linspace(-2, 2, 41))
    y = ember.nn.functional.rrelu_(x, 0.1, 0.3, training=True)
    assert y is x
    values = np.linspace(-2, 2, 41)
    ratio = x.numpy()[values < 0] / values[values < 0]
    assert np.all((ratio >= 0.1) & (ratio <= 0.3))
    np.testing.assert_array_equal(x.numpy()[values >= 0], values[values >= 0])


def test_fractional_max_pool_functional():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 11, 13))
    samples = rng.random((2, 3, 2))
    for dtype in ("float64", "float32"):
        _run_both(lambda lib, t, s: lib.nn.functional.fractional_max_pool2d_with_indices(
            t, (2, 3), output_size=(5, 4), _random_samples=s.detach()), x.astype(dtype), samples.astype(dtype))
    x3 = rng.standard_normal((2, 7, 8, 9))
    samples3 = rng.random((1, 2, 3))
    _run_both(lambda lib, t, s: lib.nn.functional.fractional_max_pool3d(
        t, 2, output_ratio=(0.5, 0.5, 0.5), return_indices=True, _random_samples=s.detach()), x3, samples3)


def test_fractional_max_pool_random_samples_follow_manual_seed():
    x = ember.randn(2, 3, 12, 12)
    ember.manual_seed(5)
    first, first_indices = ember.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5),
                                                                      return_indices=True)
    ember.manual_seed(5)
    second = ember.nn.functional.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5))
    assert tuple(first.shape) == (2, 3, 6, 6)
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    flat = x.reshape(2, 3, -1).numpy()
    np.testing.assert_array_equal(np.take_along_axis(flat, first_indices.reshape(2, 3, -1).numpy(), 2),
                                  first.reshape(2, 3, -1).numpy())


def test_fractional_max_pool_errors():
    for fn in (lambda lib: lib.nn.FractionalMaxPool2d(2),
               lambda lib: lib.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
               lambda lib: lib.nn.FractionalMaxPool3d(2, output_ratio=1.5),
               lambda lib: lib.nn.FractionalMaxPool3d(0, output_size=2),
               lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(1, 1, 4, 4), 3, output_size=3)):
        message, torch_message = raises_both(fn)
        assert message == torch_message


def test_adaptive_log_softmax_log_prob_and_predict():
    def run(lib):
        lib.manual_seed(0)
        module = lib.nn.AdaptiveLogSoftmaxWithLoss(6, 12, [2, 7], div_value=2.0, head_bias=True).double()
        return module

    torch_module, ember_module = run(torch), run(ember)
    ember_module.load_state_dict({k: ember.tensor(v.numpy()) for k, v in torch_module.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((9, 6)) * 3
    expected = torch_module.log_prob(torch.tensor(x))
    actual = ember_module.log_prob(ember.tensor(x))
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ember_module.predict(ember.tensor(x)).numpy(),
                                  torch_module.predict(torch.tensor(x)).numpy())
    result = ember_module(ember.tensor(x), ember.tensor([0, 1, 2, 3, 7, 8, 11, 5, 6]))
    assert type(result).__name__ == "_ASMoutput" and result._fields == ("output", "loss")
    message, torch_message = raises_both(lambda lib: lib.nn.AdaptiveLogSoftmaxWithLoss(4, 5, [2])(
        lib.ones(2, 4), lib.tensor([0, 5])))
    assert message == torch_message


def test_multi_head_attention_forward_functional():
    rng = np.random.default_rng(0)
    embed, heads, tgt, src, batch = 6, 2, 4, 3, 2
    arrays = [rng.standard_normal(s) for s in [(tgt, batch, embed), (src, batch, 5), (src, batch, 7),
                                               (embed, embed), (embed, 5), (embed, 7), (3 * embed,),
                                               (embed, embed), (embed,), (batch * heads, src + 1, embed // heads)]]

    def separate(lib, q, k, v, wq, wk, wv, b, wo, bo, static):
        return lib.nn.functional.multi_head_attention_forward(
            q, k, v, embed, heads, None, b, None, None, True, 0.0, wo, bo, use_separate_proj_weight=True,
            q_proj_weight=wq, k_proj_weight=wk, v_proj_weight=wv, average_attn_weights=False)

    _run_both(separate, *arrays)

    def static_kv(lib, q, k, v, wq, wk, wv, b, wo, bo, static):
        in_proj = lib.cat([wq, wq, wq])
        return lib.nn.functional.multi_head_attention_forward(
            q, q, q, embed, heads, in_proj, b, None, None, False, 0.0, wo, bo, static_k=static, static_v=static * 2,
            need_weights=False)

    _run_both(static_kv, *arrays)
    message, torch_message = raises_both(lambda lib: lib.nn.functional.multi_head_attention_forward(
        lib.ones(4, 2, 6), lib.ones(3, 2, 6), lib.ones(3, 2, 6), 8, 2, lib.ones(18, 6), None, None, None, False,
        0.0, lib.ones(6, 6), None))
    assert message == torch_message


def test_multihead_attention_module_uses_the_functional():
    calls = []
    original = ember.nn.functional.multi_head_attention_forward

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    ember.nn.functional.multi_head_attention_forward = spy
    try:
        ember.nn.MultiheadAttention(6, 2)(ember.ones(3, 1, 6), ember.ones(3, 1, 6), ember.ones(3, 1, 6))
    finally:
        ember.nn.functional.multi_head_attention_forward = original
    assert calls == [1]


def test_data_parallel_without_cuda():
    def run(lib):
        inner = lib.nn.Linear(3, 2)
        wrapped = lib.nn.DataParallel(inner, device_ids=[0], dim=0)
        x = lib.ones(4, 3)
        return (wrapped.module is inner, wrapped.device_ids, list(wrapped.state_dict()),
                bool((wrapped(x) == inner(x)).all()), isinstance(wrapped, lib.nn.Module))

    assert ember.cuda.is_available() == torch.cuda.is_available()
    if not torch.cuda.is_available():
        both(run)


def test_nllloss2d_is_deprecated_nllloss():
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        loss = ember.nn.NLLLoss2d()
    assert isinstance(loss, ember.nn.NLLLoss)
