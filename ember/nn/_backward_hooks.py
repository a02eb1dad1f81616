"""Full backward hooks for modules: identity nodes around a module's inputs and outputs.

As torch's BackwardHook: one identity node over all tensor outputs captures
grad_output (and runs backward pre-hooks); one over all tensor inputs sees
grad_input, calls hook(module, grad_input, grad_output) and may replace it.
"""

from __future__ import annotations

from .._autograd.grad_mode import state
from .._dispatch import OpDef, call
from .._tensor import Tensor


def _identity_impl(xp, *arrays, state):
    # dispatch wraps a single output as one tensor, several as a tuple
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _rule(args, params):
    if len(args) == 1:
        return None, args[0]._dtype
    return None, tuple(a._dtype for a in args)


def _make_op(name, backward):
    op = OpDef(name, _identity_impl, backward, dtype_rule=_rule, upcast_half=False,
               grad_name="BackwardHookFunctionBackward")
    return op


def _as_tuple(grads) -> tuple:
    return tuple(grads) if isinstance(grads, (tuple, list)) else (grads,)


def _output_backward(ctx, grads):
    return ctx.params["state"].on_grad_output(_as_tuple(grads))


def _input_backward(ctx, grads):
    return ctx.params["state"].on_grad_input(_as_tuple(grads))


_OUTPUT_OPS: dict = {}
_INPUT_OPS: dict = {}


def _op_for(cache, count, backward):
    op = cache.get(count)
    if op is None:
        op = _make_op("backward_hook", backward)
        op.outputs = count
        cache[count] = op
    return op


class BackwardHookState:
    """Per-call state shared by the input and output identity nodes of one module call."""

    def __init__(self, module, hooks: dict, pre_hooks: dict) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.input_count = 0

    def _wrap(self, values, cache, backward):
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not positions or not state.enabled:
            return values, 0
        tensors = tuple(values[i] for i in positions)
        op = _op_for(cache, len(tensors), backward)
        outputs = call(op, tensors, {"state": self})
        if len(tensors) == 1:
            outputs = (outputs,)
        values = list(values)
        for i, out in zip(positions, outputs):
            values[i] = out
        return values, len(tensors)

    def setup_input_hook(self, args: tuple) -> tuple:
        values, self.input_count = self._wrap(list(args), _INPUT_OPS, _input_backward)
        return tuple(values)

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        values, count = self._wrap(list(result) if is_tuple else [result], _OUTPUT_OPS, _output_backward)
        return tuple(values) if is_tuple else values[0]

    def on_grad_output(self, grads: tuple) -> tuple:
        for hook in self.pre_hooks.values():
            replaced = hook(self.module, grads)
            if replaced is not None:
                grads = tuple(replaced) if isinstance(replaced, (tuple, list)) else (replaced,)
        self.grad_outputs = grads
        if self.input_count == 0:
            for hook in self.hooks.values():
                hook(self.module, (None,), grads)
        return grads

    def on_grad_input(self, grads: tuple) -> tuple:
        for hook in self.hooks.values():
            replaced = hook(self.module, grads, self.grad_outputs)
            if replaced is not None:
                grads = tuple(replaced) if isinstance(replaced, (tuple, list)) else (replaced,)
        return grads
