"""ember.multiprocessing with real processes: spawn's error reporting, shared tensors, queues, Pool."""

from __future__ import annotations

import pickle

import pytest

import ember
import ember.multiprocessing as mp

TIMEOUT = 60


# ---------------------------------------------------------------- child functions (module level: spawn pickles them)


def _fail_on_rank_one(rank: int, message: str) -> None:
    if rank == 1:
        raise ValueError(f"{message} from rank {rank}")


def _exit_with_code(rank: int) -> None:
    import sys

    if rank == 0:
        sys.exit(3)


def _fill(rank: int, tensor) -> None:
    tensor[rank] = float(rank + 1)


def _add_one_in_place(tensor) -> None:
    tensor.add_(1)


def _echo_doubled(inbox, outbox, done) -> None:
    tensor = inbox.get(timeout=TIMEOUT)
    tensor.mul_(2)  # the parent's tensor, shared
    outbox.put(tensor * 3)  # a new tensor, made here
    done.wait(TIMEOUT)  # a descriptor is handed over while its sender lives, as in torch


def _send_new_tensor(queue, done) -> None:
    queue.put(ember.arange(6, dtype=ember.float32).reshape(2, 3))
    done.wait(TIMEOUT)  # a descriptor is handed over while its sender lives, as in torch


def _square(tensor):
    return tensor * tensor


def _hogwild_step(model) -> None:
    with ember.no_grad():
        for parameter in model.parameters():
            parameter.add_(1.0)


# ---------------------------------------------------------------- spawn


def test_spawn_runs_fn_with_rank_and_args():
    shared = ember.zeros(3).share_memory_()
    assert mp.spawn(_fill, args=(shared,), nprocs=3) is None
    assert shared.tolist() == [1.0, 2.0, 3.0]


def test_spawn_reports_the_failing_rank_and_its_traceback():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.spawn(_fail_on_rank_one, args=("boom",), nprocs=2)
    assert info.value.error_index == 1
    assert "-- Process 1 terminated with the following error:" in str(info.value)
    assert "ValueError: boom from rank 1" in str(info.value)


def test_start_processes_reports_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_with_code, nprocs=2, start_method="fork")
    assert info.value.exit_code == 3 and info.value.error_index == 0


def test_spawn_join_false_returns_a_context():
    context = mp.spawn(_fill, args=(ember.zeros(2).share_memory_(),), nprocs=2, join=False)
    while not context.join():
        pass
    assert len(context.pids()) == 2


# ---------------------------------------------------------------- shared tensors


def test_share_memory_keeps_the_tensor_and_its_views():
    base = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    row = base[1]
    column = base[:, 2]
    assert not base.is_shared()
    assert base.share_memory_() is base
    assert base.is_shared() and row.is_shared()
    row.mul_(10)
    assert base[1].tolist() == [40.0, 50.0, 60.0, 70.0]
    base[0, 2] = -1.0
    assert column.tolist() == [-1.0, 60.0, 10.0]
    assert row.data_ptr() - base.data_ptr() == 16


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_child_writes_are_seen_by_the_parent(method):
    tensor = ember.zeros(4).share_memory_()
    process = mp.get_context(method).Process(target=_add_one_in_place, args=(tensor,))
    process.start()
    process.join(TIMEOUT)
    assert process.exitcode == 0
    assert tensor.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_module_share_memory_hogwild():
    model = ember.nn.Linear(3, 2)
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())
    before = [p.detach().clone() for p in model.parameters()]
    processes = [mp.get_context("fork").Process(target=_hogwild_step, args=(model,)) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(TIMEOUT)
        assert process.exitcode == 0
    for parameter, old in zip(model.parameters(), before):
        assert ember.allclose(parameter.detach(), old + 2.0)


def test_queue_passes_tensors_both_ways_by_shared_memory():
    context = mp.get_context("spawn")
    inbox, outbox, done = context.Queue(), context.Queue(), context.Event()
    process = context.Process(target=_echo_doubled, args=(inbox, outbox, done))
    process.start()
    tensor = ember.tensor([1.0, 2.0, 3.0])
    inbox.put(tensor)  # moves it into shared memory, as torch does
    result = outbox.get(timeout=TIMEOUT)
    done.set()
    process.join(TIMEOUT)
    assert process.exitcode == 0
    assert tensor.is_shared()
    assert tensor.tolist() == [2.0, 4.0, 6.0]  # the child's in-place write
    assert result.tolist() == [6.0, 12.0, 18.0] and result.is_shared()


def test_queue_receives_a_tensor_made_in_the_child():
    context = mp.get_context("fork")
    queue, done = context.Queue(), context.Event()
    process = context.Process(target=_send_new_tensor, args=(queue, done))
    process.start()
    received = queue.get(timeout=TIMEOUT)
    done.set()
    process.join(TIMEOUT)
    assert received.shape == (2, 3) and received.dtype == ember.float32
    assert received.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_pool_map():
    tensors = [ember.full((2,), float(i)) for i in range(4)]
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.map(_square, tensors)
    assert [r.tolist() for r in results] == [[float(i * i)] * 2 for i in range(4)]


def test_non_leaf_requiring_grad_is_refused():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        mp.reductions.reduce_tensor(x * 2)


def test_ordinary_pickle_still_copies():
    tensor = ember.ones(3)
    copy = pickle.loads(pickle.dumps(tensor))
    assert copy.tolist() == [1.0, 1.0, 1.0] and not tensor.is_shared() and not copy.is_shared()


def test_sharing_strategies():
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError):
        mp.set_sharing_strategy("carrier_pigeon")


def test_file_system_strategy_round_trip():
    mp.set_sharing_strategy("file_system")
    try:
        tensor = ember.arange(4, dtype=ember.float32).share_memory_()
        process = mp.get_context("spawn").Process(target=_add_one_in_place, args=(tensor,))
        process.start()
        process.join(TIMEOUT)
    finally:
        mp.set_sharing_strategy("file_descriptor")
    assert process.exitcode == 0
    assert tensor.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_reexports_the_standard_module():
    import multiprocessing

    for name in ("Process", "Queue", "Pool", "get_context", "set_start_method", "cpu_count"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
