"""Quantization-aware training (FakeQuantize, fused_moving_avg_obs_fake_quant, prepare_qat, the QAT modules,
fuse_modules_qat, convert) against real torch: training from the same weights and data gives torch's losses,
activations, fake-quant parameters and weights, and the converted model torch's integers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")
warnings.filterwarnings("ignore", message=".*reduce_range will be deprecated.*")
warnings.filterwarnings("ignore", message=".*torch.ao.quantization is deprecated.*")


def _np(t):
    return t.detach().numpy()


def _e(array):
    return ember.tensor(np.asarray(array))


def _repr(module) -> str:
    return repr(module).replace("ember.", "torch.")


# ---------------------------------------------------------------- FakeQuantize and the fused op


FAKE_QUANTS = ["default_fake_quant", "default_weight_fake_quant", "default_per_channel_weight_fake_quant",
               "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
               "default_fused_per_channel_wt_fake_quant"]


@pytest.mark.parametrize("name", FAKE_QUANTS)
def test_fake_quantize_module_matches_torch(name):
    fq_e = getattr(ember.ao.quantization, name)()
    fq_t = getattr(torch.ao.quantization, name)()
    assert _repr(fq_e) == repr(fq_t)
    assert list(fq_e.state_dict()) == list(fq_t.state_dict())
    rng = np.random.default_rng(0)
    for step in range(6):
        x = (rng.standard_normal((4, 3, 5, 5)) * rng.uniform(0.1, 3.0) + rng.uniform(-1, 1)).astype(np.float32)
        if step == 3:
            fq_e.disable_observer(), fq_t.disable_observer()
        if step == 4:
            fq_e.disable_fake_quant(), fq_t.disable_fake_quant()
        if step == 5:
            fq_e.enable_fake_quant(), fq_t.enable_fake_quant()
            fq_e.enable_observer(), fq_t.enable_observer()
        xe, xt = _e(x).requires_grad_(), torch.tensor(x, requires_grad=True)
        ye, yt = fq_e(xe), fq_t(xt)
        (ye * _e(np.arange(x.size, dtype=np.float32).reshape(x.shape))).sum().backward()
        (yt * torch.arange(x.size, dtype=torch.float32).reshape(x.shape)).sum().backward()
        np.testing.assert_array_equal(_np(ye), _np(yt))
        np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
        for key, value in fq_t.state_dict().items():
            ours = fq_e.state_dict()[key]
            assert ours.dtype == getattr(ember, str(value.dtype).split(".")[1]), key
            np.testing.assert_array_equal(ours.numpy(), value.numpy(), err_msg=key)
        scale_e, zp_e = fq_e.calculate_qparams()
        scale_t, zp_t = fq_t.calculate_qparams()
        np.testing.assert_array_equal(scale_e.numpy(), scale_t.numpy())
        np.testing.assert_array_equal(zp_e.numpy(), zp_t.numpy())
    assert _repr(fq_e) == repr(fq_t)


def test_fake_quantize_state_dict_round_trip_from_torch():
    fq_t = torch.ao.quantization.default_per_channel_weight_fake_quant()
    fq_t(torch.randn(6, 3, 2, 2))
    fq_e = ember.ao.quantization.default_per_channel_weight_fake_quant()
    fq_e.load_state_dict({k: _e(v.numpy()) for k, v in fq_t.state_dict().items()})
    assert _repr(fq_e) == repr(fq_t)
    np.testing.assert_array_equal(fq_e.scale.numpy(), fq_t.scale.numpy())


@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("symmetric", [False, True])
def test_fused_moving_avg_obs_fake_quant_op_matches_torch(per_row, symmetric):
    """The running min/max, ChooseQuantizationParams' scale and zero point (tiny and zero ranges included), the
    output and the straight-through gradient, bit for bit, with the observer and fake quant switched."""
    rng = np.random.default_rng(1 + 2 * per_row + symmetric)
    for trial in range(12):
        shape = (4, 3, 2, 2) if per_row else (int(rng.integers(1, 40)),)
        qmin, qmax = ((-128, 127) if symmetric else (0, 255)) if trial % 3 else (0, 127)
        constant = [0.01, 1.0, 0.3][trial % 3]
        states = {}
        for lib in (ember, torch):
            empty = lib.tensor([]) if per_row else None
            running = (empty, lib.tensor([])) if per_row else (lib.tensor(float("inf")), lib.tensor(float("-inf")))
            states[lib] = (*running, lib.tensor([1.0]), lib.tensor([0], dtype=lib.int32))
        for step in range(4):
            magnitude = 10.0 ** rng.uniform(-7, 2)
            x = (rng.standard_normal(shape) * magnitude + rng.uniform(-1, 1) * magnitude).astype(np.float32)
            if step == 1 and trial % 4 == 0:
                x = np.abs(x)
            if step == 2 and trial % 5 == 0:
                x = np.zeros_like(x)
            observe = 0 if step == 3 and trial % 2 else 1
            fake_quant = 0 if step == 2 and trial % 3 == 1 else 1
            results = []
            for lib in (ember, torch):
                running_min, running_max, scale, zero_point = states[lib]
                xt = lib.tensor(x, requires_grad=True)
                y = lib.fused_moving_avg_obs_fake_quant(xt, lib.tensor([observe]), lib.tensor([fake_quant]),
                                                        running_min, running_max, scale, zero_point, constant,
                                                        qmin, qmax, 0, per_row, symmetric)
                (y * y).sum().backward()
                results.append([_np(y), _np(xt.grad), *(_np(t) for t in states[lib])])
            for ours, theirs in zip(*results):
                np.testing.assert_array_equal(ours, theirs)


def test_fused_moving_avg_obs_fake_quant_empty_input_and_errors():
    state = (ember.tensor(float("inf")), ember.tensor(float("-inf")), ember.tensor([1.0]),
             ember.tensor([0], dtype=ember.int32))
    out = ember.fused_moving_avg_obs_fake_quant(ember.zeros(0), ember.tensor([1]), ember.tensor([1]), *state, 0.01, 0,
                                                255, 0)
    assert out.shape == (0,)
    with pytest.raises(RuntimeError, match="ch_axis must be < self.dim"):
        ember.fused_moving_avg_obs_fake_quant(ember.ones(3), ember.tensor([1]), ember.tensor([1]), *state, 0.01, 0,
                                              255, 1)


@pytest.mark.parametrize("backend", ["x86", "fbgemm", "qnnpack", "onednn"])
@pytest.mark.parametrize("version", [0, 1])
def test_get_default_qat_qconfig_matches_torch(backend, version):
    ours = ember.ao.quantization.get_default_qat_qconfig(backend, version)
    theirs = torch.ao.quantization.get_default_qat_qconfig(backend, version)
    assert _repr(ours.activation()) == repr(theirs.activation())
    assert _repr(ours.weight()) == repr(theirs.weight())
    with pytest.raises(AssertionError, match="not supported"):
        ember.ao.quantization.get_default_qat_qconfig("arm")


# ---------------------------------------------------------------- training a model, then converting it


def _cnn(lib):
    nn, tq = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU()
            self.conv2, self.bn2 = nn.Conv2d(6, 4, 3, stride=2, bias=False), nn.BatchNorm2d(4)
            self.conv3, self.relu3 = nn.Conv2d(4, 4, 1), nn.ReLU()
            self.fc, self.relu4, self.fc2 = nn.Linear(36, 8), nn.ReLU(), nn.Linear(8, 3)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.relu1(self.bn1(self.conv1(self.quant(x))))
            x = self.relu3(self.conv3(self.bn2(self.conv2(x))))
            return self.dequant(self.fc2(self.relu4(self.fc(lib.flatten(x, 1)))))

    return Net()


def _mlp(lib):
    nn, tq = lib.nn, lib.ao.quantization
    return nn.Sequential(tq.QuantStub(), nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 4), tq.DeQuantStub())


CNN_GROUPS = [["conv1", "bn1", "relu1"], ["conv2", "bn2"], ["conv3", "relu3"], ["fc", "relu4"]]
MLP_GROUPS = [["1", "2"], ["3", "4"]]
QCONFIGS = {"default_qat_qconfig": lambda lib: lib.ao.quantization.default_qat_qconfig,
            "x86": lambda lib: lib.ao.quantization.get_default_qat_qconfig("x86")}


def _prepared_pair(build, groups, qconfig):
    torch.manual_seed(0)
    model_t = build(torch)
    model_e = build(ember)
    model_e.load_state_dict({k: _e(v.detach().numpy()) for k, v in model_t.state_dict().items()})
    prepared = []
    for lib, model in ((ember, model_e), (torch, model_t)):
        fused = lib.ao.quantization.fuse_modules_qat(model.train(), groups)
        fused.qconfig = QCONFIGS[qconfig](lib)
        prepared.append(lib.ao.quantization.prepare_qat(fused))
    return prepared


def _capture_activations(model, store):
    """Forward hooks on every activation fake quant: its (fake-quantized) output and scale, per step."""
    for name, module in model.named_modules():
        if name.endswith("activation_post_process") and hasattr(module, "fake_quant_enabled"):
            module.register_forward_hook(lambda mod, inp, out, name=name: store.__setitem__(
                name, (_np(out), mod.scale.numpy().copy())))


def _assert_fake_quantized_close(ours, theirs, scale, name):
    """Equal to float32 rounding, except that an element whose unquantized value lies within float32 rounding of
    a rounding boundary may land one quantization step away: ember's float conv and linear sum in another order
    than torch's (docs/quantization.md), so a value a few ulp from a tie can round the other way.  Such
    elements must be rare (at most 1 in 1000) and exactly one step off."""
    off = ~np.isclose(ours, theirs, rtol=1e-5, atol=1e-5)
    assert off.mean() <= 1e-3, (name, off.sum())
    np.testing.assert_allclose(np.abs(ours[off] - theirs[off]), float(scale.reshape(-1)[0]), rtol=1e-3,
                               err_msg=name)


def _compare_state(model_e, model_t, rtol):
    state_e = model_e.state_dict()
    for key, value in model_t.state_dict().items():
        ours = state_e[key].numpy()
        if key.endswith(("zero_point", "enabled", "num_batches_tracked")):
            np.testing.assert_array_equal(ours, value.numpy(), err_msg=key)
        else:
            np.testing.assert_allclose(ours, value.numpy(), rtol=rtol, atol=rtol, err_msg=key)


def _conv_bn_modules(model):
    return [m for m in model.modules() if type(m).__name__ in ("ConvBn2d", "ConvBnReLU2d")]


@pytest.mark.parametrize("qconfig", list(QCONFIGS))
@pytest.mark.parametrize("build, groups, shape", [(_cnn, CNN_GROUPS, (8, 3, 8, 8)), (_mlp, MLP_GROUPS, (8, 12))],
                         ids=["cnn", "mlp"])
def test_qat_training_and_convert_match_torch(build, groups, shape, qconfig):
    torch.backends.quantized.engine = "x86"
    model_e, model_t = _prepared_pair(build, groups, qconfig)
    assert _repr(model_e) == repr(model_t)
    assert list(model_e.state_dict()) == list(model_t.state_dict())
    acts_e, acts_t = {}, {}
    _capture_activations(model_e, acts_e)
    _capture_activations(model_t, acts_t)
    opt_e = ember.optim.SGD(model_e.parameters(), lr=0.05, momentum=0.9)
    opt_t = torch.optim.SGD(model_t.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(0)
    is_cnn = build is _cnn
    frozen_stats = None
    for step in range(7):
        if step == 3 and is_cnn:  # BN statistics frozen mid-training: running stats stop, bn normalises by them
            model_e.apply(ember.ao.nn.intrinsic.qat.freeze_bn_stats)
            model_t.apply(torch.ao.nn.intrinsic.qat.freeze_bn_stats)
            assert all(not m.bn.training and m.freeze_bn for m in _conv_bn_modules(model_e))
            frozen_stats = {k: v.numpy().copy() for k, v in model_e.state_dict().items() if "running" in k}
        if step == 5:  # observers off: every scale and zero point stays
            model_e.apply(ember.ao.quantization.disable_observer)
            model_t.apply(torch.ao.quantization.disable_observer)
            frozen_qparams = {k: v.numpy().copy() for k, v in model_e.state_dict().items()
                              if k.endswith(("scale", "zero_point"))}
        x = rng.standard_normal(shape).astype(np.float32)
        target = rng.integers(0, 3 if is_cnn else 4, shape[0])
        losses = []
        for lib, model, opt in ((ember, model_e, opt_e), (torch, model_t, opt_t)):
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(target))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
        assert acts_e.keys() == acts_t.keys() and acts_e
        for name, (theirs, scale) in acts_t.items():
            np.testing.assert_allclose(acts_e[name][1], scale, rtol=1e-5, err_msg=name)
            _assert_fake_quantized_close(acts_e[name][0], theirs, scale, name)
        _compare_state(model_e, model_t, rtol=1e-5)
    if frozen_stats is not None:
        for key, value in frozen_stats.items():
            np.testing.assert_array_equal(model_e.state_dict()[key].numpy(), value, err_msg=key)
    for key, value in frozen_qparams.items():
        np.testing.assert_array_equal(model_e.state_dict()[key].numpy(), value, err_msg=key)

    # convert: float observations differ from torch's in the last bits, so give ember torch's trained state
    model_e.load_state_dict({k: _e(v.numpy()) for k, v in model_t.state_dict().items()})
    model_e.eval(), model_t.eval()
    quantized_e = ember.ao.quantization.convert(model_e)
    quantized_t = torch.ao.quantization.convert(model_t)
    assert _repr(quantized_e) == repr(quantized_t)
    assert list(quantized_e.state_dict()) == list(quantized_t.state_dict())
    for name, module in quantized_t.named_modules():
        if hasattr(module, "weight") and callable(module.weight):
            ours = dict(quantized_e.named_modules())[name].weight()
            np.testing.assert_array_equal(ours.int_repr().numpy(), module.weight().int_repr().numpy(), err_msg=name)
            assert str(ours.qscheme()).replace("ember.", "torch.") == str(module.weight().qscheme())
            if module.weight().qscheme() == torch.per_channel_affine:
                np.testing.assert_array_equal(ours.q_per_channel_scales().numpy(),
                                              module.weight().q_per_channel_scales().numpy())
            else:
                assert ours.q_scale() == module.weight().q_scale()
    outputs_e, outputs_t = {}, {}
    for store, model in ((outputs_e, quantized_e), (outputs_t, quantized_t)):
        for name, module in model.named_modules():
            if name and type(module).__name__.startswith(("Quantized", "Quantize")):
                module.register_forward_hook(lambda mod, inp, out, name=name, store=store:
                                             store.__setitem__(name, out.int_repr().numpy()))
    x = rng.standard_normal((4,) + shape[1:]).astype(np.float32)
    out_e, out_t = quantized_e(ember.tensor(x)), quantized_t(torch.tensor(x))
    assert outputs_e.keys() == outputs_t.keys() and outputs_e
    for name in outputs_t:
        np.testing.assert_array_equal(outputs_e[name], outputs_t[name], err_msg=name)
    np.testing.assert_array_equal(_np(out_e), _np(out_t))
    assert len(np.unique(_np(out_t))) > 4  # not a degenerate (all-equal) output


def test_convert_without_loading_torch_state_agrees_on_weights():
    """ember's own trained model (no state from torch) converts to the same quantized weights as torch's."""
    model_e, model_t = _prepared_pair(_mlp, MLP_GROUPS, "default_qat_qconfig")
    rng = np.random.default_rng(5)
    for _ in range(2):
        x = rng.standard_normal((8, 12)).astype(np.float32)
        model_e(ember.tensor(x)), model_t(torch.tensor(x))
    quantized_e = ember.ao.quantization.convert(model_e.eval())
    quantized_t = torch.ao.quantization.convert(model_t.eval())
    for index in ("1", "3", "5"):
        ours, theirs = quantized_e._modules[index].weight(), quantized_t._modules[index].weight()
        np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy())
        np.testing.assert_allclose(ours.q_scale(), theirs.q_scale(), rtol=1e-6)


# ---------------------------------------------------------------- the QAT modules


def _qconfigs():
    return ember.ao.quantization.default_qat_qconfig, torch.ao.quantization.default_qat_qconfig


def test_conv_bn_module_folding_freeze_and_to_float():
    qconfig_e, qconfig_t = _qconfigs()
    torch.manual_seed(1)
    conv_bn_t = torch.ao.nn.intrinsic.qat.ConvBnReLU2d(3, 5, 3, padding=1, bias=True, qconfig=qconfig_t)
    conv_bn_e = ember.ao.nn.intrinsic.qat.ConvBnReLU2d(3, 5, 3, padding=1, bias=True, qconfig=qconfig_e)
    assert _repr(conv_bn_e) == repr(conv_bn_t)
    assert list(conv_bn_e.state_dict()) == list(conv_bn_t.state_dict())
    conv_bn_e.load_state_dict({k: _e(v.numpy()) for k, v in conv_bn_t.state_dict().items()})
    rng = np.random.default_rng(2)
    for step in range(4):
        if step == 2:
            conv_bn_e.freeze_bn_stats(), conv_bn_t.freeze_bn_stats()
            conv_bn_e.train(), conv_bn_t.train()  # a frozen bn stays in eval mode
            assert not conv_bn_e.bn.training and conv_bn_e.training
        if step == 3:
            conv_bn_e._enable_slow_path_for_better_numerical_stability = True
            conv_bn_t._enable_slow_path_for_better_numerical_stability = True
        x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        xe, xt = _e(x).requires_grad_(), torch.tensor(x, requires_grad=True)
        ye, yt = conv_bn_e(xe), conv_bn_t(xt)
        ye.sum().backward(), yt.sum().backward()
        np.testing.assert_allclose(_np(ye), _np(yt), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(conv_bn_e.weight.grad.numpy(), conv_bn_t.weight.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)
        _compare_state(conv_bn_e, conv_bn_t, rtol=1e-5)
    conv_bn_e.update_bn_stats()
    assert conv_bn_e.bn.training and not conv_bn_e.freeze_bn
    float_e, float_t = conv_bn_e.to_float(), conv_bn_t.to_float()
    assert _repr(float_e) == repr(float_t)
    np.testing.assert_allclose(_np(float_e[0].weight), _np(float_t[0].weight), rtol=1e-5, atol=1e-6)


def test_qat_modules_from_float_forward_and_reprs():
    qconfig_e, qconfig_t = _qconfigs()
    rng = np.random.default_rng(3)
    cases = [("Linear", (5, 4), (3, 5)), ("Conv1d", (2, 3, 3), (2, 2, 7)), ("Conv2d", (2, 3, 3), (2, 2, 6, 6)),
             ("Conv3d", (2, 3, 2), (1, 2, 4, 4, 4))]
    for name, args, shape in cases:
        torch.manual_seed(0)
        float_t = getattr(torch.nn, name)(*args)
        float_e = getattr(ember.nn, name)(*args)
        float_e.load_state_dict({k: _e(v.detach().numpy()) for k, v in float_t.state_dict().items()})
        float_e.qconfig, float_t.qconfig = qconfig_e, qconfig_t
        qat_e = getattr(ember.ao.nn.qat, name).from_float(float_e)
        qat_t = getattr(torch.ao.nn.qat, name).from_float(float_t)
        assert qat_e.weight is float_e.weight  # the parameters are shared, as torch's
        assert _repr(qat_e) == repr(qat_t)
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(_np(qat_e(_e(x))), _np(qat_t(torch.tensor(x))), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(qat_e.weight_fake_quant.scale.numpy(), qat_t.weight_fake_quant.scale.numpy())
        assert _repr(qat_e.to_float()) == repr(qat_t.to_float())
    with pytest.raises(AssertionError, match="qconfig must be provided"):
        ember.ao.nn.qat.Linear(2, 3)


def test_fuse_modules_qat_and_prepare_qat_errors():
    model_e = _cnn(ember)
    fused = ember.ao.quantization.fuse_modules_qat(model_e, CNN_GROUPS)
    fused_t = torch.ao.quantization.fuse_modules_qat(_cnn(torch), CNN_GROUPS)
    assert _repr(fused) == repr(fused_t)
    assert type(fused.conv1) is ember.ao.nn.intrinsic.ConvBnReLU2d
    with pytest.raises(AssertionError, match="training mode"):
        ember.ao.quantization.prepare_qat(fused.eval())


def test_aliases_match_torch():
    assert ember.nn.qat.Linear is ember.ao.nn.qat.Linear
    assert ember.nn.qat.Conv2d is ember.ao.nn.qat.Conv2d
    assert ember.nn.intrinsic.qat.ConvBn2d is ember.ao.nn.intrinsic.qat.ConvBn2d
    assert ember.nn.intrinsic.ConvBnReLU2d is ember.ao.nn.intrinsic.ConvBnReLU2d
    assert ember.quantization.FakeQuantize is ember.ao.quantization.FakeQuantize
    assert ember.quantization.prepare_qat is ember.ao.quantization.prepare_qat
    for name in ("Linear", "Conv1d", "Conv2d", "Conv3d"):
        assert getattr(ember.ao.nn.qat, name).__name__ == getattr(torch.ao.nn.qat, name).__name__
    for name in ("ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU", "freeze_bn_stats", "update_bn_stats"):
        assert hasattr(ember.ao.nn.intrinsic.qat, name) and hasattr(torch.ao.nn.intrinsic.qat, name)
    mapping_e = ember.ao.quantization.get_default_qat_module_mappings()
    assert mapping_e[ember.nn.Linear] is ember.ao.nn.qat.Linear


def test_dynamic_qat_qconfig_observes_the_input_as_torch():
    """A memoryless activation fake quant (averaging constant 1) is fed the module's input by a pre-hook."""
    models = []
    for lib in (ember, torch):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 3))
        if lib is ember:
            model_e = ember.nn.Sequential(ember.nn.Linear(4, 3))
            model_e.load_state_dict({k: _e(v.detach().numpy()) for k, v in model.state_dict().items()})
            model = model_e
        model.qconfig = lib.ao.quantization.default_dynamic_qat_qconfig
        models.append(lib.ao.quantization.prepare_qat(model))
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32) * 3
    out_e, out_t = models[0](_e(x)), models[1](torch.tensor(x))
    np.testing.assert_allclose(_np(out_e), _np(out_t), rtol=1e-5, atol=1e-6)
    assert _repr(models[0]) == repr(models[1])
    assert len(models[0][0]._forward_pre_hooks) == len(models[1][0]._forward_pre_hooks) == 1
    assert len(models[0][0]._forward_hooks) == len(models[1][0]._forward_hooks) == 0
    scale_e, scale_t = models[0][0].activation_post_process.scale, models[1][0].activation_post_process.scale
    np.testing.assert_array_equal(scale_e.numpy(), scale_t.numpy())  # from the input, not the output
