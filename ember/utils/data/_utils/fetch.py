"""Fetchers: turn one index (or a batch of indices) into one collated sample or batch.

Shared by the single-process iterator and the worker loop, so both paths build
a batch with exactly the same code (DESIGN.md: the single-process path is the
reference the multi-process one must equal).
"""

from __future__ import annotations

import ember

from ..dataset import TensorDataset
from .collate import default_collate


class _BaseDatasetFetcher:
    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, possibly_batched_index):
        raise NotImplementedError


class _IterableDatasetFetcher(_BaseDatasetFetcher):
    def __init__(self, dataset, auto_collation, collate_fn, drop_last) -> None:
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.dataset_iter = iter(dataset)
        self.ended = False

    def fetch(self, possibly_batched_index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in possibly_batched_index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(possibly_batched_index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


class _MapDatasetFetcher(_BaseDatasetFetcher):
    def _rows_of_tensors(self) -> bool:
        """A plain TensorDataset (not a subclass, which may override __getitem__) under default_collate."""
        return type(self.dataset) is TensorDataset and self.collate_fn is default_collate

    @staticmethod
    def _plain_int_batch(index) -> bool:
        """A non-empty list/tuple/range of Python ints: what the fast path may index with.

        Anything else (tensors or arrays from a custom batch_sampler, bools, floats) takes the per-sample path,
        which indexes each row as torch does (a bool adds a dimension, a float is an IndexError).
        """
        return isinstance(index, (list, tuple, range)) and len(index) > 0 and all(type(i) is int for i in index)

    def fetch(self, possibly_batched_index):
        if self.auto_collation and self._plain_int_batch(possibly_batched_index) and self._rows_of_tensors():
            # default_collate of TensorDataset samples stacks rows: one indexing per tensor gives the same batch
            # (values, dtypes, shapes, a list as collate returns for tuples) without a Python-level op per
            # sample (an epoch of 20k 3x32x32 samples: 2x slower than torch before, see bench/data.py)
            index = ember.tensor(possibly_batched_index, dtype=ember.int64)
            return [tensor[index] for tensor in self.dataset.tensors]
        if self.auto_collation:
            if hasattr(self.dataset, "__getitems__") and self.dataset.__getitems__:
                data = self.dataset.__getitems__(possibly_batched_index)
            else:
                data = [self.dataset[idx] for idx in possibly_batched_index]
        else:
            data = self.dataset[possibly_batched_index]
        return self.collate_fn(data)
