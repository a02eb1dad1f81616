"""mmap=True maps storages from the file instead of reading them; map_location places storages."""

from __future__ import annotations

import builtins
import io
import mmap

import numpy as np
import pytest

import ember


def _mapped(tensor) -> bool:
    """Whether the tensor's memory is a mapping of the file (some array in its base chain wraps an mmap)."""
    array = tensor._storage.array
    while isinstance(array, (np.ndarray, memoryview)):
        array = array.base if isinstance(array, np.ndarray) else array.obj
    return isinstance(array, mmap.mmap)


@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "big.pt"
    base = ember.arange(1 << 20, dtype=ember.float32)
    ember.save(
        {
            "base": base,
            "view": base[10:20],
            "half": ember.ones(3, dtype=ember.float16),
            "empty": ember.empty(0),
            "step": 7,
        },
        path,
    )
    return path


def test_mmap_maps_storages_instead_of_reading_them(checkpoint, monkeypatch):
    reads = []
    original_open = builtins.open

    class CountingFile(io.FileIO):
        def readinto(self, buffer):
            reads.append(len(buffer))
            return super().readinto(buffer)

    def counting_open(file, mode="r", *args, **kwargs):
        if str(file) == str(checkpoint) and mode == "rb":
            return io.BufferedReader(CountingFile(file, "rb"), buffer_size=8192)
        return original_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    loaded = ember.load(checkpoint, mmap=True)
    monkeypatch.undo()
    assert sum(reads) < 256 << 10  # the 4 MiB storage was not read through the file object
    assert _mapped(loaded["base"]) and _mapped(loaded["view"]) and _mapped(loaded["half"])
    assert loaded["base"]._storage is loaded["view"]._storage and loaded["view"].storage_offset() == 10
    assert loaded["view"].tolist() == list(range(10, 20)) and loaded["step"] == 7
    assert loaded["empty"].shape == (0,)
    assert not _mapped(ember.load(checkpoint)["base"])


def test_mmap_is_copy_on_write(checkpoint):
    before = checkpoint.read_bytes()
    loaded = ember.load(checkpoint, mmap=True)
    loaded["base"].add_(1.0)
    assert loaded["view"][0].item() == 11.0
    assert checkpoint.read_bytes() == before
    assert ember.load(checkpoint)["base"][0].item() == 0.0


def test_mmap_of_a_torch_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(6.0).reshape(2, 3).t()}, tmp_path / "t.pt")
    loaded = ember.load(tmp_path / "t.pt", mmap=True)["w"]
    assert _mapped(loaded) and loaded.stride() == (1, 3) and loaded.tolist() == [[0, 3], [1, 4], [2, 5]]


def test_mmap_needs_a_real_file(checkpoint):
    with pytest.raises(ValueError, match="mmap"):
        ember.load(io.BytesIO(checkpoint.read_bytes()), mmap=True)
    with open(checkpoint, "rb") as handle:
        assert _mapped(ember.load(handle, mmap=True)["base"])


@pytest.mark.parametrize(
    "map_location", ["meta", ember.device("meta"), {"cpu": "meta"}, lambda storage, location: storage.to("meta")]
)
def test_map_location_to_meta(checkpoint, map_location):
    loaded = ember.load(checkpoint, map_location=map_location)
    assert loaded["base"].is_meta and loaded["base"].shape == (1 << 20,) and loaded["half"].dtype is ember.float16


@pytest.mark.parametrize(
    "map_location",
    ["cpu", ember.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage, lambda storage, loc: None],
)
def test_map_location_to_cpu(checkpoint, map_location):
    loaded = ember.load(checkpoint, map_location=map_location)
    assert loaded["view"].device == ember.device("cpu") and loaded["view"].tolist() == list(range(10, 20))


def test_cuda_checkpoint_needs_map_location_without_cuda(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA machine can load it directly")
    # a checkpoint as a GPU machine writes it: the storage location is "cuda:0"
    buffer = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buffer)
    data = buffer.getvalue().replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    path = tmp_path / "gpu.pt"
    import zipfile

    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as source, zipfile.ZipFile(path, "w") as target:
        for info in source.infolist():
            record = source.read(info)
            if info.filename.endswith("data.pkl"):
                record = record.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
            target.writestr(info.filename, record)
    assert data  # (the pickle names the location as a BINUNICODE string)
    try:
        import cupy  # noqa: F401

        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        ember.load(path)
    assert ember.load(path, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert ember.load(path, map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]
    assert torch.load(path, map_location="cpu", weights_only=True)["w"].tolist() == [1.0, 1.0]
