"""Per-coordinate adaptive step sizes: RMSprop, Adagrad, Adadelta, Rprop, each over a whole param group.

See NOTE [ One optimizer implementation ] in _multi_tensor.py.
"""

from __future__ import annotations

from .. import full_like, zeros_like
from .._tensor import Tensor
from ..compiler import is_compiling
from ._multi_tensor import where_
from .optimizer import (
    GroupwiseOptimizer,
    check_fused_flags,
    get_scalar_dtype,
    scalar_tensor,
    to_scalar,
    value_of,
)

__all__ = ["RMSprop", "Adagrad", "Adadelta", "Rprop"]


def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _l2_grads(group, params, grads):
    """Negate under `maximize` and add the L2 penalty, out of place (the user's .grad is never modified)."""
    if group["maximize"]:
        grads = grads.neg()
    if group.get("weight_decay", 0) != 0:
        grads = grads.add(params, alpha=group["weight_decay"])
    return grads


class RMSprop(GroupwiseOptimizer):
    r"""RMSprop (Hinton), optionally centered and with momentum, as torch.optim.RMSprop.

    Args:
        lr (float): learning rate (default: 1e-2).
        alpha (float): smoothing constant (default: 0.99).
        eps (float): added to the denominator (default: 1e-8).
        weight_decay (float): L2 penalty (default: 0).
        momentum (float): momentum factor (default: 0).
        centered (bool): normalise by the estimated variance of the gradient (default: False).
    """

    _capturable_check = ("params and state_steps", "params and state_steps", True, True)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {
            "lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
            "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _keys(self, group) -> tuple:
        return (("step", "square_avg") + (("momentum_buffer",) if group["momentum"] > 0 else ())
                + (("grad_avg",) if group["centered"] else ()))

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        state["square_avg"] = zeros_like(p)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr, alpha = to_scalar(group["lr"]), group["alpha"]
        state["step"].add_(1)
        grads = _l2_grads(group, params, grads)
        square_avgs = state["square_avg"].mul_(alpha).addcmul_(grads, grads, value=1 - alpha)
        if group["centered"]:
            grad_avgs = state["grad_avg"].lerp_(grads, 1 - alpha)
            avg = square_avgs.addcmul(grad_avgs, grad_avgs, value=-1).sqrt_()
        else:
            avg = square_avgs.sqrt()
        avg.add_(group["eps"])
        if group["momentum"] > 0:
            buffers = state["momentum_buffer"].mul_(group["momentum"]).addcdiv_(grads, avg)
            params.add_(buffers, alpha=value_of(-lr))
        else:
            params.addcdiv_(grads, avg, value=value_of(-lr))


class Adagrad(GroupwiseOptimizer):
    r"""Adagrad (Duchi et al.), as torch.optim.Adagrad: state is created for every param at construction.

    Args:
        lr (float): learning rate (default: 1e-2).
        lr_decay (float): learning rate decay (default: 0).
        weight_decay (float): L2 penalty (default: 0).
        initial_accumulator_value (float): initial value of the squared-gradient sums (default: 0).
        eps (float): added to the denominator (default: 1e-10).
    """


    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None) -> None:
        _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "fused": fused,
        }
        super().__init__(params, defaults)
        check_fused_flags(self, fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._initialize(p, self.state[p], group)

    def _keys(self, group) -> tuple:
        return ("step", "sum")

    def _initialize(self, p, state, group) -> None:
        state["step"] = scalar_tensor(0.0, get_scalar_dtype(group["fused"]), p.device if group["fused"] else None)
        value = self.defaults["initial_accumulator_value"]
        state["sum"] = full_like(p, complex(value, value) if p.is_complex() else value)

    _sparse_grads = True  # sparse gradients take torch's sparse path, entry by entry (_sparse_adagrad)

    @staticmethod
    def _update(group, params, grads, state) -> None:
        if any(g.is_sparse for g in grads):
            dense = [i for i, g in enumerate(grads) if not g.is_sparse]
            for i, g in enumerate(grads):
                if g.is_sparse:
                    _sparse_adagrad(group, params[i], g, state["step"][i], state["sum"][i])
            if not dense:
                return
            params, grads = params.select(dense), grads.select(dense)
            state = {key: value.select(dense) for key, value in state.items()}
        lr, lr_decay = to_scalar(group["lr"]), group["lr_decay"]
        steps, sums = state["step"], state["sum"]
        steps.add_(1)
        grads = _l2_grads(group, params, grads)
        sums.addcmul_(grads, grads, value=1)
        std = sums.sqrt().add_(group["eps"])
        if is_compiling():  # the step size stays a tensor op of the step counter (see Adam._update)
            dtype = sums[0].dtype  # in float64, as eager's Python floats (Adam._update)
            params.add_(grads.div(std).mul_([(-lr / (1 + (step.double() - 1) * lr_decay)).to(dtype) for step in steps]))
            return
        step_sizes = [value_of(-lr / (1 + (step - 1) * lr_decay)) for step in steps.items()]
        params.addcdiv_(grads, std, value=step_sizes)


def _sparse_adagrad(group, param, grad, step, total) -> None:
    """torch's Adagrad step for a sparse gradient: the squared sums and the param change at its entries only."""
    from .. import sparse_coo_tensor

    step.add_(1)
    if group["maximize"]:
        grad = -grad
    if group["weight_decay"] != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    step_size = to_scalar(group["lr"]) / (1 + (step.item() - 1) * group["lr_decay"])
    grad = grad.coalesce()
    indices, values = grad._indices(), grad._values()
    total.add_(sparse_coo_tensor(indices, values.pow(2), grad.shape))
    std_values = total.sparse_mask(grad)._values().sqrt_().add_(group["eps"])
    param.add_(sparse_coo_tensor(indices, values / std_values, grad.shape), alpha=-step_size)


class Adadelta(GroupwiseOptimizer):
    r"""Adadelta (Zeiler), as torch.optim.Adadelta.

    Args:
        lr (float): coefficient that scales delta before it is applied (default: 1.0).
        rho (float): coefficient of the running averages (default: 0.9).
        eps (float): added for numerical stability (default: 1e-6).
        weight_decay (float): L2 penalty (default: 0).
    """

    _capturable_check = ("params and state_steps", "params and state_steps", False, False)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
            "capturable": capturable, "foreach": foreach, "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _keys(self, group) -> tuple:
        return ("step", "square_avg", "acc_delta")

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        state["square_avg"] = zeros_like(p)
        state["acc_delta"] = zeros_like(p)

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr, rho, eps = to_scalar(group["lr"]), group["rho"], group["eps"]
        square_avgs, acc_deltas = state["square_avg"], state["acc_delta"]
        state["step"].add_(1)
        grads = _l2_grads(group, params, grads)
        square_avgs.mul_(rho).addcmul_(grads, grads, value=1 - rho)
        std = square_avgs.add(eps).sqrt_()
        delta = acc_deltas.add(eps).sqrt_().div_(std).mul_(grads)
        acc_deltas.mul_(rho).addcmul_(delta, delta, value=1 - rho)
        params.add_(delta, alpha=value_of(-lr))


class Rprop(GroupwiseOptimizer):
    r"""Resilient backpropagation, as torch.optim.Rprop.

    Args:
        lr (float): initial step size (default: 1e-2).
        etas (tuple[float, float]): (etaminus, etaplus), the step-size factors (default: (0.5, 1.2)).
        step_sizes (tuple[float, float]): minimal and maximal step sizes (default: (1e-6, 50)).
    """

    _capturable_check = ("params and state_steps", "params and state_steps", True, True)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False) -> None:
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {
            "lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
            "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _keys(self, group) -> tuple:
        return ("step", "prev", "step_size")

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        state["prev"] = zeros_like(p)
        lr = value_of(to_scalar(group["lr"]))
        # a complex param is two independent reals, so the imaginary part gets a step size too (torch's rule)
        state["step_size"] = full_like(p.grad, complex(lr, lr) if p.is_complex() else lr)

    @staticmethod
    def _update(group, params, grads, state) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        prevs, step_sizes = state["prev"], state["step_size"]
        state["step"].add_(1)
        if group["maximize"]:
            grads = grads.neg()
        # differentiable: mul saves a copy of prev, which copy_ below overwrites (torch's differentiable path)
        sign = grads.mul(prevs.clone() if group["differentiable"] else prevs).sign()
        # a sign change shrinks the step and skips the update; same sign grows it; a zero keeps it
        factor = where_(sign.gt(0), etaplus, where_(sign.lt(0), etaminus, where_(sign.eq(0), 1, sign)))
        step_sizes.mul_(factor).clamp_(step_size_min, step_size_max)
        grads = where_(factor.eq(etaminus), 0, grads)
        params.addcmul_(grads.sign(), step_sizes, value=-1)
        prevs.copy_(grads)
