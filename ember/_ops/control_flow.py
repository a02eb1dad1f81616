"""Structured control flow: torch.cond and torch.while_loop, run eagerly.

Outside torch.compile, torch runs them by tracing the branches / loop body with dynamo and then executing
them; ember runs the Python the operators stand for (`true_fn(*operands) if pred else false_fn(*operands)`,
`while cond_fn(*carry): carry = body_fn(*carry)`), with the checks torch makes on the arguments and on what
the functions return: leaf types, outputs that alias an input, inputs mutated in place, and body outputs whose
metadata differ from the carried inputs.  Checks torch can only make by tracing the branch or body that does
not run (the untaken branch's outputs; a loop that runs zero times) are not made.
"""

from __future__ import annotations

from collections.abc import Callable

from .._tensor import Tensor
from ._api import export

_ALIASING = ("Encountered aliasing during higher order op tracing: Higher order ops do not support aliasing. "
             "Replace `return input` with `return input.clone()` to avoid aliasing.")
_MUTATION = ("Encountered input mutation during higher order op tracing: Higher order ops do not support input "
             "mutation. Clone the input before mutating it.")


def _pytree():
    from ..func import _pytree

    return _pytree


def _tensors(leaves) -> list:
    return [leaf for leaf in leaves if isinstance(leaf, Tensor)]


def _check_aliasing(outputs, inputs) -> None:
    """An output that shares memory with an input is refused, as dynamo refuses it."""
    storages = {id(each._storage) for each in _tensors(inputs)}
    if any(id(each._storage) in storages for each in _tensors(outputs)):
        raise RuntimeError(_ALIASING)


def _versions(tensors) -> list:
    return [each._storage.version for each in tensors]  # every write to the memory (inference tensors too)


# ---------------------------------------------------------------- cond


@export(method=False)
def cond(pred: bool | int | float | Tensor, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()):
    """torch.cond(pred, true_fn, false_fn, operands=()): true_fn(*operands) if pred else false_fn(*operands).

    A Python bool / int / float pred just picks the branch; a tensor pred must have one element and then the
    branch may not return an input (or a view of one), return non-int constants, or mutate an input while
    grad mode is on."""
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    pytree = _pytree()
    if not isinstance(operands, (tuple, list)) or not all(isinstance(leaf, Tensor)
                                                          for leaf in pytree.tree_flatten(operands)[0]):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of "
                           f"tensor leaves, but got {operands}.")
    from .._autograd.grad_mode import state

    inputs = pytree.tree_flatten(operands)[0]
    before = _versions(inputs)
    result = (true_fn if bool(pred) else false_fn)(*operands)
    outputs = pytree.tree_flatten(result)[0]
    for leaf in outputs:
        if not isinstance(leaf, (Tensor, int)):
            raise RuntimeError("torch.cond: unsupported branch return type (constant non-int): Constants returned "
                               f"from branches must be ints, got {type(leaf).__name__}.")
    _check_aliasing(outputs, inputs)
    if state.enabled and _versions(inputs) != before:
        raise RuntimeError(_MUTATION)
    return result


# ---------------------------------------------------------------- while_loop


def _check_predicate(pred) -> bool:
    if isinstance(pred, bool):
        return pred
    if isinstance(pred, Tensor) and pred.ndim == 0 and pred.dtype.name == "bool":
        return bool(pred)
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")


def _metadata(value) -> dict:
    if isinstance(value, Tensor):
        return {"kind": "Tensor", "shape": tuple(value.shape), "dtype": value.dtype, "device": value.device}
    return {"kind": "int"}


def _check_body_output(outputs: list, carried: list) -> None:
    if len(outputs) != len(carried):
        raise RuntimeError(f"body_fn should return the same number of elements as carried_inputs, got "
                           f"{len(outputs)} vs {len(carried)}")
    for index, (output, carry) in enumerate(zip(outputs, carried)):
        if not isinstance(output, (Tensor, int)):
            raise RuntimeError(f"HigherOrderOperator body's output must consist of tensors or ints/bools only but "
                               f"got {type(output)}.")
        got, expected = _metadata(output), _metadata(carry)
        for field in expected:
            if got.get(field) != expected[field]:
                raise RuntimeError("Expected body_fn_output and carried_inputs to have same metadata but found:\n"
                                   f"pair[{index}] differ in '{field}: {got.get(field)} vs {expected[field]}'")


@export(method=False)
def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list):
    """torch.while_loop(cond_fn, body_fn, carried_inputs): while cond_fn(*carry): carry = body_fn(*carry).

    carried_inputs is a tuple or list of (nested containers of) tensors and ints; cond_fn returns a bool or a
    boolean 0-d tensor; body_fn returns values with the carried inputs' structure and metadata, neither
    aliasing nor mutating them.  With no iteration the result is a copy of carried_inputs, as torch's."""
    pytree = _pytree()
    leaves, spec = pytree.tree_flatten(carried_inputs)
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not all(isinstance(leaf, (Tensor, int)) for leaf in leaves):
        raise AssertionError(f"{leaves} can only be of {(Tensor, int)} but got {tuple(type(leaf) for leaf in leaves)}")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"carried_inputs must be a tuple or list, got {type(carried_inputs)}")
    carry = carried_inputs
    if not _check_predicate(cond_fn(*carry)):
        clones = [leaf.clone() if isinstance(leaf, Tensor) else leaf for leaf in leaves]
        return pytree.tree_unflatten(clones, spec)
    while True:
        inputs = pytree.tree_flatten(carry)[0]
        before = _versions(_tensors(inputs))
        result = body_fn(*carry)
        outputs = pytree.tree_flatten(result)[0]
        _check_body_output(outputs, leaves)
        _check_aliasing(outputs, inputs)
        if _versions(_tensors(inputs)) != before:
            raise RuntimeError(_MUTATION)
        carry = pytree.tree_unflatten(outputs, spec)  # the next call sees the carried structure, as torch's
        if not _check_predicate(cond_fn(*carry)):
            return result
