"""Weights-only loading refuses code, corrupted files fail clearly, and a killed save leaves the old file."""

from __future__ import annotations

import glob
import io
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import pytest

import ember
from ember.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals


class Payload:
    """A pickle bomb: unpickling it runs `function(*arguments)`."""

    def __init__(self, function, *arguments) -> None:
        self.function = function
        self.arguments = arguments

    def __reduce__(self):
        return self.function, self.arguments


class Point:
    def __init__(self, x=0, y=0) -> None:
        self.x, self.y = x, y


def _saved(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    ember.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _marker_payloads(marker: str):
    command = f"touch {marker}"
    return {
        "os.system": Payload(os.system, command),
        "builtins.eval": Payload(eval, f"open({marker!r}, 'w').close()"),
        "builtins.exec": Payload(exec, f"open({marker!r}, 'w').close()"),
        "subprocess.Popen": Payload(subprocess.Popen, ["touch", marker]),
        "builtins.open": Payload(open, marker, "w"),
    }


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "builtins.exec", "subprocess.Popen", "builtins.open"])
def test_code_in_a_checkpoint_is_refused_and_never_runs(tmp_path, name):
    marker = str(tmp_path / "pwned")
    payload = _marker_payloads(marker)[name]
    checkpoint = _saved({"weights": ember.ones(2), "trap": [payload]})
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL (posix|os|builtins|subprocess|io)\."):
        ember.load(checkpoint)
    assert not os.path.exists(marker)


def test_payload_written_by_torch_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    marker = tmp_path / "pwned"
    buffer = io.BytesIO()
    torch.save({"w": torch.ones(1), "trap": Payload(os.system, f"touch {marker}")}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        ember.load(buffer)
    assert not marker.exists()


def _zip_with_pickle(data: bytes) -> io.BytesIO:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("archive/data.pkl", data)
        archive.writestr("archive/version", "3\n")
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_hand_made_pickles_of_every_protocol_are_refused(tmp_path, protocol):
    marker = tmp_path / "pwned"
    data = pickle.dumps({"x": Payload(os.system, f"touch {marker}")}, protocol=protocol)
    with pytest.raises(pickle.UnpicklingError, match="system"):
        ember.load(_zip_with_pickle(data))
    assert not marker.exists()


def test_arbitrary_class_is_refused_until_allowed():
    checkpoint = _saved({"p": Point(1, 2)}).getvalue()
    with pytest.raises(pickle.UnpicklingError, match=f"{__name__}.Point"):
        ember.load(io.BytesIO(checkpoint))
    with safe_globals([Point]):
        assert Point in get_safe_globals()
        assert ember.load(io.BytesIO(checkpoint))["p"].y == 2
    assert Point not in get_safe_globals()
    with pytest.raises(pickle.UnpicklingError):
        ember.load(io.BytesIO(checkpoint))
    try:
        add_safe_globals([(Point, f"{__name__}.Point")])
        assert ember.load(io.BytesIO(checkpoint))["p"].x == 1
    finally:
        clear_safe_globals()
    assert get_safe_globals() == []


def test_weights_only_false_is_the_explicit_opt_in(tmp_path):
    checkpoint = _saved({"p": Point(3, 4), "w": ember.arange(3)})
    loaded = ember.load(checkpoint, weights_only=False)
    assert isinstance(loaded["p"], Point) and loaded["p"].x == 3
    assert loaded["w"].tolist() == [0, 1, 2] and isinstance(loaded["w"], ember.Tensor)
    checkpoint.seek(0)
    assert ember.load(checkpoint, pickle_module=pickle)["p"].y == 4  # a pickle_module implies a full load
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(checkpoint, pickle_module=pickle, weights_only=True)


def test_full_load_maps_torch_classes_to_ember():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save(torch.nn.Linear(2, 3), buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="torch.nn.modules.linear.Linear"):
        ember.load(buffer)
    buffer.seek(0)
    module = ember.load(buffer, weights_only=False)
    assert isinstance(module, ember.nn.Linear) and module.weight.shape == (3, 2)


# ---------------------------------------------------------------- corrupted files

INVALID = "is not a valid ember/PyTorch checkpoint"


@pytest.fixture
def checkpoint_bytes() -> bytes:
    return _saved({"w": ember.arange(1000, dtype=ember.float32), "meta": {"step": 3}}).getvalue()


@pytest.mark.parametrize("keep", [0, 10, 100, 0.5, -1])
def test_truncated_file_raises_a_clear_error(tmp_path, checkpoint_bytes, keep):
    size = int(len(checkpoint_bytes) * keep) if isinstance(keep, float) else keep % len(checkpoint_bytes)
    path = tmp_path / "truncated.pt"
    path.write_bytes(checkpoint_bytes[:size])
    with pytest.raises(RuntimeError, match=f"'{path}' {INVALID}"):
        ember.load(path)


@pytest.mark.parametrize("record", ["data.pkl", "data/0"])
def test_corrupted_record_raises_a_clear_error(tmp_path, checkpoint_bytes, record):
    with zipfile.ZipFile(io.BytesIO(checkpoint_bytes)) as archive:
        info = archive.getinfo(f"archive/{record}")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    corrupted = bytearray(checkpoint_bytes)
    for index in range(start, start + min(info.file_size, 40)):
        corrupted[index] ^= 0x5A
    path = tmp_path / "corrupted.pt"
    path.write_bytes(bytes(corrupted))
    with pytest.raises(RuntimeError, match=INVALID):
        ember.load(path)


def test_other_formats_raise_a_clear_error(tmp_path):
    cases = {
        "random.pt": os.urandom(4096),
        "raw-pickle.pt": pickle.dumps({"a": 1}),
        "empty.pt": b"",
        "zip-without-pickle.pt": _zip_bytes({"x/other": b"1"}),
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(RuntimeError, match=INVALID):
            ember.load(tmp_path / name)
    with pytest.raises(RuntimeError, match=INVALID):
        ember.load(io.BytesIO(b"PK\x03\x04garbage"))


def _zip_bytes(records: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_hostile_geometry_is_rejected(tmp_path):
    tensor = ember.arange(4)
    tensor_bytes = _saved({"t": tensor}).getvalue()
    with zipfile.ZipFile(io.BytesIO(tensor_bytes)) as archive:
        data = archive.read("archive/data.pkl")
        storage = archive.read("archive/data/0")
    # a tensor claiming 1000 elements over a 4-element storage must not read past it
    bad = data.replace(b"K\x04\x85", b"M\xe8\x03\x85", 1)
    assert bad != data
    with pytest.raises(RuntimeError, match="runs past its storage"):
        ember.load(io.BytesIO(_zip_bytes({"archive/data.pkl": bad, "archive/data/0": storage})))


# ---------------------------------------------------------------- atomic saves

CHILD = textwrap.dedent("""
    import sys
    import ember
    target = sys.argv[1]
    version = 0
    while True:
        ember.save({"version": version, "w": ember.full((4_000_000,), float(version))}, target)
        print(version, flush=True)
        version += 1
""")


def _temporary_bytes(directory) -> int:
    total = 0
    for path in glob.glob(str(directory / ".ckpt.pt.*.tmp")):
        try:
            total += os.path.getsize(path)
        except OSError:  # renamed over the target meanwhile
            pass
    return total


def test_a_killed_save_leaves_the_previous_checkpoint(tmp_path):
    target = tmp_path / "ckpt.pt"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    try:
        assert child.stdout.readline().strip() == "0"  # one whole save is on disk
        deadline = time.monotonic() + 15
        while _temporary_bytes(tmp_path) < 1 << 20:  # a later save is writing its 16 MB storage: kill it there
            assert time.monotonic() < deadline, "the child never got into a second save"
            time.sleep(0.0005)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=10)
    assert glob.glob(str(tmp_path / ".ckpt.pt.*.tmp")), "the kill should have interrupted a save"
    loaded = ember.load(target)
    assert loaded["w"].shape == (4_000_000,)
    assert loaded["w"].eq(float(loaded["version"])).all().item()


def test_save_to_a_path_replaces_atomically_and_keeps_no_temporary(tmp_path):
    target = tmp_path / "a.pt"
    ember.save({"v": 1}, target)
    os.chmod(target, 0o640)
    ember.save({"v": 2}, target)
    assert ember.load(target) == {"v": 2}
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["a.pt"]


def test_failed_save_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "a.pt"
    ember.save({"v": 1}, target)

    class Unpicklable:
        def __reduce__(self):
            raise ValueError("cannot pickle this")

    with pytest.raises(ValueError, match="cannot pickle"):
        ember.save({"v": 2, "bad": Unpicklable()}, target)
    assert ember.load(target) == {"v": 1}
    assert sorted(os.listdir(tmp_path)) == ["a.pt"]
    with pytest.raises(RuntimeError, match="Parent directory"):
        ember.save({}, tmp_path / "missing" / "a.pt")
