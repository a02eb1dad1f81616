"""Real PyTorch programs (tests/programs/scripts) run unchanged under real torch and under `python -m ember.run`:
the losses they print must track each other.

Each script draws its initial weights and data with NumPy (a fixed seed), so both runs start from the same
point and see the same batches; they then differ only by floating-point rounding (summation order in
BLAS and reductions), which a few dozen float32 steps keep well under the relative tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from _programs import SCRIPTS, losses, run_both

pytest.importorskip("torch")

# (script, arguments, relative tolerance, how many loss lines to expect)
PROGRAMS = [
    ("polynomial_tensor.py", ["--steps", "500"], 1e-3, 5),
    ("polynomial_autograd.py", ["--steps", "500"], 1e-3, 5),
    ("polynomial_function.py", ["--steps", "500"], 1e-3, 5),
    ("polynomial_nn.py", ["--steps", "500"], 1e-3, 5),
    ("polynomial_optim.py", ["--steps", "500"], 1e-3, 5),
    ("polynomial_module.py", ["--steps", "500"], 1e-3, 5),
    ("dynamic_net.py", ["--steps", "500"], 1e-3, 5),
    # float64: the same programs agree to many more digits
    ("polynomial_function.py", ["--steps", "500", "--dtype", "float64"], 1e-9, 5),
    ("dynamic_net.py", ["--steps", "500", "--dtype", "float64"], 1e-9, 5),
    ("small_cnn.py", ["--steps", "30"], 1e-3, 31),
    ("char_gpt.py", ["--steps", "40"], 1e-3, 40),
]


@pytest.mark.parametrize(
    "script, args, rtol, expected",
    PROGRAMS,
    ids=[f"{s[:-3]}{'-float64' if 'float64' in a else ''}" for s, a, _, _ in PROGRAMS],
)
def test_losses_track_torch(script, args, rtol, expected):
    torch_output, ember_output = run_both(SCRIPTS / script, args)
    torch_losses, ember_losses = losses(torch_output), losses(ember_output)
    assert len(torch_losses) == expected, torch_output
    assert len(ember_losses) == len(torch_losses), ember_output
    np.testing.assert_allclose(
        ember_losses, torch_losses, rtol=rtol, err_msg=f"\ntorch:\n{torch_output}\nember:\n{ember_output}"
    )
    # and they train, not just agree: the loss ends well below where it started
    assert np.mean(ember_losses[-3:]) < 0.8 * ember_losses[0]
