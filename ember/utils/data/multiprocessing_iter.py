"""The multi-process DataLoader iterator (see dataloader.py's docstring for the design)."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import queue

from . import _utils
from ._utils import shared_memory
from ._utils.exception import ExceptionWrapper
from ._utils.worker import _IterableDatasetStopIteration, _ResumeIteration, _WithState, _worker_loop, _WorkerConfig
from .dataloader import _BaseDataLoaderIter, _DatasetKind, _iterator_ids


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Iterates once over the DataLoader's dataset with worker processes (torch's state machine).

    State: ``_send_idx`` is the next task to send, ``_rcvd_idx`` the next to return; ``_task_info[i]`` is
    ``(worker_id,)`` while task i is outstanding and ``(worker_id, data)`` once its result waits in the
    reorder buffer; ``_workers_status[w]`` is False once worker w is exhausted (iterable datasets) or shut.
    """

    def __init__(self, loader) -> None:
        super().__init__(loader)
        from . import dataloader

        self._prefetch_factor = loader.prefetch_factor
        self._in_order = loader.in_order
        if self._num_workers <= 0:
            raise AssertionError("num_workers must be greater than 0 for MultiProcessingDataLoaderIter")
        if self._prefetch_factor <= 0:
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        context = loader.multiprocessing_context or multiprocessing.get_context()
        self._worker_init_fn = loader.worker_init_fn
        self._worker_result_queue = context.Queue()
        self._shutdown = False
        self._main_pid = os.getpid()
        self._workers_done_event = context.Event()
        self._index_queues = []
        self._workers = []
        self._workers_status = [False] * self._num_workers  # set by _reset; here so a failed start can shut down
        self._task_info = {}
        iterator_id = next(_iterator_ids)
        self._block_prefixes = [
            shared_memory.block_prefix(os.getpid(), iterator_id, i) for i in range(self._num_workers)
        ]
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # never block the main process's exit on an unread index
            config = _WorkerConfig(
                dataset_kind=self._dataset_kind,
                dataset=self._dataset,
                auto_collation=self._auto_collation,
                collate_fn=self._collate_fn,
                drop_last=self._drop_last,
                base_seed=self._base_seed,
                init_fn=self._worker_init_fn,
                worker_id=worker_id,
                num_workers=self._num_workers,
                persistent_workers=self._persistent_workers,
                transport=dataloader.BATCH_TRANSPORT,
                block_prefix=self._block_prefixes[worker_id],
                dataset_state=self._worker_dataset_state(worker_id),
                snapshot_state=self._snapshot_worker_state(),
            )
            worker = context.Process(
                target=_worker_loop, args=(config, index_queue, self._worker_result_queue, self._workers_done_event)
            )
            worker.daemon = True  # multiprocessing terminates daemonic children when the main process exits
            self._index_queues.append(index_queue)
            self._workers.append(worker)
            worker.start()
        self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    # -- hooks the StatefulDataLoader's iterator overrides

    def _worker_dataset_state(self, worker_id: int):
        return None

    def _snapshot_worker_state(self) -> bool:
        return False

    def _initial_workers_status(self) -> list[bool]:
        return [True] * self._num_workers

    def _first_worker(self) -> int:
        return 0

    def _on_batch(self, task_idx: int, worker_id: int, state) -> None:
        """Called for each task whose result is handed out (or re-raised)."""

    # --

    def _reset(self, loader, first_iter: bool = False) -> None:
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0  # tasks sent whose result has not arrived
        self._workers_status = self._initial_workers_status() if first_iter else [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        first = self._first_worker() if first_iter else 0
        self._worker_queue_idx_cycle = itertools.islice(itertools.cycle(range(self._num_workers)), first, None)
        if not first_iter:
            # Persistent workers: tell each one to start a new epoch, and wait until all have.
            for index_queue in self._index_queues:
                index_queue.put(_ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                task_idx, _ = self._get_data()
                if isinstance(task_idx, _ResumeIteration):
                    remaining -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout: float = _utils.MP_STATUS_CHECK_INTERVAL):
        """(True, item) from the result queue, or (False, None) after `timeout`; raises if a worker died."""
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as error:
            failed = []
            for worker_id, worker in enumerate(self._workers):
                if self._workers_status[worker_id] and not worker.is_alive():
                    failed.append(worker)
                    self._mark_worker_as_unavailable(worker_id)
            if failed:
                pids = ", ".join(str(worker.pid) for worker in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from error
            if isinstance(error, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def __next__(self):
        try:
            return super().__next__()
        except KeyboardInterrupt:
            self._shutdown_workers()
            raise

    def _next_data(self):
        while True:
            # Skip tasks of workers that are exhausted (iterable datasets) and have no result waiting.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:  # its result is already in the reorder buffer
                task_idx = self._rcvd_idx
                worker_id, data = self._task_info.pop(task_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id, task_idx)
            if self._shutdown or self._tasks_outstanding <= 0:
                raise AssertionError("Invalid iterator state: shutdown or no outstanding tasks when fetching next data")
            task_idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable and isinstance(data, _IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if task_idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(task_idx)[0]
                    return self._process_data(data, worker_id, task_idx)
                self._task_info[task_idx] += (data,)  # early: keep it until its turn
            else:
                worker_id = self._task_info.pop(task_idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id, task_idx)

    def _try_put_index(self) -> None:
        max_tasks = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= max_tasks:
            raise AssertionError("Number of outstanding tasks exceeded maximum allowed tasks")
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # the next active worker, if any
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order:
                    break
                if self._workers_num_tasks[worker_id] < max_tasks // sum(self._workers_status):
                    break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data, worker_id: int, task_idx: int):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            self._on_batch(task_idx, worker_id, None)
            data.reraise()
        data = shared_memory.Transport.unpack(data)
        state = None
        if isinstance(data, _WithState):
            data, state = data.data, data.state
        self._on_batch(task_idx, worker_id, state)
        return data

    def _mark_worker_as_unavailable(self, worker_id: int, shutdown: bool = False) -> None:
        """Tell a worker to exit (it is exhausted, dead, or we are shutting down); it sends nothing more."""
        if not self._workers_status[worker_id] and not self._persistent_workers and not shutdown:
            raise AssertionError("Worker status inconsistent when marking worker as unavailable")
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _discard_buffered(self) -> None:
        """Release the shared-memory blocks of results that arrived but will never be handed out."""
        for info in self._task_info.values():
            if len(info) == 2 and isinstance(info[1], shared_memory._SharedBatch):
                info[1].discard()
        self._task_info.clear()

    def _shutdown_workers(self) -> None:
        """Stop every worker, bounded in time: ask, wait, terminate, wait, kill; then free unread blocks."""
        if _utils is None or _utils.python_exit_status is True or _utils.python_exit_status is None:
            return  # interpreter shutdown: multiprocessing's atexit hook terminates the daemonic workers
        if getattr(self, "_shutdown", True) or os.getpid() != self._main_pid:
            return  # already done, or a copy of this iterator inherited by a forked process: not ours to stop
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for worker in self._workers:
                worker.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
                    worker.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
            self._discard_buffered()
            for prefix in self._block_prefixes:
                shared_memory.remove_blocks(prefix)
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()

    def __del__(self) -> None:
        self._shutdown_workers()
