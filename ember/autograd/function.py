"""torch.autograd.function: custom autograd Functions (implemented in ember/_autograd/function.py)."""

from .._autograd.function import (  # noqa: F401
    BackwardCFunction,
    Function,
    FunctionCtx,
    FunctionMeta,
    InplaceFunction,
    once_differentiable,
)

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "FunctionMeta", "InplaceFunction", "once_differentiable"]
