"""Full backward hooks for modules: identity nodes around a module's inputs and outputs.

As torch's BackwardHook: one identity node over all tensor outputs captures
grad_output (and runs backward pre-hooks); one over all tensor inputs sees
grad_input, calls hook(module, grad_input, grad_output) and may replace it.
"""

from __future__ import annotations

import warnings

from .._autograd.grad_mode import state
from .._dispatch import SAVE_RESULT, OpDef, call
from .._tensor import Tensor


def _identity_impl(xp, *arrays, state):
    # dispatch wraps a single output as one tensor, several as a tuple
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _rule(args, params):
    if len(args) == 1:
        return None, args[0]._dtype
    return None, tuple(a._dtype for a in args)


def _make_op(name, backward):
    # SAVE_RESULT: an output that gets no gradient (a tuple output the loss does not use) is given zeros
    op = OpDef(name, _identity_impl, backward, dtype_rule=_rule, upcast_half=False, saves=SAVE_RESULT,
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
    """Per-call state shared by the input and output identity nodes of one module call.

    As torch's BackwardHook, the hooks see one entry per positional argument (per output of a tuple result):
    None for non-tensors, zeros for a tensor input that does not require grad."""

    def __init__(self, module, hooks: dict, pre_hooks: dict) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.inputs = ()
        self.input_positions = None  # positions of the wrapped (grad-requiring) inputs; None: no input wrapped
        self.n_outputs = 0
        self.output_positions = ()

    def _wrap(self, values, cache, backward):
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]
        if not positions or not state.enabled:
            return values, None
        tensors = tuple(values[i] for i in positions)
        op = _op_for(cache, len(tensors), backward)
        outputs = call(op, tensors, {"state": self})
        if len(tensors) == 1:
            outputs = (outputs,)
        values = list(values)
        for i, out in zip(positions, outputs):
            values[i] = out
        return values, positions

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        self.inputs = args
        values, self.input_positions = self._wrap(list(args), _INPUT_OPS, _input_backward)
        return tuple(values)

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        outputs = list(result) if is_tuple else [result]
        self.n_outputs = len(outputs)
        values, positions = self._wrap(outputs, _OUTPUT_OPS, _output_backward)
        self.output_positions = positions or ()
        return tuple(values) if is_tuple else values[0]

    def on_grad_output(self, grads: tuple) -> tuple:
        packed = [None] * self.n_outputs
        for i, grad in zip(self.output_positions, grads):
            packed[i] = grad
        grad_outputs = tuple(packed)
        for hook in self.pre_hooks.values():
            replaced = hook(self.module, grad_outputs)
            if replaced is None:
                continue
            replaced = _as_tuple(replaced)
            if len(replaced) != len(grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(replaced)}, but expected {len(grad_outputs)}")
            grad_outputs = replaced
        self.grad_outputs = grad_outputs
        if self.input_positions is None and self.hooks:
            warnings.warn("Full backward hook is firing when gradients are computed "
                          "with respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.", stacklevel=2)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.hooks.values():
                res = hook(self.module, grad_inputs, grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(el is None for el in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all gradients.")
        return tuple(grad_outputs[i] for i in self.output_positions)

    def on_grad_input(self, grads: tuple) -> tuple:
        from .. import zeros_like

        packed = [None] * self.n_inputs
        for i, arg in enumerate(self.inputs):
            if isinstance(arg, Tensor):
                packed[i] = zeros_like(arg)  # torch: a tensor input that does not require grad gets zeros
        for i, grad in zip(self.input_positions, grads):
            packed[i] = grad
        res = tuple(packed)
        for hook in self.hooks.values():
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_positions)
