"""OpInfos for torch.fft and stft.

The generic gradient tests differentiate real (floating) outputs only, so a complex result is returned as
(result, result.real, result.imag): forward parity still checks the complex values and dtype, and gradients
reach both parts.  Complex inputs for the gradient tests (which sample float64) come as a pair of real arrays
joined inside the call (`complex_pair=True`), so gradients with respect to complex inputs are checked too.
"""

from __future__ import annotations

import numpy as np

from ..core import COMPLEX, ErrorSample, OpInfo, Sample, make_array

FFT_TYPES = ("float32", "float64", "int64") + COMPLEX
REAL_TYPES = ("float32", "float64", "int64")
LOOSE = {"float32": (1e-5, 1e-4), "complex64": (1e-5, 1e-4)}


def _parts(result):
    if hasattr(result, "is_complex") and result.is_complex():
        return result, result.real, result.imag
    return result


def _fft_call(name: str):
    def run(lib, *args, complex_pair: bool = False, **kwargs):
        x = args[0] + args[1] * 1j if complex_pair else args[0]
        return _parts(getattr(lib.fft, name)(x, **kwargs))

    return run


def _input(shape, dtype, rng, complex_input: bool):
    """One operand, or a (real, imag) pair to join when a complex input is wanted from a real dtype."""
    if complex_input and dtype in ("float32", "float64"):
        return (make_array(shape, dtype, rng, -2, 2), make_array(shape, dtype, rng, -2, 2)), {"complex_pair": True}
    return (make_array(shape, dtype, rng, -2, 2),), {}


def _samples_1d(complex_input: bool = False):
    configs = [((6,), {}), ((3, 5), {}), ((3, 4), {"n": 6}), ((3, 4), {"n": 3, "dim": 0}),
               ((2, 5), {"norm": "ortho"}), ((2, 4), {"norm": "forward", "dim": 0}), ((1,), {}),
               ((1, 4), {"dim": 0, "n": 2}), ((4, 3), {"norm": "backward"})]

    def samples(dtype, rng):
        out = []
        for shape, kwargs in configs:
            args, extra = _input(shape, dtype, rng, complex_input)
            out.append(Sample(args, dict(kwargs, **extra)))
        args, extra = _input((4, 3), dtype, rng, complex_input)
        out.append(Sample(args, extra, noncontiguous=True, name="noncontiguous"))
        return out

    return samples


def _c2r_samples(dtype, rng):
    """irfft/hfft: the default output length 2 * (size - 1) needs a last dim of at least 2."""
    configs = [((5,), {}), ((3, 4), {}), ((3, 4), {"n": 5}), ((4, 3), {"n": 8, "dim": 0}), ((2, 3), {"n": 1}),
               ((2, 5), {"norm": "ortho"}), ((2, 4), {"norm": "forward"}), ((3, 1), {"dim": 0})]
    out = []
    for shape, kwargs in configs:
        args, extra = _input(shape, dtype, rng, True)
        out.append(Sample(args, dict(kwargs, **extra)))
    args, extra = _input((4, 3), dtype, rng, True)
    out.append(Sample(args, extra, noncontiguous=True, name="noncontiguous"))
    return out


def _samples_nd(two_d: bool, complex_input: bool = False, c2r: bool = False):
    if two_d:
        configs = [((3, 4), {}), ((2, 3, 4), {}), ((2, 3, 4), {"s": (4, 6)}), ((2, 3, 4), {"dim": (0, 2)}),
                   ((3, 4), {"s": (-1, 5), "norm": "ortho"}), ((2, 3, 4), {"dim": (-1, 0), "norm": "forward"})]
    else:
        configs = [((3, 4), {}), ((2, 3, 4), {}), ((2, 3, 4), {"s": (4, 6)}), ((2, 3, 4), {"dim": (0, 2)}),
                   ((3, 4), {"s": (2, 5), "dim": (1, 0), "norm": "ortho"}), ((2, 3, 4), {"dim": 1}),
                   ((2, 3, 4), {"dim": (-1, 0), "norm": "forward"}), ((5,), {"s": (-1,)})]
        if not c2r:
            configs.append(((), {}))

    def samples(dtype, rng):
        out = []
        for shape, kwargs in configs:
            args, extra = _input(shape, dtype, rng, complex_input)
            out.append(Sample(args, dict(kwargs, **extra)))
        args, extra = _input((3, 4), dtype, rng, complex_input)
        out.append(Sample(args, extra, noncontiguous=True, name="noncontiguous"))
        return out

    return samples


def _f32(*shape):
    return np.ones(shape, np.float32)


def _c64(*shape):
    return np.ones(shape, np.complex64)


def _error(args, error, match, **kwargs):
    return ErrorSample(Sample(args, kwargs), error, match)


def fft_errors():
    return [
        _error((_f32(3),), RuntimeError, 'Invalid normalization mode: "bad"', norm="bad"),
        _error((_f32(3, 3),), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2",
               dim=2),
        _error((_f32(3),), RuntimeError, r"Invalid number of data points \(0\) specified", n=0),
        _error((np.ones((), np.float32),), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
        _error((np.ones(3, np.float16),), RuntimeError, "Unsupported dtype Half"),
    ]


def rfft_errors():
    return [_error((_c64(3),), RuntimeError, "rfft expects a real input tensor, but got ComplexFloat")]


def irfft_errors():
    return [
        _error((_c64(1),), RuntimeError, r"Invalid number of data points \(0\) specified"),
        _error((_c64(4),), RuntimeError, 'Invalid normalization mode: "x"', norm="x"),
    ]


def fftn_errors():
    return [
        _error((_f32(3, 3),), RuntimeError, "FFT dims must be unique", dim=(0, 0)),
        _error((_f32(3, 3),), RuntimeError, "When given, dim and shape arguments must have the same length",
               s=(2,), dim=(0, 1)),
        _error((_f32(3, 3),), RuntimeError, "Got shape with 3 values but input tensor only has 2 dimensions.",
               s=(2, 2, 2)),
        _error((_f32(3, 3),), RuntimeError, r"Invalid number of data points \(0\) specified", s=(0, 2)),
    ]


def rfftn_errors():
    return [
        _error((np.ones((), np.float32),), RuntimeError, "rfftn must transform at least one axis"),
        _error((_c64(3, 3),), RuntimeError, "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    ]


def _fft_op(name, samples, dtypes=FFT_TYPES, errors=None, suffix=""):
    return OpInfo(name=f"fft.{name}{suffix}", call=_fft_call(name), sample_inputs=samples, dtypes=dtypes,
                  tolerances=LOOSE, grad_tolerance=(1e-8, 1e-8), error_inputs=errors)


# ---------------------------------------------------------------- stft


def _stft_call(lib, x, *rest, complex_pair=False, **kwargs):
    if complex_pair:
        x, rest = x + rest[0] * 1j, rest[1:]
    if rest:
        kwargs["window"] = rest[0]
    return _parts(lib.stft(x, **kwargs))


def stft_samples(dtype, rng):
    configs = [((16,), {"n_fft": 8, "return_complex": True}, 8),
               ((2, 20), {"n_fft": 8, "hop_length": 3, "return_complex": True}, 8),
               ((12,), {"n_fft": 6, "win_length": 4, "hop_length": 2, "return_complex": True,
                        "normalized": True}, 4),
               ((18,), {"n_fft": 8, "center": False, "onesided": False, "return_complex": True}, 8),
               ((14,), {"n_fft": 4, "pad_mode": "constant", "return_complex": True}, None),
               ((2, 13), {"n_fft": 6, "pad_mode": "replicate", "hop_length": 2, "return_complex": True}, 6),
               ((15,), {"n_fft": 8, "win_length": 5, "center": False, "align_to_window": True, "hop_length": 3,
                        "return_complex": True}, 5),
               ((12,), {"n_fft": 4, "return_complex": False}, 4)]
    out = []
    for shape, kwargs, window in configs:
        if dtype in COMPLEX and kwargs.get("return_complex") is False:
            continue
        args = (make_array(shape, dtype, rng, -2, 2),)
        if window is not None:
            args = args + (make_array((window,), dtype, rng, 0.5, 1.5),)
        out.append(Sample(args, dict(kwargs)))
    if dtype == "float64":
        pair = (make_array((10,), dtype, rng, -2, 2), make_array((10,), dtype, rng, -2, 2))
        out.append(Sample(pair, {"n_fft": 4, "return_complex": True, "complex_pair": True}, name="complex input"))
    return out


def stft_errors():
    x = np.ones(20, np.float32)
    return [
        _error((x,), RuntimeError, "stft requires the return_complex parameter be given for real inputs", n_fft=8),
        _error((x,), RuntimeError, "expected 0 < n_fft < 20, but got n_fft=30", n_fft=30, center=False,
               return_complex=True),
        _error((x,), RuntimeError, "expected hop_length > 0, but got hop_length=0", n_fft=8, hop_length=0,
               return_complex=True),
        _error((x,), RuntimeError, "expected 0 < win_length <= n_fft, but got win_length=9", n_fft=8, win_length=9,
               return_complex=True),
        _error((x, np.ones(7, np.float32)), RuntimeError, "expected a 1D window tensor of size equal to win_length=8",
               n_fft=8, return_complex=True),
        _error((np.ones(20, np.int64),), RuntimeError, "expected a tensor of floating point or complex values",
               n_fft=8, return_complex=True),
        _error((np.ones((2, 2, 5), np.float32),), RuntimeError, "expected a 1D or 2D tensor", n_fft=4,
               return_complex=True),
        _error((x, np.ones(8, np.complex64)), RuntimeError, "Cannot have onesided output if window or input is complex",
               n_fft=8, onesided=True, return_complex=True),
        _error((x,), RuntimeError, "stft align_to_window should only be set when center = false", n_fft=8,
               align_to_window=True, return_complex=True),
    ]


OPS = [
    _fft_op("fft", _samples_1d(), errors=fft_errors),
    _fft_op("ifft", _samples_1d()),
    _fft_op("fft", _samples_1d(complex_input=True), suffix="_complex"),
    _fft_op("ifft", _samples_1d(complex_input=True), suffix="_complex"),
    _fft_op("rfft", _samples_1d(), REAL_TYPES, rfft_errors),
    _fft_op("ihfft", _samples_1d(), REAL_TYPES),
    _fft_op("irfft", _c2r_samples, errors=irfft_errors),
    _fft_op("hfft", _c2r_samples),
    _fft_op("fftn", _samples_nd(False), errors=fftn_errors),
    _fft_op("ifftn", _samples_nd(False, True)),
    _fft_op("fft2", _samples_nd(True, True)),
    _fft_op("ifft2", _samples_nd(True)),
    _fft_op("rfftn", _samples_nd(False), REAL_TYPES, rfftn_errors),
    _fft_op("rfft2", _samples_nd(True), REAL_TYPES),
    _fft_op("irfftn", _samples_nd(False, True, c2r=True)),
    _fft_op("irfft2", _samples_nd(True, True, c2r=True)),
    OpInfo(name="stft", call=_stft_call, sample_inputs=stft_samples, dtypes=("float32", "float64") + COMPLEX,
           tolerances=LOOSE, grad_tolerance=(1e-8, 1e-8), error_inputs=stft_errors),
]
