"""torch.nn.attention: choosing scaled_dot_product_attention's backend, and attention biases.

`sdpa_kernel(backends)` allows only the listed backends inside its block.
ember's CPU follows torch's CPU: of the backends only FLASH_ATTENTION (ember's
block-wise kernel) and MATH (the composite softmax(QK^T)V) exist there, flash
is taken when allowed and its constraints hold, math otherwise; with neither
allowed, or only flash allowed and its constraints failing, the call raises
torch's RuntimeError (the latter after torch's warnings saying why).  The
flash-attention implementation registry (FA3/FA4 on CUDA in torch) is kept as
a registry only: ember has no kernels to swap in.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from enum import Enum, IntEnum

from . import _flags

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "register_flash_attention_impl",
           "activate_flash_attention_impl", "list_flash_attention_impls", "current_flash_attention_impl",
           "restore_flash_attention_impl"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """The scaled_dot_product_attention implementations (torch.nn.attention.SDPBackend)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = Enum.__str__  # "SDPBackend.MATH", as torch's enum prints (IntEnum would print "0")


def _cur_sdpa_kernel_backends(with_priority: bool = False) -> list[SDPBackend]:
    """The allowed backends, in torch's flag order or (with_priority) in priority order."""
    order = (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
             SDPBackend.MATH, SDPBackend.OVERRIDEABLE)
    backends = [b for b in order if int(b) in _flags.enabled]
    if with_priority:
        backends.sort(key=lambda b: _flags.priority.index(int(b)))
    return backends


def _sdpa_kernel(backends: Iterable, set_priority: bool = False) -> None:
    backends = list(backends)
    for backend in SDPBackend:
        if backend is not SDPBackend.ERROR:
            _flags.set_enabled(int(backend), backend in backends)
    if set_priority:
        order = [int(b) for b in backends]
        order += [b for b in _flags.priority if b not in order]
        _flags.priority[:] = order


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend, set_priority: bool = False):
    """Allow only `backends` for scaled_dot_product_attention inside the block (and, with set_priority, try
    them in the order given); the previous flags come back on exit."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    previous_priority = list(_flags.priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, False)
        _flags.priority[:] = previous_priority


_FLASH_ATTENTION_IMPLS: dict[str, Callable] = {}
_FLASH_ATTENTION_ACTIVE: tuple | None = None


def register_flash_attention_impl(impl: str, *, register_fn: Callable) -> None:
    """Record the callable that activates a flash-attention implementation (for backend providers)."""
    _FLASH_ATTENTION_IMPLS[impl] = register_fn


def list_flash_attention_impls() -> list[str]:
    """The names of the registered flash-attention implementations."""
    return sorted(_FLASH_ATTENTION_IMPLS)


def current_flash_attention_impl() -> str | None:
    """The activated implementation's name, or None for the default."""
    return _FLASH_ATTENTION_ACTIVE[0] if _FLASH_ATTENTION_ACTIVE is not None else None


def activate_flash_attention_impl(impl: str) -> None:
    """Call a registered implementation's register_fn and remember it as active (when it returns a handle)."""
    global _FLASH_ATTENTION_ACTIVE
    restore_flash_attention_impl(_raise_warn=False)
    register_fn = _FLASH_ATTENTION_IMPLS.get(impl)
    if register_fn is None:
        raise ValueError(f"Unknown flash attention impl '{impl}'. Available implementations: "
                         f"{list_flash_attention_impls()}")
    handle = register_fn()
    if handle is not None:
        _FLASH_ATTENTION_ACTIVE = (impl, handle)


def restore_flash_attention_impl(_raise_warn: bool = True) -> None:
    """Go back to the default implementation (removing the active one's handle)."""
    global _FLASH_ATTENTION_ACTIVE
    handle = _FLASH_ATTENTION_ACTIVE[1] if _FLASH_ATTENTION_ACTIVE is not None else None
    if handle is not None:
        handle.remove()
    elif _raise_warn:
        import logging

        logging.getLogger(__name__).warning("Trying to restore default FA2 impl when no custom impl was activated")
    _FLASH_ATTENTION_ACTIVE = None


from . import bias  # noqa: E402,F401 - torch.nn.attention.bias
