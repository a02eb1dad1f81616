"""fuse_modules and the fused quantized modules (ember.ao.nn.intrinsic) against real torch: the fused float
model, the converted model's repr and qparams, and its outputs bit for bit."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")

GROUPS = [["conv1", "bn1", "relu1"], ["conv2", "relu2"], ["fc", "relu3"]]


def _build(lib):
    nn, tq = lib.nn, lib.ao.quantization

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU()
            self.conv2, self.relu2 = nn.Conv2d(6, 4, 3, stride=2), nn.ReLU()
            self.fc, self.relu3, self.fc2 = nn.Linear(36, 8), nn.ReLU(), nn.Linear(8, 3)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.relu1(self.bn1(self.conv1(self.quant(x))))
            x = lib.flatten(self.relu2(self.conv2(x)), 1)
            return self.dequant(self.fc2(self.relu3(self.fc(x))))

    return Net()


def _pair():
    torch.manual_seed(0)
    model_t = _build(torch)
    with torch.no_grad():  # running stats that make the folding matter
        model_t.bn1.running_mean.uniform_(-0.5, 0.5)
        model_t.bn1.running_var.uniform_(0.5, 2.0)
        model_t.bn1.weight.uniform_(0.5, 1.5)
        model_t.bn1.bias.uniform_(-0.2, 0.2)
    model_t.eval()
    model_e = _build(ember).eval()
    model_e.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in model_t.state_dict().items()})
    return model_e, model_t


def test_fused_float_model_matches_torch_and_the_unfused_model():
    model_e, model_t = _pair()
    fused_e = ember.ao.quantization.fuse_modules(model_e, GROUPS)
    fused_t = torch.ao.quantization.fuse_modules(model_t, GROUPS)
    assert repr(fused_e) == repr(fused_t)
    np.testing.assert_array_equal(fused_e.conv1[0].weight.detach().numpy(), fused_t.conv1[0].weight.detach().numpy())
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    with ember.no_grad():
        np.testing.assert_allclose(fused_e(ember.tensor(x)).numpy(), model_e(ember.tensor(x)).numpy(), atol=1e-5)
    assert isinstance(model_e.bn1, ember.nn.BatchNorm2d)  # inplace=False left the model as it was


@pytest.mark.parametrize("qconfig", ["default_qconfig", "default_per_channel_qconfig"])
def test_fused_static_quantization_equals_torch(qconfig):
    torch.backends.quantized.engine = "x86"
    rng = np.random.default_rng(0)
    calibration = [rng.standard_normal((4, 3, 8, 8)).astype(np.float32) for _ in range(3)]
    converted = []
    for lib, model in zip((ember, torch), _pair()):
        fused = lib.ao.quantization.fuse_modules(model, GROUPS)
        fused.qconfig = getattr(lib.ao.quantization, qconfig)
        prepared = lib.ao.quantization.prepare(fused)
        for batch in calibration:
            prepared(lib.tensor(batch))
        converted.append(lib.ao.quantization.convert(prepared))
    ours, theirs = converted
    # The observers' min/max are of float32 conv and linear outputs, whose last bit depends on the BLAS kernel's
    # summation order (it differs between CPUs): scales agree to a few float32 ulps, and the repr (which prints
    # them with float64 digits) is compared with them rounded to 6 significant digits.
    def shown(model):
        return re.sub(r"scale=([0-9.e-]+)", lambda m: f"scale={float(m.group(1)):.6g}", repr(model))

    assert shown(ours).replace("ember.", "torch.") == shown(theirs)
    assert type(ours.conv1).__name__ == "ConvReLU2d" and type(ours.fc).__name__ == "LinearReLU"
    for name in ("conv1", "conv2", "fc", "fc2"):
        assert getattr(ours, name).scale == pytest.approx(getattr(theirs, name).scale, rel=5e-7)
        assert getattr(ours, name).zero_point == getattr(theirs, name).zero_point
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    got, want = ours(ember.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy()
    # the dequantized outputs: the same quantization levels, times scales that may differ in the last bits
    np.testing.assert_array_equal(np.round(got / ours.fc2.scale), np.round(want / theirs.fc2.scale))
    np.testing.assert_allclose(got, want, rtol=5e-7, atol=0)


def test_unknown_sequences_and_training_mode_conv_bn_are_refused():
    model_e, _ = _pair()
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        ember.ao.quantization.fuse_modules(model_e, ["relu1", "conv2"])
    with pytest.raises(NotImplementedError, match="eval mode"):  # torch makes QAT's ConvBn2d here
        ember.ao.quantization.fuse_modules(model_e.train(), ["conv1", "bn1"])
