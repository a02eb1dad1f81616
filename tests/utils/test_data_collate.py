"""default_collate / default_convert: the same structure, dtypes and values as torch's on nested inputs."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
from torch.utils.data import default_collate as torch_collate
from torch.utils.data import default_convert as torch_convert

import ember
from ember.utils.data import default_collate, default_convert

Point = collections.namedtuple("Point", ["x", "y"])


def same(ours, theirs) -> None:
    """Recursively: the same container types and keys, tensors with the same dtype name, shape and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ember.Tensor), type(ours)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        return
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for key in theirs:
            same(ours[key], theirs[key])
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    elif isinstance(theirs, np.ndarray):
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs


def batch_pair(make):
    """The same batch built for ember and for torch (make receives the library)."""
    return make(ember), make(torch)


CASES = {
    "ints": lambda lib: [0, 1, 2],
    "floats": lambda lib: [0.5, 1.5],
    "bools": lambda lib: [True, False],
    "strings": lambda lib: ["a", "b"],
    "bytes": lambda lib: [b"a", b"b"],
    "tensors": lambda lib: [lib.ones(2, 3), lib.zeros(2, 3)],
    "int tensors": lambda lib: [lib.arange(3), lib.arange(3)],
    "scalar tensors": lambda lib: [lib.tensor(1.0), lib.tensor(2.0)],
    "numpy arrays": lambda lib: [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "numpy scalars": lambda lib: [np.float64(1.5), np.float64(2.5)],
    "numpy ints": lambda lib: [np.int32(1), np.int32(2)],
    "tuples": lambda lib: [(1, "a", lib.ones(2)), (2, "b", lib.zeros(2))],
    "lists": lambda lib: [[1, 2.0], [3, 4.0]],
    "dicts": lambda lib: [
        {"x": lib.ones(1), "y": 1, "z": {"w": [1.0, 2.0]}},
        {"x": lib.zeros(1), "y": 2, "z": {"w": [3.0, 4.0]}},
    ],
    "namedtuples": lambda lib: [Point(1, lib.ones(2)), Point(2, lib.zeros(2))],
    "ordered dicts": lambda lib: [collections.OrderedDict(a=1, b=2.0), collections.OrderedDict(a=3, b=4.0)],
    "deep": lambda lib: [[{"a": (np.array([1, 2]), "s")}], [{"a": (np.array([3, 4]), "t")}]],
}


@pytest.mark.parametrize("name", list(CASES))
def test_default_collate_matches_torch(name):
    ours, theirs = batch_pair(CASES[name])
    same(default_collate(ours), torch_collate(theirs))


@pytest.mark.parametrize("name", list(CASES))
def test_default_convert_matches_torch(name):
    ours, theirs = batch_pair(CASES[name])
    same(default_convert(ours), torch_convert(theirs))


def test_default_convert_on_single_samples():
    same(default_convert(np.array([0, 1])), torch_convert(np.array([0, 1])))
    same(default_convert(Point(np.array(0), "s")), torch_convert(Point(np.array(0), "s")))
    same(default_convert(np.array(["a", "b"])), torch_convert(np.array(["a", "b"])))
    assert default_convert(3) == 3


def test_ragged_sequences_raise_torch_message_with_sizes():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size") as info:
        default_collate([[1, 2, 3], [4, 5]])
    assert "element 0 has size 3, element 1 has size 2" in str(info.value)
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        torch_collate([[1, 2, 3], [4, 5]])


def test_ragged_tensors_name_their_shapes():
    with pytest.raises(RuntimeError) as ours:
        default_collate([ember.ones(3), ember.ones(4)])
    with pytest.raises(RuntimeError) as theirs:
        torch_collate([torch.ones(3), torch.ones(4)])
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("batch", [[object(), object()], [np.array(["a"]), np.array(["b"])]])
def test_unsupported_types_raise_type_error(batch):
    with pytest.raises(TypeError) as ours:
        default_collate(batch)
    with pytest.raises(TypeError) as theirs:
        torch_collate(batch)
    assert str(ours.value).split("found")[0] == str(theirs.value).split("found")[0]
