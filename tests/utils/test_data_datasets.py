"""Datasets, samplers and DistributedSampler: parity with torch.utils.data where deterministic."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata


def test_tensor_dataset_and_size_mismatch():
    dataset = edata.TensorDataset(ember.arange(6).reshape(3, 2), ember.arange(3))
    x, y = dataset[1]
    assert x.tolist() == [2, 3] and y.item() == 1 and len(dataset) == 3
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        edata.TensorDataset(ember.zeros(3), ember.zeros(4))


def test_stack_dataset_tuple_dict_and_errors():
    a, b = list(range(5)), [c for c in "abcde"]
    assert edata.StackDataset(a, b)[2] == (2, "c")
    assert edata.StackDataset(x=a, y=b)[3] == {"x": 3, "y": "d"}
    assert edata.StackDataset(a, b).__getitems__([0, 4]) == [(0, "a"), (4, "e")]
    for args, kwargs in [((a,), {"y": b}), ((a, [1]), {}), ((), {})]:
        with pytest.raises(ValueError) as ember_error:
            edata.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError) as torch_error:
            tdata.StackDataset(*args, **kwargs)
        assert str(ember_error.value) == str(torch_error.value)


def test_concat_subset_chain():
    concat = edata.ConcatDataset([list(range(3)), list(range(10, 15))])
    reference = tdata.ConcatDataset([list(range(3)), list(range(10, 15))])
    assert len(concat) == len(reference) == 8
    assert [concat[i] for i in range(-8, 8)] == [reference[i] for i in range(-8, 8)]
    assert concat.cumulative_sizes == reference.cumulative_sizes
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        concat[-9]
    subset = edata.Subset(list("abcdef"), [5, 0, 2])
    assert [subset[i] for i in range(3)] == ["f", "a", "c"] and subset.__getitems__([0, 2]) == ["f", "c"]

    class Stream(edata.IterableDataset):
        def __init__(self, values):
            self.values = values

        def __iter__(self):
            return iter(self.values)

        def __len__(self):
            return len(self.values)

    chain = Stream([1, 2]) + Stream([3])
    assert isinstance(chain, edata.ChainDataset) and list(chain) == [1, 2, 3] and len(chain) == 3
    assert isinstance(edata.TensorDataset(ember.zeros(2)) + edata.TensorDataset(ember.zeros(3)), edata.ConcatDataset)


@pytest.mark.parametrize(
    "n, lengths",
    [
        (10, [3, 7]),
        (10, [0.3, 0.7]),
        (11, [0.5, 0.5]),
        (7, [0.2, 0.2, 0.2, 0.2, 0.2]),
        (3, [0.1, 0.1, 0.8]),
        (100, [1.0]),
    ],
)
def test_random_split_lengths_match_torch(n, lengths):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Length of split at index 1 is 0", from both
        ours = edata.random_split(range(n), lengths, generator=ember.Generator().manual_seed(0))
        theirs = tdata.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == list(range(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = edata.random_split(range(n), lengths, generator=ember.Generator().manual_seed(0))
    assert [list(s) for s in again] == [list(s) for s in ours]


def test_random_split_errors_match_torch():
    for lengths in ([3, 3], [1.2, -0.2]):
        with pytest.raises(ValueError) as ember_error:
            edata.random_split(range(10), lengths)
        with pytest.raises(ValueError) as torch_error:
            tdata.random_split(range(10), lengths)
        assert str(ember_error.value) == str(torch_error.value)


def test_sequential_and_batch_sampler_match_torch():
    assert list(edata.SequentialSampler(range(7))) == list(tdata.SequentialSampler(range(7)))
    for batch_size in (1, 3, 7, 10):
        for drop_last in (False, True):
            ours = edata.BatchSampler(edata.SequentialSampler(range(7)), batch_size, drop_last)
            theirs = tdata.BatchSampler(tdata.SequentialSampler(range(7)), batch_size, drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("batch_size, drop_last", [(0, False), (True, False), (2.5, False), (2, 1)])
def test_batch_sampler_errors_match_torch(batch_size, drop_last):
    with pytest.raises(ValueError) as ember_error:
        edata.BatchSampler(range(3), batch_size, drop_last)
    with pytest.raises(ValueError) as torch_error:
        tdata.BatchSampler(range(3), batch_size, drop_last)
    assert str(ember_error.value) == str(torch_error.value)


def test_random_sampler_properties_and_reproducibility():
    sampler = edata.RandomSampler(range(10), generator=ember.Generator().manual_seed(3))
    first = list(sampler)
    assert sorted(first) == list(range(10)) and len(sampler) == 10
    assert list(edata.RandomSampler(range(10), generator=ember.Generator().manual_seed(3))) == first
    more = edata.RandomSampler(range(4), num_samples=10, generator=ember.Generator().manual_seed(0))
    drawn = list(more)
    assert len(drawn) == 10 and sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]
    replaced = list(edata.RandomSampler(range(5), replacement=True, num_samples=70))
    assert len(replaced) == 70 and set(replaced) <= set(range(5))
    for kwargs, error in [({"replacement": 1}, TypeError), ({"num_samples": 0}, ValueError)]:
        with pytest.raises(error) as ember_error:
            edata.RandomSampler(range(3), **kwargs)
        with pytest.raises(error) as torch_error:
            tdata.RandomSampler(range(3), **kwargs)
        assert str(ember_error.value) == str(torch_error.value)


def test_subset_and_weighted_samplers():
    subset = list(edata.SubsetRandomSampler([10, 20, 30], generator=ember.Generator().manual_seed(1)))
    assert sorted(subset) == [10, 20, 30]
    weighted = list(edata.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 200))
    assert len(weighted) == 200 and set(weighted) == {1, 3}
    assert sorted(edata.WeightedRandomSampler([1, 1, 1], 3, replacement=False)) == [0, 1, 2]
    for args in [([1, 2], 0), ([1, 2], 1, 0), ([[1, 2]], 1)]:
        with pytest.raises(ValueError) as ember_error:
            edata.WeightedRandomSampler(*args)
        with pytest.raises(ValueError) as torch_error:
            tdata.WeightedRandomSampler(*args)
        assert str(ember_error.value) == str(torch_error.value)


@pytest.mark.parametrize("n", [10, 11, 3, 1])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_unshuffled_matches_torch(n, replicas, drop_last):
    if drop_last and n < replicas:
        pytest.skip("torch itself yields nothing useful here")
    for rank in range(replicas):
        ours = edata.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = tdata.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (13, 4, True)])
def test_distributed_sampler_shuffled_partition_matches_torch(monkeypatch, n, replicas, drop_last):
    """torch's permutation can't be reproduced bit for bit: give both the same one, compare padding/partition."""
    fixed = list(reversed(range(n)))
    real_randperm = torch.randperm

    def torch_randperm(size, generator=None, **kwargs):
        assert generator.initial_seed() == 7 + 2  # seed + epoch
        return torch.tensor(fixed) if size == n else real_randperm(size, generator=generator, **kwargs)

    monkeypatch.setattr(torch, "randperm", torch_randperm)
    monkeypatch.setattr(edata.DistributedSampler, "_permutation", lambda self: list(fixed))
    for rank in range(replicas):
        ours = edata.DistributedSampler(range(n), replicas, rank, shuffle=True, seed=7, drop_last=drop_last)
        theirs = tdata.DistributedSampler(range(n), replicas, rank, shuffle=True, seed=7, drop_last=drop_last)
        ours.set_epoch(2)
        theirs.set_epoch(2)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_epochs_and_errors():
    sampler = edata.DistributedSampler(range(20), 2, 0, seed=1)
    epoch0 = list(sampler)
    assert list(sampler) == epoch0
    sampler.set_epoch(1)
    assert list(sampler) != epoch0
    other = edata.DistributedSampler(range(20), 2, 1, seed=1)
    assert sorted(epoch0 + list(other)) == list(range(20))
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        edata.DistributedSampler(range(4), 2, 2)
