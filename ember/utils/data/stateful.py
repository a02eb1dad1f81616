"""StatefulDataLoader: a DataLoader whose position can be saved and restored mid-epoch (torchdata's API).

``state_dict()`` describes where the loader is; ``load_state_dict(state)`` makes
the next ``iter(loader)`` continue with exactly the batches an uninterrupted run
would have produced next, with or without workers.  What the state holds:

* map-style datasets: this epoch's index-sampler items (the permutation, cut into
  batches) that have not been handed out yet, drawn once when the epoch starts
  (for a sampler without ``__len__``: the number of items consumed, skipped on
  resume);
* iterable datasets that define ``state_dict``/``load_state_dict``: the dataset's
  state after the last batch handed out, one per worker (each worker iterates
  its own copy), which workers are exhausted, and whose turn is next; datasets
  without them are fast-forwarded by loading and dropping the batches already
  handed out;
* the workers' base seed and the states of the loader's generators, so augmentation
  in the workers and the following epochs' shuffles also match.
"""

from __future__ import annotations

from .dataloader import DataLoader, _DatasetKind, _SingleProcessDataLoaderIter
from .multiprocessing_iter import _MultiProcessingDataLoaderIter

_VERSION = 1


def _generators(loader) -> list:
    """The distinct generators the loader draws from: its own and its samplers'."""
    found = []
    for owner in (loader, loader.sampler, getattr(loader.batch_sampler, "sampler", None)):
        generator = getattr(owner, "generator", None)
        if generator is not None and all(generator is not other for other in found):
            found.append(generator)
    return found


def _is_sized(sampler) -> bool:
    try:
        len(sampler)
    except TypeError:
        return False
    return True


class _IndexRecord:
    """The index sampler's items for one epoch, materialized on first use, and how many were handed out."""

    def __init__(self, index_sampler, remaining: list | None = None, skip: int = 0) -> None:
        self._sampler = index_sampler
        self.items = remaining
        self.sized = remaining is not None or _is_sized(index_sampler)
        self.position = 0  # items handed out
        self._skip = skip
        self._iterator = None

    def materialize(self) -> None:
        if self.items is None and self.sized:
            self.items = list(self._sampler)

    def __iter__(self):
        return self

    def __next__(self):
        if self.sized:
            self.materialize()
            if self.position >= len(self.items):
                raise StopIteration
            item = self.items[self.position]
        else:
            if self._iterator is None:
                self._iterator = iter(self._sampler)
                for _ in range(self._skip):
                    next(self._iterator)
            item = next(self._iterator)
        self.position += 1
        return item

    def state(self, consumed) -> dict:
        """The sampler part of a state dict; `consumed(position)` says whether an item was handed out."""
        if not self.sized:
            return {"skip": self._skip + sum(1 for p in range(self.position) if consumed(p))}
        self.materialize()
        return {"remaining": [item for p, item in enumerate(self.items) if not consumed(p)]}


class _StatefulMixin:
    """What both stateful iterators share: resuming the seed and sampler, and the common state fields."""

    def _init_state(self, loader, state) -> None:
        self._generators = _generators(loader)  # not the loader itself: loader._iterator -> self would be a cycle
        self._resume = state if state and not state.get("_finished") else None
        self._finished_state = state if state and state.get("_finished") else None
        self._is_stateful_dataset = (
            self._dataset_kind == _DatasetKind.Iterable
            and callable(getattr(loader.dataset, "state_dict", None))
            and callable(getattr(loader.dataset, "load_state_dict", None))
        )
        self._exhausted = False

    def _make_sampler_iter(self):
        sampler_state = (self._resume or {}).get("_sampler", {})
        if self._dataset_kind == _DatasetKind.Iterable:
            return iter(self._index_sampler)
        self._record = _IndexRecord(self._index_sampler, sampler_state.get("remaining"), sampler_state.get("skip", 0))
        return self._record

    def _draw_base_seed(self, loader) -> int:
        generators = self._generators
        if self._resume is not None:
            for generator, saved in zip(generators, self._resume["_generator_states"]):
                generator.set_state(saved)
            return self._resume["_base_seed"]
        if self._finished_state is not None:
            for generator, saved in zip(generators, self._finished_state["_generator_states"]):
                generator.set_state(saved)
        return super()._draw_base_seed(loader)

    def _common_state(self, finished: bool) -> dict:
        return {
            "_snapshot_version": _VERSION,
            "_finished": finished,
            "_num_yielded": self._num_yielded,
            "_base_seed": self._base_seed,
            "_generator_states": [generator.get_state() for generator in self._generators],
        }

    def __next__(self):
        try:
            return super().__next__()
        except StopIteration:
            self._exhausted = True
            raise


class _StatefulSingleProcessIter(_StatefulMixin, _SingleProcessDataLoaderIter):
    def __init__(self, loader, state) -> None:
        self._dataset_kind = loader._dataset_kind
        self._init_state(loader, state)
        super().__init__(loader)
        if self._resume is not None and "skip_batches" not in self._resume["_dataset"]:
            self._num_yielded = self._resume["_num_yielded"]

    def _prepare_dataset(self) -> None:
        if self._is_stateful_dataset:
            saved = (self._resume or {}).get("_dataset", {}).get("single")
            if saved is not None:
                self._dataset.load_state_dict(saved)

    def _next_data(self):
        data = super()._next_data()
        if self._is_stateful_dataset:
            self._dataset_state = self._dataset.state_dict()
        return data

    def state_dict(self) -> dict:
        if self._exhausted:
            return self._common_state(finished=True)
        if self._dataset_kind == _DatasetKind.Map:
            self._record.materialize()  # draws this epoch's order now, so the saved generator state follows it
        state = self._common_state(finished=False)
        if self._dataset_kind == _DatasetKind.Map:
            state["_sampler"] = self._record.state(lambda position: position < self._record.position)
            state["_dataset"] = {}
        elif self._is_stateful_dataset:
            if not hasattr(self, "_dataset_state"):
                self._dataset_state = self._dataset.state_dict()
            state["_dataset"] = {"single": self._dataset_state}
        else:
            state["_dataset"] = {"skip_batches": self._num_yielded}
        return state


class _StatefulMultiProcessIter(_StatefulMixin, _MultiProcessingDataLoaderIter):
    def __init__(self, loader, state) -> None:
        self._dataset_kind = loader._dataset_kind
        self._num_workers = loader.num_workers
        self._init_state(loader, state)
        dataset_state = (self._resume or {}).get("_dataset", {})
        self._worker_states = list(dataset_state.get("workers", [None] * loader.num_workers))
        self._last_worker = dataset_state.get("last_worker")
        self._inactive = set(dataset_state.get("inactive", ()))
        self._consumed = set()
        super().__init__(loader)
        if self._resume is not None and "skip_batches" not in self._resume["_dataset"]:
            self._num_yielded = self._resume["_num_yielded"]

    def _worker_dataset_state(self, worker_id: int):
        return self._worker_states[worker_id] if self._is_stateful_dataset else None

    def _snapshot_worker_state(self) -> bool:
        return self._is_stateful_dataset

    def _initial_workers_status(self) -> list[bool]:
        for worker_id in self._inactive:
            self._index_queues[worker_id].put(None)  # exhausted before the state was saved: let it exit
        return [worker_id not in self._inactive for worker_id in range(self._num_workers)]

    def _first_worker(self) -> int:
        return 0 if self._last_worker is None else (self._last_worker + 1) % self._num_workers

    def _on_batch(self, task_idx: int, worker_id: int, state) -> None:
        self._consumed.add(task_idx)
        self._last_worker = worker_id
        if state is not None:
            self._worker_states[worker_id] = state

    def _reset(self, loader, first_iter: bool = False) -> None:
        if not first_iter:  # persistent workers, a new epoch: start from a clean slate
            self._resume = None
            self._consumed = set()
            self._last_worker = None
            self._exhausted = False
        super()._reset(loader, first_iter)

    def state_dict(self) -> dict:
        if self._exhausted:
            return self._common_state(finished=True)
        if self._dataset_kind == _DatasetKind.Map:
            self._record.materialize()  # draws this epoch's order now, so the saved generator state follows it
        state = self._common_state(finished=False)
        if self._dataset_kind == _DatasetKind.Map:
            state["_sampler"] = self._record.state(self._consumed.__contains__)
            state["_dataset"] = {}
        elif self._is_stateful_dataset:
            state["_dataset"] = {
                "workers": list(self._worker_states),
                "last_worker": self._last_worker,
                "inactive": [w for w in range(self._num_workers) if not self._workers_status[w]],
            }
        else:
            state["_dataset"] = {"skip_batches": self._num_yielded}
        return state


class StatefulDataLoader(DataLoader):
    """A DataLoader with ``state_dict()`` / ``load_state_dict()`` (torchdata.stateful_dataloader's API).

    Save the state at any point of an epoch; a loader given it with ``load_state_dict`` resumes with exactly
    the batches an uninterrupted run would have produced next (see the module docstring for what is saved).
    Pass a seeded ``generator`` to make the following epochs match as well.

    Args:
        *args, **kwargs: as DataLoader
        snapshot_every_n_steps: accepted for torchdata compatibility; ember snapshots every batch (an
            iterable dataset's ``state_dict`` should be cheap)

    Example::

        >>> loader = StatefulDataLoader(range(10), batch_size=2, shuffle=True, generator=ember.Generator())
        >>> iterator = iter(loader); first = next(iterator)
        >>> state = loader.state_dict()
        >>> resumed = StatefulDataLoader(range(10), batch_size=2, shuffle=True, generator=ember.Generator())
        >>> resumed.load_state_dict(state)
        >>> [b.tolist() for b in resumed] == [b.tolist() for b in iterator]
        True
    """

    def __init__(self, *args, snapshot_every_n_steps: int | None = 1, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.snapshot_every_n_steps = snapshot_every_n_steps
        self._next_iter_state = None

    def _get_iterator(self):
        state, self._next_iter_state = self._next_iter_state, None
        if self.num_workers == 0:
            iterator = _StatefulSingleProcessIter(self, state)
        else:
            self.check_worker_number_rationality()
            iterator = _StatefulMultiProcessIter(self, state)
        skip = (state or {}).get("_dataset", {}).get("skip_batches", 0) if state and not state["_finished"] else 0
        for _ in range(skip):  # a dataset without state_dict: fast-forward by loading and dropping
            next(iterator)
        return iterator

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0 and self._next_iter_state is None:
            return super().__iter__()
        self._drop_iterator()
        self._iterator = self._get_iterator()
        return self._iterator

    def _drop_iterator(self) -> None:
        if self._iterator is not None and hasattr(self._iterator, "_shutdown_workers"):
            self._iterator._shutdown_workers()
        self._iterator = None

    def state_dict(self) -> dict:
        """Where the loader is: pass it to load_state_dict (here or in a new process) to resume."""
        if self._iterator is not None:
            return self._iterator.state_dict()
        if self._next_iter_state is not None:
            return self._next_iter_state
        return {
            "_snapshot_version": _VERSION,
            "_finished": True,
            "_num_yielded": 0,
            "_generator_states": [generator.get_state() for generator in _generators(self)],
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Make the next ``iter(self)`` resume from `state_dict` (from state_dict())."""
        if state_dict.get("_snapshot_version") != _VERSION:
            raise ValueError(f"unsupported StatefulDataLoader state (version {state_dict.get('_snapshot_version')})")
        self._drop_iterator()
        self._next_iter_state = state_dict
