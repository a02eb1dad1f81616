# ruff: noqa: F401
"""ember.distributed: torch.distributed's API on real engines (MPI through mpi4py; NCCL through CuPy).

    mpirun -n 4 python train.py          # or: python -m ember.distributed.run --nproc-per-node 4 train.py
    import ember.distributed as dist
    dist.init_process_group("mpi")
    dist.all_reduce(tensor)

Layers: `_communicator` (the engine interface) <- `_mpi` / `_nccl` (engines) <- `_process_group` (groups, Work,
deadlines, checks) <- `_collectives` (torch's functions on tensors) <- ember.nn.parallel.DistributedDataParallel,
`optim.ZeroRedundancyOptimizer`, `fsdp.fully_shard`, `checkpoint`.  See docs/distributed.md.
"""

from ._collectives import (
    all_gather,
    all_gather_into_tensor,
    all_gather_object,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    irecv,
    isend,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
)
from ._communicator import Communicator
from ._process_group import (
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    destroy_process_group,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
)

# torch spells the async handle `dist.Work` and the default group `dist.group.WORLD`; both are here.
__all__ = [name for name in dir() if not name.startswith("_")]
