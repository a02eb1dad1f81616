"""DDP and ZeRO on N ranks against one process on the combined batch: after 20 steps the parameters match."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import check, guarded, report  # noqa: E402

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember import nn  # noqa: E402
from ember.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS = 20
BATCH = 24
rng = np.random.default_rng(7)
X = rng.standard_normal((STEPS, BATCH, 8)).astype(np.float32)
Y = rng.standard_normal((STEPS, BATCH, 4)).astype(np.float32)


class WithUnused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 16)
        self.unused = nn.Linear(16, 16)  # never called
        self.second = nn.Linear(16, 4)
        self.register_buffer("counter", ember.zeros(1))

    def forward(self, x):
        return self.second(self.first(x).tanh())


def make_model(kind: str):
    ember.manual_seed(1234 + dist.get_rank())  # different on every rank: DDP must broadcast rank 0's
    if kind == "unused":
        return WithUnused()
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def clone(model, kind):
    copy = make_model(kind)
    copy.load_state_dict(model.state_dict())
    return copy


def my_rows(world: int, rank: int):
    """This rank's share of a batch, through DistributedSampler when ember.utils.data has it."""
    try:
        from ember.utils.data import DistributedSampler
    except ImportError:
        return list(range(rank, BATCH, world))
    return list(DistributedSampler(range(BATCH), num_replicas=world, rank=rank, shuffle=False))


def loss_of(model, x, y):
    return ((model(ember.from_numpy(x)) - ember.from_numpy(y)) ** 2).mean()


def close(a, b, tol=2e-5) -> bool:
    return np.allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def train_pair(name: str, kind: str, make_optimizer, ddp_options: dict, accumulate: int = 1, zero: bool = False,
               zero_options: dict | None = None):
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(kind)
    ddp = DDP(model, **ddp_options)
    reference = clone(model, kind)
    if zero:
        optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=make_optimizer[0], **make_optimizer[1],
                                            **(zero_options or {}))
        reference_optimizer = make_optimizer[0](reference.parameters(), **make_optimizer[1])
    else:
        optimizer = make_optimizer(ddp.parameters())
        reference_optimizer = make_optimizer(reference.parameters())
    rows = my_rows(world, rank)
    for step in range(STEPS):
        optimizer.zero_grad(set_to_none=step % 2 == 0)
        x, y = X[step][rows], Y[step][rows]
        if accumulate == 1:
            loss_of(ddp, x, y).backward()
        else:
            half = len(rows) // 2
            with ddp.no_sync():
                (loss_of(ddp, x[:half], y[:half]) / 2).backward()
            (loss_of(ddp, x[half:], y[half:]) / 2).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        if accumulate == 1:
            loss_of(reference, X[step], Y[step]).backward()
        else:
            reorder = [r for w in range(world) for r in my_rows(world, w)[:len(rows) // 2]]
            rest = [r for w in range(world) for r in my_rows(world, w)[len(rows) // 2:]]
            (loss_of(reference, X[step][reorder], Y[step][reorder]) / 2).backward()
            (loss_of(reference, X[step][rest], Y[step][rest]) / 2).backward()
        reference_optimizer.step()
    for (key, mine), theirs in zip(ddp.module.named_parameters(), reference.parameters()):
        check(f"{name}: {key} after {STEPS} steps", close(mine, theirs),
              f"max diff {np.abs(mine.detach().numpy() - theirs.detach().numpy()).max()}")
    return ddp, optimizer


def test_ddp() -> None:
    train_pair("ddp sgd momentum, small buckets", "mlp",
               lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9), {"bucket_cap_mb": 0.0005})
    ddp, _ = train_pair("ddp adam, gradient_as_bucket_view", "mlp",
                        lambda p: ember.optim.Adam(p, lr=0.01), {"gradient_as_bucket_view": True})
    param = next(ddp.module.parameters())
    bucket, position = ddp._where[0]
    check("gradient_as_bucket_view shares the bucket", np.shares_memory(param.grad._data, bucket.flat)
          or any(np.shares_memory(p.grad._data, b.flat) for p in ddp.module.parameters() for b in [bucket]))
    check("several buckets", len(ddp._buckets) >= 1)
    ddp, _ = train_pair("ddp find_unused_parameters", "unused",
                        lambda p: ember.optim.SGD(p, lr=0.1), {"find_unused_parameters": True})
    check("unused parameter keeps grad None", ddp.module.unused.weight.grad is None)
    train_pair("ddp no_sync accumulation", "mlp", lambda p: ember.optim.SGD(p, lr=0.1), {}, accumulate=2)


def test_zero() -> None:
    ddp, optimizer = train_pair("zero adam", "mlp", (ember.optim.Adam, {"lr": 0.01}), {}, zero=True)
    owned = sum(1 for p in ddp.module.parameters() if optimizer.optim is not None and p in optimizer.optim.state)
    total = len(list(ddp.module.parameters()))
    check("zero: this rank holds state for only its share", owned < total or dist.get_world_size() == 1,
          f"{owned} of {total}")
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, owned)
    check("zero: every parameter's state lives on exactly one rank", sum(everyone) == total, str(everyone))
    optimizer.consolidate_state_dict(to=0)
    if dist.get_rank() == 0:
        state = optimizer.state_dict()
        check("zero: consolidated state covers every parameter", sorted(state["state"]) == list(range(total)))


def test_zero_bucket_view() -> None:
    """parameters_as_bucket_view: the same trajectory; each rank's parameters are views of one bucket."""
    ddp, optimizer = train_pair("zero adam, parameters_as_bucket_view", "mlp", (ember.optim.Adam, {"lr": 0.01}), {},
                                zero=True, zero_options={"parameters_as_bucket_view": True})
    params = list(ddp.module.parameters())
    owners = {optimizer._owner[p] for p in params}
    check("one bucket per owning rank", sorted(owner for owner, _ in optimizer._buckets) == sorted(owners),
          str([owner for owner, _ in optimizer._buckets]))
    for owner, flat in optimizer._buckets:
        inside = [p for p in params if optimizer._owner[p] == owner]
        check(f"rank {owner}'s parameters are views of its bucket",
              all(np.shares_memory(p._data, flat._data) for p in inside)
              and sum(p.numel() for p in inside) == flat.numel())


def test_unused_without_flag() -> None:
    ddp = DDP(make_model("unused"))
    try:
        loss_of(ddp, X[0][:4], Y[0][:4]).backward()
        check("missing gradient raises", False)
    except RuntimeError as error:
        check("missing gradient message names the parameter", "unused.weight" in str(error), str(error))


def main() -> None:
    dist.init_process_group("mpi")
    guarded("ddp", test_ddp)
    guarded("zero", test_zero)
    guarded("zero bucket view", test_zero_bucket_view)
    guarded("unused without flag", test_unused_without_flag)
    report()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
