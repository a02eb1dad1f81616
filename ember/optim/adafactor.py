"""Adafactor (Shazeer & Stern): factored second moments, relative step sizes, update clipping; as torch.optim.Adafactor.

A param of two or more dims keeps a row factor (its last dim reduced to 1) and
a column factor (its second-to-last dim reduced to 1) of the squared-gradient
average; a vector keeps a full 'variance'.  The per-param step scalars (beta2,
relative step size, update clip) are Python numbers from each param's own
0-d 'step' and norms, as in torch's single-tensor path; see NOTE [ One
optimizer implementation ] in _multi_tensor.py.
"""

from __future__ import annotations

from .. import finfo, zeros_like
from .._tensor import Tensor
from ..compiler import is_compiling
from ._multi_tensor import each
from .optimizer import GroupwiseOptimizer, reject_complex, to_scalar, value_of

__all__ = ["Adafactor"]


class Adafactor(GroupwiseOptimizer):
    r"""Adafactor, as torch.optim.Adafactor.

    Args:
        lr (float, Tensor): the maximum relative step size, and the coefficient of the decoupled
            weight decay (default: 1e-2).
        beta2_decay (float): the decay rate of beta2: 1 - beta2_t = t ** beta2_decay (default: -0.8).
        eps (tuple[float | None, float]): epsilon1 stabilises the variance estimate and the update
            (None: the param dtype's machine epsilon); epsilon2 is the least param RMS that scales the
            step (default: (None, 1e-3)).
        d (float): the update clipping threshold (default: 1.0).
        weight_decay (float): decoupled weight decay coefficient (default: 0.0).
        foreach (bool): accepted as in torch (one implementation runs).
        maximize (bool): maximize the objective (default: False).
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {
            "lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
            "foreach": foreach, "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _gather(self, group, initialize, keys, name):
        reject_complex(group, name)
        return super()._gather(group, initialize, keys, name)

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        grad = p.grad
        if grad.dim() > 1:
            row_shape, col_shape = list(grad.shape), list(grad.shape)
            row_shape[-1] = 1
            col_shape[-2] = 1
            state["row_var"] = grad.new_zeros(row_shape)
            state["col_var"] = grad.new_zeros(col_shape)
        else:
            state["variance"] = zeros_like(grad)

    def _keys(self, group) -> tuple:
        return ("step",)  # the factored / full second moments differ per param: read from self.state

    def _update(self, group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = finfo(params[0].dtype).eps  # torch's loop sets it from the first param and keeps it
        beta2_decay, d, weight_decay = group["beta2_decay"], group["d"], group["weight_decay"]
        if group["maximize"]:
            grads = grads.neg()
        steps = state["step"]
        steps.add_(1)
        if is_compiling():
            _tensor_update(self, params, grads, steps, lr, eps1, eps2, beta2_decay, d, weight_decay)
            return
        step_values = steps.items()
        one_minus_beta2 = [step**beta2_decay for step in step_values]
        alphas = [
            max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * min(lr, 1 / (step**0.5))
            for p, step in zip(params, step_values)
        ]
        if weight_decay != 0:  # after the param norms above, as torch
            params.mul_(value_of(1 - lr * weight_decay))

        def apply_update(param, grad, weight, alpha):
            update = _variance_estimate(self.state[param], grad, weight, eps1).clamp_(min=eps1 * eps1).rsqrt_()
            update.mul_(grad)
            clip = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            param.add_(update, alpha=value_of(-alpha / clip))

        each(apply_update, params, grads, one_minus_beta2, alphas)


def _variance_estimate(param_state, grad, weight, eps1):
    """The second-moment estimate: the outer product of the row and column factors over their mean, or the
    full variance of a vector (the moments move toward this step's squared gradient by `weight`)."""
    if grad.dim() > 1:
        row_var, col_var = param_state["row_var"], param_state["col_var"]
        row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)), weight)
        col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)), weight)
        return (row_var @ col_var).div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
    return param_state["variance"].lerp_(grad * grad, weight).clone()


def _tensor_update(optimizer, params, grads, steps, lr, eps1, eps2, beta2_decay, d, weight_decay) -> None:
    """The update with every step-derived scalar a tensor op (beta2, the relative step size, the RMS clip),
    as under ember.compile: eager reads each step and two norms per param into Python, a graph break whose
    values change every step.  The scalars are computed in float64 (eager's Python floats) and cast to the
    param's dtype where they meet its tensors, as eager's Python scalars are."""

    def update(param, grad, step):
        dtype = param.dtype
        step = step.double()
        weight = (step**beta2_decay).to(dtype)
        rho = (1 / step**0.5).clamp(max=lr)
        alpha = (param.norm(2).double() / (param.numel() ** 0.5)).clamp(min=eps2) * rho
        if weight_decay != 0:
            param.mul_(value_of(1 - lr * weight_decay))
        update = _variance_estimate(optimizer.state[param], grad, weight, eps1).clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        clip = (update.norm(2).double() / ((update.numel() ** 0.5) * d)).clamp(min=1.0)
        param.add_(update.mul_((-alpha / clip).to(dtype)))

    each(update, params, grads, steps)
