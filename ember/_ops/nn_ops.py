"""Neural-network primitives: activations, softmax family, linear, dropout.

Most activations could be written as compositions of pointwise ops; the ones
here are primitives because training calls them constantly (one NumPy pass
forward, one backward, instead of several) or because torch's subgradient at a
kink (relu at 0 -> 0) must be reproduced exactly.  Their gradients are
written in ember ops, so double backward works.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .._autograd.node import name_node
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call, promote
from .._tensor import Tensor, wrap_dim
from . import special_math
from ._api import export, not_implemented
from ._shapes import broadcast_meta


def _float_rule(kernel: str):
    """A dtype rule for floating-only ops (activations, softmax): torch's NotImplementedError names its CPU
    kernel."""
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category < 2:
            raise not_implemented(kernel, dtype)
        return dtype, dtype

    return rule


# ---------------------------------------------------------------- generated kernels (NOTE [ Eager ops on
# generated kernels ] in ember/_compile/native.py): softmax, log_softmax and GELU on float32/float64 rows


def _kernel(key: str, fn, array, n_inputs: int = 1, backward: bool = False):
    """The generated kernel for `fn` when `array` qualifies (last dim, float, large), else None."""
    from .._compile import native

    if not native.usable(array, -1):
        return None
    return native.kernels(key, fn, dt.float32 if array.dtype == np.float32 else dt.float64, n_inputs, backward)


def _backward_kernel(tensor: Tensor, key: str, fn, n_inputs: int = 1, backward: bool = False):
    """The generated kernel a backward formula may use instead of its ember ops: none while a graph is being
    recorded (double backward needs the formula itself), when `tensor` does not qualify, or when the kernel
    could not be built."""
    from .._autograd.grad_mode import state

    return None if state.enabled else _kernel(key, fn, tensor._data, n_inputs, backward)


def _kernel_op(name, key, fn, n_inputs):
    """A non-differentiable op running fn's generated kernel on arrays; backward formulas call it after
    `_backward_kernel` found that kernel (so it exists here: built once, cached)."""
    def impl(xp, *arrays, **params):
        return _kernel(key.format(**params), lambda *t: fn(*t, **params), arrays[0], n_inputs)(*arrays)[0]

    return OpDef(name, impl, None, dtype_rule=lambda args, params: (None, args[0]._dtype), meta=broadcast_meta)


def _activation(name, impl, backward, saves=SAVE_INPUTS, rule=promote):
    return OpDef(name, impl, backward, dtype_rule=rule, saves=saves, meta=broadcast_meta)


def _relu_rule(args, params):
    """torch's relu refuses bool (its own check) and complex (as clamp, which it calls)."""
    dtype = args[0]._dtype
    if dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if dtype.is_complex:
        raise NotImplementedError("clamp is not supported for complex types")
    return dtype, dtype


# relu: the subgradient at 0 is 0, as torch's threshold_backward.
RELU = _activation("relu", lambda xp, a: xp.maximum(a, 0), lambda ctx, g: g * (ctx.result > 0), saves=SAVE_RESULT,
                   rule=_relu_rule)


def _leaky_impl(xp, a, negative_slope):
    return xp.where(a > 0, a, a * negative_slope)


def _leaky_backward(ctx, g):
    x = ctx.inputs[0]
    return g.where(x > 0, g * ctx.params["negative_slope"])


LEAKY_RELU = _activation("leaky_relu", _leaky_impl, _leaky_backward, rule=_float_rule("leaky_relu_cpu"))


def _elu_impl(xp, a, alpha, scale, input_scale):
    return xp.where(a > 0, a * scale, alpha * scale * xp.expm1(a * input_scale))


def _elu_backward(ctx, g):
    x = ctx.inputs[0]
    alpha, scale, input_scale = ctx.params["alpha"], ctx.params["scale"], ctx.params["input_scale"]
    negative = g * (x * input_scale).exp() * (alpha * scale * input_scale)
    return (g * scale).where(x > 0, negative)


ELU = _activation("elu", _elu_impl, _elu_backward, rule=_float_rule("elu_cpu"))


def _gelu_impl(xp, a, approximate):
    kernel = _kernel(f"gelu_{approximate}", lambda x: _gelu(x, approximate), a, backward=True)
    if kernel is not None:
        return kernel(a)[0]
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (a + 0.044715 * a * a * a)
        return 0.5 * a * (1.0 + xp.tanh(inner))
    return 0.5 * a * (1.0 + special_math.erf(xp, a * (1.0 / math.sqrt(2.0))))


def _gelu(x, approximate):
    return call(GELU, (x,), {"approximate": approximate})


def _gelu_grad_impl(xp, x, g, approximate):
    kernel = _kernel(f"gelu_{approximate}", lambda t: _gelu(t, approximate), x, backward=True)
    return kernel.gradients([x], [g])[0]


_GELU_GRAD = OpDef("gelu_backward", _gelu_grad_impl, None, dtype_rule=lambda args, params: (None, args[0]._dtype),
                   meta=broadcast_meta)


def _gelu_backward(ctx, g):
    x = ctx.inputs[0]
    approximate = ctx.params["approximate"]
    if g.shape == x.shape and g._dtype is x._dtype and _backward_kernel(
            x, f"gelu_{approximate}", lambda t: _gelu(t, approximate), backward=True) is not None:
        return call(_GELU_GRAD, (x, g), {"approximate": approximate})
    if ctx.params["approximate"] == "tanh":
        k = math.sqrt(2.0 / math.pi)
        inner = k * (x + 0.044715 * x.pow(3))
        t = inner.tanh()
        d_inner = k * (1 + 3 * 0.044715 * x.square())
        return g * (0.5 * (1 + t) + 0.5 * x * (1 - t.square()) * d_inner)
    cdf = 0.5 * (1 + (x * (1.0 / math.sqrt(2.0))).erf())
    pdf = (-0.5 * x.square()).exp() * (1.0 / math.sqrt(2.0 * math.pi))
    return g * (cdf + x * pdf)


GELU = _activation("gelu", _gelu_impl, _gelu_backward, rule=_float_rule("GeluKernelImpl"))


def _silu_impl(xp, a):
    return a * special_math.sigmoid(xp, a)


def _silu_backward(ctx, g):
    x = ctx.inputs[0]
    s = x.sigmoid()
    return g * s * (1 + x * (1 - s))


SILU = _activation("silu", _silu_impl, _silu_backward, rule=_float_rule("silu_cpu"))


def _softplus_impl(xp, a, beta, threshold):
    scaled = a * beta
    return xp.where(scaled > threshold, a, xp.log1p(xp.exp(xp.minimum(scaled, threshold))) / beta)


def _softplus_backward(ctx, g):
    x = ctx.inputs[0]
    beta, threshold = ctx.params["beta"], ctx.params["threshold"]
    scaled = x * beta
    return g.where(scaled > threshold, g * scaled.sigmoid())


SOFTPLUS = _activation("softplus", _softplus_impl, _softplus_backward, rule=_float_rule("softplus_cpu"))


def _hardtanh_impl(xp, a, min_val, max_val):
    return xp.minimum(xp.maximum(a, min_val), max_val)


def _hardtanh_backward(ctx, g):
    x = ctx.inputs[0]
    inside = (x > ctx.params["min_val"]) & (x < ctx.params["max_val"])
    return g * inside


HARDTANH = _activation("hardtanh", _hardtanh_impl, _hardtanh_backward)


def _hardsigmoid_impl(xp, a):
    return xp.minimum(xp.maximum(a + 3, 0), 6) / 6


# torch's hardsigmoid_backward multiplies by the float constant 1.0f / 6.0f at every precision (float64 too)
HARDSIGMOID_SLOPE = float(np.float32(1.0) / np.float32(6.0))


def _hardsigmoid_backward(ctx, g):
    x = ctx.inputs[0]
    return g * ((x > -3) & (x < 3)) * HARDSIGMOID_SLOPE


# a primitive, not hardtanh(x / 6 + 0.5): that composite's gradient is the exact 1/6, off torch's in float64
HARDSIGMOID = _activation("hardsigmoid", _hardsigmoid_impl, _hardsigmoid_backward, rule=_float_rule("hardsigmoid_cpu"))


# ---------------------------------------------------------------- softmax family


def _softmax_impl(xp, a, dim):
    kernel = _kernel("softmax", lambda x: call(SOFTMAX, (x,), {"dim": x.ndim - 1}), a) if dim == a.ndim - 1 else None
    if kernel is not None:
        return kernel(a)[0]
    if a.ndim == 0 or not a.size:
        e = xp.exp(a - a)
        return e / e
    # one output buffer, updated in place: three passes fewer than the textbook expression
    out = a - a.max(axis=dim, keepdims=True)
    xp.exp(out, out=out)
    out /= out.sum(axis=dim, keepdims=True)
    return out


def _log_softmax_impl(xp, a, dim):
    kernel = (_kernel("log_softmax", lambda x: call(LOG_SOFTMAX, (x,), {"dim": x.ndim - 1}), a)
              if dim == a.ndim - 1 else None)
    if kernel is not None:
        return kernel(a)[0]
    if not a.size:
        return a.copy()
    if a.ndim == 0:
        return a - a
    shifted = a - a.max(axis=dim, keepdims=True)
    total = xp.exp(shifted).sum(axis=dim, keepdims=True)
    shifted -= xp.log(total)
    return shifted


def _log_softmax_half_impl(xp, half, a, dim):
    """torch's last-dim kernel for float16/bfloat16 (serial_vec_log_softmax_lastdim_range) keeps the row's sum of
    exponentials and then its log in half-type buffers: both are rounded to it before `x - max - log(sum)`,
    computed in float32 and rounded once.  Its kernel for other dims keeps them in float32, as the impl does."""
    if dim != a.ndim - 1 or a.ndim == 0 or not a.size:
        return _log_softmax_impl(xp, a, dim)
    shifted = a - a.max(axis=-1, keepdims=True)
    total = xp.exp(shifted).sum(axis=-1, keepdims=True).astype(half).astype(a.dtype)
    shifted -= xp.log(total).astype(half).astype(a.dtype)
    return shifted


def _softmax_grad(y, g, dim):
    return y * (g - (g * y).sum(dim, keepdim=True))


def _log_softmax_grad(y, g, dim):
    return g - y.exp() * g.sum(dim, keepdim=True)


def _last_dim(formula):
    """The formula over the last dim, as the generated kernels trace it."""
    return lambda y, g: formula(y, g, -1)


def _softmax_backward(ctx, g):
    y = ctx.result
    dim = ctx.params["dim"]
    if dim == y.ndim - 1 and g.shape == y.shape and g._dtype is y._dtype and _backward_kernel(
            y, "softmax_backward", _last_dim(_softmax_grad), 2) is not None:
        return call(_SOFTMAX_GRAD, (y, g))
    return _softmax_grad(y, g, dim)


def _log_softmax_backward(ctx, g):
    y = ctx.result
    dim = ctx.params["dim"]
    if dim == y.ndim - 1 and g.shape == y.shape and g._dtype is y._dtype and _backward_kernel(
            y, "log_softmax_backward", _last_dim(_log_softmax_grad), 2) is not None:
        return call(_LOG_SOFTMAX_GRAD, (y, g))
    return _log_softmax_grad(y, g, dim)


_SOFTMAX_GRAD = _kernel_op("softmax_backward_data", "softmax_backward", _last_dim(_softmax_grad), 2)
_LOG_SOFTMAX_GRAD = _kernel_op("log_softmax_backward_data", "log_softmax_backward", _last_dim(_log_softmax_grad), 2)


def _softmax_family_rule(name: str):
    """Real floating only; torch's error names its last-dim kernel or its general one, by `dim`."""
    def rule(args, params):
        dtype = args[0]._dtype
        if dtype.category != 2:
            last = params.get("dim") is None or params["dim"] == args[0].ndim - 1
            raise not_implemented(f"{name}_lastdim_kernel_impl" if last else f"{name}_kernel_impl", dtype)
        return dtype, dtype

    return rule


_softmax_rule = _softmax_family_rule("softmax")


SOFTMAX = OpDef("softmax", _softmax_impl, _softmax_backward, dtype_rule=_softmax_rule, saves=SAVE_RESULT,
                meta=lambda args, p: args[0].shape)
LOG_SOFTMAX = OpDef("log_softmax", _log_softmax_impl, _log_softmax_backward,
                    dtype_rule=_softmax_family_rule("log_softmax"),
                    saves=SAVE_RESULT, meta=lambda args, p: args[0].shape)
LOG_SOFTMAX.half_impl = _log_softmax_half_impl

# torch differentiates these by one backward kernel each (gelu_backward, _softmax_backward_data, ...), which
# rounds a float16/bfloat16 gradient once: see OpDef.opmath_backward
for _op in (LEAKY_RELU, ELU, GELU, SILU, SOFTPLUS, HARDSIGMOID, SOFTMAX, LOG_SOFTMAX):
    _op.opmath_backward = True


@export
def softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    return call(SOFTMAX, (input,), {"dim": wrap_dim(dim, input.ndim) if input.ndim else None})


@export
def log_softmax(input: Tensor, dim: int, dtype=None) -> Tensor:
    """log(softmax(x)) along `dim`, computed stably."""
    if dtype is not None:
        input = input.to(dtype)
    return call(LOG_SOFTMAX, (input,), {"dim": wrap_dim(dim, input.ndim) if input.ndim else None})


# ---------------------------------------------------------------- linear


def _linear_impl(xp, x, weight, bias=None):
    if x.ndim > 2 and weight.ndim == 2:
        # One GEMM over the folded leading dims, not NumPy's per-slice loop (see _batched_matmul_impl).
        out = (x.reshape(-1, x.shape[-1]) @ weight.T).reshape(x.shape[:-1] + (weight.shape[0],))
    else:
        out = x @ weight.T
    if bias is not None:
        out += bias
    return out


def _linear_backward(ctx, g):
    x, weight, bias = ctx.inputs
    grad_x = grad_w = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_x = g.matmul(weight)
    if ctx.needs_input_grad[1]:
        if x.ndim == 1:
            grad_w = g.unsqueeze(-1) * x
        else:
            grad_w = g.reshape(-1, g.shape[-1]).t().matmul(x.reshape(-1, x.shape[-1]))
    if bias is not None and ctx.needs_input_grad[2]:
        grad_b = g.reshape(-1, g.shape[-1]).sum(0) if g.ndim > 1 else g
        if bias.ndim == 0:
            grad_b = grad_b.sum()
    return grad_x, grad_w, grad_b


def _linear_meta(args, params):
    x, weight = args[0], args[1]
    return tuple(x.shape[:-1]) + (tuple(weight.shape[:1]) if weight.ndim == 2 else ())


LINEAR = OpDef("linear", _linear_impl, _linear_backward, dtype_rule=promote, saves=SAVE_INPUTS, meta=_linear_meta,
               grad_name="AddmmBackward0")
LINEAR.grad_reads = ((1,), (0,), ())  # x's gradient reads the weight, the weight's x, the bias's neither


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """input @ weight.T + bias (torch.nn.functional.linear)."""
    in_features = weight.shape[-1] if weight.ndim else 1
    if input.ndim == 0 or input.shape[-1] != in_features:
        rows = math.prod(input.shape[:-1]) if input.ndim > 1 else 1
        cols = input.shape[-1] if input.ndim else 1
        if weight.ndim == 2:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                               f"{weight.shape[1]}x{weight.shape[0]})")
        raise RuntimeError(f"size mismatch, got input ({cols}), mat ({cols}x{in_features}), vec ({in_features})")
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_name(input._dtype)} and "
                           f"{_name(weight._dtype)}")
    if bias is not None and weight.ndim == 2 and bias.shape != (weight.shape[0],):  # (the common case is fine)
        _check_linear_bias(bias, (math.prod(input.shape[:-1]), weight.shape[0]))
    result = call(LINEAR, (input, weight, bias))
    if result._grad_fn is not None and weight.ndim == 2:
        name_node(result, _linear_grad_name(input, bias))
    return result


def _linear_grad_name(input: Tensor, bias: Tensor | None) -> str:
    """The name of the last node of torch's at::linear (what print(output) shows): addmm for 2-D input (mm
    without a bias); other contiguous input with a row bias is flattened around addmm and viewed back; else
    matmul (an unsafe view of mm, or a squeeze for 1-D input), plus an add for the bias."""
    if input.ndim == 2:
        return "MmBackward0" if bias is None else "AddmmBackward0"
    if bias is None:
        return "SqueezeBackward4" if input.ndim == 1 else "UnsafeViewBackward0"
    row_bias = bias.ndim == 1 or (bias.ndim == 2 and bias.shape[0] == 1)
    return "ViewBackward0" if row_bias and input.is_contiguous() else "AddBackward0"


def _check_linear_bias(bias: Tensor, shape: tuple) -> None:
    """torch's linear is addmm on the input's rows: the bias must expand to (rows, out_features), with expand's
    errors."""
    bias.expand(shape)


def _name(dtype):
    from .._tensor import SCALAR_NAMES

    return SCALAR_NAMES[dtype.name]


# ---------------------------------------------------------------- dropout


def _mask_multiply_impl(xp, a, mask, scale):
    return a * mask * scale


DROPOUT = OpDef("dropout", _mask_multiply_impl, lambda ctx, g: (g * ctx.inputs[1] * ctx.params["scale"], None),
                dtype_rule=lambda args, p: (args[0]._dtype, args[0]._dtype), saves=SAVE_INPUTS,
                meta=lambda args, p: args[0].shape, grad_name="NativeDropoutBackward0")


def dropout_with_mask(input: Tensor, mask: Tensor, scale: float) -> Tensor:
    """input * mask * scale; mask is a 0/1 tensor of input's dtype."""
    return call(DROPOUT, (input, mask), {"scale": scale})


def dropout_scale(dtype: dt.dtype, p: float) -> float:
    """The factor kept elements get, as torch's `noise.div_(1 - p)` computes it in the input's dtype: 1 / (1 - p)
    in double for float64, in float otherwise (rounded to half or bfloat16), so dropout's values are torch's."""
    if dtype is dt.float64 or not dtype.is_floating_point:
        return 1.0 / (1 - p)
    value = np.float32(1) / np.float32(1 - p)
    return float(np.array(value).astype(dtype.np_dtype))



@export(inplace=True)
def relu(input: Tensor) -> Tensor:
    """max(x, 0) (torch.relu)."""
    return call(RELU, (input,))
