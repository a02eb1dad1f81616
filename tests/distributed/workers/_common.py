"""Shared by the worker scripts: collect failed checks on every rank, report them from rank 0."""

from __future__ import annotations

import traceback

import ember.distributed as dist

failures: list[str] = []
checks = [0]


def check(name: str, condition: bool, detail: str = "") -> None:
    checks[0] += 1
    if not condition:
        failures.append(f"rank {dist.get_rank()}: {name} {detail}")


def guarded(name: str, function, *args) -> None:
    """Run one group of checks; an exception becomes a failure (the job must still reach report())."""
    try:
        function(*args)
    except Exception:
        failures.append(f"rank {dist.get_rank()}: {name} raised\n{traceback.format_exc()}")


def report() -> None:
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, (checks[0], failures))
    if dist.get_rank() == 0:
        total = sum(count for count, _ in everyone)
        problems = [line for _, lines in everyone for line in lines]
        if problems:
            print("FAILED:\n" + "\n".join(problems))
        else:
            print(f"ALL OK {total} checks")
    dist.barrier()
