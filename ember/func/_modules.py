"""torch.func's helpers around nn.Modules and its debugging/functionalization entry points:
stack_module_state (model ensembling), replace_all_batch_norm_modules_, debug_unwrap and functionalize."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import ember

__all__ = ["stack_module_state", "replace_all_batch_norm_modules_", "debug_unwrap", "functionalize"]


def _stacked_leaf(tensors: tuple, name: str):
    """The tensors stacked; a new leaf that requires grad when they all do (torch's construct_stacked_leaf)."""
    all_require = all(t.requires_grad for t in tensors)
    if not all_require and any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = ember.stack(tensors)
    return result.detach().requires_grad_() if all_require else result


def stack_module_state(models: Sequence) -> tuple[dict[str, Any], dict[str, Any]]:
    """torch.func.stack_module_state: the parameters and the buffers of `models` (modules of one class, in one
    training/eval mode) stacked along a new dim 0, as two dicts keyed by name, ready for vmap over
    functional_call.  Stacked parameters are new leaves (optimizable), unrelated to the models' own."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first_type = type(models[0])
    if not all(type(m) is first_type for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(model.named_parameters()) for model in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_params), k) for k in all_params[0]}
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_buffers), k) for k in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """torch.func.replace_all_batch_norm_modules_: every BatchNorm module in `root` (root included) stops
    tracking running stats (running_mean, running_var and num_batches_tracked set to None), so it can run under
    vmap; `root` is changed in place and returned."""
    from ..nn.modules.normalization import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse: bool = True):
    """torch.func.debug_unwrap: the tensor under functorch's wrappers.  ember's transforms wrap nothing (vmap
    runs per sample), so this is `tensor` itself; inside vmap it is the current sample, not the whole batch."""
    return tensor


_REMOVE_OPTIONS = ("mutations", "mutations_and_views")


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """torch.func.functionalize: `func` with its mutations (and views) made functional for graph capture; the
    values, and the mutations of `func`'s inputs, stay what eager `func` gives.  ember runs `func` eagerly:
    that is the same program (ember.compile captures in-place ops itself), so only `remove` is checked."""
    if remove not in _REMOVE_OPTIONS:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. Valid options "
            "are:\n     remove='mutations': all inplace and out= operators will be removed from the program, and "
            "replaced with their out-of-place equivalents.\n     remove='mutations_and_views': In addition to the "
            "above, all aliasing operators {view} will be replaced with their non-aliasing counterparts, "
            "{view}_copy.\n"
        )

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapped
