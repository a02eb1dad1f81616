"""ember.fake_quantize_per_tensor_affine / per_channel_affine and the learnable variants, against torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _pair(array: np.ndarray, requires_grad: bool = False):
    ours = ember.tensor(array, requires_grad=requires_grad)
    theirs = torch.tensor(array, requires_grad=requires_grad)
    return ours, theirs


def _same(ours, theirs) -> None:
    theirs = theirs.detach()
    if theirs.dtype == torch.bfloat16:
        theirs = theirs.float()
        ours = ours.float()
    expected = theirs.numpy()
    got = ours.detach().numpy()
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))  # bit-exact, -0.0 included


def _inputs(dtype=np.float32, seed=0, shape=(4, 6)):
    rng = np.random.default_rng(seed)
    values = (rng.standard_normal(shape) * 4).astype(dtype)
    flat = values.reshape(-1)
    flat[:6] = [0.05, 0.15, -0.25, 1e30, -1e30, 0.0]  # ties, values clamped far outside the range
    return values


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("scale,zero_point,qmin,qmax", [(0.1, 3, -128, 127), (0.37, 0, 0, 255), (1.0, -2, -4, 4),
                                                         (0.0, 1, 0, 10), (2.5e-3, 100, 0, 255)])
def test_per_tensor_matches(dtype, scale, zero_point, qmin, qmax):
    ours, theirs = _pair(_inputs(dtype), requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(ours, scale, zero_point, qmin, qmax)
    expected = torch.fake_quantize_per_tensor_affine(theirs, scale, zero_point, qmin, qmax)
    _same(y, expected)
    assert type(y.grad_fn).__name__ == type(expected.grad_fn).__name__
    weights = np.arange(y.numel(), dtype=dtype).reshape(y.shape)
    (y * ember.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    _same(ours.grad, theirs.grad)


def test_per_tensor_nan_inf_and_bfloat16():
    values = np.array([np.nan, np.inf, -np.inf, 0.3, -7.7], dtype=np.float32)
    ours, theirs = _pair(values)
    _same(ember.fake_quantize_per_tensor_affine(ours, 0.1, 0, -4, 4),
          torch.fake_quantize_per_tensor_affine(theirs, 0.1, 0, -4, 4))
    _same(ember.fake_quantize_per_tensor_affine(ours.bfloat16(), 0.1, 0, -4, 4),
          torch.fake_quantize_per_tensor_affine(theirs.bfloat16(), 0.1, 0, -4, 4))


def test_per_tensor_tensor_qparams():
    ours, theirs = _pair(_inputs(), requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(ours, ember.tensor(0.2), ember.tensor(3), -10, 10)
    expected = torch.fake_quantize_per_tensor_affine(theirs, torch.tensor(0.2), torch.tensor(3), -10, 10)
    _same(y, expected)
    assert type(y.grad_fn).__name__ == "FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0"
    y.sum().backward()
    expected.sum().backward()
    _same(ours.grad, theirs.grad)
    # one-element 1-D tensors work too; the zero point is not range-checked in this overload
    _same(ember.fake_quantize_per_tensor_affine(ours, ember.tensor([0.2]), ember.tensor([30]), -10, 10),
          torch.fake_quantize_per_tensor_affine(theirs, torch.tensor([0.2]), torch.tensor([30]), -10, 10))


def _error(fn, *args):
    try:
        fn(*args)
    except Exception as error:  # noqa: BLE001  (comparing the error types of both libraries)
        return type(error)
    return None


@pytest.mark.parametrize("case", ["range", "zero_point", "int_input", "float_zero_point", "two_scales",
                                  "scale_grad"])
def test_per_tensor_errors(case):
    def run(lib):
        x = lib.tensor([0.5, -1.0])
        if case == "range":
            return lib.fake_quantize_per_tensor_affine(x, 0.1, 0, 5, 2)
        if case == "zero_point":
            return lib.fake_quantize_per_tensor_affine(x, 0.1, 300, 0, 255)
        if case == "int_input":
            return lib.fake_quantize_per_tensor_affine(lib.tensor([1, 2]), 0.1, 0, 0, 255)
        if case == "float_zero_point":
            return lib.fake_quantize_per_tensor_affine(x, 0.1, 1.5, 0, 255)
        if case == "two_scales":
            return lib.fake_quantize_per_tensor_affine(x, lib.tensor([0.1, 0.2]), lib.tensor([0, 0]), 0, 255)
        scale = lib.tensor(0.1, requires_grad=True)
        return lib.fake_quantize_per_tensor_affine(x, scale, lib.tensor(0), 0, 255)

    expected = _error(run, torch)
    assert expected is not None
    assert _error(run, ember) is expected


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("zero_dtype", ["int32", "float32"])
def test_per_channel_matches(dtype, axis, zero_dtype):
    values = _inputs(dtype, seed=axis)
    values.reshape(-1)[7] = np.nan
    ours, theirs = _pair(values, requires_grad=True)
    channels = values.shape[axis]
    scale = (np.arange(channels, dtype=np.float32) + 1) * np.float32(0.07)
    scale[1] = 0.0
    if zero_dtype == "int32":
        zero = (np.arange(channels) % 3 - 1).astype(np.int32)
    else:
        zero = (np.arange(channels) * 0.5 - 1).astype(np.float32)
    y = ember.fake_quantize_per_channel_affine(ours, ember.tensor(scale), ember.tensor(zero), axis, -5, 6)
    expected = torch.fake_quantize_per_channel_affine(theirs, torch.tensor(scale), torch.tensor(zero), axis, -5, 6)
    _same(y, expected)
    assert type(y.grad_fn).__name__ == type(expected.grad_fn).__name__
    y.sum().backward()
    expected.sum().backward()
    _same(ours.grad, theirs.grad)


@pytest.mark.parametrize("case", ["scale_double", "zero_long", "axis_out", "axis_negative", "length",
                                  "zero_range", "scale_2d"])
def test_per_channel_errors(case):
    def run(lib):
        x = lib.ones(4, 5)
        scale = lib.full((4,), 0.1)
        zero = lib.zeros(4, dtype=lib.int32)
        axis = 0
        if case == "scale_double":
            scale = scale.double()
        elif case == "zero_long":
            zero = zero.long()
        elif case == "axis_out":
            axis = 2
        elif case == "axis_negative":
            axis, scale, zero = -1, lib.full((5,), 0.1), lib.zeros(5, dtype=lib.int32)
        elif case == "length":
            scale = lib.full((3,), 0.1)
        elif case == "zero_range":
            zero = lib.full((4,), 9, dtype=lib.int32)
        else:
            scale = scale.reshape(2, 2)
        return lib.fake_quantize_per_channel_affine(x, scale, zero, axis, 0, 8)

    expected = _error(run, torch)
    assert expected is not None
    assert _error(run, ember) is expected


@pytest.mark.parametrize("zero_value,grad_factor", [(0.6, 1.0), (2.5, 0.5), (-1.4, 2.0)])
def test_learnable_per_tensor(zero_value, grad_factor):
    ours, theirs = _pair(_inputs(seed=3), requires_grad=True)
    scale_ours, scale_theirs = _pair(np.array([0.3], dtype=np.float32), requires_grad=True)
    zero_ours, zero_theirs = _pair(np.array([zero_value], dtype=np.float32), requires_grad=True)
    y = ember._fake_quantize_learnable_per_tensor_affine(ours, scale_ours, zero_ours, -8, 7, grad_factor)
    expected = torch._fake_quantize_learnable_per_tensor_affine(theirs, scale_theirs, zero_theirs, -8, 7,
                                                                grad_factor)
    _same(y, expected)
    assert type(y.grad_fn).__name__ == type(expected.grad_fn).__name__
    weights = np.linspace(-1, 2, y.numel(), dtype=np.float32).reshape(y.shape)
    (y * ember.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    _same(ours.grad, theirs.grad)
    # the scale and zero-point gradients are sums over the elements: the summation order may differ
    np.testing.assert_allclose(scale_ours.grad.numpy(), scale_theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zero_ours.grad.numpy(), zero_theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert scale_ours.grad.shape == (1,)


@pytest.mark.parametrize("axis", [0, 1])
def test_learnable_per_channel(axis):
    values = _inputs(seed=5)
    ours, theirs = _pair(values, requires_grad=True)
    channels = values.shape[axis]
    scale = np.linspace(0.1, 0.9, channels).astype(np.float32)
    zero = np.linspace(-2.6, 3.4, channels).astype(np.float32)
    scale_ours, scale_theirs = _pair(scale, requires_grad=True)
    zero_ours, zero_theirs = _pair(zero, requires_grad=True)
    y = ember._fake_quantize_learnable_per_channel_affine(ours, scale_ours, zero_ours, axis, -8, 7, 0.5)
    expected = torch._fake_quantize_learnable_per_channel_affine(theirs, scale_theirs, zero_theirs, axis, -8, 7,
                                                                 0.5)
    _same(y, expected)
    assert type(y.grad_fn).__name__ == type(expected.grad_fn).__name__
    y.sum().backward()
    expected.sum().backward()
    _same(ours.grad, theirs.grad)
    np.testing.assert_allclose(scale_ours.grad.numpy(), scale_theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(zero_ours.grad.numpy(), zero_theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_not_methods():
    assert not hasattr(ember.Tensor, "fake_quantize_per_tensor_affine")
    assert not hasattr(torch.Tensor, "fake_quantize_per_tensor_affine")
