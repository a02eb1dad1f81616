"""ember.hub against torch.hub, offline: local hubconf directories, file:// URLs, a pre-filled GitHub cache."""

from __future__ import annotations

import hashlib
import os
import urllib.request
import zipfile
from urllib.error import URLError

import numpy as np
import pytest

import ember
import ember.hub
import ember.utils.model_zoo

torch = pytest.importorskip("torch")

HUBCONF = '''
"""A test hub repository."""
dependencies = ["os", "json"]


def scaled(values, scale=1):
    """Multiply each value by scale."""
    return [v * scale for v in values]


def _helper():
    return None


needs_missing = None
'''


@pytest.fixture
def hub_dirs(tmp_path, monkeypatch):
    """A fresh hub directory for both libraries, restored afterwards."""
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    previous = torch.hub.get_dir()
    hub_dir = tmp_path / "hub"
    ember.hub.set_dir(str(hub_dir))
    torch.hub.set_dir(str(hub_dir))
    yield hub_dir
    torch.hub.set_dir(previous)


def _repo(tmp_path, text=HUBCONF):
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "hubconf.py").write_text(text)
    return str(repo)


def test_get_dir_and_set_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", None)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "home"))
    assert ember.hub.get_dir() == os.path.join(str(tmp_path / "home"), "hub")
    ember.hub.set_dir(str(tmp_path / "elsewhere"))
    assert ember.hub.get_dir() == str(tmp_path / "elsewhere")


def test_load_local(tmp_path):
    repo = _repo(tmp_path)
    ours = ember.hub.load(repo, "scaled", [1, 2], source="local", scale=3)
    theirs = torch.hub.load(repo, "scaled", [1, 2], source="local", scale=3)
    assert ours == theirs == [3, 6]


def _error(fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001  (comparing the two libraries' errors)
        return type(error), str(error)
    return None


@pytest.mark.parametrize("case", ["missing_entry", "not_callable", "model_not_str", "bad_source", "dependency"])
def test_load_local_errors(tmp_path, case):
    text = HUBCONF.replace('"json"]', '"json", "no_such_module_xyz"]') if case == "dependency" else HUBCONF
    repo = _repo(tmp_path, text)
    model = {"missing_entry": "nothing", "not_callable": "needs_missing", "model_not_str": 3}.get(case, "scaled")
    source = "svn" if case == "bad_source" else "local"

    def run(lib):
        return lambda: lib.hub.load(repo, model, [1], source=source)

    expected = _error(run(torch))
    assert expected is not None
    assert _error(run(ember)) == expected


def _checkpoint(directory, name_for_hash=True):
    """An ember.save'd state dict at directory/weights-<sha256 prefix>.pth, and its file:// URL."""
    directory.mkdir(parents=True, exist_ok=True)
    state = {"weight": ember.arange(6.0).reshape(2, 3), "bias": ember.tensor([0.5, -1.0])}
    raw = directory / "raw.pth"
    ember.save(state, str(raw))
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    name = f"weights-{digest[:10]}.pth" if name_for_hash else "weights-deadbeef.pth"
    path = directory / name
    raw.rename(path)
    return path, path.as_uri()


def test_load_state_dict_from_url_caches_in_hub_dir(tmp_path, hub_dirs):
    path, url = _checkpoint(tmp_path / "source")
    ours = ember.hub.load_state_dict_from_url(url, check_hash=True)
    cached = hub_dirs / "checkpoints" / path.name
    assert cached.exists()
    theirs = torch.hub.load_state_dict_from_url(url, check_hash=True)
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    path.unlink()  # cached now: no download needed
    again = ember.hub.load_state_dict_from_url(url)
    np.testing.assert_array_equal(again["weight"].numpy(), ours["weight"].numpy())
    assert ember.utils.model_zoo.load_url is ember.hub.load_state_dict_from_url


def test_load_state_dict_from_url_model_dir_file_name_and_bad_hash(tmp_path, hub_dirs):
    _, url = _checkpoint(tmp_path / "source", name_for_hash=False)
    target = tmp_path / "models"
    loaded = ember.hub.load_state_dict_from_url(url, model_dir=str(target), file_name="mine.pth",
                                                map_location="cpu", weights_only=True)
    assert (target / "mine.pth").exists() and loaded["bias"].tolist() == [0.5, -1.0]
    expected = _error(lambda: torch.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "t"),
                                                                 check_hash=True))
    got = _error(lambda: ember.hub.load_state_dict_from_url(url, model_dir=str(tmp_path / "e"), check_hash=True))
    assert expected is not None and got == expected
    assert os.listdir(tmp_path / "e") == []  # nothing left behind, not even the partial file


def test_legacy_zip_checkpoint(tmp_path, hub_dirs):
    path, _ = _checkpoint(tmp_path / "source")
    archive = tmp_path / "source" / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(path, arcname="inner.pth")
    loaded = ember.hub.load_state_dict_from_url(archive.as_uri(), model_dir=str(tmp_path / "models"))
    assert loaded["weight"].shape == (2, 3)


def test_download_url_to_file(tmp_path):
    source = tmp_path / "data.bin"
    source.write_bytes(b"ember hub" * 1000)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    target = tmp_path / "copy.bin"
    ember.hub.download_url_to_file(source.as_uri(), str(target), hash_prefix=digest[:8], progress=False)
    assert target.read_bytes() == source.read_bytes()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        ember.hub.download_url_to_file(source.as_uri(), str(tmp_path / "bad.bin"), hash_prefix="0000")
    assert not (tmp_path / "bad.bin").exists()


def test_github_from_cache(tmp_path, hub_dirs):
    repo = hub_dirs / "someone_models_main"
    repo.mkdir(parents=True)
    (repo / "hubconf.py").write_text(HUBCONF)
    assert ember.hub.load("someone/models:main", "scaled", [2], scale=5, trust_repo=True) == [10]
    assert ember.hub.list("someone/models:main", trust_repo=True) == \
        torch.hub.list("someone/models:main", trust_repo=True)
    assert ember.hub.help("someone/models:main", "scaled", trust_repo=True) == "Multiply each value by scale."
    # a repository already in the cache counts as trusted (torch's rule): nothing is added to the list
    assert (hub_dirs / "trusted_list").read_text() == ""


def test_github_without_network_raises(tmp_path, hub_dirs, monkeypatch):
    def unreachable(*args, **kwargs):
        raise URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(RuntimeError, match="no internet connection"):
        ember.hub.load("someone/other", "scaled", trust_repo=True)
    with pytest.raises(RuntimeError, match="could not reach"):
        ember.hub.load("someone/other:v1", "scaled", trust_repo=True)
