"""Samplers behind ember.distributions: _standard_gamma, _sample_dirichlet, binomial, and their reparameterised grads.

torch.distributions draws Gamma, Beta, Chi2 and Dirichlet variates through these (private but public-named) ops.
`_standard_gamma` is differentiable: its backward is torch's implicit reparameterisation gradient
dx/dalpha = -(d/dalpha cdf(x; alpha)) / pdf(x; alpha), computed by `_standard_gamma_grad` with the same series,
saddle-point and rational approximations as ATen (aten/src/ATen/native/Distributions.h, standard_gamma_grad_one), so
the gradient of a given (alpha, sample) pair equals torch's.  `_dirichlet_grad` ports dirichlet_grad_one the same
way; ember.distributions.Dirichlet uses it in a custom Function exactly as torch's `_Dirichlet` does.
Samples are torch's: its rejection samplers run draw for draw on the op's generator (_rng_samplers.py), so after
manual_seed Gamma, Beta, Chi2, Dirichlet and binomial draws equal torch's and leave the generator where torch's do.
"""

from __future__ import annotations

import math

import numpy as np

from .._backends import to_host
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from . import _rng_samplers, special_gamma
from ._api import export
from ._shapes import broadcast_meta
from .random import _generator_of, _not_implemented, _result_dtype, _zero_grads
from .random import _sampling_op as sampling_op

# ---------------------------------------------------------------- reparameterised gradients (host kernels)


def _digamma(values):
    return special_gamma.digamma(np, np.asarray(values, np.float64))


def _gamma_grad_small_x(alpha, x):
    """Taylor series of the regularised lower incomplete gamma in x (x < 0.8)."""
    numer = np.ones_like(x)
    denom = alpha.copy()
    series1 = numer / denom
    series2 = numer / (denom * denom)
    for i in range(1, 6):
        numer = numer * (-x / i)
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    pow_x_alpha = x**alpha
    gamma_pdf = x ** (alpha - 1) * np.exp(-x)
    gamma_cdf = pow_x_alpha * series1
    gamma_cdf_alpha = (np.log(x) - _digamma(alpha)) * gamma_cdf - pow_x_alpha * series2
    result = -gamma_cdf_alpha / gamma_pdf
    return np.where(np.isnan(result), 0.0, result)


def _gamma_grad_large_alpha(alpha, x):
    """Rice saddle-point expansion (alpha > 8)."""
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    near_mean = numer_1 * numer_2 / (1244160 * (alpha * alpha) * (alpha * alpha))
    denom = np.sqrt(8 * alpha)
    term2 = denom / (alpha - x)
    term3 = (x - alpha - alpha * np.log(x / alpha)) ** -1.5
    term23 = np.where(x < alpha, term2 - term3, term2 + term3)
    term1 = np.log(x / alpha) * term23 - np.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * x * term1 / denom
    return np.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near_mean, far)


_GAMMA_GRAD_COEFFICIENTS = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326, 0.00085092367,
     -1.5247877e-07],
])


def _gamma_grad_rational(alpha, x):
    """Bivariate rational approximation in log(x / alpha) and log(alpha)."""
    u = np.log(x / alpha)[..., None]
    v = np.log(alpha)
    c = _GAMMA_GRAD_COEFFICIENTS
    coef_v = c[0] + u * (c[1] + u * c[2])
    p = coef_v[..., 0] + v * (coef_v[..., 1] + v * (coef_v[..., 2] + v * coef_v[..., 3]))
    q = coef_v[..., 4] + v * (coef_v[..., 5] + v * (coef_v[..., 6] + v * coef_v[..., 7]))
    return np.exp(p / q)


def standard_gamma_grad_host(alpha, x):
    """dx/dalpha for x ~ Gamma(alpha, 1), elementwise on float64 NumPy arrays (ATen's standard_gamma_grad_one)."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(x, np.float64))
    with np.errstate(all="ignore"):
        small = _gamma_grad_small_x(alpha, x)
        large = _gamma_grad_large_alpha(alpha, x)
        rational = _gamma_grad_rational(alpha, x)
    return np.where(x < 0.8, small, np.where(alpha > 8.0, large, rational))


def _beta_grad_alpha_small(x, alpha, beta):
    factor = float(_digamma(alpha) - _digamma(alpha + beta)) - math.log(x)
    numer = 1.0
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer *= (i - beta) * x / i
        denom = alpha + i
        series += numer / denom * (factor + 1 / denom)
    result = x * (1 - x) ** -beta * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_beta_small(x, alpha, beta):
    factor = float(_digamma(alpha + beta) - _digamma(beta))
    numer, betas, dbetas, series = 1.0, 1.0, 0.0, factor / alpha
    for i in range(1, 9):
        numer *= -x / i
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series += numer / (alpha + i) * (dbetas + factor * betas)
    result = -((1 - x) ** (1 - beta)) * series
    return 0.0 if math.isnan(result) else result


def _beta_grad_alpha_mid(x, alpha, beta):
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x <= mean + 0.1 * std:
        poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (8 * (1 - x) * (135 * beta - 11)))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return prefactor_num / (1 - x) * poly / prefactor_den
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / (math.sqrt(2 * alpha / beta) * total**1.5 * axbx * axbx)
    term2 = 0.5 * math.log(alpha / (total * x))
    term3 = math.sqrt(8 * alpha * beta / total) / (beta * x + alpha * (x - 1))
    term4 = (beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))) ** -1.5
    return stirling * prefactor * (term1 + term2 * (term3 + (term4 if x < mean else -term4)))


_DIRICHLET_GRAD_COEFFICIENTS = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]],
])


def _dirichlet_grad_one(x: float, alpha: float, total: float) -> float:
    """ATen's dirichlet_grad_one: -(d/dalpha cdf(x; alpha, total - alpha)) / pdf / (1 - x) for a Beta variate."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    try:
        if x <= 0.5 and boundary < 2.5:
            return _beta_grad_alpha_small(x, alpha, beta)
        if x >= 0.5 and boundary < 0.75:
            return -_beta_grad_beta_small(1 - x, beta, alpha)
        if alpha > 6 and beta > 6:
            return _beta_grad_alpha_mid(x, alpha, beta)
        u = math.log(x)
        a = math.log(alpha) - u
        b = math.log(total) - a
    except (ValueError, ZeroDivisionError, OverflowError):
        return math.nan
    c = _DIRICHLET_GRAD_COEFFICIENTS
    powers = np.outer([1.0, u, u * u], [1.0, a, a * a])
    cubic = c[..., 0] + b * (c[..., 1] + b * (c[..., 2] + b * c[..., 3]))
    p = float((powers * cubic[0]).sum())
    q = float((powers * cubic[1]).sum())
    approx = x * float(_digamma(total) - _digamma(alpha)) / beta
    return p / q * approx


_dirichlet_grad_vectorised = np.vectorize(_dirichlet_grad_one, otypes=[np.float64])


# ---------------------------------------------------------------- ops


def _float_kernel_check(kernel: str, tensor: Tensor) -> None:
    if not tensor._dtype.is_floating_point:
        raise _not_implemented(kernel, tensor._dtype)


def _sampler_dtype_check(kernel: str, tensor: Tensor) -> None:
    """ATen's samplers dispatch over float and double only (AT_DISPATCH_FLOATING_TYPES)."""
    if tensor._dtype.name not in ("float32", "float64"):
        raise _not_implemented(kernel, tensor._dtype)


def _host(array) -> np.ndarray:
    """The values in memory order of a C-contiguous result (torch's serial kernels write the output in order)."""
    return np.ascontiguousarray(to_host(array))


def _standard_gamma_impl(xp, alpha, **params):
    return xp.asarray(_rng_samplers.standard_gamma(params["generator"]._rng, _host(alpha)))


def _standard_gamma_backward(ctx, grad):
    return grad * _standard_gamma_grad(ctx.inputs[0], ctx.result)


_STANDARD_GAMMA = OpDef("_standard_gamma", _standard_gamma_impl, _standard_gamma_backward, dtype_rule=_result_dtype,
                        meta=lambda args, params: args[0].shape, saves=SAVE_INPUTS | SAVE_RESULT, upcast_half=False,
                        grad_name="StandardGammaBackward0")


@export(method=False)
def _standard_gamma(input: Tensor, generator=None) -> Tensor:
    """Gamma(input, 1) samples, differentiable in `input` through the implicit reparameterisation gradient."""
    _float_kernel_check("gamma_cpu", input)
    _sampler_dtype_check("gamma_cpu", input)
    return call(_STANDARD_GAMMA, (input,), {"dtype": input._dtype, "generator": _generator_of(input, generator)})


def _not_differentiable(name: str):
    def backward(ctx, grad):
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")

    return backward


_STANDARD_GAMMA_GRAD = OpDef(
    "_standard_gamma_grad",
    lambda xp, alpha, x: xp.asarray(standard_gamma_grad_host(np.asarray(alpha), np.asarray(x))),
    _not_differentiable("_standard_gamma_grad"), meta=broadcast_meta, upcast_half=True,
)


@export(method=False)
def _standard_gamma_grad(input: Tensor, output: Tensor) -> Tensor:
    """d output / d input for output ~ Gamma(input, 1) (ATen's standard_gamma_grad_one, elementwise)."""
    _float_kernel_check("_standard_gamma_grad_cpu", input)
    return call(_STANDARD_GAMMA_GRAD, (input, output))


def _sample_dirichlet_impl(xp, concentration, **params):
    return xp.asarray(_rng_samplers.dirichlet(params["generator"]._rng, _host(concentration)))


_SAMPLE_DIRICHLET = sampling_op("_sample_dirichlet", _sample_dirichlet_impl, "NotImplemented")


@export(method=False)
def _sample_dirichlet(input: Tensor, generator=None) -> Tensor:
    """Dirichlet(input) samples along the last dim (normalised Gamma draws); a constant to autograd, as in torch."""
    _float_kernel_check("dirichlet", input)
    _sampler_dtype_check("dirichlet", input)
    return call(_SAMPLE_DIRICHLET, (input,), {"dtype": input._dtype, "generator": _generator_of(input, generator)})


_DIRICHLET_GRAD = OpDef(
    "_dirichlet_grad",
    lambda xp, x, alpha, total: xp.asarray(_dirichlet_grad_vectorised(np.asarray(x, np.float64),
                                                                      np.asarray(alpha, np.float64),
                                                                      np.asarray(total, np.float64))),
    _not_differentiable("_dirichlet_grad"), meta=broadcast_meta,
)


@export(method=False)
def _dirichlet_grad(x: Tensor, alpha: Tensor, total: Tensor) -> Tensor:
    """ATen's dirichlet_grad_one elementwise: the Beta(alpha, total - alpha) reparameterisation gradient at x."""
    if x.shape != alpha.shape or x.shape != total.shape:
        raise RuntimeError(
            f"_dirichlet_grad: expected x, alpha and total to have the same shapes, but got {tuple(x.shape)}, "
            f"{tuple(alpha.shape)} and {tuple(total.shape)}"
        )
    return call(_DIRICHLET_GRAD, (x, alpha, total))


def _binomial_impl(xp, count, prob, **params):
    count, prob = np.broadcast_arrays(_host(count), _host(prob).astype(_host(count).dtype))
    return xp.asarray(_rng_samplers.binomial(params["generator"]._rng, count, prob))


_BINOMIAL = OpDef("binomial", _binomial_impl, _zero_grads, dtype_rule=_result_dtype, meta=broadcast_meta,
                  upcast_half=False, grad_name="BinomialBackward0")


@export(method=False)
def binomial(count: Tensor, prob: Tensor, generator=None) -> Tensor:
    """Binomial(count, prob) samples (float counts, as torch.binomial), broadcast over count and prob."""
    if not count._dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {dt_name(count)}")
    if not prob._dtype.is_floating_point:
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: {dt_name(prob)}")
    _sampler_dtype_check("binomial_cpu", count)
    return call(_BINOMIAL, (count, prob), {"dtype": count._dtype, "generator": _generator_of(count, generator)})


def dt_name(tensor: Tensor) -> str:
    """torch's ScalarType name of a tensor's dtype (Long, Float, ...)."""
    return SCALAR_NAMES[tensor._dtype.name]
