"""The backward engine: an iterative walk of the recorded graph.

It counts, for every node reachable from the roots, how many edges lead into
it; a node runs once all of them have delivered their gradient.  Ready nodes
run newest-first (by creation sequence number, as torch's ready queue does),
which keeps memory low and hook order like torch's.  No recursion, so a chain
of any length works.
"""

from __future__ import annotations

import heapq

from .. import _dispatch
from .._backends.sparse_coo import SparseCOOArray
from .grad_mode import state
from .node import AccumulateGrad, Node

# Callbacks queued during a backward pass, run once it has finished (torch's queue_callback).
after_backward: list = []


def _graph(roots: list[Node], needed: set | None):
    """Dependency count of every node reachable from roots (only through `needed` nodes if given)."""
    dependencies: dict = {}
    seen = set(roots)
    stack = list(seen)  # two outputs of one node given as roots: count its edges once
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None or (needed is not None and child not in needed):
                continue
            dependencies[child] = dependencies.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return dependencies


def _needed_nodes(roots: list[Node], targets: set) -> set:
    """(needed, executes): nodes on a path to a target, and those among them with a needed child, which run."""
    order = []
    seen = set()
    for root in roots:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            advanced = False
            for child, _ in children:
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.next_functions)))
                    advanced = True
                    break
            if not advanced:
                order.append(node)
                stack.pop()
    needed, executes = set(), set()
    for node in order:  # post-order: children before parents
        if any(child in needed for child, _ in node.next_functions if child is not None):
            executes.add(node)
            needed.add(node)
        elif node in targets:
            needed.add(node)
    return needed, executes


def _run_hooks(hooks: dict, grad):
    for hook in list(hooks.values()):
        replaced = hook(grad)
        if replaced is not None:
            _check_hook_result(hook, grad, replaced)
            grad = replaced
    return grad


def _check_hook_result(hook, grad, replaced) -> None:
    """torch's checks on a gradient a tensor hook returned (check_variable_result): same type, device, size."""
    if not hasattr(replaced, "_data"):
        raise TypeError(f"expected Variable, but hook returned '{type(replaced).__name__}'")
    name = getattr(hook, "__name__", "<unknown>")
    if replaced._dtype is not grad._dtype or replaced._device.type != grad._device.type:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.type()} got {replaced.type()})")
    if replaced._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")


def _checked_node_hook_result(hook, replaced, expected: int) -> list:
    """A Node hook's replacement gradients, checked as torch's (a tuple of the same length)."""
    if not isinstance(replaced, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(replaced).__name__}'")
    if len(replaced) != expected:
        name = getattr(hook, "__name__", "<unknown>")
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got {len(replaced)}, "
                           f"but expected {expected})")
    return list(replaced)


def _add(existing, grad, owned=None):
    """existing + grad.  A buffer the engine made itself (its id in `owned`: a sum, or a fresh view-scatter
    result, that only the buffer references) is added into in place when no graph is being recorded.  Ids
    leave `owned` when their tensor is consumed, so a freed tensor's id is never mistaken for a live one's."""
    if existing is None:
        return grad
    if owned is None:
        return _sum(existing, grad)
    owned.discard(id(grad))
    if (id(existing) in owned and existing._dtype is grad._dtype and existing._data.shape == grad._data.shape
            and type(existing._data) is not SparseCOOArray and type(grad._data) is not SparseCOOArray):
        existing._data += grad._data
        return existing
    owned.discard(id(existing))
    result = _sum(existing, grad)
    owned.add(id(result))
    return result


def _sum(existing, grad):
    """existing + grad; a sparse buffer meeting a dense gradient is added to it (sparse + dense has no kernel:
    NOTE [ Sparse COO tensors ] in ember/_ops/sparse_ops.py)."""
    if type(existing._data) is SparseCOOArray and type(grad._data) is not SparseCOOArray:
        return grad + existing
    return existing + grad


# NOTE [ Slice gradients added in place ]
# The backward of a slicing view (x[:, a:b], split, chunk, unbind, select, narrow) is zeros of the input's
# shape with the gradient written into the slice (view_scatter).  Three slices of one tensor (a qkv split)
# cost three full-size zero buffers and two full-size additions.  When no graph is being recorded and the
# input's gradient buffer already holds a tensor the engine made, the slice's gradient is added into that
# buffer's slice instead: one pass over the slice, no allocation.  Nodes with hooks, anomaly mode, captured
# gradients and the profiler take the ordinary path.


def _scatter_in_place(node, grads, buffers, owned, capture) -> bool:
    """Add a slicing node's gradient into its input's buffer (NOTE [ Slice gradients added in place ])."""
    op = getattr(node, "op", None)
    if op is None or not getattr(op, "scatters_into_buffer", False) or grads[0] is None or len(grads) != 1:
        return False
    if (node._tensor_hooks or node._retain_hooks or node._pre_hooks or node._post_hooks or node._trace is not None
            or (capture is not None and (node, 0) in capture) or len(node.next_functions) != 1):
        return False
    child, nr = node.next_functions[0]
    buffer = buffers.get(child)
    existing = buffer[nr] if buffer is not None else None
    grad = grads[0]
    if existing is None or id(existing) not in owned or existing._dtype is not grad._dtype:
        return False
    if type(existing._data) is SparseCOOArray:
        return False
    target = op.impl(_xp(existing), existing._data, **node.params)
    if getattr(target, "shape", None) != grad._data.shape or target.base is None:
        return False
    target += grad._data
    return True


def _xp(tensor):
    return _dispatch.device_module(tensor._device)


# torch._C._is_checkpoint_valid(): False while a backward runs for autograd.grad or backward(inputs=...),
# which the reentrant checkpoint cannot serve.
checkpoint_valid = True


def run_backward(
    roots: list,
    grads: list,
    keep_graph: bool,
    create_graph: bool,
    capture: dict | None = None,
    accumulate_into: set | None = None,
) -> list | None:
    """Backpropagate `grads` from `roots` [(node, output_nr)].

    capture: {(node, output_nr): index} whose incoming gradients are returned
    (autograd.grad) instead of accumulated; accumulate_into: the AccumulateGrad
    nodes allowed to write `.grad` (backward(inputs=...)); None means all.
    """
    root_nodes = [node for node, _ in roots]
    targets = None
    if capture is not None:
        targets = {node for node, _ in capture}
    elif accumulate_into is not None:
        targets = accumulate_into
    needed = executes = None
    if targets is not None:
        needed, executes = _needed_nodes(root_nodes, targets)
    dependencies = _graph(root_nodes, needed)
    buffers: dict = {}
    for (node, nr), grad in zip(roots, grads):
        buffer = buffers.setdefault(node, [None] * node.num_outputs)
        buffer[nr] = _add(buffer[nr], grad)
    captured = [None] * len(capture) if capture is not None else None
    ready = []
    for node in buffers:
        if dependencies.get(node, 0) == 0:
            heapq.heappush(ready, (-node._sequence_nr, id(node), node))
    global checkpoint_valid
    previous_mode, previous_valid = state.enabled, checkpoint_valid
    state.enabled = create_graph
    checkpoint_valid = capture is None and accumulate_into is None  # a plain .backward(): see _is_checkpoint_valid
    # buffers the engine made itself, safe to add into (None while recording a graph: create_graph)
    owned = None if create_graph or state.anomaly else set()
    try:
        while ready:
            node = heapq.heappop(ready)[2]
            node_grads = buffers.pop(node, None) or [None] * node.num_outputs
            if owned:
                for grad in node_grads:
                    owned.discard(id(grad))  # leaves the buffers now
            if owned is not None and _dispatch.profiler is None and (executes is None or node in executes) and (
                    _scatter_in_place(node, node_grads, buffers, owned, capture)):
                outputs = None
            elif _dispatch.profiler is None:
                outputs = _run_node(node, node_grads, capture, captured, accumulate_into, executes)
            else:  # ember.profiler: "autograd::engine::evaluate_function: <name>" spans the node's hooks and apply
                outputs = _dispatch.profiler.evaluate_function(
                    node, _run_node, node, node_grads, capture, captured, accumulate_into, executes)
            # a slicing node's output is a fresh zeros-and-slice array that only the buffer will hold
            fresh = owned is not None and outputs is not None and not node._post_hooks and getattr(
                getattr(node, "op", None), "scatters_into_buffer", False)
            if not keep_graph:
                node.release()
            _deliver(node, outputs, buffers, dependencies, ready, needed, owned, fresh)
    finally:
        state.enabled, checkpoint_valid = previous_mode, previous_valid
        while after_backward:
            after_backward.pop(0)()
    return captured


def _run_node(node: Node, grads: list, capture, captured, accumulate_into, executes):
    """Run a node's hooks and its apply; return the gradients for its edges (or None to send nothing)."""
    if node._tensor_hooks:
        for nr, hooks in node._tensor_hooks.items():
            if grads[nr] is not None and hooks:
                grads[nr] = _run_hooks(hooks, grads[nr])
    if node._retain_hooks:
        for nr, hook in node._retain_hooks.items():
            if grads[nr] is not None:
                hook(grads[nr])
    if node._pre_hooks:
        for hook in list(node._pre_hooks.values()):
            replaced = hook(tuple(grads))
            if replaced is not None:
                grads = _checked_node_hook_result(hook, replaced, len(grads))
    if capture is not None:
        for nr in range(len(grads)):
            index = capture.get((node, nr))
            if index is not None:
                captured[index] = grads[nr] if captured[index] is None else captured[index] + grads[nr]
    if isinstance(node, AccumulateGrad):
        if capture is not None or (accumulate_into is not None and node not in accumulate_into):
            return None
    elif executes is not None and node not in executes:
        return None
    if all(g is None for g in grads):
        return None
    try:
        outputs = node.apply(grads) if _dispatch.profiler is None else _dispatch.profiler.apply_node(node, grads)
    except Exception as error:
        if node._trace is not None:
            _report_anomaly(node)
        raise error
    if state.anomaly and state.anomaly_check_nan:
        _check_nan(node, outputs)
    if node._post_hooks:
        for hook in list(node._post_hooks.values()):
            replaced = hook(tuple(outputs), tuple(grads))
            if replaced is not None:
                outputs = _checked_node_hook_result(hook, replaced, len(outputs))
    return outputs


def _deliver(node: Node, outputs, buffers: dict, dependencies: dict, ready: list, needed, owned=None,
             fresh: bool = False) -> None:
    """Add each output gradient into the buffer of the node its edge leads to."""
    sent = set()
    for index, (child, nr) in enumerate(node.next_functions):
        if child is None or (needed is not None and child not in needed):
            continue
        grad = outputs[index] if outputs is not None and index < len(outputs) else None
        if grad is not None:
            if id(grad) in sent and isinstance(child, AccumulateGrad):
                grad = grad.clone()  # two leaves must not share one .grad array
            sent.add(id(grad))
            buffer = buffers.get(child)
            if buffer is None:
                buffer = buffers[child] = [None] * child.num_outputs
            if fresh and buffer[nr] is None:
                owned.add(id(grad))
            buffer[nr] = _add(buffer[nr], grad, owned)
        remaining = dependencies[child] - 1
        dependencies[child] = remaining
        if remaining == 0:
            heapq.heappush(ready, (-child._sequence_nr, id(child), child))


def _report_anomaly(node: Node) -> None:
    """torch warns (UserWarning) with the forward traceback of the node whose backward failed."""
    import warnings

    warnings.warn(
        f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
        + "".join(node._trace),
        UserWarning,
        stacklevel=4,
    )


def _check_nan(node: Node, outputs) -> None:
    for index, grad in enumerate(outputs or ()):
        if grad is not None and grad._data is not None and grad._dtype.category >= 2:
            if grad.isnan().any().item():
                if node._trace is not None:
                    _report_anomaly(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")
