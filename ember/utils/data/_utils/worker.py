"""The worker process: seed, build a fetcher, then turn index tasks into batches until told to stop.

Protocol (torch's): the main process puts `(task index, indices)` on this
worker's index queue; the worker puts `(task index, message)` on the shared
result queue, where the message is the batch (packed by the transport,
NOTE [ Shared-memory batches ]), an ExceptionWrapper, or an
_IterableDatasetStopIteration.  `None` on the index queue means "exit";
`_ResumeIteration` (persistent workers) means "start a new epoch".

The worker ignores SIGINT (Ctrl-C reaches the whole process group; the main
process gets the KeyboardInterrupt and shuts the workers down in order), and
leaves when the main process is gone (ManagerWatchdog), removing the blocks
it wrote that nobody will read.
"""

from __future__ import annotations

import os
import queue
import random
import signal
from dataclasses import dataclass

import ember

from . import MP_STATUS_CHECK_INTERVAL
from .exception import ExceptionWrapper
from .shared_memory import Transport, remove_blocks


class ManagerWatchdog:
    """Tells a worker whether the process that started it is still alive (the parent pid changes on its death)."""

    def __init__(self) -> None:
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """Information about the current DataLoader worker process.

    Attributes:
        id: the current worker id (0 to num_workers - 1)
        num_workers: the total number of workers
        seed: the random seed set for this worker (base_seed + id)
        dataset: this process's copy of the dataset object
        rng: torch's per-thread RNG container for thread workers; always None here (ember's workers are processes)
        worker_method: "multiprocessing"
    """

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str | None = "multiprocessing"


def get_worker_info() -> WorkerInfo | None:
    """The WorkerInfo of the current DataLoader worker process; None in the main process.

    Use it in an IterableDataset's ``__iter__`` or a ``worker_init_fn`` to give each worker its own shard.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Sent to persistent workers at the start of each new epoch; echoed back once the worker has reset."""

    seed: int | None = None


@dataclass
class _WithState:
    """A batch and the worker's dataset state right after it (StatefulDataLoader, iterable datasets)."""

    data: object
    state: object


@dataclass
class _WorkerConfig:
    """Everything a worker needs besides its queues: picklable, so the 'spawn' context works too."""

    dataset_kind: int
    dataset: object
    auto_collation: bool
    collate_fn: object
    drop_last: bool
    base_seed: int
    init_fn: object
    worker_id: int
    num_workers: int
    persistent_workers: bool
    transport: str
    block_prefix: str
    dataset_state: object = None  # load into the dataset before iterating (StatefulDataLoader)
    snapshot_state: bool = False  # send the dataset's state_dict with every batch


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """NumPy's legacy seed for a worker: torch's hash of (base_seed, worker_id) (from NumPy's SeedSequence)."""
    init_a, mult_a, init_b, mult_b = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    mix_mult_l, mix_mult_r, xshift, mask32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    hash_const_a = init_a

    def hash_value(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & mask32
        hash_const_a = (hash_const_a * mult_a) & mask32
        value = (value * hash_const_a) & mask32
        return (value ^ (value >> xshift)) & mask32

    def mix(x, y):
        result = (((mix_mult_l * x) & mask32) - ((mix_mult_r * y) & mask32)) & mask32
        return (result ^ (result >> xshift)) & mask32

    pool = [hash_value(value) for value in entropy]
    for source in range(4):
        for target in range(4):
            if source != target:
                pool[target] = mix(pool[target], hash_value(pool[source]))
    hash_const_b = init_b
    state = []
    for value in pool:
        value = (value ^ hash_const_b) & mask32
        hash_const_b = (hash_const_b * mult_b) & mask32
        value = (value * hash_const_b) & mask32
        state.append((value ^ (value >> xshift)) & mask32)
    return state


def _seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed Python's `random`, ember's default generator and NumPy's global one for this worker (torch's rule)."""
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(_generate_state(base_seed, worker_id))
    except ImportError:
        pass
    return seed


def _create_fetcher(config: _WorkerConfig, dataset):
    from ..dataloader import _DatasetKind

    return _DatasetKind.create_fetcher(
        config.dataset_kind, dataset, config.auto_collation, config.collate_fn, config.drop_last
    )


def _fetch(fetcher, config: _WorkerConfig, index):
    """One task's message: the batch (with the dataset state when snapshotting), or a stop / exception marker."""
    from ..dataloader import _DatasetKind

    try:
        data = fetcher.fetch(index)
    except Exception as error:
        if isinstance(error, StopIteration) and config.dataset_kind == _DatasetKind.Iterable:
            return _IterableDatasetStopIteration(config.worker_id)
        return ExceptionWrapper(where=f"in DataLoader worker process {config.worker_id}")
    if config.snapshot_state:
        data = _WithState(data, fetcher.dataset.state_dict())
    return data


def _worker_loop(config: _WorkerConfig, index_queue, data_queue, done_event) -> None:
    """The body of a worker process (see the module docstring for the protocol)."""
    global _worker_info
    transport = Transport(config.transport, config.block_prefix)
    watchdog = ManagerWatchdog()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ember.set_num_threads(1)  # torch's: one intra-op thread per worker, the workers are the parallelism
        seed = _seed_worker(config.base_seed, config.worker_id)
        dataset = config.dataset
        _worker_info = WorkerInfo(id=config.worker_id, num_workers=config.num_workers, seed=seed, dataset=dataset)
        init_exception = None
        fetcher = None
        try:
            if config.init_fn is not None:
                config.init_fn(config.worker_id)
            if config.dataset_state is not None:
                dataset.load_state_dict(config.dataset_state)
            fetcher = _create_fetcher(config, dataset)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {config.worker_id}")
        iteration_end = False
        while watchdog.is_alive():
            try:
                task = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put((task, None))
                iteration_end = False
                fetcher = _create_fetcher(config, dataset)
                continue
            if task is None:
                break  # the main process asked us to exit
            if done_event.is_set() or iteration_end:
                continue  # shutting down, or this epoch's data is exhausted: drain the queue
            task_index, index = task
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                data = _fetch(fetcher, config, index)
                if isinstance(data, _IterableDatasetStopIteration):
                    iteration_end = True
            if not isinstance(data, (ExceptionWrapper, _IterableDatasetStopIteration)):
                try:
                    data = transport.pack(data)
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {config.worker_id}")
            data_queue.put((task_index, data))
            del data, task, index
    except KeyboardInterrupt:
        pass  # the main process handles it and shuts us down
    if done_event.is_set() or not watchdog.is_alive():
        data_queue.cancel_join_thread()  # do not block exit on flushing results nobody will read
        data_queue.close()
    if not watchdog.is_alive():
        remove_blocks(config.block_prefix)  # the main process is gone: nobody will read them
