"""Datasets: the map-style and iterable-style bases and torch's combinators (torch.utils.data.dataset)."""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import typing
import warnings
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

import ember
from ember._ops._generator import default_generator

__all__ = [
    "Dataset",
    "IterableDataset",
    "TensorDataset",
    "StackDataset",
    "ConcatDataset",
    "ChainDataset",
    "Subset",
    "random_split",
]

_T_co = TypeVar("_T_co", covariant=True)
_T_stack = TypeVar("_T_stack", tuple, dict)


class Dataset(Generic[_T_co]):
    """A map-style dataset: ``__getitem__(index)`` returns one sample, ``__len__`` (optional) the count.

    A subclass may also define ``__getitems__(indices)`` returning a list of samples, which the DataLoader
    then calls once per batch instead of ``__getitem__`` per sample.

    NOTE [ Copy-on-read in forked workers ]
    Workers forked from the main process share its memory pages until one is written.  Reading a Python
    object writes it: the reference count in its header changes.  So a dataset holding a big list of Python
    objects (a list of dicts, of file names, of per-sample labels as ints) is, page by page, copied into
    every worker as the workers touch it over an epoch: with 4 workers and a 1 GiB list the epoch ends
    with ~5 GiB in use.  Keep large per-sample metadata in NumPy arrays or tensors (one object, one
    refcount, the data pages are only read), or wrap the list in ``ember.utils.data.SerializedList``, which
    pickles each item into one NumPy byte buffer.  docs/data.md has the numbers.
    """

    def __getitem__(self, index) -> _T_co:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[_T_co]) -> ConcatDataset[_T_co]:
        return ConcatDataset([self, other])


# typing.Iterable, not collections.abc's: it puts abc.Iterable before Generic in the MRO, as in torch, so
# subclasses that add no type parameters (ChainDataset, most user datasets) are still subscriptable.
class IterableDataset(Dataset[_T_co], typing.Iterable[_T_co]):
    """An iterable-style dataset: ``__iter__`` yields samples (a stream, a file, a generator).

    With num_workers > 0 each worker iterates its own copy of the dataset; shard the stream in
    ``__iter__`` with ``get_worker_info()`` (or in a worker_init_fn), or every worker yields everything.
    """

    def __add__(self, other: Dataset[_T_co]):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the tensors' rows: ``dataset[i] == tuple(t[i] for t in tensors)``."""

    def __init__(self, *tensors) -> None:
        if any(tensors[0].size(0) != tensor.size(0) for tensor in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset[_T_stack]):
    """Zips datasets of equal length: positional ones give tuples, keyword ones give dicts.

    Example::

        >>> images, texts = TensorDataset(ember.zeros(4, 3)), list("abcd")
        >>> StackDataset(image=images, text=texts)[1]["text"]
        'b'
    """

    def __init__(self, *args, **kwargs) -> None:
        if args:
            if kwargs:
                raise ValueError(
                    "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
                    "but both types are given."
                )
            datasets = list(args)
            self.datasets = args
        elif kwargs:
            datasets = list(kwargs.values())
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(self._length != len(dataset) for dataset in datasets):
            raise ValueError("Size mismatch between datasets")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    @staticmethod
    def _items(dataset, indices: list) -> list:
        if callable(getattr(dataset, "__getitems__", None)):
            items = dataset.__getitems__(indices)
            if len(items) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}")
            return items
        return [dataset[index] for index in indices]

    def __getitems__(self, indices: list):
        if isinstance(self.datasets, dict):
            batch = [{} for _ in indices]
            for key, dataset in self.datasets.items():
                for data, sample in zip(self._items(dataset, indices), batch):
                    sample[key] = data
            return batch
        columns = [self._items(dataset, indices) for dataset in self.datasets]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[_T_co]):
    """Map-style datasets one after another; index i goes to the dataset whose range holds it."""

    @staticmethod
    def cumsum(sequence):
        totals, running = [], 0
        for element in sequence:
            running += len(element)
            totals.append(running)
        return totals

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]

    @property
    def cummulative_sizes(self):
        """The old, misspelt name of cumulative_sizes (torch still answers to it, with a FutureWarning)."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning, stacklevel=2)
        return self.cumulative_sizes


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, chained lazily."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(dataset)
        return total


class Subset(Dataset[_T_co]):
    """The samples of `dataset` at `indices`, re-indexed from 0."""

    def __init__(self, dataset: Dataset[_T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ and type(self).__getitems__ is Subset.__getitems__:
            raise NotImplementedError(
                f"{type(self).__name__} overrides __getitem__ but not __getitems__. "
                "When subclassing Subset and overriding __getitem__, you must also override "
                "__getitems__ to ensure DataLoader works correctly with your custom logic. "
                "A simple implementation:\n\n"
                "def __getitems__(self, indices):\n"
                "    return [self.__getitem__(idx) for idx in indices]"
            )

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[idx] for idx in indices])
        return [self.dataset[self.indices[idx]] for idx in indices]

    def __len__(self) -> int:
        return len(self.indices)


def _fraction_lengths(total: int, fractions: Sequence[float]) -> list[int]:
    """torch's rounding: floor each share, then hand the remainder out one by one from the first split."""
    lengths = []
    for i, fraction in enumerate(fractions):
        if fraction < 0 or fraction > 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        lengths.append(math.floor(total * fraction))
    remainder = total - sum(lengths)
    for i in range(remainder):
        lengths[i % len(lengths)] += 1
    for i, length in enumerate(lengths):
        if length == 0:
            warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=3)
    return lengths


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator=default_generator) -> list[Subset]:
    """Split a dataset into non-overlapping random subsets of the given lengths (or fractions summing to 1).

    Example::

        >>> generator = ember.Generator().manual_seed(42)
        >>> [len(s) for s in random_split(range(10), [0.3, 0.3, 0.4], generator=generator)]
        [3, 3, 4]
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        lengths = _fraction_lengths(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    # operator.index: the lengths may be 0-d integer tensors or NumPy integers (torch's randperm takes them)
    indices = ember.randperm(operator.index(sum(lengths)), generator=generator).tolist()
    return [
        Subset(dataset, indices[offset - length : offset])
        for offset, length in zip(itertools.accumulate(lengths), lengths)
    ]
