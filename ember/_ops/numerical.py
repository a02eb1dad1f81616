"""Numerical calculus and float decomposition: trapezoid/trapz/cumulative_trapezoid, gradient, ldexp, frexp,
nextafter.

The calculus functions are composites written as ATen writes them (aten/src/ATen/native/Integration.cpp and
ReduceOps.cpp's gradient), so their values, dtypes and gradients are torch's.  frexp and nextafter are ops.
"""

from __future__ import annotations

import numbers

from .. import _dtype as dt
from .._dispatch import SAVE_RESULT, OpDef, call, promote
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ._api import export, finish_out
from ._shapes import broadcast_meta


def _name(dtype) -> str:
    return SCALAR_NAMES[dtype.name]


# ---------------------------------------------------------------- trapezoid


def _signature_error(name: str, y, x, dx) -> TypeError:
    got = ", ".join(type(a).__name__ for a in (y, x) if a is not None)
    keyword = "" if dx is None else f", dx={type(dx).__name__}"
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}{keyword}), but expected "
                     f"one of:\n * (Tensor y, Tensor x, *, int dim = -1)\n * (Tensor y, *, Number dx = 1, "
                     "int dim = -1)")


def _spacing(name: str, y: Tensor, x, dx):
    """The x tensor, or dx as a float (torch's two overloads), with torch's argument errors."""
    if x is not None and (dx is not None or not isinstance(x, Tensor)):
        raise _signature_error(name, y, x, dx)
    if x is None:
        dx = 1 if dx is None else dx
        if isinstance(dx, (bool, complex)):
            raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
        return None, float(dx)
    return x, None


def _slice(x: Tensor, dim: int, start: int | None, stop: int | None = None) -> Tensor:
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, stop)
    return x[tuple(index)]


def _sample_spacing(name: str, y: Tensor, x: Tensor, dim: int) -> Tensor:
    """x viewed against y (a 1-d x along `dim`, a shorter x padded with leading 1s), then its differences."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[dim] = x.shape[0]
        x = x.view(shape)
    elif x.ndim < y.ndim:
        x = x.view((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return _slice(x, dim, 1) - _slice(x, dim, 0, -1)


def _pair_sums(y: Tensor, dim: int) -> Tensor:
    return _slice(y, dim, 0, -1) + _slice(y, dim, 1)


@export(method=False)
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along `dim`, with sample points x or constant spacing dx (default 1)."""
    x, dx = _spacing("trapezoid", y, x, dx)
    dim = wrap_dim(dim, y.ndim)
    if y.ndim and y.shape[dim] == 0:
        from .creation import zeros

        shape = tuple(n for d, n in enumerate(y.shape) if d != dim)
        return zeros(shape, dtype=y.dtype, device=y.device)
    if x is None:
        if y._dtype is dt.bool_:
            raise RuntimeError("trapezoid: received a bool input for `y`, but bool is not supported")
        # constant spacing: dx * (sum(y) - (y_first + y_last) / 2)
        return (y.sum(dim) - (y.select(dim, 0) + y.select(dim, -1)) * 0.5) * dx
    if y._dtype is dt.bool_ or x._dtype is dt.bool_:
        raise RuntimeError("trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    spacing = _sample_spacing("trapezoid", y, x, dim)
    return (_pair_sums(y, dim) * spacing).sum(dim) / 2.0


@export(method=False)
def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """torch.trapz: the older name of trapezoid."""
    if x is not None and not isinstance(x, Tensor):
        raise _signature_error("trapz", y, x, dx)
    return trapezoid(y, x, dx=dx, dim=dim)


@export(method=False)
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along `dim` (one value fewer than y has samples)."""
    x, dx = _spacing("cumulative_trapezoid", y, x, dx)
    if x is None:
        if y._dtype is dt.bool_:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool is not supported")
        if not y.ndim:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        dim = wrap_dim(dim, y.ndim)
        return (_pair_sums(y, dim) * (dx / 2.0)).cumsum(dim)
    dim = wrap_dim(dim, y.ndim)
    if y._dtype is dt.bool_ or x._dtype is dt.bool_:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but bool is not supported")
    spacing = _sample_spacing("cumulative_trapezoid", y, x, dim)
    return (spacing / 2.0 * _pair_sums(y, dim)).cumsum(dim)


# ---------------------------------------------------------------- gradient


def _gradient_dims(input: Tensor, spacing_size, dim, edge_order: int) -> list:
    """ATen's pre_check_gradient, returning the wrapped dims."""
    if input._dtype is dt.uint8:
        raise RuntimeError("torch.gradient does not support uint8 input.")
    dims = None if dim is None else ([dim] if isinstance(dim, numbers.Integral) else list(dim))
    if spacing_size is not None and dims is None and spacing_size != input.ndim:
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {input.ndim}', since dim argument was not given, but got a list of "
                           f"length {spacing_size}")
    if spacing_size is not None and dims is not None and spacing_size != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length {spacing_size} "
                           f"and a dim argument of length {len(dims)}.")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dims is None:
        dims = list(range(input.ndim))
    else:
        wrapped = [wrap_dim(d, input.ndim) for d in dims]
        for d in wrapped:
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        dims = wrapped
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    return dims


def _gradient_uniform(x: Tensor, dim: int, h, edge_order: int) -> Tensor:
    """Central differences with constant spacing h, one-sided (first or second order) at the edges."""
    from .movement import cat

    center = (_slice(x, dim, 2) - _slice(x, dim, 0, -2)) / h
    if edge_order == 1:
        prepend = (_slice(x, dim, 1, 2) - _slice(x, dim, 0, 1)) / h
        append = (_slice(x, dim, -1) - _slice(x, dim, -2, -1)) / h
    else:
        prepend = (_slice(x, dim, 0, 1) * -1.5 + _slice(x, dim, 1, 2) * 2.0 - _slice(x, dim, 2, 3) * 0.5) / h
        append = (_slice(x, dim, -3, -2) * 0.5 + _slice(x, dim, -2, -1) * -2.0 + _slice(x, dim, -1) * 1.5) / h
    return cat([prepend, center / 2, append], dim)


def _gradient_coordinates(x: Tensor, dim: int, coordinates: Tensor, edge_order: int) -> Tensor:
    """Second-order differences on non-uniform sample coordinates (ATen's gradient_helper)."""
    from .movement import cat

    if coordinates.ndim != 1:
        raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                           f"element with {coordinates.ndim} dimensions!")
    shape = [1] * x.ndim
    shape[dim] = -1
    dx = coordinates[1:] - coordinates[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = (-dx2 / (dx1 * (dx1 + dx2))).reshape(shape)
    b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
    c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
    center = a * _slice(x, dim, 0, -2) + b * _slice(x, dim, 1, -1) + c * _slice(x, dim, 2)
    if edge_order == 1:
        prepend = (_slice(x, dim, 1, 2) - _slice(x, dim, 0, 1)) / dx[0]
        append = (_slice(x, dim, -1) - _slice(x, dim, -2, -1)) / dx[-1]
    else:
        first, second = dx[0], dx[1]
        a = -(2.0 * first + second) / (first * (first + second))
        b = (first + second) / (first * second)
        c = (-first) / (second * (first + second))
        prepend = a * _slice(x, dim, 0, 1) + b * _slice(x, dim, 1, 2) + c * _slice(x, dim, 2, 3)
        last, before = dx[-1], dx[-2]
        a = last / (before * (last + before))
        b = -(last + before) / (last * before)
        c = (2.0 * last + before) / (last * (last + before))
        append = a * _slice(x, dim, -3, -2) + b * _slice(x, dim, -2, -1) + c * _slice(x, dim, -1)
    return cat([prepend, center, append], dim)


@export(method=False)
def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Estimated partial derivatives of input along each of `dim` (all dims by default), as a tuple."""
    if isinstance(spacing, Tensor):
        raise TypeError("gradient() received an invalid combination of arguments - got (Tensor, spacing=Tensor), "
                        "but expected one of:\n * (Tensor input, *, Number spacing = None, int dim = None, "
                        "int edge_order = 1)\n * (Tensor input, *, tuple of Tensors spacing, int dim = None, "
                        "int edge_order = 1)")
    sequence = isinstance(spacing, (list, tuple))
    dims = _gradient_dims(input, len(spacing) if sequence else None, dim, edge_order)
    if not sequence:
        spacing = [spacing] * len(dims)
    results = []
    for d, h in zip(dims, spacing):
        if isinstance(h, Tensor):
            results.append(_gradient_coordinates(input, d, h, edge_order))
        else:
            results.append(_gradient_uniform(input, d, h, edge_order))
    return tuple(results)


# ---------------------------------------------------------------- ldexp, frexp, nextafter


@export(inplace=True)
def ldexp(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """input * 2 ** other, computed in the two operands' promoted (floating) type, as ATen's ldexp."""
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    from .misc import result_type

    dtype = result_type(input, other)
    if dtype.category < 2:
        dtype = dt.get_default_dtype()
    return finish_out(input.to(dtype) * other.to(dtype).exp2(), out)


def _frexp_rule(args, params):
    dtype = args[0]._dtype
    if dtype.category != 2:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return dtype, (dtype, dt.int32)


def _frexp_impl(xp, a):
    mantissa, exponent = xp.frexp(a)
    return mantissa, exponent.astype(xp.int32)


_FREXP = OpDef("frexp", _frexp_impl, lambda ctx, g: (g[0] / ctx.result[1].exp2(),), dtype_rule=_frexp_rule,
               saves=SAVE_RESULT, outputs=2, differentiable_outputs=(True, False),
               meta=lambda args, params: (args[0].shape, args[0].shape))


@export
def frexp(input: Tensor, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent, |mantissa| in [0.5, 1); exponent is int32."""
    from .. import return_types

    return finish_out(return_types.frexp(*call(_FREXP, (input,))), out)


def _nextafter_rule(args, params):
    compute, result = promote(args, params)
    if compute.category != 2:
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{_name(compute)}'")
    return compute, result


_NEXTAFTER = OpDef("nextafter", lambda xp, a, b: xp.nextafter(a, b), lambda ctx, g: (g, g * 0),
                   dtype_rule=_nextafter_rule,
                   meta=broadcast_meta, upcast_half=False)


@export(inplace=True)
def nextafter(input: Tensor, other: Tensor, *, out=None) -> Tensor:
    """The next representable value after input in the direction of other."""
    if not isinstance(other, Tensor):
        raise TypeError(f"nextafter(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    return finish_out(call(_NEXTAFTER, (input, other)), out)

