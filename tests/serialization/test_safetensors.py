"""ember.safetensors: the format written and read directly, cross-checked with the safetensors package."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import ember
from ember import safetensors as st

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64"]


def _tensors():
    out = {}
    for index, name in enumerate(DTYPES):
        values = ember.arange(6, dtype=ember.float64).reshape(2, 3) - index
        out[f"layer.{index}.{name}"] = values.to(getattr(ember, name))
    out["scalar"] = ember.tensor(2.5)
    out["empty"] = ember.zeros(0, 4)
    out["strided"] = ember.arange(12.0).reshape(3, 4).t()
    return out


def _equal(a, b) -> None:
    assert a.dtype is b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.asarray(a._data), np.asarray(b._data))


def test_round_trip_file_and_bytes(tmp_path):
    tensors = _tensors()
    st.save_file(tensors, tmp_path / "m.safetensors", metadata={"format": "pt"})
    loaded = st.load_file(tmp_path / "m.safetensors")
    assert sorted(loaded) == sorted(tensors)
    for name in tensors:
        _equal(loaded[name], tensors[name])
    from_bytes = st.load(st.save(tensors))
    for name in tensors:
        _equal(from_bytes[name], tensors[name])


def test_header_layout(tmp_path):
    st.save_file(
        {"b": ember.ones(3, dtype=ember.float16), "a": ember.ones(2)}, tmp_path / "x.safetensors", metadata={"k": "v"}
    )
    data = (tmp_path / "x.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    assert length % 8 == 0
    header = json.loads(data[8 : 8 + length])
    assert header["__metadata__"] == {"k": "v"}
    assert header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["b"] == {"dtype": "F16", "shape": [3], "data_offsets": [8, 14]}
    assert len(data) == 8 + length + 14


def test_safe_open_keys_slices_metadata(tmp_path):
    st.save_file(
        {"w": ember.arange(20.0).reshape(4, 5), "b": ember.ones(2)}, tmp_path / "m.safetensors", metadata={"step": "3"}
    )
    with st.safe_open(tmp_path / "m.safetensors", framework="pt") as opened:
        assert opened.keys() == ["b", "w"] and opened.metadata() == {"step": "3"}
        part = opened.get_slice("w")
        assert part.get_shape() == [4, 5] and part.get_dtype() == "F32"
        assert part[1:3, ::2].tolist() == [[5.0, 7.0, 9.0], [10.0, 12.0, 14.0]]
        assert isinstance(opened.get_tensor("w"), ember.Tensor)
    with st.safe_open(tmp_path / "m.safetensors", framework="np") as opened:
        assert isinstance(opened.get_tensor("b"), np.ndarray)
        with pytest.raises(st.SafetensorError, match="does not contain"):
            opened.get_tensor("missing")


def test_loaded_tensors_are_writable_copies(tmp_path):
    st.save_file({"w": ember.zeros(3)}, tmp_path / "m.safetensors")
    loaded = st.load_file(tmp_path / "m.safetensors")["w"]
    loaded.add_(1)
    assert st.load_file(tmp_path / "m.safetensors")["w"].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x05\x00",
        struct.pack("<Q", 10**9) + b"{}",
        struct.pack("<Q", 4) + b"{no}",
        struct.pack("<Q", 56) + b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
    ],
)
def test_invalid_files_raise_safetensor_error(tmp_path, data):
    (tmp_path / "bad.safetensors").write_bytes(data)
    with pytest.raises(st.SafetensorError):
        st.load_file(tmp_path / "bad.safetensors")


def test_module_load_state_dict_from_a_safetensors_file(tmp_path):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    st.save_file(model.state_dict(), tmp_path / "model.safetensors")
    other = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.ReLU(), ember.nn.Linear(4, 2))
    result = other.load_state_dict(st.load_file(tmp_path / "model.safetensors"))
    assert not result.missing_keys and not result.unexpected_keys
    x = ember.ones(1, 3)
    assert model(x).tolist() == other(x).tolist()


# ---------------------------------------------------------------- against the safetensors package


def test_package_reads_ours_and_we_read_the_packages(tmp_path):
    torch = pytest.importorskip("torch")
    package = pytest.importorskip("safetensors.torch")
    tensors = _tensors()
    st.save_file(tensors, tmp_path / "ours.safetensors", metadata={"format": "pt"})
    theirs = package.load_file(tmp_path / "ours.safetensors")
    for name, tensor in tensors.items():
        other = theirs[name]
        assert str(other.dtype).split(".")[-1] == tensor.dtype.name and tuple(other.shape) == tuple(tensor.shape)
        if tensor.dtype is ember.bfloat16:
            np.testing.assert_array_equal(other.view(torch.int16).numpy(), tensor._data.view(np.int16))
        else:
            np.testing.assert_array_equal(other.numpy(), tensor.numpy())
    package.save_file(theirs, tmp_path / "theirs.safetensors", metadata={"by": "package"})
    back = st.load_file(tmp_path / "theirs.safetensors")
    for name, tensor in tensors.items():
        _equal(back[name], tensor.contiguous())
    assert st.safe_open(tmp_path / "theirs.safetensors").metadata() == {"by": "package"}
    # byte for byte the same file as the package writes for contiguous tensors
    contiguous = {name: tensor.contiguous() for name, tensor in tensors.items()}
    assert st.save(contiguous, metadata={"format": "pt"}) == package.save(
        {name: theirs[name].contiguous() for name in tensors}, metadata={"format": "pt"}
    )


def test_numpy_framework_against_the_package(tmp_path):
    package = pytest.importorskip("safetensors.numpy")
    arrays = {"a": np.arange(6, dtype=np.int32).reshape(2, 3), "b": np.linspace(0, 1, 5)}
    package.save_file(arrays, tmp_path / "np.safetensors")
    with st.safe_open(tmp_path / "np.safetensors", framework="np") as opened:
        for name, array in arrays.items():
            np.testing.assert_array_equal(opened.get_tensor(name), array)
    st.save_file(arrays, tmp_path / "ours.safetensors")
    loaded = package.load_file(tmp_path / "ours.safetensors")
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
