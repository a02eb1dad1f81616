"""Helpers for the program tests: run a script under real torch and under `python -m ember.run`, parse losses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"

_LOSS = re.compile(r"\bloss ([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)")


def environment() -> dict:
    """The child's environment: ember importable from this checkout, one BLAS thread (steadier, and fair)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPOSITORY), env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    return env


def command(script: Path | str, args=(), *, ember: bool) -> list[str]:
    prefix = [sys.executable, "-m", "ember.run"] if ember else [sys.executable]
    return prefix + [str(script), *map(str, args)]


def run_both(script: Path | str, args=(), timeout: float = 300) -> tuple[str, str]:
    """(torch's stdout, ember's stdout), the two runs side by side in parallel; a failing run fails the test."""
    processes = {
        name: subprocess.Popen(
            command(script, args, ember=name == "ember"),
            cwd=str(Path(script).parent),
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("torch", "ember")
    }
    outputs = {}
    for name, process in processes.items():
        stdout, stderr = process.communicate(timeout=timeout)
        if process.returncode != 0:
            raise AssertionError(f"{name} run of {script} failed ({process.returncode}):\n{stderr[-4000:]}")
        outputs[name] = stdout
    return outputs["torch"], outputs["ember"]


def losses(output: str) -> list[float]:
    """Every number printed after the word 'loss', in order."""
    return [float(match) for match in _LOSS.findall(output)]
