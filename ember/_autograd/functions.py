"""torch.autograd.backward and torch.autograd.grad on top of the engine."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .engine import run_backward


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    if hasattr(value, "_data"):
        return (value,)
    # torch takes any iterable of tensors (MAML passes `params.values()`, a dict view), not only sequences
    if isinstance(value, (Sequence, Iterable)):
        return tuple(value)
    return (value,)


def _root_gradients(outputs: tuple, grad_outputs: tuple, create_graph: bool) -> list:
    """Default and checked gradients for the outputs (implicit ones only for scalars)."""
    from .._tensor import Tensor

    grads = []
    for index, output in enumerate(outputs):
        grad = grad_outputs[index] if index < len(grad_outputs) else None
        if grad is None:
            if not output.requires_grad:  # as torch's _make_grads: the engine names it (_roots)
                grads.append(None)
                continue
            if output.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if output._dtype.category < 2:
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {output._dtype}"
                )
            grad = output.new_ones(output.shape)
        else:
            if not isinstance(grad, Tensor):
                grad = output.new_full(output.shape, grad)
            if tuple(grad.shape) != tuple(output.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{index}] has a shape of torch.Size({list(grad.shape)}) and "
                    f"output[{index}] has a shape of torch.Size({list(output.shape)})."
                )
            if grad._dtype.is_complex != output._dtype.is_complex:
                raise RuntimeError(
                    f"For complex Tensors, both grad_output and output are required to have the same dtype. "
                    f"Mismatch in dtype: grad_output[{index}] has a dtype of {grad._dtype} and output[{index}] has "
                    f"a dtype of {output._dtype}."
                )
            if grad._dtype is not output._dtype:
                grad = grad.to(output._dtype)  # torch's engine casts a root gradient to its output's dtype
            elif not create_graph:
                grad = grad.detach().clone()  # the caller keeps theirs; .grad must not alias it
            if not create_graph and grad._grad_fn is not None:
                grad = grad.detach()
        grads.append(grad)
    return grads


def _roots(outputs: tuple) -> list:
    roots = []
    for index, output in enumerate(outputs):
        if not output.requires_grad:
            raise RuntimeError(
                f"element {index} of tensors does not require grad and does not have a grad_fn"
            )
        roots.append(output._edge())
    return roots


def _not_captured(what: str) -> None:
    """A backward pass inside a function ember.compile captures is a graph break, as in torch's dynamo: the
    engine accumulates gradients into raw buffers and rebuilds saved outputs outside the ops, which a graph
    cannot replay (a third gradient contribution was lost; create_graph results lost their history)."""
    from .. import _dispatch

    if _dispatch.tracer is not None:
        _dispatch.capture_break(f"{what} inside a compiled function")


_warned_create_graph = False


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph: bool = False, grad_variables=None,
             inputs=None) -> None:
    """Accumulate d(tensors)/d(leaves) into the leaves' .grad."""
    _not_captured("autograd.backward()")
    outputs = _as_tuple(tensors)
    grad_outputs = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if retain_graph is None:
        retain_graph = create_graph
    grads = _root_gradients(outputs, grad_outputs, create_graph)
    roots = _roots(outputs)
    global _warned_create_graph
    if create_graph and not _warned_create_graph:  # torch's TORCH_WARN_ONCE: once per process
        import warnings

        _warned_create_graph = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
            "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
            "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
            "to None after use to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=3,
        )
    accumulate_into = None
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        accumulate_into = set()
        capture = {}
        for tensor in inputs:
            if not tensor.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if tensor.grad_fn is None:
                accumulate_into.add(tensor._grad_accumulator())
            else:
                capture[tensor._edge()] = len(capture)
        if capture:
            nonleaf = [t for t in inputs if t.grad_fn is not None]
            captured = run_backward(roots, grads, True, create_graph, capture=capture)
            for tensor, grad in zip(nonleaf, captured):
                if grad is not None:
                    tensor._grad = grad if tensor._grad is None else tensor._grad + grad
            if not accumulate_into:
                return
    run_backward(roots, grads, retain_graph, create_graph, accumulate_into=accumulate_into)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph: bool = False, only_inputs=True,
         allow_unused=None, is_grads_batched: bool = False, materialize_grads: bool = False):
    """Return d(outputs)/d(inputs) without touching .grad."""
    _not_captured("autograd.grad()")
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outputs, inputs, _as_tuple(grad_outputs), retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grads = _root_gradients(outputs, _as_tuple(grad_outputs), create_graph)
    roots = _roots(outputs)
    capture = {}
    for index, tensor in enumerate(inputs):
        if not tensor.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(tensor._edge(), index)
    captured = run_backward(roots, grads, retain_graph, create_graph, capture=capture)
    result = []
    for index, tensor in enumerate(inputs):
        value = captured[capture[tensor._edge()]]
        if value is None:
            if materialize_grads:
                value = tensor.new_zeros(tensor.shape)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {index} appears to not have been used in the graph. Set "
                    "allow_unused=True if this is the desired behavior."
                )
        elif not create_graph:
            value = value.detach()
        result.append(value)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """grad(..., is_grads_batched=True): the first dim of each grad_output is a batch of vectors, each giving
    one vector-Jacobian product; the results are stacked along a new first dim (torch vmaps the backward; one
    backward per vector gives the same values)."""
    from .._ops.movement import stack
    from .._tensor import Tensor

    batch = None
    for index, (output, grad_output) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(grad_output, Tensor):
            continue
        if tuple(grad_output.shape[1:]) != tuple(output.shape) or grad_output.ndim == 0:
            # (torch's message prints the grad_output's shape without its first two dims; kept as torch's)
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the batch "
                "dimension. The sizes of the remaining dimensions are expected to match the shape of "
                f"corresponding output, but a mismatch was detected: grad_output[{index}] has a shape of "
                f"torch.Size({list(grad_output.shape[2:])}) and output[{index}] has a shape of "
                f"torch.Size({list(output.shape)}). If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
        batch = grad_output.shape[0] if batch is None else batch
    if batch is None:
        return grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused=allow_unused,
                    materialize_grads=materialize_grads)
    per_vector = []
    for i in range(batch):
        vectors = tuple(g[i] if isinstance(g, Tensor) else g for g in grad_outputs)
        per_vector.append(grad(outputs, inputs, vectors, retain_graph if i == batch - 1 else True, create_graph,
                               allow_unused=allow_unused, materialize_grads=materialize_grads))
    result = []
    for position in range(len(inputs)):
        column = [each[position] for each in per_vector]
        result.append(None if any(g is None for g in column) else stack(column))
    return tuple(result)
