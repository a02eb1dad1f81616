"""A rank that raises, exits or hangs: the job must end quickly with a clear error, never hang.

    faults.py raise | exit | hang
"""

from __future__ import annotations

import datetime
import os
import sys
import time

import ember
import ember.distributed as dist

mode = sys.argv[1]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=3))
rank = dist.get_rank()
t = ember.ones(4)
dist.all_reduce(t)  # everyone is up
if rank == 1:
    if mode == "raise":
        raise ValueError("rank 1 failed on purpose")
    if mode == "exit":
        sys.stdout.flush()
        os._exit(3)
    if mode == "hang":
        time.sleep(30)
dist.all_reduce(t)
print(f"rank {rank} finished: should not happen", flush=True)
