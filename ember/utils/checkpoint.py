"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory.

A checkpointed `function` keeps none of its intermediate tensors for backward.
NOTE [ Non-reentrant checkpoint ]: the forward runs under a saved_tensors_hooks
pair whose pack hook stores a small handle instead of each saved tensor.  The
first unpack during backward re-runs `function` on the saved inputs (grad
enabled, RNG state and autocast state as in the forward, so dropout draws the
same masks) under a second hook pair that collects the tensors it saves, in
order; each handle then returns its recomputed tensor, which is dropped as soon
as backward has read it.  The recomputed graph itself is thrown away: the
gradients flow through the original graph, so they equal the unchecked run's.

use_reentrant=True is the older scheme: an autograd.Function that runs the
forward under no_grad and, in its backward, re-runs it with grad on and calls
backward on that sub-graph.
"""

from __future__ import annotations

import contextlib
import warnings

import ember

from .._autograd.function import Function
from .._autograd.graph import saved_tensors_hooks
from .._tensor import Tensor

__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "CheckpointError",
    "CheckpointFunction",
    "detach_variable",
    "check_backward_validity",
    "noop_context_fn",
    "set_checkpoint_early_stop",
    "set_checkpoint_debug_enabled",
]


class CheckpointError(RuntimeError):
    """The recomputation did not save the same tensors as the forward did."""


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Accepted for torch compatibility; ember's recomputation always runs the whole function."""
    yield


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Accepted for torch compatibility; ember records no extra debug information."""
    yield


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies of the tensors in `inputs`, keeping their requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=3)


def _autocast_state():
    """The CPU autocast settings to re-enter during recomputation (None when ember.amp is not in use)."""
    from ..amp import autocast_mode

    return autocast_mode._snapshot()


def _autocast_context(snapshot):
    from ..amp import autocast_mode

    return autocast_mode._restore(snapshot)


@contextlib.contextmanager
def _rng_restored(enabled: bool, state):
    """Run with the CPU RNG set to `state`, then put the generator back where it was (torch.random.fork_rng)."""
    if not enabled:
        yield
        return
    current = ember.get_rng_state()
    ember.set_rng_state(state)
    try:
        yield
    finally:
        ember.set_rng_state(current)


# ---------------------------------------------------------------- reentrant


class CheckpointFunction(Function):
    """use_reentrant=True: forward under no_grad, backward re-runs the function and backpropagates through it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        ctx.autocast_state = _autocast_state()
        if preserve_rng_state:
            ctx.fwd_cpu_state = ember.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with ember.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        from .._autograd import engine

        if not engine.checkpoint_valid:
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
                "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
                ".backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, index in enumerate(ctx.tensor_indices):
            inputs[index] = ctx.saved_tensors[i]
        with _rng_restored(ctx.preserve_rng_state, getattr(ctx, "fwd_cpu_state", None)):
            detached_inputs = detach_variable(tuple(inputs))
            with ember.enable_grad(), _autocast_context(ctx.autocast_state):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        ember.autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# ---------------------------------------------------------------- non-reentrant


_DEBUG_TIP = (
    ".\n\nTip: To see a more detailed error message, either pass `debug=True` to\n"
    "`torch.utils.checkpoint.checkpoint(...)` or wrap the code block\n"
    "with `with torch.utils.checkpoint.set_checkpoint_debug_enabled(True):` to\n"
    "enable checkpoint‑debug mode globally.\n"
)


class _StopRecomputation(Exception):
    """Raised by the recomputation's pack hook once every tensor the forward saved is recomputed."""


def _metadata(tensor) -> dict:
    return {"shape": tensor.shape, "dtype": tensor.dtype, "device": tensor.device}


class _Frame:
    """One checkpointed call: how to recompute it, and the tensors the recomputation saved (by pack order)."""

    def __init__(self, recompute, check: bool) -> None:
        self.recompute = recompute
        self.check = check
        self.metadata: list = []  # of the tensors packed in the forward
        self.recomputed: dict = {}

    def pack(self, tensor):
        self.metadata.append(_metadata(tensor))
        return len(self.metadata) - 1

    def unpack(self, index):
        if index not in self.recomputed:
            self._run_recompute()
        return self.recomputed.pop(index)

    def _run_recompute(self) -> None:
        """Re-run the function until it has saved as many tensors as the forward (torch's early stop)."""
        collected = []
        count = len(self.metadata)

        def pack(tensor):
            collected.append(tensor.detach())
            if len(collected) == count:
                raise _StopRecomputation
            return len(collected) - 1

        def unpack(index):
            raise CheckpointError(
                "torch.utils.checkpoint: unpack is being triggered for a tensor that was already "
                "unpacked once or whose recomputation graph was freed"
            )

        try:
            with saved_tensors_hooks(pack, unpack):
                self.recompute()
        except _StopRecomputation:
            pass
        if self.check and len(collected) != count:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
                f"recomputation.\nNumber of tensors saved during forward: {count}\n"
                f"Number of tensors saved during recomputation: {len(collected)}" + _DEBUG_TIP
            )
        mismatches = [
            f"tensor at position {i}:\nsaved metadata: {saved}\nrecomputed metadata: {_metadata(tensor)}\n"
            for i, (saved, tensor) in enumerate(zip(self.metadata, collected)) if saved != _metadata(tensor)
        ]
        if self.check and mismatches:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than "
                "during the forward pass.\n" + "".join(mismatches) + _DEBUG_TIP
            )
        self.recomputed = dict(enumerate(collected))


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, args, kwargs, check=True):
    forward_context, recompute_context = context_fn()
    if not ember.is_grad_enabled():
        with forward_context:
            return function(*args, **kwargs)
    fwd_cpu_state = ember.get_rng_state() if preserve_rng_state else None
    autocast_state = _autocast_state()
    saved_args = tuple(args)
    saved_kwargs = dict(kwargs)

    def recompute() -> None:
        inputs = detach_variable(saved_args)
        with (
            _rng_restored(preserve_rng_state, fwd_cpu_state),
            ember.enable_grad(),
            _autocast_context(autocast_state),
            recompute_context,
        ):
            function(*inputs, **saved_kwargs)

    frame = _Frame(recompute, check)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs,
):
    """Run `function(*args, **kwargs)` without keeping its intermediates; backward recomputes them.

    Args:
        function: what to run.
        use_reentrant: False (recommended) for the saved-tensor-hook scheme, True for the autograd.Function one.
            As torch 2.13, omitting it warns and picks True.
        preserve_rng_state (bool, keyword): replay the forward's RNG state during recomputation. Default: True.
        context_fn: returns (forward context, recompute context); non-reentrant only.

    Example::

        >>> out = checkpoint(block, x, use_reentrant=False)
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs, determinism_check == "default")


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):
    """Split `functions` (a list or nn.Sequential) into `segments` chunks; checkpoint all but the last."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    from ..nn.modules.container import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end, functions), input, use_reentrant=use_reentrant, preserve_rng_state=preserve
        )
    return run_function(end + 1, len(functions) - 1, functions)(input)
