"""The autograd nodes of NOTE [ In-place ops and views ] (ember/_tensor.py).

A view's grad_fn regenerated from its base after an in-place write (`as_strided_view_node`), and the base's
CopySlices node after an in-place op on one of its views (`rebase_view`).  Both work on element positions:
for each element of a view, the flat index of the base element it aliases.
"""

from __future__ import annotations

import math

import numpy as np

from .._dispatch import OpDef, call, keep
from .._tensor import Tensor, _address
from .views import _extent


def view_positions(base: Tensor, view: Tensor) -> np.ndarray:
    """For each element of `view`, the flat (row-major) index of the element of `base` it aliases."""
    base_array, view_array = base._data, view._data
    itemsize = base_array.itemsize
    if view_array.itemsize != itemsize:
        # view_as_real / .real / .imag / view(dtype): one base element is several view elements (or the reverse),
        # which these position maps do not express; refuse rather than record a wrong gradient
        raise RuntimeError(
            f"ember: an in-place operation on a view that reinterprets its base's dtype ({base.dtype} viewed as "
            f"{view.dtype}: view_as_real, .real, .imag or view(dtype)) is not supported when autograd records it; "
            "write into a clone, or run it under torch.no_grad()")
    base_address = _address(base_array)
    low = base_address + sum((n - 1) * s for n, s in zip(base_array.shape, base_array.strides) if s < 0 and n)
    extent = _extent(base_array) if base_array.size else 1
    memory = np.full(max(extent, 1), -1, np.int64)
    base_strides = tuple(s // itemsize for s in base_array.strides)
    base_offset = (base_address - low) // itemsize
    mapping = np.lib.stride_tricks.as_strided(
        memory[base_offset:], base_array.shape, tuple(s * 8 for s in base_strides), writeable=True
    )
    mapping[...] = np.arange(base_array.size).reshape(base_array.shape)
    view_offset = (_address(view_array) - low) // itemsize
    view_strides = tuple(s // itemsize * 8 for s in view_array.strides)
    return np.lib.stride_tricks.as_strided(memory[view_offset:], view_array.shape, view_strides).copy()


def _gather_impl(xp, a, positions, shape):
    return a.reshape(-1)[positions]


def _scatter_add_impl(xp, g, positions, shape):
    out = xp.zeros(math.prod(shape), g.dtype)
    xp.add.at(out, positions.reshape(-1), g.reshape(-1))
    return out.reshape(shape)


def _put_impl(xp, a, values, positions):
    out = a.copy().reshape(-1)
    out[positions.reshape(-1)] = values.reshape(-1)
    return out.reshape(a.shape)


_GATHER_POSITIONS = OpDef("as_strided", _gather_impl, None, dtype_rule=keep, upcast_half=False,
                          meta=lambda args, p: p["positions"].shape, grad_name="AsStridedBackward0")
_SCATTER_POSITIONS = OpDef("as_strided_scatter", _scatter_add_impl, None, dtype_rule=keep, upcast_half=False,
                           meta=lambda args, p: p["shape"])
_PUT_POSITIONS = OpDef("copy_slices", _put_impl, None, dtype_rule=keep, upcast_half=False,
                       meta=lambda args, p: args[0].shape, grad_name="CopySlices")
_GATHER_POSITIONS.backward = lambda ctx, g: call(
    _SCATTER_POSITIONS, (g,), {"positions": ctx.params["positions"], "shape": ctx.params["shape"]}
)
_SCATTER_POSITIONS.backward = lambda ctx, g: call(
    _GATHER_POSITIONS, (g,), {"positions": ctx.params["positions"], "shape": ctx.params["shape"]}
)


def _put_backward(ctx, g):
    positions = ctx.params["positions"]
    zeros = g.new_zeros(positions.shape)
    grad_base = call(_PUT_POSITIONS, (g, zeros), {"positions": positions}) if ctx.needs_input_grad[0] else None
    grad_values = None
    if ctx.needs_input_grad[1]:
        grad_values = call(_GATHER_POSITIONS, (g,), {"positions": positions, "shape": tuple(g.shape)})
    return grad_base, grad_values


_PUT_POSITIONS.backward = _put_backward


def _manual_node(op, params, inputs, output):
    """Record a node for an op whose forward value already exists (the in-place machinery)."""
    needs = tuple(t is not None and t._requires_grad for t in inputs)
    meta = tuple((t._data.shape, t._dtype) if need else None for t, need in zip(inputs, needs))
    node = op.node_class(op, params, tuple(inputs), (output,), meta, needs)
    node.next_functions = tuple(t._edge() if need else (None, 0) for t, need in zip(inputs, needs))
    return node


def as_strided_view_node(base: Tensor, view: Tensor):
    """The grad_fn of `view` as a strided view of its base's current value."""
    positions = view_positions(base, view)
    return _manual_node(_GATHER_POSITIONS, {"positions": positions, "shape": tuple(base.shape)}, (base,), view)


def rebase_view(view: Tensor, result: Tensor) -> None:
    """After `view` was overwritten in place by `result`: the base's grad_fn becomes CopySlices."""
    base = view._base
    positions = view_positions(base, view)
    old_base = base.detach() if not base._requires_grad else base
    node = _manual_node(_PUT_POSITIONS, {"positions": positions}, (old_base, result), base)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    view._view_version = -1  # regenerate the view's grad_fn from the new base on next use
    view._grad_fn = None
    view._requires_grad = True
