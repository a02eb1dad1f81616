"""Transforms: invertible maps with log|det J|, used by TransformedDistribution and biject_to/transform_to
(torch.distributions.transforms), in modules by kind."""

from ._base import (
                          ComposeTransform,
                          IndependentTransform,
                          ReshapeTransform,
                          Transform,
                          _InverseTransform,
                          identity_transform,
)
from .combined import CatTransform, CumulativeDistributionTransform, StackTransform
from .elementwise import (
                          AbsTransform,
                          AffineTransform,
                          ExpTransform,
                          PowerTransform,
                          SigmoidTransform,
                          SoftplusTransform,
                          TanhTransform,
)
from .matrix import (
                          CorrCholeskyTransform,
                          LowerCholeskyTransform,
                          PositiveDefiniteTransform,
                          SoftmaxTransform,
                          StickBreakingTransform,
)

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "CatTransform",
    "ComposeTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftplusTransform",
    "TanhTransform",
    "SoftmaxTransform",
    "StackTransform",
    "StickBreakingTransform",
    "Transform",
    "identity_transform",
]

_ = _InverseTransform
