"""swap_in_optimizer_params_and_state: run an optimizer on other params and state for a while (torch.optim's)."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _validate_state(state: Any) -> dict:
    if not isinstance(state, dict):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping packed parameter ids to "
            f"per-param state dicts, got {type(state).__name__}."
        )
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be dictionaries.")
    return state


def _validate_group(idx: int, group: dict, swapin_group: Any) -> list:
    """The swap-in group's packed ids, after checking it is a dict with as many params and the same keys."""
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(pid, int) for pid in ids):
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param_groups[*]['params'] entries keyed by packed "
            "parameter ids."
        )
    if len(group["params"]) != len(ids):
        raise RuntimeError(
            f"swapin_optim_state param group {idx} has a different number of params than the live optimizer "
            "param group."
        )
    swapin_only = [k for k in swapin_group if k not in group]
    live_only = [k for k in group if k not in swapin_group]
    if swapin_only or live_only:
        raise RuntimeError(
            f"{_NAME} requires optimizer.state_dict()-style param group keys to exactly match the live optimizer "
            f"group keys for group {idx}. Keys only in swap-in: {swapin_only}. Keys only in live: {live_only}."
        )
    return ids


def _prepare(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """(state keyed by packed id, [(live group, swap-in group, swap-in params)]) after torch's checks."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _validate_state(swapin_optim_state.get("state"))
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['param_groups'] to be a list of param-group dicts, got "
            f"{type(groups).__name__}."
        )
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups than the live optimizer.")
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for idx, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _validate_group(idx, group, swapin_group)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(
                f"{_NAME} requires the explicit parameter state to match optimizer.param_groups ordering."
            )
        infos.append((group, swapin_group, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(
            f"{_NAME} requires swapin_optim_state['state'] to be keyed only by packed parameter ids from "
            f"param_groups[*]['params']; got extra keys {extra!r}."
        )
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Temporarily replace an optimizer's parameters, group options and state, restoring them on exit.

    Args:
        optimizer: the live optimizer; its state must already be initialized.
        swapin_parameters: tensors to use as the parameters during the context, in the order of the
            optimizer's params (most commonly model.named_parameters() order).
        swapin_optim_state: an optimizer.state_dict()-shaped dict whose 'state' is keyed by packed ids and
            whose 'param_groups' carry the same keys as the live groups.  In-place edits of its state
            tensors propagate back to it; new tensors assigned to the state during the context do not.
    """
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]  # shallow: the original params lists keep identity
    try:
        swapin_state: defaultdict = defaultdict(dict)
        for live_group, swapin_group, params in infos:
            live_group["params"] = params
            for key, value in swapin_group.items():
                if key != "params":
                    live_group[key] = value
            for param, param_id in zip(params, swapin_group["params"]):
                swapin_state[param] = dict(state.get(param_id, {}))
        optimizer.state = swapin_state
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
