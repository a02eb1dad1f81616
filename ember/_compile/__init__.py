"""ember.compile: capture by tracing, fuse pointwise chains into generated kernels, replay.

graph.py (IR), tracer.py (capture and graph breaks), fusion.py + lowering.py (groups and their micro-IR),
autodiff.py (backward kernels of groups), codegen.py (C and NumPy printers, disk cache), printing.py (graph
code), runtime.py (fused ops, replay), symbolic.py (size-generic graphs), frontend.py (guards, cache, recompiles,
explain).  See docs/compile.md.
"""

from .config import config
from .frontend import CompiledFunction, ExplainOutput, compile, disable, explain, reset
from .tracer import Unsupported

__all__ = ["compile", "explain", "reset", "disable", "config", "Unsupported", "CompiledFunction", "ExplainOutput"]

from .. import compiler as _public_module  # noqa: E402,F401 - makes ember.compiler available after `import ember`
