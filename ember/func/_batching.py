"""Which tensors are "batched" while vmap runs, so that vmap can raise torch's errors.

vmap runs its function once per sample (_vmap.py), so nothing in the data says which values depend on the
mapped inputs.  torch knows: its BatchedTensor wrapper.  This module keeps the same fact as a mark: the set of
vmap levels a tensor is batched at, in its instance dict (`_vmap_levels`).  The per-sample slices of the
mapped inputs get their level; every op result gets the union of its operands' levels (what torch's batching
rules do).  With the marks, vmap raises where torch raises:

* a batched value written in place into a tensor that is not batched at that level (`y.add_(x)`,
  `z[0] = x`, `z.copy_(x)`), or an out= result that is batched;
* `.item()`, `bool()`, `float()`, `.tolist()`, `.numpy()` of a batched tensor;
* an op whose result shape depends on values (nonzero, unique) on a batched tensor, and indexing with a
  batched boolean mask (an indexing key's tensors are reported by _ops/_index_keys.py before they become NumPy
  indices: `index_tensor`); a batched index written into a tensor that is not batched;
* allclose / equal of a batched tensor (`refuse_batched`);
* a random op given a batched tensor under randomness="same", and any random op with an explicit generator
  under randomness="error" (factories report it: `explicit_draw`);
* out_dims=None for an output that is batched.

Marks are kept by a stand-in for `ember._dispatch.forward_ad`, the hook every op call already ends with
(`propagate(op, args, params, results)`), that in-place writes call (`inplace(self, result)`) and that out=
checks (`check_out(result)`); a real forward-AD level active at the same time is called through.  Tensor's
host reads (item, tolist, numpy) ask `host_read` through the same hook (`Tensor._check_data`).

Only what the user's code asks for raises: ember's own library code may read a value (a bounds check) or
fill a scratch tensor in place where torch's kernels do the same in C++.  So the check looks at the ember
function the user called (the frame below the user's): an in-place method, operator or index assignment for
a write, item/bool/float/tolist/numpy for a read, a random op for a draw; anything else is let through.
Marks that are missed (a result made outside the ops) only make vmap more lenient, never wrong.  F.batch_norm
asks `check_running_stats` before updating its running stats (torch's batch norm rule).
"""

from __future__ import annotations

import itertools
import os
import sys

from .. import _dispatch
from .._tensor import Tensor

__all__ = ["BatchTracker", "levels_of", "mark", "is_batched"]

_ATTR = "_vmap_levels"
_EMPTY: frozenset = frozenset()
_counter = itertools.count(1)
_active: list = []  # levels of the vmap calls now running, outermost first

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WRAPPERS = _EMBER_DIR + "_torch_function.py"  # the protocol's wrappers stand between a user and a function


def _ember_file(*parts: str) -> str:
    return os.path.join(_EMBER_DIR, *parts)


# the functions (by file) through which a user writes into a tensor: generated in-place methods and operators
_INPLACE_FILES = (_ember_file("_tensor.py"), _ember_file("_ops", "_api.py"), _ember_file("_ops", "operators.py"))
_INPLACE_NAMES = {"__setitem__", "setitem"}
_RANDOM_FILES = (_ember_file("_ops", "random.py"), _ember_file("_ops", "random_gamma.py"),
                 _ember_file("_ops", "_api.py"), _ember_file("_tensor.py"))
_HOST_READS = {"item", "tolist", "numpy", "__array__", "__bool__", "__float__", "__int__", "__index__",
               "__complex__", "__format__"}


ITEM_ERROR = (
    "vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over calling .item() on a "
    "Tensor, please try to rewrite what you're doing with other operations. If error is occurring somewhere "
    "inside PyTorch internals, please file a bug report."
)
BOOL_ERROR = (
    "vmap: It looks like you're attempting to use a Tensor in some data-dependent control flow. We don't "
    "support that yet, please file an issue at https://github.com/pytorch/pytorch/issues ."
)
STORAGE_ERROR = "Cannot access data pointer of Tensor that doesn't have storage"
INPLACE_ERROR = (
    "vmap: inplace arithmetic(self, *extra_args) is not possible because there exists a Tensor `other` in "
    "extra_args that has more elements than `self`. This happened due to `other` being vmapped over but `self` "
    "not being vmapped over in a vmap. Please try to use out-of-place operators instead of inplace arithmetic. "
    "If said operator is being called inside the PyTorch framework, please file a bug report instead."
)
DYNAMIC_ERROR = (
    "vmap: We do not support batching operators that can output dynamic shape. Attempted to vmap over "
    "aten::{name}. Please file an issue at https://github.com/pytorch/pytorch/issues if you need this feature."
)
MASK_ERROR = ("vmap: We do not support batching operators that can support dynamic shape. Attempting to batch "
              "over indexing with a boolean mask.")
INDEX_PUT_ERROR = INPLACE_ERROR.replace("inplace arithmetic", "index_put_")
UNSUPPORTED_ERRORS = {  # functions torch's vmap refuses on batched tensors (no batching rule, no fallback)
    "allclose": "vmap over ember.allclose isn't supported yet. Please file an issue at "
                "https://github.com/pytorch/pytorch/issues if you need this feature.",
    "equal": "Batching rule not implemented for aten::equal. We could not generate a fallback.",
}
BATCH_NORM_ERROR = (
    "Batch norm got a batched tensor as input while the running_mean or running_var, which will be updated in "
    "place, were not batched.\nIf you are using a module and do not need eval mode, please set "
    "`track_running_stats` to be False.If you are using a prebuilt module and do not need eval mode, please see "
    "the functorch website for resources on how to patch your module to work with vmap"
)
SAME_RANDOM_ERROR = (
    "Vmap does not currently support same randomness with a batched tensor input. Please file an issue with "
    "functorch"
)


# the data-dependent ops torch refuses under vmap, with the aten name its message gives (bincount is not one: its
# fallback runs per sample, and stacks when the lengths agree)
_DYNAMIC = {
    "nonzero": lambda params: "nonzero",
    "unique": lambda params: "_unique2" if params.get("dim") is None else "unique_dim",
    "unique_consecutive": lambda params: "unique_consecutive" if params.get("dim") is None
    else "unique_dim_consecutive",
    "where": lambda params: "where",
}


def new_level() -> int:
    return next(_counter)


def levels_of(value) -> frozenset:
    """The vmap levels `value` is batched at (running ones or not)."""
    return value.__dict__.get(_ATTR, _EMPTY) if isinstance(value, Tensor) else _EMPTY


def is_batched(value, level: int) -> bool:
    return level in levels_of(value)


def mark(tensor, levels: frozenset) -> None:
    if levels:
        tensor.__dict__[_ATTR] = levels_of(tensor) | levels


def _operand_levels(args) -> frozenset:
    found = _EMPTY
    for a in args:
        if isinstance(a, Tensor):
            levels = a.__dict__.get(_ATTR)
            if levels:
                found = found | levels
        elif type(a) in (list, tuple):
            found = found | _operand_levels(a)
    return found


def _running(levels: frozenset) -> frozenset:
    return levels.intersection(_active) if levels else _EMPTY


def _entry():
    """The code of the ember function the user's code called to get here (the frame just below the first frame
    outside ember), or None when the user's code is not on the stack."""
    frame = sys._getframe(1)
    entry = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_EMBER_DIR):
            return entry
        if filename != _WRAPPERS:
            entry = frame.f_code
        frame = frame.f_back
    return None


def _user_writes() -> bool:
    """Whether the user asked for the in-place write being checked: the function called is an in-place method,
    an operator or index assignment (not a library function filling a scratch tensor of its own)."""
    code = _entry()
    return code is not None and (code.co_filename in _INPLACE_FILES or code.co_name.endswith("_")
                                 or code.co_name in _INPLACE_NAMES)


def _user_reads() -> bool:
    """Whether the user asked for the host read being checked (item(), bool(), float(), tolist(), numpy())."""
    code = _entry()
    return code is not None and code.co_name in _HOST_READS


def _user_calls(names) -> bool:
    """Whether the ember function the user called is one of `names` (torch.argwhere, say, runs nonzero too but
    falls back to a per-sample loop in torch, so only a direct call raises)."""
    code = _entry()
    return code is not None and code.co_name in names


def _user_draws() -> bool:
    """Whether the user called the random op being checked (not a library function such as dropout)."""
    code = _entry()
    return code is not None and code.co_filename in _RANDOM_FILES


class BatchTracker:
    """The stand-in for `_dispatch.forward_ad` while a vmap call runs (one per call; nested calls chain).

    `ad` is the real forward-AD module when a dual level is active, called through for tangents."""

    def __init__(self, level: int, randomness: str) -> None:
        self.level = level
        self.randomness = randomness
        self.saved = None
        self.ad = None
        self.key_levels = _EMPTY  # an indexing key's batched tensors, for the index op dispatched next

    def __enter__(self) -> BatchTracker:
        self.saved = _dispatch.forward_ad
        self.ad = self.saved.ad if isinstance(self.saved, BatchTracker) else self.saved
        _active.append(self.level)
        _dispatch.forward_ad = self
        return self

    def __exit__(self, *exc) -> None:
        _active.remove(self.level)
        _dispatch.forward_ad = self.saved

    # ---- the forward-AD hook protocol
    def propagate(self, op, args, params, results) -> None:
        levels = _running(_operand_levels(args))
        if "generator" in params:
            self._check_random(levels, params)
        key_levels, self.key_levels = self.key_levels, _EMPTY
        if key_levels and op.name in ("index", "index_put"):
            if op.name == "index_put" and not key_levels <= levels_of(args[0]) and _user_writes():
                raise RuntimeError(INDEX_PUT_ERROR)
            levels = levels | key_levels  # (the result is batched wherever its index is)
        if levels:
            if op.name in _DYNAMIC and op.data_dependent and _user_calls(_DYNAMIC):
                raise RuntimeError(DYNAMIC_ERROR.format(name=_DYNAMIC[op.name](params)))
            if isinstance(results, Tensor):
                mark(results, levels)
            else:
                for result in results:
                    if isinstance(result, Tensor):
                        mark(result, levels)
        if self.ad is not None:
            self.ad.propagate(op, args, params, results)

    def index_tensor(self, tensor, mask: bool) -> None:
        """An indexing key's tensor, about to become a NumPy index (_ops/_index_keys.py), so that the index op
        dispatched next would not see it: a batched boolean mask has a per-sample count (torch refuses it); a
        batched index makes the op's result batched (propagate), and writing through it into a tensor that is
        not batched writes each sample's positions into one tensor (torch refuses that too)."""
        levels = _running(levels_of(tensor))
        if not levels:
            return
        if mask and _user_calls(("getitem", "setitem", "__getitem__", "__setitem__")):
            raise RuntimeError(MASK_ERROR)
        self.key_levels = self.key_levels | levels

    def refuse_batched(self, name: str, *tensors) -> None:
        """allclose / equal, called by the user on a batched tensor: torch's vmap has no rule for them."""
        if any(_running(levels_of(t)) for t in tensors) and _user_calls((name,)):
            raise RuntimeError(UNSUPPORTED_ERRORS[name])

    def explicit_draw(self) -> None:
        """A random factory drawing from a user's generator (it makes its tensor without a dispatched op, so
        propagate does not see it): refused under randomness="error", as every random op is."""
        if self.randomness == "error":
            from ._randomness import RANDOM_ERROR

            raise RuntimeError(RANDOM_ERROR)

    def _check_random(self, levels: frozenset, params) -> None:
        """torch's checks on a random op inside vmap, for the innermost level (whose flag applies)."""
        if self.randomness == "error" and params.get("generator") is not None:
            from ._randomness import RANDOM_ERROR

            raise RuntimeError(RANDOM_ERROR)
        in_place = "draw" in params or params.get("inplace")  # (a tensor filled in place: only its shape is read)
        if self.randomness == "same" and self.level in levels and not in_place and _user_draws():
            raise RuntimeError(SAME_RANDOM_ERROR)

    def inplace(self, target, result) -> None:
        extra = _running(levels_of(result) - levels_of(target))
        if extra:
            if _user_writes():
                raise RuntimeError(INPLACE_ERROR)
            mark(target, extra)  # (library code filled a scratch tensor: it now holds batched values)
        if self.ad is not None:
            self.ad.inplace(target, result)

    def check_out(self, result) -> None:
        if _running(levels_of(result)):
            raise RuntimeError("Batching rule not implemented for out= variants; the fallback path doesn't work on "
                               "out= or view ops.")
        if self.ad is not None:
            self.ad.check_out(result)

    def host_read(self, tensor, what: str) -> None:
        """Tensor._check_data: `tensor`'s values are about to be read into Python (item, tolist, numpy)."""
        if not _running(levels_of(tensor)) or not _user_reads():
            return
        if what == "item":
            raise RuntimeError(BOOL_ERROR if _in_bool() else ITEM_ERROR)
        raise RuntimeError(STORAGE_ERROR)

    def check_running_stats(self, input, *stats) -> None:
        """F.batch_norm in training, about to update its running stats in place: they must be batched wherever
        the input is (torch's batch norm batching rule)."""
        levels = _running(levels_of(input))
        if levels and any(stat is not None and not levels <= levels_of(stat) for stat in stats):
            raise RuntimeError(BATCH_NORM_ERROR)

    def tangent_of(self, tensor):
        return None if self.ad is None else self.ad.tangent_of(tensor)

    def function_jvp(self, cls, ctx, args, output) -> None:
        """A custom autograd.Function ran with the hook suspended: its outputs take its inputs' levels."""
        levels = _running(_operand_levels(args))
        for value in output if isinstance(output, (tuple, list)) else (output,):
            if isinstance(value, Tensor):
                mark(value, levels)
        if self.ad is not None:
            self.ad.function_jvp(cls, ctx, args, output)

    def reshaped_in_place(self, target, result) -> None:
        if self.ad is not None:
            self.ad.reshaped_in_place(target, result)


def _in_bool() -> bool:
    """Whether the item() being checked was asked for by Tensor.__bool__ (an `if` on a tensor)."""
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code.co_name == "__bool__":
            return True
        frame = frame.f_back
    return False
