"""ember.hub: load models and checkpoints published as a ``hubconf.py`` repository or a URL, as torch.hub.

A hub repository is a directory (or a GitHub repository, downloaded once into ``<hub_dir>/<owner>_<repo>_<ref>``)
with a ``hubconf.py`` whose public callables are the entrypoints and whose optional ``dependencies`` list names
the modules they need.  Checkpoints fetched by URL are cached in ``<hub_dir>/checkpoints``; a file named
``name-<sha256 prefix>.ext`` can be checked against its hash.  The hub directory is torch's: ``$TORCH_HOME/hub``
(default ``~/.cache/torch/hub``) unless :func:`set_dir` names another, so ember and torch share downloads.

Network access (source='github', http(s) URLs) uses a short timeout and raises a clear error when the host
cannot be reached, rather than hanging.  Unlike torch, ember does not ask the GitHub API whether a ref belongs
to a fork (``skip_validation`` is accepted and ignored) and shows no progress bar.
"""

from __future__ import annotations

# urllib (with http.client and ssl) is imported where a download needs it: `import ember` stays cheap
import builtins
import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import Any

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url", "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
NETWORK_TIMEOUT = 10.0  # seconds to wait for a server before giving up (torch waits indefinitely)
_PATH_SEP_PATTERN = r"[/\\]"
_hub_dir: str | None = None


# ---------------------------------------------------------------- the hub directory


def _get_torch_home() -> str:
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(os.getenv(ENV_XDG_CACHE_HOME,
                                                                                DEFAULT_CACHE_DIR), "torch")))


def get_dir() -> str:
    """The directory hub repositories and checkpoints are cached in: the one :func:`set_dir` set, else
    ``$TORCH_HOME/hub`` (``$XDG_CACHE_HOME/torch/hub``, ``~/.cache/torch/hub``)."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use `d` as the hub directory from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# ---------------------------------------------------------------- hubconf modules


@contextlib.contextmanager
def _add_to_sys_path(path: str):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_module(name: str, path: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"failed to load spec from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_attr_from_module(module, name: str):
    return getattr(module, name) if name in dir(module) else None


def _check_dependencies(module) -> None:
    import importlib.util

    dependencies = _load_attr_from_module(module, VAR_DEPENDENCY)
    if dependencies is not None:
        missing = [name for name in dependencies if importlib.util.find_spec(name) is None]
        if missing:
            raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")


def _load_entry_from_hubconf(module, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    _check_dependencies(module)
    entry = _load_attr_from_module(module, model)
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


def _hubconf(repo_dir: str):
    with _add_to_sys_path(repo_dir):
        return _import_module(MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))


def _load_local(hubconf_dir: str, model: str, *args, **kwargs):
    """Call entrypoint `model` of the ``hubconf.py`` in `hubconf_dir` (on sys.path while it runs)."""
    with _add_to_sys_path(hubconf_dir):
        module = _import_module(MODULE_HUBCONF, os.path.join(hubconf_dir, MODULE_HUBCONF))
        entry = _load_entry_from_hubconf(module, model)
        return entry(*args, **kwargs)


# ---------------------------------------------------------------- GitHub repositories


def _network_error(what: str, error: Exception) -> RuntimeError:
    return RuntimeError(f"ember.hub could not reach {what} ({error}); check the network connection, or use "
                        "source='local' with a downloaded copy of the repository")


def _parse_repo_info(github: str) -> tuple:
    """(owner, name, ref) of 'owner/name[:ref]'; without a ref, 'main' if the repository has it, else 'master'
    (or whichever of the two is cached, when GitHub cannot be reached)."""
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen

    repo_info, ref = github.split(":") if ":" in github else (github, None)
    owner, name = repo_info.split("/")
    if ref is None:
        try:
            with urlopen(f"https://github.com/{owner}/{name}/tree/main/", timeout=NETWORK_TIMEOUT):
                ref = "main"
        except HTTPError as error:
            if error.code != 404:
                raise
            ref = "master"
        except (URLError, OSError) as error:
            for candidate in ("main", "master"):
                if os.path.exists(os.path.join(get_dir(), f"{owner}_{name}_{candidate}")):
                    return owner, name, candidate
            raise RuntimeError("It looks like there is no internet connection and the repo could not be found in "
                               f"the cache ({get_dir()})") from error
    return owner, name, ref


def _check_repo_is_trusted(owner: str, name: str, owner_name_branch: str, trust_repo) -> None:
    """torch's trust_repo rule: trusted owners, repositories listed in <hub_dir>/trusted_list or already
    downloaded load silently; others ask (trust_repo='check' or False) or are added (True)."""
    hub_dir = get_dir()
    path = os.path.join(hub_dir, "trusted_list")
    Path(path).touch()
    with open(path) as file:
        trusted = tuple(line.strip() for line in file)
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or owner_name_branch in next(os.walk(hub_dir))[1]
                  or owner in _TRUSTED_REPO_OWNERS)
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted repositories and as "
                         "such cannot be downloaded. Do you trust this repository and wish to add it to the trusted "
                         "list of repositories (y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # noqa: TRY002  (torch's exception type)
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(path, "a") as file:
            file.write(owner_name + "\n")


def _remove_if_exists(path: str) -> None:
    if os.path.isfile(path):
        os.remove(path)
    elif os.path.exists(path):
        shutil.rmtree(path)


def _safe_extract_zip(archive: zipfile.ZipFile, extract_to: str) -> None:
    """Extract every member, refusing absolute paths and '..' (zip slip)."""
    root = Path(extract_to).resolve(strict=False)
    for member in archive.infolist():
        filename = os.path.normpath(member.filename)
        if filename.startswith(("/", "\\")) or (len(filename) >= 2 and filename[1] == ":"):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(_PATH_SEP_PATTERN, filename):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / filename).resolve(strict=False).is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, root)


def _get_cache_or_reload(github: str, force_reload: bool, trust_repo, verbose: bool = True) -> str:
    """The local directory of GitHub repository 'owner/name[:ref]', downloaded as a zip archive if not cached."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    branch = ref.replace("/", "_")
    owner_name_branch = f"{owner}_{name}_{branch}"
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    archive_path = os.path.join(hub_dir, branch + ".zip")
    _remove_if_exists(archive_path)
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    sys.stdout.write(f'Downloading: "{url}" to {archive_path}\n')
    download_url_to_file(url, archive_path, progress=False)
    with zipfile.ZipFile(archive_path) as archive:
        extracted = os.path.join(hub_dir, archive.infolist()[0].filename)
        _remove_if_exists(extracted)
        _safe_extract_zip(archive, hub_dir)
    _remove_if_exists(archive_path)
    _remove_if_exists(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


# ---------------------------------------------------------------- public entry points


def list(github: str, force_reload: bool = False, skip_validation: bool = False, trust_repo="check",  # noqa: A001
         verbose: bool = True) -> builtins.list:
    """The entrypoints (public callables of ``hubconf.py``) of GitHub repository 'owner/name[:ref]'."""
    module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, verbose))
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo="check") -> str | None:
    """The docstring of entrypoint `model` of GitHub repository 'owner/name[:ref]'."""
    module = _hubconf(_get_cache_or_reload(github, force_reload, trust_repo, True))
    return _load_entry_from_hubconf(module, model).__doc__


def load(repo_or_dir: str, model: str, *args, source: str = "github", trust_repo="check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False, **kwargs) -> Any:
    """Call entrypoint `model` of a hub repository with `*args, **kwargs` and return its result.

    Args:
        repo_or_dir (str): 'owner/name[:ref]' with source='github', a directory with source='local'.
        model (str): the entrypoint, a public callable of the repository's ``hubconf.py``.
        source (str): 'github' (default) or 'local'.
        trust_repo (bool, str or None): see torch.hub.load; only used with source='github'.
        force_reload (bool): download the GitHub repository again even if cached.
        verbose (bool): report the use of a cached repository.
        skip_validation (bool): accepted for compatibility; ember does not query the GitHub API.
    """
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "github":
        repo_or_dir = _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose)
    return _load_local(repo_or_dir, model, *args, **kwargs)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Download `url` (http(s), file:, ...) to `dst`, through a temporary file renamed once complete; with
    `hash_prefix`, the SHA256 of the contents must start with it (RuntimeError otherwise, nothing written)."""
    from urllib.error import HTTPError, URLError
    from urllib.parse import urlparse
    from urllib.request import Request, urlopen

    dst = os.path.expanduser(dst)
    for _ in range(tempfile.TMP_MAX):
        partial = dst + "." + uuid.uuid4().hex + ".partial"
        try:
            file = open(partial, "x+b")  # noqa: SIM115  (closed below, or removed on failure)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "No usable temporary file name found")
    request = Request(url, headers={"User-Agent": "torch.hub"})
    try:
        try:
            response = urlopen(request, timeout=NETWORK_TIMEOUT)
        except HTTPError:
            raise
        except (URLError, OSError) as error:
            if urlparse(url).scheme in ("http", "https", "ftp"):
                raise _network_error(url, error) from error
            raise
        sha256 = hashlib.sha256() if hash_prefix is not None else None
        with response:
            while True:
                buffer = response.read(READ_DATA_CHUNK)
                if not buffer:
                    break
                file.write(buffer)
                if sha256 is not None:
                    sha256.update(buffer)
        file.close()
        if sha256 is not None:
            digest = sha256.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        shutil.move(file.name, dst)
    finally:
        file.close()
        if os.path.exists(file.name):
            os.remove(file.name)


def _is_legacy_zip_format(filename: str) -> bool:
    """A zip archive holding exactly one file: the pre-1.6 way of shipping a checkpoint zipped."""
    if zipfile.is_zipfile(filename):
        with zipfile.ZipFile(filename) as archive:
            members = archive.infolist()
        return len(members) == 1 and not members[0].is_dir()
    return False


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location=None, progress: bool = True,
                             check_hash: bool = False, file_name: str | None = None,
                             weights_only: bool = False) -> dict:
    """Load the object saved at `url` (usually a state dict), downloading it into `model_dir` (default
    ``<hub_dir>/checkpoints``) unless a file of that name is already there.

    Args:
        url (str): where the checkpoint is (http(s):// or file://).
        model_dir (str, optional): the cache directory.
        map_location: as in :func:`ember.load`.
        progress (bool): accepted for compatibility (no progress bar is shown).
        check_hash (bool): the file name is ``name-<sha256 prefix>.ext``; check the download against it.
        file_name (str, optional): the cached file's name, instead of the URL's.
        weights_only (bool): as in :func:`ember.load`.
    """
    from urllib.parse import urlparse

    from . import serialization

    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            match = HASH_REGEX.search(filename)
            hash_prefix = match.group(1) if match else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    if _is_legacy_zip_format(cached_file):
        with zipfile.ZipFile(cached_file) as archive:
            member = archive.infolist()[0]
            _safe_extract_zip(archive, model_dir)
        cached_file = os.path.join(model_dir, member.filename)
    return serialization.load(cached_file, map_location=map_location, weights_only=weights_only)
