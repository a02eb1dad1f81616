"""SGD (momentum, dampening, Nesterov, weight decay) and ASGD (averaged SGD), each over a whole param group.

See NOTE [ One optimizer implementation ] in _multi_tensor.py.
"""

from __future__ import annotations

from .. import as_tensor, zeros_like
from .._tensor import Tensor
from ..compiler import is_compiling
from ._multi_tensor import TensorList, each, fused_step
from .optimizer import (
    GroupwiseOptimizer,
    Optimizer,
    check_fused_flags,
    check_fused_param,
    get_scalar_dtype,
    scalar_tensor,
    to_scalar,
    use_grad_for_differentiable,
    value_of,
)

__all__ = ["SGD", "ASGD"]


def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _directional_grads(grads: TensorList, params: TensorList, maximize: bool, weight_decay) -> TensorList:
    """The gradient the update follows: negated under `maximize`, plus L2 weight decay (the .grads untouched:
    the first of these makes new tensors, the second adds into them)."""
    if maximize:
        grads = grads.neg()
    if weight_decay != 0:
        if maximize:
            grads.add_(params, alpha=value_of(weight_decay))
        else:
            grads = grads.add(params, alpha=value_of(weight_decay))
    return grads


class SGD(Optimizer):
    r"""Stochastic gradient descent, optionally with (Nesterov) momentum, as torch.optim.SGD.

    Args:
        params: iterable of parameters or param-group dicts.
        lr (float, Tensor): learning rate (default: 1e-3).
        momentum (float): momentum factor (default: 0).
        dampening (float): dampening for momentum (default: 0).
        weight_decay (float): L2 penalty (default: 0).
        nesterov (bool): Nesterov momentum (default: False).
        maximize, foreach, differentiable, fused: as in torch; foreach and fused run the same code.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
            "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        check_fused_flags(self, fused, foreach, differentiable)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("fused", False)

    @use_grad_for_differentiable
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group: dict) -> None:
        params, grads = TensorList(), TensorList()
        for p in group["params"]:
            if p.grad is not None:
                if group["fused"]:
                    check_fused_param(p)
                params.append(p)
                grads.append(p.grad)
        if not params:
            return
        lr = to_scalar(group["lr"])
        momentum, dampening = group["momentum"], group["dampening"]
        grads = _directional_grads(grads, params, group["maximize"], group["weight_decay"])
        step = value_of(-lr)
        if momentum == 0:
            params.add_(grads, alpha=step)
            return
        buffers, is_new = self._momentum_buffers(params, grads)
        nesterov = group["nesterov"]
        if not is_compiling() and not group["differentiable"] and not isinstance(step, Tensor):
            # one fused loop per parameter (loops.SGD_MOMENTUM: apply_update's bits in one pass)
            from .._compile import loops

            arguments = [(momentum, 1 - dampening, step, nesterov, new) for new in is_new]
            if fused_step(loops.sgd_momentum_step, (params, grads, buffers), arguments):
                return

        def apply_update(param, grad, buffer, new):
            # one tensor's whole chain, so its buffer is still in cache for the update (see `each`)
            if not new:
                buffer.mul_(momentum).add_(grad, alpha=1 - dampening)
            param.add_(grad.add(buffer, alpha=momentum) if nesterov else buffer, alpha=step)

        each(apply_update, params, grads, buffers, is_new)

    def _momentum_buffers(self, params: TensorList, grads: TensorList):
        """Each param's momentum buffer, and whether it is new: a param seen for the first time gets a copy of its
        grad (torch's rule), and is left out of this step's momentum update."""
        buffers, is_new = TensorList(), []
        for p, g in zip(params, grads):
            state = self.state[p]
            buffer = state.get("momentum_buffer")
            is_new.append(buffer is None)
            if buffer is None:
                buffer = state["momentum_buffer"] = g.detach().clone()
            buffers.append(buffer)
        return buffers, is_new


class ASGD(GroupwiseOptimizer):
    r"""Averaged stochastic gradient descent, as torch.optim.ASGD.

    Args:
        lr (float): learning rate (default: 1e-2).
        lambd (float): decay term (default: 1e-4).
        alpha (float): power for eta update (default: 0.75).
        t0 (float): point at which to start averaging (default: 1e6).
        weight_decay (float): L2 penalty (default: 0).
    """

    _scalar_state_keys = ("step", "eta", "mu")

    _capturable_check = ("params, mus, etas, and state_steps", "params, mus, etas, and state_steps", True, False)

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)

    @staticmethod
    def _initialize(p, state, group) -> None:
        dtype = get_scalar_dtype()
        state["step"] = scalar_tensor(0.0, dtype, p.device)
        state["eta"] = scalar_tensor(value_of(to_scalar(group["lr"])), dtype, p.device)
        state["mu"] = scalar_tensor(1.0, dtype, p.device)
        state["ax"] = zeros_like(p)

    def _keys(self, group) -> tuple:
        return ("step", "eta", "mu", "ax")

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr, lambd, alpha, t0 = to_scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        steps, etas, mus, axs = state["step"], state["eta"], state["mu"], state["ax"]
        grads = _directional_grads(grads, params, group["maximize"], group["weight_decay"])
        steps.add_(1)
        if is_compiling():
            _asgd_tensor_update(params, grads, steps, etas, mus, axs, lr, lambd, alpha, t0)
            return
        if group["foreach"]:
            _asgd_foreach_update(params, grads, steps, etas, mus, axs, lr, lambd, alpha, t0)
            return
        eta_values = etas.items()
        params.mul_([1 - lambd * eta for eta in eta_values])
        params.add_(grads, alpha=[-eta for eta in eta_values])
        # ax follows the running average once averaging has started (mu != 1), else tracks the param
        averaging = [i for i, mu in enumerate(mus.items()) if mu != 1]
        averaging_set = set(averaging)
        copying = [i for i in range(len(params)) if i not in averaging_set]
        if averaging:
            ax_avg = axs.select(averaging)
            ax_avg.add_(params.select(averaging).sub(ax_avg).mul_(mus.select(averaging)))
        if copying:
            axs.select(copying).copy_(params.select(copying))
        # torch builds the new values with torch.as_tensor (default dtype), so they round through it
        step_values = steps.items()
        etas.copy_([as_tensor(lr / ((1 + lambd * lr * step) ** alpha)) for step in step_values])
        mus.copy_([as_tensor(1 / max(1, step - t0)) for step in step_values])


def _asgd_foreach_update(params, grads, steps, etas, mus, axs, lr, lambd, alpha, t0) -> None:
    """torch's foreach ASGD (_multi_tensor_asgd), which rounds differently from its per-tensor loop: the param
    moves by eta * (grad + lambd * param) in one addcmul, ax always takes the addcmul (no copy while mu is 1),
    and the new eta is float32 tensor arithmetic on the step counter (`lr / t` is t.reciprocal() * lr; the
    power is rounded from float64, as C++'s pow on a single float, where NumPy's float32 power can be an ulp off)."""
    intermediate = grads.add(params, alpha=lambd)
    params.addcmul_(intermediate, etas, value=-1)
    axs.addcmul_(params.sub(axs), mus)
    etas.copy_([((1 + lambd * lr * step).double() ** alpha).float().reciprocal() * lr for step in steps])
    mus.copy_([as_tensor(1 / max(1, step - t0)) for step in steps.items()])


def _asgd_tensor_update(params, grads, steps, etas, mus, axs, lr, lambd, alpha, t0) -> None:
    """ASGD's step with eta and mu as tensor ops of the 0-d state (torch's capturable path), as under
    ember.compile, where reading them into Python would be a graph break whose values change every step.
    Scalars derived from them are computed in float64 (eager's Python floats) and cast where they meet the
    tensors; ax takes the param's value exactly while mu is 1, as eager's copy does."""
    from .. import where

    def update(param, grad, step, eta, mu, ax):
        dtype = param.dtype
        eta64 = eta.double()
        param.mul_((1 - lambd * eta64).to(dtype))
        param.add_(grad * (-eta64).to(dtype))
        ax.copy_(where(mu != 1, ax + (param - ax) * mu.to(dtype), param))
        step64 = step.double()
        eta.copy_(lr / ((1 + lambd * lr * step64) ** alpha))
        mu.copy_(1 / (step64 - t0).clamp(min=1))

    each(update, params, grads, steps, etas, mus, axs)
