"""ember.functional: torch.functional, the module torch's tensor functions in Python (einsum, split, stft,
meshgrid, norm, unique, ...) live in.  ember defines them with its ops; this module names them, so code
importing ``torch.functional`` finds the same functions as ``torch.*`` -- looked up in ``ember`` at each
access, so that the wrappers autocast installs there on first use are found here too."""

import importlib

__all__ = [  # noqa: F822 - resolved by __getattr__
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft", "lu", "meshgrid", "norm", "pca_lowrank",
           "split", "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]


def __getattr__(name: str):
    if name in __all__:
        return getattr(importlib.import_module("ember"), name)
    raise AttributeError(f"module 'ember.functional' has no attribute '{name}'")


def __dir__() -> list:
    return sorted(__all__)
