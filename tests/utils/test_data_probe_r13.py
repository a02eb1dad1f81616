"""Regressions found probing ember.utils.data against torch.utils.data (round 13)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.utils.data as edata

torch = pytest.importorskip("torch")
tdata = torch.utils.data


def _warning_messages(lib_data, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(lib_data.DataLoader(list(range(4)), batch_size=2, **kwargs))
    return batches, [str(w.message) for w in caught]


def test_pin_memory_device_deprecation_warning_as_torch():
    """torch warns that pin_memory_device is deprecated (before the no-accelerator warning); ember did not."""
    kwargs = {"pin_memory": True, "pin_memory_device": "cpu"}
    ours, our_messages = _warning_messages(edata, **kwargs)
    theirs, their_messages = _warning_messages(tdata, **kwargs)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert our_messages == their_messages
    assert our_messages[0].startswith("pin_memory_device is deprecated")
    # without pin_memory the device string is ignored silently, as torch
    assert _warning_messages(edata, pin_memory_device="cpu")[1] == []


@pytest.mark.parametrize("kind", ["tensor", "numpy", "mixed"])
def test_random_split_accepts_tensor_and_numpy_lengths(kind):
    """torch.randperm takes a 0-d integer tensor, so random_split works with tensor lengths; ember raised."""
    lengths = {
        "tensor": ember.tensor([3, 7]),
        "numpy": np.array([3, 7]),
        "mixed": [ember.tensor(3), np.int64(7)],
    }[kind]
    splits = edata.random_split(range(10), lengths, generator=ember.Generator().manual_seed(0))
    assert [len(s) for s in splits] == [3, 7]
    assert sorted(list(splits[0]) + list(splits[1])) == list(range(10))
    fractions = edata.random_split(range(10), ember.tensor([0.3, 0.7]))
    assert [len(s) for s in fractions] == [len(s) for s in tdata.random_split(range(10), torch.tensor([0.3, 0.7]))]


def _tensor_dataset(lib):
    return lib.utils.data.TensorDataset(lib.arange(6), lib.arange(6.0) * 2)


def _outcome(fn):
    try:
        return "ok", [[t.tolist() for t in batch] for batch in fn()]
    except Exception as error:  # noqa: BLE001 - comparing the exception types
        return "error", type(error).__name__


@pytest.mark.parametrize(
    "batches",
    [
        pytest.param(lambda lib: [lib.tensor([0, 1]), lib.tensor([4])], id="tensors"),
        pytest.param(lambda lib: [np.array([0, 1]), np.array([4])], id="numpy"),
        pytest.param(lambda lib: [[True, False]], id="bools"),
        pytest.param(lambda lib: [[1.0, 2.0]], id="floats"),
        pytest.param(lambda lib: [range(1, 4), (0, 5)], id="range-tuple"),
    ],
)
def test_tensor_dataset_fast_path_only_for_int_batches(batches):
    """TensorDataset's one-indexing fetch took any batch of indices: a batch_sampler yielding tensors or arrays
    crashed on truth-testing them, and bools / floats were silently converted where torch's per-sample path
    indexes each row (a bool adds a dimension, so stacking fails; a float is an IndexError)."""
    ours = _outcome(lambda: list(edata.DataLoader(_tensor_dataset(ember), batch_sampler=batches(ember))))
    theirs = _outcome(lambda: list(tdata.DataLoader(_tensor_dataset(torch), batch_sampler=batches(torch))))
    assert ours == theirs


def test_worker_info_has_torchs_fields():
    info = edata._utils.worker.WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    theirs = tdata._utils.worker.WorkerInfo(id=0, num_workers=1, seed=5, dataset=None)
    assert (info.rng, info.worker_method) == (theirs.rng, theirs.worker_method) == (None, "multiprocessing")


class _Scalars(edata.Dataset):
    """0-d tensors of several dtypes, plus a non-contiguous view, plus the intra-op thread count."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i == 5:
            return ember.get_num_threads()
        return [
            ember.tensor(True),
            ember.tensor(1.5),
            ember.tensor(3),
            ember.tensor(2.0, dtype=ember.bfloat16),
            ember.arange(6.0).reshape(2, 3).t(),
        ][i]


def test_zero_dim_tensors_keep_their_shape_through_workers_and_workers_use_one_thread():
    """The shared-memory transport used np.ascontiguousarray, which makes a 0-d array 1-d: a worker's scalar
    tensor (batch_size=None, or a collate_fn returning one) arrived with shape (1,).  And torch's workers call
    set_num_threads(1); ember's kept the parent's count."""
    single = list(edata.DataLoader(_Scalars(), batch_size=None))
    workers = list(edata.DataLoader(_Scalars(), batch_size=None, num_workers=1))
    assert single.pop() == ember.get_num_threads()
    assert workers.pop() == 1
    assert [tuple(t.shape) for t in workers] == [tuple(t.shape) for t in single] == [(), (), (), (), (3, 2)]
    assert [t.dtype for t in workers] == [t.dtype for t in single]
    assert [t.tolist() for t in workers] == [t.tolist() for t in single]
