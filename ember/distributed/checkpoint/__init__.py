"""ember.distributed.checkpoint: every rank writes its own shards; a checkpoint saved on N ranks loads on M.

    dcp.save({"model": model.state_dict()}, checkpoint_id="ckpt/")
    state = {"model": model.state_dict()}          # on any number of ranks, sharded any way
    dcp.load(state, checkpoint_id="ckpt/")          # fills the tensors in place
    model.load_state_dict(state["model"])

Layout of a checkpoint directory (see docs/distributed.md):
- `__{rank}_0.distcp`, one per saving rank: an .npz of raw bytes, one entry per tensor chunk that rank held
  (its ShardedTensor chunks; plain, replicated tensors are written by rank 0 only);
- `.metadata`, written by rank 0: for each key the full shape, dtype, and which file holds which range of
  the flattened tensor; non-tensor values (ints, floats, strings) are stored in it directly.
Loading is a plain read: each rank computes which flat range each of its target tensors needs and reads
the overlapping chunks from whichever files hold them, so the saving and loading layouts are independent
(resharding on load).  Every rank must see the directory (a shared filesystem for multi-machine jobs).
"""

from __future__ import annotations

import os
import pickle

from ..._backends import numpy as np
from ..._dtype import _dtype_by_name
from ..._tensor import Tensor
from .. import _process_group as pg
from .._collectives import all_gather_object, barrier
from ..fsdp import ShardedTensor

__all__ = ["save", "load", "state_dict"]

from . import state_dict  # noqa: E402


def _flatten(value, prefix: str, out: dict) -> dict:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}{key}.", out)
    elif isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        for index, item in enumerate(value):
            _flatten(item, f"{prefix}{index}.", out)
    else:
        out[prefix[:-1]] = value
    return out


def _replace(container, path: list, value) -> None:
    for key in path[:-1]:
        container = container[key] if isinstance(container, dict) else container[int(key)]
    last = path[-1]
    if isinstance(container, dict):
        original = next((k for k in container if str(k) == last), last)
        container[original] = value
    else:
        container[int(last)] = value


def _paths(value, prefix: tuple, out: dict) -> dict:
    """key -> path of container keys (to write objects back), mirroring _flatten."""
    if isinstance(value, dict):
        for key, item in value.items():
            _paths(item, prefix + (str(key),), out)
    elif isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        for index, item in enumerate(value):
            _paths(item, prefix + (str(index),), out)
    else:
        out[".".join(prefix)] = list(prefix)
    return out


def _rank_and_group(process_group):
    if not pg.is_initialized():
        return 0, None
    group = pg.resolve(process_group)
    return group.rank(), group


def save(state_dict: dict, *, checkpoint_id=None, storage_writer=None, planner=None, process_group=None,
         no_dist: bool = False) -> dict:
    """Write `state_dict` (every rank calls it) into the directory `checkpoint_id`."""
    directory = str(checkpoint_id)
    os.makedirs(directory, exist_ok=True)
    rank, group = _rank_and_group(None if no_dist else process_group)
    arrays, entries, objects = {}, {}, {}
    for key, value in _flatten(state_dict, "", {}).items():
        if isinstance(value, ShardedTensor):
            chunk = value.local_tensor()._data.reshape(-1)[:value.length]
            entry = f"t{len(arrays)}"
            arrays[entry] = np.ascontiguousarray(chunk).view(np.uint8)
            entries[key] = (value.shape, value.dtype.name, (rank, entry, value.offset, value.length))
        elif isinstance(value, Tensor):
            if rank == 0:
                entry = f"t{len(arrays)}"
                arrays[entry] = np.ascontiguousarray(value._data).reshape(-1).view(np.uint8)
                entries[key] = (tuple(value.shape), value.dtype.name, (0, entry, 0, value.numel()))
        elif rank == 0:
            objects[key] = value
    with open(os.path.join(directory, f"__{rank}_0.distcp"), "wb") as handle:
        np.savez(handle, **arrays)
    everyone = [None] * (group.size() if group is not None else 1)
    if group is not None:
        all_gather_object(everyone, entries, group=group)
    else:
        everyone[0] = entries
    if rank == 0:
        tensors: dict = {}
        for per_rank in everyone:
            for key, (shape, dtype, chunk) in per_rank.items():
                tensors.setdefault(key, {"shape": tuple(shape), "dtype": dtype, "chunks": []})["chunks"].append(chunk)
        with open(os.path.join(directory, ".metadata"), "wb") as handle:
            pickle.dump({"tensors": tensors, "objects": objects, "world_size": len(everyone)}, handle)
    if group is not None:
        barrier(group=group)
    return {}


class _Reader:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.files: dict = {}

    def chunk(self, rank: int, entry: str, dtype):
        if rank not in self.files:
            self.files[rank] = np.load(os.path.join(self.directory, f"__{rank}_0.distcp"))
        return self.files[rank][entry].view(dtype.np_dtype)


def _read_range(reader: _Reader, record: dict, start: int, stop: int, out) -> None:
    """Fill out (1-D, stop - start elements) with elements [start, stop) of the saved flattened tensor."""
    dtype = _dtype_by_name(record["dtype"])
    for rank, entry, offset, length in record["chunks"]:
        low, high = max(start, offset), min(stop, offset + length)
        if low < high:
            values = reader.chunk(rank, entry, dtype)
            out[low - start:high - start] = values[low - offset:high - offset].astype(out.dtype)


def load(state_dict: dict, *, checkpoint_id=None, storage_reader=None, planner=None, process_group=None,
         no_dist: bool = False) -> None:
    """Fill `state_dict`'s tensors (ShardedTensors: just this rank's chunk) in place from `checkpoint_id`."""
    directory = str(checkpoint_id)
    with open(os.path.join(directory, ".metadata"), "rb") as handle:
        metadata = pickle.load(handle)
    reader = _Reader(directory)
    paths = _paths(state_dict, (), {})
    for key, value in _flatten(state_dict, "", {}).items():
        if key in metadata["objects"]:
            _replace(state_dict, paths[key], metadata["objects"][key])
            continue
        record = metadata["tensors"].get(key)
        if record is None:
            if isinstance(value, (Tensor, ShardedTensor)):
                raise RuntimeError(f"ember.distributed.checkpoint.load: '{key}' is not in checkpoint {directory}")
            continue
        if isinstance(value, ShardedTensor):
            if tuple(record["shape"]) != tuple(value.shape):
                raise RuntimeError(f"checkpoint.load: '{key}' has shape {list(record['shape'])} in the checkpoint "
                                   f"but {list(value.shape)} here")
            target = value.local_tensor()
            flat = target._data.reshape(-1)
            _read_range(reader, record, value.offset, value.offset + value.length, flat[:value.length])
            target._storage.version += 1
        elif isinstance(value, Tensor):
            if tuple(record["shape"]) != tuple(value.shape):
                raise RuntimeError(f"checkpoint.load: '{key}' has shape {list(record['shape'])} in the checkpoint "
                                   f"but {list(value.shape)} here")
            full = np.empty(value.numel(), dtype=value._data.dtype)
            _read_range(reader, record, 0, value.numel(), full)
            value._data[...] = full.reshape(value._data.shape)
            value._storage.version += 1
