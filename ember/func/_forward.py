"""torch.func's forward-mode transforms, jvp and linearize, by the double-vjp trick.

These transforms do not use ember.autograd.forward_ad's dual tensors: a Jacobian-vector product is computed
with two reverse passes, which every op with a differentiable backward supports: for outputs y = f(x) and a
dummy cotangent u (zeros that require grad), g(u) = J^T u = vjp(u) is linear in u, and the vjp of g with
respect to u, applied to the tangent t, is
(J^T)^T t = J t.  This needs every op of f to have a differentiable backward (ember's backward formulas are
written with ember ops, so create_graph works through them); the values are exactly the jvp's.  A custom
autograd.Function inside these transforms runs its jvp staticmethod as torch's forward mode does: its backward
there is the transpose of the jvp (_autograd/function.py:_transposed_jvp).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import ember

from ._levels import Level, check_tensors, materialize
from ._pytree import tree_flatten, tree_unflatten
from ._transforms import _checked_outputs, _split_aux, check_primals_floating

__all__ = ["jvp", "linearize"]

_JVP = "jvp(f, primals, tangents)"


class _Transpose:
    """g = J^T u for the outputs of one call, kept so that J t can be taken for any number of tangents t."""

    def __init__(self, level: Level, flat_out: list, flat_inputs: list) -> None:
        self.level = level
        self.flat_out = flat_out
        self.dummies = [level.leaf(ember.zeros_like(out)) if out.is_floating_point() or out.is_complex() else None
                        for out in flat_out]
        live = [(out, u) for out, u in zip(flat_out, self.dummies) if u is not None and out.requires_grad]
        self.by_input = [None] * len(flat_inputs)  # g for each input, None where the outputs do not use it
        if live:
            grads = ember.autograd.grad([out for out, _ in live], flat_inputs, [u for _, u in live],
                                        retain_graph=True, create_graph=True, allow_unused=True)
            self.by_input = [g if g is not None and g.requires_grad else None for g in grads]

    def apply(self, flat_tangents: list) -> list:
        """J t for the flattened tangents (one per input): one tensor per output, None where J t is not defined
        (the output does not depend on the inputs)."""
        level = self.level
        level.refresh()
        pairs = [(g, t) for g, t in zip(self.by_input, flat_tangents) if g is not None]
        dummies = [u for u in self.dummies if u is not None]
        if not pairs or not dummies:
            return [None] * len(self.flat_out)
        create_graph = level.reaches_outside(self.flat_out + list(flat_tangents))
        with ember.enable_grad():
            products = ember.autograd.grad([g for g, _ in pairs], dummies, [t for _, t in pairs], retain_graph=True,
                                           create_graph=create_graph, allow_unused=True)
        products = iter(products)
        return [None if u is None else next(products) for u in self.dummies]


def _check_tensor_list(flat: list, argname: str) -> None:
    if len(flat) == 0:
        raise RuntimeError(f"{_JVP}: Expected {argname} to contain at least one Tensor.")
    for value in flat:
        if not isinstance(value, ember.Tensor):
            raise RuntimeError(f"{_JVP}: Expected {argname} to only contain Tensors, got {type(value)}")


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """torch.func.jvp: `(func(*primals), J @ tangents)` (plus aux with has_aux), by the double-vjp trick (see
    the module docstring).  `primals` is a tuple of arguments (pytrees of tensors) and `tangents` has its
    structure; outputs may be any pytree of tensors."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(
            f"{_JVP}: Expected primals and tangents to have the same python structure. For example, if primals "
            f"is a tuple of 3 tensors, tangents also must be. Got primals with structure {primals_spec} and "
            f"tangents with structure {tangents_spec}"
        )
    _check_tensor_list(flat_primals, "primals")
    _check_tensor_list(flat_tangents, "tangents")
    for primal, tangent in zip(flat_primals, flat_tangents):
        # (torch's make_dual's checks, in its order)
        check_primals_floating([primal])
        if not (tangent.is_floating_point() or tangent.is_complex()):
            raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
        if primal.shape != tangent.shape:
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, "
                f"this is not supported. Tensor is of size {list(primal.shape)} while the given forward gradient "
                f"is of size {list(tangent.shape)}."
            )
    with Level(forward=True) as level, ember.enable_grad():
        diff_primals = level.differentiable(primals)
        output = func(*diff_primals)
        output, aux = _split_aux(output, has_aux, _JVP)
        if has_aux:
            check_tensors(aux)
        flat_out, out_spec = _checked_outputs(output, _JVP)
        transpose = _Transpose(level, flat_out, tree_flatten(diff_primals)[0])
    products = transpose.apply(flat_tangents)  # outside enable_grad: it asks whether the caller records a graph
    if strict and any(p is None for p in products):
        raise RuntimeError(
            f"{_JVP[:-1]}, strict=True): The output of f is independent of the inputs. This is not allowed with "
            "strict=True."
        )
    result = level.release(tree_unflatten(flat_out, out_spec))
    tangents_out = level.release(tree_unflatten(materialize(products, flat_out), out_spec))
    if has_aux:
        return result, tangents_out, level.release(aux)
    return result, tangents_out


def linearize(func: Callable, *primals) -> tuple:
    """torch.func.linearize: `(func(*primals), jvp_fn)` where `jvp_fn(*tangents)` is the jvp at `primals`.

    The function runs once; the graph of J^T u (see the module docstring) is kept, so each jvp_fn call is
    one reverse pass (torch traces the jvp into a graph instead; the values are the same).
    """
    check_primals_floating(tree_flatten(primals)[0])
    with Level(forward=True) as level, ember.enable_grad():
        diff_primals = level.differentiable(primals)
        output = func(*diff_primals)
        flat_out, out_spec = _checked_outputs(output, _JVP)
        flat_inputs, primals_spec = tree_flatten(diff_primals)
        transpose = _Transpose(level, flat_out, flat_inputs)
    result = level.release(output)

    @functools.wraps(func)
    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(
                f"Expected the tangents {tangents_spec} to have the same argspec as the primals {primals_spec}"
            )
        for index, (tangent, primal) in enumerate(zip(flat_tangents, flat_inputs)):
            for what in ("shape", "device", "dtype"):
                if getattr(tangent, what) != getattr(primal, what):
                    raise RuntimeError(
                        f"tangent:{index} with {what} {getattr(tangent, what)} in flattened pytree doesn't match "
                        f"the {what} {getattr(primal, what)} of the corresponding primal."
                    )
        products = transpose.apply(flat_tangents)
        return level.release(tree_unflatten(materialize(products, flat_out), out_spec))

    return result, jvp_fn
