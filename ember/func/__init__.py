"""ember.func (torch.func): functional_call and the function transforms.

grad, grad_and_value, vjp, jacrev, jacfwd and hessian run on ember's tape autograd (ember/func/_transforms.py,
nesting explained in _levels.py); jvp and linearize use the double-vjp trick (_forward.py); vmap is a loop
over the mapped dimension, not a batched kernel (_vmap.py), that marks which tensors are batched to raise torch's
errors (_batching.py); stack_module_state and the other module helpers are in _modules.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._forward import jvp, linearize
from ._modules import debug_unwrap, functionalize, replace_all_batch_norm_modules_, stack_module_state
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, vjp
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "linearize", "stack_module_state", "replace_all_batch_norm_modules_", "debug_unwrap", "functionalize"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Call `module` with its parameters and buffers replaced by the given ones (a dict, or a sequence of dicts
    with disjoint keys); the module itself is left as it was."""
    from ..nn.utils.stateless import _functional_call

    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for key in d:
                counts[key] = counts.get(key, 0) + 1
        repeated = [key for key, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(parameter_and_buffer_dicts)}"
        )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
