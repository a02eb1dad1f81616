"""Muon: momentum, then a Newton-Schulz orthogonalisation of each 2-D update; as torch.optim.Muon.

The Newton-Schulz iteration runs in bfloat16, as torch's does, so the update
is torch's to the bit where the bfloat16 matmuls accumulate alike (ember's do
for small matrices).  See NOTE [ One optimizer implementation ] in
_multi_tensor.py.
"""

from __future__ import annotations

import math

from .. import addmm, zeros_like
from .._tensor import Tensor
from ._multi_tensor import each
from .optimizer import GroupwiseOptimizer, reject_complex, to_scalar, value_of

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients, ns_steps: int, eps: float) -> Tensor:
    """A quintic Newton-Schulz iteration towards U V^T of grad = U S V^T (torch's _zeropower_via_newtonschulz)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.size(0) > grad.size(1)
    ortho = grad.bfloat16()
    if tall:
        ortho = ortho.T
    ortho.div_(ortho.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = ortho @ ortho.T
        ortho = addmm(ortho, addmm(gram, gram, gram, beta=b, alpha=c), ortho, beta=a)
    return ortho.T if tall else ortho


def _adjust_lr(lr, adjust_lr_fn: str | None, param_shape):
    """The learning rate scaled for the matrix shape (A, B): 'original' sqrt(max(1, A/B)),
    'match_rms_adamw' 0.2 sqrt(max(A, B))."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(GroupwiseOptimizer):
    r"""Muon, for the 2-D params of hidden layers (others belong to e.g. AdamW), as torch.optim.Muon.

    Args:
        lr (float, Tensor): learning rate (default: 1e-3).
        weight_decay (float): decoupled weight decay (default: 0.1).
        momentum (float): momentum factor (default: 0.95).
        nesterov (bool): Nesterov momentum (default: True).
        ns_coefficients (tuple[float, float, float]): the Newton-Schulz polynomial's (a, b, c)
            (default: (3.4445, -4.7750, 2.0315)).
        eps (float): floor of the norm the update is divided by (default: 1e-7).
        ns_steps (int): Newton-Schulz iterations, fewer than 100 (default: 5).
        adjust_lr_fn (str | None): "original" (the default when None) or "match_rms_adamw".
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {
            "lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
            "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}"
                    )

    def _gather(self, group, initialize, keys, name):
        reject_complex(group, name)
        return super()._gather(group, initialize, keys, name)

    def _initialize(self, p, state, group) -> None:
        state["momentum_buffer"] = zeros_like(p.grad)

    def _keys(self, group) -> tuple:
        return ("momentum_buffer",)

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        momentum, nesterov = group["momentum"], group["nesterov"]
        for grad in grads:
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
        buffers = state["momentum_buffer"].lerp_(grads, 1 - momentum)
        decay = value_of(1 - lr * group["weight_decay"])

        def apply_update(param, grad, buffer):
            update = grad.lerp(buffer, momentum) if nesterov else buffer
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            param.mul_(decay)
            param.add_(update, alpha=value_of(-_adjust_lr(lr, group["adjust_lr_fn"], param.shape)))

        each(apply_update, params, grads, buffers)
