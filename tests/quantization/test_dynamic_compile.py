"""ember.compile of dynamic quantized Linear models (quantize_dynamic): the dynamic linear is an op
(ember/_ops/quantized.py, NOTE [ Dynamic quantized linear ]) whose quantized weight is an operand, so a
capture records it and each replay reads the weight's current integers and parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*quantiz.*deprecated.*")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore:.*quantiz.*:UserWarning")


def _model(seed: int = 0, bias: bool = True):
    ember.manual_seed(seed)
    model = nn.Sequential(nn.Linear(6, 8, bias=bias), nn.ReLU(), nn.Linear(8, 3, bias=bias)).eval()
    return quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)


def _inputs(seed: int, *shape) -> ember.Tensor:
    return ember.tensor((np.random.default_rng(seed).standard_normal(shape) * 2).astype(np.float32))


def test_fullgraph_compiles_and_equals_eager_bit_for_bit():
    quantized = _model()
    compiled = ember.compile(quantized, fullgraph=True)
    for seed in range(4):  # other values (other activation scales) through the one graph
        x = _inputs(seed, 4, 6)
        np.testing.assert_array_equal(compiled(x).numpy(), quantized(x).numpy())
    assert compiled._compiled.captures == 1 and not compiled._compiled.graph_breaks
    for seed, batch in enumerate((7, 9, 2, 7, 4)):  # other batch sizes: a size-generic graph serves them
        x = _inputs(10 + seed, batch, 6)
        np.testing.assert_array_equal(compiled(x).numpy(), quantized(x).numpy())
    assert compiled._compiled.captures == 2 and compiled._compiled.recompiles == 0


def test_compiled_matches_torch_like_eager():
    model = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 8))
    model_t = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 8))
    with torch.no_grad():
        for layer_e, layer_t in zip(model, model_t):
            for name, value in layer_e.named_parameters():
                getattr(layer_t, name).copy_(torch.tensor(value.detach().numpy()))
    quantized = quantize_dynamic(model, {nn.Linear}, dtype=ember.qint8)
    quantized_t = torch.ao.quantization.quantize_dynamic(model_t, {torch.nn.Linear}, dtype=torch.qint8)
    compiled = ember.compile(quantized, fullgraph=True)
    for seed, shape in enumerate([(5, 32), (5, 32), (3, 32), (2, 3, 32)]):
        x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        out = compiled(ember.tensor(x)).numpy()
        np.testing.assert_array_equal(out, quantized(ember.tensor(x)).numpy())
        # as eager (tests/quantization/test_quantized.py): within torch's single fma rounding
        np.testing.assert_array_max_ulp(out, quantized_t(torch.tensor(x)).numpy(), maxulp=1)


def test_requantized_weights_are_seen_by_the_compiled_model():
    quantized = _model(1)
    compiled = ember.compile(quantized, fullgraph=True)
    x = _inputs(0, 4, 6)
    first = compiled(x).numpy()
    np.testing.assert_array_equal(first, quantized(x).numpy())
    layer = quantized[0]
    weight, bias = layer._packed_params._weight_bias()
    new_weight = ember.quantize_per_tensor(ember.randn(8, 6), 0.03, 0, ember.qint8)
    layer.set_weight_bias(new_weight, bias * 2)
    out = compiled(x).numpy()
    np.testing.assert_array_equal(out, quantized(x).numpy())
    assert not np.array_equal(out, first)


def test_per_channel_weights_and_no_bias():
    ember.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3, bias=False)).eval()
    quantized = quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=ember.qint8)
    assert quantized[0].weight().qscheme() == ember.per_channel_affine
    compiled = ember.compile(quantized, fullgraph=True)
    for seed, batch in enumerate((4, 4, 5)):
        x = _inputs(seed, batch, 6)
        np.testing.assert_array_equal(compiled(x).numpy(), quantized(x).numpy())
    no_bias = _model(3, bias=False)
    compiled = ember.compile(no_bias, fullgraph=True)
    x = _inputs(5, 3, 6)
    np.testing.assert_array_equal(compiled(x).numpy(), no_bias(x).numpy())


def test_zero_and_constant_inputs_through_the_graph():
    """The activation range's fallbacks (a zero range, an all-positive input) are chosen at each call."""
    quantized = _model(4)
    compiled = ember.compile(quantized, fullgraph=True)
    for x in (ember.zeros(4, 6), ember.full((4, 6), 0.25), _inputs(6, 4, 6).abs(), -_inputs(7, 4, 6).abs()):
        np.testing.assert_array_equal(compiled(x).numpy(), quantized(x).numpy())


def test_input_requiring_grad_as_eager():
    quantized = _model(5)
    compiled = ember.compile(quantized, fullgraph=True)
    x = _inputs(0, 4, 6).requires_grad_()
    out, expected = compiled(x), quantized(x)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
    assert out.requires_grad == expected.requires_grad


def test_mixed_with_float_ops_in_one_graph():
    """Float ops around the dynamic linear in one graph: its output is eager's bit for bit (the float tail
    is a fused kernel, which may contract y * 3 - 1 into one rounding, so it is compared within float32)."""
    quantized = _model(6)

    def fn(x):
        y = quantized(x * 2 + 1)
        return y, (y * 3 - 1).relu()

    compiled = ember.compile(fn, fullgraph=True)
    for seed in range(3):
        x = _inputs(seed, 4, 6)
        (y, z), (y_eager, z_eager) = compiled(x), fn(x)
        np.testing.assert_array_equal(y.numpy(), y_eager.numpy())
        np.testing.assert_allclose(z.numpy(), z_eager.numpy(), rtol=1e-6, atol=1e-6)
    assert compiled.captures == 1 and not compiled.graph_breaks
