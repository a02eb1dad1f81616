"""torch.autograd.graph (implemented in ember/_autograd/graph.py)."""

from .._autograd.graph import (  # noqa: F401
    GradientEdge,
    Node,
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
    saved_tensors_hooks,
)

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook"]
