"""torch.fft helpers, window functions and istft against real PyTorch (the transforms and stft are in the op
database: ember/testing/opdb/families/fft.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

WINDOWS = ["hann_window", "hamming_window", "bartlett_window", "blackman_window", "kaiser_window"]


def _close(actual, expected, tolerance=1e-6):
    assert tuple(actual.shape) == tuple(expected.shape)
    assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(actual.detach().numpy(), expected.detach().resolve_conj().numpy(), rtol=tolerance,
                               atol=tolerance)


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 5, 8])
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_windows(name, length, periodic, dtype):
    actual = getattr(ember, name)(length, periodic, dtype=getattr(ember, dtype))
    expected = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
    _close(actual, expected)


def test_window_parameters_and_options():
    _close(ember.kaiser_window(7, False, 3.0), torch.kaiser_window(7, False, 3.0))
    _close(ember.hamming_window(7, False, 0.3, 0.2), torch.hamming_window(7, False, 0.3, 0.2))
    _close(ember.hamming_window(6, True, 0.5), torch.hamming_window(6, True, 0.5))
    _close(ember.hann_window(5), torch.hann_window(5))
    assert ember.hann_window(5, requires_grad=True).requires_grad
    assert ember.hann_window(5, dtype=ember.float16).dtype == ember.float16
    meta = ember.blackman_window(6, device="meta")
    assert meta.device.type == "meta" and tuple(meta.shape) == (6,)


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors(name):
    with pytest.raises(RuntimeError, match=f"{name} requires non-negative window_length, got window_length=-1"):
        getattr(ember, name)(-1)
    with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
        getattr(ember, name)(3, dtype=ember.int64)
    with pytest.raises(RuntimeError):
        getattr(torch, name)(3, dtype=torch.int64)


@pytest.mark.parametrize("n", [0, 1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.3])
def test_fftfreq(n, d):
    _close(ember.fft.fftfreq(n, d), torch.fft.fftfreq(n, d))
    _close(ember.fft.rfftfreq(n, d), torch.fft.rfftfreq(n, d))
    _close(ember.fft.fftfreq(n, d, dtype=ember.float64), torch.fft.fftfreq(n, d, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="fftfreq requires a floating point or complex dtype"):
        ember.fft.fftfreq(n, dtype=ember.int64)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_fftshift(dim):
    values = np.arange(15.0).reshape(3, 5)
    for name in ("fftshift", "ifftshift"):
        _close(getattr(ember.fft, name)(ember.tensor(values), dim=dim),
               getattr(torch.fft, name)(torch.tensor(values), dim=dim))
    x = ember.tensor(values, requires_grad=True)
    ember.fft.ifftshift(ember.fft.fftshift(x, dim), dim).sum().backward()
    assert np.all(x.grad.numpy() == 1)


def test_result_dtypes():
    for source in ("float32", "float64", "int64", "bool", "complex64", "complex128"):
        data = torch.ones(4, dtype=getattr(torch, source))
        mine = ember.ones(4, dtype=getattr(ember, source))
        for name in ("fft", "ifft", "irfft", "hfft", "fftn"):
            assert str(getattr(ember.fft, name)(mine).dtype).split(".")[-1] == \
                str(getattr(torch.fft, name)(data).dtype).split(".")[-1], (name, source)


def test_out():
    x = np.random.default_rng(0).standard_normal((3, 6))
    out = ember.empty(0, dtype=ember.complex128)
    result = ember.fft.fft(ember.tensor(x), out=out)
    assert result is out
    _close(out, torch.fft.fft(torch.tensor(x)))
    out = ember.empty(0, dtype=ember.float64)
    ember.fft.irfft(ember.tensor(x + 1j), out=out)
    _close(out, torch.fft.irfft(torch.tensor(x + 1j)))
    with pytest.raises(RuntimeError, match="fft expects a complex output tensor, but got Float"):
        ember.fft.fft(ember.ones(3), out=ember.empty(3))
    with pytest.raises(RuntimeError, match="irfft expects a floating point output tensor, but got ComplexFloat"):
        ember.fft.irfft(ember.ones(3, dtype=ember.complex64), out=ember.empty(3, dtype=ember.complex64))


def test_roundtrip_and_double_backward():
    x = ember.tensor(np.random.default_rng(1).standard_normal((4, 6)), requires_grad=True)
    np.testing.assert_allclose(ember.fft.irfftn(ember.fft.rfftn(x), s=x.shape).detach().numpy(),
                               x.detach().numpy(), atol=1e-12)
    assert ember.autograd.gradgradcheck(lambda t: ember.fft.irfft(ember.fft.rfft(t) * 2).abs(), (x[:2, :4].detach()
                                        .clone().requires_grad_(True),))


ISTFT_CASES = [
    ((2, 40), {"n_fft": 8, "hop_length": 2}, "hann"),
    ((33,), {"n_fft": 8}, "hann"),
    ((30,), {"n_fft": 8, "hop_length": 3, "win_length": 6}, "hann"),
    ((30,), {"n_fft": 8, "hop_length": 4, "center": False}, "ones"),
    ((30,), {"n_fft": 8, "hop_length": 2, "normalized": True}, "hann"),
    ((2, 20), {"n_fft": 6, "hop_length": 2, "onesided": False}, "hann"),
]


@pytest.mark.parametrize("shape,kwargs,window", ISTFT_CASES)
@pytest.mark.parametrize("trim", [None, 0, 3])
def test_istft(shape, kwargs, window, trim):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape)
    length = None if trim is None else shape[-1] - trim
    results = {}
    for lib in (ember, torch):
        size = kwargs.get("win_length", kwargs["n_fft"])
        w = lib.hann_window(size, dtype=lib.float64) if window == "hann" else lib.ones(size, dtype=lib.float64)
        spectrum = lib.stft(lib.tensor(x), window=w, return_complex=True, **kwargs).detach().requires_grad_(True)
        results[lib.__name__] = spectrum, lib.istft(spectrum, window=w, length=length, **kwargs)
    (mine_in, mine), (theirs_in, theirs) = results["ember"], results["torch"]
    _close(mine, theirs, 1e-10)
    if trim == 0 and kwargs.get("center", True):
        np.testing.assert_allclose(mine.detach().numpy(), x, atol=1e-10)
    cotangent = rng.standard_normal(tuple(theirs.shape))
    (grad,) = ember.autograd.grad([mine], [mine_in], [ember.tensor(cotangent)])
    (expected,) = torch.autograd.grad([theirs], [theirs_in], [torch.tensor(cotangent)])
    _close(grad, expected, 1e-10)


def test_istft_errors_and_padding():
    spectrum = ember.stft(ember.randn(20), 8, window=ember.hann_window(8), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ember.istft(spectrum.real, 8, window=ember.hann_window(8))
    with pytest.raises(RuntimeError, match="istft expected 0 < hop_length <= win_length"):
        ember.istft(spectrum, 8, hop_length=9, window=ember.hann_window(8))
    with pytest.raises(RuntimeError, match="window overlap add min"):
        ember.istft(spectrum, 8, window=ember.zeros(8))
    with pytest.raises(RuntimeError, match="match n_fft / 2 \\+ 1 when onesided=True"):
        ember.istft(spectrum, 10, onesided=True, window=ember.hann_window(10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        longer = ember.istft(spectrum, 8, window=ember.hann_window(8), length=30)
        expected = torch.istft(torch.tensor(spectrum.detach().numpy()), 8, window=torch.hann_window(8), length=30)
    _close(longer, expected, 1e-5)


def test_stft_return_complex_false_and_methods():
    x = np.random.default_rng(3).standard_normal(16).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine = ember.tensor(x).stft(8, window=ember.hann_window(8), return_complex=False)
        theirs = torch.tensor(x).stft(8, window=torch.hann_window(8), return_complex=False)
    _close(mine, theirs, 1e-5)
    spectrum = ember.tensor(x).stft(8, window=ember.hann_window(8), return_complex=True)
    _close(spectrum.istft(8, window=ember.hann_window(8), length=16), torch.tensor(x), 1e-5)
