"""Static post-training quantization (prepare -> calibrate -> convert) against real torch: observers, quantized
weights, each quantized layer's int_repr, final outputs, reprs and errors (ember/ao, ember/_ops/quantized_static.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")

QCONFIGS = ["default_qconfig", "default_per_channel_qconfig"]
ENGINES = ["x86", "fbgemm"]


def _cnn(lib):
    nn, tq = lib.nn, lib.ao.quantization

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(6, 4, 3, stride=2, bias=False)
            self.fc = nn.Linear(4 * 3 * 3, 5)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.quant(x)
            x = self.relu(self.conv1(x))
            x = self.conv2(x)
            x = lib.flatten(x, 1)
            return self.dequant(self.fc(x))

    return CNN()


def _mlp(lib):
    nn, tq = lib.nn, lib.ao.quantization
    return nn.Sequential(tq.QuantStub(), nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(),
                         nn.Linear(16, 3), tq.DeQuantStub())


def _pair(build, seed=0):
    """The same float model in ember and torch (torch's init, copied into ember)."""
    torch.manual_seed(seed)
    model_t = build(torch).eval()
    model_e = build(ember).eval()
    state = {k: ember.tensor(v.detach().numpy()) for k, v in model_t.state_dict().items()}
    model_e.load_state_dict(state)
    return model_e, model_t


def _data(shape, batches=4, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 1.5).astype(np.float32) for _ in range(batches)]


def _prepared_pair(build, qconfig, data, engine):
    model_e, model_t = _pair(build)
    model_e.qconfig = getattr(ember.ao.quantization, qconfig)
    model_t.qconfig = getattr(torch.ao.quantization, qconfig)
    prepared_e = ember.ao.quantization.prepare(model_e)
    prepared_t = torch.ao.quantization.prepare(model_t)
    for batch in data:
        prepared_e(ember.tensor(batch))
        prepared_t(torch.tensor(batch))
    return prepared_e, prepared_t


def _capture(model):
    """name -> output of each layer (quantized Linear holds a `_packed_params` child), by forward hooks."""
    outputs = {}
    for name, module in model.named_modules():
        if name and not name.endswith("_packed_params") and not isinstance(module, (ember.nn.Sequential,
                                                                                     torch.nn.Sequential)):
            module.register_forward_hook(lambda m, i, o, name=name: outputs.__setitem__(name, o))
    return outputs


@pytest.fixture(params=ENGINES)
def engine(request):
    previous = torch.backends.quantized.engine
    torch.backends.quantized.engine = request.param
    yield request.param
    torch.backends.quantized.engine = previous


@pytest.mark.parametrize("qconfig", QCONFIGS)
@pytest.mark.parametrize("build,shape", [(_cnn, (2, 3, 8, 8)), (_mlp, (8, 20))])
def test_static_quantization_matches_torch(build, shape, qconfig, engine):
    data = _data(shape)
    prepared_e, prepared_t = _prepared_pair(build, qconfig, data, engine)
    observed_t = {n: m.activation_post_process for n, m in prepared_t.named_modules()
                  if hasattr(m, "activation_post_process")}
    observed_e = {n: m.activation_post_process for n, m in prepared_e.named_modules()
                  if "activation_post_process" in m._modules}
    assert sorted(observed_e) == sorted(observed_t)
    for name, observer_t in observed_t.items():
        scale_e, zero_e = observed_e[name].calculate_qparams()
        scale_t, zero_t = observer_t.calculate_qparams()
        if name in ("quant", "0"):  # observes the input itself: exactly torch's
            assert scale_e.tolist() == scale_t.tolist() and zero_e.tolist() == zero_t.tolist(), name
        else:
            # observes a float conv/linear output, which is not bitwise torch's (float32 summation order):
            # min/max within a few ulp, so scales within 1e-6 relative and zero points equal
            np.testing.assert_allclose(scale_e.numpy(), scale_t.numpy(), rtol=1e-6, err_msg=name)
            assert zero_e.tolist() == zero_t.tolist(), name
        # from here on, the same calibration statistics in both, so convert and the kernels compare exactly
        observed_e[name].min_val.copy_(ember.tensor(observer_t.min_val.numpy()))
        observed_e[name].max_val.copy_(ember.tensor(observer_t.max_val.numpy()))
        assert observed_e[name].calculate_qparams()[0].tolist() == scale_t.tolist()

    converted_e = ember.ao.quantization.convert(prepared_e)
    converted_t = torch.ao.quantization.convert(prepared_t)
    assert repr(converted_e) == repr(converted_t).replace("torch.", "ember.")
    for (name, module_t), (_, module_e) in zip(converted_t.named_modules(), converted_e.named_modules()):
        if hasattr(module_t, "weight") and callable(module_t.weight):
            weight_t, weight_e = module_t.weight(), module_e.weight()
            np.testing.assert_array_equal(weight_e.int_repr().numpy(), weight_t.int_repr().numpy())
            assert weight_e.qscheme() is getattr(ember, str(weight_t.qscheme()).split(".")[-1])
            if weight_t.qscheme() == torch.per_channel_affine:
                assert weight_e.q_per_channel_scales().tolist() == weight_t.q_per_channel_scales().tolist()
            else:
                assert weight_e.q_scale() == weight_t.q_scale(), name

    outputs_e, outputs_t = _capture(converted_e), _capture(converted_t)
    test_batch = _data(shape, batches=1, seed=7)[0]
    final_e = converted_e(ember.tensor(test_batch))
    final_t = converted_t(torch.tensor(test_batch))
    assert sorted(outputs_e) == sorted(outputs_t)
    quantized_layers = [name for name, out in outputs_t.items() if out.is_quantized]
    assert len(quantized_layers) >= 5
    for name in quantized_layers:
        out_e, out_t = outputs_e[name], outputs_t[name]
        assert out_e.is_quantized and out_e.q_scale() == out_t.q_scale(), name
        assert out_e.q_zero_point() == out_t.q_zero_point(), name
        # NOTE [ Static quantized requantization ]: every integer equal, measured on both engines
        np.testing.assert_array_equal(out_e.int_repr().numpy(), out_t.int_repr().numpy(), err_msg=name)
    np.testing.assert_array_equal(final_e.numpy(), final_t.detach().numpy())


def test_quantized_outputs_are_not_trivial():
    # guard against comparing saturated or constant outputs: the CNN's layers use most of their range
    prepared_e, _ = _prepared_pair(_cnn, "default_qconfig", _data((2, 3, 8, 8)), "x86")
    converted_e = ember.ao.quantization.convert(prepared_e)
    outputs = _capture(converted_e)
    converted_e(ember.tensor(_data((2, 3, 8, 8), batches=1, seed=7)[0]))
    for name in ("conv1", "conv2", "fc"):
        integers = outputs[name].int_repr().numpy()
        distinct = np.unique(integers)
        assert distinct.size >= min(20, integers.size // 2), (name, distinct.size)
        assert 0 < (integers == 255).mean() < 0.2 or 255 not in distinct, name


def test_requantization_ties_match_torch(engine):
    # power-of-two scales make many accumulators land exactly on .5: rint must round half to even
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (16, 9), dtype=np.uint8)
    w = rng.integers(-128, 128, (12, 9), dtype=np.int8)
    bias = (rng.integers(-40, 40, 12) * 0.125).astype(np.float32)
    linear_t = torch.ao.nn.quantized.Linear(9, 12)
    linear_t.set_weight_bias(torch._make_per_tensor_quantized_tensor(torch.tensor(w), 0.25, 0), torch.tensor(bias))
    linear_t.scale, linear_t.zero_point = 4.0, 61
    linear_e = ember.ao.nn.quantized.Linear(9, 12)
    weight_e = ember.quantize_per_tensor(ember.tensor(w.astype(np.float32) * 0.25), 0.25, 0, ember.qint8)
    linear_e.set_weight_bias(weight_e, ember.tensor(bias))
    linear_e.scale, linear_e.zero_point = 4.0, 61
    x_t = torch._make_per_tensor_quantized_tensor(torch.tensor(x), 0.5, 7)
    x_e = ember.quantize_per_tensor(ember.tensor((x.astype(np.float32) - 7) * 0.5), 0.5, 7, ember.quint8)
    np.testing.assert_array_equal(x_e.int_repr().numpy(), x_t.int_repr().numpy())
    out_t, out_e = linear_t(x_t).int_repr().numpy(), linear_e(x_e).int_repr().numpy()
    np.testing.assert_array_equal(out_e, out_t)


@pytest.mark.parametrize("groups,dilation", [(1, 2), (2, 1)])
def test_conv_groups_and_dilation_match_torch(groups, dilation, engine):
    rng = np.random.default_rng(5)
    weight = (rng.standard_normal((4, 4 // groups, 3, 3)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    x = (rng.standard_normal((2, 4, 9, 9))).astype(np.float32)
    modules = []
    for lib in (ember, torch):
        conv = lib.ao.nn.quantized.Conv2d(4, 4, 3, stride=1, padding=1, dilation=dilation, groups=groups)
        scales = lib.tensor(np.abs(weight).reshape(4, -1).max(1).astype(np.float64) / 127)
        qweight = lib.quantize_per_channel(lib.tensor(weight), scales, lib.zeros(4, dtype=lib.long), 0, lib.qint8)
        conv.set_weight_bias(qweight, lib.tensor(bias))
        conv.scale, conv.zero_point = 0.05, 70
        modules.append(conv(lib.quantize_per_tensor(lib.tensor(x), 0.02, 128, lib.quint8)))
    np.testing.assert_array_equal(modules[0].int_repr().numpy(), modules[1].int_repr().numpy())
    assert repr(modules[0]).startswith("tensor(")


def test_state_dict_keys_match_torch():
    prepared_e, prepared_t = _prepared_pair(_cnn, "default_qconfig", _data((2, 3, 8, 8)), "x86")
    converted_e = ember.ao.quantization.convert(prepared_e)
    converted_t = torch.ao.quantization.convert(prepared_t)
    assert list(converted_e.state_dict()) == list(converted_t.state_dict())


def test_quantize_equals_prepare_calibrate_convert():
    data = _data((8, 20))
    model_e, _ = _pair(_mlp)
    model_e.qconfig = ember.ao.quantization.default_qconfig

    def calibrate(model, batches):
        for batch in batches:
            model(ember.tensor(batch))

    quantized = ember.ao.quantization.quantize(model_e, calibrate, [data])
    prepared = ember.ao.quantization.prepare(model_e)
    calibrate(prepared, data)
    converted = ember.ao.quantization.convert(prepared)
    x = ember.tensor(data[0])
    np.testing.assert_array_equal(quantized(x).numpy(), converted(x).numpy())
    assert not any("activation_post_process" in m._modules for m in model_e.modules())  # not inplace


def test_prepare_inserts_observers_as_torch():
    model_e, model_t = _pair(_cnn)
    model_e.qconfig = ember.ao.quantization.default_qconfig
    model_t.qconfig = torch.ao.quantization.default_qconfig
    text_t = repr(torch.ao.quantization.prepare(model_t)).replace("torch.", "ember.")
    assert repr(ember.ao.quantization.prepare(model_e)) == text_t


def test_quant_wrapper_repr_and_forward():
    wrapped_e = ember.ao.quantization.QuantWrapper(ember.nn.Linear(2, 2))
    wrapped_t = torch.ao.quantization.QuantWrapper(torch.nn.Linear(2, 2))
    assert repr(wrapped_e) == repr(wrapped_t)
    x = ember.ones(1, 2)
    assert wrapped_e(x).tolist() == wrapped_e.module(x).tolist()


def test_errors_match_torch():
    prepared_e, prepared_t = _prepared_pair(_cnn, "default_qconfig", _data((2, 3, 8, 8)), "x86")
    converted_e = ember.ao.quantization.convert(prepared_e)
    converted_t = torch.ao.quantization.convert(prepared_t)
    float_inputs = [("fc", (2, 36)), ("conv1", (1, 3, 8, 8))]
    for name, shape in float_inputs:
        with pytest.raises(NotImplementedError) as error_t:
            getattr(converted_t, name)(torch.zeros(shape))
        with pytest.raises(NotImplementedError) as error_e:
            getattr(converted_e, name)(ember.zeros(shape))
        assert str(error_e.value).split(". ")[0] == str(error_t.value).split(". ")[0]
    with pytest.raises(RuntimeError, match="Expected input data type QUInt8 but got QInt8"):
        converted_t.fc(torch.quantize_per_tensor(torch.zeros(2, 36), 1.0, 0, torch.qint8))
    with pytest.raises(RuntimeError, match="Expected input data type QUInt8 but got QInt8"):
        converted_e.fc(ember.quantize_per_tensor(ember.zeros(2, 36), 1.0, 0, ember.qint8))
    with pytest.raises(NotImplementedError):  # ordinary ops still refuse quantized tensors
        ember.exp(converted_e.quant(ember.zeros(2, 36)))


def test_quantized_relu_clamps_at_zero_point():
    q_e = ember.quantize_per_tensor(ember.tensor([-1.0, -0.1, 0.0, 0.3, 2.0]), 0.1, 12, ember.quint8)
    q_t = torch.quantize_per_tensor(torch.tensor([-1.0, -0.1, 0.0, 0.3, 2.0]), 0.1, 12, torch.quint8)
    out_e = ember.relu(q_e)  # torch.relu's QuantizedCPU kernel (ember/_ops/quantized_ops.py)
    out_t = torch.relu(q_t)
    assert out_e.int_repr().tolist() == out_t.int_repr().tolist()
    assert (out_e.q_scale(), out_e.q_zero_point()) == (out_t.q_scale(), out_t.q_zero_point())
