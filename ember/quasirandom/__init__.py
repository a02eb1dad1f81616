"""ember.quasirandom: low-discrepancy (quasi-random) sequences, as torch.quasirandom."""

from ._sobol import SobolEngine

__all__ = ["SobolEngine"]
