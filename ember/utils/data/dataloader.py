"""DataLoader: sampler -> batch sampler -> fetcher -> collate -> (worker processes) -> batches.

The single-process iterator is the reference: it asks the index sampler for the
next index (or list of indices), the fetcher reads and collates it.  The
multi-process iterator runs the same fetcher in worker processes and must
produce the same batches in the same order (DESIGN.md):

* one index queue per worker, one shared result queue; task i goes to the
  next active worker in round-robin order; at most ``prefetch_factor`` tasks
  per worker are outstanding;
* results can arrive out of order; they wait in a reorder buffer
  (``_task_info``) until their turn, unless ``in_order=False``;
* batches travel through shared memory, not through the pipe
  (NOTE [ Shared-memory batches ] in _utils/shared_memory.py);
* worker seeds are ``base_seed + worker_id``, base_seed drawn from the
  loader's generator (or ember's default) when the iterator is created, so a
  seeded generator makes whole epochs, augmentation included, reproducible;
* errors: a worker exception comes back as an ExceptionWrapper and is
  re-raised with the worker's traceback; a dead worker is noticed when a read
  of the result queue times out (every MP_STATUS_CHECK_INTERVAL seconds) and
  raises; every exit path (exhaustion, exception, KeyboardInterrupt, ``del``,
  garbage collection) goes through ``_shutdown_workers``, which joins,
  terminates, then kills the workers and removes unread shared-memory blocks.

The structure and the messages follow torch/utils/data/dataloader.py.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import warnings
from typing import Generic, TypeVar

import ember

from ._utils.collate import default_collate, default_convert
from ._utils.fetch import _IterableDatasetFetcher, _MapDatasetFetcher
from ._utils.worker import get_worker_info
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

# How workers send batches: "shared_memory" (NOTE [ Shared-memory batches ]) or "pickle" (through the queue).
# Read when an iterator starts its workers; bench/data.py switches it to compare the two.
BATCH_TRANSPORT = "shared_memory"

_iterator_ids = itertools.count()
_T_co = TypeVar("_T_co", covariant=True)


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: None forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except Exception:  # noqa: BLE001 - not every kernel supports it
            pass
    return os.cpu_count()


class DataLoader(Generic[_T_co]):
    """Iterate over a dataset in batches, optionally shuffled, optionally with worker processes.

    Args:
        dataset: a map-style Dataset (``__getitem__``/``__len__``) or an IterableDataset
        batch_size: samples per batch (default 1); None turns automatic batching off
        shuffle: reshuffle every epoch (map-style only)
        sampler: the order of indices (excludes shuffle)
        batch_sampler: yields lists of indices (excludes batch_size, shuffle, sampler, drop_last)
        num_workers: worker processes (0: load in the main process)
        collate_fn: merges a list of samples into a batch (default: default_collate, or default_convert
            when batching is off)
        pin_memory: accepted for compatibility; page-locking is a no-op on the CPU
        drop_last: drop the last incomplete batch
        timeout: seconds to wait for a batch from the workers before raising (0: forever)
        worker_init_fn: called with the worker id in each worker after seeding, before loading
        multiprocessing_context: 'fork' (the default on Linux), 'spawn', 'forkserver' or a context object
        generator: the ember.Generator for the shuffle order and the workers' base seed
        prefetch_factor: batches each worker loads ahead (default 2 with workers)
        persistent_workers: keep the workers alive between epochs
        in_order: deliver batches in sampler order (False: as they arrive)

    Example::

        >>> dataset = TensorDataset(ember.arange(10.0), ember.arange(10))
        >>> [tuple(x.shape) for x, y in DataLoader(dataset, batch_size=4)]
        [(4,), (4,), (2,)]

    Memory: see NOTE [ Copy-on-read in forked workers ] in dataset.py and docs/data.md before giving a
    forking worker a dataset that holds a large list of Python objects.
    """

    _initialized = False

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler=None,
        batch_sampler=None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        sampler, batch_sampler, batch_size, drop_last = self._check_samplers(
            dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator
        )
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._initialized = True
        self._IterableDataset_len_called = None
        self._iterator = None
        self.check_worker_number_rationality()

    def _check_samplers(self, dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
        """torch's argument rules for the sampling options; returns the sampler and batch sampler to use."""
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            # NOTE [ Custom Samplers and IterableDataset ] (torch's): the dataset decides the order.
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if self._dataset_kind == _DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        return sampler, batch_sampler, batch_size, drop_last

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                    f"but got num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                valid_start_methods = multiprocessing.get_all_start_methods()
                if context not in valid_start_methods:
                    raise ValueError(
                        "multiprocessing_context option should specify a valid start method in "
                        f"{valid_start_methods!r}, but got multiprocessing_context={context!r}"
                    )
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a string specifying the "
                    f"start method, but got multiprocessing_context={context}"
                )
        self._multiprocessing_context = context

    def __setattr__(self, attr, value) -> None:
        if self._initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, value)

    def __iter__(self):
        # Persistent workers: one iterator for the loader's lifetime, reset at each epoch.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        """What the fetcher is driven by: the batch sampler when batching, else the sampler."""
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # NOTE [ IterableDataset and __len__ ] (torch's): trust the dataset's length, warn on overrun.
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self) -> None:
        """Warn when more workers are asked for than there are CPUs this process may use."""
        if not self.num_workers:
            return
        suggested = _cpu_count()
        if suggested is not None and self.num_workers <= suggested:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        if suggested is not None:
            detail = (
                f"Our suggested max number of worker in current system is {suggested}"
                f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller than "
                "what this DataLoader is going to create."
            )
        else:
            detail = "DataLoader is not able to compute a suggested max number of worker in current system."
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. {detail} Please be aware "
            "that excessive worker creation might get DataLoader running slow or even freeze, lower the worker "
            "number to avoid potential slowness/freeze if necessary.",
            stacklevel=2,
        )


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn(
                "pin_memory_device is deprecated, the current accelerator will be used as the device,"
                f"ignore pin_memory_device='{loader.pin_memory_device}'.",
                stacklevel=3,
            )
        if loader.pin_memory and not ember.accelerator.is_available():
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                "won't be used.",
                stacklevel=3,
            )
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = self._make_sampler_iter()
        self._base_seed = self._draw_base_seed(loader)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    # -- hooks the StatefulDataLoader's iterators override

    def _make_sampler_iter(self):
        return iter(self._index_sampler)

    def _draw_base_seed(self, loader) -> int:
        return int(ember.empty((), dtype=ember.int64).random_(generator=loader.generator).item())

    # --

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter: bool = False) -> None:
        self._sampler_iter = self._make_sampler_iter()
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        if self._sampler_iter is None:
            self._reset()
        data = self._next_data()
        self._num_yielded += 1
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and self._IterableDataset_len_called is not None
            and self._num_yielded > self._IterableDataset_len_called
        ):
            message = (
                f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples."
                )
            warnings.warn(message, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if self._timeout != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        if self._num_workers != 0:
            raise AssertionError("_SingleProcessDataLoaderIter requires num_workers == 0")
        self._prepare_dataset()
        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind, self._dataset, self._auto_collation, self._collate_fn, self._drop_last
        )

    def _prepare_dataset(self) -> None:
        """Hook: the StatefulDataLoader loads an iterable dataset's saved state here."""

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        return self._dataset_fetcher.fetch(index)  # may raise StopIteration


from .multiprocessing_iter import _MultiProcessingDataLoaderIter  # noqa: E402, F401
