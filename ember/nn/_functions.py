"""Autograd Functions behind a few nn modules (torch.nn._functions): CrossMapLRN2d, SyncBatchNorm."""

from __future__ import annotations

from .. import _dtype as dt
from .._autograd.function import Function


def _band(channels: int, member) -> list:
    """A channels x channels 0/1 matrix, row c holding member(c, j) for each channel j."""
    return [[1.0 if member(c, j) else 0.0 for j in range(channels)] for c in range(channels)]


class CrossMapLRN2d(Function):
    """torch's legacy (Lua) cross-channel LRN, kept number for number, quirks included.

    Forward: scale_c = k + alpha / size * sum_{j in window(c)} x_j^2 and y = x * scale^-beta.  torch builds
    the windows by a running sum that never subtracts channel 0, so every window past the first pre_pad
    channels also counts x_0^2.  Backward is torch's own formula (a window of `size` channels ending at c
    + size - 1 - ceil((size - 1) / 2)), which is not the exact derivative of that forward; we return what
    torch returns."""

    @staticmethod
    def forward(ctx, input, size, alpha=1e-4, beta=0.75, k=1):
        from .. import einsum, tensor

        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        ctx.size, ctx.alpha, ctx.beta, ctx.k = size, alpha, beta, k
        channels = input.size(1)
        pre_pad = int((size - 1) / 2 + 1)
        window = _band(channels, lambda c, j: j <= c + pre_pad - 1 and not 1 <= j <= c - pre_pad)
        window = tensor(window, dtype=input.dtype, device=input.device)
        scale = einsum("cj,njhw->nchw", window, input * input) * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.scale = scale
        ctx.save_for_backward(input, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        from .. import einsum, tensor

        input, output = ctx.saved_tensors
        size, scale = ctx.size, ctx.scale
        channels = input.size(1)
        inverse_pre_pad = int(size - (size - 1) / 2)
        window = _band(channels, lambda c, j: c - inverse_pre_pad <= j <= c + size - 1 - inverse_pre_pad)
        window = tensor(window, dtype=input.dtype, device=input.device)
        ratio = grad_output * output / scale
        accumulated = einsum("cj,njhw->nchw", window, ratio)
        grad_input = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / size) * input * accumulated
        return grad_input, None, None, None, None


class SyncBatchNorm(Function):
    """Batch norm over every rank's batch (torch.nn.modules._functions.SyncBatchNorm): each rank's per-channel
    (mean, invstd, count) are all-gathered and combined by count, so ranks with different batch sizes (or an
    empty one) weigh right; backward all-reduces the two per-channel sums the input gradient needs.  The weight
    and bias gradients stay local: DDP averages them as it does every parameter's."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group, world_size):
        from .. import cat, distributed, empty_like, zeros
        from .._ops import sync_batch_norm as pieces

        input = input.contiguous()
        if weight is not None:
            weight = weight.contiguous()
        size = input.numel() // input.size(1) if input.size(1) else 0
        if size == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
        channels = input.shape[1]
        if input.numel() > 0:
            mean, invstd = pieces.batch_norm_stats(input, eps)
            count = mean.new_full((1,), float(size))
            combined = cat([mean, invstd, count], dim=0)
        else:  # (an empty batch still joins the collective, with a count of 0 that the mask below drops)
            combined = zeros(2 * channels + 1, dtype=input.dtype if input.dtype.is_floating_point else None)
        gathered = combined.new_empty((world_size * combined.numel(),))
        distributed.all_gather_into_tensor(gathered, combined, process_group)
        gathered = gathered.reshape(world_size, combined.numel())
        mean_all, invstd_all, count_all = gathered[:, :channels], gathered[:, channels:2 * channels], gathered[:, -1:]
        present = count_all.squeeze(-1) >= 1
        mean_all, invstd_all, count_all = mean_all[present], invstd_all[present], count_all[present]
        counts = count_all.reshape(-1)
        if running_mean is not None and counts.dtype != running_mean.dtype:
            counts = counts.to(running_mean.dtype)
        mean, invstd = pieces.batch_norm_gather_stats_with_counts(input, mean_all, invstd_all, running_mean,
                                                                  running_var, momentum, eps, counts)
        ctx.save_for_backward(input, weight, mean, invstd, count_all.to(dt.int32))
        ctx.process_group = process_group
        if input.numel() > 0:
            return pieces.batch_norm_elemt(input, weight, bias, mean, invstd, eps)
        return empty_like(input)

    @staticmethod
    def backward(ctx, grad_output):
        from .. import cat, distributed, zeros
        from .._ops import sync_batch_norm as pieces

        grad_output = grad_output.contiguous()
        saved_input, weight, mean, invstd, count = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        needs = ctx.needs_input_grad
        if saved_input.numel() > 0:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = pieces.batch_norm_backward_reduce(
                grad_output, saved_input, mean, invstd, weight, needs[0], needs[1], needs[2])
            if needs[0]:
                channels = sum_dy.shape[0]
                combined = cat([sum_dy, sum_dy_xmu], dim=0)
                distributed.all_reduce(combined, distributed.ReduceOp.SUM, ctx.process_group)
                sum_dy, sum_dy_xmu = combined[:channels], combined[channels:]
                if weight is not None and weight.dtype != mean.dtype:
                    weight = weight.to(mean.dtype)
                grad_input = pieces.batch_norm_backward_elemt(grad_output, saved_input, mean, invstd, weight, sum_dy,
                                                              sum_dy_xmu, count)
            if weight is None or not needs[1]:
                grad_weight = None
            if weight is None or not needs[2]:
                grad_bias = None
        elif needs[0]:  # (nothing to differentiate here, but the peers' all_reduce needs this rank)
            distributed.all_reduce(zeros(2 * saved_input.shape[1], dtype=mean.dtype), distributed.ReduceOp.SUM,
                                   ctx.process_group)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None

