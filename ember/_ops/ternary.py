"""Pointwise ops of three operands: lerp, addcmul, addcdiv, and clamp (a value between two bounds).

Declared with elementwise.py's `pointwise` helper, like the other pointwise families; kept apart so
elementwise.py stays a readable size.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._dispatch import call, result_type_of_args
from .._tensor import SCALAR_NAMES, Tensor
from . import special_math
from ._api import export, finish_out
from .elementwise import _conj, _reusing, pointwise, where


def _c_type_name(dtype: dt.dtype) -> str:
    """The C++ type name torch's messages print for a dtype (float, long int, c10::Half ...)."""
    return dt.CPP_TYPE_NAMES[dtype.name]


def _lerp_impl(xp, a, b, w, out=None):
    """torch's lerp: a + w * (b - a) for |w| < 0.5, b - (b - a) * (1 - w) otherwise (exact at both ends),
    each one fused multiply-add where torch's kernels fuse (a C loop on the CPU, ember/_compile/loops.py)."""
    fused = special_math.torch_fuses_multiply_add(xp)
    if fused and xp is np:
        from .._compile.loops import lerp

        done = lerp(a, b, w, out)
        if done is not None:
            return done
    difference = b - a
    if fused:
        w = xp.asarray(w, dtype=difference.dtype) if not hasattr(w, "dtype") else w
        low = special_math.fused_multiply_add(xp, w, difference, a)
        high = special_math.fused_multiply_add(xp, -difference, (1 - w).astype(difference.dtype), b)
    else:
        low, high = a + w * difference, b - difference * (1 - w)
    result = xp.where(xp.abs(w) < 0.5, low, high)
    if out is None:
        return result.astype(xp.result_type(a, b), copy=False)
    out[...] = result
    return out


def _lerp_out(xp, out, a, b, w):
    _lerp_impl(xp, a, b, w, out)


_LERP = pointwise("lerp", lambda xp, a, b, w: _lerp_impl(xp, a, b, w), lambda ctx, g: _lerp_backward(ctx, g),
                  out_impl=_lerp_out)
_LERP.opmath_scalars = True  # a number weight enters as float32, not rounded to bf16 (torch's kernel)


def _lerp_backward(ctx, g):
    a, b, w = ctx.inputs
    return g * _conj(1 - w), g * _conj(w), (g * _conj(b - a) if isinstance(w, Tensor) else None)


@export(inplace=True)
def lerp(input, end, weight, *, out=None) -> Tensor:
    """input + weight * (end - input); end (and a tensor weight with dims) must share input's dtype, as in torch."""
    if end._dtype is not input._dtype:
        raise RuntimeError(f"expected dtype {_c_type_name(input._dtype)} for `end` but got dtype "
                           f"{_c_type_name(end._dtype)}")
    if isinstance(weight, Tensor) and weight._data.ndim and weight._dtype is not input._dtype:
        raise RuntimeError(f"expected dtype {_c_type_name(input._dtype)} for `weight` but got dtype "
                           f"{_c_type_name(weight._dtype)}")
    if input._dtype.category < 2:  # torch's kernels are floating and complex only
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{SCALAR_NAMES[input._dtype.name]}\'')
    return finish_out(call(_LERP, (input, end, weight)), out)


def _addcmul_backward(ctx, g):
    _, t1, t2 = ctx.inputs
    _, need_t1, need_t2 = ctx.needs_input_grad
    value = ctx.params.get("value", 1)
    return g, (g * _conj(t2 * value) if need_t1 else None), (g * _conj(t1 * value) if need_t2 else None)


def _addcdiv_backward(ctx, g):
    _, t1, t2 = ctx.inputs
    _, need_t1, need_t2 = ctx.needs_input_grad
    value = ctx.params.get("value", 1)
    return (g, (g * _conj(value / t2) if need_t1 else None),
            (-g * _conj(value * t1 / t2.square()) if need_t2 else None))


def _addcmul_impl(xp, a, t1, t2, value=1, out=None):
    """a + value * t1 * t2; where torch's kernels fuse multiply-adds it rounds as fma(value * t1, t2, a) (a C
    loop on the CPU)."""
    fused = special_math.torch_fuses_multiply_add(xp) and not isinstance(value, complex)
    if fused and xp is np:
        from .._compile.loops import addcmul

        done = addcmul(a, t1, t2, value, out)
        if done is not None:
            return done
    scaled = special_math.scalar_like(value, t1) * t1
    result = special_math.fused_multiply_add(xp, scaled, t2, a) if fused else a + scaled * t2
    if out is None:
        return result
    out[...] = result
    return out


def _addcmul_out(xp, out, a, t1, t2, value=1):
    _addcmul_impl(xp, a, t1, t2, value, out)


def _addcdiv_out(xp, out, a, t1, t2, value=1):
    scaled = value * t1
    quotient = _reusing(xp.true_divide, scaled, t2, scaled, out)
    xp.add(a, quotient, out=out, casting="unsafe")


_ADDCMUL = pointwise("addcmul", _addcmul_impl, _addcmul_backward, out_impl=_addcmul_out)
_ADDCDIV = pointwise("addcdiv", lambda xp, a, t1, t2, value=1: a + value * t1 / t2, _addcdiv_backward,
                     out_impl=_addcdiv_out)
# as torch's AddcmulBackward0 / AddcdivBackward0: only the operands a needed gradient reads are saved, so an
# in-place write to the others afterwards (an optimizer's state, the next step) stays legal; AddcdivBackward0
# keeps the divisor whenever it runs at all, so writing to that stays an error, as in torch
_ADDCMUL.grad_reads = ((), (2,), (1,))
_ADDCDIV.grad_reads = ((2,), (2,), (1, 2))


@export(inplace=True)
def addcmul(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 * tensor2."""
    return finish_out(call(_ADDCMUL, (input, tensor1, tensor2), {"value": value} if value != 1 else {}), out)


@export(inplace=True)
def addcdiv(input, tensor1, tensor2, *, value=1, out=None) -> Tensor:
    """input + value * tensor1 / tensor2 (integer division is an error, as in torch)."""
    if tensor1._dtype.category < 2 and tensor2._dtype.category < 2:
        raise RuntimeError(
            # torch's message has two spaces after "future"
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
            "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
            "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    return finish_out(call(_ADDCDIV, (input, tensor1, tensor2), {"value": value} if value != 1 else {}), out)


def _clamp_backward(ctx, g):
    a, low, high = ctx.inputs
    inside = None
    grad_low = grad_high = None
    if low is not None:
        inside = a >= low
        if isinstance(low, Tensor) and ctx.needs_input_grad[1]:
            grad_low = where(a < low, g, 0.0)
    if high is not None:
        below = a <= high
        inside = below if inside is None else inside & below
        if isinstance(high, Tensor) and ctx.needs_input_grad[2]:
            grad_high = where(a > high, g, 0.0)
    return where(inside, g, 0.0), grad_low, grad_high


def _clamp_out(xp, out, a, low, high):
    if low is not None:
        xp.maximum(a, low, out=out)
        a = out
    if high is not None:
        xp.minimum(a, high, out=out)


_CLAMP = pointwise("clamp", special_math.clamp, _clamp_backward, grad_name=None, out_impl=_clamp_out)


@export(inplace=True, aliases=("clip",))
def clamp(input, min=None, max=None, *, out=None) -> Tensor:
    """Clamp into [min, max]; bounds may be scalars or tensors; nan propagates."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if input._dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None and max is not None:
        raise TypeError(f"clamp() received an invalid combination of arguments - got (Tensor, "
                        f"{type(min).__name__}, {type(max).__name__}): min and max must both be Tensors or Numbers")
    if input._qparams is None:
        compute = result_type_of_args((input, min, max))
        if compute is dt.bool_:
            _check_bool_clamp(min, max)
        for bound in (min, max):
            if bound is not None and not isinstance(bound, Tensor):
                _check_scalar_bound(bound, compute)
    result = call(_CLAMP, (input, min, max))  # quantized input: ember/_ops/quantized_ops.py
    if out is None:  # torch's overloads: clamp(Scalar, Scalar) is ClampBackward1, clamp(Tensor, Tensor) 0
        name_node(result, "ClampBackward0" if isinstance(min, Tensor) or isinstance(max, Tensor) else "ClampBackward1")
    return finish_out(result, out)


def _check_scalar_bound(value, dtype: dt.dtype) -> None:
    """torch's clamp kernels convert a number bound with c10's checked conversion (`min.to<scalar_t>()`):
    a value outside the type's range is an error, not a wrapped bound (unsigned types accept down to -max)."""
    if isinstance(value, np.generic):
        value = value.item()
    if dtype.category == 1 and isinstance(value, int):
        info = dt.iinfo(dtype)
        lowest = info.min if dtype.is_signed else -info.max
        overflow = not lowest <= value <= info.max
    elif dtype.category == 2 and dtype is not dt.float64 and isinstance(value, (int, float)):
        overflow = math.isfinite(value) and abs(value) > float(dt.finfo(dtype).max)
    else:
        return
    if overflow:
        raise RuntimeError(f"value cannot be converted to type {dt.CONVERSION_TYPE_NAMES[dtype.name]} without "
                           "overflow")


def _check_bool_clamp(min, max) -> None:
    """torch's clamp kernels reject bool except clamp_min/clamp_max with one tensor bound."""
    if isinstance(min, Tensor) and isinstance(max, Tensor):
        raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return
    kernel = "clamp_scalar" if min is not None and max is not None else "clamp_min_scalar" if max is None \
        else "clamp_max_scalar"
    raise NotImplementedError(f"\"{kernel}_cpu\" not implemented for 'Bool'")


def _refuse_quantized(input) -> None:
    """clamp_min / clamp_max have no QuantizedCPU kernel: torch fails promoting the bound against the input."""
    if isinstance(input, Tensor) and input._qparams is not None:
        raise RuntimeError("promoteTypes with quantized numbers is not handled yet; figure out what the correct "
                           f"rules should be, offending types: {SCALAR_NAMES[input._dtype.name]} Float")


@export(inplace=True)
def clamp_min(input, min, *, out=None) -> Tensor:
    _refuse_quantized(input)
    result = clamp(input, min=min, out=out)
    if out is None:  # torch: clamp_min(Scalar) ClampMinBackward0, clamp_min(Tensor) 1
        name_node(result, "ClampMinBackward1" if isinstance(min, Tensor) else "ClampMinBackward0")
    return result


@export(inplace=True)
def clamp_max(input, max, *, out=None) -> Tensor:
    _refuse_quantized(input)
    result = clamp(input, max=max, out=out)
    if out is None:
        name_node(result, "ClampMaxBackward1" if isinstance(max, Tensor) else "ClampMaxBackward0")
    return result


