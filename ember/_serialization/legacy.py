"""torch's legacy (non-zip) checkpoint format, both ways: what torch < 1.6 saved, and what
`torch.save(obj, f, _use_new_zipfile_serialization=False)` still writes (torch/serialization.py,
`_legacy_save` and `_legacy_load`).

The file is five pickles in a row, then the storages' bytes:

    MAGIC_NUMBER            0x1950A86A20F9469CFC6C
    PROTOCOL_VERSION        1001
    sys_info                {"protocol_version", "little_endian", "type_sizes"}; torch ignores it on load
    the object              as the zip format's data.pkl, but a storage's persistent id has six fields:
                            ("storage", torch.FloatStorage, key, location, numel, view_metadata)
    the storage keys        a list, in the order their bytes follow
    then for each key       its element count (int64), then its elements; both little-endian, always

`view_metadata` is None except in files from torch < 1.0, where a storage could be a slice of another:
(view_key, offset, numel), in elements of the root storage.  Whole pickled modules add
("module", class, source_file, source) ids, which torch uses to warn when the class's source changed.

The bytes come after the pickle, so loading makes every storage empty where map_location puts it,
rebuilds the tensors over it, then fills it in place, as torch does.  The object goes through the same
unpickler as the zip format's data.pkl (weights-only by default); the other pickles are plain data and
go through one that refuses every global but `_codecs.encode` (how protocol 2 pickles bytes).

torch < 0.4 wrote tar archives ("storages", "tensors", "pickle" members); ember does not read those.
"""

from __future__ import annotations

import codecs
import pickle
import struct
import sys

import numpy as np

from .archive import CorruptArchive
from .pickling import ForbiddenGlobal, LoadedStorage, StorageTable, StorageType, TorchPickler

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
# torch writes struct's standard sizes ("=h", "=i", "=l"), the same on every machine
_SYS_INFO = {
    "protocol_version": PROTOCOL_VERSION,
    "little_endian": sys.byteorder == "little",
    "type_sizes": {"short": 2, "int": 4, "long": 4},
}
_COUNT = struct.Struct("<q")
_CHUNK = 64 << 20  # large storages move in pieces, so no single call holds the GIL for seconds

TAR_MESSAGE = (
    "is in torch's tar checkpoint format (written by torch < 0.4), which ember does not read; "
    "load it with torch.load(f, weights_only=False) and save it again with torch.save(obj, f)"
)


def is_tar(head: bytes) -> bool:
    """Whether a file's first 512 bytes are a tar header (the ustar magic at offset 257)."""
    return head[257:262] == b"ustar"


# ---------------------------------------------------------------- writing


class LegacyPickler(TorchPickler):
    """TorchPickler with the legacy format's six-field storage ids (no views: view_metadata is None)."""

    def persistent_id(self, obj):
        saved = super().persistent_id(obj)
        return None if saved is None else (*saved, None)


def write_legacy(obj, fileobj, protocol: int) -> None:
    """Write `obj` to a binary file object in the legacy format (no seeking, so any writable file works)."""
    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(header, fileobj, protocol=protocol)
    storages = StorageTable()
    LegacyPickler(fileobj, protocol, storages).dump(obj)
    pickle.dump([ref.key for ref in storages.in_order], fileobj, protocol=protocol)
    for ref in storages.in_order:
        fileobj.write(_COUNT.pack(ref.numel))
        raw = memoryview(_little_endian(ref.raw.view(ref.dtype.np_dtype)).view(np.uint8))
        for start in range(0, raw.nbytes, _CHUNK):
            fileobj.write(raw[start : start + _CHUNK])


def _little_endian(array: np.ndarray) -> np.ndarray:
    return array if sys.byteorder == "little" else array.byteswap()


# ---------------------------------------------------------------- reading


class _PlainDataUnpickler(pickle.Unpickler):
    """For the format's plain-data pickles (magic number, version, sys_info, keys): no ids, and no globals
    but the one protocol 2 builds bytes with."""

    def find_class(self, module: str, name: str):
        if (module, name) == ("_codecs", "encode"):
            return codecs.encode
        raise pickle.UnpicklingError(f"unexpected global {module}.{name} outside the checkpoint's object")

    def persistent_load(self, saved_id):
        raise pickle.UnpicklingError("unexpected persistent id outside the checkpoint's object")


def read_legacy(fileobj, unpickler_base, new_storage, *, weights_only: bool, user_globals: dict, pickle_load_args):
    """Load the object from a legacy checkpoint, positioned at its start.

    `unpickler_base` is the zip path's unpickler class (TorchUnpickler, or its version on a caller's
    pickle module); `new_storage(dtype, location, numel)` returns an empty storage placed as map_location says.
    """
    _read_header(fileobj, pickle_load_args)
    storages = _Storages(new_storage)

    class LegacyUnpickler(unpickler_base):
        persistent_load = _persistent_load

    unpickler = LegacyUnpickler(
        fileobj, weights_only=weights_only, load_storage=storages.get, user_globals=user_globals, **pickle_load_args
    )
    result = unpickler.load()
    keys = _PlainDataUnpickler(fileobj, **pickle_load_args).load()
    storages.fill(fileobj, keys)
    return result


def _read_header(fileobj, pickle_load_args) -> None:
    try:
        magic = _PlainDataUnpickler(fileobj, **pickle_load_args).load()
    except Exception as error:  # noqa: BLE001 - whatever these bytes are, they do not start a checkpoint
        raise CorruptArchive("Invalid magic number; corrupt file?") from error
    if type(magic) is not int or magic != MAGIC_NUMBER:
        raise CorruptArchive("Invalid magic number; corrupt file?")
    version = _PlainDataUnpickler(fileobj, **pickle_load_args).load()
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise CorruptArchive(f"Invalid protocol version: {version!r:.100}")
    _PlainDataUnpickler(fileobj, **pickle_load_args).load()  # sys_info: sizes and byte order are fixed


def _ascii(value):
    """A typename or location as str: loads with encoding='bytes' give Python 2's strings as bytes (as torch)."""
    return value.decode("ascii") if isinstance(value, bytes) else value


def _persistent_load(self, saved_id):
    """The legacy unpickler's persistent_load: storages (six-field ids) and, in full loads, module classes."""
    if not isinstance(saved_id, tuple) or not saved_id:
        raise pickle.UnpicklingError(f"unknown persistent id {saved_id!r:.200}")
    typename = _ascii(saved_id[0])
    if typename == "module" and len(saved_id) == 4:
        if self.weights_only:
            raise ForbiddenGlobal(
                "Weights only load failed. Only persistent_load of storage is allowed, but got module"
            )
        return saved_id[1]  # the class; torch compares its source with the saved one, meaningless for ember's
    if typename != "storage" or len(saved_id) != 6:
        raise pickle.UnpicklingError(f"unknown persistent id {saved_id!r:.200}")
    _, storage_type, key, location, numel, view_metadata = saved_id
    location = _ascii(location)
    if not isinstance(storage_type, StorageType):
        raise pickle.UnpicklingError(f"unknown storage type {storage_type!r:.100}")
    if not (isinstance(key, (str, bytes)) and isinstance(location, str) and type(numel) is int and numel >= 0):
        raise pickle.UnpicklingError(f"malformed storage id {saved_id!r:.200}")
    if view_metadata is not None and not (isinstance(view_metadata, tuple) and len(view_metadata) == 3):
        raise pickle.UnpicklingError(f"malformed storage view {view_metadata!r:.200}")
    return self.load_storage(storage_type.dtype, key, location, numel, view_metadata)


class _Storages:
    """The storages a legacy pickle names: made empty on first use, filled from the bytes after the pickle."""

    def __init__(self, new_storage) -> None:
        self.new_storage = new_storage
        self.roots: dict = {}
        self.views: dict = {}

    def get(self, dtype, key, location: str, numel: int, view_metadata) -> LoadedStorage:
        root = self.roots.get(key)
        if root is None:
            root = self.roots[key] = self.new_storage(dtype, location, numel)
        elif root.dtype is not dtype:
            raise CorruptArchive(f"storage {key!r:.50} is used with two dtypes ({root.dtype} and {dtype})")
        if view_metadata is None:
            return root
        view_key, offset, size = view_metadata
        view = self.views.get(view_key)
        if view is None:
            view = self.views[view_key] = root.view(offset, size)
        return view

    def fill(self, fileobj, keys) -> None:
        """Read each key's count and elements, in the keys' order, into its storage."""
        if not isinstance(keys, list) or not all(isinstance(key, (str, bytes)) for key in keys):
            raise CorruptArchive("the list of storage keys after the pickle is malformed")
        if len(set(keys)) != len(keys) or set(keys) != set(self.roots):
            raise CorruptArchive(
                f"the file has data for storages {keys!r:.200}, its pickle uses {list(self.roots)!r:.200}"
            )
        for key in keys:
            _read_elements(fileobj, self.roots[key], key)


def _read_elements(fileobj, storage: LoadedStorage, key) -> None:
    header = fileobj.read(_COUNT.size)
    if len(header) != _COUNT.size:
        raise CorruptArchive(f"the file ends before the data of storage {key!r:.50}")
    (numel,) = _COUNT.unpack(header)
    itemsize = storage.dtype.itemsize
    if numel != storage.numel:  # torch's check and message
        raise CorruptArchive(f"storage has wrong byte size: expected {numel * itemsize} got {storage.numel * itemsize}")
    if storage.array is None:  # a meta storage: nothing to read
        fileobj.seek(storage.numel * itemsize, 1)
        return
    array = storage.array
    direct = isinstance(array, np.ndarray) and array.flags.c_contiguous and array.flags.writeable
    host = array if direct else np.empty(storage.numel, storage.dtype.np_dtype)
    _read_into(fileobj, host.view(np.uint8), key)
    if sys.byteorder != "little":
        host.byteswap(inplace=True)
    if not direct:
        storage.fill(host)


def _read_into(fileobj, buffer: np.ndarray, key) -> None:
    """Fill a 1-D uint8 array from the file, in pieces, failing on a short file."""
    view = memoryview(buffer)
    readinto = getattr(fileobj, "readinto", None)
    done = 0
    while done < buffer.nbytes:
        piece = view[done : done + _CHUNK]
        if readinto is not None:
            count = readinto(piece)
        else:
            data = fileobj.read(len(piece))
            count = len(data)
            piece[:count] = data
        if not count:
            raise CorruptArchive(
                f"the file ends inside the data of storage {key!r:.50} ({done} of {buffer.nbytes} bytes)"
            )
        done += count
