"""DataLoader behaviour: torch parity (len, batch structure, argument errors), workers == single process."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata
from ember_data_helpers import Augmented, Counter, Squares, WithOffset, add_offset_init

import ember
import ember.utils.data as edata


def as_lists(batches):
    """Batches as nested Python values, for equality across runs."""

    def convert(value):
        if isinstance(value, ember.Tensor):
            return value.tolist()
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [convert(v) for v in value]
        return value

    return [convert(b) for b in batches]


class TorchSquares(tdata.Dataset):
    def __init__(self, n=20):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([float(i)]), i * i


@pytest.mark.parametrize("batch_size", [1, 3, 7, None])
@pytest.mark.parametrize("drop_last", [False, True])
def test_sequential_batches_and_len_match_torch(batch_size, drop_last):
    if batch_size is None and drop_last:
        pytest.skip("an error case, tested below")
    ours = edata.DataLoader(Squares(20), batch_size=batch_size, drop_last=drop_last)
    theirs = tdata.DataLoader(TorchSquares(20), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    ours_batches, theirs_batches = list(ours), list(theirs)
    assert len(ours_batches) == len(theirs_batches) == len(theirs)
    for a, b in zip(ours_batches, theirs_batches):
        assert type(a) is type(b)
        assert tuple(a[0].shape) == tuple(b[0].shape) and a[0].tolist() == b[0].tolist()
        assert (a[1].tolist() if isinstance(a[1], ember.Tensor) else a[1]) == (
            b[1].tolist() if isinstance(b[1], torch.Tensor) else b[1]
        )
        if isinstance(b[1], torch.Tensor):
            assert str(a[1].dtype).split(".")[-1] == str(b[1].dtype).split(".")[-1]


def test_batch_sampler_and_sampler_options():
    batch_sampler = [[3, 1], [0], [2, 2, 2]]
    ours = [b[1].tolist() for b in edata.DataLoader(Squares(5), batch_sampler=batch_sampler)]
    assert ours == [[9, 1], [0], [4, 4, 4]]
    sampler = [4, 0, 3]
    assert [b[1].tolist() for b in edata.DataLoader(Squares(5), sampler=sampler, batch_size=2)] == [[16, 0], [9]]


class TorchStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class EmberStream(edata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("batch_size, drop_last", [(4, False), (4, True), (None, False), (1, False)])
def test_iterable_len_and_batches_match_torch(batch_size, drop_last):
    ours = edata.DataLoader(EmberStream(10), batch_size=batch_size, drop_last=drop_last)
    theirs = tdata.DataLoader(TorchStream(10), batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(theirs)
    assert [b.tolist() if hasattr(b, "tolist") else b for b in ours] == [
        b.tolist() if hasattr(b, "tolist") else b for b in theirs
    ]


ERROR_CASES = [
    ({"num_workers": -1}, ValueError),
    ({"timeout": -1}, ValueError),
    ({"prefetch_factor": 2}, ValueError),
    ({"num_workers": 1, "prefetch_factor": -1}, ValueError),
    ({"persistent_workers": True}, ValueError),
    ({"sampler": [0, 1], "shuffle": True}, ValueError),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError),
    ({"batch_size": None, "drop_last": True}, ValueError),
    ({"multiprocessing_context": "fork"}, ValueError),
    ({"num_workers": 1, "multiprocessing_context": "nope"}, ValueError),
    ({"num_workers": 1, "multiprocessing_context": 3}, TypeError),
]


@pytest.mark.parametrize("kwargs, error", ERROR_CASES)
def test_argument_errors_match_torch(kwargs, error):
    with pytest.raises(error) as ours:
        edata.DataLoader(Squares(4), **kwargs)
    with pytest.raises(error) as theirs:
        tdata.DataLoader(TorchSquares(4), **kwargs)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("kwargs", [{"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}])
def test_iterable_dataset_option_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as ours:
        edata.DataLoader(EmberStream(3), **kwargs)
    with pytest.raises(ValueError) as theirs:
        tdata.DataLoader(TorchStream(3), **kwargs)
    assert str(ours.value).split("=")[0] == str(theirs.value).split("=")[0]


def test_attributes_frozen_after_init_and_single_process_timeout():
    loader = edata.DataLoader(Squares(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires timeout == 0"):
        iter(edata.DataLoader(Squares(4), timeout=1))


def test_pin_memory_is_accepted_and_warns_like_torch():
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        batches = list(edata.DataLoader(Squares(4), batch_size=2, pin_memory=True))
    assert len(batches) == 2


def test_iterable_len_overrun_warns():
    loader = edata.DataLoader(EmberStream(5), batch_size=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        len(loader)
        loader.dataset.n = 6
        list(loader)
    assert any("was reported to be 5" in str(w.message) for w in caught)


@pytest.mark.parametrize("in_order", [True, False])
def test_workers_equal_single_process_batch_for_batch(in_order):
    def run(num_workers):
        loader = edata.DataLoader(
            Squares(37),
            batch_size=4,
            shuffle=True,
            num_workers=num_workers,
            generator=ember.Generator().manual_seed(11),
            in_order=in_order,
        )
        return [as_lists(list(loader)) for _ in range(2)]  # two epochs

    single, multi = run(0), run(2)
    if in_order:
        assert multi == single
    else:
        for a, b in zip(single, multi):
            assert sorted(map(str, a)) == sorted(map(str, b))
    assert single[0] != single[1]  # each epoch reshuffles


def test_persistent_workers_reproducible_and_first_epoch_matches_fresh():
    """As in torch, persistent workers draw the base seed once (not per epoch), so only epoch 1 lines up."""

    def run(persistent):
        loader = edata.DataLoader(
            Squares(13),
            batch_size=3,
            shuffle=True,
            num_workers=2,
            persistent_workers=persistent,
            generator=ember.Generator().manual_seed(5),
        )
        epochs = [as_lists(list(loader)) for _ in range(3)]
        if persistent:
            assert loader._iterator._workers[0].is_alive()
            loader._iterator._shutdown_workers()
        return epochs

    persistent = run(True)
    assert persistent == run(True)
    assert persistent[0] == run(False)[0]
    for epoch in persistent:
        assert sorted(i for batch in epoch for i in batch[1]) == [i * i for i in range(13)]


def test_worker_seeding_is_torch_rule_and_reproducible():
    seed = 123
    expected_base = int(
        ember.empty((), dtype=ember.int64).random_(generator=ember.Generator().manual_seed(seed)).item()
    )
    seeds = []

    def record(worker_id):
        info = edata.get_worker_info()
        assert info.id == worker_id and info.num_workers == 2 and info.dataset is not None
        seeds.append(info.seed)  # (in the worker's copy; checked via the samples below)

    def run():
        loader = edata.DataLoader(
            Augmented(8),
            batch_size=2,
            num_workers=2,
            worker_init_fn=record,
            generator=ember.Generator().manual_seed(seed),
        )
        return as_lists(list(loader))

    first, second = run(), run()
    assert first == second  # the same generator seed: the same worker seeds, the same augmentation
    assert edata.get_worker_info() is None
    # worker w's first sample is drawn right after seeding with base_seed + w
    for worker_id, batch in ((0, first[0]), (1, first[1])):
        ember.manual_seed(expected_base + worker_id)
        assert batch["noise"][0] == pytest.approx(float(ember.rand(()).item()))
        import random

        random.seed(expected_base + worker_id)
        assert batch["py"][0] == pytest.approx(random.random())


def test_worker_init_fn_sees_worker_info():
    loader = edata.DataLoader(WithOffset(), batch_size=2, num_workers=2, worker_init_fn=add_offset_init)
    assert [b.tolist() for b in loader] == [[1000, 1001], [2002, 2003], [1004, 1005], [2006, 2007]]


def test_iterable_dataset_sharded_by_worker_info():
    loader = edata.DataLoader(Counter(0, 23), batch_size=4, num_workers=2)
    batches = [b.tolist() for b in loader]
    assert batches == [
        [0, 2, 4, 6],
        [1, 3, 5, 7],
        [8, 10, 12, 14],
        [9, 11, 13, 15],
        [16, 18, 20, 22],
        [17, 19, 21],
    ]


def _torch_unequal_iter():
    info = tdata.get_worker_info()
    worker_id = 0 if info is None else info.id
    return iter(range(100 * worker_id, 100 * worker_id + 3 * (worker_id + 1)))


class TorchUnequal(tdata.IterableDataset):
    def __iter__(self):
        return _torch_unequal_iter()


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("num_workers", [2, 3])
def test_workers_exhausting_at_different_times_match_torch(num_workers):
    from ember_data_helpers import Unequal

    ours = [b.tolist() for b in edata.DataLoader(Unequal(), batch_size=2, num_workers=num_workers)]
    theirs = [b.tolist() for b in tdata.DataLoader(TorchUnequal(), batch_size=2, num_workers=num_workers)]
    assert ours == theirs


def test_spawn_context_matches_fork():
    def run(context):
        loader = edata.DataLoader(
            Squares(10),
            batch_size=3,
            num_workers=2,
            multiprocessing_context=context,
            shuffle=True,
            generator=ember.Generator().manual_seed(1),
        )
        return as_lists(list(loader))

    assert run("spawn") == run("fork") == run(None)


def test_batches_arrive_as_tensors_over_shared_memory_and_pickle(monkeypatch):
    from ember.utils.data import dataloader

    dataset = edata.TensorDataset(ember.randn(10, 3, 4), ember.arange(10))
    reference = as_lists(list(edata.DataLoader(dataset, batch_size=4)))
    for transport in ("shared_memory", "pickle"):
        monkeypatch.setattr(dataloader, "BATCH_TRANSPORT", transport)
        batches = list(edata.DataLoader(dataset, batch_size=4, num_workers=2))
        assert as_lists(batches) == reference
        batches[0][0].add_(1)  # a batch received through shared memory is an ordinary writable tensor
        assert batches[0][1].dtype == ember.int64


def test_no_collation_with_batch_size_none_uses_default_convert():
    class Arrays(edata.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"a": np.full(2, i), "s": "x"}

    for workers in (0, 2):
        out = list(edata.DataLoader(Arrays(), batch_size=None, num_workers=workers))
        assert [o["a"].tolist() for o in out] == [[0, 0], [1, 1], [2, 2]] and out[0]["s"] == "x"


@pytest.mark.parametrize("workers", [0, 2])
def test_tensor_dataset_batches_equal_the_per_sample_path(workers):
    """A plain TensorDataset under default_collate is fetched with one indexing per tensor; the batches equal
    the per-sample path's (a subclass, or any other collate_fn, takes that path) and torch's."""
    import torch

    from ember.utils.data import TensorDataset
    from ember.utils.data._utils.collate import default_collate

    class Subclassed(TensorDataset):
        pass

    values = np.random.default_rng(0).standard_normal((23, 2, 3)).astype(np.float32)
    labels = np.arange(23) % 5
    tensors = (ember.tensor(values), ember.tensor(labels), ember.tensor(labels > 2))

    def batches(dataset, **kwargs):
        loader = ember.utils.data.DataLoader(dataset, batch_size=5, shuffle=True, num_workers=workers,
                                             generator=ember.Generator().manual_seed(1), **kwargs)
        return [[t.numpy() for t in batch] for batch in loader]

    fast = batches(TensorDataset(*tensors))
    slow = batches(Subclassed(*tensors))
    collated = batches(TensorDataset(*tensors), collate_fn=lambda samples: default_collate(samples))
    for path in (slow, collated):
        assert len(fast) == len(path) == 5
        for a, b in zip(fast, path):
            assert all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))
    # against torch in order (the two libraries' generators shuffle differently)
    ours = ember.utils.data.DataLoader(TensorDataset(*tensors), batch_size=5, num_workers=workers)
    theirs = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*(torch.from_numpy(t.numpy()) for t in tensors)), batch_size=5)
    for a, b in zip(ours, theirs, strict=True):
        assert isinstance(a, list) and isinstance(b, list)
        assert all(str(x.dtype) == str(y.dtype).replace("torch", "ember") and np.array_equal(x.numpy(), y.numpy())
                   for x, y in zip(a, b))
