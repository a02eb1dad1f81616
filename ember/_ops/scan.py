"""Scans along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp, and diff.

Each scan op takes a `reverse` param (scan from the end of the dim), so that
the backward of a scan is another scan written in ember ops: the gradient of
cumsum is a reverse cumsum, and so on, which keeps double backward working
without a flip op.
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ..return_types import cummax as cummax_type
from ..return_types import cummin as cummin_type
from ._api import as_requested, export, finish_out, make_inplace, write_out
from .indexing import spread
from .movement import cat


def _along(xp, function, a, dim, reverse):
    """function(a, axis=dim), scanning from the end of the dim when `reverse`."""
    if a.ndim == 0:
        return a.copy()
    if reverse:
        return xp.flip(function(xp.flip(a, dim), axis=dim), dim)
    return function(a, axis=dim)


def _integral_to_long(args, params):
    """cumsum/cumprod: bool and integer inputs accumulate in int64, like sum."""
    dtype = args[0]._dtype
    if dtype.category < 2:
        return dt.int64, dt.int64
    return dtype, dtype


def _reverse_params(ctx) -> dict:
    return {"dim": ctx.params["dim"], "reverse": not ctx.params["reverse"]}


# ---------------------------------------------------------------- cumsum, cumprod


# torch's CPU cumsum/cumprod carry the running value in at::acc_type<T, /*is_cuda=*/false> and round each
# output to T: double for float32 (and complex double for complex64), float for the half types.
_CPU_ACCUMULATE = {"float32": np.float64, "complex64": np.complex128, "float16": np.float32,
                   "bfloat16": np.float32}


def _accumulated_scan(xp, function, a, dim, reverse):
    """function along `dim` in torch's CPU accumulation type, rounded back to a's dtype (on CuPy too, so that
    a GPU scan equals the CPU one up to the device's own arithmetic)."""
    wide = _CPU_ACCUMULATE.get(a.dtype.name)
    if wide is None:
        return _along(xp, function, a, dim, reverse)
    return _along(xp, function, a.astype(wide), dim, reverse).astype(a.dtype)


def _cumsum_impl(xp, a, dim, reverse):
    return _accumulated_scan(xp, xp.cumsum, a, dim, reverse)


def _cumsum_backward(ctx, g):
    if g.ndim == 0:
        return g
    return call(_CUMSUM, (g,), _reverse_params(ctx))


# upcast_half=False: the impl widens every floating type itself (_accumulated_scan)
_CUMSUM = OpDef("cumsum", _cumsum_impl, _cumsum_backward, dtype_rule=_integral_to_long, upcast_half=False)


def _cumprod_impl(xp, a, dim, reverse):
    return _accumulated_scan(xp, xp.cumprod, a, dim, reverse)


def _cumprod_backward(ctx, g):
    """Without zeros: reverse_cumsum(g * out) / x.  With zeros: the products of all the other factors, built
    as an (n, n) cumprod per slice (exact, and itself differentiable)."""
    x = ctx.inputs[0]
    if x.ndim == 0 or x.numel() == 0:
        return g
    dim, reverse = ctx.params["dim"], ctx.params["reverse"]
    result = ctx.result
    conj = (lambda t: t.conj()) if x._dtype.is_complex else (lambda t: t)
    if not (x == 0).any().item():
        return call(_CUMSUM, (g * conj(result),), _reverse_params(ctx)) / conj(x)
    size = x.shape[dim]
    last = x.movedim(dim, -1)
    grad_last = g.movedim(dim, -1)
    eye = _eye_mask(size, x)
    # rows[..., j, i] = cumprod over i of x with x_j replaced by 1: prod_{k <= i, k != j} x_k for i >= j
    rows = last.unsqueeze(-2).expand(*last.shape[:-1], size, size).masked_fill(eye, 1)
    products = call(_CUMPROD, (rows,), {"dim": rows.ndim - 1, "reverse": reverse})
    later = _later_mask(size, x, reverse)
    total = (conj(products) * grad_last.unsqueeze(-2) * later).sum(-1)
    return total.movedim(-1, dim)


def _eye_mask(size: int, like: Tensor) -> Tensor:
    from .creation import tensor

    return tensor(np.eye(size, dtype=bool), device=like.device)


def _later_mask(size: int, like: Tensor, reverse: bool) -> Tensor:
    """mask[j, i]: output i depends on input j (i >= j scanning forward, i <= j in reverse)."""
    from .creation import tensor

    upper = np.triu(np.ones((size, size), dtype=bool))
    return tensor(upper.T if reverse else upper, device=like.device)


_CUMPROD = OpDef("cumprod", _cumprod_impl, _cumprod_backward, dtype_rule=_integral_to_long,
                 saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False)


def scan_cumprod(input: Tensor, dim: int, reverse: bool = False) -> Tensor:
    """cumprod along `dim`, from the end when `reverse` (used by prod's backward)."""
    return call(_CUMPROD, (input,), {"dim": dim, "reverse": reverse})


def _scan(op, input: Tensor, dim, dtype, out, reverse=False):
    if dtype is not None:
        input = input.to(dtype)
    params = {"dim": wrap_dim(dim, input.ndim), "reverse": reverse}
    return finish_out(as_requested(call(op, (input,), params), dtype), out)


@export
def cumsum(input: Tensor, dim: int, *, dtype=None, out=None) -> Tensor:
    """Cumulative sum along `dim`; bool and integer inputs accumulate in int64."""
    return _scan(_CUMSUM, input, dim, dtype, out)


@export
def cumprod(input: Tensor, dim: int, *, dtype=None, out=None) -> Tensor:
    """Cumulative product along `dim`; the gradient is exact where the input has zeros."""
    return _scan(_CUMPROD, input, dim, dtype, out)


def _scan_inplace(fn, name: str):
    """Tensor.cumsum_/cumprod_: the generated in-place variant, plus torch's check that `dtype` is self's."""
    generated = make_inplace(fn, name)

    def method(self, dim: int, *, dtype=None) -> Tensor:
        if dtype is not None and dtype is not self._dtype:
            raise RuntimeError(
                f"Bad in-place call: input tensor dtype {SCALAR_NAMES[self._dtype.name].lower()} and output tensor "
                f"dtype {SCALAR_NAMES[dtype.name].lower()} should match"
            )
        return generated(self, dim)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = generated.__doc__
    return export(method, name=name, function=False)


_scan_inplace(cumsum, "cumsum_")
_scan_inplace(cumprod, "cumprod_")


# ---------------------------------------------------------------- cummax, cummin


def _cumulative_extreme(accumulate, compare):
    """torch's cummax/cummin: ties take the later index, and a nan (each new one) takes over from there on."""

    def impl(xp, a, dim):
        if a.ndim == 0:
            return a.copy(), xp.zeros((), np.int64)
        values = accumulate(a, axis=dim)
        positions = xp.arange(a.shape[dim]).reshape([-1 if d == dim else 1 for d in range(a.ndim)])
        if a.dtype.kind in "fcV":
            candidate = xp.isnan(a) | compare(a, values)
        else:
            candidate = compare(a, values)
        marked = xp.where(candidate, positions, 0)
        indices = xp.maximum.accumulate(marked, axis=dim) if a.size else marked
        return values, indices.astype(np.int64)

    return impl


def _cumulative_extreme_backward(ctx, grads):
    g, _ = grads
    _, indices = ctx.result
    if g.ndim == 0:
        return g
    return spread(g, indices, ctx.params["dim"], ctx.input_meta[0][0])


_CUMMAX = OpDef("cummax", _cumulative_extreme(np.maximum.accumulate, np.equal), _cumulative_extreme_backward,
                dtype_rule=lambda a, p: (None, (a[0]._dtype, dt.int64)), outputs=2, saves=SAVE_RESULT,
                upcast_half=False)
_CUMMIN = OpDef("cummin", _cumulative_extreme(np.minimum.accumulate, np.equal), _cumulative_extreme_backward,
                dtype_rule=lambda a, p: (None, (a[0]._dtype, dt.int64)), outputs=2, saves=SAVE_RESULT,
                upcast_half=False)


def _extreme_scan(op, result_type, input: Tensor, dim: int, out):
    if input._dtype.is_complex:  # complex numbers have no order: torch's kernel has no complex version
        raise NotImplementedError(f"\"{op.name}_cpu\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")
    values, indices = call(op, (input,), {"dim": wrap_dim(dim, input.ndim)})
    if out is not None:
        write_out(out[0], values)
        write_out(out[1], indices)
        values, indices = out
    return result_type(values, indices)


@export
def cummax(input: Tensor, dim: int, *, out=None):
    """(values, indices) of the running maximum along `dim`."""
    return _extreme_scan(_CUMMAX, cummax_type, input, dim, out)


@export
def cummin(input: Tensor, dim: int, *, out=None):
    """(values, indices) of the running minimum along `dim`."""
    return _extreme_scan(_CUMMIN, cummin_type, input, dim, out)


# ---------------------------------------------------------------- logcumsumexp


def _logcumsumexp_impl(xp, a, dim, reverse):
    if a.dtype.kind == "c":
        return _along(xp, lambda values, axis: _complex_log_add_exp_scan(xp, values, axis), a, dim, reverse)
    return _along(xp, xp.logaddexp.accumulate, a, dim, reverse)


def _complex_log_add_exp(xp, x, y):
    """ATen's complex _log_add_exp_helper: log1p(exp(min - max)) + max with min/max by real part (the imaginary
    part is not wrapped to (-pi, pi], as torch's is not); NaNs infect, equal infinite real parts are special."""
    swap = x.real > y.real
    low, high = xp.where(swap, y, x), xp.where(swap, x, y)
    with np.errstate(invalid="ignore", over="ignore"):
        result = xp.log1p(xp.exp(low - high)) + high
        infinite = ~xp.isfinite(low.real) & (low.real == high.real)
        if infinite.any():
            both = xp.log(xp.exp(low) + xp.exp(high))
            result = xp.where(infinite, xp.where(low.real < 0, low, both), result)
    nan = xp.isnan(low.real) | xp.isnan(low.imag)
    return xp.where(nan, xp.asarray(complex(np.nan, np.nan), low.dtype), result)


def _complex_log_add_exp_scan(xp, a, axis):
    """The running log-add-exp of a complex array along `axis`, element by element as torch's scan."""
    moved = xp.moveaxis(a, axis, 0)
    out = xp.empty_like(moved)
    if moved.shape[0]:
        accumulator = moved[0]
        out[0] = accumulator
        for index in range(1, moved.shape[0]):
            accumulator = _complex_log_add_exp(xp, moved[index], accumulator)
            out[index] = accumulator
    return xp.moveaxis(out, 0, axis)


def _logcumsumexp_backward(ctx, g):
    """torch's logcumsumexp_backward: positive and negative parts of grad, each a stable reverse logcumsumexp."""
    x, result = ctx.inputs[0], ctx.result
    if x.ndim == 0:
        return g
    if x._dtype.is_complex:  # torch's complex formula: a reversed cumsum of g / conj(exp(result)), times conj(exp(x))
        dim = ctx.params["dim"]
        return (g / result.exp().conj()).flip(dim).cumsum(dim).flip(dim) * x.exp().conj()
    lowest = float(np.finfo(x._dtype.np_dtype if x._dtype.np_dtype.kind == "f" else np.float32).min)
    log_abs = g.abs().log()
    positive = log_abs.masked_fill(g <= 0, lowest)
    negative = log_abs.masked_fill(g >= 0, lowest)
    params = _reverse_params(ctx)
    out_positive = (call(_LOGCUMSUMEXP, (positive - result,), params) + x).exp()
    out_negative = (call(_LOGCUMSUMEXP, (negative - result,), params) + x).exp()
    return out_positive - out_negative


def _float_scan_rule(name, complex_ok: bool = False):
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category != 2 and not (complex_ok and dtype.category == 3):
            raise NotImplementedError(f'"{name}_out_cpu" not implemented for \'{SCALAR_NAMES[dtype.name]}\'')
        return dtype, dtype

    return rule


_LOGCUMSUMEXP = OpDef("logcumsumexp", _logcumsumexp_impl, _logcumsumexp_backward,
                      dtype_rule=_float_scan_rule("logcumsumexp", complex_ok=True), saves=SAVE_INPUTS | SAVE_RESULT)


@export
def logcumsumexp(input: Tensor, dim: int, *, out=None) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed stably."""
    return _scan(_LOGCUMSUMEXP, input, dim, None, out)


# ---------------------------------------------------------------- diff


def _diff_impl(xp, a, n, dim):
    return xp.diff(a, n=n, axis=dim)


def _diff_adjoint_impl(xp, g, n, dim):
    """The transpose of one forward difference, n times: out_j = g_{j-1} - g_j (zero outside)."""
    for _ in range(n):
        pad = [(0, 0)] * g.ndim
        pad[dim] = (1, 1)
        g = -xp.diff(xp.pad(g, pad), axis=dim)
    return g


# upcast_half=False: torch rounds each difference of a half tensor, the n-th difference included
_DIFF = OpDef("diff", _diff_impl, lambda ctx, g: call(_DIFF_ADJOINT, (g,), ctx.params), upcast_half=False)
_DIFF_ADJOINT = OpDef("diff_backward", _diff_adjoint_impl, lambda ctx, g: call(_DIFF, (g,), ctx.params),
                      upcast_half=False)


def _check_diff_operand(input: Tensor, other: Tensor, dim: int) -> None:
    if other.ndim != input.ndim:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for d in range(input.ndim):
        if d != dim and other.shape[d] != input.shape[d]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input except along the "
                f"differencing dimension; input.size({d}) = {input.shape[d]}, but got tensor.size({d}) = "
                f"{other.shape[d]}"
            )


@export
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None, append: Tensor | None = None,
         *, out=None) -> Tensor:
    """The n-th forward difference along `dim`, after concatenating `prepend` and `append`."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = wrap_dim(dim, input.ndim)
    parts = []
    for other in (prepend, input, append):
        if other is None:
            continue
        if other is not input:
            _check_diff_operand(input, other, dim)
        parts.append(other)
    if len(parts) > 1:
        input = cat(parts, dim)
    if n == 0:
        return finish_out(input, out)
    n = n if n <= input.shape[dim] else input.shape[dim]
    return finish_out(call(_DIFF, (input,), {"n": n, "dim": dim}), out)
