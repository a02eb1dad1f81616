"""ember.save -> torch.load(weights_only=True) and torch.save -> ember.load, for every object kind a
checkpoint holds: tensors of each dtype and layout, views sharing storage, Parameters, dtypes, devices,
sizes, nested containers, and a model + optimizer state round trip."""

from __future__ import annotations

import collections
import io
import pickle
import zipfile

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _values(lib, dtype: str, shape=(3, 4)):
    base = lib.arange(int(np.prod(shape)), dtype=lib.float64).reshape(shape) - 5
    if dtype == "bool":
        return base > 0
    if dtype.startswith("complex"):
        return (base + 1j * base.flip(-1)).to(getattr(lib, dtype))
    if dtype == "uint8":
        return (base + 5).to(lib.uint8)
    return base.to(getattr(lib, dtype))


def _as_numpy(tensor) -> np.ndarray:
    if isinstance(tensor, torch.Tensor):
        if tensor.dtype == torch.bfloat16:
            return tensor.view(torch.int16).numpy()
        return tensor.detach().numpy()
    if tensor.dtype == ember.bfloat16:
        return tensor._data.view(np.int16)
    return tensor.detach().numpy()


def _same(ember_tensor, torch_tensor) -> None:
    assert str(ember_tensor.dtype).split(".")[-1] == str(torch_tensor.dtype).split(".")[-1]
    assert tuple(ember_tensor.shape) == tuple(torch_tensor.shape)
    np.testing.assert_array_equal(_as_numpy(ember_tensor), _as_numpy(torch_tensor))


def _via_torch(obj):
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _via_ember(obj, **kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return ember.load(buffer, **kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_both_ways(dtype):
    source = _values(ember, dtype)
    loaded = _via_torch({"t": source})["t"]
    _same(source, loaded)
    back = _via_ember({"t": loaded})["t"]
    _same(back, loaded)
    assert back.dtype is getattr(ember, dtype)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor(3.5),
        lambda lib: lib.tensor(7, dtype=lib.int64),
        lambda lib: lib.empty(0),
        lambda lib: lib.zeros(0, 3, dtype=lib.int32),
        lambda lib: lib.ones(2, 0, 4, dtype=lib.float16),
    ],
    ids=["0d-float", "0d-int", "empty", "empty-2d", "empty-3d"],
)
def test_zero_dim_and_empty(make):
    loaded = _via_torch(make(ember))
    assert tuple(loaded.shape) == tuple(make(torch).shape) and loaded.dtype == make(torch).dtype
    _same(make(ember), loaded)
    _same(_via_ember(make(torch)), make(torch))


def test_views_keep_their_strides_and_one_storage_ember_to_torch():
    base = ember.arange(24, dtype=ember.float32).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "offset": base[1:, 2:]}
    loaded = _via_torch(views)
    for name, view in views.items():
        _same(view, loaded[name])
        assert loaded[name].stride() == view.stride(), name
        assert loaded[name].storage_offset() == view.storage_offset(), name
    pointers = {loaded[name].untyped_storage().data_ptr() for name in views}
    assert len(pointers) == 1
    loaded["row"].fill_(-1.0)  # a write through one view reaches the others, as before saving
    assert loaded["base"][2].eq(-1).all() and loaded["t"][:, 2].eq(-1).all()


def test_views_keep_their_strides_and_one_storage_torch_to_ember():
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    views = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1::2], "expand": base[0:1].expand(3, 6)}
    loaded = _via_ember(views)
    for name, view in views.items():
        _same(loaded[name], view)
        assert loaded[name].stride() == view.stride(), name
        assert loaded[name].storage_offset() == view.storage_offset(), name
    assert len({id(loaded[name]._storage) for name in views}) == 1
    assert all(np.shares_memory(loaded[name]._data, loaded["base"]._data) for name in views)
    loaded["row"].fill_(-1.0)
    assert loaded["t"][:, 2].eq(-1).all().item()


def test_non_contiguous_saved_over_the_full_storage():
    base = ember.arange(20, dtype=ember.int64).reshape(4, 5)
    view = base[1:3, ::2]
    loaded = _via_torch(view)
    assert loaded.untyped_storage().nbytes() == 20 * 8
    assert loaded.stride() == (5, 2) and loaded.storage_offset() == 5
    _same(view, loaded)


def test_parameters_keep_requires_grad_and_type():
    weight = ember.nn.Parameter(ember.randn(3, 2))
    frozen = ember.nn.Parameter(ember.ones(2), requires_grad=False)
    leaf = ember.ones(2).requires_grad_()
    loaded = _via_torch({"w": weight, "f": frozen, "leaf": leaf})
    assert isinstance(loaded["w"], torch.nn.Parameter) and loaded["w"].requires_grad
    assert isinstance(loaded["f"], torch.nn.Parameter) and not loaded["f"].requires_grad
    assert type(loaded["leaf"]) is torch.Tensor and loaded["leaf"].requires_grad
    back = _via_ember(loaded)
    assert isinstance(back["w"], ember.nn.Parameter) and back["w"].requires_grad
    assert isinstance(back["f"], ember.nn.Parameter) and not back["f"].requires_grad
    assert type(back["leaf"]) is ember.Tensor and back["leaf"].requires_grad
    _same(back["w"], loaded["w"])


def test_tensor_and_parameter_attributes_survive():
    tensor = ember.ones(2)
    tensor.tag = "kept"
    parameter = ember.nn.Parameter(ember.zeros(1))
    parameter.note = 3
    loaded = _via_torch({"t": tensor, "p": parameter})
    assert loaded["t"].tag == "kept" and loaded["p"].note == 3
    back = _via_ember(loaded)
    assert back["t"].tag == "kept" and back["p"].note == 3 and isinstance(back["p"], ember.nn.Parameter)


def test_dtypes_devices_sizes_and_plain_data():
    obj = {
        "dtypes": [getattr(ember, name) for name in DTYPES],
        "device": ember.device("cpu"),
        "meta": ember.device("meta"),
        "cuda1": ember.device("cuda", 1),
        "size": ember.Size([2, 3]),
        "layout": ember.strided,
        "nested": {
            "list": [1, 2.5, "x", None, True, (1, (2, 3))],
            "set": {1, 2},
            "bytes": b"\x00\xff",
            "complex": 1 - 2j,
            "big": 2**70,
            "negative": -(2**40),
        },
        "ordered": collections.OrderedDict([("b", 1), ("a", 2)]),
    }
    loaded = _via_torch(obj)
    assert loaded["dtypes"] == [getattr(torch, name) for name in DTYPES]
    assert loaded["device"] == torch.device("cpu") and loaded["cuda1"] == torch.device("cuda", 1)
    assert loaded["meta"] == torch.device("meta")
    assert loaded["size"] == torch.Size([2, 3]) and type(loaded["size"]) is torch.Size
    assert loaded["layout"] is torch.strided
    assert loaded["nested"] == obj["nested"]
    assert type(loaded["ordered"]) is collections.OrderedDict and list(loaded["ordered"]) == ["b", "a"]
    back = _via_ember(loaded)
    assert back["dtypes"] == obj["dtypes"] and all(a is b for a, b in zip(back["dtypes"], obj["dtypes"]))
    assert back["device"] == ember.device("cpu") and back["cuda1"] == ember.device("cuda", 1)
    assert back["size"] == ember.Size([2, 3]) and type(back["size"]) is ember.Size
    assert back["layout"] is ember.strided
    assert back["nested"] == obj["nested"] and list(back["ordered"]) == ["b", "a"]


def test_meta_tensors_both_ways():
    loaded = _via_torch({"m": ember.empty(2, 3, device="meta", dtype=ember.float16)})["m"]
    assert loaded.is_meta and loaded.shape == (2, 3) and loaded.dtype == torch.float16
    back = _via_ember({"m": torch.empty(4, device="meta")})["m"]
    assert back.is_meta and back.shape == (4,) and back.dtype is ember.float32


def test_archive_layout_matches_torch(tmp_path):
    path = tmp_path / "model.pt"
    ember.save({"w": ember.ones(3)}, path)
    torch.save({"w": torch.ones(3)}, tmp_path / "torch.pt")
    with zipfile.ZipFile(path) as ours, zipfile.ZipFile(tmp_path / "torch.pt") as theirs:
        strip = lambda names: [name.split("/", 1)[1] for name in names]  # noqa: E731
        assert strip(ours.namelist()) == strip(theirs.namelist())
        assert ours.namelist()[0] == "model/data.pkl"
        assert ours.read("model/version") == theirs.read("torch/version")
        assert ours.read("model/data.pkl") == theirs.read("torch/data.pkl")  # byte-identical pickle
        for info in ours.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
    with open(path, "rb") as handle:
        raw = handle.read()
    with zipfile.ZipFile(path) as ours:
        for info in ours.infolist():  # every record starts 64-byte aligned
            name_length, extra_length = np.frombuffer(raw[info.header_offset + 26 : info.header_offset + 30], "<u2")
            assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0


def test_same_tensor_twice_stays_one_object():
    tensor = ember.ones(2)
    loaded = _via_torch([tensor, tensor])
    assert loaded[0] is loaded[1]
    back = _via_ember(loaded)
    assert back[0] is back[1]


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))


def _train_step(lib, model, optimizer, x):
    optimizer.zero_grad()
    model(x).square().sum().backward()
    optimizer.step()


@pytest.mark.parametrize("optimizer_name", ["SGD", "Adam"])
def test_model_and_optimizer_round_trip(tmp_path, optimizer_name):
    options = {"lr": 0.1, "momentum": 0.9} if optimizer_name == "SGD" else {"lr": 0.01}
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    model = _model(ember)
    optimizer = getattr(ember.optim, optimizer_name)(model.parameters(), **options)
    _train_step(ember, model, optimizer, ember.tensor(x))
    ember.save({"model": model.state_dict(), "optim": optimizer.state_dict(), "epoch": 3}, tmp_path / "ckpt.pt")

    checkpoint = torch.load(tmp_path / "ckpt.pt", weights_only=True)
    torch_model = _model(torch)
    torch_model.load_state_dict(checkpoint["model"])
    torch_optimizer = getattr(torch.optim, optimizer_name)(torch_model.parameters(), **options)
    torch_optimizer.load_state_dict(checkpoint["optim"])
    assert checkpoint["epoch"] == 3
    _train_step(torch, torch_model, torch_optimizer, torch.tensor(x))
    _train_step(ember, model, optimizer, ember.tensor(x))
    torch.save({"model": torch_model.state_dict(), "optim": torch_optimizer.state_dict()}, tmp_path / "back.pt")

    back = ember.load(tmp_path / "back.pt")
    resumed = _model(ember)
    resumed.load_state_dict(back["model"])
    resumed_optimizer = getattr(ember.optim, optimizer_name)(resumed.parameters(), **options)
    resumed_optimizer.load_state_dict(back["optim"])
    for name, value in model.state_dict().items():  # both sides took the same two steps
        np.testing.assert_allclose(back["model"][name].numpy(), value.numpy(), rtol=1e-5, atol=1e-6)
    _train_step(ember, resumed, resumed_optimizer, ember.tensor(x))
    _train_step(ember, model, optimizer, ember.tensor(x))
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_state_dict_metadata_survives():
    state = _model(ember).state_dict()
    loaded = _via_torch(state)
    assert type(loaded) is collections.OrderedDict
    assert getattr(loaded, "_metadata", None) == getattr(state, "_metadata", None)
    assert list(loaded) == list(state)


def test_torch_zip_with_old_protocol_names_and_paths(tmp_path):
    path = tmp_path / "t.weights.pt"
    torch.save({"w": torch.arange(5)}, path)
    assert ember.load(str(path))["w"].tolist() == [0, 1, 2, 3, 4]
    ember.save({"w": ember.arange(5)}, str(path))
    assert torch.load(path, weights_only=True)["w"].tolist() == [0, 1, 2, 3, 4]


def test_a_dtype_ember_lacks_is_named():
    with pytest.raises(pickle.UnpicklingError, match="torch.complex32"):
        _via_ember({"t": torch.zeros(3, dtype=torch.complex32)})


def test_unsigned_shell_dtypes_both_ways():
    """uint16/32/64 have no typed storage class: torch writes _rebuild_tensor_v3 over an UntypedStorage's bytes;
    views saved together stay views of one storage, in both directions."""
    base = torch.tensor([[1, 65535], [3, 4]], dtype=torch.uint16)
    state = {"a": base, "row": base[1], "b": torch.tensor([2**32 - 1], dtype=torch.uint32),
             "c": torch.tensor([2**64 - 1, 5], dtype=torch.uint64)}
    loaded = _via_ember(state)
    assert {k: (v.dtype.name, v.tolist()) for k, v in loaded.items()} == {
        k: (str(v.dtype).removeprefix("torch."), v.tolist()) for k, v in state.items()}
    loaded["row"][0] = 7
    assert loaded["a"].tolist() == [[1, 65535], [7, 4]]
    back = _via_torch(loaded)
    assert {k: (v.dtype, v.tolist()) for k, v in back.items()} == {
        "a": (torch.uint16, [[1, 65535], [7, 4]]), "row": (torch.uint16, [7, 4]),
        "b": (torch.uint32, [2**32 - 1]), "c": (torch.uint64, [2**64 - 1, 5])}
    assert back["row"].untyped_storage().data_ptr() == back["a"].untyped_storage().data_ptr()


def test_pickle_protocol_4_from_torch():
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(4.0), "s": torch.Size([1])}, buffer, pickle_protocol=4)
    buffer.seek(0)
    loaded = ember.load(buffer)
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and loaded["s"] == ember.Size([1])
