"""Moving batches from worker processes to the main process through shared memory.

NOTE [ Shared-memory batches ]
A batch a worker builds is mostly tensor data (64 images of 3x32x32 float32 are
768 KiB).  Pickling it through a multiprocessing queue copies those bytes four
times (into the pickle, through the pipe in 64 KiB writes, out of the pipe, out
of the pickle) and costs the main process, the bottleneck, two of them.  Instead:

* the worker pickles the batch with a pickler that takes every ember tensor out:
  its array is written (one `os.pwrite`, no mmap) into ONE block per batch, a file
  on tmpfs (/dev/shm), at a 64-byte aligned offset; in the pickle the tensor is
  left as a reference `(offset, shape, dtype name, requires_grad)`;
* only the small message `(block path, block size, pickle)` crosses the queue (a
  few hundred bytes: an atomic pipe write, so a worker killed mid-send cannot
  leave half a message behind);
* the main process maps the block, unlinks its name at once (the memory stays
  until the last tensor viewing it is gone: that is how it is released), and
  unpickles: each reference becomes an ember tensor over the mapping, zero-copy.

Blocks are named `<prefix><counter>`, the prefix unique to one iterator and
worker, so a shutdown can unlink every block a worker wrote and nobody read
(batches still queued or prefetched), and a worker whose main process died
removes its own.  A new block per batch (rather than a ring of reused blocks)
keeps the lifetime rule trivial: the main process may hold a batch as long as
it likes.  `Transport("pickle")` sends the batch through the queue as it is;
bench/data.py measures one against the other.
"""

from __future__ import annotations

import glob
import io
import mmap
import os
import pickle
import tempfile

import numpy as np

import ember

_ALIGNMENT = 64


def _shared_directory() -> str:
    """tmpfs where there is one (Linux), else the temporary directory (a file-backed mapping: still no pipe)."""
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


def block_prefix(main_pid: int, iterator_id: int, worker_id: int) -> str:
    return os.path.join(_shared_directory(), f"ember_dataloader_{main_pid}_{iterator_id}_{worker_id}_")


def remove_blocks(prefix: str) -> int:
    """Unlink every block whose name starts with `prefix`; returns how many were left over."""
    count = 0
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            os.unlink(path)
            count += 1
        except FileNotFoundError:
            pass
    return count


class _TensorExtractingPickler(pickle.Pickler):
    """Pickles a batch with each ember tensor replaced by a reference into the batch's block."""

    def __init__(self, file) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays: list = []  # (offset, byte view) to write
        self.size = 0

    def persistent_id(self, obj):
        if type(obj) is not ember.Tensor:  # subclasses (nn.Parameter) keep their own pickling
            return None
        if obj.grad_fn is not None:
            raise RuntimeError(
                "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not "
                "support crossing process boundaries.  If you just want to transfer the data, call detach() "
                "on the tensor before serializing (e.g., putting it on the queue)."
            )
        if obj.device.type != "cpu":
            return None
        array = obj.detach().numpy()
        if not array.flags.c_contiguous:
            array = np.array(array, order="C")  # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
        offset = self.size
        nbytes = array.nbytes
        if nbytes:
            self.arrays.append((offset, array.reshape(-1).view(np.uint8)))
        self.size = offset + (nbytes + _ALIGNMENT - 1) // _ALIGNMENT * _ALIGNMENT
        return ("ember_shared_tensor", offset, array.shape, obj.dtype.name, obj.requires_grad)


class _TensorMappingUnpickler(pickle.Unpickler):
    """Unpickles a batch, turning each reference back into an ember tensor over the mapped block."""

    def __init__(self, file, block) -> None:
        super().__init__(file)
        self.block = block

    def persistent_load(self, pid):
        _, offset, shape, dtype_name, requires_grad = pid
        dtype = getattr(ember, dtype_name)
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0 or self.block is None:
            array = np.empty(shape, dtype=dtype.np_dtype)
        else:
            array = np.frombuffer(self.block, dtype=dtype.np_dtype, count=count, offset=offset).reshape(shape)
        tensor = ember.Tensor._make(array, dtype)
        if requires_grad:
            tensor.requires_grad_(True)
        return tensor


class Transport:
    """How a worker's batches reach the main process: "shared_memory" (the default) or "pickle"."""

    def __init__(self, kind: str = "shared_memory", prefix: str = "") -> None:
        if kind not in ("shared_memory", "pickle"):
            raise ValueError(f"unknown batch transport {kind!r}; expected 'shared_memory' or 'pickle'")
        self.kind = kind
        self.prefix = prefix
        self.counter = 0

    def pack(self, data):
        """Worker side: the message to put on the result queue for `data`."""
        if self.kind == "pickle":
            return data
        buffer = io.BytesIO()
        pickler = _TensorExtractingPickler(buffer)
        pickler.dump(data)
        if not pickler.arrays:
            return _SharedBatch(None, 0, buffer.getvalue())
        path = f"{self.prefix}{self.counter}"
        self.counter += 1
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(descriptor, pickler.size)
            for offset, view in pickler.arrays:
                written = 0
                while written < view.nbytes:
                    written += os.pwrite(descriptor, view[written:], offset + written)
        except BaseException:
            os.unlink(path)
            raise
        finally:
            os.close(descriptor)
        return _SharedBatch(path, pickler.size, buffer.getvalue())

    @staticmethod
    def unpack(message):
        """Main side: the batch a message from `pack` stands for (anything else passes through)."""
        if not isinstance(message, _SharedBatch):
            return message
        return message.load()


class _SharedBatch:
    """The message for one batch: the block's path and size, and the pickle with tensor references."""

    __slots__ = ("path", "size", "payload")

    def __init__(self, path, size: int, payload: bytes) -> None:
        self.path = path
        self.size = size
        self.payload = payload

    def __reduce__(self):
        return (_SharedBatch, (self.path, self.size, self.payload))

    def load(self):
        block = None
        if self.path is not None:
            descriptor = os.open(self.path, os.O_RDWR)
            try:
                block = mmap.mmap(descriptor, self.size)
            finally:
                os.close(descriptor)
                os.unlink(self.path)  # the mapping keeps the memory; the name is no longer needed
        return _TensorMappingUnpickler(io.BytesIO(self.payload), block).load()

    def discard(self) -> None:
        """Release a block that will never be loaded."""
        if self.path is not None:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
