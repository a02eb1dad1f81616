"""torch.fft: discrete Fourier transforms over one or more dims, their helpers (fftfreq, fftshift).

Every public transform reduces, as torch's SpectralOps.cpp does, to three primitives:

- `_fft_c2c(x, dims, norm, forward)`: complex to complex;
- `_fft_r2c(x, dims, norm, onesided)`: real to complex, always the forward (e^-i) direction;
  `onesided` keeps only the non-redundant half of the last transformed dim;
- `_fft_c2r(x, dims, norm, last_size)`: the inverse of a onesided r2c (Hermitian input, real output).

`norm` is a scaling mode independent of direction: 0 none, 1 by 1/sqrt(n), 2 by 1/n (n the product of the
signal sizes); `_norm_mode` maps torch's "backward"/"ortho"/"forward" and the direction onto it.  The inverse
directions of r2c (ihfft) and the forward of c2r (hfft) are conjugates of these, as in torch.

Gradients are transforms too (torch's fft_r2c_backward / fft_c2r_backward): the adjoint of c2c is c2c in the
other direction with the same scaling; r2c's gradient zero-fills the dropped half and takes the real part of an
inverse c2c; c2r's gradient is a onesided r2c whose entries that stand for two conjugate bins are doubled.

NumPy's pocketfft computes in double precision here; results are rounded to torch's dtype (float32 input ->
complex64, float64 -> complex128; integral input -> the default float type first).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import OpDef, call
from .._tensor import Tensor
from ._api import write_out

# NumPy's norm names for (forward direction?, scaling mode)
_NUMPY_NORM = {(True, 0): "backward", (True, 1): "ortho", (True, 2): "forward",
               (False, 0): "forward", (False, 1): "ortho", (False, 2): "backward"}


def _norm_mode(norm, forward: bool) -> int:
    """torch's norm_from_string: the scaling mode of a transform in the given direction."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


# ---------------------------------------------------------------- primitives


def _c2c_rule(args, params):
    return dt.complex128, args[0]._dtype


def _r2c_rule(args, params):
    return dt.float64, args[0]._dtype.to_complex()


def _c2r_rule(args, params):
    return dt.complex128, args[0]._dtype.to_real()


def _c2c_impl(xp, a, dims, norm, forward):
    if not dims:
        return a.copy()
    transform = xp.fft.fftn if forward else xp.fft.ifftn
    return transform(a, axes=dims, norm=_NUMPY_NORM[(forward, norm)])


def _r2c_impl(xp, a, dims, norm, onesided):
    if onesided:
        return xp.fft.rfftn(a, axes=dims, norm=_NUMPY_NORM[(True, norm)])
    return xp.fft.fftn(a, axes=dims, norm=_NUMPY_NORM[(True, norm)])


def _c2r_impl(xp, a, dims, norm, last_size):
    sizes = [a.shape[d] for d in dims[:-1]] + [last_size]
    return xp.fft.irfftn(a, s=sizes, axes=dims, norm=_NUMPY_NORM[(False, norm)])


def _same_shape_meta(args, params):
    return args[0].shape


def _r2c_meta(args, params):
    shape = list(args[0].shape)
    if params["onesided"]:
        last = params["dims"][-1]
        shape[last] = shape[last] // 2 + 1
    return tuple(shape)


def _c2r_meta(args, params):
    shape = list(args[0].shape)
    shape[params["dims"][-1]] = params["last_size"]
    return tuple(shape)


def _c2c_backward(ctx, grad):
    params = ctx.params
    return (fft_c2c(grad, params["dims"], params["norm"], not params["forward"]),)


def _r2c_backward(ctx, grad):
    """torch's fft_r2c_backward: zero-fill the dropped half, inverse c2c, real part."""
    params = ctx.params
    dims = params["dims"]
    if params["onesided"]:
        last = dims[-1]
        full = ctx.input_meta[0][0][last]
        grad = _resize(grad, last, full)
    return (fft_c2c(grad, dims, params["norm"], False).real,)


def _c2r_backward(ctx, grad):
    """torch's fft_c2r_backward: onesided r2c, entries standing for a bin and its mirror image doubled."""
    params = ctx.params
    dims = params["dims"]
    result = fft_r2c(grad, dims, params["norm"], True)
    last = dims[-1]
    double = grad.shape[last] - result.shape[last]
    if double > 0:
        kept = result.shape[last]
        result = _cat([result.narrow(last, 0, 1), result.narrow(last, 1, double) * 2,
                       result.narrow(last, 1 + double, kept - 1 - double)], last)
    return (result,)


_C2C = OpDef("fft_c2c", _c2c_impl, _c2c_backward, dtype_rule=_c2c_rule, meta=_same_shape_meta, upcast_half=False)
_R2C = OpDef("fft_r2c", _r2c_impl, _r2c_backward, dtype_rule=_r2c_rule, meta=_r2c_meta, upcast_half=False)
_C2R = OpDef("fft_c2r", _c2r_impl, _c2r_backward, dtype_rule=_c2r_rule, meta=_c2r_meta, upcast_half=False)


def fft_c2c(x: Tensor, dims: tuple, norm: int, forward: bool) -> Tensor:
    return call(_C2C, (x,), {"dims": tuple(dims), "norm": norm, "forward": forward})


def fft_r2c(x: Tensor, dims: tuple, norm: int, onesided: bool) -> Tensor:
    return call(_R2C, (x,), {"dims": tuple(dims), "norm": norm, "onesided": onesided})


def fft_c2r(x: Tensor, dims: tuple, norm: int, last_size: int) -> Tensor:
    return call(_C2R, (x,), {"dims": tuple(dims), "norm": norm, "last_size": last_size})


# ---------------------------------------------------------------- argument handling


def _cat(tensors, dim):
    from .movement import cat

    return cat([t for t in tensors if t.shape[dim] or len(tensors) == 1], dim)


def _resize(x: Tensor, dim: int, n: int) -> Tensor:
    """torch's resize_fft_input: crop or zero-pad (at the end) `dim` to length n."""
    size = x.shape[dim]
    if size == n:
        return x
    if size > n:
        return x.narrow(dim, 0, n)
    shape = list(x.shape)
    shape[dim] = n - size
    from .creation import zeros

    return _cat([x, zeros(shape, dtype=x.dtype, device=x.device)], dim)


def _resize_all(x: Tensor, dims, sizes) -> Tensor:
    for dim, n in zip(dims, sizes):
        x = _resize(x, dim, n)
    return x


def _wrap(dim, ndim: int) -> int:
    """maybe_wrap_dim without wrapping scalars: a 0-d tensor has no dim to transform."""
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if dim < -ndim or dim >= ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return int(dim) % ndim


def _promote(x: Tensor, name: str, require_complex: bool = False) -> Tensor:
    """torch's promote_tensor_fft: integral -> the default float type; complex if asked; half types refused."""
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    dtype = x._dtype
    if dtype.category < 2:
        dtype = dt.get_default_dtype()
    if dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if dtype is dt.float16 else 'BFloat16'}")
    if require_complex:
        dtype = dtype.to_complex()
    return x if dtype is x._dtype else x.to(dtype)


def _check_n(n) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _shape_and_dims(x: Tensor, s, dim) -> tuple:
    """torch's canonicalize_fft_shape_and_dim_args: (signal sizes, dims)."""
    ndim = x.ndim
    dims = None
    if dim is not None:
        dims = [_wrap(d, ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if n == -1 else int(n) for d, n in zip(dims, s)]
    elif dims is None:
        dims, sizes = list(range(ndim)), list(x.shape)
    else:
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        _check_n(n)
    return sizes, dims


def _c2r_shape_and_dims(name: str, x: Tensor, s, dim) -> tuple:
    """torch's canonicalize_fft_c2r_shape_and_dim_args: (input sizes, dims, output size of the last dim)."""
    sizes, dims = _shape_and_dims(x, s, dim)
    if not sizes:
        raise RuntimeError(f"{name} must transform at least one axis")
    if s is None or list(s)[-1] == -1:
        last_size = 2 * (x.shape[dims[-1]] - 1)
    else:
        last_size = sizes[-1]
    _check_n(last_size)
    sizes[-1] = last_size // 2 + 1
    return sizes, dims, last_size


def _finish(name: str, result: Tensor, out, complex_out: bool) -> Tensor:
    if out is None:
        return result
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got {_scalar_name(out.dtype)}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point output tensor, but got {_scalar_name(out.dtype)}")
    return write_out(out, result)


def _scalar_name(dtype) -> str:
    from .._tensor import SCALAR_NAMES

    return SCALAR_NAMES[dtype.name]


# ---------------------------------------------------------------- one-dimensional transforms


def _c2c(name, input, n, dim, norm, forward, out):
    """fft/ifft: c2c for complex input; a two-sided r2c (conjugated for the inverse) for real input."""
    x = _promote(input, name)
    dim = _wrap(dim, x.ndim)
    n = x.shape[dim] if n is None else int(n)
    _check_n(n)
    x = _resize(x, dim, n)
    mode = _norm_mode(norm, forward)
    if x._dtype.is_complex:
        return _finish(name, fft_c2c(x, (dim,), mode, forward), out, True)
    result = fft_r2c(x, (dim,), mode, False)
    return _finish(name, result if forward else _conj_exact(result, out), out, True)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The one-dimensional discrete Fourier transform of `input` along `dim`."""
    return _c2c("fft", input, n, dim, norm, True, out)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform of `input` along `dim`."""
    return _c2c("ifft", input, n, dim, norm, False, out)


def _r2c(name, input, n, dim, norm, forward, out):
    """rfft/ihfft: a onesided r2c (conjugated for the inverse)."""
    if isinstance(input, Tensor) and input._dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {_scalar_name(input.dtype)}")
    x = _promote(input, name)
    dim = _wrap(dim, x.ndim)
    n = x.shape[dim] if n is None else int(n)
    _check_n(n)
    x = _resize(x, dim, n)
    result = fft_r2c(x, (dim,), _norm_mode(norm, forward), True)
    return _finish(name, result if forward else _conj_exact(result, out), out, True)


def _conj_exact(result: Tensor, out) -> Tensor:
    """The conjugate torch's 1-D inverse of a real input writes with conj_physical's out=, which does not cast."""
    if out is not None and isinstance(out, Tensor) and out._dtype.is_complex and out._dtype is not result._dtype:
        raise RuntimeError(f"Found dtype {_scalar_name(out.dtype)} but expected {_scalar_name(result.dtype)}")
    return result.conj()


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The Fourier transform of real `input`: only the non-negative frequencies (n // 2 + 1 of them)."""
    return _r2c("rfft", input, n, dim, norm, True, out)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of hfft: the onesided inverse Fourier transform of real `input`."""
    return _r2c("ihfft", input, n, dim, norm, False, out)


def _c2r(name, input, n, dim, norm, forward, out):
    """irfft/hfft: c2r of the input cropped or padded to n // 2 + 1 (conjugated first for the forward hfft)."""
    x = _promote(input, name, require_complex=True)
    dim = _wrap(dim, x.ndim)
    last_size = 2 * (x.shape[dim] - 1) if n is None else int(n)
    _check_n(last_size)
    if n is not None:
        x = _resize(x, dim, last_size // 2 + 1)
    if forward:
        x = x.conj()
    return _finish(name, fft_c2r(x, (dim,), _norm_mode(norm, forward), last_size), out, False)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of rfft: a real signal of length n (default 2 * (size - 1)) from its onesided spectrum."""
    return _c2r("irfft", input, n, dim, norm, False, out)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The Fourier transform of a Hermitian-symmetric signal given by its onesided half: a real result."""
    return _c2r("hfft", input, n, dim, norm, True, out)


# ---------------------------------------------------------------- n-dimensional transforms


def _c2c_n(name, input, s, dim, norm, forward, out):
    x = _promote(input, name)
    sizes, dims = _shape_and_dims(x, s, dim)
    x = _resize_all(_promote(x, name, require_complex=True), dims, sizes)
    return _finish(name, fft_c2c(x, dims, _norm_mode(norm, forward), forward), out, True)


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional discrete Fourier transform over `dim` (default: all dims, or the last len(s))."""
    return _c2c_n("fftn", input, s, dim, norm, True, out)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional inverse discrete Fourier transform."""
    return _c2c_n("ifftn", input, s, dim, norm, False, out)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional discrete Fourier transform (fftn over the last two dims)."""
    return _c2c_n("fft2", input, s, dim, norm, True, out)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional inverse discrete Fourier transform."""
    return _c2c_n("ifft2", input, s, dim, norm, False, out)


def _real_nd_input(name, input, s, dim, complex_message: str):
    """A real n-d transform's input: refused if complex, promoted, resized to `s` over its dims: (x, n-d name, dims)."""
    if isinstance(input, Tensor) and input._dtype.is_complex:
        raise RuntimeError(complex_message.format(_scalar_name(input.dtype)))
    x = _promote(input, name)
    name = _nd(name)
    sizes, dims = _shape_and_dims(x, s, dim)
    if not sizes:
        raise RuntimeError(f"{name} must transform at least one axis")
    return _resize_all(x, dims, sizes), name, dims


def _rfftn(name, input, s, dim, norm, out):
    x, name, dims = _real_nd_input(name, input, s, dim, _nd(name) + " expects a real-valued input tensor, but got {}")
    return _finish(name, fft_r2c(x, dims, _norm_mode(norm, True), True), out, True)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional Fourier transform of real `input`, onesided in the last transformed dim."""
    return _rfftn("rfftn", input, s, dim, norm, out)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional Fourier transform of real `input`, onesided in the last dim."""
    return _rfftn("rfft2", input, s, dim, norm, out)


def _nd(name: str) -> str:
    """torch's 2-D transforms are its n-D ones: their messages name rfftn, not rfft2."""
    return name.replace("2", "n")


def _irfftn(name, input, s, dim, norm, out):
    x = _promote(input, name, require_complex=True)
    name = _nd(name)
    sizes, dims, last_size = _c2r_shape_and_dims(name, x, s, dim)
    x = _resize_all(x, dims, sizes)
    return _finish(name, fft_c2r(x, dims, _norm_mode(norm, False), last_size), out, False)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of rfftn: a real signal (last transformed dim 2 * (size - 1) unless s says otherwise)."""
    return _irfftn("irfftn", input, s, dim, norm, out)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of rfft2."""
    return _irfftn("irfft2", input, s, dim, norm, out)


def _hfftn(name, input, s, dim, norm, out):
    """torch's fft_hfftn_impl: a forward c2c over all but the last dim, then conj and a c2r over the last."""
    x = _promote(input, name, require_complex=True)
    name = _nd(name)
    sizes, dims, last_size = _c2r_shape_and_dims(name, x, s, dim)
    x = _resize_all(x, dims, sizes)
    mode = _norm_mode(norm, True)
    if len(dims) > 1:
        x = fft_c2c(x, tuple(dims[:-1]), mode, True)
    return _finish(name, fft_c2r(x.conj(), (dims[-1],), mode, last_size), out, False)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional Fourier transform of a Hermitian-symmetric signal given by its onesided half (in the last
    dim): a real result, the last transformed dim 2 * (size - 1) long unless s says otherwise."""
    return _hfftn("hfftn", input, s, dim, norm, out)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """hfftn over the last two dims."""
    return _hfftn("hfft2", input, s, dim, norm, out)


def _ihfftn(name, input, s, dim, norm, out):
    """torch's fft_ihfftn_impl: a onesided r2c over the last dim, then conj and an inverse c2c over the others."""
    x, name, dims = _real_nd_input(name, input, s, dim, "Only supports floating-point dtypes, but found: {}")
    mode = _norm_mode(norm, False)
    result = fft_r2c(x, (dims[-1],), mode, True).conj()
    if len(dims) > 1:
        result = fft_c2c(result, tuple(dims[:-1]), mode, False)
    return _finish(name, result, out, True)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of hfftn: the onesided n-dimensional inverse Fourier transform of real `input`."""
    return _ihfftn("ihfftn", input, s, dim, norm, out)


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """ihfftn over the last two dims."""
    return _ihfftn("ihfft2", input, s, dim, norm, out)


# ---------------------------------------------------------------- helpers


def _frequencies(name: str, n: int, values: np.ndarray, d: float, dtype, device, requires_grad: bool, out):
    from .creation import _finish as finish_creation

    dtype = dtype if dtype is not None else (out.dtype if out is not None else dt.get_default_dtype())
    if dtype.category < 2:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dtype.is_complex:  # torch builds the frequencies with arange, which has no complex kernel
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_scalar_name(dtype)}'")
    # torch: arange(n) (first half, then negative) times 1 / (n * d), in the result dtype
    with np.errstate(divide="ignore", invalid="ignore"):  # n = 0: torch's 1 / 0 = inf, and 0 * inf = nan
        scale = (np.float64(1.0) / np.float64(n * d)).astype(dtype.np_dtype)
        array = values.astype(dtype.np_dtype) * scale
    result = finish_creation(array, dtype, device, requires_grad)
    return result if out is None else write_out(out, result)


def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point fft with sample spacing d: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    values = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) if n > 0 else np.zeros(0)
    return _frequencies("fftfreq", n, values, d, dtype, device, requires_grad, out)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point rfft: [0, 1, ..., n // 2] / (d n)."""
    half = int(n / 2) if abs(n) < 2**52 else n // 2  # C++'s truncating division: rfftfreq(-1) has one entry
    return _frequencies("rfftfreq", n, np.arange(half + 1), d, dtype, device, requires_grad, out)


def _shift(input: Tensor, dim, inverse: bool) -> Tensor:
    from .movement import roll

    if dim is None:
        dims = list(range(input.ndim))
    else:
        dims = [_wrap(d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)]
    if not dims:  # torch's roll with no shifts (a 0-d input, or dim=())
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero-frequency term to the centre of `dim` (default all dims): a roll by size // 2."""
    return _shift(input, dim, False)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of fftshift: a roll by (size + 1) // 2."""
    return _shift(input, dim, True)


__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
