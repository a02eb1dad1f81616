"""Forward-mode AD with dual tensors: the machinery behind torch.autograd.forward_ad.

NOTE [ Forward AD ]
Inside a dual level a tensor may carry a tangent (`Tensor._fw_tangent`, a class default of None, set in the
instance dict).  While a level is active `_dispatch.forward_ad` is this module, and every op call ends with
`propagate(op, args, params, results)`, which gives the results their tangents computed from the inputs'
tangents; outside a level the dispatcher pays one `is not None` test per call.

One mechanism serves every op, with no per-op formula: the double-vjp trick applied to the single op call.
With y = op(x...), the call is recorded once more on fresh leaves for the inputs that carry tangents; for a
dummy cotangent u (ones that require grad), v = vjp(u) = grad(y, xs, u, create_graph=True) is linear in u,
and grad(v, u, t) = J t is the output tangent.  The op's backward is written in ember ops, so this works
wherever double backward does; an op whose backward is not differentiable raises torch's "does not support
forward AD" error.  While tangents are computed `_dispatch.forward_ad` is cleared, so those op calls carry
none.  View ops are linear in their first operand: the tangent of a view is the same view of the tangent, so
it shares the tangent's memory as torch's does.  An in-place op (`Tensor._inplace_from`) writes the result's
tangent into the target's tangent, so views of the target, and the base of a view, see the change; a view
whose base got a tangent after the view was made reads it through `tangent_of`, as a strided view of the
base's tangent.  Every tangent has its primal's layout (strides), so those strided views are valid.

As torch's: one level at a time (nesting raises), no_grad leaves forward AD on, inference_mode turns it off,
custom Functions run their `jvp` staticmethod, out= functions raise.  Tangents are differentiable by reverse
mode: with grad mode on, an output tangent keeps a graph to the inputs and tangents that require grad.
"""

from __future__ import annotations

import sys
import weakref
from typing import NamedTuple

from .. import _dispatch
from .grad_mode import state

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

_current_level = -1
# weak references to the tensors given a tangent at the current level: exit_dual_level clears them all
_dual_tensors: list = []
_pruned_size = 64  # _dual_tensors is pruned of dead references when it grows past this


# ---------------------------------------------------------------- levels


def enter_dual_level() -> int:
    """Enter a new forward grad level (only one may be active, as in torch) and return it."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _dispatch.forward_ad = _this_module
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the current forward grad level: every tangent made in it is deleted."""
    global _current_level, _pruned_size
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _dispatch.forward_ad = None
    for reference in _dual_tensors:
        tensor = reference()
        if tensor is not None:
            tensor.__dict__.pop("_fw_tangent", None)
    _dual_tensors.clear()
    _pruned_size = 64
    _current_level = level - 1


class _Suspended:
    """Within the block, op calls carry no tangents (the tangent computations' own calls, custom forwards)."""

    def __enter__(self) -> None:
        self.saved = _dispatch.forward_ad
        _dispatch.forward_ad = None

    def __exit__(self, *exc) -> None:
        _dispatch.forward_ad = self.saved


# ---------------------------------------------------------------- public API


class UnpackedDualTensor(NamedTuple):
    """Namedtuple returned by :func:`unpack_dual` containing the primal and tangent components of the dual tensor."""

    primal: object
    tangent: object


def make_dual(tensor, tangent, *, level: int | None = None):
    """A new tensor aliased to `tensor` (a view of it, differentiable by reverse mode) carrying `tangent`.

    The tangent is kept as-is when it has `tensor`'s layout, else copied into that layout.

    Example::

        >>> with dual_level():
        ...     inp = make_dual(x, v)
        ...     out = f(inp)
        ...     y, jvp = unpack_dual(out)
    """
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first."
        )
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    if level != _current_level:
        raise RuntimeError("Invalid level given to _make_dual")
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tangent.device != tensor.device:  # (torch 2.13's CPU build does not check; a later op would fail)
        raise RuntimeError(
            f"Expected tangent to be on the same device as primal, but got tangent on {tangent.device} and primal "
            f"on {tensor.device}."
        )
    with _Suspended():
        dual = tensor.view_as(tensor)
        _attach(dual, _conformed(tangent, dual))
    return dual


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """`(primal, tangent)`: a view of `tensor` carrying no tangent, and `tensor`'s tangent as-is (None if it
    has none, or outside a dual level)."""
    if level is None:
        level = _current_level
    if level < 0 or _dispatch.forward_ad is None:  # (suspended: inside a custom Function's forward, as torch)
        return UnpackedDualTensor(tensor, None)
    if level != _current_level:
        raise RuntimeError("Invalid level given to _unpack_dual")
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with _Suspended():
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager (and decorator) for forward AD: all forward AD computation happens inside it, and its
    tangents are deleted on exit.  Nesting raises, as in torch.

    Example::

        >>> with dual_level():
        ...     inp = make_dual(x, x_t)
        ...     out = your_fn(inp)
        ...     _, grad = unpack_dual(out)
        >>> unpack_dual(out).tangent is None
        True
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)

        return decorated


# ---------------------------------------------------------------- tangents of tensors


def tangent_of(tensor):
    """The tangent of `tensor` at the current level, or None; a view reads its base's (NOTE [ Forward AD ])."""
    tangent = tensor._fw_tangent
    if tangent is None and tensor._base is not None:
        base_tangent = tensor._base._fw_tangent
        if base_tangent is not None:
            tangent = _strided_view(base_tangent, tensor._base, tensor)
            _attach(tensor, tangent)
    return tangent


def _attach(tensor, tangent) -> None:
    global _pruned_size
    tensor.__dict__["_fw_tangent"] = tangent
    _dual_tensors.append(weakref.ref(tensor))
    if len(_dual_tensors) > _pruned_size:
        _dual_tensors[:] = [reference for reference in _dual_tensors if reference() is not None]
        _pruned_size = max(64, 2 * len(_dual_tensors))


def _same_layout(a, b) -> bool:
    """Whether two tensors of one shape have the same strides (in elements; size-1 dimensions ignored)."""
    return all(size == 1 or s == t for size, s, t in zip(a.shape, a.stride(), b.stride()))


def _conformed(tangent, primal):
    """`tangent` laid out as `primal` (copied when its strides differ), so views of the two line up."""
    import ember

    if _same_layout(tangent, primal) or not _is_dense(primal):
        return tangent
    out = ember.empty_strided(primal.shape, primal.stride(), dtype=tangent.dtype, device=tangent.device)
    return out.copy_(tangent)


def _is_dense(tensor) -> bool:
    from .._ops._shapes import is_non_overlapping_and_dense

    return not hasattr(tensor._data, "flags") or is_non_overlapping_and_dense(tensor._data)


def _strided_view(base_tangent, base, view):
    """The view of `base_tangent` that `view` is of `base` (their layouts agree: NOTE [ Forward AD ])."""
    if not _same_layout(base_tangent, base):
        raise NotImplementedError("forward AD: a view of a tensor whose tangent has another layout")
    offset = view.storage_offset() - base.storage_offset()
    with _Suspended():
        return base_tangent.as_strided(view.shape, view.stride(), base_tangent.storage_offset() + offset)


# ---------------------------------------------------------------- propagation through op calls


def propagate(op, args: tuple, params: dict, results) -> None:
    """Give the results of one op call their tangents, from its inputs' (called by _dispatch.call)."""
    Tensor = _dispatch.Tensor
    tangents = None
    for index, value in enumerate(args):
        if isinstance(value, Tensor):
            tangent = tangent_of(value)
            if tangent is not None:
                if tangents is None:
                    tangents = [None] * len(args)
                tangents[index] = tangent
    if tangents is None or state.inference or op.backward is None:
        return
    with _Suspended():
        if op.view:
            _view_tangents(op, args, params, results, tangents)
        else:
            _tangents_by_double_vjp(op, args, params, results, tangents)


def _view_tangents(op, args, params, results, tangents) -> None:
    """A view op is linear in its first operand (the others only give shapes or indices): the tangent of the
    view is the same view of that operand's tangent."""
    if tangents[0] is None:
        return
    view = _dispatch.call(op, (tangents[0], *args[1:]), params)
    if op.outputs == 1:
        _attach(results, view)
    else:
        for result, tangent in zip(results, view):
            if result._dtype.category >= 2:
                _attach(result, tangent)


def _tangents_by_double_vjp(op, args, params, results, tangents) -> None:
    """J t for one op call by the double-vjp trick (NOTE [ Forward AD ])."""
    import ember

    Tensor = _dispatch.Tensor
    outer_grad = state.enabled
    keep_graph = outer_grad and any(
        (isinstance(a, Tensor) and a._requires_grad) or (t is not None and t._requires_grad)
        for a, t in zip(args, tangents)
    )
    inputs, leaves, leaf_tangents = [], [], []
    state.enabled = True
    try:
        for value, tangent in zip(args, tangents):
            if tangent is not None:
                # a view keeps the graph to a primal that requires grad (reverse-over-forward), a leaf otherwise
                leaf = value.view_as(value) if keep_graph and value._requires_grad else value.detach().requires_grad_()
                leaves.append(leaf)
                leaf_tangents.append(tangent)
                value = leaf
            elif not keep_graph and isinstance(value, Tensor) and value._requires_grad:
                value = value.detach()
            inputs.append(value)
        outputs = results if op.outputs > 1 else (results,)
        # aliases of the results, so that recording the call again leaves the results' own grad_fn alone
        aliases = tuple(Tensor._make(r._data, r._dtype, r._device, r._storage) for r in outputs)
        _dispatch._record(op, tuple(inputs), params, aliases if op.outputs > 1 else aliases[0])
        live = [(nr, alias) for nr, alias in enumerate(aliases) if alias._grad_fn is not None]
        if not live:
            return
        # ones, not zeros: a J^T u without a graph to u is then zero only where J is (see _products)
        dummies = [ember.ones_like(alias).requires_grad_() for _, alias in live]
        products = _products(op, [alias for _, alias in live], leaves, leaf_tangents, dummies, keep_graph)
    finally:
        state.enabled = outer_grad
    for (nr, _), product in zip(live, products):
        result = outputs[nr]
        if product is None:  # the output does not depend on the tangents: a zero tangent, as torch's
            product = ember.zeros_like(result)
        _attach(result, _conformed(product, result))


def _products(op, outputs, leaves, leaf_tangents, dummies, keep_graph) -> list:
    """grad(grad(outputs, leaves, dummies), dummies, tangents): one J t per output (None where zero)."""
    import ember

    try:
        vjps = ember.autograd.grad(outputs, leaves, dummies, create_graph=True, allow_unused=True)
        pairs = []
        for vjp, tangent in zip(vjps, leaf_tangents):
            if vjp is None:
                continue
            if not vjp._requires_grad:  # a constant J^T u: zero, or a backward outside ember's ops
                if bool(vjp.ne(0).any()):
                    raise _unsupported(op)
                continue
            if tangent._dtype is not vjp._dtype:  # (torch allows a float64 tangent on a float32 primal)
                tangent = tangent.to(vjp._dtype)
            pairs.append((vjp, tangent))
        if not pairs:
            return [None] * len(outputs)
        return ember.autograd.grad([v for v, _ in pairs], dummies, [t for _, t in pairs], retain_graph=keep_graph,
                                   create_graph=keep_graph, allow_unused=True)
    except (RuntimeError, NotImplementedError) as error:
        message = str(error)
        if "derivative for" in message or "differentiate twice" in message or "not implemented" in message:
            raise _unsupported(op) from error
        raise


def _unsupported(op) -> NotImplementedError:
    return NotImplementedError(
        f"Trying to use forward AD with {op.name} that does not support it because it has not been implemented "
        "yet.\nPlease file an issue to PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-"
        "request.yml so that we can prioritize its implementation or submit a PR adding the implementation to "
        "derivatives.yaml"
    )


# ---------------------------------------------------------------- in-place writes, out=, custom Functions


def inplace(target, result) -> None:
    """`target` took `result`'s values in place (Tensor._inplace_from): it takes result's tangent, written
    into its own tangent's memory so that its views and its base see it (NOTE [ Forward AD ])."""
    if state.inference:
        return
    new = tangent_of(result) if result is not target else None
    old = tangent_of(target)
    if new is None and old is None:
        return
    with _Suspended():
        if old is None:
            base = target._base
            if base is None:
                _attach(target, _conformed(new.clone(), target))
                return
            import ember

            # the base gets a zero tangent, and this view a view of it (torch's)
            _attach(base, _conformed(ember.zeros_like(base, dtype=new.dtype), base))
            old = tangent_of(target)
        if new is None:  # written from values that carry no tangent (copy_, fill_ from a constant)
            old.zero_()
        else:
            old.copy_(new)


def reshaped_in_place(target, result) -> None:
    """An in-place view op (t_, squeeze_) gave `target` the shape of `result`: its tangent is result's."""
    _attach(target, result._fw_tangent)


def check_out(result) -> None:
    """out= functions do not support forward AD (torch's error) when the result carries a tangent."""
    if result._fw_tangent is not None:
        raise NotImplementedError(
            "Trying to use forward AD with an out= function that does not support it because it is an out= function"
        )


def run_jvp(cls, ctx, tangents: list, expected: int) -> tuple:
    """A custom Function's `jvp(ctx, *tangents)` as a tuple of `expected` products; during it
    ctx.saved_tensors gives the save_for_forward tensors (torch's rule)."""
    saved, released = ctx._saved_values, ctx._released
    forward_saved = getattr(ctx, "saved_for_forward", None)
    if forward_saved is not None:
        ctx._saved_values = [(t, 0 if t is None else t._version, False) for t in forward_saved]
        ctx._released = False
    try:
        products = cls.jvp(ctx, *tangents)
    finally:
        ctx._saved_values, ctx._released = saved, released
    if not isinstance(products, tuple):
        products = tuple(products) if isinstance(products, list) else (products,)
    if len(products) != expected:
        raise RuntimeError(f"Function's jvp returned an invalid number of forward gradients (expected {expected} "
                           f"but got {len(products)})")
    return products


def function_jvp(cls, ctx, args: tuple, output) -> None:
    """A custom Function's outputs get tangents from its `jvp(ctx, *tangents)` staticmethod (torch's rule:
    None for a non-tensor argument, zeros for a tensor without a tangent)."""
    import ember

    Tensor = _dispatch.Tensor
    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents) or state.inference:
        return
    tangents = [ember.zeros_like(a) if t is None and isinstance(a, Tensor) else t for a, t in zip(args, tangents)]
    outputs = output if isinstance(output, tuple) else (output,)
    with _Suspended():
        products = run_jvp(cls, ctx, tangents, len(outputs))
    for value, product in zip(outputs, products):
        if isinstance(value, Tensor) and product is not None and value._dtype.category >= 2:
            _attach(value, _conformed(product, value))


_this_module = sys.modules[__name__]
