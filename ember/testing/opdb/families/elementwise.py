"""OpInfos for pointwise ops."""

from __future__ import annotations

from ..core import (
    ALL_TYPES,
    FLOAT_AND_COMPLEX,
    FLOATING,
    ErrorSample,
    OpInfo,
    Sample,
    binary_samples,
    make_array,
    unary_samples,
)


def _shape_mismatch():
    import numpy as np

    return [ErrorSample(Sample((np.ones((2, 3), np.float32), np.ones((4,), np.float32))), RuntimeError,
                        r"size of tensor a \(3\) must match the size of tensor b \(4\)")]


OPS = [
    OpInfo("add", binary_samples, dtypes=ALL_TYPES + ("complex64",), method="add", inplace="add_",
           supports_out=True, error_inputs=_shape_mismatch),
    OpInfo("mul", binary_samples, dtypes=ALL_TYPES + ("complex64",), method="mul", inplace="mul_",
           supports_out=True),
    OpInfo("exp", lambda d, rng: unary_samples(d, rng, -3, 3), dtypes=FLOAT_AND_COMPLEX + ("int64",),
           method="exp", inplace="exp_", supports_out=True),
]
_ = (FLOATING, make_array)
