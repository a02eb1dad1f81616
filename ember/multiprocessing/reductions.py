"""How tensors cross process boundaries in ember.multiprocessing's queues, pipes and Process arguments.

`init_reductions()` registers `reduce_tensor` with multiprocessing's
ForkingPickler (which every multiprocessing Queue, Pipe and spawned Process
uses), as torch.multiprocessing does.  A CPU tensor is moved into shared memory
(NOTE [ Shared tensors ] in _shared_storage.py) if it isn't there yet, and only
a handle crosses: the block's descriptor (passed by multiprocessing's DupFd, so
the sending process must still be alive when the receiver unpickles, as in
torch) or its name, plus the tensor's offset, shape, strides and dtype.  The
receiver maps the same memory, so writes on either side are seen on both.
"""

from __future__ import annotations

from multiprocessing import reduction

import numpy as np

from .. import _dtype as dt
from .._tensor import Storage, Tensor
from . import _shared_storage as shared


def reduce_tensor(tensor: Tensor):
    """ForkingPickler's reducer for ember tensors: a shared-memory handle (CPU) or the values (other devices)."""
    if tensor._requires_grad and tensor._grad_fn is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    if tensor._device.type != "cpu" or tensor._data.size == 0:
        return tensor.__reduce_ex__(4)
    shared.share_memory_(tensor)
    segment = shared.segment_of(tensor)
    array = tensor._data
    offset = array.ctypes.data - segment.address()
    if shared.get_sharing_strategy() == "file_system" and segment.path is not None:
        handle = (None, segment.path)
    else:
        handle = (reduction.DupFd(segment.fd), None)
    return (rebuild_tensor, (handle, segment.size, offset, array.shape, array.strides, tensor._dtype.name,
                             tensor._requires_grad, type(tensor)))


def rebuild_tensor(handle, size: int, offset: int, shape, strides, dtype_name: str, requires_grad: bool,
                   cls=Tensor) -> Tensor:
    """Receiver side of reduce_tensor: a tensor over the same shared block."""
    duplicate, path = handle
    fd = duplicate.detach() if duplicate is not None else None
    storage, segment = shared.map_segment(fd, path, size)
    dtype = dt._dtype_by_name(dtype_name)
    if storage is None:
        root = segment.buffer[: size - size % dtype.itemsize].view(dtype.np_dtype)
        storage = Storage(root)
        shared.register(storage, segment, created=False)
    array = np.ndarray(shape, dtype.np_dtype, buffer=segment.buffer, offset=offset, strides=strides)
    tensor = Tensor._make(array, dtype, storage=storage)
    if cls is not Tensor:
        return tensor._make_subclass_of(cls, requires_grad)
    tensor._requires_grad = requires_grad
    return tensor


def init_reductions() -> None:
    """Send ember tensors through multiprocessing's pickler by shared memory (idempotent)."""
    reduction.ForkingPickler.register(Tensor, reduce_tensor)
