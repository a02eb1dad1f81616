"""Run every benchmark module's workloads and print one table of ember/torch ratios.

    python bench/run.py [--quick] [--only NAME ...] [--list] [--threads N]
    python -m bench     [same options]

A benchmark module is any module in bench/ (other than the harness files) with
a module-level WORKLOADS list of `bench.common.Workload`; later issues add
nn/optim/data modules just by dropping a file here.  Discovery imports each
module, so a module that fails to import (its ember feature not written yet)
is reported and skipped rather than stopping the run.

Thread counts stay at the libraries' defaults (what users get) unless
`--threads N` is given; on a shared or busy machine `--threads 1` compares
single-thread kernels, which is the steadier number there.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

HARNESS_MODULES = {"common", "run", "profile_workload", "__main__"}


def discover() -> tuple[list[tuple[str, list]], list[str]]:
    """(module name, WORKLOADS) for each benchmark module, and a note per module that failed to import."""
    import bench

    found, failures = [], []
    for info in sorted(pkgutil.iter_modules(bench.__path__), key=lambda m: m.name):
        if info.name in HARNESS_MODULES or info.name.startswith("_"):
            continue
        try:
            module = importlib.import_module(f"bench.{info.name}")
        except Exception as error:  # noqa: BLE001 - one broken module must not hide the others' numbers
            failures.append(f"bench.{info.name}: import failed ({type(error).__name__}: {error})")
            continue
        workloads = getattr(module, "WORKLOADS", None)
        if workloads is not None:
            found.append((info.name, list(workloads)))
    return found, failures


def select(modules, only: list[str] | None):
    """The workloads to run: all, or those whose module name equals, or whose name contains, an --only value."""
    chosen = []
    for module_name, workloads in modules:
        for workload in workloads:
            if not only or any(o == module_name or o.lower() in workload.name.lower() for o in only):
                chosen.append(workload)
    return chosen


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 10 ms blocks instead of 7 of 50 ms")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="a module name (ops) or a substring of workload names (matmul); repeatable",
    )
    parser.add_argument("--rounds", type=int, help="rounds per workload (overrides --quick)")
    parser.add_argument("--min-time", type=float, help="seconds per timed block (overrides --quick)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--threads", type=int, help="set torch's and NumPy's BLAS thread counts (default: theirs)")
    return parser.parse_args(argv)


def set_threads(count: int) -> None:
    """Thread counts for both libraries; NumPy's BLAS reads its variables at import, so call this before that."""
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(count)
    if "numpy" in sys.modules:
        print("warning: numpy was imported before --threads; its BLAS keeps its thread count", file=sys.stderr)
    import torch

    torch.set_num_threads(count)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        set_threads(args.threads)
    # Imported here, after --threads, because the harness and the benchmark modules import NumPy.
    from bench.common import Result, load_average, load_line, print_table, run_workload

    load_at_start = load_average()
    rounds = args.rounds or (3 if args.quick else 7)
    min_time = args.min_time or (0.01 if args.quick else 0.05)
    modules, failures = discover()
    workloads = select(modules, args.only)
    for failure in failures:
        print(failure, file=sys.stderr)
    if args.list:
        for workload in workloads:
            print(workload.name)
        return 0
    if not workloads:
        print(f"no workload matches {args.only}", file=sys.stderr)
        return 1
    results: list[Result] = []
    start = time.perf_counter()
    for workload in workloads:
        print(f"  timing {workload.name} ...", file=sys.stderr, flush=True)
        results.append(run_workload(workload, rounds=rounds, min_time=min_time))
    print_table(results, [load_line(load_at_start, load_average())])
    print(
        f"{len(results)} workloads, {rounds} rounds of >= {min_time * 1000:g} ms blocks, "
        f"{time.perf_counter() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
