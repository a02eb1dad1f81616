"""The errors ember.export raises, named as torch._dynamo.exc's (UserError, Unsupported)."""

from __future__ import annotations

from .._compile.tracer import Unsupported as _CompileUnsupported


class UserError(RuntimeError):
    """A wrong call of export (args not a tuple, a bad dynamic_shapes spec, a violated dim constraint)."""


class Unsupported(_CompileUnsupported):
    """The program cannot be exported: a graph break (.item(), data-dependent control flow...) or an op or
    value that the standalone format cannot hold.  A subclass of ember.compiler.Unsupported."""
