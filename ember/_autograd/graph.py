"""torch.autograd.graph: the Node type, gradient edges, and hooks on saved tensors.

`saved_tensors_hooks(pack, unpack)` pushes a pair on `state.saved_hooks`;
every node recorded while it is active (built-in ops in OpNode, custom
Functions in save_for_backward) stores `pack(tensor)` in a SavedTensor instead
of the tensor, and calls `unpack` when backward reads it (node.SavedTensor).
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

from .grad_mode import state
from .node import Node

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "saved_tensors_hooks", "save_on_cpu",
           "disable_saved_tensors_hooks", "register_multi_grad_hook"]


class GradientEdge(NamedTuple):
    """An edge of the autograd graph: a node and which of its inputs (torch: output_nr)."""

    node: Node
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge that gradients for `tensor` flow into (its grad_fn, or its AccumulateGrad for a leaf)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    node, output_nr = tensor._edge()
    return GradientEdge(node, output_nr)


def increment_version(tensor) -> None:
    """Bump the version counter, as an in-place op would (makes saved copies of it fail their check)."""
    tensors = tensor if isinstance(tensor, (tuple, list)) else (tensor,)
    for t in tensors:
        t._bump_version()


class saved_tensors_hooks:
    """Context manager: tensors saved for backward are stored as `pack_hook(tensor)` and read back through
    `unpack_hook(packed)`.  Nested uses apply the innermost pair only, as torch's."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if state.saved_hooks_disabled is not None:
            raise RuntimeError(state.saved_hooks_disabled)
        state.saved_hooks = state.saved_hooks + ((self.pack_hook, self.unpack_hook),)

    def __exit__(self, *args) -> None:
        state.saved_hooks = state.saved_hooks[:-1]


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device when backward needs them."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside, entering saved_tensors_hooks raises RuntimeError(error_message)."""
    previous = state.saved_hooks_disabled
    try:
        state.saved_hooks_disabled = error_message
        yield
    finally:
        state.saved_hooks_disabled = previous


class _MultiHandle:
    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *args) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Call fn once per backward over `tensors`: mode "all" with the list of their gradients (None for those not
    computed) after all of them are known, mode "any" with the first gradient computed.

    Without torch's per-graph-task bookkeeping, "all" fires when every tensor that requires grad has received its
    gradient in this backward pass; tensors not reached leave the call pending until the next pass resets it.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    if mode == "any":
        fired = {"done": False}

        def any_hook(grad):
            if not fired["done"]:
                fired["done"] = True
                fn(grad)
                _reset_after_backward(fired)

        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))
    grads: list = [None] * len(tensors)
    seen: set = set()
    expected = sum(1 for t in tensors if t.requires_grad)

    def make_hook(index):
        def hook(grad):
            grads[index] = grad
            seen.add(index)
            if len(seen) == expected:
                result = list(grads)
                grads[:] = [None] * len(tensors)
                seen.clear()
                fn(result)

        return hook

    return _MultiHandle(tuple(t.register_hook(make_hook(i)) for i, t in enumerate(tensors) if t.requires_grad))


def _reset_after_backward(flag: dict) -> None:
    """Re-arm an "any" hook for the next backward: reset once the current one finishes."""
    from . import engine

    engine.after_backward.append(lambda: flag.update(done=False))
