"""make_np: what the summary builders accept (ember Tensors, NumPy arrays, Python scalars) as a NumPy array."""

from __future__ import annotations

from typing import Any

import numpy as np


def make_np(x: Any) -> np.ndarray:
    """`x` as a NumPy array: tensors are detached and copied to the CPU; a scalar becomes a 1-element array.

    A bfloat16 tensor is widened to float32 (torch narrows to float16, which can overflow; the values written
    are the same wherever float16 could hold them).  A meta tensor has no data, so, like torch, a random value
    stands in for it.
    """
    import ember

    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)
        if x.dtype == ember.bfloat16:
            x = x.to(ember.float32)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")
