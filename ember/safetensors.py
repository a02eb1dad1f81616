"""The safetensors format, read and written directly (no dependency): the functions of safetensors.torch.

    ember.safetensors.save_file(model.state_dict(), "model.safetensors")
    model.load_state_dict(ember.safetensors.load_file("model.safetensors"))

A file is an 8-byte little-endian header length N, N bytes of JSON, then the
tensors' raw little-endian bytes back to back.  The header maps each name to
{"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets into the
data that follows the header), plus an optional "__metadata__" of str -> str.
Nothing in a safetensors file is executable, which is the format's point.

As the Rust implementation does, we pad the header with spaces to a multiple
of 8 bytes and lay tensors out by dtype (widest first, in the Rust enum's
order), then name, so each tensor's data is aligned to its element size and
our bytes equal the package's.
"""

from __future__ import annotations

import json
import mmap as mmap_module
import os
import struct

import numpy as np

from . import _dtype as dt
from ._device import as_device
from ._tensor import Tensor

__all__ = ["save_file", "load_file", "safe_open", "save", "load", "SafetensorError"]

_NAMES = {
    dt.float64: "F64",
    dt.float32: "F32",
    dt.float16: "F16",
    dt.bfloat16: "BF16",
    dt.int64: "I64",
    dt.int32: "I32",
    dt.int16: "I16",
    dt.int8: "I8",
    dt.uint8: "U8",
    dt.uint16: "U16",
    dt.uint32: "U32",
    dt.uint64: "U64",
    dt.float8_e4m3fn: "F8_E4M3",
    dt.float8_e5m2: "F8_E5M2",
    dt.float8_e8m0fnu: "F8_E8M0",
    dt.bool_: "BOOL",
    dt.complex64: "C64",
}
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}
# The Rust writer lays tensors out by this enum order, descending, then by name; we match it byte for byte.
_LAYOUT_RANK = {
    name: rank
    for rank, name in enumerate(["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "I16", "U16", "F16", "BF16",
                                 "I32", "U32", "F32", "C64", "F64", "I64", "U64"])
}
_HEADER_LIMIT = 100 << 20  # the Rust reader's bound: a larger header is a corrupt or hostile file


class SafetensorError(Exception):
    """An invalid safetensors file or an unsavable tensor (safetensors' own error type)."""


# ---------------------------------------------------------------- writing


def _as_array(name: str, value) -> tuple[np.ndarray, dt.dtype]:
    if isinstance(value, Tensor):
        if value.device.type != "cpu":
            value = value.cpu()
        array, dtype = value._data, value.dtype
    elif isinstance(value, np.ndarray):
        dtype = dt._BY_NUMPY.get(value.dtype)
        array = value
    else:
        raise SafetensorError(f"tensor '{name}' is a {type(value).__name__}, not a tensor")
    if dtype not in _NAMES:
        raise SafetensorError(f"tensor '{name}' has dtype {dtype or value.dtype}, which safetensors cannot store")
    array = array if array.flags.c_contiguous else array.copy(order="C")  # 0-d stays 0-d
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and np.little_endian is False):
        array = array.byteswap()
    return array, dtype


def _serialize(tensors: dict, metadata: dict | None) -> tuple[bytes, list[np.ndarray]]:
    """The header bytes (length prefix included) and the arrays to write after it, in order."""
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorError("metadata must map str to str")
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise SafetensorError(f"tensor names must be str, got {type(name).__name__}")
        arrays[name] = _as_array(name, value)
    order = sorted(arrays, key=lambda name: (-_LAYOUT_RANK[_NAMES[arrays[name][1]]], name))
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    offset = 0
    for name in order:
        array, dtype = arrays[name]
        header[name] = {
            "dtype": _NAMES[dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, [arrays[name][0] for name in order]


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of a dict of tensors (safetensors.torch.save)."""
    header, arrays = _serialize(tensors, metadata)
    return header + b"".join(array.tobytes() for array in arrays)


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write a dict of tensors to a safetensors file (safetensors.torch.save_file)."""
    header, arrays = _serialize(tensors, metadata)
    with open(os.fspath(filename), "wb") as out:
        out.write(header)
        for array in arrays:
            out.write(memoryview(array.reshape(-1).view(np.uint8)))


# ---------------------------------------------------------------- reading


class _Entry:
    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name: str, info, data_size: int) -> None:
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise SafetensorError(f"invalid header entry for tensor '{name}'")
        self.name = name
        self.dtype = _DTYPES.get(info["dtype"])
        if self.dtype is None:
            raise SafetensorError(f"tensor '{name}' has dtype {info['dtype']!r}, which ember does not support")
        shape, offsets = info["shape"], info["data_offsets"]
        if not (isinstance(shape, list) and all(isinstance(n, int) and n >= 0 for n in shape)):
            raise SafetensorError(f"tensor '{name}' has an invalid shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets)):
            raise SafetensorError(f"tensor '{name}' has invalid data_offsets {offsets!r}")
        self.shape = tuple(shape)
        self.begin, self.end = offsets
        expected = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        if not 0 <= self.begin <= self.end <= data_size or self.end - self.begin != expected:
            raise SafetensorError(
                f"tensor '{name}' has data_offsets {offsets} that do not fit its shape "
                f"{list(self.shape)} and dtype {info['dtype']} in {data_size} bytes of data"
            )


def _parse_header(buffer, total: int) -> tuple[dict, dict | None, int]:
    """(entries by name, metadata, start of the data) from the first bytes of a file."""
    if total < 8:
        raise SafetensorError("file too small to hold a safetensors header")
    (length,) = struct.unpack("<Q", bytes(buffer[:8]))
    if length > _HEADER_LIMIT or 8 + length > total:
        raise SafetensorError(f"header length {length} is invalid for a file of {total} bytes")
    try:
        header = json.loads(bytes(buffer[8 : 8 + length]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SafetensorError(f"invalid JSON in header: {error}") from error
    if not isinstance(header, dict):
        raise SafetensorError("the header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise SafetensorError("__metadata__ must map str to str")
    start = 8 + length
    entries = {name: _Entry(name, info, total - start) for name, info in header.items()}
    return entries, metadata, start


def _to_tensor(array: np.ndarray, dtype: dt.dtype, device):
    tensor = Tensor._make(array, dtype)
    device = as_device(device)
    return tensor if device.type == "cpu" else tensor.to(device)


class _Slice:
    """A lazily read tensor: index it (slices, ints) to read only that part (safe_open.get_slice)."""

    def __init__(self, owner: safe_open, entry: _Entry) -> None:
        self.owner = owner
        self.entry = entry

    def get_shape(self) -> list:
        return list(self.entry.shape)

    def get_dtype(self) -> str:
        return _NAMES[self.entry.dtype]

    def __getitem__(self, index):
        part = np.array(self.owner._view(self.entry)[index], copy=True)
        return self.owner._wrap(part, self.entry.dtype)


class safe_open:
    """Open a safetensors file lazily (memory-mapped): keys(), get_tensor(), get_slice(), metadata().

    framework="pt" (or "torch"/"ember") gives ember tensors, "np"/"numpy" NumPy arrays.  Usable as a context
    manager, as safetensors.safe_open.
    """

    def __init__(self, filename, framework: str = "pt", device="cpu") -> None:
        if framework not in ("pt", "torch", "ember", "np", "numpy"):
            raise SafetensorError(f"framework {framework!r} is not supported (use 'pt' or 'np')")
        self.framework = framework
        self.device = device
        with open(os.fspath(filename), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            self._map = mmap_module.mmap(handle.fileno(), 0, access=mmap_module.ACCESS_READ) if size else b""
        self._entries, self._metadata, self._start = _parse_header(memoryview(self._map), size)

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc_info) -> None:
        pass  # the map closes when the last array read from it is gone

    def keys(self) -> list:
        return sorted(self._entries)

    def offset_keys(self) -> list:
        return sorted(self._entries, key=lambda name: self._entries[name].begin)

    def metadata(self) -> dict | None:
        return self._metadata

    def _entry(self, name: str) -> _Entry:
        entry = self._entries.get(name)
        if entry is None:
            raise SafetensorError(f"File does not contain tensor {name}")
        return entry

    def _view(self, entry: _Entry) -> np.ndarray:
        count = (entry.end - entry.begin) // entry.dtype.itemsize
        flat = np.frombuffer(self._map, entry.dtype.np_dtype.newbyteorder("<"), count, self._start + entry.begin)
        return flat.reshape(entry.shape)

    def _wrap(self, array: np.ndarray, dtype: dt.dtype):
        array = array.astype(dtype.np_dtype, copy=False)
        return array if self.framework in ("np", "numpy") else _to_tensor(array, dtype, self.device)

    def get_tensor(self, name: str):
        entry = self._entry(name)
        return self._wrap(self._view(entry).copy(), entry.dtype)

    def get_slice(self, name: str) -> _Slice:
        return _Slice(self, self._entry(name))


def load_file(filename, device="cpu") -> dict:
    """Read every tensor of a safetensors file into a dict of ember tensors (safetensors.torch.load_file)."""
    with safe_open(filename, framework="pt", device=device) as opened:
        return {name: opened.get_tensor(name) for name in opened.keys()}


def load(data: bytes) -> dict:
    """The tensors of safetensors bytes (safetensors.torch.load)."""
    buffer = memoryview(data)
    entries, _, start = _parse_header(buffer, len(buffer))
    result = {}
    for name in sorted(entries):
        entry = entries[name]
        count = (entry.end - entry.begin) // entry.dtype.itemsize
        array = np.frombuffer(buffer, entry.dtype.np_dtype.newbyteorder("<"), count, start + entry.begin)
        result[name] = _to_tensor(array.astype(entry.dtype.np_dtype).reshape(entry.shape), entry.dtype, "cpu")
    return result
