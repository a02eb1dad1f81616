"""How the function transforms nest on ember's single autograd tape.

torch.func keeps one "level" per active transform; ember has one tape, so a transform marks its own inputs
instead.  Each call of grad/vjp/jacrev/jvp differentiates with respect to *fresh* tensors:

* an input that an outer computation may differentiate (grad mode on and `requires_grad`) is replaced by a
  view of itself, so the inner graph stays connected to the outer one (that is how grad(grad(f)) works);
* any other input is replaced by a detached leaf that shares its data and requires grad; these leaves are
  recorded as this call's own.

After the call, a result keeps its autograd graph only if that graph reaches a leaf that something outside
this call can still differentiate: a user's tensor that requires grad, or a leaf of an *enclosing* transform
call that is still running.  Leaves of this call, and of transform calls that have returned, are dead ends.
Everything else is detached, as torch's unwrapping at the end of a level does.  The same test decides
`create_graph`: the backward pass is recorded only when something outside can still use it.

A level is "running" between `with Level() as level:` entry and exit (a stack, as torch's levels); a leaf
remembers its level in its instance dict (`_transform_level`), so the test stays right after the level
object is gone.
"""

from __future__ import annotations

import ember

from .._autograd.node import AccumulateGrad
from ._pytree import tree_flatten, tree_map

__all__ = ["Level", "check_tensors", "materialize"]


_running: list = []  # the levels whose transform call has not returned, innermost last


class Level:
    """One transform call: the leaves it created, and the test for what can be reached from outside them."""

    def __init__(self, forward: bool = False, vmapped: bool = False) -> None:
        self.outer_grad = ember.is_grad_enabled()  # captured before the transform turns grad mode on
        # what torch's interpreter stack would hold here, for custom autograd.Function's checks
        # (Function.apply): a forward-mode (jvp) level, and a vmap over it (jacfwd vmaps its jvp)
        self.forward = forward
        self.vmapped = vmapped
        self._dead: dict = {}  # id -> node known to reach no live outside leaf (held, so ids stay unique)

    def __enter__(self) -> Level:
        _running.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _running.remove(self)
        self._dead.clear()

    def refresh(self) -> None:
        """For a later call (vjp_fn, jvp_fn): take the caller's grad mode, forget what was learnt before."""
        self.outer_grad = ember.is_grad_enabled()
        self._dead.clear()

    def leaf(self, tensor):
        """A new leaf sharing `tensor`'s data that requires grad and belongs to this level."""
        fresh = tensor.detach().requires_grad_()
        fresh._transform_level = self
        return fresh

    def differentiable(self, tree):
        """Each tensor of `tree` made differentiable at this level (see the module docstring)."""

        def make(value):
            if not isinstance(value, ember.Tensor):
                raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
            if self.outer_grad and value.requires_grad:
                return value.view_as(value)
            return self.leaf(value)

        return tree_map(make, tree)

    def _outside(self, leaf) -> bool:
        owner = leaf.__dict__.get("_transform_level")
        return owner is None or (owner is not self and owner in _running)

    def reaches_outside(self, tensors) -> bool:
        """Whether the graph of any of `tensors` reaches a leaf that something outside can differentiate."""
        if not self.outer_grad:
            return False
        stack = []
        for tensor in tensors:
            if not isinstance(tensor, ember.Tensor) or not tensor.requires_grad:
                continue
            node = tensor.grad_fn
            if node is None:
                if self._outside(tensor):
                    return True
            else:
                stack.append(node)
        seen: dict = {}
        while stack:
            node = stack.pop()
            key = id(node)
            if key in seen or key in self._dead:
                continue
            seen[key] = node
            if isinstance(node, AccumulateGrad):
                if self._outside(node.variable):
                    return True
                continue
            stack.extend(child for child, _ in node.next_functions if child is not None)
        self._dead.update(seen)  # a full search that found nothing outside: none of these nodes can (leaves only die)
        return False

    def release(self, tree):
        """`tree` with every tensor whose graph stays inside this level detached."""

        def unwrap(value):
            if isinstance(value, ember.Tensor) and value.requires_grad and not self.reaches_outside([value]):
                return value.detach()
            return value

        return tree_map(unwrap, tree)


def active_transforms() -> tuple[bool, bool, bool]:
    """(any torch.func transform running, a vmap running, a forward-mode transform running)."""
    from . import _batching

    vmap = bool(_batching._active) or any(level.vmapped for level in _running)
    forward = any(level.forward for level in _running)
    return bool(_running) or vmap, vmap, forward


def check_tensors(tree, message_prefix: str = "Expected tensors") -> None:
    """Every leaf of `tree` must be a tensor (torch's check on aux outputs)."""
    for leaf in tree_flatten(tree)[0]:
        if not isinstance(leaf, ember.Tensor):
            raise RuntimeError(f"{message_prefix}, got unsupported type {type(leaf)}")


def materialize(grads, like) -> list:
    """Gradients from ember.autograd.grad(allow_unused=True), with None replaced by zeros (torch.func's)."""
    return [ember.zeros_like(ref) if grad is None else grad for grad, ref in zip(grads, like)]
