"""Text rendering of tensors: a NumPy port of PyTorch's ``torch/_tensor_str.py``.

ember tensors print character-for-character like torch tensors (with
``ember.`` in place of ``torch.`` in dtype names), so that doctests, logs and
user expectations carry over unchanged.  The algorithm is torch's: one
``_Formatter`` per tensor (two for complex: real and imaginary parts) decides
between integer, fixed-point and scientific notation and a common column
width; the nested ``[...]`` text is then built recursively, summarising with
``...`` beyond ``threshold`` elements and wrapping rows at ``linewidth``.

Only NumPy is used here; the tensor's data arrives as a ``numpy.ndarray``.
Elements are formatted through Python ``float``/``int``/``complex`` objects
(as torch does via ``Tensor.tolist()``/``item()``), so the digits produced are
exactly torch's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = [
    "get_printoptions",
    "printoptions",
    "set_printoptions",
    "tensor_repr",
]


@dataclasses.dataclass
class _PrinterOptions:
    """Global print settings; field names and defaults mirror torch's."""

    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()

# Settings applied by ``set_printoptions(profile=...)``; unknown names are
# ignored, as in torch.
_PROFILES: dict[str, dict[str, Any]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set options for printing tensors (same semantics as ``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point for floating output (default 4).
        threshold: element count above which output is summarised (default 1000).
        edgeitems: items kept at each end of each summarised dimension (default 3).
        linewidth: characters per line before wrapping (default 80).
        profile: ``"default"``, ``"short"`` or ``"full"``; applied first, then
            overridden by any of the explicit options above.
        sci_mode: force scientific notation on (True) or off (False); None lets
            the formatter choose.  Like torch, every call sets this field, so
            omitting it resets it to None.
    """
    if profile is not None:
        for name, value in _PROFILES.get(profile, {}).items():
            setattr(PRINT_OPTS, name, value)
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return the current print options as a dict accepted by ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs: Any) -> Iterator[None]:
    """Temporarily change print options (arguments as for ``set_printoptions``)."""
    old_kwargs = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old_kwargs)


# ---------------------------------------------------------------------------
# dtype classification
# ---------------------------------------------------------------------------


def _is_floating(dtype_name: str) -> bool:
    """True for real floating dtypes (float16/32/64, bfloat16, float8 variants)."""
    return dtype_name.startswith(("float", "bfloat"))


def _is_complex(dtype_name: str) -> bool:
    """True for complex dtypes (complex32/64/128)."""
    return dtype_name.startswith("complex")


def _as_formattable(values: Any, dtype_name: str) -> np.ndarray:
    """Return ``values`` as an ndarray whose ``tolist()`` yields exact Python numbers.

    Narrow float types NumPy lacks natively (ml_dtypes' bfloat16, float8) are
    upcast to float32, which is exact and lets ordinary NumPy math run on them.
    """
    arr = np.asarray(values)
    if _is_floating(dtype_name) and arr.dtype not in (
        np.float16,
        np.float32,
        np.float64,
    ):
        arr = arr.astype(np.float32)
    return arr


# ---------------------------------------------------------------------------
# Element formatting
# ---------------------------------------------------------------------------


def _extreme_values(values: np.ndarray) -> list[float]:
    """Smallest and largest magnitudes among the positive and the negative values.

    The length of a number printed with ``.Nf`` or ``.Ne`` depends only on its
    sign and on a quantity monotone in its magnitude (integer digits, or
    exponent digits), so the widest rendering is always one of these at most
    four values.  This lets the formatter avoid a Python loop over every
    element while producing the same width as torch's loop.
    """
    out: list[float] = []
    for part in (values[values > 0], values[values < 0]):
        if part.size:
            magnitude = np.abs(part)
            out.append(float(part[np.argmin(magnitude)]))
            out.append(float(part[np.argmax(magnitude)]))
    return out


def _integer_width(values: np.ndarray) -> int:
    """Widest ``str()`` of the integers/bools in ``values`` (at least 1).

    ``str`` length is monotone in the value on each side of zero, so only the
    minimum and maximum need rendering.
    """
    if values.size == 0:
        return 1
    lo, hi = values.min().item(), values.max().item()
    return max(1, len(f"{lo}"), len(f"{hi}"))


class _Formatter:
    """Chooses one notation and column width for a set of real values.

    Mirrors ``torch._tensor_str._Formatter``: integral floats print as ``3.``
    (``int_mode``), and scientific notation is used when the nonzero finite
    magnitudes span more than 1000x, exceed 1e8 or fall below 1e-4, unless
    ``sci_mode`` is forced through the print options.
    """

    def __init__(self, values: np.ndarray, floating: bool) -> None:
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            self.max_width = _integer_width(flat)
        else:
            self._scan_floats(flat.astype(np.float64))

    def _scan_floats(self, flat: np.ndarray) -> None:
        """Pick int/sci mode and the width from the nonzero finite values."""
        nonzero_finite = flat[np.isfinite(flat) & (flat != 0)]
        if nonzero_finite.size == 0:
            return  # only zeros, nan and inf: keep int mode, width 1
        magnitude = np.abs(nonzero_finite)
        lo, hi = float(magnitude.min()), float(magnitude.max())
        self.int_mode = bool(np.all(nonzero_finite == np.ceil(nonzero_finite)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        precision = PRINT_OPTS.precision
        if self.sci_mode:
            spec, extra = f".{precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1  # room for the trailing "."
        else:
            spec, extra = f".{precision}f", 0
        widths = (len(format(v, spec)) + extra for v in _extreme_values(nonzero_finite))
        self.max_width = max(self.max_width, *widths)

    def width(self) -> int:
        """Column width every formatted element is right-aligned to."""
        return self.max_width

    def format(self, value: float) -> str:
        """Render one Python scalar, right-aligned to ``width()``."""
        if self.floating_dtype:
            if self.sci_mode:
                ret = format(value, f"{self.max_width}.{PRINT_OPTS.precision}e")
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = format(value, f".{PRINT_OPTS.precision}f")
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """Pairs a real-part and an imaginary-part formatter, as torch does."""

    def __init__(self, real: _Formatter, imag: _Formatter) -> None:
        self.real = real
        self.imag = imag

    def width(self) -> int:
        """Width of one ``a+bj`` element: both parts plus the ``j``."""
        return self.real.width() + self.imag.width() + 1

    def format(self, value: complex) -> str:
        """Render ``real+imagj``; the imaginary sign replaces the ``+``."""
        real_str = self.real.format(value.real)
        imag_str = (self.imag.format(value.imag) + "j").lstrip()
        if imag_str[0] in "+-":
            return real_str + imag_str
        return real_str + "+" + imag_str


_AnyFormatter = _Formatter | _ComplexFormatter


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


def _summarized_data(arr: np.ndarray) -> np.ndarray:
    """The elements that will actually be shown when summarising.

    Port of torch's ``get_summarized_data``, including its quirk that with
    ``edgeitems == 0`` a 1-d tensor keeps all its elements (``t[-0:]`` is the
    whole tensor) while higher-dimensional ones keep none.
    """
    edge = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if not edge:
        return arr if arr.ndim == 1 else arr[tuple(slice(0, 0) for _ in arr.shape)]
    index = [
        np.r_[0:edge, n - edge : n] if n > 2 * edge else np.arange(n) for n in arr.shape
    ]
    return arr[np.ix_(*index)]


def _vector_str(
    arr: np.ndarray, indent: int, summarize: bool, fmt: _AnyFormatter
) -> str:
    """Render a 1-d array, wrapping so lines fit in ``linewidth``."""
    edge = PRINT_OPTS.edgeitems
    element_length = fmt.width() + 2  # ", " between elements
    elements_per_line = max(
        1, math.floor((PRINT_OPTS.linewidth - indent) / element_length)
    )
    if summarize and not edge:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * edge:
        data = (
            [fmt.format(v) for v in arr[:edge].tolist()]
            + [" ..."]
            + [fmt.format(v) for v in arr[-edge:].tolist()]
        )
    else:
        data = [fmt.format(v) for v in arr.tolist()]
    lines = [
        ", ".join(data[i : i + elements_per_line])
        for i in range(0, len(data), elements_per_line)
    ]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(
    arr: np.ndarray, indent: int, summarize: bool, fmt: _AnyFormatter
) -> str:
    """Render an array of any rank; rows of an n-d array are separated by n-1 newlines."""
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt)
    edge = PRINT_OPTS.edgeitems
    size = arr.shape[0]
    if summarize and size > 2 * edge:
        slices = (
            [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(edge)]
            + ["..."]
            + [
                _nested_str(arr[i], indent + 1, summarize, fmt)
                for i in range(size - edge, size)
            ]
        )
    else:
        slices = [_nested_str(arr[i], indent + 1, summarize, fmt) for i in range(size)]
    separator = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + separator.join(slices) + "]"


def _tensor_str(arr: np.ndarray, indent: int, dtype_name: str) -> str:
    """Render the bracketed contents of a non-empty tensor."""
    summarize = arr.size > PRINT_OPTS.threshold
    shown = _summarized_data(arr) if summarize else arr
    fmt: _AnyFormatter
    if _is_complex(dtype_name):
        fmt = _ComplexFormatter(
            _Formatter(np.real(shown), floating=True),
            _Formatter(np.imag(shown), floating=True),
        )
    else:
        fmt = _Formatter(shown, floating=_is_floating(dtype_name))
    return _nested_str(arr, indent, summarize, fmt)


def _add_suffixes(tensor_str: str, suffixes: list[str], indent: int) -> str:
    """Append ``, key=value`` suffixes, moving one to a new line when it would overflow.

    The line-length bookkeeping (including its off-by-two when the text has no
    newline) is copied from torch so that wrapping decisions match.
    """
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def _has_default_dtype(dtype_name: str, default_dtype_name: str) -> bool:
    """Whether torch would omit ``dtype=`` for a non-empty tensor of this dtype."""
    default_complex = "complex128" if default_dtype_name == "float64" else "complex64"
    return dtype_name in (default_dtype_name, default_complex, "int64", "bool")


def tensor_repr(
    values: Any,
    *,
    shape: tuple[int, ...],
    dtype_name: str,
    default_dtype_name: str,
    device: str | None,
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    prefix: str = "tensor(",
    tangent: str | None = None,
) -> str:
    """Return the ``repr`` torch would give a dense tensor with these properties.

    Args:
        values: the tensor's data as an ndarray (bfloat16 may come as an
            ml_dtypes array or already upcast), or None when there is no data
            (``meta`` device), which prints as ``...``.
        shape: the tensor's shape.
        dtype_name: torch-style dtype name such as ``"float16"``; printed as
            ``dtype=ember.float16`` when torch would show the dtype.
        default_dtype_name: current default floating dtype name.
        device: None for cpu, else the device string (``"cuda:0"``, ``"meta"``).
        requires_grad: adds ``requires_grad=True`` when there is no grad_fn.
        grad_fn_name: class name of the grad_fn, shown as ``grad_fn=<Name>``.
        tangent: the repr of a dual tensor's tangent (forward AD), shown as ``tangent=...``.
        prefix: opening text; its length sets the indentation of wrapped lines.
    """
    shape = tuple(int(n) for n in shape)
    indent = len(prefix)
    size_suffix = "size=" + str(shape)
    dtype_suffix = "dtype=ember." + dtype_name
    suffixes: list[str] = []
    if device is not None and device != "cpu":
        suffixes.append(f"device='{device}'")

    if values is None or device == "meta":
        suffixes.append(size_suffix)
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        tensor_str = "..."
    elif math.prod(shape) == 0:
        # Explicit size unless (0,), as NumPy does; dtype always shown unless it
        # is the default float, since nothing hints at it otherwise.
        if len(shape) != 1:
            suffixes.append(size_suffix)
        if dtype_name != default_dtype_name:
            suffixes.append(dtype_suffix)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(size_suffix)
        if not _has_default_dtype(dtype_name, default_dtype_name):
            suffixes.append(dtype_suffix)
        arr = _as_formattable(values, dtype_name)
        if arr.shape != shape and arr.size == math.prod(shape):
            arr = arr.reshape(shape)
        tensor_str = _tensor_str(arr, indent, dtype_name)

    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    if tangent is not None:
        suffixes.append(f"tangent={tangent}")
    return _add_suffixes(prefix + tensor_str, suffixes, indent)
