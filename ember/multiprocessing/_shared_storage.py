"""Moving a tensor's storage into shared memory, and mapping shared memory a peer sent.

NOTE [ Shared tensors ]
`Tensor.share_memory_()` copies the storage's bytes into a block on tmpfs
(/dev/shm), the same kind of block the DataLoader's workers hand their batches
over in (NOTE [ Shared-memory batches ], ember/utils/data/_utils/shared_memory.py),
maps it MAP_SHARED, and re-points the storage's root array and the array of
every tensor viewing that storage at the mapping, at the same offsets and
strides: the Tensor objects stay the same and views stay views.  A forked child
inherits the mapping; a spawned child or a queue's reader gets a handle (see
reductions.py) and maps the same block.  Either way a write on one side is seen
on the other, as torch's Hogwild training needs.

The block is found by its descriptor ("file_descriptor", torch's default: the
name is unlinked at once, the descriptor travels with the pickle) or by its name
("file_system": the name stays until the creating process frees the storage).
Each process closes its descriptor, and the creator removes the name, when the
storage it backs is garbage collected; the memory goes when the last mapping does.
"""

from __future__ import annotations

import gc
import itertools
import mmap
import os
import secrets
import sys
import weakref

import numpy as np

from .._tensor import Storage, Tensor

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"
_counter = itertools.count()


class Segment:
    """One shared block: its descriptor, name (None once unlinked), size and the uint8 array over the mapping."""

    __slots__ = ("fd", "path", "size", "buffer", "__weakref__")

    def __init__(self, fd: int, path: str | None, size: int, buffer: np.ndarray) -> None:
        self.fd = fd
        self.path = path
        self.size = size
        self.buffer = buffer

    def address(self) -> int:
        return self.buffer.ctypes.data


# storage -> Segment for every shared storage in this process (ones made here and ones mapped from a peer)
_segments: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# (st_ino, st_dev) of a block -> the Storage over it here, so a block received twice (or back) maps once
_by_block: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def get_sharing_strategy() -> str:
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """torch.multiprocessing.set_sharing_strategy: how blocks are found, by descriptor or by file name."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}; expected one of {_STRATEGIES}")
    _strategy = new_strategy


def get_all_sharing_strategies() -> set:
    return set(_STRATEGIES)


def segment_of(tensor: Tensor) -> Segment | None:
    return _segments.get(tensor._storage)


def is_shared(tensor: Tensor) -> bool:
    """Tensor.is_shared: whether the storage lives in shared memory (cuda tensors count as shared, as torch)."""
    if tensor._device.type == "cuda":
        return True
    return tensor._storage in _segments


def share_memory_(tensor: Tensor) -> Tensor:
    """Tensor.share_memory_: move the storage into a shared block in place (no-op if shared or not on the cpu)."""
    storage = tensor._storage
    if tensor._device.type != "cpu" or storage in _segments:
        return tensor
    root = storage.array
    low, high = np.lib.array_utils.byte_bounds(root)
    size = high - low
    segment = _new_segment(size)
    if size:
        source = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint8 * size).from_address(low))
        segment.buffer[:] = source  # raw bytes, gaps of a strided root included: every offset keeps its meaning
    # every tensor on this storage (views, the base, a Parameter and the tensor it was made from) gets its
    # array re-pointed; the common case, a storage only `tensor` holds, skips the search of the heap
    holders = [tensor] if sys.getrefcount(storage) <= 3 else _tensors_on(storage)
    storage.array = _remap(root, low, segment)
    for holder in holders:
        array = holder._data
        if type(array) is np.ndarray and array.size and low <= array.ctypes.data < high:
            holder._data = _remap(array, low, segment)
    register(storage, segment, created=True)
    return tensor


def _tensors_on(storage: Storage) -> list:
    return [obj for obj in gc.get_referrers(storage) if isinstance(obj, Tensor) and obj._storage is storage]


def _remap(array: np.ndarray, low: int, segment: Segment) -> np.ndarray:
    """`array`'s elements, at the same byte offset from `low`, inside the segment."""
    if array.size == 0 or segment.size == 0:
        return array
    out = np.ndarray(array.shape, array.dtype, buffer=segment.buffer, offset=array.ctypes.data - low,
                     strides=array.strides)
    if not array.flags.writeable:
        out.flags.writeable = False
    return out


def _new_segment(size: int) -> Segment:
    """A fresh block of `size` bytes on tmpfs, mapped read-write and shared."""
    from ..utils.data._utils.shared_memory import _shared_directory

    if size == 0:
        return Segment(-1, None, 0, np.empty(0, np.uint8))
    path = os.path.join(_shared_directory(), f"ember_shm_{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)
        block = mmap.mmap(fd, size)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    if _strategy == "file_descriptor":
        os.unlink(path)
        path = None
    return Segment(fd, path, size, np.frombuffer(block, np.uint8))


def register(storage: Storage, segment: Segment, created: bool) -> None:
    """Record a shared storage: is_shared holds, a block received again maps to it, and it is released with it."""
    _segments[storage] = segment
    if segment.fd >= 0:
        _by_block[os.fstat(segment.fd)[1:3]] = storage
    weakref.finalize(storage, _release, segment.fd, segment.path if created else None, os.getpid())


def _release(fd: int, path: str | None, pid: int) -> None:
    """A shared storage was freed: close its descriptor; its creator also removes the block's name."""
    if os.getpid() != pid:  # a forked child's copy of the finalizer: the parent owns these
        return
    if fd >= 0:
        try:
            os.close(fd)
        except OSError:
            pass
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def map_segment(fd: int | None, path: str | None, size: int) -> tuple[Storage | None, Segment]:
    """Receiver side: the Storage already mapped over this block here (if any), else a new mapping of it.

    Takes ownership of `fd` (closed if the block is already mapped)."""
    if fd is None:
        fd = os.open(path, os.O_RDWR)
    identity = os.fstat(fd)[1:3]  # (st_ino, st_dev)
    storage = _by_block.get(identity)
    if storage is not None and storage in _segments:
        os.close(fd)
        return storage, _segments[storage]
    block = mmap.mmap(fd, size)
    return None, Segment(fd, None, size, np.frombuffer(block, np.uint8))
