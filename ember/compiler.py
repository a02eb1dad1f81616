"""ember.compiler: the torch.compiler-like controls of ember.compile.

    explain(fn)(*args) / explain(fn, *args)   graphs, graph breaks and their reasons (torch._dynamo.explain)
    reset()                                   forget compiled graphs (torch._dynamo.reset / torch.compiler.reset)
    disable(fn)                               never capture fn (a graph break when called inside a capture)
    is_compiling()                            True while a capture is tracing
    config.recompile_limit, config.cache_size_limit, config.disable
    Unsupported                               raised by fullgraph=True at a graph break
"""

from __future__ import annotations

from . import _dispatch
from ._compile import CompiledFunction, ExplainOutput, Unsupported, config, disable, explain, reset


def is_compiling() -> bool:
    """True while ember.compile is tracing a call (torch.compiler.is_compiling)."""
    return _dispatch.tracer is not None


def cache_dir() -> str:
    """Where generated kernels are cached ($EMBER_CACHE_DIR/kernels, default ~/.cache/ember/kernels)."""
    from ._compile.codegen import cache_dir as _cache_dir

    return _cache_dir()


__all__ = ["explain", "reset", "disable", "is_compiling", "config", "Unsupported", "CompiledFunction",
           "ExplainOutput", "cache_dir"]
