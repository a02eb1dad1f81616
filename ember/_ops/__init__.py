"""The op registry, one module per family.  Importing this package registers every op."""

from . import (  # noqa: F401  (imported for their registrations)
    comparison,
    conversion,
    creation,
    einsum,
    elementwise,
    indexing,
    linalg,
    movement,
    nn_ops,
    random,
    reduction,
    scan,
    sorting,
    view_nodes,
    views,
)
from ._api import FUNCTIONS, METHODS, install

__all__ = ["FUNCTIONS", "METHODS", "install"]
