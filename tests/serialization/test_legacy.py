"""torch's legacy (non-zip) checkpoint format: files torch writes with `_use_new_zipfile_serialization=False`
(and torch < 1.6 always wrote) load in ember, and ember writes files in that format that torch loads."""

from __future__ import annotations

import collections
import io
import pickle
import tarfile

import numpy as np
import pytest

import ember
from ember._serialization import legacy
from ember._serialization.pickling import REBUILD_TENSOR_V2, TorchGlobal

from .test_torch_interop import DTYPES, _same, _values

torch = pytest.importorskip("torch")

INVALID = "is not a valid ember/PyTorch checkpoint"


def _torch_legacy(obj, **kwargs) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer, _use_new_zipfile_serialization=False, **kwargs)
    return buffer.getvalue()


def _ember_legacy(obj) -> bytes:
    buffer = io.BytesIO()
    ember.save(obj, buffer, _use_new_zipfile_serialization=False)
    return buffer.getvalue()


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.BatchNorm1d(8), lib.nn.Linear(8, 2))


def _both_raise(load_torch, load_ember, error_type):
    with pytest.raises(error_type) as from_torch:
        load_torch()
    with pytest.raises(error_type) as from_ember:
        load_ember()
    return str(from_torch.value), str(from_ember.value)


# ---------------------------------------------------------------- torch writes, ember reads


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_from_torch(dtype):
    source = _values(torch, dtype)
    loaded = ember.load(io.BytesIO(_torch_legacy({"t": source, "0d": source[1, 2]})))
    _same(loaded["t"], source)
    _same(loaded["0d"], source[1, 2])
    assert loaded["t"].dtype is getattr(ember, dtype)


def test_views_share_one_storage_from_torch():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    other = torch.arange(5, dtype=torch.int32)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "expand": base[0:1].expand(3, 6)}
    loaded = ember.load(io.BytesIO(_torch_legacy({**views, "other": other, "tail": other[3:]})))
    for name, view in views.items():
        _same(loaded[name], view)
        assert loaded[name].stride() == view.stride(), name
        assert loaded[name].storage_offset() == view.storage_offset(), name
    assert len({id(loaded[name]._storage) for name in views}) == 1
    assert len({loaded[name].untyped_storage().data_ptr() for name in views}) == 1
    assert loaded["tail"].storage_offset() == 3 and loaded["tail"]._storage is loaded["other"]._storage
    loaded["row"].fill_(-1.0)  # a write through one view reaches the others, as in torch
    assert loaded["t"][:, 2].eq(-1).all().item() and loaded["base"][2].eq(-1).all().item()


def test_state_dict_parameters_and_nested_containers_from_torch():
    model = _model(torch)
    parameter = torch.nn.Parameter(torch.arange(3.0))
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    obj = {
        "model": model.state_dict(),
        "params": [parameter, (frozen, {"again": parameter})],
        "meta": {"epoch": 3, "lr": 0.5, "name": "run", "size": torch.Size([2, 3]), "dtype": torch.float16},
        "device": torch.device("cpu"),
        "grad": torch.ones(2, requires_grad=True),
    }
    loaded = ember.load(io.BytesIO(_torch_legacy(obj)))
    state = loaded["model"]
    assert type(state) is collections.OrderedDict and list(state) == list(obj["model"])
    assert state._metadata == obj["model"]._metadata
    for name, value in obj["model"].items():
        _same(state[name], value)
    first, (second, inner) = loaded["params"]
    assert type(first) is ember.nn.Parameter and first.requires_grad and first.tolist() == [0.0, 1.0, 2.0]
    assert type(second) is ember.nn.Parameter and not second.requires_grad
    assert inner["again"] is first
    assert loaded["meta"] == {"epoch": 3, "lr": 0.5, "name": "run", "size": ember.Size([2, 3]), "dtype": ember.float16}
    assert loaded["device"] == ember.device("cpu") and loaded["grad"].requires_grad
    resumed = _model(ember)
    resumed.load_state_dict(state)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    model.eval(), resumed.eval()
    np.testing.assert_allclose(resumed(ember.tensor(x)).detach().numpy(), model(torch.tensor(x)).detach().numpy())


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_quantized_and_meta_tensors_from_torch():
    quantized = torch.quantize_per_tensor(torch.linspace(-1, 1, 6), 0.05, 3, torch.qint8)
    loaded = ember.load(io.BytesIO(_torch_legacy({"q": quantized, "m": torch.empty(2, 3, device="meta")})))
    assert loaded["q"].int_repr().tolist() == quantized.int_repr().tolist() and loaded["q"].q_scale() == 0.05
    assert loaded["m"].device == ember.device("meta") and loaded["m"].shape == (2, 3)


def test_paths_file_objects_and_unseekable_streams(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"w": torch.arange(5)}, path, _use_new_zipfile_serialization=False)
    assert ember.load(path)["w"].tolist() == [0, 1, 2, 3, 4]
    assert ember.load(str(path))["w"].tolist() == [0, 1, 2, 3, 4]
    with open(path, "rb") as handle:
        assert ember.load(handle)["w"].tolist() == [0, 1, 2, 3, 4]

    class Stream:  # read only: no seek, no readinto
        def __init__(self, data: bytes) -> None:
            self.inner = io.BytesIO(data)

        def read(self, size=-1):
            return self.inner.read(size)

    assert ember.load(Stream(path.read_bytes()))["w"].tolist() == [0, 1, 2, 3, 4]
    prefixed = io.BytesIO(b"header" + path.read_bytes())  # a checkpoint inside a larger file, as torch allows
    prefixed.seek(6)
    assert ember.load(prefixed)["w"].tolist() == [0, 1, 2, 3, 4]


def test_pickle_protocol_4_from_torch():
    loaded = ember.load(io.BytesIO(_torch_legacy({"w": torch.arange(4.0), "s": torch.Size([1])}, pickle_protocol=4)))
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and loaded["s"] == ember.Size([1])


@pytest.mark.parametrize(
    "map_location",
    ["cpu", "device", "dict", "function", "function-none", "function-str"],
)
def test_map_location_forms(map_location):
    mapping = {
        "device": ember.device("cpu"),
        "dict": {"cpu": "cpu"},
        "function": lambda storage, location: storage,
        "function-none": lambda storage, location: None,
        "function-str": lambda storage, location: "cpu",
    }
    data = _torch_legacy({"w": torch.arange(6.0).reshape(2, 3), "v": torch.arange(6.0)[1:]})
    loaded = ember.load(io.BytesIO(data), map_location=mapping.get(map_location, map_location))
    assert loaded["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and loaded["v"].tolist() == [1, 2, 3, 4, 5]
    seen = []
    ember.load(io.BytesIO(data), map_location=lambda storage, location: seen.append(location))
    assert seen == ["cpu", "cpu"]  # called once per storage, as torch


def test_map_location_meta_reads_no_data():
    data = _torch_legacy({"w": torch.arange(6.0).reshape(2, 3), "after": torch.tensor([7])})
    loaded = ember.load(io.BytesIO(data), map_location="meta")
    assert loaded["w"].device == ember.device("meta") and loaded["w"].shape == (2, 3)
    assert loaded["after"].device == ember.device("meta")


def _cuda_file(monkeypatch, obj, zipped: bool = False) -> bytes:
    """A file as torch writes it from CUDA tensors (this torch has no CUDA: the location is patched)."""
    buffer = io.BytesIO()
    with monkeypatch.context() as patch:
        patch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(obj, buffer, _use_new_zipfile_serialization=zipped)
    return buffer.getvalue()


def test_cuda_checkpoint_needs_map_location(monkeypatch):
    if ember.cuda.is_available():
        pytest.skip("CUDA is available: the storages load on it")
    data = _cuda_file(monkeypatch, {"w": torch.arange(4.0)})
    from_torch, from_ember = _both_raise(
        lambda: torch.load(io.BytesIO(data)), lambda: ember.load(io.BytesIO(data)), RuntimeError
    )
    assert "Attempting to deserialize object on a CUDA device" in from_torch
    assert "Attempting to deserialize object on a CUDA device" in from_ember and "map_location='cpu'" in from_ember
    with pytest.raises(RuntimeError) as from_zip:  # the zip path says the same for the same case
        ember.load(io.BytesIO(_cuda_file(monkeypatch, {"w": torch.arange(4.0)}, zipped=True)))
    assert str(from_zip.value) == from_ember
    for map_location in ("cpu", {"cuda:0": "cpu"}, ember.device("cpu"), lambda storage, location: storage):
        assert ember.load(io.BytesIO(data), map_location=map_location)["w"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_weights_only_refuses_and_allows_as_torch(tmp_path):
    data = _torch_legacy(torch.nn.Linear(2, 3))
    from_torch, from_ember = _both_raise(
        lambda: torch.load(io.BytesIO(data)), lambda: ember.load(io.BytesIO(data)), pickle.UnpicklingError
    )
    assert "torch.nn.modules.linear.Linear" in from_torch and "torch.nn.modules.linear.Linear" in from_ember
    module = ember.load(io.BytesIO(data), weights_only=False)  # a full load maps torch's classes to ember's
    assert isinstance(module, ember.nn.Linear) and module.weight.shape == (3, 2)
    _same(module.weight, torch.load(io.BytesIO(data), weights_only=False).weight)

    counter = collections.Counter(a=2)  # an allow-listed global in both libraries
    assert ember.load(io.BytesIO(_torch_legacy({"c": counter})))["c"] == counter
    data = _torch_legacy({"f": np.float64(1.5)})  # numpy scalars: refused by default in both
    _both_raise(lambda: torch.load(io.BytesIO(data)), lambda: ember.load(io.BytesIO(data)), pickle.UnpicklingError)
    assert ember.load(io.BytesIO(data), weights_only=False)["f"] == 1.5


def test_mmap_is_refused_as_torch(tmp_path):
    path = tmp_path / "old.pt"
    path.write_bytes(_torch_legacy({"w": torch.ones(2)}))
    for f in (str(path), path, io.BytesIO(path.read_bytes())):
        from_torch, from_ember = _both_raise(
            lambda: torch.load(f, mmap=True), lambda: ember.load(f, mmap=True), RuntimeError
        )
        assert from_torch == from_ember and "mmap can only be used" in from_ember
        if isinstance(f, io.BytesIO):
            f.seek(0)


# ---------------------------------------------------------------- storage views (files from torch < 1.0)


class _Storage:
    def __init__(self, saved_id: tuple) -> None:
        self.saved_id = saved_id


class _Tensor:
    """Pickles as torch's _rebuild_tensor_v2 over a storage given by its persistent id."""

    def __init__(self, storage: _Storage, offset: int, size: tuple, stride: tuple) -> None:
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return REBUILD_TENSOR_V2, self.args


class _ViewPickler(legacy.LegacyPickler):
    def persistent_id(self, obj):
        return obj.saved_id if isinstance(obj, _Storage) else None


def _old_file(obj, storages: dict) -> bytes:
    """A legacy file with hand-made storage ids (views, torch.cuda storage types), as old torch wrote them."""
    buffer = io.BytesIO()
    for header in (legacy.MAGIC_NUMBER, legacy.PROTOCOL_VERSION, {"protocol_version": 1001}):
        pickle.dump(header, buffer, protocol=2)
    _ViewPickler(buffer, 2, None).dump(obj)
    pickle.dump(list(storages), buffer, protocol=2)
    for array in storages.values():
        buffer.write(np.int64(array.size).tobytes() + array.tobytes())
    return buffer.getvalue()


def test_storage_views_and_cuda_storage_types_as_torch():
    cuda_float = TorchGlobal("torch.cuda", "FloatStorage")
    root = ("storage", cuda_float, "root", "cuda:0", 10, None)
    view_a = ("storage", cuda_float, "root", "cuda:0", 10, ("a", 2, 6))
    view_b = ("storage", cuda_float, "root", "cuda:0", 10, ("b", 5, 5))
    obj = {
        "whole": _Tensor(_Storage(root), 0, (10,), (1,)),
        "a": _Tensor(_Storage(view_a), 1, (2, 2), (3, 1)),
        "b": _Tensor(_Storage(view_b), 0, (5,), (1,)),
        "a_again": _Tensor(_Storage(view_a), 0, (6,), (1,)),
    }
    data = _old_file(obj, {"root": np.arange(10, dtype=np.float32)})
    expected = torch.load(io.BytesIO(data), map_location="cpu")
    loaded = ember.load(io.BytesIO(data), map_location="cpu")
    for name, tensor in expected.items():
        _same(loaded[name], tensor)
        assert loaded[name].storage_offset() == tensor.storage_offset(), name
    loaded["whole"][4] = -1.0  # views of one storage share its memory
    assert loaded["a"][0, 1].item() == -1.0 and loaded["a_again"][2].item() == -1.0


def test_corrupt_legacy_files_raise_clear_errors(tmp_path):
    data = _torch_legacy({"w": torch.arange(100.0)})
    for size in (10, len(data) // 2, len(data) - 8, len(data) - 1):
        with pytest.raises(RuntimeError, match=INVALID):
            ember.load(io.BytesIO(data[:size]))
    wrong_count = data[: -400 - 8] + np.int64(99).tobytes() + data[-400:]
    with pytest.raises(RuntimeError, match="storage has wrong byte size: expected 396 got 400"):
        ember.load(io.BytesIO(wrong_count))
    with pytest.raises(RuntimeError, match="Invalid magic number"):
        ember.load(io.BytesIO(pickle.dumps(12345) + data[20:]))


def test_tar_format_is_named(tmp_path):
    path = tmp_path / "ancient.pt"
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as archive:
        info = tarfile.TarInfo("sys_info")
        info.size = 2
        archive.addfile(info, io.BytesIO(b"{}"))
    for weights_only in (True, False):
        with pytest.raises(RuntimeError, match="tar checkpoint format"):
            ember.load(path, weights_only=weights_only)


# ---------------------------------------------------------------- ember writes, torch reads


def test_header_pickles_match_torch():
    header = len(_torch_legacy(1))  # a file of no storages ends after the header, the object and the keys
    header -= len(pickle.dumps(1, protocol=2)) + len(pickle.dumps([], protocol=2))
    assert _ember_legacy(1)[:header] == _torch_legacy(1)[:header]
    assert ember.load(io.BytesIO(_ember_legacy(1))) == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_to_torch(dtype):
    source = _values(ember, dtype)
    loaded = torch.load(io.BytesIO(_ember_legacy({"t": source, "0d": source[1, 2]})), weights_only=True)
    _same(source, loaded["t"])
    _same(source[1, 2], loaded["0d"])


def test_state_dict_and_views_to_torch(tmp_path):
    model = _model(ember)
    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "offset": base[1:, 2:]}
    path = tmp_path / "legacy.pt"
    ember.save(
        {"model": model.state_dict(), "views": views, "p": ember.nn.Parameter(ember.ones(2))},
        path,
        _use_new_zipfile_serialization=False,
    )
    loaded = torch.load(path, weights_only=True)
    torch_model = _model(torch)
    torch_model.load_state_dict(loaded["model"])
    assert loaded["model"]._metadata == model.state_dict()._metadata
    for name, value in model.state_dict().items():
        _same(value, loaded["model"][name])
    for name, view in views.items():
        _same(view, loaded["views"][name])
        assert loaded["views"][name].stride() == view.stride(), name
        assert loaded["views"][name].storage_offset() == view.storage_offset(), name
    assert len({loaded["views"][name].untyped_storage().data_ptr() for name in views}) == 1
    assert type(loaded["p"]) is torch.nn.Parameter and loaded["p"].requires_grad
    back = ember.load(path)
    assert len({id(back["views"][name]._storage) for name in views}) == 1
    for name in model.state_dict():
        _same(back["model"][name], loaded["model"][name])


def test_legacy_save_to_an_unseekable_stream():
    class Sink:  # write only, as a pipe or a socket
        def __init__(self) -> None:
            self.parts: list[bytes] = []

        def write(self, data) -> int:
            self.parts.append(bytes(data))
            return len(data)

    sink = Sink()
    ember.save({"w": ember.arange(3)}, sink, _use_new_zipfile_serialization=False)
    data = b"".join(sink.parts)
    assert data == _ember_legacy({"w": ember.arange(3)})
    assert torch.load(io.BytesIO(data), weights_only=True)["w"].tolist() == [0, 1, 2]


def test_byte_string_ids_as_python_2_wrote_them():
    float_storage = TorchGlobal("torch", "FloatStorage")
    saved_id = (b"storage", float_storage, b"key", b"cpu", 3, None)
    data = _old_file({"w": _Tensor(_Storage(saved_id), 0, (3,), (1,))}, {b"key": np.arange(3, dtype=np.float32)})
    _same(ember.load(io.BytesIO(data))["w"], torch.load(io.BytesIO(data))["w"])
