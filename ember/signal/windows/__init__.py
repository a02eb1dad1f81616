"""torch.signal.windows: SciPy-style window functions (bartlett, blackman, cosine, exponential, gaussian,
general_cosine, general_hamming, hamming, hann, kaiser, nuttall).

Each window is written, as torch writes it, as a short composite of ember ops (a `linspace` of phases, then
exp/sin/cos/i0 and a sum), so the values round the way torch's do, and a window made with requires_grad=True is
a non-leaf whose graph runs back to that linspace (torch's result has a grad_fn too).  torch's checks and
messages come first: a negative M, a layout other than strided, or a dtype other than float32/float64 raise
ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ... import _dtype as dt
from ..._tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _ember():
    """The ember package (imported late: ember.signal is imported while ember itself is being set up)."""
    import ember

    return ember


def _checks(function_name: str, M: int, dtype, layout) -> None:
    """torch's _window_function_checks, run before any window is computed."""
    ember = _ember()
    if M < 0:
        raise ValueError(f"{function_name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{function_name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dt.float32, dt.float64):
        raise ValueError(f"{function_name} expects float32 or float64 dtypes, got: {dtype}")


def _default_dtype(dtype):
    return dt.get_default_dtype() if dtype is None else dtype


def _empty(dtype, layout, device, requires_grad) -> Tensor:
    return _ember().empty((0,), dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def _single(dtype, layout, device, requires_grad) -> Tensor:
    return _ember().ones((1,), dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def _phases(start, end, M, dtype, layout, device, requires_grad) -> Tensor:
    """linspace(start, end, M): the sample positions every window is a function of."""
    return _ember().linspace(start=start, end=end, steps=M, dtype=dtype, layout=layout, device=device,
                             requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window exp(-|n - center| / tau); center defaults to the middle."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _phases(-center * constant, (-center + (M - 1)) * constant, M, dtype, layout, device, requires_grad)
    return ember.exp(-ember.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window sin(pi (n + 1/2) / M), SciPy's definition."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _phases(start * constant, (start + (M - 1)) * constant, M, dtype, layout, device, requires_grad)
    return ember.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Gaussian window exp(-(n / (2 std))^2) about the middle of the window."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _phases(start * constant, (start + (M - 1)) * constant, M, dtype, layout, device, requires_grad)
    return ember.exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """The Kaiser window I0(beta sqrt(1 - (2n / N - 1)^2)) / I0(beta), N = M - 1 (sym) or M."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    if M == 1:
        return _single(dtype, layout, device, requires_grad)
    # beta as a tensor of the window's dtype, as torch does (it keeps beta^2 - k^2 from going negative)
    beta = ember.tensor(beta, dtype=dtype, device=device)
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = ember.minimum(beta, start + (M - 1) * constant)
    k = _phases(start, end, M, dtype, layout, device, requires_grad)
    return ember.i0(ember.sqrt(beta * beta - ember.pow(k, 2))) / ember.i0(beta)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hamming window 0.54 - 0.46 cos(2 pi n / (M - 1))."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Hann window 1/2 - 1/2 cos(2 pi n / (M - 1))."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Blackman window 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))."""
    layout = _ember().strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window 1 - |2n / (M - 1) - 1|."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("bartlett", M, dtype, layout)
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    if M == 1:
        return _single(dtype, layout, device, requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _phases(start, start + (M - 1) * constant, M, dtype, layout, device, requires_grad)
    return 1 - ember.abs(k)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    """The generalized cosine window sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    ember = _ember()
    layout = ember.strided if layout is None else layout
    dtype = _default_dtype(dtype)
    _checks("general_cosine", M, dtype, layout)
    if M == 0:
        return _empty(dtype, layout, device, requires_grad)
    if M == 1:
        return _single(dtype, layout, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _phases(0, (M - 1) * constant, M, dtype, layout, device, requires_grad)
    a_i = ember.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                       requires_grad=requires_grad)
    i = ember.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device, requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * ember.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:
    """The generalized Hamming window alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
