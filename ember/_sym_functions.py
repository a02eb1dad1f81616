"""torch.sym_int, sym_float, sym_max, ...: torch's SymInt-aware scalar helpers, for plain numbers.

torch writes shape arithmetic with these so that, under tracing, a symbolic
size stays symbolic.  ember.compile guards on concrete sizes and never hands
user code a symbolic number, so each helper is torch's non-symbolic branch:
the Python builtin, with torch's type rules and its AssertionErrors for
arguments it refuses.  SymInt, SymFloat and SymBool exist so that checks like
`isinstance(n, (int, torch.SymInt))` work; no ember value is an instance.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_ite",
           "sym_sqrt", "sym_sum"]

_ALL_TYPES = (np.integer, np.floating, builtins.int, builtins.float)
_FLOAT_TYPES = (np.floating, builtins.float)


class _Symbolic:
    """A symbolic number of torch's tracer; ember never makes one."""

    def __init__(self, node) -> None:
        raise RuntimeError(f"ember has no symbolic shapes: {type(self).__name__} cannot be constructed")


class SymInt(_Symbolic):
    """torch.SymInt: an int that may be symbolic under tracing (never, in ember)."""


class SymFloat(_Symbolic):
    """torch.SymFloat: a float that may be symbolic under tracing (never, in ember)."""


class SymBool(_Symbolic):
    """torch.SymBool: a bool that may be symbolic under tracing (never, in ember)."""


def sym_int(a):
    """int(a), truncating toward zero."""
    return builtins.int(a)


def sym_float(a):
    """float(a), or a.__sym_float__() where a has one."""
    if hasattr(a, "__sym_float__"):
        return a.__sym_float__()
    return builtins.float(a)


def _check_number(value) -> None:
    if not isinstance(value, _ALL_TYPES):
        raise AssertionError(f"expected {_ALL_TYPES}, got {type(value)}")


def sym_max(a, b):
    """max(a, b) for ints and floats; a float result when either is a float (unlike builtins.max)."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES):
        return builtins.float(builtins.max(a, b))
    return builtins.max(a, b)


def sym_min(a, b):
    """min(a, b) for ints and floats; a float result when either is a float."""
    _check_number(a)
    _check_number(b)
    if isinstance(a, _FLOAT_TYPES) or isinstance(b, _FLOAT_TYPES):
        return builtins.float(builtins.min(a, b))
    return builtins.min(a, b)


def sym_not(a):
    """Logical negation: `not a`, or a.__sym_not__() where a has one."""
    if hasattr(a, "__sym_not__"):
        return a.__sym_not__()
    return not a


def sym_ite(b, t, f):
    """`t if b else f`; b must be a bool and t, f of one type."""
    if not isinstance(b, (SymBool, builtins.bool)):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sqrt(a):
    """math.sqrt(a) (a float), or a.__sym_sqrt__() where a has one."""
    if hasattr(a, "__sym_sqrt__"):
        return a.__sym_sqrt__()
    return math.sqrt(a)


sym_sqrt.__name__ = sym_sqrt.__qualname__ = "_sym_sqrt"  # torch's name for it


def sym_sum(*args):
    """The sum of the arguments (sym_sum(a, b, c) or sym_sum([a, b, c]))."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)
