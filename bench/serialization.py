"""Checkpoint benchmarks: save and load time of a large state dict, ember vs torch, and their peak memory.

    python -m bench --only serialization          # times (the harness's ratio table)
    python -m bench.serialization [--mb 500]      # times and peak memory, one fresh process per case

The state dict is a transformer-like stack of float32 matrices and vectors
totalling EMBER_BENCH_SERIALIZATION_MB megabytes (500 by default; set it lower
for a quick look).  Inputs are built on the first call, not at import, so
listing or running other benchmarks does not allocate them.

What to expect: a save is a pickle of a few kilobytes plus one write per
storage, so both libraries should run at disk (here: page cache) speed;
a plain load reads every storage into fresh memory (peak ~ the checkpoint's
size); an mmap load maps the file and should take milliseconds and almost no
memory until tensors are touched.  Loads read a file the save just wrote, so
they measure the page cache, not the disk.

Peak memory is the growth of the process's resident set during the call
(Linux: VmHWM after resetting it through /proc/self/clear_refs), measured in a
fresh subprocess per case so one case's freed memory cannot hide another's.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import ember

from .common import Workload

MEGABYTES = float(os.environ.get("EMBER_BENCH_SERIALIZATION_MB", "500"))


@functools.cache
def _directory() -> str:
    """A scratch folder for the checkpoints, made on first use and removed at exit."""
    path = tempfile.mkdtemp(prefix="ember-bench-serialization-")
    atexit.register(shutil.rmtree, path, True)
    return path


def _state_dict(lib, megabytes: float) -> dict:
    """Layers of (width x width) weights and (width,) biases, ~`megabytes` in all, float32, the same values for
    both libraries (drawn by NumPy) so the harness can check that the loads agree."""
    width = 1024
    per_layer = (width * width + width) * 4
    layers = max(1, int(megabytes * 1e6 // per_layer))
    generator = np.random.default_rng(0)
    state = {}
    for index in range(layers):
        state[f"layers.{index}.weight"] = lib.from_numpy(generator.random((width, width), dtype=np.float32))
        state[f"layers.{index}.bias"] = lib.from_numpy(generator.random(width, dtype=np.float32))
    return state


@functools.cache
def _prepared(library: str) -> tuple[dict, str]:
    """The library's state dict and the path of a checkpoint of it (built once, on first use)."""
    lib = ember if library == "ember" else torch
    state = _state_dict(lib, MEGABYTES)
    path = os.path.join(_directory(), f"{library}.pt")
    lib.save(state, path)
    return state, path


def _save(library: str):
    def run():
        state, _ = _prepared(library)
        (ember if library == "ember" else torch).save(state, os.path.join(_directory(), f"{library}-timed.pt"))

    return run


def _load(library: str, mmap: bool):
    def run():
        _, path = _prepared(library)
        if library == "ember":
            return ember.load(path, mmap=mmap)["layers.0.bias"]
        return torch.load(path, mmap=mmap, weights_only=True)["layers.0.bias"]

    return run


WORKLOADS = [
    Workload(f"save state dict {MEGABYTES:g} MB", _save("ember"), _save("torch")),
    Workload(f"load state dict {MEGABYTES:g} MB", _load("ember", False), _load("torch", False)),
    Workload(f"load state dict {MEGABYTES:g} MB mmap", _load("ember", True), _load("torch", True)),
]


# ---------------------------------------------------------------- peak memory, one process per case


def _status_kilobytes(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _case(library: str, operation: str) -> dict:
    """Run one case in this process: (seconds, peak resident growth in MB) of save, load or load-mmap."""
    state, path = _prepared(library)
    lib = ember if library == "ember" else torch
    if operation != "save":
        del state
        _prepared.cache_clear()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # reset the peak (VmHWM) to the current resident size
    before = _status_kilobytes("VmRSS")
    start = time.perf_counter()
    if operation == "save":
        lib.save(state, os.path.join(_directory(), f"{library}-case.pt"))
    elif library == "ember":
        result = ember.load(path, mmap=operation == "load-mmap")
    else:
        result = torch.load(path, mmap=operation == "load-mmap", weights_only=True)
    seconds = time.perf_counter() - start
    peak = _status_kilobytes("VmHWM")
    if operation != "save":
        del result
    return {"seconds": seconds, "peak_mb": (peak - before) / 1024}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.serialization")
    parser.add_argument("--mb", type=float, default=MEGABYTES, help="state dict size in MB")
    parser.add_argument("--case", nargs=2, metavar=("LIBRARY", "OPERATION"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(_case(*args.case)))
        return 0
    environment = dict(os.environ, EMBER_BENCH_SERIALIZATION_MB=str(args.mb))
    print(f"state dict of {args.mb:g} MB (float32); seconds and peak resident growth, fresh process per case")
    print(f"{'operation':<12} {'ember s':>9} {'torch s':>9} {'ratio':>7} {'ember MB':>9} {'torch MB':>9}")
    for operation in ("save", "load", "load-mmap"):
        row = {}
        for library in ("ember", "torch"):
            output = subprocess.run(
                [sys.executable, "-m", "bench.serialization", "--case", library, operation],
                env=environment,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            row[library] = json.loads(output.strip().splitlines()[-1])
        ratio = row["ember"]["seconds"] / max(row["torch"]["seconds"], 1e-9)
        print(
            f"{operation:<12} {row['ember']['seconds']:>9.3f} {row['torch']['seconds']:>9.3f} {ratio:>7.2f} "
            f"{row['ember']['peak_mb']:>9.1f} {row['torch']['peak_mb']:>9.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
