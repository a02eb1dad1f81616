"""Complex numbers from real parts and back: complex, polar, angle, and the views view_as_real / view_as_complex.

view_as_real and view_as_complex are views, as in torch: they reinterpret the same memory (a complex element as
two real ones and back), so writes through either reach the other.  ember has no complex32, so float16 pairs
cannot be viewed (or combined) as a complex type of their width; see the errors below.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, promote_float
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export, finish_out
from ._shapes import broadcast_meta, broadcast_shapes
from .views import _as_strided


def _scalar_name(dtype: dt.dtype) -> str:
    return SCALAR_NAMES[dtype.name]


# ---------------------------------------------------------------- views


def _view_as_real_impl(xp, a):
    """The real parts (a view with the same strides) widened by a last dim of 2 that steps to the imaginary part."""
    real = a.real
    return _as_strided(xp, real, a.shape + (2,), a.strides + (real.itemsize,))


def _view_as_complex_impl(xp, a):
    """Pairs along the (contiguous) last dim read as one complex element each."""
    return a.view(np.result_type(a.dtype, np.complex64))[..., 0]


def _view_as_real_backward(ctx, g):
    return complex(g[..., 0], g[..., 1])


def _view_as_complex_backward(ctx, g):
    from .movement import stack

    return stack((g.real, g.imag), -1)


_VIEW_AS_REAL = OpDef("view_as_real", _view_as_real_impl, _view_as_real_backward,
                      dtype_rule=lambda args, params: (None, args[0]._dtype.to_real()), view=True, upcast_half=False,
                      meta=lambda args, params: tuple(args[0].shape) + (2,))
_VIEW_AS_COMPLEX = OpDef("view_as_complex", _view_as_complex_impl, _view_as_complex_backward,
                         dtype_rule=lambda args, params: (None, args[0]._dtype.to_complex()), view=True,
                         upcast_half=False, meta=lambda args, params: tuple(args[0].shape)[:-1])


@export(method=False)
def view_as_real(input: Tensor) -> Tensor:
    """A real view of a complex tensor with a new last dim of size 2 holding (real, imaginary)."""
    if not input._dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return call(_VIEW_AS_REAL, (input,))


@export(method=False)
def view_as_complex(input: Tensor) -> Tensor:
    """A complex view of a real tensor whose last dim (size 2, stride 1) holds (real, imaginary)."""
    dtype = input._dtype
    if dtype not in (dt.float32, dt.float64):
        if dtype is dt.float16:
            raise RuntimeError("view_as_complex of a Half tensor would be complex32, which ember does not have")
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {_scalar_name(dtype)}")
    shape = input.shape
    if not shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(stride % 2 for stride in strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return call(_VIEW_AS_COMPLEX, (input,))


# ---------------------------------------------------------------- complex and polar


def _complex_rule(name: str):
    """torch's checks for complex/polar: two tensors of one of Half, Float, Double, the same one."""

    def rule(args, params):
        first, second = args[0]._dtype, args[1]._dtype
        if first not in (dt.float16, dt.float32, dt.float64) or second not in (dt.float16, dt.float32, dt.float64):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                               f"{_scalar_name(first)} and {_scalar_name(second)}")
        if first is not second:
            raise RuntimeError(f"Expected object of scalar type {_scalar_name(first)} but got scalar type "
                               f"{_scalar_name(second)} for second argument")
        return None, first.to_complex()

    return rule


def _from_parts(xp, real, imag):
    """A complex array from real and imaginary parts (assigned, not real + 1j * imag, which turns inf into nan)."""
    shape = broadcast_shapes(real.shape, imag.shape)
    out = xp.empty(shape, np.result_type(real.dtype, np.complex64))
    out.real[...] = real
    out.imag[...] = imag
    return out


def _complex_backward(ctx, g):
    return g.real, g.imag


def _polar_impl(xp, magnitude, phase):
    return _from_parts(xp, magnitude * xp.cos(phase), magnitude * xp.sin(phase))


def _polar_backward(ctx, g):
    """torch's polar_backward: d/d abs along the result's direction, d/d angle along i * result."""
    result = ctx.result
    grad_conj = g.conj()
    return (grad_conj * result.sgn()).real, (grad_conj * (result * 1j)).real


_COMPLEX = OpDef("complex", _from_parts, _complex_backward, dtype_rule=_complex_rule("complex"),
                 meta=broadcast_meta, upcast_half=False)
_POLAR = OpDef("polar", _polar_impl, _polar_backward, dtype_rule=_complex_rule("polar"), meta=broadcast_meta,
               saves=SAVE_RESULT)


def _check_complex_out(out, result_dtype: dt.dtype) -> None:
    if out is not None and out._dtype is not result_dtype:
        raise RuntimeError(f"Expected object of scalar type {_scalar_name(result_dtype)} but got scalar type "
                           f"{_scalar_name(out._dtype)} for argument 'out'")


def _check_parts(name: str, arguments: tuple) -> None:
    for position, (argument, value) in enumerate(arguments, 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


@export(method=False)
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001 - torch.complex
    """A complex tensor real + i * imag from two real tensors of the same dtype."""
    _check_parts("complex", (("real", real), ("imag", imag)))
    result = call(_COMPLEX, (real, imag))
    _check_complex_out(out, result._dtype)
    return finish_out(result, out)


@export(method=False)
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A002 - torch's argument names
    """A complex tensor abs * (cos(angle) + i * sin(angle)) from magnitudes and phases."""
    _check_parts("polar", (("abs", abs), ("angle", angle)))
    result = call(_POLAR, (abs, angle))
    _check_complex_out(out, result._dtype)
    return finish_out(result, out)


# ---------------------------------------------------------------- angle


def _angle_rule(args, params):
    compute, result = promote_float(args, params)
    return compute, result.to_real()


def _angle_impl(xp, a):
    """The argument of a complex number; for real numbers pi where negative, 0 elsewhere, nan kept (as torch)."""
    if a.dtype.kind == "c":
        return xp.angle(a)
    pi, zero = a.dtype.type(math.pi), a.dtype.type(0)
    return xp.where(xp.isnan(a), a, xp.where(a < 0, pi, zero))


def _angle_backward(ctx, g):
    """Zero for real input; for complex, torch's g * z / |z|^2 * i, and zero at z = 0."""
    z = ctx.inputs[0]
    if not z._dtype.is_complex:
        return g.new_zeros(g.shape)
    from .elementwise import where

    return where(z == 0, 0.0, g * z / z.abs().square() * 1j)


_ANGLE = OpDef("angle", _angle_impl, _angle_backward, dtype_rule=_angle_rule, saves=SAVE_INPUTS)


@export
def angle(input: Tensor, *, out=None) -> Tensor:
    """The elementwise argument (phase) in radians: atan2(imag, real) for complex input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"angle(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return finish_out(call(_ANGLE, (input,)), out)
