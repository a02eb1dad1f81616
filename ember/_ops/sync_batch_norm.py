"""The per-channel pieces of a synchronized batch norm: torch.batch_norm_stats, batch_norm_gather_stats(_with_counts),
batch_norm_elemt, batch_norm_backward_reduce, batch_norm_backward_elemt and batch_norm_update_stats.

torch has them as CUDA kernels only (its SyncBatchNorm runs on GPUs); ember writes them in its own ops, so they
run on every device and nn.SyncBatchNorm synchronizes CPU training over MPI too (ember/nn/modules/_functions.py).
Statistics are over every dim but the channel dim 1, in float32 for float16/bfloat16 inputs (torch's accumulate
type); a channel's variance enters as invstd = 1 / sqrt(var + eps), as torch passes it between the pieces.
"""

from __future__ import annotations

from .. import _dtype as dt
from .._autograd.grad_mode import no_grad
from .._tensor import Tensor
from ._api import export


def _dims(input: Tensor) -> list:
    return [0] + list(range(2, input.ndim))


def _per_channel(value: Tensor, input: Tensor) -> Tensor:
    """A (C,) statistic shaped to broadcast against the (N, C, *) input."""
    return value.reshape((1, -1) + (1,) * (input.ndim - 2))


def _accumulate(input: Tensor) -> Tensor:
    return input.float() if input.dtype in (dt.float16, dt.bfloat16) else input


@export(method=False)
def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """(mean, invstd) of each channel over the batch and spatial dims, the variance biased."""
    values = _accumulate(input)
    dims = _dims(input)
    mean = values.mean(dims)
    variance = values.var(dims, correction=0)
    return mean, (variance + eps).rsqrt()


@export(method=False)
def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float, eps: float,
                                        counts: Tensor) -> tuple[Tensor, Tensor]:
    """The global (mean, invstd) of per-rank statistics (mean, invstd: (world, C); counts: (world,)) weighted by
    their counts; the running statistics, when given, move by `momentum` toward the global mean and the
    unbiased global variance."""
    weights = counts.to(mean.dtype).reshape(-1, 1)
    total = weights.sum()
    global_mean = (mean * weights).sum(0) / total
    variances = invstd.pow(-2) - eps
    global_var = (weights * (variances + (mean - global_mean) ** 2)).sum(0) / total
    _update_running(running_mean, running_var, global_mean, global_var, total, momentum)
    return global_mean, (global_var + eps).rsqrt()


def _update_running(running_mean, running_var, mean, var, count, momentum) -> None:
    with no_grad():
        if running_mean is not None:
            running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
        if running_var is not None:
            running_var.copy_(running_var * (1 - momentum) + var * (count / (count - 1)) * momentum)


@export(method=False)
def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None, momentum: float, eps: float,
                            count: int) -> tuple[Tensor, Tensor]:
    """batch_norm_gather_stats_with_counts with the same count on every rank."""
    counts = mean.new_full((mean.shape[0],), float(count))
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


@export(method=False)
def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor,
                     eps: float) -> Tensor:
    """(input - mean) * invstd * weight + bias, per channel, in the input's dtype."""
    out = (_accumulate(input) - _per_channel(mean, input)) * _per_channel(invstd, input)
    if weight is not None:
        out = out * _per_channel(weight, input)
    if bias is not None:
        out = out + _per_channel(bias, input)
    return out.to(input.dtype)


@export(method=False)
def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor, weight: Tensor | None,
                               input_g: bool, weight_g: bool, bias_g: bool) -> tuple:
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) over this rank's batch; None for those not asked for."""
    grad = _accumulate(grad_out)
    dims = _dims(input)
    sum_dy = grad.sum(dims)
    sum_dy_xmu = (grad * (_accumulate(input) - _per_channel(mean, input))).sum(dims)
    grad_weight = (sum_dy_xmu * invstd).to(weight.dtype) if weight_g and weight is not None else None
    grad_bias = sum_dy.to(weight.dtype if weight is not None else input.dtype) if bias_g else None
    if not input_g:
        sum_dy = sum_dy_xmu = None
    return sum_dy, sum_dy_xmu, grad_weight, grad_bias


@export(method=False)
def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor, weight: Tensor | None,
                              sum_dy: Tensor, sum_dy_xmu: Tensor, count: Tensor) -> Tensor:
    """The input's gradient from the global sums (all-reduced sum_dy and sum_dy_xmu, every rank's count)."""
    total = count.sum().to(sum_dy.dtype)
    mean_dy = _per_channel(sum_dy / total, input)
    mean_dy_xmu = _per_channel(sum_dy_xmu / total, input)
    scale = _per_channel(invstd, input)
    centred = _accumulate(input) - _per_channel(mean, input)
    grad = (_accumulate(grad_out) - mean_dy - centred * scale * scale * mean_dy_xmu) * scale
    if weight is not None:
        grad = grad * _per_channel(weight.to(grad.dtype), input)
    return grad.to(input.dtype)


@export(method=False)
def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float) -> tuple[Tensor, Tensor]:
    """(mean, biased variance) of each channel; the running statistics move toward the mean and the unbiased
    variance."""
    values = _accumulate(input)
    dims = _dims(input)
    mean = values.mean(dims)
    var = values.var(dims, correction=0)
    count = input.numel() // input.shape[1]
    _update_running(running_mean, running_var, mean, var, count, momentum)
    return mean, var
