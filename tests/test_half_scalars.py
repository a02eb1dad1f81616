"""Python numbers in float16/bfloat16 arithmetic, bit for bit with torch's CPU kernels: mul, div and lerp read
the number's float32 value, add, sub and pow round it to the half type first, and `number / tensor` is
`tensor.reciprocal() * number` in every dtype."""

import numpy as np
import pytest
import torch

import ember

DATA = np.random.default_rng(0).standard_normal(2000).astype(np.float32)
CASES = {
    "mul": lambda lib, x: x * 1.37,
    "rmul": lambda lib, x: 1.37 * x,
    "div": lambda lib, x: x / 0.73,
    "rdiv": lambda lib, x: 1.37 / x,
    "add": lambda lib, x: x + 1.37,
    "rsub": lambda lib, x: 1.37 - x,
    "mul_": lambda lib, x: x.clone().mul_(1.37),
    "div_": lambda lib, x: x.clone().div_(0.73),
    "lerp": lambda lib, x: lib.lerp(x, x * 0 + 1, 0.3),
    "lerp_high": lambda lib, x: lib.lerp(x, x * 0 + 1, 0.7),
    "mul_0d_tensor": lambda lib, x: x * lib.tensor(1.37),  # a 0-d tensor is a CPU scalar to torch's kernels
    "div_0d_tensor": lambda lib, x: x / lib.tensor(1.37),
    "div_floor": lambda lib, x: lib.div(x * 3, 0.1, rounding_mode="floor"),
    "div_trunc": lambda lib, x: lib.div(x * 3, 1.37, rounding_mode="trunc"),
    "floordiv": lambda lib, x: (x * 3) // 1.37,
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
@pytest.mark.parametrize("case", list(CASES))
def test_scalar_operands_round_as_torch(case, dtype):
    ours, theirs = (CASES[case](lib, lib.tensor(DATA).to(getattr(lib, dtype))) for lib in (ember, torch))
    assert ours.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(ours.double().numpy(), theirs.double().numpy())
