"""default_collate and default_convert: torch's rules for turning a list of samples into a batch.

The rules, by the type of the batch's first element (torch's, in the same order):

* Tensor -> stacked along a new dimension 0;
* NumPy array -> tensors, then stacked (arrays of strings or objects are an error);
* NumPy scalar -> a tensor of the scalars;
* float -> float64 tensor; int -> int64 tensor; str / bytes -> left as the list;
* Mapping -> the same mapping type, each key collated; namedtuple -> the same namedtuple, each field collated;
* other Sequence -> transposed and each position collated (a tuple gives a list, as in torch; every element
  must have the same length).

NumPy is imported here (a data loader has to recognise NumPy samples, as torch's does); everything else in
ember.utils.data works on ember tensors.
"""

from __future__ import annotations

import collections
import contextlib
import copy
import re
from collections.abc import Callable

import ember

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def default_convert(data):
    """Convert each NumPy array in `data` (recursively through mappings, namedtuples and sequences) to a tensor.

    The collate function when automatic batching is off (``batch_size=None``).

    Example::

        >>> default_convert(np.array([0, 1]))
        tensor([0, 1])
        >>> default_convert({"x": np.array(1.5), "y": "label"})
        {'x': tensor(1.5000, dtype=torch.float64), 'y': 'label'}
    """
    elem_type = type(data)
    if isinstance(data, ember.Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        # an ndarray or a numpy scalar; arrays of strings or objects stay as they are
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return ember.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type takes no dict in its constructor
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # a list, for backwards compatibility (torch's)
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def _check_equal_sizes(batch) -> None:
    """torch's message for ragged sequences, followed by the sizes that differ (the first mismatch)."""
    sizes = [len(elem) for elem in batch]
    for position, size in enumerate(sizes):
        if size != sizes[0]:
            raise RuntimeError(
                "each element in list of batch should be of equal size "
                f"(element 0 has size {sizes[0]}, element {position} has size {size})"
            )


def _collate_mapping(batch, elem, collate_fn_map):
    elem_type = type(elem)
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
            return clone
        return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
    except TypeError:  # the mapping type takes no dict in its constructor
        return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}


def _collate_sequence(batch, elem, collate_fn_map):
    _check_equal_sizes(batch)
    transposed = list(zip(*batch))  # read twice below, so a list
    if isinstance(elem, tuple):
        return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, samples in enumerate(transposed):
                clone[i] = collate(samples, collate_fn_map=collate_fn_map)
            return clone
        return type(elem)([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
    except TypeError:  # the sequence type takes no list in its constructor
        return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]


def collate(batch, *, collate_fn_map: dict | None = None):
    """Collate `batch` by the type of its first element, dispatching leaf types through `collate_fn_map`.

    Extend default_collate by passing a map with more types (each function takes the batch and the
    keyword-only `collate_fn_map`), as in torch.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _collate_mapping(batch, elem, collate_fn_map)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        return _collate_sequence(batch, elem, collate_fn_map)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map: dict | None = None):
    """Stack tensors along a new first dimension.

    torch stacks straight into shared memory when in a worker; ember stacks into ordinary memory and the
    worker copies the finished batch into one shared-memory block (NOTE [ Shared-memory batches ]).
    Sparse samples are refused with torch's message (stacking them is not supported).
    """
    if batch[0].layout != ember.strided:
        raise RuntimeError(
            "Batches of sparse tensors are not currently supported by the default collate_fn; "
            "please provide a custom collate_fn to handle them appropriately."
        )
    return ember.stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map: dict | None = None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([ember.as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map: dict | None = None):
    return ember.as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map: dict | None = None):
    return ember.tensor(batch, dtype=ember.float64)


def collate_int_fn(batch, *, collate_fn_map: dict | None = None):
    return ember.tensor(batch)


def collate_str_fn(batch, *, collate_fn_map: dict | None = None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {ember.Tensor: collate_tensor_fn}
with contextlib.suppress(ImportError):
    import numpy as np

    default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
    # np.bool_ and the numeric scalars; np.object_ so that torch's type check order is kept
    default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    """Put a list of samples into a batch: tensors gain an outer batch dimension, containers keep their shape.

    The collate function when ``batch_size`` or ``batch_sampler`` is set.  Type mapping (torch's):
    Tensor -> stacked Tensor; NumPy array -> Tensor; float -> float64 Tensor; int -> int64 Tensor;
    str/bytes -> unchanged list; Mapping[K, V] -> Mapping[K, default_collate([V...])];
    NamedTuple -> same NamedTuple of collated fields; Sequence -> list of collated positions.

    Example::

        >>> default_collate([0, 1, 2, 3])
        tensor([0, 1, 2, 3])
        >>> default_collate([{"A": 0, "B": 1}, {"A": 100, "B": 100}])
        {'A': tensor([  0, 100]), 'B': tensor([  1, 100])}
        >>> default_collate([(1, "a"), (2, "b")])
        [tensor([1, 2]), ('a', 'b')]
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
