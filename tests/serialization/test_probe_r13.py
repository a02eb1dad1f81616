"""Checkpoint interop found by probing torch 2.13 against ember: files torch writes without CRCs,
full (weights_only=False) loads of pickled torch modules, and get_unsafe_globals_in_checkpoint."""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _torch_saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


class _TorchNet(torch.nn.Module):
    """A user's model class built on torch.nn.Module, pickled whole by torch.save."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)


class _Opaque:
    pass


# ---------------------------------------------------------------- records without a CRC


@pytest.fixture
def no_crc32():
    torch.serialization.set_crc32_options(False)
    yield
    torch.serialization.set_crc32_options(True)


@pytest.mark.parametrize("mmap", [False, True])
def test_checkpoint_written_without_crcs_loads(tmp_path, no_crc32, mmap):
    # torch.serialization.set_crc32_options(False) records CRC 0 for every record; torch.load reads it.
    source = {"w": torch.arange(6.0).reshape(2, 3), "step": 3}
    path = tmp_path / "nocrc.pt"
    torch.save(source, path)
    loaded = ember.load(path, mmap=mmap)
    assert loaded["step"] == 3
    np.testing.assert_array_equal(loaded["w"].numpy(), source["w"].numpy())


def test_skip_data_checkpoint_loads_as_torch_loads_it():
    # torch.serialization.skip_data() leaves the storages' space empty, with CRC 0.
    buffer = io.BytesIO()
    with torch.serialization.skip_data():
        torch.save({"w": torch.arange(3.0), "b": torch.ones(2, dtype=torch.int64)}, buffer)
    expected = torch.load(io.BytesIO(buffer.getvalue()))
    loaded = ember.load(io.BytesIO(buffer.getvalue()))
    for key in expected:
        assert tuple(loaded[key].shape) == tuple(expected[key].shape)
        np.testing.assert_array_equal(loaded[key].numpy(), expected[key].numpy())


# ---------------------------------------------------------------- full loads of torch modules


def test_full_load_finds_torch_modules_ember_keeps_in_other_files():
    # torch's nn/modules/batchnorm.py is not a file of ember's: the class is found in ember.nn.
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU()).eval()
    loaded = ember.load(io.BytesIO(_torch_saved(model)), weights_only=False)
    assert isinstance(loaded[1], ember.nn.BatchNorm2d)
    x = np.random.default_rng(0).standard_normal((1, 1, 5, 5)).astype(np.float32)
    expected = model(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(loaded(ember.tensor(x)).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_full_load_of_a_torch_module_subclass_is_refused_clearly():
    data = _torch_saved(_TorchNet())
    with pytest.raises(pickle.UnpicklingError, match="subclass of torch's torch.nn.modules.module.Module") as info:
        ember.load(io.BytesIO(data), weights_only=False)
    assert "not a valid" not in str(info.value) and "state_dict" in str(info.value)


def test_full_load_of_a_torch_class_ember_lacks_is_not_called_corrupt():
    data = _torch_saved(torch.Generator())
    with pytest.raises(pickle.UnpicklingError, match="ember has no Generator") as info:
        ember.load(io.BytesIO(data), weights_only=False)
    assert "not a valid" not in str(info.value)


# ---------------------------------------------------------------- get_unsafe_globals_in_checkpoint


def test_get_unsafe_globals_in_checkpoint_matches_torch(tmp_path):
    source = {
        "opaque": _Opaque(),
        "set": {1, 2},
        "w": torch.ones(2),
        "order": collections.OrderedDict(a=1),
        "complex": 1 + 2j,
        "counter": collections.Counter("ab"),
    }
    data = _torch_saved(source)
    expected = torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))
    assert expected == [f"{__name__}._Opaque"]
    assert ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == expected
    path = tmp_path / "unsafe.pt"
    path.write_bytes(data)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == expected
    with ember.serialization.safe_globals([_Opaque]):
        assert ember.serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert ember.load(path, weights_only=False)["opaque"].__class__ is _Opaque


def test_get_unsafe_globals_in_checkpoint_of_a_non_checkpoint():
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
        torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
        ember.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"not a zip"))
