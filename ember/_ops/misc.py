"""Small top-level helpers: is_tensor, numel, result_type, typename, and predicates (is_nonzero, is_same_size,
is_signed, is_conj, is_neg)."""

from __future__ import annotations

from .. import _dtype as dt
from .._dispatch import result_type_of_args
from .._tensor import Tensor
from ._api import export


def _assert(condition, message: str) -> None:
    """torch._assert: Python's assert as a function (timm's PatchEmbed checks the input size with it); a
    one-element tensor condition is read by its truth value, as `assert` reads it."""
    assert condition, message


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input._dtype.is_floating_point


def is_complex(input: Tensor) -> bool:
    return input._dtype.is_complex


def numel(input: Tensor) -> int:
    return input.numel()


def result_type(tensor1, tensor2) -> dt.dtype:
    """The dtype an arithmetic op on these operands produces (torch.result_type)."""
    return result_type_of_args((tensor1, tensor2))


def typename(obj) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    # torch's rule: module-qualified name of a class / function, else of the object's class; builtins bare
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in {"", "builtins"}:
        return qualname
    return f"{module}.{qualname}"


# ---------------------------------------------------------------- tensor predicates (Python bools)


def _require_tensor(name: str, argument: str, position: int, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}")


@export
def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor (nan counts as nonzero); torch's error for any other size."""
    _require_tensor("is_nonzero", "input", 1, input)
    count = input.numel()
    if count == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if count > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@export
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape (dtypes may differ)."""
    _require_tensor("is_same_size", "input", 1, input)
    _require_tensor("is_same_size", "other", 2, other)
    return input.shape == other.shape


@export
def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed (everything but bool and uint8)."""
    _require_tensor("is_signed", "input", 1, input)
    return input._dtype.is_signed


@export
def is_conj(input: Tensor) -> bool:
    """Always False: ember's conj() makes a physical copy, so no tensor carries torch's lazy conjugate bit."""
    _require_tensor("is_conj", "input", 1, input)
    return False


@export
def is_neg(input: Tensor) -> bool:
    """Always False: ember has no lazy negation bit (torch sets it on views such as x.conj().imag)."""
    _require_tensor("is_neg", "input", 1, input)
    return False
