"""Every collective against its definition on random inputs, several dtypes, sync and async."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import check, guarded, report  # noqa: E402

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402

DTYPES = ["float32", "float64", "int64", "int32", "float16", "bfloat16", "bool", "complex64", "uint8"]


def inputs(seed: int, rank: int, shape, dtype: str) -> np.ndarray:
    """The value rank `rank` contributes: every rank can rebuild every other rank's input."""
    rng = np.random.default_rng(1000 * seed + rank)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("int64", "int32", "uint8"):
        return rng.integers(0, 5, size=shape).astype(dtype)
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)
    return rng.standard_normal(shape).astype(np.float32)  # half types are built from float32 below


def tensor(array: np.ndarray, dtype: str):
    return ember.from_numpy(np.array(array)).to(getattr(ember, dtype))


def values(t) -> np.ndarray:
    data = t._data
    return data.astype(np.float64) if data.dtype.kind == "V" or str(data.dtype) == "bfloat16" else np.array(data)


def close(got, want, dtype: str) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if dtype in ("float16", "bfloat16"):
        return got.shape == want.shape and np.allclose(got.astype(np.float64), want, rtol=2e-2, atol=2e-2)
    if dtype in ("float32", "complex64", "float64"):
        return got.shape == want.shape and np.allclose(got, want, rtol=1e-5, atol=1e-5)
    return got.shape == want.shape and np.array_equal(got, want)


def rounded(array, dtype: str):
    """What a rank's tensor holds after conversion to `dtype`."""
    return values(tensor(array, dtype))


def reduce_reference(arrays, op: str, dtype: str):
    stack = np.stack([a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
    if dtype == "bool":
        return {"SUM": stack.any(0), "MAX": stack.any(0), "MIN": stack.all(0), "PRODUCT": stack.all(0)}[op]
    result = {"SUM": stack.sum(0), "PRODUCT": stack.prod(0), "MIN": stack.min(0), "MAX": stack.max(0),
              "AVG": stack.sum(0) / len(arrays)}[op]
    if op == "AVG" and dtype in ("int64", "int32", "uint8"):
        result = stack.sum(0) // len(arrays)
    return result.astype(arrays[0].dtype) if dtype in ("int64", "int32", "uint8", "complex64") else result


def ops_for(dtype: str):
    if dtype == "bool":
        return ["SUM", "MAX", "MIN", "PRODUCT"]
    if dtype == "complex64":
        return ["SUM", "PRODUCT", "AVG"]
    return ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


def test_reductions(rank: int, world: int, async_op: bool) -> None:
    seed = 0
    for dtype in DTYPES:
        for op in ops_for(dtype):
            seed += 1
            shape = (3, 5)
            everyone = [rounded(inputs(seed, r, shape, dtype), dtype) for r in range(world)]
            want = reduce_reference(everyone, op, dtype)
            t = tensor(inputs(seed, rank, shape, dtype), dtype)
            work = dist.all_reduce(t, op=getattr(dist.ReduceOp, op), async_op=async_op)
            if async_op:
                work.wait()
                check("work.is_completed", work.is_completed())
            check(f"all_reduce {dtype} {op} async={async_op}", close(values(t), want, dtype),
                  f"{values(t)} vs {want}")
            # reduce to the last rank
            t = tensor(inputs(seed, rank, shape, dtype), dtype)
            before = values(t).copy()
            work = dist.reduce(t, dst=world - 1, op=getattr(dist.ReduceOp, op), async_op=async_op)
            if async_op:
                work.wait()
            expected = want if rank == world - 1 else before
            check(f"reduce {dtype} {op} async={async_op}", close(values(t), expected, dtype))
        # reduce_scatter_tensor / reduce_scatter with SUM
        seed += 1
        if dtype == "bool":
            continue
        full = [rounded(inputs(seed, r, (world * 2, 3), dtype), dtype) for r in range(world)]
        want = reduce_reference(full, "SUM", dtype)[rank * 2:(rank + 1) * 2]
        out = tensor(np.zeros((2, 3)), dtype)
        work = dist.reduce_scatter_tensor(out, tensor(inputs(seed, rank, (world * 2, 3), dtype), dtype),
                                          async_op=async_op)
        if async_op:
            work.wait()
        check(f"reduce_scatter_tensor {dtype}", close(values(out), want, dtype))
        out = tensor(np.zeros((2, 3)), dtype)
        mine = tensor(inputs(seed, rank, (world * 2, 3), dtype), dtype)
        dist.reduce_scatter(out, list(mine.chunk(world)), async_op=False)
        check(f"reduce_scatter {dtype}", close(values(out), want, dtype))


def test_movement(rank: int, world: int, async_op: bool) -> None:
    seed = 500
    for dtype in DTYPES:
        seed += 1
        everyone = [rounded(inputs(seed, r, (2, 3), dtype), dtype) for r in range(world)]
        mine = tensor(inputs(seed, rank, (2, 3), dtype), dtype)

        def finish(work):
            if async_op:
                work.wait()

        t = tensor(inputs(seed, rank, (2, 3), dtype), dtype)
        finish(dist.broadcast(t, src=1, async_op=async_op))
        check(f"broadcast {dtype}", close(values(t), everyone[1], dtype))
        outs = [tensor(np.zeros((2, 3)), dtype) for _ in range(world)]
        finish(dist.all_gather(outs, mine, async_op=async_op))
        check(f"all_gather {dtype}", all(close(values(o), e, dtype) for o, e in zip(outs, everyone)))
        out = tensor(np.zeros((world * 2, 3)), dtype)
        finish(dist.all_gather_into_tensor(out, mine, async_op=async_op))
        check(f"all_gather_into_tensor {dtype}", close(values(out), np.concatenate(everyone), dtype))
        outs = [tensor(np.zeros((2, 3)), dtype) for _ in range(world)] if rank == 0 else None
        finish(dist.gather(mine, outs, dst=0, async_op=async_op))
        if rank == 0:
            check(f"gather {dtype}", all(close(values(o), e, dtype) for o, e in zip(outs, everyone)))
        pieces = [tensor(inputs(seed + 50, r, (2, 3), dtype), dtype) for r in range(world)]
        t = tensor(np.zeros((2, 3)), dtype)
        finish(dist.scatter(t, pieces if rank == world - 1 else None, src=world - 1, async_op=async_op))
        check(f"scatter {dtype}", close(values(t), values(pieces[rank]), dtype))
        # all_to_all_single with uneven splits: rank r sends (s + 1) rows to rank s
        rows_from = [rank + 1] * world  # every rank s sends me (rank + 1) rows
        source = [rounded(inputs(seed + 100, r, (sum(range(1, world + 1)), 2), dtype), dtype) for r in range(world)]
        splits = list(range(1, world + 1))
        out = tensor(np.zeros((sum(rows_from), 2)), dtype)
        start = sum(splits[:rank])
        finish(dist.all_to_all_single(out, tensor(inputs(seed + 100, rank, (sum(splits), 2), dtype), dtype),
                                      output_split_sizes=rows_from, input_split_sizes=splits, async_op=async_op))
        want = np.concatenate([source[r][start:start + rank + 1] for r in range(world)])
        check(f"all_to_all_single {dtype}", close(values(out), want, dtype))


def test_noncontiguous_and_p2p(rank: int, world: int) -> None:
    base = ember.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) + rank)
    view = base.t()  # non-contiguous: results must reach the base
    dist.all_reduce(view)
    want = sum(np.arange(12, dtype=np.float32).reshape(3, 4) + r for r in range(world))
    check("all_reduce non-contiguous", np.array_equal(base.numpy(), want))
    # ring of send/recv, and isend/irecv
    t = ember.full((4,), float(rank))
    out = ember.zeros(4)
    right, left = (rank + 1) % world, (rank - 1) % world
    send_work = dist.isend(t, dst=right)
    receive_work = dist.irecv(out, src=left)
    send_work.wait()
    receive_work.wait()
    check("isend/irecv ring", np.array_equal(out.numpy(), np.full(4, left, np.float32)))
    if rank == 0:
        got = ember.zeros(4)
        senders = {dist.recv(got) for _ in range(world - 1)}
        check("recv any source", senders == set(range(1, world)), str(senders))
    else:
        dist.send(ember.full((4,), float(rank)), dst=0)
    # objects
    objects = [{"rank": rank, "x": [1, 2]}, "text"] if rank == 0 else [None, None]
    dist.broadcast_object_list(objects, src=0)
    check("broadcast_object_list", objects == [{"rank": 0, "x": [1, 2]}, "text"])
    gathered = [None] * world
    dist.all_gather_object(gathered, ("r", rank, "x" * rank))
    check("all_gather_object", gathered == [("r", r, "x" * r) for r in range(world)])
    # subgroup of the even ranks
    evens = dist.new_group([r for r in range(world) if r % 2 == 0])
    t = ember.full((2,), float(rank))
    dist.all_reduce(t, group=evens)
    if rank % 2 == 0:
        check("new_group all_reduce", t.tolist() == [float(sum(range(0, world, 2)))] * 2)
        check("new_group size", dist.get_world_size(evens) == len(range(0, world, 2)))
        dist.broadcast(t, src=0, group=evens)
    else:
        check("outside new_group unchanged", t.tolist() == [float(rank)] * 2)
    dist.barrier()
    work = dist.barrier(async_op=True)
    work.wait()
    check("async barrier", work.is_completed())
    # shape mismatch must name the shapes
    try:
        dist.all_reduce(ember.zeros(3 + rank))
        check("shape mismatch raises", False)
    except RuntimeError as error:
        check("shape mismatch message", "shapes differ" in str(error) and "[3]" in str(error)
              and "[4]" in str(error), str(error))
    # env set for every rank
    check("env RANK", os.environ["RANK"] == str(rank) and os.environ["WORLD_SIZE"] == str(world)
          and "LOCAL_RANK" in os.environ and "MASTER_ADDR" in os.environ)


def main() -> None:
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    for async_op in (False, True):
        guarded("reductions", test_reductions, rank, world, async_op)
        guarded("movement", test_movement, rank, world, async_op)
    guarded("misc", test_noncontiguous_and_p2p, rank, world)
    report()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
