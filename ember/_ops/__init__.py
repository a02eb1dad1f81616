"""The op registry, one module per family.  Importing this package registers every op."""

from . import (  # noqa: F401  (imported for their registrations)
    comparison,
    complex_ops,
    conversion,
    creation,
    einsum,
    elementwise,
    fft_ops,
    indexing,
    linalg,
    matrix_factories,
    matrix_functions,
    misc,
    movement,
    nn_aliases,
    nn_ops,
    numerical,
    random,
    random_gamma,
    reduction,
    scan,
    scatter_ops,
    solvers,
    sorting,
    special_functions,
    statistics,
    tensor_extras,
    view_nodes,
    views,
    windows,
)
from ._api import FUNCTIONS, METHODS, install

__all__ = ["FUNCTIONS", "METHODS", "install"]
