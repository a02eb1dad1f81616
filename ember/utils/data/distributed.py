"""DistributedSampler: each of num_replicas processes reads its own interleaved share of the indices."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TypeVar

import ember

from .sampler import Sampler

__all__ = ["DistributedSampler"]

_T_co = TypeVar("_T_co", covariant=True)


def _distributed_setting(name: str) -> int:
    """world size or rank from ember.distributed when it exists and is initialised (torch's defaults)."""
    distributed = getattr(ember, "distributed", None)
    if distributed is None or not getattr(distributed, "is_available", lambda: False)():
        raise RuntimeError("Requires distributed package to be available")
    return getattr(distributed, name)()


class DistributedSampler(Sampler[_T_co]):
    """Restricts loading to this rank's share of the dataset (torch's algorithm, padding and partition).

    The indices (a permutation seeded with ``seed + epoch`` when shuffle, else 0..n-1) are padded by
    repeating them from the start up to a multiple of num_replicas (or cut to one, with drop_last), and
    rank r takes positions r, r + num_replicas, r + 2 * num_replicas, ...  Call ``set_epoch`` before each
    epoch for a new shuffle.

    Args:
        dataset: the dataset to sample from
        num_replicas: the number of processes (default: the distributed world size)
        rank: this process's rank (default: the distributed rank)
        shuffle: shuffle the indices (default True)
        seed: the shuffle seed, the same on every rank (default 0)
        drop_last: drop the tail instead of padding, so every rank gets the same number of distinct indices
    """

    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None:
            num_replicas = _distributed_setting("get_world_size")
        if rank is None:
            rank = _distributed_setting("get_rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:
            # Drop the tail so that each rank receives the same amount of data.
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def _permutation(self) -> list[int]:
        """This epoch's order before partitioning; the only random step, kept apart so tests can fix it."""
        if self.shuffle:
            generator = ember.Generator()
            generator.manual_seed(self.seed + self.epoch)
            return ember.randperm(len(self.dataset), generator=generator).tolist()
        return list(range(len(self.dataset)))

    def __iter__(self) -> Iterator[_T_co]:
        indices = self._permutation()
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank : self.total_size : self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(
                f"Number of subsampled indices ({len(indices)}) does not match num_samples ({self.num_samples})"
            )
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch, which seeds this epoch's shuffle (the same on every rank)."""
        self.epoch = epoch
