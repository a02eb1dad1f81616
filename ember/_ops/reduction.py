"""Reductions over dims: sum, mean, amax/amin, max/min (with indices), argmax/argmin, all/any, count_nonzero.

Every reduction takes `dim` (None, an int or a tuple) and `keepdim` the same
way (`reduce_params`), has the same meta (`reduced_shape`) and the same way to
bring a gradient back to the input's shape (`expand_grad`).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import Tensor
from ..return_types import aminmax as aminmax_type
from ..return_types import max as max_type
from ..return_types import min as min_type
from ._api import as_requested, export, finish_out, not_implemented, write_out
from ._shapes import normalize_dims
from .indexing import spread


def reduce_params(input: Tensor, dim, keepdim: bool) -> dict:
    """Normalise dim/keepdim into the params every reduction op takes (a 0-d input has no dims to reduce)."""
    ndim = input._data.ndim
    if dim is None:  # the common case: everything
        return {"dim": tuple(range(ndim)), "keepdim": bool(keepdim)}
    dims = normalize_dims(dim, ndim)
    return {"dim": dims if ndim else (), "keepdim": bool(keepdim)}


def reduced_shape(shape, dims, keepdim) -> tuple:
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def reduction_meta(args, params):
    return reduced_shape(args[0].shape, params["dim"], params["keepdim"])


def expand_grad(g: Tensor, ctx) -> Tensor:
    """A reduced gradient broadcast back over the reduced dims of the input."""
    shape = ctx.input_meta[0][0]
    params = ctx.params
    if not params["keepdim"] and params["dim"]:
        g = g.reshape(reduced_shape(shape, params["dim"], True))
    return g.expand(shape)


def _sum_rule(args, params):
    dtype = args[0]._dtype
    if dtype.category < 2:
        return dt.int64, dt.int64
    return dtype, dtype


def _axis(params):
    return params["dim"]


_SUM = OpDef("sum", lambda xp, a, dim, keepdim: a.sum(axis=dim, keepdims=keepdim),
             lambda ctx, g: expand_grad(g, ctx), dtype_rule=_sum_rule, meta=reduction_meta)
_NANSUM = OpDef("nansum", lambda xp, a, dim, keepdim: xp.nansum(a, axis=dim, keepdims=keepdim),
                lambda ctx, g: expand_grad(g, ctx) * ~ctx.inputs[0].isnan(), dtype_rule=_sum_rule,
                meta=reduction_meta, saves=SAVE_INPUTS)


@export
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Sum over `dim` (all dims by default); bool and integer inputs sum to int64."""
    if dtype is not None:
        input = input.to(dtype)
    result = call(_SUM, (input,), reduce_params(input, dim, keepdim))
    if dim is not None:  # torch's overloads: sum() is SumBackward0, sum(dim) SumBackward1
        name_node(result, "SumBackward1")
    return finish_out(as_requested(result, dtype), out)


@export
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Sum treating nan as zero."""
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return finish_out(call(_NANSUM, (input,), reduce_params(input, dim, keepdim)), out)


def _float_only(name, message=None):
    """A dtype rule that keeps floating/complex dtypes and raises torch's error for the others."""
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category < 2:
            from .._tensor import SCALAR_NAMES

            if message is not None:
                raise RuntimeError(message.format(dtype=SCALAR_NAMES[dtype.name]))
            raise RuntimeError(
                f"{name}(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {SCALAR_NAMES[dtype.name]}"
            )
        return dtype, dtype

    return rule


def _count(ctx) -> int:
    shape = ctx.input_meta[0][0]
    count = 1
    for d in ctx.params["dim"]:
        count *= shape[d]
    return count


_MEAN = OpDef("mean", lambda xp, a, dim, keepdim: xp.mean(a, axis=dim, keepdims=keepdim),
              lambda ctx, g: expand_grad(g, ctx) / _count(ctx), dtype_rule=_float_only("mean"),
              meta=reduction_meta)
_NANMEAN = OpDef("nanmean", lambda xp, a, dim, keepdim: xp.nanmean(a, axis=dim, keepdims=keepdim),
                 lambda ctx, g: _nanmean_backward(ctx, g), dtype_rule=_float_only(
                     "nanmean", "nanmean(): expected input to have floating point or complex dtype but got {dtype}"),
                 meta=reduction_meta, saves=SAVE_INPUTS)


def _nanmean_backward(ctx, g):
    valid = ~ctx.inputs[0].isnan()
    counts = valid.sum(ctx.params["dim"], keepdim=True)
    return expand_grad(g, ctx) * valid / counts


@export
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Arithmetic mean over `dim`; floating and complex inputs only (or pass dtype)."""
    if dtype is not None:
        input = input.to(dtype)
    result = call(_MEAN, (input,), reduce_params(input, dim, keepdim))
    if dim is not None:  # torch's overloads: mean() is MeanBackward0, mean(dim) MeanBackward1
        name_node(result, "MeanBackward1")
    return finish_out(result, out)


@export
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Mean of the non-nan elements (torch's is nansum / count, so complex is refused as nansum's)."""
    if dtype is not None:
        input = input.to(dtype)
    if input._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return finish_out(call(_NANMEAN, (input,), reduce_params(input, dim, keepdim)), out)


# ---------------------------------------------------------------- extremes


def _refuse_complex(input: Tensor, kernel: str) -> None:
    """torch's NotImplementedError for an extreme's CPU kernel, which has no complex version."""
    if input._dtype.is_complex:
        from .._tensor import SCALAR_NAMES

        raise NotImplementedError(f"\"{kernel}\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")


def _check_nonempty(name: str, input: Tensor, params: dict, dim_given: bool, given=None) -> None:
    """torch's refusal to reduce an empty dim with no identity; `given` (the dims as the caller wrote them, for
    amax/amin) is what torch's message names: amin(-1) names -1, not its wrapped 0."""
    if input.numel() or not input.ndim:
        return
    if not dim_given:
        kind = IndexError if name in ("argmax", "argmin") else RuntimeError  # (torch's types differ so)
        raise kind(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
            "with the 'dim' argument."
        )
    if given is not None:
        for d in (given,) if isinstance(given, int) else tuple(given):
            if input.shape[d % input.ndim] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    for d in params["dim"]:
        if input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme_impl(name):
    def impl(xp, a, dim, keepdim):
        return getattr(xp, name)(a, axis=dim, keepdims=keepdim)

    return impl


def _evenly_backward(ctx, g):
    """amax/amin/max(): the gradient is shared evenly among the elements equal to the extreme."""
    x = ctx.inputs[0]
    result = ctx.result
    params = ctx.params
    if not params["keepdim"] and params["dim"]:
        result = result.reshape(reduced_shape(x.shape, params["dim"], True))
    mask = (x == result)
    count = mask.sum(params["dim"], keepdim=True)
    return expand_grad(g, ctx) * mask / count


def evenly_distribute_backward(ctx, g):
    """max()/min()/median() of all elements: torch shares the gradient among the elements equal to the result,
    or among the nan elements when the result is nan (amax/amin instead give nan gradients there)."""
    x = ctx.inputs[0]
    result = ctx.result
    mask = x.isnan() if result.isnan().item() else (x == result)
    return g * mask / mask.sum()


_AMAX = OpDef("amax", _extreme_impl("max"), _evenly_backward, dtype_rule=lambda a, p: (None, a[0]._dtype),
              meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False)
_AMIN = OpDef("amin", _extreme_impl("min"), _evenly_backward, dtype_rule=lambda a, p: (None, a[0]._dtype),
              meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False)


@export
def amax(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    """Maximum over `dim` (all dims for ()); nan propagates; ties share the gradient."""
    _refuse_complex(input, "max_values_cpu")
    params = reduce_params(input, dim if dim != () else None, keepdim)
    _check_nonempty("amax", input, params, dim != (), dim)
    return finish_out(call(_AMAX, (input,), params), out)


@export
def amin(input: Tensor, dim=(), keepdim: bool = False, *, out=None) -> Tensor:
    _refuse_complex(input, "min_values_cpu")
    params = reduce_params(input, dim if dim != () else None, keepdim)
    _check_nonempty("amin", input, params, dim != (), dim)
    return finish_out(call(_AMIN, (input,), params), out)


def _arg_impl(function, nan_first):
    def impl(xp, a, dim, keepdim):
        if a.ndim == 0:
            return xp.zeros((), np.int64)
        if dim is None:
            flat = a.reshape(-1)
            index = _arg_with_nan(xp, function, flat, 0)
            return xp.asarray(index).reshape((1,) * a.ndim if keepdim else ())
        return _arg_with_nan(xp, function, a, dim, keepdim)

    return impl


def _arg_with_nan(xp, function, a, axis, keepdim=False):
    """argmax/argmin; NumPy, like torch, reports the first nan as the extreme."""
    return function(a, axis=axis, keepdims=keepdim)


def _no_bool(name: str, input: Tensor) -> None:
    if input._dtype is dt.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if input._dtype.is_complex:
        raise RuntimeError(f"{name}(): does not support complex input")


def _arg_params(input, dim, keepdim):
    if dim is None:
        return {"dim": None, "keepdim": bool(keepdim)}
    from .._tensor import wrap_dim

    return {"dim": wrap_dim(dim, input.ndim) if input.ndim else None, "keepdim": bool(keepdim)}


def _arg_meta(args, params):
    shape = args[0].shape
    if params["dim"] is None:
        return (1,) * len(shape) if params["keepdim"] else ()
    return reduced_shape(shape, (params["dim"],), params["keepdim"])


_ARGMAX = OpDef("argmax", _arg_impl(np.argmax, True), None, dtype_rule=lambda a, p: (None, dt.int64),
                meta=_arg_meta, upcast_half=False)
_ARGMIN = OpDef("argmin", _arg_impl(np.argmin, True), None, dtype_rule=lambda a, p: (None, dt.int64),
                meta=_arg_meta, upcast_half=False)


@export
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out=None) -> Tensor:
    """Index of the maximum (first occurrence; nan counts as the maximum)."""
    _no_bool("argmax", input)
    params = _arg_params(input, dim, keepdim)
    _check_nonempty("argmax", input, {"dim": () if dim is None else (params["dim"],)}, dim is not None)
    return finish_out(call(_ARGMAX, (input,), params), out)


@export
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out=None) -> Tensor:
    _no_bool("argmin", input)
    params = _arg_params(input, dim, keepdim)
    _check_nonempty("argmin", input, {"dim": () if dim is None else (params["dim"],)}, dim is not None)
    return finish_out(call(_ARGMIN, (input,), params), out)


def _max_dim_impl(extreme, arg):
    def impl(xp, a, dim, keepdim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        index = _arg_with_nan(xp, arg, a, dim, True)
        values = xp.take_along_axis(a, index, axis=dim)
        if not keepdim:
            values, index = values.squeeze(dim), index.squeeze(dim)
        return values, index

    return impl


def _max_dim_backward(ctx, grads):
    g, _ = grads
    _, indices = ctx.result
    shape = ctx.input_meta[0][0]
    dim, keepdim = ctx.params["dim"], ctx.params["keepdim"]
    if not shape:
        return g
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return spread(g, indices, dim, shape)


def _max_dim_rule(args, params):
    return None, (args[0]._dtype, dt.int64)


def _max_dim_meta(args, params):
    shape = reduced_shape(args[0].shape, (params["dim"],) if args[0].ndim else (), params["keepdim"])
    return shape, shape


_MAX_DIM = OpDef("max", _max_dim_impl(np.max, np.argmax), _max_dim_backward, dtype_rule=_max_dim_rule,
                 meta=_max_dim_meta, outputs=2, saves=SAVE_RESULT, upcast_half=False,
                 differentiable_outputs=None)
_MIN_DIM = OpDef("min", _max_dim_impl(np.min, np.argmin), _max_dim_backward, dtype_rule=_max_dim_rule,
                 meta=_max_dim_meta, outputs=2, saves=SAVE_RESULT, upcast_half=False)
# torch names the all-elements overloads' nodes MaxBackward1 / MinBackward1 (the dim ones end in 0)
_MAX_ALL = OpDef("max", _extreme_impl("max"), evenly_distribute_backward, dtype_rule=lambda a, p: (None, a[0]._dtype),
                 meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False, grad_name="MaxBackward1")
_MIN_ALL = OpDef("min", _extreme_impl("min"), evenly_distribute_backward, dtype_rule=lambda a, p: (None, a[0]._dtype),
                 meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False, grad_name="MinBackward1")


def _extreme(name, all_op, dim_op, binary, result_type):
    def fn(input, dim=None, keepdim: bool = False, *, out=None):
        if isinstance(dim, Tensor):
            return binary(input, dim, out=out)
        if input._dtype.is_complex:
            if dim is None:
                _refuse_complex(input, f"{name}_all")
            raise RuntimeError(f"{name}(): does not support complex input")
        if dim is None:
            if input.numel() == 0:
                raise RuntimeError(
                    f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                    "reduction dim with the 'dim' argument."
                )
            return finish_out(call(all_op, (input,), {"dim": tuple(range(input.ndim)), "keepdim": False}), out)
        from .._tensor import wrap_dim

        axis = wrap_dim(dim, input.ndim)
        if input.ndim and input.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
        values, indices = call(dim_op, (input,), {"dim": axis, "keepdim": bool(keepdim)})
        if out is not None:
            write_out(out[0], values)
            write_out(out[1], indices)
            values, indices = out
        return result_type(values, indices)

    fn.__name__ = name
    fn.__doc__ = f"{name}(input) over all elements; {name}(input, dim) -> (values, indices); {name}(a, b) elementwise."
    return export(fn)


def _late_maximum(input, other, out=None):
    from .elementwise import maximum

    return maximum(input, other, out=out)


def _late_minimum(input, other, out=None):
    from .elementwise import minimum

    return minimum(input, other, out=out)


max = _extreme("max", _MAX_ALL, _MAX_DIM, _late_maximum, max_type)
min = _extreme("min", _MIN_ALL, _MIN_DIM, _late_minimum, min_type)


@export
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """(amin, amax) in one call."""
    _refuse_complex(input, "aminmax_cpu")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity."
            )
        if keepdim:
            return aminmax_type(amin(input, (), True), amax(input, (), True))
        return aminmax_type(amin(input, (), False), amax(input, (), False))
    from .._tensor import wrap_dim

    axis = wrap_dim(dim, input.ndim)
    if input.ndim and input.shape[axis] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {axis} to have non-zero size.")
    return aminmax_type(amin(input, dim, keepdim), amax(input, dim, keepdim))


# ---------------------------------------------------------------- boolean reductions


def _bool_rule(args, params):
    return None, dt.uint8 if args[0]._dtype is dt.uint8 else dt.bool_


_ALL = OpDef("all", lambda xp, a, dim, keepdim: xp.all(a, axis=dim, keepdims=keepdim), None, dtype_rule=_bool_rule,
             meta=reduction_meta, upcast_half=False)
_ANY = OpDef("any", lambda xp, a, dim, keepdim: xp.any(a, axis=dim, keepdims=keepdim), None, dtype_rule=_bool_rule,
             meta=reduction_meta, upcast_half=False)


@export
def all(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """True where every element over `dim` is nonzero."""
    return finish_out(call(_ALL, (input,), reduce_params(input, dim, keepdim)), out)


@export
def any(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """True where some element over `dim` is nonzero."""
    return finish_out(call(_ANY, (input,), reduce_params(input, dim, keepdim)), out)


_COUNT_NONZERO = OpDef("count_nonzero", lambda xp, a, dim, keepdim: xp.count_nonzero(a, axis=dim).astype(np.int64),
                       None, dtype_rule=lambda a, p: (None, dt.int64), meta=reduction_meta, upcast_half=False)


@export
def count_nonzero(input: Tensor, dim=None) -> Tensor:
    return call(_COUNT_NONZERO, (input,), reduce_params(input, dim, False))


# ---------------------------------------------------------------- hash_tensor


def _hash_impl(xp, a, dim, keepdim):
    """Each element widened to its 64-bit float or integer type, its bits read as uint64, xor-reduced."""
    wide = a.astype(xp.int64 if a.dtype.kind in "biu" else xp.float64).view(xp.uint64)  # (bfloat16's kind is V)
    return xp.bitwise_xor.reduce(wide, axis=dim, keepdims=keepdim) if dim else wide.copy()


def _hash_rule(args, params):
    dtype = args[0]._dtype
    if dtype.category == 3:
        raise not_implemented("xor_sum_cpu", dtype)
    return None, dt.uint64


_HASH_TENSOR = OpDef("hash_tensor", _hash_impl, None, dtype_rule=_hash_rule, meta=reduction_meta, upcast_half=False)


@export
def hash_tensor(input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """torch.hash_tensor: an xor of the elements' 64-bit patterns (mode 0, the only one), as uint64; over
    `dim` (an int, a list, or None / [] for every dim)."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    params = reduce_params(input, None if dim == [] or dim == () else dim, keepdim)
    if input._data.size == 0:
        if dim is None:
            raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        for d in params["dim"]:
            if input._data.shape[d] == 0:
                raise IndexError(f"hash_tensor: Expected reduction dim {d} to have non-zero size.")
    return call(_HASH_TENSOR, (input,), params)


# ---------------------------------------------------------------- prod


_PROD = OpDef("prod", lambda xp, a, dim, keepdim: xp.prod(a, axis=dim, keepdims=keepdim),
              lambda ctx, g: _prod_backward(ctx, g), dtype_rule=_sum_rule, meta=reduction_meta,
              saves=SAVE_INPUTS | SAVE_RESULT)


def _restore(value: Tensor, ctx) -> Tensor:
    """A reduced value reshaped to keepdim form, so it broadcasts against the input."""
    params = ctx.params
    if not params["keepdim"] and params["dim"]:
        return value.reshape(reduced_shape(ctx.input_meta[0][0], params["dim"], True))
    return value


def _conj_if_complex(x: Tensor) -> Tensor:
    return x.conj() if x._dtype.is_complex else x


def _prod_backward(ctx, g):
    """torch's prod_backward: result / input where no element is zero, else products of all the others."""
    x = ctx.inputs[0]
    if x.ndim == 0:
        return g
    grad = expand_grad(g, ctx)
    if not (x == 0).any().item():
        return grad * _conj_if_complex(_restore(ctx.result, ctx) / x)
    dims = ctx.params["dim"]
    if len(dims) == 1:
        return grad * _conj_if_complex(_products_of_others(x, dims[0]))
    return grad * _conj_if_complex(_products_of_others(x.reshape(-1), 0).reshape(x.shape))


def _products_of_others(x: Tensor, dim: int) -> Tensor:
    """For each element along `dim`, the product of all the other elements (exclusive cumprods both ways)."""
    from .movement import cat
    from .scan import scan_cumprod

    size = x.shape[dim]
    if size == 0:
        return x
    ones_shape = list(x.shape)
    ones_shape[dim] = 1
    ones = x.new_ones(ones_shape)
    before = scan_cumprod(cat([ones, x.narrow(dim, 0, size - 1)], dim), dim, reverse=False)
    after = scan_cumprod(cat([x.narrow(dim, 1, size - 1), ones], dim), dim, reverse=True)
    return before * after


@export
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype=None, out=None) -> Tensor:
    """Product of all elements, or over one `dim`; bool and integer inputs multiply in int64."""
    if dim is not None and not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(
            f"prod() received an invalid combination of arguments - got (Tensor, dim={type(dim).__name__}), but "
            "expected one of:\n * (Tensor input, *, torch.dtype dtype = None)\n * (Tensor input, int dim, "
            "bool keepdim = False, *, torch.dtype dtype = None, Tensor out = None)"
        )
    if dtype is not None:
        input = input.to(dtype)
    params = reduce_params(input, dim, keepdim if dim is not None else False)
    return finish_out(as_requested(call(_PROD, (input,), params), dtype), out)


# ---------------------------------------------------------------- var, std


def _variance_rule(name):
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category < 2:
            raise RuntimeError(f"{name} only support floating point and complex dtypes")
        return dtype, dtype.to_real()

    return rule


def _var_impl(xp, a, dim, keepdim, correction, take_sqrt=False):
    """Variance (or its square root) over `dim`.  On the CPU torch accumulates reduced-precision floats in double
    (WelfordOps<scalar_t, double>) and rounds once at the end; so does this, so a float32 std matches torch's
    to the last bit (a float32 two-pass sum was off by an ulp, which `(x - x.mean()) / x.std()` spreads)."""
    low_precision = a.dtype.itemsize < 8 and (a.dtype.kind == "f" or a.dtype.kind == "V")
    result_dtype = a.dtype
    if low_precision:
        a = a.astype(np.float64)
    count = 1
    for d in dim:
        count *= a.shape[d]
    mean = xp.sum(a, axis=dim, keepdims=True) / count if count else xp.sum(a, axis=dim, keepdims=True) * np.nan
    deviation = a - mean
    squares = (deviation * deviation.conj()).real if deviation.dtype.kind == "c" else deviation * deviation
    total = xp.sum(squares, axis=dim, keepdims=keepdim)
    divisor = count - correction
    divisor = divisor if divisor > 0 else 0
    result = xp.asarray(total) / xp.asarray(divisor, dtype=total.dtype)
    if take_sqrt:
        result = xp.sqrt(result)
    return result.astype(result_dtype) if low_precision else result


def _var_grad(g, ctx):
    """torch's var_backward: 2 / (n - correction) * grad * (x - mean)."""
    x = ctx.inputs[0]
    params = ctx.params
    count = 1
    for d in params["dim"]:
        count *= x.shape[d]
    dof = count - params["correction"]
    factor = 2.0 / dof if dof > 0 else float("inf")
    centered = x - x.mean(params["dim"], keepdim=True) if x.ndim else x - x
    return factor * expand_grad(g, ctx) * centered


def _std_backward(ctx, g):
    result = ctx.result
    grad_var = (g / (result * 2)).masked_fill(result == 0, 0)
    return _var_grad(grad_var, ctx)


_VAR = OpDef("var", _var_impl, lambda ctx, g: _var_grad(g, ctx), dtype_rule=_variance_rule("std and var"),
             meta=reduction_meta, saves=SAVE_INPUTS)
_STD = OpDef("std", lambda xp, a, **params: _var_impl(xp, a, **params, take_sqrt=True), _std_backward,
             dtype_rule=_variance_rule("std and var"), meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT)


def _variance_params(input: Tensor, dim, unbiased, keepdim: bool, correction) -> dict:
    """Normalise var/std's two signatures: (dim, unbiased, keepdim) and (dim, *, correction, keepdim)."""
    if isinstance(dim, bool):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var() received an invalid combination of arguments: unbiased and correction given")
    if correction is None:
        correction = 0 if unbiased is False else 1
    params = reduce_params(input, dim, keepdim)
    params["correction"] = correction
    return params


def _checked_variance(name: str, input: Tensor) -> None:
    if input._dtype.category < 2:
        raise RuntimeError(f"{name} only support floating point and complex dtypes")


@export
def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None,
        out=None) -> Tensor:
    """Variance over `dim` with Bessel's `correction` (default 1; `unbiased=False` means 0)."""
    params = _variance_params(input, dim, unbiased, keepdim, correction)
    return finish_out(call(_VAR, (input,), params), out)


@export
def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None,
        out=None) -> Tensor:
    """Standard deviation over `dim` (sqrt of var)."""
    params = _variance_params(input, dim, unbiased, keepdim, correction)
    return finish_out(call(_STD, (input,), params), out)


@export(method=False)
def var_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """(var, mean) over the same dims."""
    _checked_variance("var_mean", input)
    params = _variance_params(input, dim, unbiased, keepdim, correction)
    dims = params["dim"]
    return call(_VAR, (input,), params), mean(input, dims, keepdim)


@export(method=False)
def std_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None):
    """(std, mean) over the same dims."""
    _checked_variance("std_mean", input)
    params = _variance_params(input, dim, unbiased, keepdim, correction)
    dims = params["dim"]
    return call(_STD, (input,), params), mean(input, dims, keepdim)


# ---------------------------------------------------------------- logsumexp


def _logsumexp_impl(xp, a, dim, keepdim):
    """log(sum(exp(a))) with the maximum taken out first, so large inputs don't overflow."""
    if a.size == 0 or not dim:
        return xp.log(xp.sum(xp.exp(a), axis=dim, keepdims=keepdim))
    peak = xp.max(a, axis=dim, keepdims=True)
    peak = xp.where(xp.isinf(peak), 0, peak)
    result = xp.log(xp.sum(xp.exp(a - peak), axis=dim, keepdims=True)) + peak
    return result if keepdim else xp.squeeze(result, axis=dim)


_LOGSUMEXP = OpDef("logsumexp", _logsumexp_impl,
                   lambda ctx, g: expand_grad(g, ctx) * (ctx.inputs[0] - _restore(ctx.result, ctx)).exp(),
                   meta=reduction_meta, saves=SAVE_INPUTS | SAVE_RESULT)


@export
def logsumexp(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """log(sum(exp(input), dim)), computed stably; integer inputs give the default float dtype."""
    if input._dtype.category < 2:
        input = input.to(dt.get_default_dtype())
    return finish_out(call(_LOGSUMEXP, (input,), reduce_params(input, dim, keepdim)), out)
