"""Distributed benchmarks: all-reduce bandwidth and DDP step time on real MPI ranks.

    python -m bench.distributed            # quick: 2 ranks (runs itself under mpirun)
    python -m bench.distributed --ranks 4

What it prints:
- all_reduce: ember's `dist.all_reduce` (with and without the signature check, NOTE [ Signature check ])
  against raw mpi4py `Allreduce(IN_PLACE)` on the same NumPy buffers; microseconds and bus bandwidth
  (2 (N-1)/N * bytes / time, the usual all-reduce figure).
- DDP: seconds per training step of an MLP on N ranks (each with the per-rank batch) against one process
  on the per-rank batch and on the combined batch; then the share of gradient communication hidden behind
  backward: 1 - (time waiting for all-reduces at the end of backward) / (time the same all-reduces take
  alone), with overlap (buckets launched from the post-accumulate-grad hooks) and without (all launched at
  the end of backward).
Like the rest of bench/, nothing is asserted; no torch column: torch's gloo is not the engine compared.
WORKLOADS is empty so bench/run.py shows no row for it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

WORKLOADS: list = []

HIDDEN, BATCH, STEPS = 1024, 64, 12


def _model():
    import ember
    from ember import nn

    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(256, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))


def _step_time(model, optimizer, batch: int) -> float:
    import ember

    x, y = ember.randn(batch, 256), ember.randn(batch, 10)
    times = []
    for _ in range(STEPS):
        if ember.distributed.is_initialized():
            ember.distributed.barrier()  # steps start together, so the wait measures communication, not skew
        start = time.perf_counter()
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:])


def single_process(ranks: int) -> None:
    import ember

    model = _model()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.01)
    per_rank = _step_time(model, optimizer, BATCH)
    combined = _step_time(model, optimizer, BATCH * ranks)
    params = sum(p.numel() for p in model.parameters())
    print(f"DDP model: {params / 1e6:.2f} M parameters ({params * 4 / 2**20:.1f} MiB of float32 gradients)")
    print(f"1 process, batch {BATCH}:{'':14} {per_rank * 1e3:8.1f} ms/step")
    print(f"1 process, batch {BATCH * ranks} (combined):{'':3} {combined * 1e3:8.1f} ms/step")


def _time(function, repeat: int) -> float:
    import ember.distributed as dist

    samples = []
    for _ in range(repeat):
        dist.barrier()
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def allreduce_table() -> None:
    from mpi4py import MPI

    import ember
    import ember.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        print(f"\nall_reduce on {world} ranks (float32, median):")
        print(f"{'size':>9} {'raw mpi4py':>14} {'ember':>14} {'ember, no check':>16}   bus GB/s raw / ember")
    for elements in (256, 16384, 262144, 4194304):
        tensor = ember.zeros(elements)
        array = tensor._data
        repeat = 30 if elements < 1_000_000 else 8
        raw = _time(lambda: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, array), repeat)
        checked = _time(lambda: dist.all_reduce(tensor), repeat)
        os.environ["EMBER_DISTRIBUTED_DEBUG"] = "OFF"
        unchecked = _time(lambda: dist.all_reduce(tensor), repeat)
        del os.environ["EMBER_DISTRIBUTED_DEBUG"]
        if rank == 0:
            size = elements * 4
            bus = 2 * (world - 1) / world * size / 1e9
            label = f"{size / 1024:.0f} KiB" if size < 2**20 else f"{size / 2**20:.0f} MiB"
            print(f"{label:>9} {raw * 1e6:11.0f} us {checked * 1e6:11.0f} us {unchecked * 1e6:13.0f} us"
                  f"   {bus / raw:6.2f} / {bus / checked:.2f}")


def ddp_table() -> None:
    import ember
    import ember.distributed as dist
    from ember.distributed import _process_group as pg
    from ember.nn.parallel import DistributedDataParallel

    rank, world = dist.get_rank(), dist.get_world_size()
    waited = [0.0]
    original = pg.poll

    def timed_poll(requests, name, timeout):
        start = time.perf_counter()
        original(requests, name, timeout)
        if name == "DistributedDataParallel gradient all_reduce":
            waited[0] += time.perf_counter() - start

    pg.poll = timed_poll
    configurations = {"overlap off": (False, False), "overlap on": (True, False),
                      "overlap on + progress thread": (True, True)}
    try:
        results = {}
        for label, (overlap, thread) in configurations.items():
            ddp = DistributedDataParallel(_model())
            ddp._overlap = overlap
            ddp._use_progress_thread = thread
            optimizer = ember.optim.SGD(ddp.parameters(), lr=0.01)
            waited[0] = 0.0
            step = _step_time(ddp, optimizer, BATCH)
            exposed = waited[0] / STEPS
            communicator = ddp.process_group.communicator

            def reduce_all():
                original([communicator.allreduce(b.flat, "sum") for b in ddp._buckets], "bench", pg.world().timeout)

            alone = _time(reduce_all, 8)
            results[label] = (step, exposed, alone, len(ddp._buckets))
    finally:
        pg.poll = original
    if rank == 0:
        for label, (step, exposed, alone, buckets) in results.items():
            hidden = max(0.0, 1 - exposed / alone) if alone > 0 else 0.0
            print(f"{world} ranks DDP, batch {BATCH}/rank, {label:28}: {step * 1e3:6.1f} ms/step; all-reduce alone "
                  f"{alone * 1e3:5.1f} ms, waited at end of backward {exposed * 1e3:5.1f} ms -> {hidden:4.0%} hidden "
                  f"({buckets} buckets)")


def ranked_main() -> None:
    import ember.distributed as dist

    dist.init_process_group("mpi")
    allreduce_table()
    if dist.get_rank() == 0:
        print()
    ddp_table()
    dist.destroy_process_group()


def main() -> None:
    if "--ranked" in sys.argv:
        ranked_main()
        return
    ranks = int(sys.argv[sys.argv.index("--ranks") + 1]) if "--ranks" in sys.argv else 2
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    single_process(ranks)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(ranks),
                    os.path.abspath(__file__), "--ranked"], env=env, check=False, timeout=600)


if __name__ == "__main__":
    main()
