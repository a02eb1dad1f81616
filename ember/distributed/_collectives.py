"""torch.distributed's collectives and point-to-point ops on ember tensors, in place, through a communicator.

Each function: resolve the group (a rank outside it returns at once, as torch), check that every rank
called the same thing (NOTE [ Signature check ]), take the tensors' NumPy buffers, start the engine's
non-blocking operation, and either return a Work (async_op=True) or wait for it against the group's
timeout (NOTE [ Deadlines ]).  Results land in the callers' tensors, whose version counters are bumped
as any in-place op's.

NOTE [ Wire dtypes ]
Reductions need a dtype the engine can add: float16 and bfloat16 are reduced through a float32 copy
(also more accurate than adding in half precision; the result is rounded once, at the end); bool is
reduced as uint8, SUM/MAX as logical or, PRODUCT/MIN as logical and.  Operations that only move data
(broadcast, gathers, scatters, all_to_all, send/recv) send raw bytes, so every dtype moves unchanged
without an MPI datatype for it.  Non-contiguous tensors go through a contiguous copy written back at
the end.
"""

from __future__ import annotations

import pickle

from .._backends import numpy as np
from . import _process_group as pg
from ._process_group import ReduceOp, check_signature, group_root, resolve, run

_HALF = ("float16", "bfloat16")


def _buffer(tensor):
    """(contiguous array, writeback or None): the tensor's own array when contiguous, else a copy."""
    data = tensor._data
    if data.flags.c_contiguous:
        return data, None
    copy = np.ascontiguousarray(data)

    def writeback() -> None:
        tensor._data[...] = copy

    return copy, writeback


def _bytes(array):
    return array.reshape(-1).view(np.uint8)


def _touched(tensor) -> None:
    tensor._storage.version += 1


def _engine_op(op, dtype) -> str:
    name = getattr(op, "name", op)
    if name in ("BAND", "BOR", "BXOR"):
        raise ValueError(f"ember.distributed: ReduceOp.{name} is not supported")
    if dtype.name == "bool":
        if name == "AVG":
            raise ValueError("ember.distributed: ReduceOp.AVG is not supported for bool tensors")
        return {"SUM": "max", "MAX": "max", "PRODUCT": "min", "MIN": "min"}[name]
    if dtype.is_complex and name in ("MIN", "MAX"):
        raise ValueError(f"ember.distributed: ReduceOp.{name} is not defined for complex tensors")
    return {"SUM": "sum", "AVG": "sum", "PRODUCT": "product", "MIN": "min", "MAX": "max"}[name]


def _wire_dtype(dtype):
    if dtype.name in _HALF:
        return np.float32
    if dtype.name == "bool":
        return np.uint8
    return dtype.np_dtype


def _to_wire(array, dtype):
    wire = _wire_dtype(dtype)
    if dtype.name == "bool":
        return array.view(np.uint8)
    return array if wire == array.dtype else array.astype(wire)


def _average(wire, op, size: int) -> None:
    if getattr(op, "name", op) == "AVG":
        if wire.dtype.kind in "iu":
            wire //= size
        else:
            wire /= size


def _finisher(tensor, data, wire, writeback, op, size: int):
    """After a reduction into `wire`: average, cast back into the tensor's buffer, write back, bump version."""

    def finish() -> None:
        _average(wire, op, size)
        if wire is not data and wire.base is not data:
            data[...] = wire.astype(data.dtype) if tensor.dtype.name != "bool" else wire.view(np.bool_)
        if writeback is not None:
            writeback()
        _touched(tensor)

    return finish


# ---------------------------------------------------------------------------------------- reductions
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `tensor` over every rank of `group`; every rank gets the result in place."""
    group = resolve(group)
    if group.communicator is None:
        return None
    engine_op = _engine_op(op, tensor.dtype)
    check_signature(group, "all_reduce", tensor)
    data, writeback = _buffer(tensor)
    wire = _to_wire(data, tensor.dtype)
    request = group.communicator.allreduce(wire, engine_op)
    return run([request], "all_reduce", group, async_op, _finisher(tensor, data, wire, writeback, op, group.size()))


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """Reduce `tensor` over the group into rank `dst`'s tensor; the other ranks' tensors are unchanged."""
    group = resolve(group)
    if group.communicator is None:
        return None
    root = group_root(group, dst, group_dst, "dst")
    engine_op = _engine_op(op, tensor.dtype)
    check_signature(group, "reduce", tensor)
    data, writeback = _buffer(tensor)
    wire = _to_wire(data, tensor.dtype)
    if group.communicator.rank != root and wire is data:
        wire = wire.copy()  # MPI only reads it off root, but keep the caller's buffer untouched regardless
    request = group.communicator.reduce(wire, engine_op, root)
    finish = _finisher(tensor, data, wire, writeback, op, group.size()) if group.communicator.rank == root else None
    return run([request], "reduce", group, async_op, finish)


def _reduce_scatter_wire(send, output, op, group, name: str, async_op: bool):
    engine_op = _engine_op(op, output.dtype)
    wire = _to_wire(np.ascontiguousarray(send), output.dtype)
    if wire.base is send or wire is send:
        wire = wire.copy()
    receive = np.empty(output.numel(), dtype=wire.dtype)
    request = group.communicator.reduce_scatter(wire.reshape(-1), receive, engine_op)

    def finish() -> None:
        _average(receive, op, group.size())
        values = receive.view(np.bool_) if output.dtype.name == "bool" else receive
        output._data[...] = values.reshape(output._data.shape).astype(output._data.dtype)
        _touched(output)

    return run([request], name, group, async_op, finish)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce input_list[r] over ranks into rank r's `output`."""
    group = resolve(group)
    if group.communicator is None:
        return None
    if len(input_list) != group.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, "
                         f"the group has {group.size()} ranks")
    for item in input_list:
        if item.numel() != output.numel():
            raise ValueError(f"reduce_scatter: every input must have the output's {output.numel()} elements, "
                             f"got shape {list(item.shape)}")
    check_signature(group, "reduce_scatter", output)
    send = np.concatenate([item._data.reshape(-1) for item in input_list])
    return _reduce_scatter_wire(send, output, op, group, "reduce_scatter", async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """Reduce `input` (world_size * output.numel() elements) over ranks; rank r keeps block r in `output`."""
    group = resolve(group)
    if group.communicator is None:
        return None
    if input.numel() != output.numel() * group.size():
        raise ValueError(f"reduce_scatter_tensor: input of shape {list(input.shape)} must have world_size "
                         f"({group.size()}) times the elements of output of shape {list(output.shape)}")
    check_signature(group, "reduce_scatter_tensor", input)
    return _reduce_scatter_wire(input._data.reshape(-1), output, op, group, "reduce_scatter_tensor", async_op)


# ---------------------------------------------------------------------------------------- data movement
def broadcast(tensor, src: int | None = None, group=None, async_op: bool = False, group_src: int | None = None):
    """Copy rank `src`'s tensor into every other rank's tensor of the same shape and dtype."""
    group = resolve(group)
    if group.communicator is None:
        return None
    root = group_root(group, src, group_src, "src")
    check_signature(group, "broadcast", tensor)
    data, writeback = _buffer(tensor)
    request = group.communicator.broadcast(_bytes(data), root)
    receiving = group.communicator.rank != root

    def finish() -> None:
        if receiving:
            if writeback is not None:
                writeback()
            _touched(tensor)

    return run([request], "broadcast", group, async_op, finish)


def _fill_from_rows(tensors, rows) -> None:
    for tensor, row in zip(tensors, rows):
        tensor._data[...] = row.view(tensor._data.dtype).reshape(tensor._data.shape)
        _touched(tensor)


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """tensor_list[r] = rank r's `tensor`, on every rank."""
    group = resolve(group)
    if group.communicator is None:
        return None
    if len(tensor_list) != group.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the group has {group.size()} ranks")
    for item in tensor_list:
        if tuple(item.shape) != tuple(tensor.shape) or item.dtype is not tensor.dtype:
            raise ValueError(f"all_gather: output {item.dtype}{list(item.shape)} does not match input "
                             f"{tensor.dtype}{list(tensor.shape)}")
    check_signature(group, "all_gather", tensor)
    send = _bytes(np.ascontiguousarray(tensor._data))
    rows = np.empty((group.size(), send.size), dtype=np.uint8)
    request = group.communicator.allgather(send, rows.reshape(-1))
    return run([request], "all_gather", group, async_op, lambda: _fill_from_rows(tensor_list, rows))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """output_tensor = every rank's input_tensor, concatenated along dim 0 (or stacked: the memory is the same)."""
    group = resolve(group)
    if group.communicator is None:
        return None
    if output_tensor.numel() != input_tensor.numel() * group.size() or output_tensor.dtype is not input_tensor.dtype:
        raise ValueError(f"all_gather_into_tensor: output {output_tensor.dtype}{list(output_tensor.shape)} must hold "
                         f"world_size ({group.size()}) inputs of {input_tensor.dtype}{list(input_tensor.shape)}")
    check_signature(group, "all_gather_into_tensor", input_tensor)
    data, writeback = _buffer(output_tensor)
    request = group.communicator.allgather(_bytes(np.ascontiguousarray(input_tensor._data)), _bytes(data))

    def finish() -> None:
        if writeback is not None:
            writeback()
        _touched(output_tensor)

    return run([request], "all_gather_into_tensor", group, async_op, finish)


def gather(tensor, gather_list=None, dst: int | None = None, group=None, async_op: bool = False,
           group_dst: int | None = None):
    """On rank `dst`, gather_list[r] = rank r's tensor."""
    group = resolve(group)
    if group.communicator is None:
        return None
    root = group_root(group, dst, group_dst, "dst")
    is_root = group.communicator.rank == root
    if is_root and (gather_list is None or len(gather_list) != group.size()):
        raise ValueError(f"gather: the destination rank needs a gather_list of {group.size()} tensors")
    check_signature(group, "gather", tensor)
    send = _bytes(np.ascontiguousarray(tensor._data))
    rows = np.empty((group.size(), send.size), dtype=np.uint8) if is_root else None
    request = group.communicator.gather(send, rows.reshape(-1) if is_root else None, root)
    finish = (lambda: _fill_from_rows(gather_list, rows)) if is_root else None
    return run([request], "gather", group, async_op, finish)


def scatter(tensor, scatter_list=None, src: int | None = None, group=None, async_op: bool = False,
            group_src: int | None = None):
    """Rank r's `tensor` = rank `src`'s scatter_list[r]."""
    group = resolve(group)
    if group.communicator is None:
        return None
    root = group_root(group, src, group_src, "src")
    is_root = group.communicator.rank == root
    if is_root and (scatter_list is None or len(scatter_list) != group.size()):
        raise ValueError(f"scatter: the source rank needs a scatter_list of {group.size()} tensors")
    check_signature(group, "scatter", tensor)
    send = np.concatenate([_bytes(np.ascontiguousarray(t._data)) for t in scatter_list]) if is_root else None
    data, writeback = _buffer(tensor)
    request = group.communicator.scatter(send, _bytes(data), root)

    def finish() -> None:
        if writeback is not None:
            writeback()
        _touched(tensor)

    return run([request], "scatter", group, async_op, finish)


def _splits(sizes, rows: int, size: int, what: str) -> list[int]:
    if sizes is None or len(sizes) == 0:
        if rows % size:
            raise ValueError(f"all_to_all_single: {what} has {rows} rows, not divisible by world_size {size}")
        return [rows // size] * size
    sizes = [int(s) for s in sizes]
    if len(sizes) != size or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {what} split sizes {sizes} must be {size} numbers summing to {rows}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op: bool = False):
    """Split `input` along dim 0 (input_split_sizes rows to each rank) and gather what every rank sends to
    this one, in rank order, into `output` (output_split_sizes rows from each rank)."""
    group = resolve(group)
    if group.communicator is None:
        return None
    size = group.size()
    in_rows = input.shape[0] if input.dim() else 1
    out_rows = output.shape[0] if output.dim() else 1
    in_row_bytes = input._data.nbytes // max(in_rows, 1)
    out_row_bytes = output._data.nbytes // max(out_rows, 1)
    send_counts = [n * in_row_bytes for n in _splits(input_split_sizes, in_rows, size, "input")]
    receive_counts = [n * out_row_bytes for n in _splits(output_split_sizes, out_rows, size, "output")]
    check_signature(group, "all_to_all_single")
    data, writeback = _buffer(output)
    request = group.communicator.alltoallv(_bytes(np.ascontiguousarray(input._data)), send_counts, _bytes(data),
                                           receive_counts)

    def finish() -> None:
        if writeback is not None:
            writeback()
        _touched(output)

    return run([request], "all_to_all_single", group, async_op, finish)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op: bool = False):
    """output_tensor_list[r] = rank r's input_tensor_list[this rank]."""
    group = resolve(group)
    if group.communicator is None:
        return None
    check_signature(group, "all_to_all")
    send = np.concatenate([_bytes(np.ascontiguousarray(t._data)) for t in input_tensor_list])
    receive_counts = [t._data.nbytes for t in output_tensor_list]
    receive = np.empty(sum(receive_counts), dtype=np.uint8)
    request = group.communicator.alltoallv(send, [t._data.nbytes for t in input_tensor_list], receive,
                                           receive_counts)

    def finish() -> None:
        offsets = np.cumsum([0] + receive_counts)
        _fill_from_rows(output_tensor_list, [receive[offsets[r]:offsets[r + 1]] for r in range(group.size())])

    return run([request], "all_to_all", group, async_op, finish)


def barrier(group=None, async_op: bool = False, device_ids=None):
    group = resolve(group)
    if group.communicator is None:
        return None
    return run([group.communicator.barrier()], "barrier", group, async_op)


# ---------------------------------------------------------------------------------------- point to point
def isend(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None):
    group = resolve(group)
    if group.communicator is None:
        return None
    peer = group_root(group, dst, group_dst, "dst")
    send = np.ascontiguousarray(tensor._data)
    return run([group.communicator.send(_bytes(send), peer, tag)], f"send to rank {dst}", group, True)


def irecv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None):
    """Receive into `tensor`; src None receives from any rank.  wait() then result() ... see recv."""
    group = resolve(group)
    if group.communicator is None:
        return None
    peer = None if src is None and group_src is None else group_root(group, src, group_src, "src")
    data, writeback = _buffer(tensor)
    request = group.communicator.receive(_bytes(data), peer, tag)

    def finish():
        if writeback is not None:
            writeback()
        _touched(tensor)
        return group.ranks[request.source] if request.source is not None else None

    return run([request], f"recv from rank {'any' if peer is None else group.ranks[peer]}", group, True, finish)


def send(tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Receive into `tensor`; returns the sender's global rank (-1 outside the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.result()


# ---------------------------------------------------------------------------------------- Python objects
def _pickled(obj):
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def _wait(requests, name: str, group) -> None:
    pg.poll(requests, name, group.timeout)


def _all_gather_bytes(payload, group, name: str) -> list:
    """Every rank's byte string, in rank order: lengths first, then the payloads padded to the longest."""
    communicator = group.communicator
    lengths = np.empty(group.size(), dtype=np.int64)
    _wait([communicator.allgather(np.array([payload.size], dtype=np.int64), lengths)], name, group)
    longest = int(lengths.max())
    padded = np.zeros(longest, dtype=np.uint8)
    padded[:payload.size] = payload
    rows = np.empty((group.size(), longest), dtype=np.uint8)
    _wait([communicator.allgather(padded, rows.reshape(-1))], name, group)
    return [rows[r, :lengths[r]].tobytes() for r in range(group.size())]


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace object_list's items on every rank with rank `src`'s (pickled, as torch)."""
    group = resolve(group)
    if group.communicator is None:
        return
    root = group_root(group, src, group_src, "src")
    communicator = group.communicator
    is_root = communicator.rank == root
    payload = _pickled(list(object_list)) if is_root else None
    length = np.array([payload.size if is_root else 0], dtype=np.int64)
    _wait([communicator.broadcast(length, root)], "broadcast_object_list", group)
    buffer = payload.copy() if is_root else np.empty(int(length[0]), dtype=np.uint8)
    _wait([communicator.broadcast(buffer, root)], "broadcast_object_list", group)
    if not is_root:
        object_list[:] = pickle.loads(buffer.tobytes())


def all_gather_object(object_list: list, obj, group=None) -> None:
    """object_list[r] = rank r's `obj` on every rank."""
    group = resolve(group)
    if group.communicator is None:
        return
    if len(object_list) != group.size():
        raise ValueError(f"all_gather_object: object_list must have {group.size()} entries")
    for r, data in enumerate(_all_gather_bytes(_pickled(obj), group, "all_gather_object")):
        object_list[r] = pickle.loads(data)


def gather_object(obj, object_gather_list=None, dst: int | None = None, group=None,
                  group_dst: int | None = None) -> None:
    group = resolve(group)
    if group.communicator is None:
        return
    root = group_root(group, dst, group_dst, "dst")
    everything = _all_gather_bytes(_pickled(obj), group, "gather_object")
    if group.communicator.rank == root:
        for r, data in enumerate(everything):
            object_gather_list[r] = pickle.loads(data)


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src: int | None = None,
                        group=None, group_src: int | None = None) -> None:
    group = resolve(group)
    if group.communicator is None:
        return
    items = [scatter_object_input_list] if group.communicator.rank == group_root(group, src, group_src, "src") \
        else [None]
    broadcast_object_list(items, src, group, group_src=group_src)
    scatter_object_output_list[0] = items[0][group.communicator.rank]
