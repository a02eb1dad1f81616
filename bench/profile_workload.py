"""Profile one workload's ember side with cProfile, leaving out imports and setup.

    python -m bench.profile_workload "tiny add" [--calls 20000] [--sort tottime] [--top 25] [--library torch]

`python -m cProfile bench/run.py` drowns the per-op path in import and
calibration noise; this runs only the chosen workload's callable, `--calls`
times, under the profiler, so the table shows where one op call's time goes
(dispatch, dtype rules, tensor creation, autograd recording).  cProfile's own
per-call cost inflates Python-heavy paths, so read the table for shares and
call counts, and take absolute times from `python -m bench`.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench` importable from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import discover, select  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="a substring of the workload's name; the first match is profiled")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--sort", default="tottime", help="a pstats sort key: tottime, cumtime, ncalls")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--library", choices=["ember", "torch", "numpy"], default="ember")
    args = parser.parse_args(argv)
    modules, _ = discover()
    matches = select(modules, [args.name])
    if not matches:
        print(f"no workload matches {args.name!r}", file=sys.stderr)
        return 1
    workload = matches[0]
    fn = getattr(workload, f"{args.library}_fn")
    if fn is None:
        print(f"{workload.name} has no {args.library} version", file=sys.stderr)
        return 1
    for _ in range(10):  # warm caches (lazy imports, first-call setup) outside the profile
        fn()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.calls):
        fn()
    profiler.disable()
    print(f"{workload.name}: {args.library}, {args.calls} calls")
    pstats.Stats(profiler).strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
