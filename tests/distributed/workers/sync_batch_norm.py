"""SyncBatchNorm on N ranks against BatchNorm in one process on the combined batch: outputs, input gradients,
summed parameter gradients and running statistics; uneven and empty per-rank batches; DDP training of a
converted conv net."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import check, guarded, report  # noqa: E402

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
from ember import nn  # noqa: E402
from ember.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

rng = np.random.default_rng(11)


def close(a, b, tol=1e-9) -> bool:
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def compare_one_step(name: str, sizes: list, momentum) -> None:
    """Rank r holds sizes[r] samples of one (sum(sizes), 3, 4, 2) float64 batch."""
    rank = dist.get_rank()
    full = rng.standard_normal((sum(sizes), 3, 4, 2)) * 2 + 1
    weights = rng.standard_normal((sum(sizes), 3, 4, 2))
    start = sum(sizes[:rank])
    mine = slice(start, start + sizes[rank])

    def make(cls):
        layer = cls(3, momentum=momentum, dtype=ember.float64)
        with ember.no_grad():
            layer.weight.copy_(ember.tensor([1.5, -0.5, 2.0], dtype=ember.float64))
            layer.bias.copy_(ember.tensor([0.1, 0.2, -0.3], dtype=ember.float64))
        return layer

    synced, reference = make(nn.SyncBatchNorm), make(nn.BatchNorm2d)
    for step in range(2):  # (two steps: the running statistics' second update reads the first's)
        x = ember.tensor(full[mine], requires_grad=True)
        out = synced(x)
        (out * ember.tensor(weights[mine])).sum().backward()
        x_full = ember.tensor(full, requires_grad=True)
        out_full = reference(x_full)
        (out_full * ember.tensor(weights)).sum().backward()
        check(f"{name} step {step}: output", close(out, out_full[mine]))
        # (an empty rank gets no gradients at all, as torch's: None, read as zeros)
        grad = x.grad if x.grad is not None else ember.zeros_like(x)
        check(f"{name} step {step}: input gradient", close(grad, x_full.grad[mine]))
        for parameter in ("weight", "bias"):
            held = getattr(synced, parameter)
            grad = held.grad.clone() if held.grad is not None else ember.zeros_like(held)
            dist.all_reduce(grad)  # (DDP's job; the layer leaves parameter gradients local, as torch's)
            check(f"{name} step {step}: summed {parameter} gradient", close(grad, getattr(reference, parameter).grad))
        check(f"{name} step {step}: running mean", close(synced.running_mean, reference.running_mean))
        check(f"{name} step {step}: running var", close(synced.running_var, reference.running_var))
        check(f"{name} step {step}: batches tracked",
              synced.num_batches_tracked.item() == reference.num_batches_tracked.item())
        full = full * 0.5 - 1  # (the second step sees other statistics)
    synced.eval()
    reference.eval()
    x = ember.tensor(full[mine])
    check(f"{name}: eval uses the running statistics", close(synced(x), reference(ember.tensor(full))[mine]))


def test_even() -> None:
    compare_one_step("even batches", [4] * dist.get_world_size(), 0.1)


def test_uneven() -> None:
    compare_one_step("uneven batches", [r + 2 for r in range(dist.get_world_size())], 0.3)


def test_cumulative() -> None:
    compare_one_step("momentum None", [3] * dist.get_world_size(), None)


def test_empty_rank() -> None:
    sizes = [5] + [0] * (dist.get_world_size() - 1)
    compare_one_step("an empty rank", sizes, 0.1)


def test_ddp_converted_net() -> None:
    """A conv net with BatchNorm, converted and wrapped in DDP, each rank on its quarter of the batch, follows
    one process training on the whole batch for 5 SGD steps."""
    world, rank = dist.get_world_size(), dist.get_rank()

    def net():
        ember.manual_seed(5)
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.Linear(4 * 5 * 5, 3)).double()

    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net()))
    reference = net()
    optimizers = [ember.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]
    per_rank = 3
    for _ in range(5):
        x = rng.standard_normal((world * per_rank, 2, 5, 5))
        y = rng.standard_normal((world * per_rank, 3))
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        for module, optimizer, xs, ys in ((model, optimizers[0], x[mine], y[mine]), (reference, optimizers[1], x, y)):
            optimizer.zero_grad()
            loss = ((module(ember.tensor(xs)) - ember.tensor(ys)) ** 2).mean()
            loss.backward()
            optimizer.step()
    ours = dict(model.module.named_parameters())
    for name, parameter in reference.named_parameters():
        check(f"ddp: {name} after 5 steps", close(ours[name], parameter, 1e-7))
    check("ddp: running mean", close(model.module[1].running_mean, reference[1].running_mean, 1e-7))
    check("ddp: running var", close(model.module[1].running_var, reference[1].running_var, 1e-7))


def main() -> None:
    dist.init_process_group("mpi")
    guarded("even", test_even)
    guarded("uneven", test_uneven)
    guarded("cumulative", test_cumulative)
    guarded("empty rank", test_empty_rank)
    guarded("ddp converted net", test_ddp_converted_net)
    report()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
