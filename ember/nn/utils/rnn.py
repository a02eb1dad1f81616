"""nn.utils.rnn: PackedSequence and the pack/pad helpers, with torch's layout (time-major, batch sizes per step)."""

from __future__ import annotations

from collections import namedtuple

from ... import _dtype as dt
from ..._tensor import Tensor

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpack_sequence", "unpad_sequence", "invert_permutation"]

_PackedSequenceBase = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """data holds every sequence's steps interleaved time-major; batch_sizes[t] sequences are active at step t."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cuda(self, *args, **kwargs):
        from ... import tensor

        if tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs).is_cuda:
            return self.to(*args, **kwargs)
        kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        from ... import tensor

        if tensor((), dtype=self.data.dtype, device=self.data.device).to(*args, **kwargs).device.type == "cpu":
            return self.to(*args, **kwargs)
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=dt.float64)

    def float(self):
        return self.to(dtype=dt.float32)

    def half(self):
        return self.to(dtype=dt.float16)

    def long(self):
        return self.to(dtype=dt.int64)

    def int(self):
        return self.to(dtype=dt.int32)

    def short(self):
        return self.to(dtype=dt.int16)

    def char(self):
        return self.to(dtype=dt.int8)

    def byte(self):
        return self.to(dtype=dt.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation):
    if permutation is None:
        return None
    from ... import empty_like

    output = empty_like(permutation)
    from ... import arange

    output.scatter_(0, permutation, arange(permutation.numel(), dtype=dt.int64))
    return output


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    """Pack a padded batch (T, B, *) or (B, T, *) given each sequence's length."""
    from ... import as_tensor, cat, sort

    lengths = as_tensor(lengths, dtype=dt.int64) if not isinstance(lengths, Tensor) else lengths.to(dt.int64)
    batch_size = input.shape[0 if batch_first else 1]
    if lengths.numel() != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.numel()} "
                           f"(batch_size={batch_size})")
    if enforce_sorted:
        values = lengths.tolist()
        if any(values[i] < values[i + 1] for i in range(len(values) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                               "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        lengths, sorted_indices = sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    length_list = lengths.tolist()
    if length_list and min(length_list) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    max_length = length_list[0] if length_list else 0
    batch_sizes = [sum(1 for n in length_list if n > t) for t in range(max_length)]
    steps = [input[t, :size] for t, size in enumerate(batch_sizes)]
    data = cat(steps, 0)
    return PackedSequence(data, as_tensor(batch_sizes, dtype=dt.int64), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """The inverse of pack_padded_sequence: (padded, lengths)."""
    from ... import as_tensor, stack

    data, batch_sizes, sorted_indices, unsorted_indices = sequence
    sizes = [int(b) for b in batch_sizes.tolist()]
    max_batch = sizes[0]
    max_length = len(sizes)
    if total_length is not None:
        if total_length < max_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, but "
                             f"got total_length={total_length} and max sequence length being {max_length}")
        max_length = total_length
    trailing = tuple(data.shape[1:])
    rows = []
    offset = 0
    for t in range(max_length):
        size = sizes[t] if t < len(sizes) else 0
        step = data[offset:offset + size]
        offset += size
        if size < max_batch:
            pad = data.new_full((max_batch - size,) + trailing, padding_value)
            from ... import cat

            step = cat([step, pad], 0)
        rows.append(step)
    padded = stack(rows, 0)
    lengths = [sum(1 for s in sizes if s > b) for b in range(max_batch)]
    lengths = as_tensor(lengths, dtype=dt.int64)
    if unsorted_indices is not None:
        padded = padded.index_select(1, unsorted_indices)
        lengths = lengths.index_select(0, unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack variable-length sequences (L_i, *) into (L_max, B, *) (or (B, L_max, *)) with padding."""
    from ... import stack

    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_length = max(s.shape[0] for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    padded = []
    for s in sequences:
        extra = max_length - s.shape[0]
        if extra:
            from ... import cat

            pad = s.new_full((extra,) + trailing, padding_value)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        padded.append(s)
    out = stack(padded, 0 if batch_first else 1)
    return out


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False):
    if not batch_first:  # in place, as torch's: the caller's tensor is left batch-first
        padded_sequences.transpose_(0, 1)
    return [padded_sequences[i, :int(length)] for i, length in enumerate(lengths.tolist() if isinstance(
        lengths, Tensor) else lengths)]


def pack_sequence(sequences, enforce_sorted: bool = True):
    from ... import as_tensor

    lengths = as_tensor([s.shape[0] for s in sequences], dtype=dt.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
