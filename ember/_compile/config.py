"""Compiler settings (ember.compiler.config), read at call time."""

from __future__ import annotations


class _Config:
    """recompile_limit: captures after the first before a function runs eagerly (torch: 8).
    cache_size_limit: graphs kept per function, shape-only recompiles included (dynamic sizes).
    disable: run every compiled function eagerly (torch.compiler.disable for the whole process).
    max_chains: per guard set, the split captures (one per path through reads such as `if t.sum() > 0`)
    kept before that guard set runs eagerly (reads whose values keep changing, e.g. a logged loss.item())."""

    recompile_limit = 8
    cache_size_limit = 64
    disable = False
    max_chains = 4


config = _Config()
