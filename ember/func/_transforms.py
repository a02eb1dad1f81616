"""torch.func's reverse-mode transforms: grad, grad_and_value, vjp, jacrev, jacfwd and hessian.

All of them run the function once on fresh differentiable inputs and call `ember.autograd.grad` on its
outputs; how they nest on ember's single tape (grad(grad(f)), jacfwd(jacrev(f)), grad of vmap) is described
in ember/func/_levels.py.  Results, values and aux outputs come back detached unless an outer computation
(another transform, or the caller's own autograd) can still differentiate them, as in torch.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ember

from . import _randomness
from ._argnums import check_argnums, replace, select, wrap_argnums
from ._levels import Level, check_tensors, materialize
from ._pytree import tree_flatten, tree_unflatten, treespec_pprint

__all__ = ["grad", "grad_and_value", "vjp", "jacrev", "jacfwd", "hessian"]

_VJP = "vjp(f, *primals)"
_JVP = "jvp(f, primals, tangents)"


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _grad_of(outputs: list, inputs: list, grad_outputs: list | None, create_graph: bool) -> list:
    """d(outputs)/d(inputs) with zeros where an input is unused (or no output requires grad)."""
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs or [None] * len(outputs)) if out.requires_grad]
    if not pairs:
        return materialize([None] * len(inputs), inputs)
    grads = ember.autograd.grad([out for out, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                                create_graph=create_graph, allow_unused=True)
    return materialize(grads, inputs)


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad_and_value: a function returning (gradient of `func` w.r.t. `argnums`, value of `func`).

    `func` must return a scalar tensor (or `(scalar, aux)` with has_aux).  Like torch's, it runs with grad mode
    on even under an outer no_grad, and fills gradients of unused inputs with zeros.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        check_argnums(argnums)
        with Level() as level, ember.enable_grad():
            positions = wrap_argnums(argnums, len(args))
            diff_args = level.differentiable(select(args, positions))
            output = func(*replace(args, positions, diff_args), **kwargs)
            output, aux = _split_aux(output, has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, ember.Tensor):
                raise RuntimeError(
                    f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor with "
                    f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            if output.is_complex():  # (torch's autograd.grad refuses to make the implicit 1 for it)
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got {output.dtype}"
                )
            if has_aux:
                check_tensors(aux)
            flat_inputs, spec = tree_flatten(diff_args)
            grads = _grad_of([output], flat_inputs, None, level.reaches_outside([output]))
            result = level.release(tree_unflatten(grads, spec))
            output = level.release(output)
        if has_aux:
            return result, (output, level.release(aux))
        return result, output

    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """torch.func.grad: a function returning the gradient of scalar `func` w.r.t. the arguments at `argnums`
    (a pytree like the argument, or a tuple of them for a tuple argnums); with has_aux, `(gradient, aux)`."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = inner(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _checked_outputs(output, api: str) -> tuple[list, Any]:
    flat, spec = tree_flatten(output)
    if len(flat) == 0:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for value in flat:
        if not isinstance(value, ember.Tensor):
            raise RuntimeError(
                f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(value)}"
            )
    return flat, spec


def _check_floating(flat_outputs: list) -> None:
    for out in flat_outputs:
        if not (out.is_floating_point() or out.is_complex()):
            raise RuntimeError(
                f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor with dtype "
                f"{out.dtype}"
            )


def vjp(func: Callable, *primals, has_aux: bool = False):
    """torch.func.vjp: `(func(*primals), vjp_fn)` (plus aux with has_aux), where `vjp_fn(cotangents)` returns
    the vector-Jacobian products for every primal, as a tuple.  vjp_fn may be called many times (the graph
    is kept) and records its own graph when an outer computation can differentiate the result."""
    with Level() as level, ember.enable_grad():
        diff_primals = level.differentiable(primals)
        output = func(*diff_primals)
        output, aux = _split_aux(output, has_aux, _VJP)
        if has_aux:
            check_tensors(aux)
        flat_out, out_spec = _checked_outputs(output, _VJP)
        _check_floating(flat_out)
    flat_primals, primals_spec = tree_flatten(diff_primals)

    def vjp_fn(cotangents, retain_graph: bool = True, create_graph: bool | None = None):
        flat_cot, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs to the "
                f"function. cotangents: {treespec_pprint(cot_spec)}, primal output: {treespec_pprint(out_spec)}"
            )
        for cot in flat_cot:
            if cot is not None and not isinstance(cot, ember.Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(cot).__name__}")
        level.refresh()  # what can differentiate the result is decided per call
        if create_graph is None:
            create_graph = level.reaches_outside(flat_out + flat_cot)
        # torch's engine casts a root gradient to its output's dtype; do it here (ember's grad does not)
        flat_cot = [c.to(out.dtype) if isinstance(c, ember.Tensor) and c.dtype != out.dtype else c
                    for c, out in zip(flat_cot, flat_out)]
        with ember.enable_grad():
            grads = _grad_of(flat_out, flat_primals, flat_cot, create_graph)
        return level.release(tree_unflatten(grads, primals_spec))

    result = level.release(output)
    if has_aux:
        return result, vjp_fn, level.release(aux)
    return result, vjp_fn


def _error_if_complex(name: str, tree, is_input: bool) -> None:
    """torch's check that jacrev/jacfwd inputs and outputs are real (its message says "input idx" for both)."""
    for index, value in enumerate(tree_flatten(tree)[0]):
        if isinstance(value, ember.Tensor) and value.is_complex():
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{name}: Expected all {kind} to be real but received complex tensor at flattened "
                               f"input idx: {index}")


def check_primals_floating(flat_primals: list) -> None:
    """Forward mode (torch's make_dual) differentiates floating-point and complex primals only."""
    for primal in flat_primals:
        if isinstance(primal, ember.Tensor) and not (primal.is_floating_point() or primal.is_complex()):
            raise ValueError(f"Expected primal to be floating point or complex, but got: {primal.dtype}")


def _jacobian(func: Callable, argnums, has_aux: bool, forward: bool, args: tuple, kwargs: dict,
              randomness: str | None):
    """The Jacobian of every output of `func` w.r.t. `argnums`, one reverse pass per output element: shaped
    output.shape + input.shape and nested as torch's jacrev/jacfwd (output pytree of argnum pytrees).

    `forward` (jacfwd) follows forward mode where it differs: blocks take the output's dtype (a jvp's tangent
    has its output's dtype; a vjp's, jacrev's, its input's), an integer output has a zero Jacobian instead of
    an error, integer inputs raise as make_dual does, and argnums=None means every argument."""
    name, api = ("jacfwd", _JVP) if forward else ("jacrev", _VJP)
    if forward and argnums is None:
        argnums = tuple(range(len(args)))
    check_argnums(argnums)
    _error_if_complex(name, args, is_input=True)
    with Level(forward=forward, vmapped=forward) as level, ember.enable_grad():
        positions = wrap_argnums(argnums, len(args))
        if forward:
            check_primals_floating(tree_flatten(select(args, positions))[0])
        diff_args = level.differentiable(select(args, positions))
        saved = _randomness.snapshot() if randomness == "error" else None
        output = func(*replace(args, positions, diff_args), **kwargs)
        if saved is not None and _randomness.changed_since(saved):
            raise RuntimeError(_randomness.RANDOM_ERROR)
        output, aux = _split_aux(output, has_aux, api)
        if has_aux:
            check_tensors(aux)
        flat_out, out_spec = _checked_outputs(output, api)
        _error_if_complex(name, output, is_input=False)
        if not forward:
            _check_floating(flat_out)
        flat_inputs, in_spec = tree_flatten(diff_args)
        create_graph = level.reaches_outside(flat_out)
        jacobians = []
        for out in flat_out:
            rows = []
            if out.is_floating_point():
                basis = ember.eye(out.numel(), dtype=out.dtype, device=out.device)
                for index in range(out.numel()):
                    rows.append(_grad_of([out], flat_inputs, [basis[index].reshape(out.shape)], create_graph))
            blocks = []
            for position, inp in enumerate(flat_inputs):
                shape = tuple(out.shape) + tuple(inp.shape)
                dtype = out.dtype if forward else inp.dtype
                if rows:
                    blocks.append(ember.stack([row[position] for row in rows]).reshape(shape).to(dtype))
                else:
                    blocks.append(ember.zeros(shape, dtype=dtype, device=inp.device))
            jacobians.append(level.release(tree_unflatten(blocks, in_spec)))
        result = tree_unflatten(jacobians, out_spec)
        if has_aux:
            return result, level.release(aux)
        return result


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """torch.func.jacrev: the Jacobian of `func` w.r.t. the arguments at `argnums` by reverse mode, one
    vector-Jacobian product per output element.  `chunk_size` is checked as torch does but changes nothing:
    ember computes the rows one by one anyway (it has no batched vjp)."""
    if chunk_size is not None and not chunk_size > 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):  # (torch's takes no keyword arguments)
        return _jacobian(func, argnums, has_aux, False, args, {}, None)

    return wrapper


def jacfwd(func: Callable, argnums: int | tuple[int, ...] | None = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """torch.func.jacfwd: the Jacobian of `func` w.r.t. the arguments at `argnums`.

    ember has no forward-mode AD, so the Jacobian is computed by reverse mode, row by row, as jacrev does.
    The alternative, one double-vjp jvp per input element (see ember/func/_forward.py), would cost two reverse
    passes per column and need one more order of differentiability of every op, for the same values.  What
    stays forward-specific is torch's interface: error messages name jvp, and `randomness` is honoured
    ("error" raises when `func` draws random numbers, as torch's vmap over the basis would).
    """

    @functools.wraps(func)
    def wrapper(*args):  # (torch's takes no keyword arguments)
        _randomness.check_randomness_arg(randomness)
        return _jacobian(func, argnums, has_aux, True, args, {}, randomness)

    return wrapper


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """torch.func.hessian: jacfwd(jacrev(func, argnums), argnums), as torch defines it."""
    return jacfwd(jacrev(func, argnums), argnums)
