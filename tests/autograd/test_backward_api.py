"""backward()/autograd.grad argument handling against torch."""

import ember


def test_root_gradient_cast_to_the_output_dtype():
    """torch casts a float32 grad_output of a float64 output before backward runs: the chain runs in float64."""
    import torch

    for lib in (ember, torch):
        x = lib.ones(2, dtype=lib.float64, requires_grad=True)
        y = x * (1 + 1e-12)
        (grad,) = lib.autograd.grad(y, x, lib.ones(2, dtype=lib.float32))
        assert grad.dtype == lib.float64
        assert float(grad[0]) == 1 + 1e-12
