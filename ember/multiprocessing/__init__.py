"""ember.multiprocessing (torch.multiprocessing): Python's multiprocessing, with tensors shared, not copied.

Everything of the standard `multiprocessing` is re-exported (Process, Queue,
Pool, get_context, set_start_method, ...).  Importing this module registers
ember's tensor reducer with multiprocessing's pickler (reductions.py), so a
tensor put on any queue or passed to a spawned Process moves into shared
memory and the receiver maps the same memory (NOTE [ Shared tensors ] in
_shared_storage.py).  `spawn` runs fn(rank, *args) in several processes with
torch's error reporting (spawn.py).
"""

from __future__ import annotations

import multiprocessing
from multiprocessing import *  # noqa: F403 - torch.multiprocessing re-exports the whole module

from ._shared_storage import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .reductions import init_reductions
from .spawn import (
    ProcessContext,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "SpawnContext", "ProcessRaisedException",
           "ProcessExitedException", "init_reductions"]
__all__ += multiprocessing.__all__  # type: ignore[attr-defined]

init_reductions()
