"""functional_call: run a module with some of its parameters and buffers replaced for one call.

The swap is torch's (_named_member_accessor): an entry of `_parameters`/`_buffers` is replaced in its
dict (so a plain Tensor can stand in for a Parameter, and autograd flows to the given tensor), other
attributes through setattr; everything is put back afterwards, even on error.
"""

from __future__ import annotations

import contextlib
import warnings

from ..._tensor import Tensor
from ..modules.module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _swap_tensor(module: Module, name: str, tensor, allow_missing: bool = False):
    """Put `tensor` at module.<name> (_MISSING deletes it); return what was there (_MISSING if nothing)."""
    if tensor is not _MISSING and not isinstance(tensor, Tensor) and tensor is not None:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for table in (module._parameters, module._buffers):
        if name in table:
            original = table[name]
            if tensor is not _MISSING:
                table[name] = tensor
            else:
                del table[name]
            return original
    if hasattr(module, name):
        original = getattr(module, name)
    else:
        if not allow_missing:
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        original = _MISSING
    if original is not _MISSING and not isinstance(original, Tensor) and original is not None:
        raise TypeError(f"attribute `{name}`: {original} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return original


class _Accessor:
    """Dotted-name access to a module tree's tensors, with a memo of submodules (torch's NamedMemberAccessor)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.memo: dict = {}

    def get_submodule(self, name: str) -> Module:
        if not name:
            return self.module
        if name not in self.memo:
            prefix, dot, attr = name.rpartition(".")
            parent = self.get_submodule(prefix) if dot else self.module
            try:
                submodule = getattr(parent, attr)
            except AttributeError as error:
                raise AttributeError(f"{parent._get_name()} has no attribute `{attr}`") from error
            if not isinstance(submodule, Module):
                raise TypeError(f"submodule `{name}`: {submodule} is not an instance of torch.nn.Module")
            self.memo[name] = submodule
        return self.memo[name]

    def swap_tensor(self, name: str, value, allow_missing: bool = False):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value, allow_missing=allow_missing)

    def swap_tensors_dict(self, named_tensors: dict, allow_missing: bool = False):
        originals, missing = {}, []
        try:
            for name, tensor in named_tensors.items():
                original = self.swap_tensor(name, tensor, allow_missing=True)
                if original is _MISSING:
                    missing.append(name)
                originals[name] = original
        except Exception:
            for name, original in originals.items():
                self.swap_tensor(name, original, allow_missing=True)
            raise
        if missing and not allow_missing:
            for name, original in originals.items():
                self.swap_tensor(name, original, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return originals, missing

    def check_keys(self, keys):
        keys = set(keys)
        valid = {name for name, _ in self.module.named_parameters(remove_duplicate=False)}
        valid |= {name for name, _ in self.module.named_buffers(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)


def _untie_named_tensors_map(module: Module, parameters_and_buffers: dict) -> dict:
    """Tied tensors (one tensor under several names): a value given for one name goes to all of them."""
    named: dict = {}
    named.update(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of: dict = {}
    for name, tensor in named.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied: dict = {}
    for names in names_of.values():
        if len(names) > 1:
            for name in names:
                tied[name] = names
    given = set(parameters_and_buffers)
    given_tied = {name for name in given if name in tied}
    for name in given_tied:
        names = tied[name]
        if len(names & given_tied) > 1 and len({id(parameters_and_buffers[n]) for n in names & given_tied}) != 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                "Consider using tie_weights=False"
            )
    untied = parameters_and_buffers.copy()
    for name in given_tied:
        for tied_name in tied[name]:
            untied[tied_name] = parameters_and_buffers[name]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict, tie_weights: bool = False,
                          strict: bool = False, stack_weights: bool = False):
    untied = _untie_named_tensors_map(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    accessor = _Accessor(module)
    if strict:
        missing, unexpected = accessor.check_keys(untied)
        messages = []
        if unexpected:
            messages.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            messages.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if messages:
            details = "\n\t".join(messages)
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t{details}")
    originals: dict = {}
    try:
        originals, _ = accessor.swap_tensors_dict(untied, allow_missing=True)
        yield
    finally:
        if stack_weights:
            originals = dict(reversed(originals.items()))
        new, _ = accessor.swap_tensors_dict(originals, allow_missing=True)
        parameters_and_buffers.update({k: new[k] for k in parameters_and_buffers if k in new})


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    """Deprecated in torch 2.0 in favour of torch.func.functional_call, which it equals."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a future "
        "version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning, stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *, tie_weights: bool = True,
                     strict: bool = False):
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
