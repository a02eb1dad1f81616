"""torch.autograd.Variable: the pre-0.4 wrapper, kept because old programs still write
`Variable(weight.new(n, b, h).zero_())` (word_language_model) or `isinstance(x, Variable)`.

Since 0.4 a Variable is a Tensor: calling the class returns a detached alias of `data` with `requires_grad` set (an
empty default-dtype tensor without data), and every Tensor is an instance of it, as torch's VariableMeta makes so.
"""

from __future__ import annotations

import warnings

from .._tensor import Tensor

__all__ = ["Variable"]


class VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """`Variable(data, requires_grad=False, volatile=False)`: `data.detach()` with `requires_grad` set."""

    def __new__(cls, data=None, requires_grad=False, volatile=False, _grad_fn=None, name=None):
        import ember  # (at call time: ember.autograd is imported while ember is)

        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if data is None:
            out = ember.empty(0)
        elif isinstance(data, Tensor):
            out = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out.requires_grad_(bool(requires_grad))
        return out
