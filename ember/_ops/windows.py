"""Window functions (hann, hamming, bartlett, blackman, kaiser) and the short-time Fourier transform.

Windows are factories: their values are computed on the host in double precision, as the other range
factories in creation.py are, then rounded to the requested dtype and placed on the device.  A `periodic`
window of length N is the symmetric window of length N + 1 without its last value (what spectral analysis
wants: the window tiles when repeated).

stft and istft follow torch's SpectralOps.cpp step by step and are composites of ember ops (pad, as_strided
framing, the fft primitives, overlap-add by shifted sums), so autograd runs through them.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._api import export
from .fft_ops import _norm_mode, fft_c2c, fft_c2r, fft_r2c

_TENSOR_OPTIONS = ("TensorOptions(dtype={}, device=cpu, layout=Strided (default), requires_grad=false (default), "
                   "pinned_memory=false, memory_format=(nullopt))")


def _window(name: str, window_length: int, periodic: bool, values, dtype, layout, device,
            requires_grad: bool) -> Tensor:
    """Shared checks, the periodic trick, and placement; `values(m)` gives the symmetric window of length m > 1."""
    from .creation import _finish

    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if dtype.is_complex:
        kind = "ComplexFloat" if dtype is dt.complex64 else "ComplexDouble"
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{kind}'")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: "
                           + _TENSOR_OPTIONS.format(dt.CPP_TYPE_NAMES.get(dtype.name, dtype.name)))
    if window_length == 0:
        array = np.zeros(0)
    elif window_length == 1:
        array = np.ones(1)
    else:
        length = window_length + 1 if periodic else window_length
        array = values(length)[:window_length]
    return _finish(array.astype(dtype.np_dtype), dtype, device, requires_grad)


def _cosine_sum(coefficients):
    """The generalized cosine window sum_k (-1)^k a_k cos(2 pi k n / (m - 1))."""

    def values(m):
        phase = 2 * math.pi * np.arange(m) / (m - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))

    return values


@export(method=False)
def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                requires_grad: bool = False) -> Tensor:
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, _cosine_sum((0.5, 0.5)), dtype, layout, device,
                   requires_grad)


@export(method=False)
def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hamming window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, _cosine_sum((alpha, beta)), dtype, layout, device,
                   requires_grad)


@export(method=False)
def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, _cosine_sum((0.42, 0.5, 0.08)), dtype, layout,
                   device, requires_grad)


def _bartlett(m):
    return 1 - np.abs(2 * np.arange(m) / (m - 1) - 1)


@export(method=False)
def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """The triangular (Bartlett) window: 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, _bartlett, dtype, layout, device, requires_grad)


@export(method=False)
def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""

    def values(m):
        alpha = (m - 1) / 2.0
        ratio = (np.arange(m) - alpha) / alpha
        return np.i0(beta * np.sqrt(np.maximum(1 - ratio * ratio, 0.0))) / np.i0(beta)

    return _window("kaiser_window", window_length, periodic, values, dtype, layout, device, requires_grad)


# ---------------------------------------------------------------- stft


_TENSOR_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "complex64": "ComplexFloatTensor",
                 "complex128": "ComplexDoubleTensor", "int64": "LongTensor", "int32": "IntTensor",
                 "float16": "HalfTensor", "bfloat16": "BFloat16Tensor", "bool": "BoolTensor"}
# istft's REPR names the input by its type (CPUComplexFloatType), stft's by its tensor class
_CPU_TYPES = {"complex64": "CPUComplexFloatType", "complex128": "CPUComplexDoubleType",
              "complex32": "CPUComplexHalfType", "float32": "CPUFloatType", "float64": "CPUDoubleType"}


def _window_text(window) -> str:
    if window is None:
        return "None"
    return f"torch.{_TENSOR_NAMES.get(window._dtype.name, 'Tensor')}{{[{', '.join(str(s) for s in window.shape)}]}}"


def _describe(input: Tensor, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
              align_to_window) -> str:
    """torch's REPR prefix of stft errors: stft(torch.FloatTensor[20], n_fft=8, ...)."""
    kind = _TENSOR_NAMES.get(input._dtype.name, "Tensor")
    shape = ", ".join(str(s) for s in input.shape)
    window_text = _window_text(window)

    def flag(value):
        return "None" if value is None else str(int(value))

    return (f"stft(torch.{kind}[{shape}], n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}, "
            f"window={window_text}, normalized={int(normalized)}, onesided={flag(onesided)}, "
            f"return_complex={flag(return_complex)}, align_to_window={flag(align_to_window)})")


def _pad_signal(input: Tensor, amount: int, mode: str) -> Tensor:
    """stft's centring pad of the last dim by `amount` on both sides, written with slices, flips and cat so it
    stays on the device; unusual cases (and torch's errors for them) go through F.pad as torch's wrapper does."""
    from .movement import cat

    length = input.shape[-1] if input.ndim else 0
    simple = input.ndim in (1, 2) and amount > 0 and mode in ("reflect", "replicate", "circular", "constant")
    if not simple or (mode == "reflect" and amount >= length) or (mode == "circular" and amount > length):
        from ..nn.functional import pad

        signal_dim = input.ndim
        extended = [1] * (3 - signal_dim) + list(input.shape)
        padded = pad(input.reshape(extended), [amount, amount], mode)
        return padded.reshape(padded.shape[-signal_dim:])
    if mode == "reflect":
        left, right = input[..., 1:amount + 1].flip(-1), input[..., length - amount - 1:length - 1].flip(-1)
    elif mode == "replicate":
        shape = tuple(input.shape[:-1]) + (amount,)
        left, right = input[..., :1].expand(shape), input[..., length - 1:].expand(shape)
    elif mode == "circular":
        left, right = input[..., length - amount:], input[..., :amount]
    else:
        left = right = input.new_zeros(tuple(input.shape[:-1]) + (amount,))
    return cat([left, input, right], -1)


def _centered_window(window, win_length: int, n_fft: int, like: Tensor) -> Tensor | None:
    """The window zero-padded on both sides to n_fft (a rectangle of ones when none is given)."""
    from .creation import ones, zeros
    from .movement import cat

    if win_length == n_fft:
        return window
    if window is None:
        window = ones(win_length, dtype=like.dtype, device=like.device)
    left = (n_fft - win_length) // 2
    right = n_fft - win_length - left
    return cat([zeros(left, dtype=window.dtype, device=window.device), window,
                zeros(right, dtype=window.dtype, device=window.device)])


@export(method=True)
def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform: ffts of windowed frames, shape (B?, n_fft // 2 + 1 or n_fft, frames)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        input = _pad_signal(input, n_fft // 2, pad_mode)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    complex_window = window is not None and window._dtype.is_complex
    resolved_complex = input._dtype.is_complex or complex_window if return_complex is None else return_complex
    prefix = _describe(input, n_fft, hop_length, win_length, window, normalized, onesided, return_complex,
                       align_to_window)
    if not resolved_complex:
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=2)
    if input._dtype.category < 2:
        raise RuntimeError(f"{prefix} : expected a tensor of floating point or complex values")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{prefix} : expected a 1D or 2D tensor")
    frames = input.unsqueeze(0) if input.ndim == 1 else input
    length = frames.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{prefix} : expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"{prefix} : expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"{prefix} : expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{prefix} : expected a 1D window tensor of size equal to win_length={win_length}, but "
                           f"got window with size [{', '.join(str(s) for s in window.shape)}]")
    full_window = _centered_window(window, win_length, n_fft, frames)
    if not center and align_to_window:
        # frames start where the window's nonzero part starts: pad so the centred window lines up with sample 0
        from .creation import zeros
        from .movement import cat

        left = (n_fft - win_length) // 2
        right = n_fft - win_length - left
        batch = frames.shape[0]
        frames = cat([zeros(batch, left, dtype=frames.dtype, device=frames.device), frames,
                      zeros(batch, right, dtype=frames.dtype, device=frames.device)], 1)
        length = frames.shape[1]
    frames = frames.unfold(-1, n_fft, hop_length)  # (batch, 1 + (length - n_fft) // hop, n_fft)
    if full_window is not None:
        frames = frames * full_window
    is_complex = frames._dtype.is_complex
    onesided = not is_complex if onesided is None else onesided
    mode = 1 if normalized else 0
    if is_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = fft_c2c(frames, (2,), mode, True)
    else:
        out = fft_r2c(frames, (2,), mode, onesided)
    out = out.transpose(1, 2)
    if input.ndim == 1:
        out = out.squeeze(0)
    if resolved_complex:
        return out
    from .movement import stack

    return stack([out.real, out.imag], -1)


def _overlap_add(frames: Tensor, hop: int, total: int) -> Tensor:
    """torch's unfold_backward for (B, frames, n): frame f added at offset f * hop of a length-`total` signal.

    Frames are cut into ceil(n / hop) chunks of `hop` samples; chunk k of frame f lands in block f + k, so each
    chunk index is one shifted (zero-padded) copy of the frames, summed."""
    from .creation import zeros
    from .movement import cat

    batch, count, n = frames.shape
    chunks = -(-n // hop)
    padded = chunks * hop
    if padded > n:
        frames = cat([frames, zeros(batch, count, padded - n, dtype=frames.dtype, device=frames.device)], 2)
    blocks = frames.reshape(batch, count, chunks, hop)
    result = None
    for k in range(chunks):
        pieces = [blocks[:, :, k]]
        if k:
            pieces.insert(0, zeros(batch, k, hop, dtype=frames.dtype, device=frames.device))
        if chunks - 1 - k:
            pieces.append(zeros(batch, chunks - 1 - k, hop, dtype=frames.dtype, device=frames.device))
        shifted = cat(pieces, 1) if len(pieces) > 1 else pieces[0]
        result = shifted if result is None else result + shifted
    return result.reshape(batch, (count + chunks - 1) * hop)[:, :total]


@export(method=True)
def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse short-time Fourier transform: inverse ffts of the frames, windowed, overlap-added and
    divided by the overlap-added squared window (the least-squares estimate of the signal)."""
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied, which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    if not input._dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    prefix = (f"istft({_CPU_TYPES.get(input._dtype.name, 'CPUType')}{list(input.shape)}, n_fft={n_fft}, "
              f"hop_length={hop_length}, win_length={win_length}, window={_window_text(window)}, "
              f"center={int(center)}, normalized={int(normalized)}, "
              f"onesided={'None' if onesided is None else int(onesided)}, "
              f"length={'None' if length is None else length}, return_complex={int(return_complex)}) ")
    if input.numel() == 0:
        raise RuntimeError(f"{prefix}: input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{prefix}: expected a tensor with three or four dimensions of real values "
                           f"(channel, fft_size, n_frame, 2), or two or three dimensions of complex values, but got "
                           f"{input.ndim} dimensions")
    frames_count, fft_size = input.shape[-1], input.shape[-2]
    expected_length = n_fft + hop_length * (frames_count - 1)
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{prefix}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{prefix}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError("istft expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError("istft expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{prefix}: Invalid window shape. window has to be 1D and length of `win_length`")
    from .creation import ones

    real_type = input._dtype.to_real()
    base_window = window if window is not None else ones(win_length, dtype=real_type, device=input.device)
    full_window = _centered_window(base_window, win_length, n_fft, input)
    spectra = input.unsqueeze(0) if input.ndim == 2 else input
    spectra = spectra.transpose(1, 2)  # (channel, frames, fft_size)
    mode = _norm_mode("ortho" if normalized else "backward", False)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = fft_c2c(spectra, (2,), mode, False)
    else:
        if window is not None and window._dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            spectra = spectra.narrow(-1, 0, n_fft // 2 + 1)
        frames = fft_c2r(spectra, (2,), mode, n_fft)
    signal = _overlap_add(frames * full_window, hop_length, expected_length)
    squared = (full_window * full_window).reshape(1, 1, n_fft).expand(1, frames_count, n_fft)
    envelope = _overlap_add(squared, hop_length, expected_length)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    elif center:
        end = expected_length - n_fft // 2
    else:
        end = expected_length
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    lowest = float(envelope.abs().min()) if envelope.numel() else 1.0
    if lowest < 1e-11:
        # torch prints the failed check's boolean tensor
        raise RuntimeError(f"{prefix}window overlap add min: 1\n[ CPUBoolType{{}} ]")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > expected_length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with "
                      "zeros in the tail. Please check your center and hop_length settings.", UserWarning,
                      stacklevel=2)
        from ..nn.functional import pad

        signal = pad(signal, [0, end - expected_length])
    return signal
