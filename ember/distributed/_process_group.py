"""Process groups, Work handles, deadlines and the cross-rank signature check.

NOTE [ Deadlines ]
Every operation is started non-blocking on the communicator and then polled
(`Request.test`) until it finishes or the group's timeout passes; then a
RuntimeError names the operation, the rank and the timeout.  So a peer that
raised, hung or died never leaves the others blocked forever: they fail within
`timeout` (default 10 minutes, as torch).  On top of that, an uncaught
exception on any rank calls MPI_Abort (see `_install_abort_hook`), and mpirun
ends the whole job when one rank exits non-zero, so in practice failures end
the job at once; the deadline is the guarantee behind those two.
Blocking setup calls (MPI_Init, communicator splits in new_group) are not
deadline-guarded.

NOTE [ Signature check ]
Before each public collective, ranks exchange a 12-int64 signature
(collective name, dtype, ndim, first 8 dims) in one small allgather and raise
naming every rank's shape if they differ: with MPI a mismatch would otherwise
corrupt memory, truncate or hang.  Cost: one extra latency-bound allgather per
collective (a few microseconds on one machine; see bench/distributed.py).
DDP and FSDP talk to the communicator directly and check their layouts once at
construction.  Turn the check off with EMBER_DISTRIBUTED_DEBUG=OFF (or
TORCH_DISTRIBUTED_DEBUG=OFF); torch itself checks only in DETAIL mode.
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import zlib

from .._backends import numpy as np
from ._communicator import DoneRequest

DEFAULT_TIMEOUT = datetime.timedelta(minutes=10)


class ReduceOp:
    """torch.distributed.ReduceOp: SUM, AVG, PRODUCT, MIN, MAX (also usable as ReduceOp.SUM instances)."""

    class RedOpType:
        def __init__(self, name: str) -> None:
            self.name = name

        def __repr__(self) -> str:
            return f"<RedOpType.{self.name}: {self.name}>"

    SUM = RedOpType("SUM")
    AVG = RedOpType("AVG")
    PRODUCT = RedOpType("PRODUCT")
    MIN = RedOpType("MIN")
    MAX = RedOpType("MAX")
    BAND = RedOpType("BAND")
    BOR = RedOpType("BOR")
    BXOR = RedOpType("BXOR")


class ProcessGroup:
    """A group of ranks and its communicator.  `ranks` are global ranks, in group-rank order."""

    def __init__(self, communicator, ranks: list[int], timeout: datetime.timedelta, backend: str) -> None:
        self.communicator = communicator  # None on a rank outside the group
        self.ranks = ranks
        self.timeout = timeout
        self.backend = backend

    def rank(self) -> int:
        return self.communicator.rank if self.communicator is not None else -1

    def size(self) -> int:
        return len(self.ranks)

    def name(self) -> str:
        return self.backend

    def __repr__(self) -> str:
        return f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks})"


class _State:
    world: ProcessGroup | None = None
    groups: list = []
    previous_excepthook = None


state = _State()


class group:
    """torch.distributed.group: `group.WORLD` is the default group (None until init)."""

    WORLD = None


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


class Work:
    """An operation in flight (torch's Work): wait() blocks until done or the timeout, is_completed() polls.

    `finish` runs once, after the transfer, on the caller's thread: it copies results back into tensors
    (non-contiguous outputs, float16 via float32, list outputs) and applies AVG's division.
    """

    def __init__(self, requests, name: str, group: ProcessGroup, finish=None, result=None) -> None:
        self._requests = requests
        self._name = name
        self._group = group
        self._finish = finish
        self._result = result
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and all(request.test() for request in self._requests):
            self._complete()
        return self._done

    def _complete(self) -> None:
        self._done = True
        if self._finish is not None:
            finish, self._finish = self._finish, None
            value = finish()
            if value is not None:
                self._result = value

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        if self._done:
            return True
        timeout = self._group.timeout if timeout is None else timeout
        poll(self._requests, self._name, timeout)
        self._complete()
        return True

    def result(self):
        return self._result

    def is_success(self) -> bool:
        return self._done

    def exception(self):
        return None

    def __repr__(self) -> str:
        return f"<Work {self._name} {'done' if self._done else 'pending'}>"


def poll(requests, name: str, timeout: datetime.timedelta) -> None:
    """Drive `requests` until all finish; raise RuntimeError naming `name` when `timeout` passes first.

    The first ~200 polls spin (small messages finish in microseconds); after that the loop sleeps, growing
    to 1 ms, so ranks oversubscribed on few cores leave the CPU to the peer they are waiting for.
    """
    pending = [request for request in requests if not request.test()]
    if not pending:
        return
    deadline = time.monotonic() + timeout.total_seconds()
    spins = 0
    pause = 2e-5
    while pending:
        pending = [request for request in pending if not request.test()]
        if not pending:
            return
        if time.monotonic() > deadline:
            rank = state.world.rank() if state.world is not None else "?"
            raise RuntimeError(
                f"ember.distributed: {name} timed out after {timeout} on rank {rank}: a peer rank did not join "
                f"(it may have died, raised, hung, or called a different collective). The process group "
                f"timeout is set by init_process_group(timeout=...)."
            )
        spins += 1
        if spins > 200:
            time.sleep(pause)
            pause = min(pause * 2, 2e-4)


def run(requests, name: str, group: ProcessGroup, async_op: bool, finish=None, result=None):
    """Return a Work (async_op) or wait for the requests here and return None."""
    work = Work(requests, name, group, finish, result)
    if async_op:
        return work
    work.wait()
    return None


# ---------------------------------------------------------------------------------------- signature check
_NAMES = ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
          "reduce_scatter_tensor", "gather", "scatter", "all_to_all_single", "all_to_all", "barrier")
_NAME_CODES = {zlib.crc32(name.encode()) & 0x7FFFFFFF: name for name in _NAMES}
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
           "complex64", "complex128")
_MAX_DIMS = 8


def checks_enabled() -> bool:
    level = os.environ.get("EMBER_DISTRIBUTED_DEBUG", os.environ.get("TORCH_DISTRIBUTED_DEBUG", "INFO"))
    return level.upper() != "OFF"


def _describe(signature) -> str:
    name = _NAME_CODES.get(int(signature[0]), "?")
    dtype = _DTYPES[int(signature[1])] if 0 <= signature[1] < len(_DTYPES) else "none"
    ndim = int(signature[2])
    dims = [int(d) for d in signature[3:3 + min(ndim, _MAX_DIMS)]]
    shape = "[" + ", ".join(str(d) for d in dims) + (", ..." if ndim > _MAX_DIMS else "") + "]"
    return f"{name}({dtype}{shape if ndim >= 0 else ''})"


_signatures: dict = {}  # (name, dtype, shape) -> signature array: built once per distinct call (never written)


def _signature(name: str, tensor):
    signature = np.full(3 + _MAX_DIMS + 1, -1, dtype=np.int64)
    signature[0] = zlib.crc32(name.encode()) & 0x7FFFFFFF
    if tensor is not None:
        shape = tuple(tensor.shape)
        signature[1] = _DTYPES.index(tensor.dtype.name)
        signature[2] = len(shape)
        signature[3:3 + min(len(shape), _MAX_DIMS)] = shape[:_MAX_DIMS]
        signature[-1] = zlib.crc32(repr(shape).encode()) & 0x7FFFFFFF
    return signature


def check_signature(group: ProcessGroup, name: str, tensor=None) -> None:
    """Raise RuntimeError naming every rank's call if the ranks of `group` disagree.  NOTE [ Signature check ]"""
    communicator = group.communicator
    if communicator is None or communicator.size == 1 or not checks_enabled():
        return
    key = (name, None) if tensor is None else (name, tensor.dtype.name, tuple(tensor.shape))
    signature = _signatures.get(key)
    if signature is None:
        signature = _signature(name, tensor)
        if len(_signatures) < 4096:
            _signatures[key] = signature
    everyone = np.empty((communicator.size, signature.size), dtype=np.int64)
    poll([communicator.allgather(signature, everyone)], f"{name} (signature check)", group.timeout)
    if (everyone == everyone[0]).all():
        return
    calls = ", ".join(f"rank {group.ranks[r]} called {_describe(everyone[r])}" for r in range(communicator.size))
    if len(set(everyone[:, 0].tolist())) > 1:
        problem = "ranks called different collectives"
    elif len(set(everyone[:, 1].tolist())) > 1:
        problem = "tensor dtypes differ across ranks"
    else:
        problem = "tensor shapes differ across ranks"
    raise RuntimeError(f"ember.distributed.{name}: {problem}: {calls}")


# ---------------------------------------------------------------------------------------- setup
def _environment_rank(names) -> int | None:
    for variable in names:
        if variable in os.environ:
            return int(os.environ[variable])
    return None


def export_launch_environment(rank: int, world_size: int) -> None:
    """Set torchrun's variables (RANK, LOCAL_RANK, ...) from the MPI launcher's, where they are missing."""
    local_rank = _environment_rank(("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                    "PMI_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK"))
    local_size = _environment_rank(("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                    "PMI_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"))
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world_size))
    os.environ.setdefault("LOCAL_RANK", str(rank if local_rank is None else local_rank))
    os.environ.setdefault("LOCAL_WORLD_SIZE", str(world_size if local_size is None else local_size))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")


def _install_abort_hook(communicator) -> None:
    """An uncaught exception on one rank prints its traceback and aborts the whole MPI job (mpi4py's `-m mpi4py`
    does the same), so the other ranks stop at once instead of waiting out the timeout.  Opt out with
    EMBER_DISTRIBUTED_ABORT_ON_EXCEPTION=0."""
    if os.environ.get("EMBER_DISTRIBUTED_ABORT_ON_EXCEPTION", "1") == "0":
        return
    previous = sys.excepthook
    state.previous_excepthook = previous

    def abort_on_exception(kind, value, traceback) -> None:
        previous(kind, value, traceback)
        sys.stderr.write(f"ember.distributed: rank {communicator.rank} raised {kind.__name__}; aborting the job\n")
        sys.stderr.flush()
        communicator.abort(1)

    sys.excepthook = abort_on_exception


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None, device_id=None) -> None:
    """Join the job's default process group (torch.distributed.init_process_group).

    backend "mpi" (the default on CPUs; "gloo" is accepted as an alias) or "nccl" (needs CuPy and a GPU).
    MPI does the rendezvous, so `init_method`/`store` are accepted and unused; `rank`/`world_size`, when
    given, must agree with what the MPI launcher says.
    """
    if state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = (backend or "mpi").lower()
    if backend.startswith("cpu:"):
        backend = backend.split(",")[0].split(":")[1]
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    if backend == "nccl":
        from ._nccl import NCCLCommunicator

        communicator = NCCLCommunicator()
    elif backend in ("mpi", "gloo"):
        from ._mpi import MPICommunicator

        communicator = MPICommunicator.world()
    else:
        raise ValueError(f"Invalid backend: '{backend}' (ember supports 'mpi', and 'nccl' with CuPy on a GPU)")
    if world_size not in (-1, None) and world_size != communicator.size:
        raise ValueError(f"init_process_group: world_size={world_size} but the MPI job has {communicator.size} ranks "
                         f"(launch with mpirun -n {world_size} or python -m ember.distributed.run)")
    if rank not in (-1, None) and rank != communicator.rank:
        raise ValueError(f"init_process_group: rank={rank} but MPI assigned rank {communicator.rank}")
    export_launch_environment(communicator.rank, communicator.size)
    state.world = ProcessGroup(communicator, list(range(communicator.size)), timeout, backend)
    state.groups = [state.world]
    group.WORLD = GroupMember.WORLD = state.world
    _install_abort_hook(communicator)


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    if group is None or group is state.world:
        for existing in state.groups:
            if existing is not state.world and existing.communicator is not None:
                existing.communicator.free()
        state.world = None
        state.groups = []
        globals()["group"].WORLD = GroupMember.WORLD = None
        if state.previous_excepthook is not None:
            sys.excepthook = state.previous_excepthook
            state.previous_excepthook = None
        return
    if group.communicator is not None:
        group.communicator.free()
    if group in state.groups:
        state.groups.remove(group)


def is_initialized() -> bool:
    return state.world is not None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_nccl_available() -> bool:
    from ._nccl import unavailable_reason

    return unavailable_reason() is None


def is_gloo_available() -> bool:
    return False


def world() -> ProcessGroup:
    if state.world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return state.world


def resolve(group: ProcessGroup | None) -> ProcessGroup:
    return world() if group is None else group


def new_group(ranks=None, timeout: datetime.timedelta | None = None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None) -> ProcessGroup:
    """A group over `ranks` (global ranks; sorted, as torch).  Every rank of the world must call it."""
    parent = world()
    ranks = sorted(range(parent.size()) if ranks is None else {int(r) for r in ranks})
    for r in ranks:
        if not 0 <= r < parent.size():
            raise ValueError(f"new_group: rank {r} is out of range for a world of {parent.size()}")
    communicator = parent.communicator.split(ranks)
    created = ProcessGroup(communicator, ranks, parent.timeout if timeout is None else timeout, parent.backend)
    state.groups.append(created)
    return created


def get_rank(group: ProcessGroup | None = None) -> int:
    return resolve(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    return resolve(group).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    return resolve(group).backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    return list(resolve(group).ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    return resolve(group).ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    ranks = resolve(group).ranks
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def group_root(group: ProcessGroup, global_rank, group_rank, what: str) -> int:
    """torch's src/dst (global rank) or group_src/group_dst (rank in the group) -> rank in the group."""
    if global_rank is not None and group_rank is not None:
        raise ValueError(f"Can not specify both {what} and group_{what}")
    if group_rank is not None:
        return group_rank
    return get_group_rank(group, 0 if global_rank is None else global_rank)


def done_request():
    return DoneRequest()
