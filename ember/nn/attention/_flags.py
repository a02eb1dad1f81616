"""Which scaled_dot_product_attention backends are allowed, and in what priority order.

One process-wide state, read by nn.functional.scaled_dot_product_attention and
written by `nn.attention.sdpa_kernel` and the `ember.backends.cuda.enable_*_sdp`
switches (torch keeps these flags in its global context; so does ember).
Backends are named by the SDPBackend numbers: MATH 0, FLASH_ATTENTION 1,
EFFICIENT_ATTENTION 2, CUDNN_ATTENTION 3, OVERRIDEABLE 4.
"""

from __future__ import annotations

MATH, FLASH, EFFICIENT, CUDNN, OVERRIDEABLE = 0, 1, 2, 3, 4
DEFAULT_PRIORITY = (FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE)

enabled: set[int] = {MATH, FLASH, EFFICIENT, CUDNN, OVERRIDEABLE}
priority: list[int] = list(DEFAULT_PRIORITY)


def set_enabled(backend: int, on: bool) -> None:
    """Allow or forbid one backend."""
    if on:
        enabled.add(backend)
    else:
        enabled.discard(backend)


def all_enabled() -> bool:
    """True in the default state (no restriction): sdpa then picks its kernel as it always does."""
    return len(enabled) == 5
