"""Autograd Functions behind a few nn modules (torch.nn._functions): CrossMapLRN2d."""

from __future__ import annotations

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
