"""The Adam family: Adam, AdamW, Adamax, NAdam, RAdam, each written once over a whole param group.

The bias corrections are Python numbers computed from each parameter's own
0-d 'step' counter (torch's non-capturable path), passed as per-tensor
scalars; see NOTE [ One optimizer implementation ] in _multi_tensor.py.
"""

from __future__ import annotations

from .. import zeros_like
from .._tensor import Tensor
from ..compiler import is_compiling
from ._multi_tensor import TensorList, each, fused_step, maximum_
from .optimizer import (
    GroupwiseOptimizer,
    check_fused_flags,
    get_scalar_dtype,
    scalar_tensor,
    to_scalar,
    value_of,
)

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam"]


def _check_common(lr, eps, betas, weight_decay) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _prepare_grads(group, params: TensorList, grads: TensorList, lr: float) -> TensorList:
    """Negate under `maximize`; apply weight decay, decoupled (shrink the params) or as L2 (into the grads)."""
    if group["maximize"]:
        grads = grads.neg()
    weight_decay = group["weight_decay"]
    if weight_decay != 0:
        if group.get("decoupled_weight_decay", False):
            params.mul_(value_of(1 - lr * weight_decay))
        elif group["maximize"]:
            grads.add_(params, alpha=weight_decay)  # already a new list (torch's foreach path does the same)
        else:
            grads = grads.add(params, alpha=weight_decay)
    return grads


def _init_moments(p, state, group, optimizer_step) -> None:
    state["step"] = optimizer_step(p, group)
    state["exp_avg"] = zeros_like(p)
    state["exp_avg_sq"] = zeros_like(p)


class Adam(GroupwiseOptimizer):
    r"""Adam (Kingma & Ba), with AMSGrad and optional decoupled weight decay, as torch.optim.Adam.

    Args:
        lr (float, Tensor): learning rate (default: 1e-3).
        betas (tuple[float, float]): coefficients of the running averages of the gradient and its square
            (default: (0.9, 0.999)).
        eps (float): added to the denominator (default: 1e-8).
        weight_decay (float): weight decay (default: 0).
        amsgrad (bool): use the maximum of past squared-gradient averages (default: False).
        decoupled_weight_decay (bool): AdamW's decoupled decay (default: False).
        foreach, maximize, capturable, differentiable, fused: as in torch (one implementation runs).
    """

    _sparse_grad_error = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False) -> None:
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_common(lr, eps, betas, weight_decay)
        if not ((isinstance(betas[0], float) and isinstance(betas[1], float))
                or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))):
            raise ValueError("betas must be either both floats or both Tensors")
        for index, beta in enumerate(betas):
            if isinstance(beta, Tensor):
                if not capturable and foreach:
                    raise ValueError(
                        f"betas[{index}] as a Tensor is not supported for capturable=False and foreach=True"
                    )
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{index}] must be 1-element")
        betas = tuple(map(to_scalar, betas))
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
            "maximize": maximize, "foreach": foreach, "capturable": capturable, "differentiable": differentiable,
            "fused": fused, "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)
        check_fused_flags(self, fused, foreach, differentiable)

    def _initialize(self, p, state, group) -> None:
        _init_moments(p, state, group, self._step_tensor)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(p)

    def _keys(self, group) -> tuple:
        return ("step", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if group["amsgrad"] else ())

    def _check_group(self, group, params) -> None:
        if group["foreach"] and isinstance(group["lr"], Tensor) and not group["capturable"] and params:
            raise RuntimeError("lr as a Tensor is not supported for capturable=False and foreach=True")

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        beta1, beta2 = (value_of(to_scalar(b)) for b in group["betas"])
        steps, exp_avgs, exp_avg_sqs = state["step"], state["exp_avg"], state["exp_avg_sq"]
        steps.add_(1)
        if _fused_update(group, params, grads, state, lr, beta1, beta2):
            return
        grads = _prepare_grads(group, params, grads, lr)
        exp_avgs.lerp_(grads, 1 - beta1)
        exp_avg_sqs.mul_(beta2).addcmul_(grads, grads, value=1 - beta2)
        if is_compiling():
            # Under ember.compile the corrections stay tensor ops of the step counters (torch's capturable
            # path): reading each step into Python would be a graph break whose value changes every step.
            # They are computed in float64 (eager's Python floats) and cast where they meet the tensors; the
            # compiler computes such 0-d chains inside the parameter's kernel (fusion.absorb_scalar_chains).
            dtype = exp_avgs[0].dtype
            step_sizes = [(-lr / (1 - beta1 ** step.double())).to(dtype) for step in steps]
            bias_correction2_sqrt = [((1 - beta2 ** step.double()) ** 0.5).to(dtype) for step in steps]
        else:
            step_values = steps.items()
            step_sizes = [value_of(-lr / (1 - beta1**step)) for step in step_values]
            bias_correction2_sqrt = [(1 - beta2**step) ** 0.5 for step in step_values]
        second_moment = exp_avg_sqs
        if group["amsgrad"]:
            second_moment = maximum_(state["max_exp_avg_sq"], exp_avg_sqs)
        eps = group["eps"]
        if group["differentiable"]:
            _adam_differentiable_update(params, exp_avgs, second_moment, steps, lr, beta1, beta2, eps)
            return

        def apply_update(param, exp_avg, second, correction, step_size):
            denom = second.sqrt().div_(correction).add_(eps)  # one tensor's temporary at a time (`each`)
            if isinstance(step_size, Tensor):
                param.add_(exp_avg.div(denom).mul_(step_size))
            else:
                param.addcdiv_(exp_avg, denom, value=step_size)

        each(apply_update, params, exp_avgs, second_moment, bias_correction2_sqrt, step_sizes)


def _fused_update(group, params, grads, state, lr, beta1: float, beta2: float) -> bool:
    """Adam/AdamW's eager step as one fused loop per parameter (loops.ADAM: the same bits as the ops below, one
    pass instead of seven), where it applies: a Python-number lr, no amsgrad/maximize/differentiable, not
    under ember.compile (which fuses the ops itself); else False and the ops run."""
    from .._compile import loops

    if is_compiling() or group["amsgrad"] or group["maximize"] or group["differentiable"] or isinstance(lr, Tensor):
        return False
    weight_decay = group["weight_decay"]
    decoupled = weight_decay != 0 and group.get("decoupled_weight_decay", False)
    if weight_decay != 0 and not decoupled:
        grads = grads.add(params, alpha=weight_decay)  # L2: into the gradients, as _prepare_grads
    decay = 1 - lr * weight_decay if decoupled else None
    eps = group["eps"]
    arguments = [(1 - beta1, beta2, 1 - beta2, (1 - beta2**step) ** 0.5, eps, -lr / (1 - beta1**step), decay)
                 for step in state["step"].items()]
    return fused_step(loops.adam_step, (params, grads, state["exp_avg"], state["exp_avg_sq"]), arguments)


def _adam_differentiable_update(params, exp_avgs, second_moments, steps, lr, beta1, beta2, eps) -> None:
    """torch's differentiable (= capturable) Adam update: the bias corrections are tensor ops of each step
    counter (so they round in its dtype), the denominator is built out of place and addcdiv is given a copy of
    exp_avg, so that autograd keeps what the next step's in-place updates of the state overwrite."""

    def update(param, exp_avg, second, step):
        step_size_neg = -(lr / (1 - beta1**step))
        bias_correction2_sqrt = (1 - beta2**step).sqrt()
        denom = (second.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
        param.addcdiv_(exp_avg.clone(), denom)

    each(update, params, exp_avgs, second_moments, steps)


class AdamW(Adam):
    r"""Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW (weight_decay 1e-2)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


class Adamax(GroupwiseOptimizer):
    r"""Adamax, Adam's infinity-norm variant, as torch.optim.Adamax (lr 2e-3)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False) -> None:
        _check_common(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
            "maximize": maximize, "differentiable": differentiable, "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        state["exp_avg"] = zeros_like(p)
        state["exp_inf"] = zeros_like(p)

    def _keys(self, group) -> tuple:
        return ("step", "exp_avg", "exp_inf")

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        beta1, beta2 = group["betas"]
        steps, exp_avgs, exp_infs = state["step"], state["exp_avg"], state["exp_inf"]
        steps.add_(1)
        grads = _prepare_grads(group, params, grads, lr)
        exp_avgs.lerp_(grads, 1 - beta1)
        maximum_(exp_infs.mul_(beta2), grads.abs().add_(group["eps"]))
        if is_compiling():  # the step size stays a tensor op of the step counter (see Adam._update)
            dtype = exp_avgs[0].dtype  # in float64, as eager's Python floats (Adam._update)
            params.add_(exp_avgs.div(exp_infs).mul_([(-lr / (1 - beta1 ** step.double())).to(dtype) for step in steps]))
            return
        step_sizes = [value_of(-lr / (1 - beta1**step)) for step in steps.items()]
        params.addcdiv_(exp_avgs, exp_infs, value=step_sizes)


class NAdam(GroupwiseOptimizer):
    r"""Adam with Nesterov momentum (Dozat), as torch.optim.NAdam (lr 2e-3, momentum_decay 4e-3)."""

    _scalar_state_keys = ("step", "mu_product")
    _capturable_check = ("params, mu_products and state_steps", "params, mu_products, and state_steps", True, False)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False) -> None:
        _check_common(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize, "foreach": foreach,
            "capturable": capturable, "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _initialize(self, p, state, group) -> None:
        state["step"] = self._step_tensor(p, group)
        state["mu_product"] = scalar_tensor(1.0, get_scalar_dtype(), p.device if group["capturable"] else None)
        state["exp_avg"] = zeros_like(p)
        state["exp_avg_sq"] = zeros_like(p)

    def _keys(self, group) -> tuple:
        return ("step", "mu_product", "exp_avg", "exp_avg_sq")

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        beta1, beta2 = group["betas"]
        momentum_decay = group["momentum_decay"]
        steps, mu_products = state["step"], state["mu_product"]
        exp_avgs, exp_avg_sqs = state["exp_avg"], state["exp_avg_sq"]
        steps.add_(1)
        grads = _prepare_grads(group, params, grads, lr)
        if is_compiling():
            _nadam_tensor_update(group, params, grads, state, lr, beta1, beta2)
            return
        step_values = steps.items()
        bias_correction2 = [1 - beta2**step for step in step_values]
        mus = [beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay))) for step in step_values]
        mus_next = [beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay))) for step in step_values]
        mu_products.mul_(mus)
        exp_avgs.lerp_(grads, 1 - beta1)
        exp_avg_sqs.mul_(beta2).addcmul_(grads, grads, value=1 - beta2)
        if group["differentiable"]:
            # torch's differentiable path: the scales are tensor ops of mu_product (rounding in its dtype), and
            # addcdiv gets new tensors, so autograd keeps what the next step's in-place updates overwrite
            def update(param, grad, exp_avg, exp_avg_sq, bc2, mu, mu_next, mu_product):
                denom = exp_avg_sq.div(bc2).sqrt().add(group["eps"])
                param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
                param.addcdiv_(exp_avg * (-lr * mu_next / (1.0 - mu_product * mu_next)), denom)

            each(update, params, grads, exp_avgs, exp_avg_sqs, bias_correction2, mus, mus_next, mu_products)
            return
        denom = exp_avg_sqs.div(bias_correction2).sqrt_().add_(group["eps"])
        products = mu_products.items()
        grad_scales = [value_of(-lr * (1.0 - mu) / (1.0 - product)) for mu, product in zip(mus, products)]
        avg_scales = [
            value_of((-lr * mu_next) / (1.0 - product * mu_next)) for mu_next, product in zip(mus_next, products)
        ]
        params.addcdiv_(grads, denom, value=grad_scales)
        params.addcdiv_(exp_avgs, denom, value=avg_scales)


class RAdam(GroupwiseOptimizer):
    r"""Rectified Adam (Liu et al.), as torch.optim.RAdam."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False) -> None:
        _check_common(lr, eps, betas, weight_decay)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
            "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _initialize(self, p, state, group) -> None:
        _init_moments(p, state, group, self._step_tensor)

    def _keys(self, group) -> tuple:
        return ("step", "exp_avg", "exp_avg_sq")

    @staticmethod
    def _update(group, params, grads, state) -> None:
        lr = to_scalar(group["lr"])  # a tensor lr stays one: scalars derived from it round as in torch
        beta1, beta2 = group["betas"]
        steps, exp_avgs, exp_avg_sqs = state["step"], state["exp_avg"], state["exp_avg_sq"]
        steps.add_(1)
        grads = _prepare_grads(group, params, grads, lr)
        exp_avgs.lerp_(grads, 1 - beta1)
        exp_avg_sqs.mul_(beta2).addcmul_(grads, grads, value=1 - beta2)
        if is_compiling():
            _radam_tensor_update(group, params, steps, exp_avgs, exp_avg_sqs, lr, beta1, beta2)
            return
        step_values = steps.items()
        bias_correction1 = [1 - beta1**step for step in step_values]
        bias_correction2 = [1 - beta2**step for step in step_values]
        corrected_avgs = exp_avgs.div(bias_correction1)
        rho_inf = 2 / (1 - beta2) - 1
        rho = [rho_inf - 2 * s * (beta2**s) / bc2 for s, bc2 in zip(step_values, bias_correction2)]
        # The variance is tractable (rho > 5) once enough steps are seen: rectified adaptive step, else SGD-like.
        rectified = [i for i, r in enumerate(rho) if r > 5.0]
        plain = [i for i, r in enumerate(rho) if not r > 5.0]
        if rectified:
            rect = [
                ((rho[i] - 4) * (rho[i] - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho[i])) ** 0.5
                for i in rectified
            ]
            adaptive_lr = exp_avg_sqs.select(rectified).sqrt().add_(group["eps"]).apply(
                "__rtruediv__", [bias_correction2[i] ** 0.5 for i in rectified]
            )
            update = corrected_avgs.select(rectified).mul(lr).mul(adaptive_lr).mul(rect)
            params.select(rectified).add_(update, alpha=-1.0)
        if plain:
            params.select(plain).add_(corrected_avgs.select(plain).mul(lr), alpha=-1.0)


def _radam_tensor_update(group, params, steps, exp_avgs, exp_avg_sqs, lr, beta1, beta2) -> None:
    """RAdam's update with the rectification chosen by a tensor `where` on each step counter (torch's
    capturable path), so a compiled step has no per-step Python branch: p -= lr * m_hat * factor, factor =
    rect * sqrt(bc2) / (sqrt(v) + eps) once rho > 5, else 1."""
    from .. import where

    rho_inf = 2 / (1 - beta2) - 1
    eps = group["eps"]

    def update(param, exp_avg, exp_avg_sq, step):
        # rho cancels (rho_inf - a number close to it at small steps): float64, as eager's Python floats
        step64 = step.double()
        bias_correction2 = 1 - beta2**step64
        rho = rho_inf - 2 * step64 * (beta2**step64) / bias_correction2
        inner = ((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)).clamp(min=0)
        scale = (inner.sqrt() * bias_correction2.sqrt()).to(exp_avg_sq.dtype)
        factor = where(rho > 5.0, exp_avg_sq.sqrt().add_(eps).reciprocal_().mul_(scale), 1.0)
        param.add_(exp_avg.div((1 - beta1**step64).to(exp_avg.dtype)).mul_(factor).mul_(-lr))

    each(update, params, exp_avgs, exp_avg_sqs, steps)


def _nadam_tensor_update(group, params, grads, state, lr, beta1, beta2) -> None:
    """NAdam's step with its step-derived scalars as float64 tensor ops of each step counter (eager computes
    them as Python floats), cast to the parameter's dtype where they meet its tensors, as eager's Python
    scalars are: one kernel per parameter under ember.compile, and eager's numbers."""
    momentum_decay, eps = group["momentum_decay"], group["eps"]

    def update(param, grad, exp_avg, exp_avg_sq, step, mu_product):
        dtype = exp_avg.dtype
        step = step.double()
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mu_product.mul_(mu.to(mu_product.dtype))
        product = mu_product.double()
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = exp_avg_sq.div((1 - beta2**step).to(dtype)).sqrt_().add_(eps)
        param.add_(grad.div(denom).mul_((-lr * (1.0 - mu) / (1.0 - product)).to(dtype)))
        param.add_(exp_avg.div(denom).mul_(((-lr * mu_next) / (1.0 - product * mu_next)).to(dtype)))

    each(update, params, grads, state["exp_avg"], state["exp_avg_sq"], state["step"], state["mu_product"])
