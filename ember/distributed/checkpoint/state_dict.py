"""get/set model and optimizer state dicts keyed by parameter names, sharded where FSDP shards them.

The optimizer's own state_dict() is keyed by parameter index and holds this rank's chunks as plain
tensors, which cannot be resharded.  get_optimizer_state_dict keys the state by fully qualified parameter
name and wraps every chunk-shaped state tensor (exp_avg, momentum_buffer, ...) in a ShardedTensor with its
parameter's layout, so checkpoint.save/load can move it between world sizes.
"""

from __future__ import annotations

from ..._tensor import Tensor
from ..fsdp import ShardedTensor

__all__ = ["get_model_state_dict", "get_optimizer_state_dict", "set_model_state_dict", "set_optimizer_state_dict",
           "get_state_dict", "set_state_dict"]


def get_model_state_dict(model, *, options=None) -> dict:
    return model.state_dict()


def set_model_state_dict(model, model_state_dict: dict, *, options=None):
    return model.load_state_dict(model_state_dict)


def _names(model) -> dict:
    return {id(p): name for name, p in model.named_parameters()}


def _initialise(optimizer) -> None:
    """Create empty state (as torch's DCP does): one step with zero gradients and lr 0 where there is none."""
    if optimizer.state:
        return
    saved = []
    for group in optimizer.param_groups:
        saved.append(group["lr"])
        group["lr"] = 0.0
        for p in group["params"]:
            if p.grad is None:
                p.grad = p.detach().clone().zero_()
    optimizer.step()
    for group, lr in zip(optimizer.param_groups, saved):
        group["lr"] = lr
        for p in group["params"]:
            p.grad = None


def _wrap(param, value):
    managed = getattr(param, "_fsdp_param", None)
    if managed is not None and isinstance(value, Tensor) and tuple(value.shape) == tuple(param.shape):
        return ShardedTensor(value, managed.shape, managed.offset, managed.length, managed.group)
    return value


def get_optimizer_state_dict(model, optimizers, *, options=None) -> dict:
    _initialise(optimizers)
    names = _names(model)
    state = {names[id(p)]: {key: _wrap(p, value) for key, value in optimizers.state[p].items()}
             for group in optimizers.param_groups for p in group["params"] if p in optimizers.state}
    groups = [{**{k: v for k, v in group.items() if k != "params"}, "params": [names[id(p)] for p in group["params"]]}
              for group in optimizers.param_groups]
    return {"state": state, "param_groups": groups}


def set_optimizer_state_dict(model, optimizers, optim_state_dict: dict, *, options=None) -> None:
    """Values were loaded in place into the tensors get_optimizer_state_dict returned; copy the rest back."""
    names = _names(model)
    for group, saved in zip(optimizers.param_groups, optim_state_dict["param_groups"]):
        for key, value in saved.items():
            if key != "params":
                group[key] = value
    for group in optimizers.param_groups:
        for p in group["params"]:
            entry = optim_state_dict["state"].get(names[id(p)])
            if entry is None:
                continue
            for key, value in entry.items():
                if isinstance(value, ShardedTensor):
                    value = value.local_tensor()
                current = optimizers.state[p].get(key)
                if isinstance(current, Tensor) and isinstance(value, Tensor) and current is not value:
                    current.copy_(value)
                else:
                    optimizers.state[p][key] = value


def get_state_dict(model, optimizers, *, submodules=None, options=None):
    return get_model_state_dict(model), get_optimizer_state_dict(model, optimizers)


def set_state_dict(model, optimizers, *, model_state_dict, optim_state_dict, options=None):
    set_optimizer_state_dict(model, optimizers, optim_state_dict)
    return set_model_state_dict(model, model_state_dict)
