"""Compiler settings (ember.compiler.config), read at call time."""

from __future__ import annotations


class _Config:
    """recompile_limit: captures after the first before a function runs eagerly (torch: 8).
    cache_size_limit: graphs kept per function, shape-only recompiles included (dynamic sizes).
    disable: run every compiled function eagerly (torch.compiler.disable for the whole process)."""

    recompile_limit = 8
    cache_size_limit = 64
    disable = False


config = _Config()
