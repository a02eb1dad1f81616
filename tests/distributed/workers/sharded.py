"""FSDP (fully_shard) against one process on the combined batch; memory per rank; checkpoint N -> M.

    sharded.py train              # 20 steps, parameters equal single-process training
    sharded.py mixed              # MixedPrecisionPolicy: bf16 compute, float32 shards, grads and reduction
    sharded.py save DIRECTORY     # train 3 steps, save model + optimizer, record the next step's result
    sharded.py load DIRECTORY     # load (on another world size), take that step, compare
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import check, guarded, report  # noqa: E402

import ember  # noqa: E402
import ember.distributed as dist  # noqa: E402
import ember.distributed.checkpoint as dcp  # noqa: E402
from ember import nn  # noqa: E402
from ember.distributed.checkpoint.state_dict import get_optimizer_state_dict, set_optimizer_state_dict  # noqa: E402
from ember.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, ShardedTensor, fully_shard  # noqa: E402

STEPS = 20
BATCH = 24
rng = np.random.default_rng(11)
X = rng.standard_normal((STEPS, BATCH, 8)).astype(np.float32)
Y = rng.standard_normal((STEPS, BATCH, 5)).astype(np.float32)


def make_model():
    ember.manual_seed(99)  # the same on every rank: fully_shard does not broadcast (as torch's)
    return nn.Sequential(nn.Linear(8, 13), nn.Tanh(), nn.Linear(13, 13), nn.Tanh(), nn.Linear(13, 5))


def shard(model, reshard_after_forward=True):
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, reshard_after_forward=reshard_after_forward)
    return fully_shard(model, reshard_after_forward=reshard_after_forward)


def loss_of(model, x, y):
    return ((model(ember.from_numpy(x)) - ember.from_numpy(y)) ** 2).mean()


def rows():
    world, rank = dist.get_world_size(), dist.get_rank()
    return list(range(rank, BATCH, world))


def full_parameters(model) -> dict:
    out = {}
    for key, value in model.state_dict().items():
        out[key] = value.full_tensor().numpy() if isinstance(value, ShardedTensor) else value.numpy()
    return out


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, ember.Tensor))


def held_bytes(model, optimizer) -> int:
    params = list(model.parameters())
    state = [v for p in params for v in optimizer.state.get(p, {}).values()]
    return nbytes(params) + nbytes([p.grad for p in params if p.grad is not None]) + nbytes(state)


def set_prefetch(model) -> list:
    """Each Linear block prefetches the next one's gathers in forward and the previous one's in backward."""
    layers = [layer for layer in model if isinstance(layer, FSDPModule)]
    for index, layer in enumerate(layers):
        layer.set_modules_to_forward_prefetch(layers[index + 1:index + 2])
        layer.set_modules_to_backward_prefetch(layers[max(index - 1, 0):index])
    return layers


def train(reshard_after_forward: bool, make_optimizer, name: str, prefetch: bool = False) -> None:
    model = shard(make_model(), reshard_after_forward)
    layers = set_prefetch(model) if prefetch else []
    reference = make_model()
    optimizer = make_optimizer(model.parameters())
    reference_optimizer = make_optimizer(reference.parameters())
    check(f"{name}: module class", isinstance(model[0], FSDPModule) and isinstance(model, FSDPModule))
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = loss_of(model, X[step][rows()], Y[step][rows()])
        if step == 0 and reshard_after_forward:
            states = [layer._fsdp_state for layer in model if isinstance(layer, FSDPModule)]
            check(f"{name}: freed between forward and backward", all(m.freed for s in states for m in s.params))
        loss.backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        loss_of(reference, X[step], Y[step]).backward()
        reference_optimizer.step()
    states = [m._fsdp_state for m in model.modules() if isinstance(m, FSDPModule)]
    check(f"{name}: no gathered parameter alive after the step",
          all(managed.unsharded is None for s in states for managed in s.params))
    check(f"{name}: no prefetched gather left in flight", all(m.pending is None for s in states for m in s.params))
    if prefetch:
        counts = [sum(m.prefetched for m in layer._fsdp_state.params) for layer in layers]
        # forward: every layer but the first is prefetched each step; backward (re-gathers after resharding):
        # every layer but the last
        per_step = [int(i > 0) + int(reshard_after_forward and i < len(layers) - 1) for i in range(len(layers))]
        expected = [STEPS * n * len(layer._fsdp_state.params) for n, layer in zip(per_step, layers)]
        check(f"{name}: gathers started ahead of need", counts == expected, f"{counts} vs {expected}")
    mine = full_parameters(model)
    for key, want in reference.state_dict().items():
        check(f"{name}: {key} equals single-process training", np.allclose(mine[key], want.numpy(), rtol=2e-5,
                                                                             atol=2e-5),
              f"max diff {np.abs(mine[key] - want.numpy()).max()}")
    world = dist.get_world_size()
    ratio = held_bytes(model, optimizer) / held_bytes(reference, reference_optimizer)
    # padding to a multiple of the world size is the only excess over 1/N
    check(f"{name}: params+grads+state per rank ~ 1/{world} (got {ratio:.3f})", ratio < 1 / world + 0.06, "")
    if dist.get_rank() == 0:
        print(f"{name}: memory ratio per rank {ratio:.3f} (1/N = {1 / world:.3f})")


def test_train() -> None:
    train(True, lambda p: ember.optim.Adam(p, lr=0.01), "fsdp adam")
    train(False, lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9), "fsdp sgd, reshard_after_forward=False")
    train(True, lambda p: ember.optim.Adam(p, lr=0.01), "fsdp adam, forward and backward prefetch", prefetch=True)
    train(False, lambda p: ember.optim.SGD(p, lr=0.1), "fsdp sgd, forward prefetch", prefetch=True)
    test_unshard_async()


def test_unshard_async() -> None:
    model = shard(make_model())
    layer = model[2]
    handle = layer.unshard(async_op=True)
    check("unshard(async_op=True): gathers in flight", all(m.pending is not None for m in layer._fsdp_state.params))
    handle.wait()
    check("handle.wait(): parameters gathered, nothing in flight",
          all(m.pending is None and m.unsharded is not None and tuple(m.unsharded.shape) == m.shape
              for m in layer._fsdp_state.params))
    try:
        layer.set_modules_to_forward_prefetch([nn.Linear(2, 2)])
        check("prefetch of a module fully_shard was not applied to raises", False)
    except ValueError:
        pass


def mixed() -> None:
    """bf16 parameters in forward and backward, float32 shards, grads and reduction (torch's FSDP2 policy)."""
    policy = MixedPrecisionPolicy(param_dtype=ember.bfloat16, reduce_dtype=ember.float32)
    model = make_model()
    seen: list = []
    for layer in model:
        if isinstance(layer, nn.Linear):
            layer.register_forward_hook(lambda m, args, out: seen.append((m.weight.dtype, args[0].dtype, out.dtype)))
            fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=ember.bfloat16, reduce_dtype=ember.float32,
                                                      output_dtype=ember.float32))
    reference, reference_bf16 = make_model(), make_model()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = ember.optim.SGD(reference.parameters(), lr=0.1)
    for step in range(5):
        optimizer.zero_grad()
        out = model(ember.from_numpy(X[step][rows()]))
        check("output_dtype float32", out.dtype == ember.float32, str(out.dtype))
        ((out - ember.from_numpy(Y[step][rows()])) ** 2).mean().backward()
        check("sharded grads are float32", all(p.grad.dtype == ember.float32 for p in model.parameters()))
        optimizer.step()
        # the reference: the same step computed by one process in bf16 (params cast), grads back in float32
        reference_optimizer.zero_grad()
        with ember.no_grad():
            for mine, theirs in zip(reference_bf16.parameters(), reference.parameters()):
                mine.copy_(theirs)
        low = reference_bf16.to(ember.bfloat16)
        low.zero_grad()
        prediction = low(ember.from_numpy(X[step]).to(ember.bfloat16)).float()
        ((prediction - ember.from_numpy(Y[step])) ** 2).mean().backward()
        for param, low_param in zip(reference.parameters(), low.parameters()):
            param.grad = low_param.grad.float()
        reference_optimizer.step()
        reference_bf16 = make_model()
    check("layers computed in bfloat16", seen and all(w == ember.bfloat16 and x == ember.bfloat16 and o == ember.bfloat16
                                                      for w, x, o in seen), str(seen[:2]))
    check("shards stay float32", all(p.dtype == ember.float32 for p in model.parameters()))
    mine = full_parameters(model)
    fp32 = make_model()
    for key, want in reference.state_dict().items():
        difference = np.abs(mine[key] - want.numpy()).max()
        check(f"mixed precision: {key} close to the bf16 single-process step", difference < 2e-2, f"{difference}")
    moved = max(np.abs(mine[k] - v.numpy()).max() for k, v in fp32.state_dict().items())
    check("mixed precision: training moved the parameters", moved > 1e-2, f"{moved}")


def step_once(model, optimizer, step: int) -> None:
    optimizer.zero_grad()
    loss_of(model, X[step][rows()], Y[step][rows()]).backward()
    optimizer.step()


def save(directory: str) -> None:
    model = shard(make_model())
    optimizer = ember.optim.Adam(model.parameters(), lr=0.01)
    for step in range(3):
        step_once(model, optimizer, step)
    dcp.save({"model": model.state_dict(), "optim": get_optimizer_state_dict(model, optimizer), "step": 3},
             checkpoint_id=directory)
    step_once(model, optimizer, 3)
    after = full_parameters(model)
    if dist.get_rank() == 0:
        np.savez(os.path.join(directory, "expected.npz"), **after)
    dist.barrier()
    check("saved", os.path.exists(os.path.join(directory, ".metadata")))


def load(directory: str) -> None:
    model = shard(make_model())
    optimizer = ember.optim.Adam(model.parameters(), lr=0.01)
    state = {"model": model.state_dict(), "optim": get_optimizer_state_dict(model, optimizer), "step": 0}
    dcp.load(state, checkpoint_id=directory)
    model.load_state_dict(state["model"])
    set_optimizer_state_dict(model, optimizer, state["optim"])
    check("object restored", state["step"] == 3)
    step_once(model, optimizer, 3)
    expected = np.load(os.path.join(directory, "expected.npz"))
    mine = full_parameters(model)
    for key in expected.files:
        check(f"checkpoint resharded: {key}", np.allclose(mine[key], expected[key], rtol=1e-5, atol=1e-6),
              f"max diff {np.abs(mine[key] - expected[key]).max()}")


def main() -> None:
    dist.init_process_group("mpi")
    mode = sys.argv[1] if len(sys.argv) > 1 else "train"
    if mode == "train":
        guarded("train", test_train)
    elif mode == "mixed":
        guarded("mixed", mixed)
    elif mode == "save":
        guarded("save", save, sys.argv[2])
    else:
        guarded("load", load, sys.argv[2])
    report()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
