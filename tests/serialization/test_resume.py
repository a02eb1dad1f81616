"""Resume training from a checkpoint in a fresh process: exactly the uninterrupted run (issue: checkpoints).

Also across frameworks: torch saves and ember resumes, and ember saves and torch resumes; those two
are compared with float32 tolerance (two implementations of the same float32 arithmetic).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

TRAIN = textwrap.dedent(
    """
    import sys, numpy as np
    lib_name, mode, path, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if lib_name == "ember":
        import ember as lib
    else:
        import torch as lib
    rng = np.random.default_rng(0)
    data = [(rng.standard_normal((16, 8)).astype(np.float32), rng.integers(0, 3, 16)) for _ in range(20)]
    init = np.load(path + ".init.npz")
    model = lib.nn.Sequential(lib.nn.Linear(8, 16), lib.nn.Tanh(), lib.nn.Linear(16, 3))
    with lib.no_grad():
        for name, param in model.named_parameters():
            param.copy_(lib.tensor(init[name]))
    optimizer = lib.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    start = 0
    if mode == "resume":
        state = lib.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start = state["step"]
    for step in range(start, start + steps):
        x, y = data[step]
        optimizer.zero_grad()
        loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
        loss.backward()
        optimizer.step()
        scheduler.step()
    if mode == "save":
        lib.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "step": start + steps}, path)
    np.savez(path + ".final.npz", **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    """
)


def _run(tmp_path, lib: str, mode: str, path: str, steps: int) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    subprocess.run([sys.executable, str(script), lib, mode, path, str(steps)], check=True, timeout=120)


def _final(path: str) -> dict:
    with np.load(path + ".final.npz") as data:
        return {k: data[k] for k in data.files}


@pytest.fixture
def initial(tmp_path):
    rng = np.random.default_rng(1)
    shapes = {"0.weight": (16, 8), "0.bias": (16,), "2.weight": (3, 16), "2.bias": (3,)}
    values = {k: (rng.standard_normal(s) * 0.3).astype(np.float32) for k, s in shapes.items()}

    def write(path: str) -> str:
        np.savez(path + ".init.npz", **values)
        return path

    return write


@pytest.mark.parametrize("saver,resumer", [("ember", "ember"), ("torch", "ember"), ("ember", "torch")])
def test_resume_in_fresh_process(tmp_path, initial, saver, resumer):
    straight = initial(str(tmp_path / "straight.pt"))
    _run(tmp_path, resumer, "straight", straight, 10)
    checkpoint = initial(str(tmp_path / "ckpt.pt"))
    _run(tmp_path, saver, "save", checkpoint, 5)
    _run(tmp_path, resumer, "resume", checkpoint, 5)
    expected, resumed = _final(straight), _final(checkpoint)
    for name in expected:
        if saver == resumer:
            np.testing.assert_array_equal(resumed[name], expected[name], err_msg=name)
        else:
            np.testing.assert_allclose(resumed[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
