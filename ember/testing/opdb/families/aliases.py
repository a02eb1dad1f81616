"""OpInfos for aliases and small ops without an entry of their own: each alias reuses its original's samples.

An alias is tested as itself (ember.arccos vs torch.arccos), so a wrong binding (arccos bound to cos) fails.
"""

from __future__ import annotations

import dataclasses

from ..core import ALL_TYPES, ALL_WITH_COMPLEX, FLOAT_AND_COMPLEX, FLOATING, OpInfo, binary_samples, unary_samples
from . import elementwise, linalg


def _alias(original: OpInfo, name: str) -> OpInfo:
    """The original's OpInfo under the alias's name (called as lib.<alias>)."""
    return dataclasses.replace(original, name=name, call=None, method=None, inplace=None, error_inputs=None)


def _aliases() -> list:
    by_name = {op.name: op for op in elementwise.OPS + linalg.OPS}
    table = {
        "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
        "atanh": "arctanh", "gt": "greater", "ge": "greater_equal", "lt": "less", "le": "less_equal",
        "ne": "not_equal", "linalg.pinv": "pinverse",
    }
    return [_alias(by_name[original], alias) for original, alias in table.items() if original in by_name]


OPS = _aliases() + [
    OpInfo("clone", unary_samples, dtypes=ALL_WITH_COMPLEX, method="clone",
           call=lambda lib, x: lib.clone(x)),
    OpInfo("contiguous", unary_samples, dtypes=ALL_TYPES, method="contiguous",
           call=lambda lib, x: x.contiguous()),
    OpInfo("conj_physical", unary_samples, dtypes=FLOAT_AND_COMPLEX, method="conj_physical"),
    OpInfo("rsub", binary_samples, dtypes=FLOATING + ("int64",), grad=True,
           call=lambda lib, a, b, **k: lib.rsub(a, b, **k)),
]
