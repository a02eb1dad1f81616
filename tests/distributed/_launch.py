"""Run a worker script under a real MPI launcher and return what it printed.

Tests here start real MPI jobs (mpirun -n 2 / -n 4 --oversubscribe), each bounded by a timeout; they skip
cleanly where mpirun or mpi4py is missing.  Starting ranks costs about a second, so each worker script
batches many checks into one job.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mpi_missing() -> str | None:
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (pip install 'ember[distributed]')"
    if shutil.which("mpirun") is None and shutil.which("mpiexec") is None:
        return "no mpirun on PATH"
    return None


requires_mpi = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


def launch(worker: str, ranks: int, *args: str, timeout: float = 60, env: dict | None = None):
    """(returncode, combined output) of `python -m ember.distributed.run --nproc-per-node ranks workers/worker`."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = ROOT + os.pathsep + environment.get("PYTHONPATH", "")
    environment.setdefault("OMP_NUM_THREADS", "1")
    environment.setdefault("OPENBLAS_NUM_THREADS", "1")
    environment.update(env or {})
    command = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks),
               os.path.join(WORKERS, worker), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment, cwd=ROOT)
    except subprocess.TimeoutExpired as error:
        output = (error.stdout or b"").decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        raise AssertionError(f"{worker} on {ranks} ranks did not finish within {timeout}s:\n{output}") from None
    return done.returncode, done.stdout + done.stderr


def expect_ok(worker: str, ranks: int, *args: str, timeout: float = 60) -> str:
    code, output = launch(worker, ranks, *args, timeout=timeout)
    assert code == 0 and "ALL OK" in output, f"{worker} on {ranks} ranks failed (exit {code}):\n{output[-6000:]}"
    return output
