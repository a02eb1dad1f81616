"""Worker faults and shutdown: errors re-raised with the worker's traceback, dead workers reported, no orphans.

Every test is bounded in time: the loaders use small timeouts or datasets that fail fast, and the orphan
checks poll for at most a few seconds.
"""

from __future__ import annotations

import glob
import os
import signal
import threading
import time

import pytest
from ember_data_helpers import Dying, Faulty, Pids, Slow, Squares

import ember.utils.data as edata
from ember.utils.data._utils import shared_memory


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # succeeds for a zombie too: a worker must be reaped (joined) to count as gone
    except ProcessLookupError:
        return True
    return False


def assert_workers_gone(pids, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(process_gone(pid) for pid in pids):
            break
        time.sleep(0.05)
    assert all(process_gone(pid) for pid in pids), [pid for pid in pids if not process_gone(pid)]
    assert glob.glob(os.path.join(shared_memory._shared_directory(), f"ember_dataloader_{os.getpid()}_*")) == []


def worker_pids(iterator) -> list[int]:
    return [worker.pid for worker in iterator._workers]


@pytest.mark.parametrize("error", [ValueError, KeyError, ZeroDivisionError])
def test_worker_exception_is_reraised_with_original_traceback(error):
    loader = edata.DataLoader(Faulty(20, bad=5, error=error), batch_size=2, num_workers=2)
    iterator = iter(loader)
    pids = worker_pids(iterator)
    with pytest.raises(error) as info:
        for _ in iterator:
            pass
    message = str(info.value)
    assert "Caught " + error.__name__ + " in DataLoader worker process 0" in message  # batch [4, 5] -> worker 0
    assert "Original Traceback (most recent call last):" in message
    assert "bad sample 5" in message and "ember_data_helpers.py" in message
    del iterator, info
    assert_workers_gone(pids)


def test_iteration_can_continue_after_a_worker_exception():
    """torch's behaviour: the failed batch is skipped, the rest still arrive in order."""
    iterator = iter(edata.DataLoader(Faulty(8, bad=2), batch_size=2, num_workers=2))
    assert next(iterator).tolist() == [0, 1]
    with pytest.raises(ValueError):
        next(iterator)
    assert [b.tolist() for b in iterator] == [[4, 5], [6, 7]]


def test_single_process_exception_is_the_original():
    with pytest.raises(ValueError, match="^bad sample 5$"):
        list(edata.DataLoader(Faulty(20, bad=5), batch_size=2))


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_dead_worker_raises_instead_of_hanging(how):
    loader = edata.DataLoader(Dying(40, bad=7, how=how), batch_size=2, num_workers=2)
    iterator = iter(loader)
    pids = worker_pids(iterator)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        for _ in iterator:
            pass
    assert time.monotonic() - start < 10
    assert_workers_gone(pids)


def test_timeout_raises_torch_message():
    loader = edata.DataLoader(Slow(10, delay=3.0), batch_size=1, num_workers=1, timeout=0.3)
    iterator = iter(loader)
    pids = worker_pids(iterator)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0.3 seconds$"):
        next(iterator)
    assert time.monotonic() - start < 2
    del iterator
    assert_workers_gone(pids)


def test_normal_exhaustion_shuts_workers_down():
    iterator = iter(edata.DataLoader(Squares(10), batch_size=3, num_workers=2))
    pids = worker_pids(iterator)
    assert len(list(iterator)) == 4
    assert_workers_gone(pids)


def test_del_of_iterator_mid_epoch_shuts_workers_down():
    iterator = iter(edata.DataLoader(Slow(100, delay=0.01), batch_size=2, num_workers=2))
    next(iterator)
    pids = worker_pids(iterator)
    del iterator
    assert_workers_gone(pids)


def test_exception_in_the_loop_body_shuts_workers_down():
    loader = edata.DataLoader(Pids(), batch_size=2, num_workers=2)
    seen = set()

    def train():
        for step, (_, pids) in enumerate(loader):
            seen.update(pids.tolist())
            if step == 2:
                raise ArithmeticError("loss is nan")

    with pytest.raises(ArithmeticError):
        train()
    assert len(seen) == 2
    assert_workers_gone(seen)


def test_keyboard_interrupt_shuts_workers_down():
    iterator = iter(edata.DataLoader(Slow(200, delay=0.05), batch_size=1, num_workers=2))
    pids = worker_pids(iterator)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in iterator:
                pass
    finally:
        timer.cancel()
    assert iterator._shutdown
    assert_workers_gone(pids)


def test_worker_busy_in_a_long_sample_is_terminated_on_shutdown():
    iterator = iter(edata.DataLoader(Slow(4, delay=30.0), batch_size=1, num_workers=1, timeout=0.2))
    pids = worker_pids(iterator)
    with pytest.raises(RuntimeError, match="timed out"):
        next(iterator)
    start = time.monotonic()
    iterator._shutdown_workers()
    assert time.monotonic() - start < 5
    assert_workers_gone(pids)
