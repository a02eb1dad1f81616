"""The op database: one OpInfo per op, split by family, expanded by tests/test_opdb.py."""

from __future__ import annotations

from .core import (  # noqa: F401
    ALL_TYPES,
    ALL_WITH_COMPLEX,
    COMPLEX,
    FLOAT_AND_COMPLEX,
    FLOATING,
    INTEGRAL,
    DType,
    ErrorSample,
    OpInfo,
    Sample,
    binary_samples,
    compare,
    make_array,
    unary_samples,
)


def all_ops() -> list:
    """Every OpInfo of every family module (imported lazily so a broken family names itself)."""
    import importlib
    import pkgutil

    from . import families

    ops = []
    for info in pkgutil.iter_modules(families.__path__):
        module = importlib.import_module(f"{families.__name__}.{info.name}")
        ops.extend(module.OPS)
    return ops
