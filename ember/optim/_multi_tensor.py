"""TensorList: one tensor op applied across a list of tensors, so an optimizer step reads as array code.

NOTE [ One optimizer implementation ]
torch keeps up to three implementations of each algorithm (a per-tensor loop,
`_foreach_*` kernels over lists, and fused kernels) and they have disagreed.
ember writes each algorithm once, over a whole param group: the group's
params, grads and state buffers are gathered into TensorLists and every line
of the step is one vectorised in-place op across the list
(`exp_avgs.lerp_(grads, 1 - beta1)`).  The list form is torch's foreach
decomposition, so `foreach`, `fused` and `capturable` are accepted as modes
and all run this same code; a compiler can fuse the sequence of list ops into
one kernel per group.

Every in-place list op writes straight into its tensors (NOTE [ In-place ops
without a copy ] in ember/_dispatch.py: the step runs under no_grad).  Two
kinds of chain run tensor by tensor instead (`each`, same ops, same values):
one that needs a full-size temporary per tensor (Adam's denominator), since a
list-wide op would hold a temporary for every tensor at once -- memory the
allocator faults in afresh each step -- where one tensor's temporary is reused,
cache-warm, by the next; and a short chain over one buffer (SGD's momentum,
then the update from it), which then reads the buffer from cache, not memory.

Arguments are matched element by element when they are a list, tuple or
TensorList (other tensors, or per-tensor scalars such as bias corrections
computed from each parameter's own step count), and broadcast otherwise
(one scalar or one tensor for the whole list).
"""

from __future__ import annotations

from collections.abc import Iterable

_PER_TENSOR = (list, tuple)


class TensorList:
    """A list of tensors on which tensor methods run element-wise: `TensorList.<op>(...)` is `[t.<op>(...)]`."""

    __slots__ = ("tensors",)

    def __init__(self, tensors: Iterable = ()) -> None:
        self.tensors = list(tensors)

    def __len__(self) -> int:
        return len(self.tensors)

    def __iter__(self):
        return iter(self.tensors)

    def __getitem__(self, index):
        return self.tensors[index]

    def __bool__(self) -> bool:
        return bool(self.tensors)

    def __repr__(self) -> str:
        return f"TensorList({self.tensors!r})"

    def append(self, tensor) -> None:
        self.tensors.append(tensor)

    def select(self, indices) -> TensorList:
        """The sub-list at `indices` (for steps that branch per tensor on a scalar, as RAdam's rectification)."""
        return TensorList(self.tensors[i] for i in indices)

    def items(self) -> list:
        """Each 0-d tensor's value as a Python number (the step counters)."""
        return [t.item() for t in self.tensors]

    def apply(self, name: str, *args, **kwargs) -> TensorList:
        """Call Tensor.<name> on every tensor, matching list-valued arguments element by element."""
        per_tensor_args = [isinstance(a, _PER_TENSOR) or type(a) is TensorList for a in args]
        per_tensor_kwargs = {k for k, v in kwargs.items() if isinstance(v, _PER_TENSOR) or type(v) is TensorList}
        if not any(per_tensor_args) and not per_tensor_kwargs:
            return TensorList([getattr(t, name)(*args, **kwargs) for t in self.tensors])
        results = []
        for index, tensor in enumerate(self.tensors):
            call_args = [a[index] if flag else a for a, flag in zip(args, per_tensor_args)]
            call_kwargs = {k: (v[index] if k in per_tensor_kwargs else v) for k, v in kwargs.items()}
            results.append(getattr(tensor, name)(*call_args, **call_kwargs))
        return TensorList(results)


def _method(name: str):
    def method(self, *args, **kwargs):
        return self.apply(name, *args, **kwargs)

    method.__name__ = name
    method.__qualname__ = f"TensorList.{name}"
    method.__doc__ = f"Tensor.{name} on every tensor of the list."
    return method


# The tensor methods the optimizers use; in-place ones return the same tensors (so calls chain).
for _name in (
    "abs", "add", "add_", "addcdiv", "addcdiv_", "addcmul", "addcmul_", "clamp_", "clone", "copy_", "detach",
    "div", "div_", "eq", "fill_", "gt", "lerp_", "lt", "maximum", "maximum_", "mul", "mul_", "neg", "sign", "sqrt",
    "sqrt_", "sub", "sub_", "zero_",
):
    setattr(TensorList, _name, _method(_name))
del _name


def maximum_(target: TensorList, other: TensorList) -> TensorList:
    """target = max(target, other) in place (torch.maximum(a, b, out=a))."""
    return target.maximum_(other)


def each(fn, *lists) -> None:
    """fn(*values) at each position of the lists (tensors, per-tensor scalars): a chain of ops run tensor by
    tensor, so its temporaries and buffers stay cache-sized; see the module docstring."""
    for values in zip(*lists):
        fn(*values)


def where_(condition: TensorList, value, target: TensorList):
    """A TensorList of where(condition, value, target), element by element."""
    from .. import where

    return TensorList(where(c, value, t) for c, t in zip(condition, target))


def fused_step(kernel, lists, per_tensor_args) -> bool:
    """Run a fused in-place optimizer loop (ember/_compile/loops.py: one pass per parameter where the unfused
    ops make several, with the same bits) on every position of `lists`, bumping each tensor's version as the
    in-place ops would; False, with nothing written, unless it applies to all of them (NumPy float arrays of one
    dtype and shape, contiguous; a C compiler): the caller then runs the unfused ops."""
    from .._compile import loops

    if not lists[0] or not all(loops._step_arrays([t._data for t in tensors]) is not None for tensors in zip(*lists)):
        return False
    for tensors, args in zip(zip(*lists), per_tensor_args):
        if not kernel(*(t._data for t in tensors), *args):
            return False  # no compiler: nothing was written (the check is the same for every tensor)
        for t in tensors:
            t._bump_version()
    return True
