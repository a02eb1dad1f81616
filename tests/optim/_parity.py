"""Shared pieces of the optimizer parity tests: the same parameters and gradients in torch and ember."""

from __future__ import annotations

import numpy as np
import torch

import ember

SHAPES = [(3, 4), (5,), (2, 3, 2)]


def initial_arrays(dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]


def _targets(arrays):
    rng = np.random.default_rng(1)
    return [rng.standard_normal(a.shape).astype(a.dtype) for a in arrays]


class Problem:
    """loss(p) = sum(scale * (p - target)^2 + 0.1/3 * sin(3p)) over all params, evaluated in NumPy so both
    libraries see bit-identical gradients for bit-identical parameters."""

    def __init__(self, arrays) -> None:
        self.targets = _targets(arrays)
        self.scales = [0.5 + i for i in range(len(arrays))]

    def loss_and_grads(self, values):
        loss, grads = 0.0, []
        for p, t, s in zip(values, self.targets, self.scales):
            loss += float(np.sum(s * (p - t) ** 2 + 0.1 / 3 * np.sin(3 * p)))
            grads.append((2 * s * (p - t) + 0.1 * np.cos(3 * p)).astype(p.dtype))
        return loss, grads


def to_numpy(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def make_params(lib, arrays):
    return [lib.tensor(a.copy(), requires_grad=True) for a in arrays]


def set_grads(lib, params, problem):
    loss, grads = problem.loss_and_grads([to_numpy(p) for p in params])
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)
    return loss


def closure_for(lib, params, problem):
    def closure():
        return lib.tensor(set_grads(lib, params, problem))

    return closure


def groups_for(params, group_options):
    """One group of all params, or two groups (first param alone, with `group_options`) when given."""
    if group_options is None:
        return params
    return [dict(params=params[:1], **group_options), dict(params=params[1:])]


def run(lib, optimizer_name, options, arrays, steps, group_options=None, problem=None):
    """(params, optimizer) after `steps` steps of optimizer_name(**options) on the synthetic problem."""
    problem = problem or Problem(arrays)
    params = make_params(lib, arrays)
    optimizer = getattr(lib.optim, optimizer_name)(groups_for(params, group_options), **options)
    advance(lib, optimizer, params, problem, steps)
    return params, optimizer


def advance(lib, optimizer, params, problem, steps):
    for _ in range(steps):
        if isinstance(optimizer, (torch.optim.LBFGS, ember.optim.LBFGS)):
            optimizer.step(closure_for(lib, params, problem))
        else:
            set_grads(lib, params, problem)
            optimizer.step()


def torch_state_to_ember(value):
    """A torch state_dict with every tensor converted to an ember tensor of the same dtype and value."""
    if isinstance(value, torch.Tensor):
        return ember.tensor(value.detach().numpy().copy())
    if isinstance(value, dict):
        return {k: torch_state_to_ember(v) for k, v in value.items()}
    if isinstance(value, list):
        return [torch_state_to_ember(v) for v in value]
    if isinstance(value, tuple):
        return tuple(torch_state_to_ember(v) for v in value)
    return value


def plain(value):
    """A state_dict with tensors replaced by (dtype name, shape, values), for structural comparison."""
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        array = to_numpy(value)
        return ("tensor", str(value.dtype).split(".")[-1], tuple(array.shape))
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value
