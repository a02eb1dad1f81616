"""PyTorch's checkpoint container: a zip archive of records under one top folder.

What torch.save writes, and so what we write (names under `<archive>/`):

    data.pkl                 the pickled object; tensors point at storages by key
    .format_version          "1"
    .storage_alignment       "64"
    byteorder                "little"
    data/<key>               one record per storage: its raw bytes, little-endian
    version                  "3\\n"
    .data/serialization_id   40 decimal digits, unique per save

Every record is stored uncompressed (ZIP_STORED) and starts at a file offset
that is a multiple of 64: torch pads the local header's extra field with an
"FB" block to get there, and so do we.  That is what lets a loader map a storage
straight from the file (`mmap=True`) instead of reading it.

The folder name is the saved file's stem ("archive" for file objects); readers
take whatever folder the first record is in, as torch does.
"""

from __future__ import annotations

import concurrent.futures
import mmap as mmap_module
import random
import struct
import zipfile
import zlib

import numpy as np

ALIGNMENT = 64
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_HEADER_SIGNATURE = 0x04034B50
_PADDING_ID = b"FB"
_CHUNK = 64 << 20  # write large storages in pieces, so no single write call holds the GIL for seconds


_crc_workers = None


def _crc_pool() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that check storages' CRCs while the next storage is read (zlib.crc32 releases the GIL)."""
    global _crc_workers
    if _crc_workers is None:
        _crc_workers = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="ember-crc")
    return _crc_workers


class CorruptArchive(Exception):
    """The file is not a readable checkpoint; the message says why (serialization.load names the file)."""


def _padding_extra(header_offset: int, name: bytes, zip64: bool) -> bytes:
    """The "FB" extra field that puts this record's data at a multiple of ALIGNMENT."""
    data_start = header_offset + _LOCAL_HEADER.size + len(name) + (20 if zip64 else 0)
    pad = -data_start % ALIGNMENT
    if pad < 4:  # the field's own id and length take 4 bytes
        pad += ALIGNMENT
    return _PADDING_ID + struct.pack("<H", pad - 4) + b"Z" * (pad - 4)


class ArchiveWriter:
    """Writes records to a seekable binary file object in torch's layout."""

    def __init__(self, fileobj, archive_name: str) -> None:
        self.zip = zipfile.ZipFile(fileobj, "w", zipfile.ZIP_STORED, allowZip64=True)
        self.prefix = archive_name

    def write_record(self, name: str, data) -> None:
        """Write bytes, or a C-contiguous uint8 NumPy array, as `<archive>/name`."""
        buffer = memoryview(data).cast("B") if isinstance(data, np.ndarray) else memoryview(data)
        info = zipfile.ZipInfo(f"{self.prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = buffer.nbytes
        zip64 = buffer.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a zip64 local header
        info.extra = _padding_extra(self.zip.start_dir, info.filename.encode("ascii"), zip64)
        with self.zip.open(info, "w", force_zip64=zip64) as out:
            for start in range(0, buffer.nbytes, _CHUNK):
                out.write(buffer[start : start + _CHUNK])

    def close(self) -> None:
        self.zip.close()


def serialization_id() -> str:
    """40 decimal digits, as torch writes to .data/serialization_id (it is only compared for equality)."""
    return "".join(str(random.SystemRandom().randrange(10)) for _ in range(40))


def _crc_unrecorded(info: zipfile.ZipInfo) -> bool:
    """NOTE [ Records without a CRC ]: torch writes CRC 0 for every record after
    torch.serialization.set_crc32_options(False), and for the storages it leaves empty under
    torch.serialization.skip_data(); torch.load never checks CRCs, so such files load there.  We check
    every CRC a file records and take 0 (stored, non-empty records only) as "none recorded"."""
    return info.CRC == 0 and info.compress_type == zipfile.ZIP_STORED and info.file_size > 0


class ArchiveReader:
    """Reads a torch zip checkpoint: records by name, storages read into arrays or mapped from the file."""

    def __init__(self, fileobj) -> None:
        try:
            self.zip = zipfile.ZipFile(fileobj, "r")
        except zipfile.BadZipFile as error:
            raise CorruptArchive(f"not a zip archive or truncated ({error})") from error
        self.fileobj = fileobj
        self.infos = {info.filename: info for info in self.zip.infolist()}
        names = list(self.infos)
        if not names or "/" not in names[0]:
            raise CorruptArchive("the archive has no top folder of records")
        self.prefix = names[0].split("/", 1)[0]
        if f"{self.prefix}/data.pkl" not in self.infos:
            if f"{self.prefix}/constants.pkl" in self.infos:
                raise CorruptArchive("it is a TorchScript archive (torch.jit.save), which ember cannot load")
            raise CorruptArchive(f"no '{self.prefix}/data.pkl' record")
        self._map = None
        self._pending_checks: list = []

    def info(self, name: str) -> zipfile.ZipInfo:
        info = self.infos.get(f"{self.prefix}/{name}")
        if info is None:
            raise CorruptArchive(f"record '{self.prefix}/{name}' is missing")
        return info

    def has_record(self, name: str) -> bool:
        return f"{self.prefix}/{name}" in self.infos

    def read_record(self, name: str) -> bytes:
        info = self.info(name)
        try:
            if _crc_unrecorded(info):
                return self._read_stored(info)
            return self.zip.read(info)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, struct.error) as error:
            raise CorruptArchive(f"record '{name}' is unreadable ({error})") from error

    def _read_stored(self, info: zipfile.ZipInfo) -> bytes:
        """A stored record's bytes read straight from the file, with no CRC to check them against."""
        self.fileobj.seek(self.data_offset(info))
        data = self.fileobj.read(info.file_size)
        if len(data) != info.file_size:
            raise CorruptArchive(f"record '{info.filename}' is truncated")
        return data

    def data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where the record's bytes start in the file: after its local header, whose extra field we must read."""
        self.fileobj.seek(info.header_offset)
        header = self.fileobj.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise CorruptArchive(f"record '{info.filename}' is truncated")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != _LOCAL_HEADER_SIGNATURE:
            raise CorruptArchive(f"record '{info.filename}' has a bad local header")
        return info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10]

    def read_storage(self, key: str, nbytes: int) -> np.ndarray:
        """A fresh writable uint8 array of the storage's bytes, read straight into place, CRC-checked."""
        info = self._storage_info(key, nbytes)
        out = np.empty(nbytes, np.uint8)
        if info.compress_type != zipfile.ZIP_STORED or not hasattr(self.fileobj, "readinto"):
            out[:] = np.frombuffer(self.read_record(f"data/{key}"), np.uint8, nbytes)
            return out
        self.fileobj.seek(self.data_offset(info))
        view = memoryview(out)
        done = 0
        while done < nbytes:
            count = self.fileobj.readinto(view[done:])
            if not count:
                raise CorruptArchive(f"storage '{key}' is truncated")
            done += count
        if not _crc_unrecorded(info):
            self._pending_checks.append((key, info.CRC, _crc_pool().submit(zlib.crc32, view)))
        return out

    def verify(self) -> None:
        """Wait for the storages' CRC checks (run in threads while reading went on); raise on a mismatch."""
        checks, self._pending_checks = self._pending_checks, []
        for key, expected, result in checks:
            if result.result() != expected:
                raise CorruptArchive(f"storage '{key}' fails its CRC check (the file is corrupted)")

    def map_storage(self, key: str, nbytes: int) -> np.ndarray:
        """The storage's bytes mapped copy-on-write from the file (torch's MAP_PRIVATE): nothing is read yet."""
        info = self._storage_info(key, nbytes)
        if info.compress_type != zipfile.ZIP_STORED:
            raise CorruptArchive(f"storage '{key}' is compressed, so it cannot be memory-mapped")
        if nbytes == 0:
            return np.empty(0, np.uint8)
        if self._map is None:
            self._map = mmap_module.mmap(self.fileobj.fileno(), 0, access=mmap_module.ACCESS_COPY)
        offset = self.data_offset(info)
        if offset + nbytes > len(self._map):
            raise CorruptArchive(f"storage '{key}' runs past the end of the file")
        return np.frombuffer(self._map, np.uint8, nbytes, offset)

    def _storage_info(self, key: str, nbytes: int) -> zipfile.ZipInfo:
        info = self.info(f"data/{key}")
        if info.file_size < nbytes:
            raise CorruptArchive(f"storage '{key}' holds {info.file_size} bytes, the pickle expects {nbytes}")
        return info

    def close(self) -> None:
        self.zip.close()
