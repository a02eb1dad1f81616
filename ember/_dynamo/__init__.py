"""torch._dynamo's commonly used names, as thin aliases of ember.compiler (programs call `torch._dynamo.reset()`
and set `torch._dynamo.config.cache_size_limit = N`)."""

from __future__ import annotations

from .._compile import Unsupported
from .._compile import config as _config
from ..compiler import disable, explain, is_compiling, reset


class _DynamoConfig:
    """torch._dynamo.config: `cache_size_limit` is torch's old name of `recompile_limit` (both set ember's
    config.recompile_limit); a few other common settings are kept as plain values with torch's defaults and
    are not read by ember."""

    suppress_errors = False
    verbose = False
    capture_scalar_outputs = False
    capture_dynamic_output_shape_ops = False
    automatic_dynamic_shapes = True
    assume_static_by_default = True
    optimize_ddp = True
    accumulated_cache_size_limit = 256
    accumulated_recompile_limit = 256

    @property
    def recompile_limit(self) -> int:
        return _config.recompile_limit

    @recompile_limit.setter
    def recompile_limit(self, value: int) -> None:
        _config.recompile_limit = value

    cache_size_limit = recompile_limit


config = _DynamoConfig()


def mark_dynamic(tensor, index, min=None, max=None) -> None:
    """Accepted and ignored: ember makes a dim symbolic once two captures differ in it (docs/compile.md)."""


maybe_mark_dynamic = mark_dynamic


def mark_static(tensor, index=None) -> None:
    """Accepted and ignored (see mark_dynamic)."""


__all__ = ["reset", "explain", "disable", "is_compiling", "config", "Unsupported", "mark_dynamic",
           "maybe_mark_dynamic", "mark_static"]
