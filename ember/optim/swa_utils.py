"""Stochastic Weight Averaging and EMA: AveragedModel, SWALR, update_bn (torch.optim.swa_utils)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, Literal

from .. import int64 as _long
from .. import tensor
from .._autograd.grad_mode import no_grad
from .._tensor import Tensor
from ..nn import Module
from ._multi_tensor import TensorList
from .lr_scheduler import LRScheduler, _format_param

__all__ = [
    "AveragedModel",
    "update_bn",
    "SWALR",
    "get_ema_multi_avg_fn",
    "get_swa_multi_avg_fn",
    "get_ema_avg_fn",
    "get_swa_avg_fn",
]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _is_float_like(t: Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


def get_ema_multi_avg_fn(decay=0.999):
    """An update for a list of averaged tensors: ema = decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _) -> None:
        if _is_float_like(ema_param_list[0]):
            TensorList(ema_param_list).lerp_(TensorList(current_param_list), 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An update for a list of averaged tensors: the running mean over the models seen so far."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        averaged = TensorList(averaged_param_list)
        if _is_float_like(averaged_param_list[0]):
            weight = 1 / (num_averaged + 1)
            averaged.lerp_(TensorList(current_param_list), weight.item() if isinstance(weight, Tensor) else weight)
        else:
            diffs = TensorList(current_param_list).sub(averaged)
            if isinstance(num_averaged, Tensor):
                averaged.addcdiv_(diffs, [num_averaged + 1] * len(averaged))
            else:
                averaged.add_(diffs, alpha=1.0 / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An update for one averaged tensor: returns decay * ema + (1 - decay) * current."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An update for one averaged tensor: returns the running mean including `current_param`."""

    @no_grad()
    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


@no_grad()
def _swa_divide_update(averaged_list, current_list, num_averaged) -> None:
    """get_swa_avg_fn's formula over a list, written back with copy_ (so integer buffers truncate, as in torch)."""
    averaged = TensorList(averaged_list)
    averaged.copy_(averaged.add(TensorList(current_list).sub(averaged).div(num_averaged + 1)))


class AveragedModel(Module):
    r"""A copy of `model` whose parameters are the average (SWA by default, or EMA) of the models passed to
    update_parameters().

    Args:
        model (Module): the model to average.
        device: where to keep the averaged copy (default: the model's device).
        avg_fn: per-tensor update fn(averaged, current, num_averaged) -> new value.
        multi_avg_fn: list update fn(averaged_list, current_list, num_averaged), in place.
        use_buffers (bool): average the buffers too (else they are copied from the latest model).
    """

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers=False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters (and buffers, with use_buffers) into the average."""
        if self.use_buffers:
            self_param = itertools.chain(self.module.parameters(), self.module.buffers())
            model_param = itertools.chain(model.parameters(), model.buffers())
        else:
            self_param, model_param = self.parameters(), model.parameters()
        averaged_list, current_list = [], []
        copy_param = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(self_param, model_param):
            p_model_ = p_model.detach().to(p_averaged.device)
            averaged_list.append(p_averaged.detach())
            current_list.append(p_model_)
            if copy_param:
                p_averaged.detach().copy_(p_model_)
        if self.n_averaged > 0:
            self._average(averaged_list, current_list)
        if not self.use_buffers:
            # buffers (BatchNorm statistics) follow the latest model; update_bn recomputes them for the average
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1

    def _average(self, averaged_list, current_list) -> None:
        if self.multi_avg_fn is None and self.avg_fn is not None:
            for p_averaged, p_model in zip(averaged_list, current_list):
                n_averaged = self.n_averaged.to(p_averaged.device)
                p_averaged.detach().copy_(self.avg_fn(p_averaged.detach(), p_model, n_averaged))
            return
        # NOTE: with neither fn given, torch on CPU (no foreach kernels there) applies get_swa_avg_fn per tensor:
        # a + (c - a) / (n + 1), dividing by the count, which rounds differently from the lerp of the multi fn.
        multi_avg_fn = self.multi_avg_fn or _swa_divide_update
        # the list update runs per (device, dtype) group, as torch's foreach kernels do
        groups: dict = {}
        for p_averaged, p_model in zip(averaged_list, current_list):
            key = (str(p_averaged.device), p_averaged.dtype)
            groups.setdefault(key, ([], [], p_averaged.device))
            groups[key][0].append(p_averaged)
            groups[key][1].append(p_model)
        for averaged, current, device in groups.values():
            multi_avg_fn(averaged, current, self.n_averaged.to(device))


def _batch_norm_class():
    from ..nn.modules.normalization import _BatchNorm

    return _BatchNorm


@no_grad()
def update_bn(loader: Iterable[Any], model: Module, device=None) -> None:
    """Recompute BatchNorm running statistics with one pass over `loader` (batches: tensors or (input, ...))."""
    batch_norm = _batch_norm_class()
    momenta = {}
    for module in model.modules():
        if isinstance(module, batch_norm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    r"""Anneal each group's lr to a fixed SWA value over `anneal_epochs` ('cos' or 'linear'), then hold it."""

    def __init__(self, optimizer, swa_lr: float, anneal_epochs=10,
                 anneal_strategy: Literal["cos", "linear"] = "cos", last_epoch=-1) -> None:
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for each, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = each
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [
            self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha) for group in self.optimizer.param_groups
        ]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
