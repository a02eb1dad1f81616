"""SerializedList: a list of Python objects stored as one NumPy byte buffer (NOTE [ Copy-on-read in forked
workers ] in dataset.py).

A list of a million small dicts is a million Python objects, each with a
reference count that every read writes; in a forked worker each such write
copies the object's page, so over an epoch every worker ends up with its own
copy of the list.  Pickling each item into one contiguous uint8 array (plus an
int64 array of offsets) leaves two objects whose data pages are only ever read:
the workers keep sharing them with the main process.  Reading an item costs
one `pickle.loads` (a few µs for a small dict).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence

import numpy as np


class SerializedList(Sequence):
    """A read-only sequence whose items live pickled in one NumPy buffer, shared without copy-on-read.

    Example::

        >>> records = SerializedList({"file": f"img_{i}.png", "label": i % 10} for i in range(1000))
        >>> len(records), records[3]
        (1000, {'file': 'img_3.png', 'label': 3})
    """

    def __init__(self, items: Iterable) -> None:
        blobs = [np.frombuffer(pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL), dtype=np.uint8) for item in items]
        self._ends = np.cumsum([len(blob) for blob in blobs], dtype=np.int64)
        self._buffer = np.concatenate(blobs) if blobs else np.zeros(0, dtype=np.uint8)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("SerializedList index out of range")
        start = 0 if index == 0 else int(self._ends[index - 1])
        return pickle.loads(memoryview(self._buffer[start : int(self._ends[index])]))

    @property
    def nbytes(self) -> int:
        return self._buffer.nbytes + self._ends.nbytes
