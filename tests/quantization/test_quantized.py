"""Quantized tensors, observers and quantize_dynamic against real torch (ember/_ops/quantized.py, ember/ao)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")

DTYPES = [("qint8", -128, 127), ("quint8", 0, 255), ("qint32", -(2**31), 2**31 - 1)]


def _pair(values: np.ndarray):
    return ember.tensor(values), torch.tensor(values)


def _values(seed: int = 0, n: int = 67) -> np.ndarray:
    rng = np.random.default_rng(seed)
    ties = np.arange(-10, 10, dtype=np.float32) + np.float32(0.5)  # exact halves at scale 1, 0.5, 0.25
    return np.concatenate([(rng.standard_normal(n) * 3).astype(np.float32), ties, [0.0, -0.0, 1e6, -1e6]]
                          ).astype(np.float32)


@pytest.mark.parametrize("name,low,high", DTYPES)
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25, 0.1, 0.0123, 3.7])
@pytest.mark.parametrize("zero_point", [0, 1, 3, 100])
def test_quantize_per_tensor_matches_torch(name, low, high, scale, zero_point):
    if zero_point > high:
        pytest.skip("zero point out of range")
    x_e, x_t = _pair(_values())
    q_e = ember.quantize_per_tensor(x_e, scale, zero_point, getattr(ember, name))
    q_t = torch.quantize_per_tensor(x_t, scale, zero_point, getattr(torch, name))
    assert q_e.dtype is getattr(ember, name) and q_e.is_quantized
    np.testing.assert_array_equal(q_e.int_repr().numpy(), q_t.int_repr().numpy())
    assert q_e.int_repr().dtype.name == str(q_t.int_repr().dtype).replace("torch.", "")
    assert q_e.q_scale() == q_t.q_scale() and q_e.q_zero_point() == q_t.q_zero_point()
    np.testing.assert_array_equal(q_e.dequantize().numpy(), q_t.dequantize().numpy())
    np.testing.assert_array_equal(ember.dequantize(q_e).numpy(), torch.dequantize(q_t).numpy())
    assert repr(q_e.qscheme()) == repr(q_t.qscheme()).replace("torch", "ember")


def test_rounding_ties_add_zero_point_before_rounding():
    # 0.5 with zero_point 3: torch rounds 3.5 to 4 (half to even after adding the zero point)
    x_e, x_t = _pair(np.full(5, 0.5, dtype=np.float32))
    q_e = ember.quantize_per_tensor(x_e, 1.0, 3, ember.quint8)
    q_t = torch.quantize_per_tensor(x_t, 1.0, 3, torch.quint8)
    assert q_e.int_repr().tolist() == q_t.int_repr().tolist() == [4] * 5


@pytest.mark.parametrize("name,low,high", DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_quantize_per_channel_matches_torch(name, low, high, axis):
    values = _values(1, n=76).reshape(4, 25) if axis == 0 else _values(1, n=76).reshape(25, 4)
    channels = values.shape[axis]
    scales = np.array([0.1, 0.25, 1.0, 0.037][:channels], dtype=np.float64)
    zero_points = np.array([0, 3, 1, 7][:channels], dtype=np.int64)
    x_e, x_t = _pair(values)
    q_e = ember.quantize_per_channel(x_e, ember.tensor(scales), ember.tensor(zero_points), axis, getattr(ember, name))
    q_t = torch.quantize_per_channel(x_t, torch.tensor(scales), torch.tensor(zero_points), axis, getattr(torch, name))
    np.testing.assert_array_equal(q_e.int_repr().numpy(), q_t.int_repr().numpy())
    np.testing.assert_array_equal(q_e.q_per_channel_scales().numpy(), q_t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(q_e.q_per_channel_zero_points().numpy(), q_t.q_per_channel_zero_points().numpy())
    assert q_e.q_per_channel_scales().dtype is ember.float64
    assert q_e.q_per_channel_zero_points().dtype is ember.int64
    assert q_e.q_per_channel_axis() == q_t.q_per_channel_axis() == axis
    np.testing.assert_array_equal(q_e.dequantize().numpy(), q_t.dequantize().numpy())
    assert repr(q_e.qscheme()) == "ember.per_channel_affine"


def test_repr_matches_torch():
    values = np.array([[-1.0, 0.05, 0.15, 2.5], [0.25, -0.35, 100, 3]], dtype=np.float32)
    x_e, x_t = _pair(values)
    q_e = ember.quantize_per_tensor(x_e, 0.1, 3, ember.quint8)
    q_t = torch.quantize_per_tensor(x_t, 0.1, 3, torch.quint8)
    assert repr(q_e) == repr(q_t).replace("torch.", "ember.")
    c_e = ember.quantize_per_channel(x_e, ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0, ember.qint8)
    c_t = torch.quantize_per_channel(x_t, torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 0, torch.qint8)
    assert repr(c_e) == repr(c_t).replace("torch.", "ember.")
    for shape in [(), (0,)]:
        e = ember.quantize_per_tensor(ember.ones(shape), 1.0, 0, ember.qint8)
        t = torch.quantize_per_tensor(torch.ones(shape), 1.0, 0, torch.qint8)
        assert repr(e) == repr(t).replace("torch.", "ember.")


def _error(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - the type and message are what we compare
        return type(error), str(error)
    return None, None


def _same_error(ember_call, torch_call, exact: bool = True):
    kind_e, text_e = _error(ember_call)
    kind_t, text_t = _error(torch_call)
    assert kind_t is not None and kind_e is kind_t, (kind_e, text_e, kind_t, text_t)
    if exact:
        assert text_e == text_t


def test_invalid_arguments_raise_as_torch():
    x_e, x_t = _pair(np.array([1.0, 2.0], dtype=np.float32))
    _same_error(lambda: ember.quantize_per_tensor(x_e, 0.1, 3, ember.int8),
                lambda: torch.quantize_per_tensor(x_t, 0.1, 3, torch.int8))
    for zero_point in (300, -1):
        _same_error(lambda: ember.quantize_per_tensor(x_e, 0.1, zero_point, ember.quint8),
                    lambda: torch.quantize_per_tensor(x_t, 0.1, zero_point, torch.quint8))
    _same_error(lambda: ember.quantize_per_tensor(x_e.int(), 0.1, 0, ember.quint8),
                lambda: torch.quantize_per_tensor(x_t.int(), 0.1, 0, torch.quint8))
    _same_error(lambda: ember.quantize_per_tensor(x_e.double(), 0.1, 0, ember.quint8),
                lambda: torch.quantize_per_tensor(x_t.double(), 0.1, 0, torch.quint8))
    m_e, m_t = _pair(np.ones((2, 3), dtype=np.float32))
    _same_error(lambda: ember.quantize_per_channel(m_e, ember.tensor([0.1, 0.2, 0.3]), ember.tensor([0, 1, 1]), 0,
                                                   ember.qint8),
                lambda: torch.quantize_per_channel(m_t, torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 1, 1]), 0,
                                                   torch.qint8))
    _same_error(lambda: ember.quantize_per_channel(m_e, ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 2,
                                                   ember.qint8),
                lambda: torch.quantize_per_channel(m_t, torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 2,
                                                   torch.qint8))
    for zero_points, axis in (([0, 1], -1), ([0], 0), ([0, 300], 0)):
        _same_error(lambda: ember.quantize_per_channel(m_e, ember.tensor([0.1, 0.2]), ember.tensor(zero_points), axis,
                                                       ember.quint8),
                    lambda: torch.quantize_per_channel(m_t, torch.tensor([0.1, 0.2]), torch.tensor(zero_points), axis,
                                                       torch.quint8))
    _same_error(lambda: ember.quantize_per_tensor(x_e, 0.1, 3, ember.float32),
                lambda: torch.quantize_per_tensor(x_t, 0.1, 3, torch.float32))
    _same_error(lambda: ember.quantize_per_channel(m_e, [0.1, 0.2], ember.tensor([0, 1]), 0, ember.qint8),
                lambda: torch.quantize_per_channel(m_t, [0.1, 0.2], torch.tensor([0, 1]), 0, torch.qint8))
    q_e = ember.quantize_per_tensor(x_e, 0.1, 0, ember.qint8)
    q_t = torch.quantize_per_tensor(x_t, 0.1, 0, torch.qint8)
    _same_error(q_e.q_per_channel_scales, q_t.q_per_channel_scales)
    _same_error(q_e.requires_grad_, q_t.requires_grad_)
    _same_error(lambda: ember.promote_types(ember.qint8, ember.float32),
                lambda: torch.promote_types(torch.qint8, torch.float32), exact=False)


@pytest.mark.parametrize("expression", ["q + q", "q.sum()", "q.exp()", "q * q", "q.add_(q)"])
def test_ops_on_quantized_tensors_are_refused(expression):
    x_e, x_t = _pair(np.array([1.0, 2.0], dtype=np.float32))
    q_e = ember.quantize_per_tensor(x_e, 0.1, 0, ember.qint8)
    q_t = torch.quantize_per_tensor(x_t, 0.1, 0, torch.qint8)
    kind_e, text_e = _error(lambda: eval(expression, {"q": q_e}))
    kind_t, text_t = _error(lambda: eval(expression, {"q": q_t}))
    assert kind_e is kind_t is NotImplementedError
    assert text_e.startswith("Could not run 'aten::") and "with arguments from the 'QuantizedCPU' backend" in text_e


def test_ordinary_dtypes_unchanged():
    assert ember.promote_types(ember.int8, ember.uint8) is ember.int16
    assert not ember.ones(2).is_quantized and ember.quint8.is_signed is False and ember.qint8.is_signed


# ---------------------------------------------------------------- observers


def _observer_data():
    rng = np.random.default_rng(5)
    return [(rng.standard_normal((6, 9)) * 2 + 0.3).astype(np.float32), np.abs(rng.standard_normal((6, 9))).astype(
        np.float32), -np.abs(rng.standard_normal((6, 9))).astype(np.float32)]


OBSERVER_ARGS = [
    {}, {"reduce_range": True}, {"dtype": "qint8"}, {"dtype": "qint8", "qscheme": "per_tensor_symmetric"},
    {"dtype": "quint8", "qscheme": "per_tensor_symmetric"}, {"dtype": "qint8", "reduce_range": True},
    {"quant_min": 0, "quant_max": 127}, {"dtype": "qint8", "quant_min": -127, "quant_max": 127,
                                         "qscheme": "per_tensor_symmetric"},
]


def _resolve(module, kwargs, per_channel=False):
    out = {}
    for key, value in kwargs.items():
        if key == "qscheme" and per_channel:
            value = value.replace("tensor", "channel")
        out[key] = getattr(module, value) if isinstance(value, str) else value
    return out


@pytest.mark.parametrize("kwargs", OBSERVER_ARGS)
@pytest.mark.parametrize("data", range(3))
def test_minmax_observer_matches_torch(kwargs, data):
    values = _observer_data()[data]
    observer_e = ember.ao.quantization.MinMaxObserver(**_resolve(ember, kwargs))
    observer_t = torch.ao.quantization.MinMaxObserver(**_resolve(torch, kwargs))
    for chunk in np.split(values, 3):
        observer_e(ember.tensor(chunk))
        observer_t(torch.tensor(chunk))
    scale_e, zero_e = observer_e.calculate_qparams()
    scale_t, zero_t = observer_t.calculate_qparams()
    np.testing.assert_array_equal(scale_e.numpy(), scale_t.numpy())
    np.testing.assert_array_equal(zero_e.numpy(), zero_t.numpy())
    assert str(zero_e.dtype).split(".")[1] == str(zero_t.dtype).split(".")[1]


@pytest.mark.parametrize("kwargs", OBSERVER_ARGS[:6] + [{"qscheme": "per_channel_affine_float_qparams"}])
@pytest.mark.parametrize("axis", [0, 1])
def test_per_channel_observer_matches_torch(kwargs, axis):
    values = _observer_data()[0]
    observer_e = ember.ao.quantization.PerChannelMinMaxObserver(axis, **_resolve(ember, kwargs, True))
    observer_t = torch.ao.quantization.PerChannelMinMaxObserver(axis, **_resolve(torch, kwargs, True))
    for chunk in np.split(values, 3):
        observer_e(ember.tensor(chunk) if axis == 1 else ember.tensor(values))
        observer_t(torch.tensor(chunk) if axis == 1 else torch.tensor(values))
    for got, want in zip(observer_e.calculate_qparams(), observer_t.calculate_qparams()):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


# ---------------------------------------------------------------- quantize_dynamic


def _mlp_pair(seed: int = 0):
    rng = np.random.default_rng(seed)
    shapes = [(16, 32), (8, 16), (3, 8)]
    params = [((rng.standard_normal(s) / np.sqrt(s[1])).astype(np.float32), rng.standard_normal(s[0]).astype(
        np.float32) * 0.1) for s in shapes]

    def build(lib):
        model = lib.nn.Sequential(lib.nn.Linear(32, 16), lib.nn.ReLU(), lib.nn.Linear(16, 8), lib.nn.Tanh(),
                                  lib.nn.Linear(8, 3))
        with lib.no_grad():
            for layer, (weight, bias) in zip([model[0], model[2], model[4]], params):
                layer.weight.copy_(lib.tensor(weight))
                layer.bias.copy_(lib.tensor(bias))
        return model

    return build(ember), build(torch)


def test_quantize_dynamic_weights_equal_torch():
    model_e, model_t = _mlp_pair()
    quantized_e = ember.ao.quantization.quantize_dynamic(model_e, {ember.nn.Linear}, dtype=ember.qint8)
    quantized_t = torch.ao.quantization.quantize_dynamic(model_t, {torch.nn.Linear}, dtype=torch.qint8)
    assert type(quantized_e[0]).__module__ == "ember.ao.nn.quantized.dynamic.modules.linear"
    assert isinstance(model_e[0], ember.nn.Linear)  # not in place
    for index in (0, 2, 4):
        weight_e, weight_t = quantized_e[index].weight(), quantized_t[index].weight()
        np.testing.assert_array_equal(weight_e.int_repr().numpy(), weight_t.int_repr().numpy())
        assert weight_e.q_scale() == weight_t.q_scale() and weight_e.q_zero_point() == weight_t.q_zero_point() == 0
        assert weight_e.dtype is ember.qint8
    assert repr(quantized_e).replace("ember.", "torch.") == repr(quantized_t)
    keys_e, keys_t = list(quantized_e.state_dict()), list(quantized_t.state_dict())
    assert keys_e == keys_t
    packed = quantized_e.state_dict()["0._packed_params._packed_params"]
    assert isinstance(packed, tuple) and packed[0].is_quantized and packed[1].dtype is ember.float32


def test_quantize_dynamic_outputs_match_torch():
    # Tolerance: ember reproduces fbgemm's activation parameters, rounding and integer accumulation exactly;
    # only the final fused multiply-add is emulated in float64, where the sum may round twice (then torch's
    # single rounding differs by 1 ulp).  So each layer's output is within 1 ulp of torch's, and the next
    # layer sees the same quantized activation unless a value sits within 1 ulp of a rounding boundary of
    # its quantization step.  We therefore require the final outputs to agree to 1 float32 ulp, far below
    # one activation quantization step (~1e-2 of the output here).
    model_e, model_t = _mlp_pair(1)
    quantized_e = ember.ao.quantization.quantize_dynamic(model_e)
    quantized_t = torch.ao.quantization.quantize_dynamic(model_t)
    rng = np.random.default_rng(2)
    for batch in [(1, 32), (5, 32), (2, 3, 32)]:
        x = (rng.standard_normal(batch) * 1.5).astype(np.float32)
        out_e = quantized_e(ember.tensor(x)).numpy()
        out_t = quantized_t(torch.tensor(x)).numpy()
        np.testing.assert_array_max_ulp(out_e, out_t, maxulp=1)
        # close to the float model: activation step ~ (max-min)/127 per element; the MLP's error stays < 0.05
        float_out = model_e(ember.tensor(x)).detach().numpy()
        assert np.max(np.abs(out_e - float_out)) < 0.05


def test_dynamic_linear_single_layer_matches_torch_exactly_on_first_layer():
    model_e, model_t = _mlp_pair(3)
    layer_e = ember.ao.quantization.quantize_dynamic(model_e)[0]
    layer_t = torch.ao.quantization.quantize_dynamic(model_t)[0]
    x = np.random.default_rng(4).standard_normal((7, 32)).astype(np.float32)
    # deterministic inputs on which the float64 emulation of fbgemm's fma rounds once: bitwise equal
    np.testing.assert_array_equal(layer_e(ember.tensor(x)).numpy(), layer_t(torch.tensor(x)).numpy())


def test_quantization_alias_and_default_qconfig():
    assert ember.quantization.quantize_dynamic is ember.ao.quantization.quantize_dynamic
    qconfig = ember.ao.quantization.default_dynamic_qconfig
    observer = qconfig.weight()
    assert observer.dtype is ember.qint8 and observer.qscheme is ember.per_tensor_symmetric


# ---------------------------------------------------------------- tensor protocols and checkpoints


def _sample_quantized():
    values = np.array([[-1.0, 0.05, 0.15, 2.5], [0.25, -0.35, 100, 3]], dtype=np.float32)
    x_e, x_t = _pair(values)
    per_tensor = (ember.quantize_per_tensor(x_e, 0.1, 3, ember.quint8),
                  torch.quantize_per_tensor(x_t, 0.1, 3, torch.quint8))
    per_channel = (ember.quantize_per_channel(x_e, ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0, ember.qint8),
                   torch.quantize_per_channel(x_t, torch.tensor([0.1, 0.2]), torch.tensor([0, 1]), 0, torch.qint8))
    return per_tensor, per_channel


def test_detach_copy_and_pickle_keep_quantization():
    import copy
    import pickle

    for q_e, q_t in _sample_quantized():
        for copied in (q_e.detach(), q_e.data, copy.deepcopy(q_e), pickle.loads(pickle.dumps(q_e))):
            assert copied.is_quantized and copied.qscheme() is q_e.qscheme()
            assert repr(copied) == repr(q_t).replace("torch.", "ember.")
            np.testing.assert_array_equal(copied.int_repr().numpy(), q_t.int_repr().numpy())


def test_reading_values_out_as_torch():
    (q_e, q_t), _ = _sample_quantized()
    _same_error(q_e.tolist, q_t.tolist)
    _same_error(q_e.numpy, q_t.numpy)
    assert q_e.type() == q_t.type() == "torch.quantized.QUInt8Tensor"
    one_e = ember.quantize_per_tensor(ember.tensor([1.5]), 1.0, 3, ember.qint8)
    one_t = torch.quantize_per_tensor(torch.tensor([1.5]), 1.0, 3, torch.qint8)
    assert one_e.item() == one_t.item() == 1.0  # the dequantized value of round(4.5) = 4


def test_quantized_dtypes_are_not_made_by_ordinary_factories():
    values = ember.ones(2)
    for make in (lambda: ember.empty(2, dtype=ember.qint8), lambda: ember.zeros(2, dtype=ember.quint8),
                 lambda: ember.full((2,), 1, dtype=ember.qint32), lambda: ember.tensor([1, 2], dtype=ember.qint8),
                 lambda: ember.arange(3, dtype=ember.qint8)):
        with pytest.raises(RuntimeError, match="quantize_per_tensor"):
            make()
    _same_error(lambda: values.to(ember.qint8), lambda: torch.ones(2).to(torch.qint8))


def test_checkpoints_round_trip_with_torch(tmp_path):
    (q_e, q_t), (c_e, c_t) = _sample_quantized()
    ember.save({"tensor": q_e, "channel": c_e}, tmp_path / "ember.pt")
    loaded_t = torch.load(tmp_path / "ember.pt", weights_only=True)
    torch.save({"tensor": q_t, "channel": c_t}, tmp_path / "torch.pt")
    loaded_e = ember.load(tmp_path / "torch.pt", weights_only=True)
    for key, reference in (("tensor", q_t), ("channel", c_t)):
        assert repr(loaded_t[key]) == repr(reference)
        assert repr(loaded_e[key]) == repr(reference).replace("torch.", "ember.")


def test_torch_quantized_state_dict_loads_into_ember():
    model_e, model_t = _mlp_pair(6)
    quantized_t = torch.ao.quantization.quantize_dynamic(model_t)
    target = ember.ao.quantization.quantize_dynamic(ember.nn.Sequential(
        ember.nn.Linear(32, 16), ember.nn.ReLU(), ember.nn.Linear(16, 8), ember.nn.Tanh(), ember.nn.Linear(8, 3)))
    import io

    buffer = io.BytesIO()
    torch.save(quantized_t.state_dict(), buffer)
    buffer.seek(0)
    target.load_state_dict(ember.load(buffer, weights_only=True))
    own = ember.ao.quantization.quantize_dynamic(model_e)
    x = np.random.default_rng(7).standard_normal((4, 32)).astype(np.float32)
    np.testing.assert_array_equal(target(ember.tensor(x)).numpy(), own(ember.tensor(x)).numpy())


_MOVEMENT = [
    ("view", lambda t: t.view(6, 4)), ("reshape", lambda t: t.reshape(4, 6)),
    ("reshape of a transpose", lambda t: t.transpose(0, 1).reshape(-1)), ("permute", lambda t: t.permute(2, 0, 1)),
    ("transpose", lambda t: t.transpose(0, 1)), ("t", lambda t: t[0].t()), ("slice", lambda t: t[:, 1:, ::2]),
    ("select", lambda t: t[1]), ("squeeze", lambda t: t.unsqueeze(0).squeeze(0)),
    ("expand", lambda t: t[:, :1].expand(2, 3, 4)), ("clone", lambda t: t.clone()),
    ("contiguous", lambda t: t.transpose(0, 1).contiguous()), ("flatten", lambda t: t.flatten()),
    ("flip", lambda t: t.flip(0)),
]


@pytest.mark.parametrize("name, fn", _MOVEMENT, ids=[m[0] for m in _MOVEMENT])
def test_movement_ops_on_per_tensor_quantized_tensors(name, fn):
    """The movement ops torch's QuantizedCPU backend runs: same integers, dtype and quantization parameters."""
    values = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    ours = fn(ember.quantize_per_tensor(ember.from_numpy(values), 0.1, 3, ember.quint8))
    theirs = fn(torch.quantize_per_tensor(torch.from_numpy(values), 0.1, 3, torch.quint8))
    assert ours.is_quantized and ours.dtype == ember.quint8 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy())
    assert ours.q_scale() == theirs.q_scale() and ours.q_zero_point() == theirs.q_zero_point()


def test_views_of_quantized_tensors_share_their_integers():
    q = ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 0, ember.qint8)
    view = q[1:]
    assert view._base is q and np.shares_memory(view._data, q._data)
    assert not np.shares_memory(q.clone()._data, q._data)


def test_arithmetic_and_per_channel_movement_still_refused():
    q = ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):
        q + q
    per_channel = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2], dtype=ember.float64),
                                             ember.tensor([0, 1]), 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="QuantizedCPU"):  # torch views these; ember does not yet
        per_channel.view(6)
