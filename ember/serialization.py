"""ember.save / ember.load: checkpoints in PyTorch's formats, so torch.load reads ember's and back.

    ember.save(model.state_dict(), "model.pt")          # torch.load("model.pt") reads it
    state = ember.load("model.pt")                      # weights_only=True: data only, no code runs
    state = ember.load("big.pt", mmap=True)             # storages mapped from the file, read on first touch
    ember.save(state, "old.pt", _use_new_zipfile_serialization=False)   # torch's legacy format

The container is torch's zip archive (ember/_serialization/archive.py) or,
for files from torch < 1.6 and `_use_new_zipfile_serialization=False`, its
legacy sequence of pickles (ember/_serialization/legacy.py); the pickle inside
names torch's globals (ember/_serialization/pickling.py), and ember maps them
back to its own tensors on load.  ember never imports torch.

Safety.  `load` is weights-only by default: the pickle may name only the
globals on torch's allow-list (tensors, dtypes, devices, sizes, OrderedDict...)
plus those given to `add_safe_globals`; any other global is refused with
pickle.UnpicklingError before it is looked up, so nothing in the file runs.
`weights_only=False` is the explicit opt-in to full pickle.

Atomicity.  Saving to a path writes a temporary file in the same folder,
flushes and fsyncs it, then renames it over the target (os.replace), so a
crash or kill mid-save leaves the previous checkpoint whole.  A killed save can
leave its `.<name>.*.tmp` file behind; it is never mistaken for the checkpoint.
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import pickletools
import re
import struct
import sys
import tempfile
import zipfile
import zlib

from ._device import CPU, as_device
from ._device import device as Device
from ._serialization import legacy
from ._serialization.archive import ArchiveReader, ArchiveWriter, CorruptArchive, serialization_id
from ._serialization.pickling import (
    ALLOWED_GLOBALS,
    ForbiddenGlobal,
    LoadedStorage,
    MissingCounterpart,
    StorageTable,
    TorchPickler,
    TorchUnpickler,
    python3_global,
)

__all__ = [
    "save",
    "load",
    "add_safe_globals",
    "get_safe_globals",
    "clear_safe_globals",
    "safe_globals",
    "get_unsafe_globals_in_checkpoint",
    "DEFAULT_PROTOCOL",
]

DEFAULT_PROTOCOL = 2
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


# ---------------------------------------------------------------- safe globals


_safe_globals: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Allow these globals in weights-only loads: objects (named by their module and qualname) or
    (object, "module.name") pairs, as torch.serialization.add_safe_globals."""
    for entry in safe_globals:
        _global_name(entry)  # validate now, not at load time
        _safe_globals.append(entry)


def get_safe_globals() -> list:
    """The globals added with add_safe_globals, in order."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global added with add_safe_globals."""
    _safe_globals.clear()


class safe_globals:
    """Context manager: allow these globals in weights-only loads inside the block only."""

    def __init__(self, safe_globals: list) -> None:
        self.safe_globals = list(safe_globals)
        self.saved: list = []

    def __enter__(self) -> None:
        self.saved = get_safe_globals()
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info) -> None:
        _safe_globals[:] = self.saved


def _global_name(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError("a safe global given as a tuple must be (object, 'module.name')")
        return entry[1], entry[0]
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if module is None or name is None:
        raise TypeError(f"cannot tell the module and name of safe global {entry!r}; pass (object, 'module.name')")
    return f"{module}.{name}", entry


def _user_globals() -> dict:
    return dict(_global_name(entry) for entry in _safe_globals)


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The globals ("module.name") the checkpoint's pickle names that a weights-only load would refuse,
    as torch.serialization.get_unsafe_globals_in_checkpoint: nothing is unpickled, so nothing runs.

    Only GLOBAL opcodes are read, so (as in torch) globals a pickle builds some other way are not listed.
    """
    with _open_for_reading(f) as fileobj:
        magic = fileobj.read(4)
        fileobj.seek(-len(magic), io.SEEK_CUR)
        if magic not in _ZIP_MAGIC:
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        reader = ArchiveReader(fileobj)
        data = reader.read_record("data.pkl")
    allowed = set(ALLOWED_GLOBALS) | set(_user_globals())
    found = set()
    for opcode, argument, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL":
            found.add(".".join(python3_global(*argument.split(" ", 1))))
    return list(found - allowed)


# ---------------------------------------------------------------- save


def save(
    obj,
    f,
    pickle_module=pickle,
    pickle_protocol: int = DEFAULT_PROTOCOL,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save an object (a state dict, a tensor, nested containers of them) in PyTorch's checkpoint format.

    Args:
        obj: what to save.
        f: a path (str or os.PathLike), written atomically, or a writable binary file object.
        pickle_module: only the standard `pickle` is supported (ember writes torch's globals itself).
        pickle_protocol: 2, as torch, so torch's weights-only loader accepts the result.
        _use_new_zipfile_serialization: False writes torch's legacy (pre-1.6) format, which torch.load reads
            too (no mmap, no random access to records).

    Example::

        >>> import io
        >>> buffer = io.BytesIO()
        >>> ember.save({"w": ember.ones(2)}, buffer)
        >>> ember.load(io.BytesIO(buffer.getvalue()))["w"]
        tensor([1., 1.])
    """
    if pickle_module is not pickle:
        raise NotImplementedError("ember.save supports only the standard pickle module")
    if pickle_protocol < 2:
        raise ValueError(f"pickle_protocol must be at least 2, got {pickle_protocol}")

    def write(fileobj, archive_name: str) -> None:
        if _use_new_zipfile_serialization:
            _write_checkpoint(obj, fileobj, archive_name, pickle_protocol, not _disable_byteorder_record)
        else:
            legacy.write_legacy(obj, fileobj, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        _save_to_path(os.fspath(f), write)
        return
    if not hasattr(f, "write"):
        raise AttributeError(f"expected 'f' to be a path or a writable file object, got {type(f).__name__}")
    if _seekable(f) or not _use_new_zipfile_serialization:
        write(f, "archive")
    else:  # zipfile needs to seek back over each record's header: build it in memory, then stream it out
        buffer = io.BytesIO()
        write(buffer, "archive")
        f.write(buffer.getbuffer())


def _write_checkpoint(obj, fileobj, archive_name: str, protocol: int, byteorder_record: bool) -> None:
    storages = StorageTable()
    pickled = io.BytesIO()
    TorchPickler(pickled, protocol, storages).dump(obj)
    writer = ArchiveWriter(fileobj, archive_name)
    writer.write_record("data.pkl", pickled.getbuffer())
    writer.write_record(".format_version", b"1")
    writer.write_record(".storage_alignment", b"64")
    if byteorder_record:
        writer.write_record("byteorder", sys.byteorder.encode("ascii"))
    for ref in storages.in_order:  # native byte order, which the byteorder record names (as torch)
        writer.write_record(f"data/{ref.key}", ref.raw)
    writer.write_record("version", b"3\n")
    writer.write_record(".data/serialization_id", serialization_id().encode("ascii"))
    writer.close()


def _archive_name(path: str) -> str:
    """The top folder torch would use: the file's name up to its first dot (ASCII-safe), else "archive"."""
    stem = os.path.basename(path).split(".", 1)[0]
    stem = re.sub(r"[^A-Za-z0-9_\-]", "_", stem)
    return stem or "archive"


def _save_to_path(path: str, write) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {directory} does not exist.")
    mode = os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o666 & ~_umask()
    handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            write(out, _archive_name(path))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def _seekable(f) -> bool:
    try:
        return bool(f.seekable())
    except (AttributeError, OSError, ValueError):
        return False


# ---------------------------------------------------------------- load


class _LoadError(RuntimeError):
    """An error about the caller's request (devices, map_location), passed through as is."""


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args,
):
    """Load an object saved by ember.save or torch.save: the zip format, or the legacy one of torch < 1.6.

    Args:
        f: a path, or a readable binary file object.
        map_location: where to put the storages: a device or device string ("cpu", "meta"), a dict from
            saved location to location ({"cuda:0": "cpu"}), or a callable (storage, location) -> storage.
        pickle_module: a pickle module for full loads (weights_only=False only).
        weights_only: True (the default) restricts the pickle to tensors, containers and the other
            allow-listed globals (see add_safe_globals); False unpickles anything (only for trusted files).
        mmap: map the storages from the file instead of reading them (needs a path or a real file, and the
            zip format: a legacy file raises torch's RuntimeError).

    Raises:
        pickle.UnpicklingError: the file names a global a weights-only load does not allow.
        RuntimeError: the file is not a valid checkpoint (truncated, corrupted, another format).
    """
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    unpickler_base = TorchUnpickler if pickle_module in (None, pickle) else _custom_unpickler(pickle_module)
    pickle_load_args.setdefault("encoding", "utf-8")  # as torch: Python 2's strings, in old legacy files
    name = _describe(f)
    with _open_for_reading(f) as fileobj:
        kind = _checkpoint_format(fileobj)
        _check_request(f, kind, bool(mmap), weights_only)
        try:
            if kind == "zip":
                reader = ArchiveReader(fileobj)
                return _load_archive(reader, map_location, weights_only, bool(mmap), unpickler_base, pickle_load_args)
            if kind == "empty":
                raise CorruptArchive("the file is empty")
            return _load_legacy(fileobj, map_location, weights_only, unpickler_base, pickle_load_args)
        except (ForbiddenGlobal, MissingCounterpart, _LoadError):
            raise
        except Exception as error:
            if not weights_only and not isinstance(error, _CORRUPTION_ERRORS):
                raise  # a full load's own errors (a missing class, a failing __setstate__) stay what they are
            reason = f"{type(error).__name__}: {error}" if not isinstance(error, CorruptArchive) else str(error)
            raise RuntimeError(f"{name} is not a valid ember/PyTorch checkpoint: {reason}") from error


_CORRUPTION_ERRORS = (
    CorruptArchive,
    zipfile.BadZipFile,
    pickle.UnpicklingError,
    EOFError,
    struct.error,
    zlib.error,
    UnicodeDecodeError,
)


def _describe(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return repr(os.fspath(f))
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"


@contextlib.contextmanager
def _open_for_reading(f):
    if isinstance(f, (str, os.PathLike)):
        with open(os.fspath(f), "rb") as fileobj:
            yield fileobj
        return
    if not hasattr(f, "read"):
        raise AttributeError(f"expected 'f' to be a path or a readable file object, got {type(f).__name__}")
    yield f if _seekable(f) else io.BytesIO(f.read())


def _has_fileno(f) -> bool:
    try:
        f.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both OSError and ValueError
        return False
    return True


def _checkpoint_format(fileobj) -> str:
    """The file's format from its first bytes, as torch tells them: zip, tar (torch < 0.4), empty, or else
    legacy (torch < 1.6; a file that is none of these fails there, on its magic number, as in torch)."""
    start = fileobj.tell()
    head = fileobj.read(512)
    fileobj.seek(start)
    if head[:4] in _ZIP_MAGIC:
        return "zip"
    if not head:
        return "empty"
    return "tar" if legacy.is_tar(head) else "legacy"


def _check_request(f, kind: str, mmap: bool, weights_only: bool) -> None:
    """Refusals that depend on the format, before anything is unpickled: mmap needs a zip file (torch's
    errors), and ember reads no tar files."""
    if kind == "zip":
        if mmap and not isinstance(f, (str, os.PathLike)) and not _has_fileno(f):
            raise ValueError("f must be a file path or a real file in order to use the mmap argument")
        return
    if mmap:
        named = f"{f}, " if isinstance(f, str) else ""
        raise RuntimeError(
            "mmap can only be used with files saved with "
            f"`torch.save({named}_use_new_zipfile_serialization=True), "
            "please torch.save your checkpoint with this option in order to use mmap."
        )
    if kind == "tar":  # torch reads these only with weights_only=False; ember not at all
        raise RuntimeError(f"{_describe(f)} {legacy.TAR_MESSAGE}")


def _load_archive(reader: ArchiveReader, map_location, weights_only: bool, mmap: bool, unpickler_base, kwargs):
    swap = reader.has_record("byteorder") and reader.read_record("byteorder").decode("ascii") != sys.byteorder
    loaded: dict[str, LoadedStorage] = {}

    def load_storage(dtype, key, location, numel):
        storage = loaded.get(key)
        if storage is None:
            storage = loaded[key] = _read_storage(reader, dtype, key, location, numel, map_location, mmap, swap)
        elif storage.dtype is not dtype:
            raise CorruptArchive(f"storage '{key}' is used with two dtypes ({storage.dtype} and {dtype})")
        return storage

    data = reader.read_record("data.pkl")
    unpickler = unpickler_base(
        io.BytesIO(data), weights_only=weights_only, load_storage=load_storage, user_globals=_user_globals(), **kwargs
    )
    result = unpickler.load()
    reader.verify()
    reader.close()
    return result


def _load_legacy(fileobj, map_location, weights_only: bool, unpickler_base, kwargs):
    """A legacy file's object: its storages are made empty where map_location puts them, then filled."""

    def new_storage(dtype, location: str, numel: int) -> LoadedStorage:
        if _is_map_function(map_location):
            return _call_map_location(map_location, LoadedStorage.empty(dtype, numel, CPU), location)
        return LoadedStorage.empty(dtype, numel, _target_device(location, map_location))

    return legacy.read_legacy(
        fileobj,
        unpickler_base,
        new_storage,
        weights_only=weights_only,
        user_globals=_user_globals(),
        pickle_load_args=kwargs,
    )


def _is_map_function(map_location) -> bool:
    return callable(map_location) and not isinstance(map_location, (str, Device, dict))


def _call_map_location(map_location, storage: LoadedStorage, location: str) -> LoadedStorage:
    """torch's rule for a callable map_location: its result, or the saved location when it returns None."""
    mapped = map_location(storage, location)
    if mapped is None:
        return storage.to(_target_device(location, None))
    if isinstance(mapped, (str, Device)):
        return storage.to(as_device(mapped))
    if not isinstance(mapped, LoadedStorage):
        raise _LoadError(f"map_location returned {type(mapped).__name__}; expected a storage, device or None")
    return mapped


def _read_storage(reader, dtype, key, location, numel, map_location, mmap, swap) -> LoadedStorage:
    if _is_map_function(map_location):
        storage = _read_storage(reader, dtype, key, location, numel, "cpu", mmap, swap)
        return _call_map_location(map_location, storage, location)
    device = _target_device(location, map_location)
    nbytes = numel * dtype.itemsize
    if device.type == "meta":
        return LoadedStorage(None, dtype, device, numel)
    raw = reader.map_storage(key, nbytes) if mmap else reader.read_storage(key, nbytes)
    array = raw.view(dtype.np_dtype)
    if swap:
        array = array.byteswap()
    return LoadedStorage(array, dtype, as_device("cpu"), numel).to(device)


def _target_device(location: str, map_location) -> Device:
    if isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif isinstance(map_location, (str, Device)):
        target = map_location
    else:
        target = location
    try:
        device = as_device(target)
    except (RuntimeError, TypeError) as error:
        raise _LoadError(
            f"cannot place a storage saved on '{location}' on '{target}': {error}; pass map_location='cpu'"
        ) from error
    if device.type == "cuda":
        _check_cuda(location)
    return device


def _check_cuda(location: str) -> None:
    from . import _dispatch

    try:
        _dispatch.device_module(as_device("cuda"))
    except Exception as error:  # noqa: BLE001 - any failure to reach the CUDA backend means the same thing
        raise _LoadError(
            f"Attempting to deserialize object on a CUDA device ('{location}') but ember's CUDA backend is not "
            "available. If you are running on a CPU-only machine, please use ember.load with "
            "map_location='cpu' to map your storages to the CPU."
        ) from error


def _custom_unpickler(pickle_module):
    """TorchUnpickler's behaviour on a caller-given pickle module's Unpickler (weights_only=False only)."""
    base = pickle_module.Unpickler

    class CustomUnpickler(base):
        def __init__(self, file, *, weights_only, load_storage, user_globals, **kwargs):
            base.__init__(self, file, **kwargs)
            self.weights_only = weights_only
            self.load_storage = load_storage
            self.user_globals = user_globals

        find_class = TorchUnpickler.find_class
        persistent_load = TorchUnpickler.persistent_load

    return CustomUnpickler
