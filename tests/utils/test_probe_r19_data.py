"""Round-19 probe: the same torch.utils.data pipelines run in ember and in the installed torch.

Each snippet takes the library (``torch`` or ``ember``) and returns what the pipeline produced; the harness
turns tensors into (dtype, shape, values), keeps container types and order, records exceptions as (type,
message) and warnings as (category, message), and asserts both libraries agree.
"""

from __future__ import annotations

import collections
import dataclasses
import fractions
import types
import warnings

import numpy as np
import pytest

import ember
import ember.utils.data  # noqa: F401 - lib.utils.data below
import ember.utils.data._utils.collate  # noqa: F401

torch = pytest.importorskip("torch")
pytest.importorskip("torch.utils.data._utils.collate")  # makes torch.utils.data and its submodules attributes

Point = collections.namedtuple("Point", ["x", "y"])


@dataclasses.dataclass
class Sample:
    x: int
    y: float


def _norm(value):
    """A library-neutral description of `value`: tensors as (dtype, shape, values), containers with their type."""
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape), value.tolist())
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.tolist())
    if isinstance(value, collections.abc.Mapping):
        extra = getattr(value, "default_factory", None)
        return (type(value).__name__, extra, [(k, _norm(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, collections.UserList, collections.deque)):
        return (type(value).__name__, [_norm(v) for v in value])
    if isinstance(value, type):
        return ("type", value.__name__)
    return (type(value).__name__, value)


def _run(fn, lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", _norm(fn(lib)))
        except Exception as error:  # noqa: BLE001 - the exception is what is compared
            result = ("raise", type(error).__name__, str(error))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


def _assert_parity(fn, message_prefix: int | None = None):
    """fn(torch) and fn(ember) agree: results, exception types and messages (or their first characters), warnings."""
    expected, got = _run(fn, torch), _run(fn, ember)
    if message_prefix is not None and expected[0][0] == "raise":
        assert got[0][:2] == expected[0][:2], (got, expected)
        assert got[0][2][:message_prefix] == expected[0][2][:message_prefix], (got, expected)
        assert got[1] == expected[1]
        return
    assert got == expected


def _data(lib):
    return lib.utils.data


def _loader(dataset, **kwargs):
    return lambda lib: list(_data(lib).DataLoader(dataset(lib) if callable(dataset) else dataset, **kwargs))


# ---------------------------------------------------------------- default_collate, element by element

COLLATE_BATCHES = {
    "ints": [1, 2, 3],
    "floats": [1.5, 2.0],
    "bools": [True, False, True],
    "int_then_float": [1, 2.5],
    "float_then_int": [2.5, 1],
    "big_int": [2**62, 1],
    "overflowing_int": [2**63, 1],
    "negative_ints": [-1, -(2**40)],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"bc"],
    "np_str": [np.str_("a"), np.str_("b")],
    "complex": [1 + 2j, 3j],
    "fraction": [fractions.Fraction(1, 2), fractions.Fraction(1, 3)],
    "none": [None, None],
    "np_float64": [np.float64(1.5), np.float64(2.5)],
    "np_float32": [np.float32(1.5), np.float32(2.5)],
    "np_float16": [np.float16(1.5), np.float16(2.5)],
    "np_int32": [np.int32(1), np.int32(2)],
    "np_int8": [np.int8(-1), np.int8(2)],
    "np_uint8": [np.uint8(1), np.uint8(255)],
    "np_int64": [np.int64(7), np.int64(8)],
    "np_bool": [np.bool_(True), np.bool_(False)],
    "np_complex64": [np.complex64(1 + 1j), np.complex64(2)],
    "np_mixed_scalars": [np.float32(1.5), np.float64(2.5)],
    "np_int_then_float_scalar": [np.int64(1), np.float64(2.5)],
    "np_float64_arrays": [np.array([1.0, 2.0]), np.array([3.0, 4.0])],
    "np_float32_arrays": [np.ones((2, 2), np.float32), np.zeros((2, 2), np.float32)],
    "np_int32_arrays": [np.array([1, 2], np.int32), np.array([3, 4], np.int32)],
    "np_uint8_arrays": [np.array([1, 255], np.uint8), np.array([0, 3], np.uint8)],
    "np_bool_arrays": [np.array([True, False]), np.array([False, False])],
    "np_float16_arrays": [np.array([1.5], np.float16), np.array([2.5], np.float16)],
    "np_0d_arrays": [np.array(1.5), np.array(2.5)],
    "np_str_arrays": [np.array(["a", "b"]), np.array(["c", "d"])],
    "np_bytes_arrays": [np.array([b"a"]), np.array([b"c"])],
    "np_object_arrays": [np.array([1, "a"], dtype=object), np.array([2, "b"], dtype=object)],
    "np_ragged_arrays": [np.zeros(2), np.zeros(3)],
    "np_mixed_dtype_arrays": [np.zeros(2, np.float32), np.zeros(2, np.float64)],
    "np_noncontiguous": [np.arange(6.0).reshape(2, 3).T, np.arange(6.0).reshape(2, 3).T],
    "np_negative_strides": [np.arange(3)[::-1], np.arange(3)[::-1]],
    "dicts": [{"a": 1, "b": 2.0}, {"a": 3, "b": 4.0}],
    "nested_dicts": [{"a": {"b": [1, 2]}}, {"a": {"b": [3, 4]}}],
    "dicts_missing_key": [{"a": 1, "b": 2}, {"a": 3}],
    "dicts_extra_key": [{"a": 1}, {"a": 3, "b": 4}],
    "ordered_dicts": [collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)],
    "defaultdicts": [collections.defaultdict(list, a=1), collections.defaultdict(list, a=2)],
    "mapping_proxy": [types.MappingProxyType({"a": 1}), types.MappingProxyType({"a": 2})],
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
    "namedtuple_strings": [Point("a", 1), Point("b", 2)],
    "dataclasses": [Sample(1, 2.0), Sample(3, 4.0)],
    "tuples": [(1, "a"), (2, "b")],
    "lists": [[1, 2], [3, 4]],
    "nested_lists": [[[1, 2], [3]], [[4, 5], [6]]],
    "ragged_lists": [[1, 2], [3]],
    "ragged_tuples": [(1, 2, 3), (3, 4)],
    "empty_lists": [[], []],
    "ranges": [range(2), range(1, 3)],
    "empty_batch": [],
    "list_of_tuple_with_none": [(1, None), (2, None)],
    "dict_of_arrays_and_strings": [{"x": np.zeros(2), "name": "a"}, {"x": np.ones(2), "name": "b"}],
    "user_dicts": [collections.UserDict(a=1), collections.UserDict(a=2)],
    "user_lists": [collections.UserList([1, 2]), collections.UserList([3, 4])],
    "user_strings": [collections.UserString("ab"), collections.UserString("cd")],
    "deques": [collections.deque([1.0, 2.0]), collections.deque([3.0, 4.0])],
    "str_subclass": [type("Name", (str,), {})("a"), type("Name", (str,), {})("b")],
    "int_subclass": [type("Label", (int,), {})(1), type("Label", (int,), {})(2)],
    "bool_then_int": [True, 2],
    "frozen_mapping": [None, None],  # replaced below by instances of a read-only Mapping
    "fixed_sequence": [None, None],  # replaced below by instances of a read-only Sequence
}


class _ReadOnlyMapping(collections.abc.Mapping):
    """A Mapping whose constructor takes no dict: collate falls back to a plain dict."""

    def __init__(self, **items):
        self._items = items

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)


class _FixedSequence(collections.abc.Sequence):
    """A Sequence whose constructor takes no list: collate falls back to a list."""

    def __init__(self, a, b):
        self._items = (a, b)

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self):
        return 2


COLLATE_BATCHES["frozen_mapping"] = [_ReadOnlyMapping(a=1, b="x"), _ReadOnlyMapping(a=2, b="y")]
COLLATE_BATCHES["fixed_sequence"] = [_FixedSequence(1, 2.0), _FixedSequence(3, 4.0)]


# ember's ragged-batch message adds the sizes that differ after torch's text: compare torch's text only
_RAGGED = len("each element in list of batch should be of equal size")
COLLATE_MESSAGE_PREFIX = {"ragged_lists": _RAGGED, "ragged_tuples": _RAGGED}
COLLATE_XFAIL = {
    "np_negative_strides": "torch.as_tensor rejects a NumPy array with negative strides (ValueError); ember's "
    "as_tensor (ember/_ops/creation.py, outside utils.data) deliberately copies it instead",
}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=COLLATE_XFAIL[name]))
        if name in COLLATE_XFAIL else name
        for name in sorted(COLLATE_BATCHES)
    ],
)
def test_default_collate_elements(name):
    batch = COLLATE_BATCHES[name]
    _assert_parity(lambda lib: _data(lib).default_collate(batch), message_prefix=COLLATE_MESSAGE_PREFIX.get(name))


TENSOR_BATCHES = {
    "float32": lambda lib: [lib.tensor([1.0, 2.0]), lib.tensor([3.0, 4.0])],
    "int64": lambda lib: [lib.tensor([1, 2]), lib.tensor([3, 4])],
    "bool": lambda lib: [lib.tensor([True]), lib.tensor([False])],
    "float64": lambda lib: [lib.tensor([1.0], dtype=lib.float64), lib.tensor([2.0], dtype=lib.float64)],
    "float16": lambda lib: [lib.tensor([1.0], dtype=lib.float16), lib.tensor([2.0], dtype=lib.float16)],
    "uint8": lambda lib: [lib.tensor([1], dtype=lib.uint8), lib.tensor([2], dtype=lib.uint8)],
    "zero_dim": lambda lib: [lib.tensor(1.0), lib.tensor(2.0)],
    "mixed_int_float": lambda lib: [lib.tensor([1, 2]), lib.tensor([3.0, 4.0])],
    "mixed_float_double": lambda lib: [lib.tensor([1.0]), lib.tensor([2.0], dtype=lib.float64)],
    "mixed_bool_int": lambda lib: [lib.tensor([True]), lib.tensor([2])],
    "ragged": lambda lib: [lib.zeros(2), lib.zeros(3)],
    "ragged_ndim": lambda lib: [lib.zeros(2), lib.zeros(1, 2)],
    "tensor_then_int": lambda lib: [lib.zeros(2), 1],
    "tensor_then_array": lambda lib: [lib.zeros(2), np.zeros(2)],
    "noncontiguous": lambda lib: [lib.arange(6.0).reshape(2, 3).t(), lib.arange(6.0).reshape(2, 3).t()],
    "pairs": lambda lib: [(lib.zeros(2), 0), (lib.ones(2), 1)],
    "dict_of_tensors": lambda lib: [{"x": lib.zeros(1), "y": 1}, {"x": lib.ones(1), "y": 2}],
}


@pytest.mark.parametrize("name", sorted(TENSOR_BATCHES))
def test_default_collate_tensors(name):
    """(torch names a NumPy array "numpy.ndarray" in stack's type error, ember "ndarray", as in its cat.)"""
    prefix = len("expected Tensor as element 1 in argument 0, but got ") if name == "tensor_then_array" else None
    _assert_parity(lambda lib: _data(lib).default_collate(TENSOR_BATCHES[name](lib)), message_prefix=prefix)


def test_default_collate_keeps_requires_grad():
    """Stacking tensors that require grad gives a batch in the graph, as torch's stack does."""

    def fn(lib):
        batch = _data(lib).default_collate([lib.ones(2, requires_grad=True), lib.zeros(2, requires_grad=True)])
        return batch.requires_grad, batch.grad_fn is not None

    _assert_parity(fn)


def test_default_collate_custom_list_subclass_keeps_its_type_and_attributes():
    class Tagged(list):
        tag = "kept"

    def fn(lib):
        first = Tagged([1, 2])
        first.extra = "x"
        out = _data(lib).default_collate([first, Tagged([3, 4])])
        return type(out).__name__, out.extra, list(out)

    _assert_parity(fn)


# ---------------------------------------------------------------- default_convert

CONVERT_INPUTS = {
    "np_array": np.array([1.0, 2.0]),
    "np_float32_array": np.array([1.0], np.float32),
    "np_int_array": np.array([[1, 2]], np.int32),
    "np_float64_scalar": np.float64(2.5),
    "np_int64_scalar": np.int64(3),
    "np_bool_scalar": np.bool_(True),
    "np_str_array": np.array(["a"]),
    "np_object_array": np.array([None]),
    "np_str_scalar": np.str_("a"),
    "np_bytes_scalar": np.bytes_(b"a"),
    "int": 3,
    "float": 1.5,
    "string": "abc",
    "bytes": b"abc",
    "none": None,
    "tuple": (np.zeros(1), 1),
    "list": [np.zeros(1), "a"],
    "dict": {"a": np.ones(1), "b": [np.int32(1)]},
    "ordered_dict": collections.OrderedDict(a=np.ones(1)),
    "defaultdict": collections.defaultdict(int, a=np.ones(1)),
    "namedtuple": Point(np.zeros(1), 1),
    "range": range(3),
    "dataclass": Sample(1, 2.0),
}


@pytest.mark.parametrize("name", sorted(CONVERT_INPUTS))
def test_default_convert(name):
    """(as_tensor's message for a bytes scalar is worded differently: the exception type is compared.)"""
    _assert_parity(lambda lib: _data(lib).default_convert(CONVERT_INPUTS[name]), message_prefix=0)


def test_default_convert_returns_the_same_tensor():
    def fn(lib):
        tensor = lib.zeros(2)
        return _data(lib).default_convert(tensor) is tensor

    _assert_parity(fn)


def test_default_convert_shares_memory_with_numpy():
    """torch.as_tensor on a float64 array shares its memory; so does ember's convert."""

    def fn(lib):
        array = np.zeros(3)
        converted = _data(lib).default_convert(array)
        array[0] = 5.0
        return converted

    _assert_parity(fn)


# ---------------------------------------------------------------- collate with a custom collate_fn_map


def _collate_module(lib):
    return lib.utils.data._utils.collate


def test_collate_with_custom_map_for_a_user_type():
    def fn(lib):
        module = _collate_module(lib)

        def collate_sample(batch, *, collate_fn_map=None):
            return {"x": lib.tensor([s.x for s in batch]), "n": len(batch)}

        fn_map = {**module.default_collate_fn_map, Sample: collate_sample}
        return module.collate([(Sample(1, 2.0), 1), (Sample(3, 4.0), 2)], collate_fn_map=fn_map)

    _assert_parity(fn)


def test_collate_map_isinstance_lookup_in_insertion_order():
    def fn(lib):
        module = _collate_module(lib)
        fn_map = {
            int: lambda batch, *, collate_fn_map: ("int", list(batch)),
            bool: lambda batch, *, collate_fn_map: ("bool", list(batch)),
            object: lambda batch, *, collate_fn_map: ("object", len(batch)),
        }
        return [
            module.collate([True, False], collate_fn_map=fn_map),  # exact type first: bool
            module.collate([np.int32(1)], collate_fn_map=fn_map),  # no exact key: first isinstance match
            module.collate([[1, 2]], collate_fn_map={str: lambda b, *, collate_fn_map: b}),
        ]

    _assert_parity(fn)


def test_collate_map_tuple_key_and_no_map():
    def fn(lib):
        module = _collate_module(lib)
        fn_map = {(int, float): lambda batch, *, collate_fn_map: sum(batch)}
        return [
            module.collate([{"a": 1}, {"a": 2.5}], collate_fn_map=fn_map),
            module.collate([[1, 2], [3, 4]], collate_fn_map=None) if False else None,
        ]

    _assert_parity(fn)


def test_collate_without_map_raises_on_leaves():
    _assert_parity(lambda lib: _collate_module(lib).collate([1, 2]))


def test_collate_map_functions_exported():
    def fn(lib):
        module = _collate_module(lib)
        return [
            module.collate_int_fn([1, 2]),
            module.collate_float_fn([1, 2]),
            module.collate_str_fn(["a"]),
            module.collate_numpy_scalar_fn([np.float32(1)]),
            module.collate_numpy_array_fn([np.zeros(1), np.ones(1)], collate_fn_map=module.default_collate_fn_map),
            module.collate_tensor_fn([lib.zeros(1), lib.ones(1)]),
            sorted(k.__name__ if isinstance(k, type) else str(len(k)) for k in module.default_collate_fn_map),
        ]

    _assert_parity(fn)


# ---------------------------------------------------------------- DataLoader: batching options


class _Squares:
    """A map-style dataset as a plain class (no Dataset base): i -> (i, i * i as float)."""

    def __init__(self, n=7):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i, float(i * i)


LOADER_CASES = {
    "list_default": _loader(list(range(5))),
    "list_batch2": _loader(list(range(5)), batch_size=2),
    "list_drop_last": _loader(list(range(5)), batch_size=2, drop_last=True),
    "list_batch_bigger_than_data": _loader(list(range(3)), batch_size=10),
    "list_batch_bigger_drop_last": _loader(list(range(3)), batch_size=10, drop_last=True),
    "batch_none_ints": _loader(list(range(3)), batch_size=None),
    "batch_none_numpy": _loader([np.arange(2.0), np.arange(2.0)], batch_size=None),
    "batch_none_np_scalar": _loader([np.float64(1.5), np.int16(2)], batch_size=None),
    "batch_none_tuples": _loader([(np.zeros(1), 1), (np.ones(1), 2)], batch_size=None),
    "batch_none_tensor_dataset": _loader(lambda lib: _data(lib).TensorDataset(lib.arange(3)), batch_size=None),
    "squares": _loader(_Squares(), batch_size=3),
    "squares_batch_none": _loader(_Squares(3), batch_size=None),
    "numpy_float64_rows": _loader(np.arange(12.0).reshape(6, 2), batch_size=4),
    "numpy_int32_rows": _loader(np.arange(6, dtype=np.int32).reshape(3, 2), batch_size=2),
    "numpy_float_scalars": _loader(np.arange(5.0), batch_size=2),
    "numpy_array_as_dataset_batch_none": _loader(np.arange(3.0), batch_size=None),
    "strings": _loader(["a", "b", "c"], batch_size=2),
    "dict_samples": _loader([{"x": i, "y": [i, -i]} for i in range(3)], batch_size=2),
    "tensor_dataset": _loader(lambda lib: _data(lib).TensorDataset(lib.arange(5), lib.arange(5.0) * 2), batch_size=2),
    "tensor_dataset_drop_last": _loader(
        lambda lib: _data(lib).TensorDataset(lib.arange(5.0).reshape(5, 1)), batch_size=2, drop_last=True
    ),
    "tensor_as_dataset": _loader(lambda lib: lib.arange(6).reshape(3, 2), batch_size=2),
    "sampler_list": _loader(list(range(10)), sampler=[3, 1, 2], batch_size=2),
    "batch_sampler_list": _loader(list(range(10)), batch_sampler=[[0, 9], [5], [1, 2, 3]]),
    "batch_sampler_object": _loader(
        list(range(10)), batch_sampler=torch.utils.data.BatchSampler(range(5), 2, False)
    ),
    "custom_collate_identity": _loader(list(range(4)), batch_size=2, collate_fn=lambda batch: batch),
    "custom_collate_sum": _loader(list(range(4)), batch_size=2, collate_fn=sum),
    "custom_collate_batch_none": _loader(list(range(3)), batch_size=None, collate_fn=lambda x: -x),
    "getitems_dataset": _loader(
        lambda lib: type(
            "Batched",
            (_data(lib).Dataset,),
            {
                "__len__": lambda self: 5,
                "__getitem__": lambda self, i: i,
                "__getitems__": lambda self, idx: [i * 10 for i in idx],
            },
        )(),
        batch_size=2,
    ),
    "getitems_none_uses_getitem": _loader(
        lambda lib: type(
            "NoBatched",
            (_data(lib).Dataset,),
            {"__len__": lambda self: 3, "__getitem__": lambda self, i: i, "__getitems__": None},
        )(),
        batch_size=2,
    ),
    "index_error_in_dataset": _loader([1, 2], sampler=[0, 5], batch_size=1),
    "batch_size_zero": _loader(list(range(3)), batch_size=0),
    "batch_size_float": _loader(list(range(3)), batch_size=1.5),
    "batch_size_bool": _loader(list(range(3)), batch_size=True),
    "drop_last_int": _loader(list(range(3)), batch_size=2, drop_last=1),
}


@pytest.mark.parametrize("name", sorted(LOADER_CASES))
def test_loader_batches(name):
    _assert_parity(LOADER_CASES[name])


# ---------------------------------------------------------------- DataLoader: argument errors

def _iterable(lib, items, length=None):
    """An IterableDataset over `items` (sharded by worker when there are workers), with an optional __len__."""

    class Items(_data(lib).IterableDataset):
        def __init__(self):
            self.items = list(items)

        def __iter__(self):
            info = _data(lib).get_worker_info()
            if info is None:
                return iter(self.items)
            return iter(self.items[info.id :: info.num_workers])

        def __repr__(self):
            return "Items"

    if length is not None:
        Items.__len__ = lambda self: length
    return Items()


def _make_loader(dataset_kind="map", **kwargs):
    def fn(lib):
        dataset = _iterable(lib, range(4)) if dataset_kind == "iterable" else list(range(4))
        if kwargs.get("sampler") == "seq":
            kwargs["sampler"] = _data(lib).SequentialSampler(dataset)
        return _data(lib).DataLoader(dataset, **kwargs).batch_size

    return fn


ARGUMENT_ERRORS = {
    "sampler_and_shuffle": _make_loader(sampler=[0, 1], shuffle=True),
    "batch_sampler_and_batch_size": _make_loader(batch_sampler=[[0]], batch_size=2),
    "batch_sampler_and_shuffle": _make_loader(batch_sampler=[[0]], shuffle=True),
    "batch_sampler_and_sampler": _make_loader(batch_sampler=[[0]], sampler=[0]),
    "batch_sampler_and_drop_last": _make_loader(batch_sampler=[[0]], drop_last=True),
    "batch_sampler_and_batch_size_one": _make_loader(batch_sampler=[[0]], batch_size=1),
    "batch_sampler_and_shuffle_false": _make_loader(batch_sampler=[[0]], shuffle=False),
    "batch_none_and_drop_last": _make_loader(batch_size=None, drop_last=True),
    "iterable_and_shuffle": _make_loader("iterable", shuffle=True),
    "iterable_and_shuffle_false": _make_loader("iterable", shuffle=False),
    "iterable_and_sampler": _make_loader("iterable", sampler=[0]),
    "iterable_and_batch_sampler": _make_loader("iterable", batch_sampler=[[0]]),
    "negative_workers": _make_loader(num_workers=-1),
    "negative_timeout": _make_loader(timeout=-1),
    "prefetch_without_workers": _make_loader(prefetch_factor=2),
    "negative_prefetch": _make_loader(num_workers=1, prefetch_factor=-1),
    "zero_prefetch": _make_loader(num_workers=1, prefetch_factor=0),
    "persistent_without_workers": _make_loader(persistent_workers=True),
    "context_without_workers": _make_loader(multiprocessing_context="fork"),
    "context_bad_string": _make_loader(num_workers=1, multiprocessing_context="thread"),
    "context_bad_type": _make_loader(num_workers=1, multiprocessing_context=3),
    "shuffle_string": _make_loader(shuffle="yes"),
    "shuffle_with_sampler_false": _make_loader(shuffle=False, sampler="seq"),
}


@pytest.mark.parametrize("name", sorted(ARGUMENT_ERRORS))
def test_loader_argument_errors(name):
    _assert_parity(ARGUMENT_ERRORS[name])


def test_loader_attributes_frozen_after_init():
    def fn(lib):
        loader = _data(lib).DataLoader(list(range(4)), batch_size=2)
        outcomes = []
        for attr, value in [("batch_size", 3), ("sampler", None), ("dataset", []), ("num_workers", 0),
                            ("drop_last", True), ("persistent_workers", True), ("collate_fn", list)]:
            try:
                setattr(loader, attr, value)
                outcomes.append((attr, "set"))
            except ValueError as error:
                outcomes.append((attr, str(error)))
        return outcomes

    _assert_parity(fn)


def test_loader_default_attributes():
    def fn(lib):
        loader = _data(lib).DataLoader(list(range(4)))
        workers = _data(lib).DataLoader(list(range(4)), num_workers=2)
        return [
            loader.batch_size, loader.drop_last, loader.num_workers, loader.prefetch_factor, loader.timeout,
            loader.pin_memory, loader.pin_memory_device, loader.persistent_workers, loader.in_order,
            loader.generator, loader.worker_init_fn, loader.multiprocessing_context, workers.prefetch_factor,
            type(loader.sampler).__name__, type(loader.batch_sampler).__name__,
            loader.collate_fn.__name__,
            _data(lib).DataLoader(list(range(4)), batch_size=None).collate_fn.__name__,
            _data(lib).DataLoader(list(range(4)), shuffle=True).sampler.__class__.__name__,
            _data(lib).DataLoader(_iterable(lib, [1])).sampler.__class__.__name__,
        ]

    _assert_parity(fn)


# ---------------------------------------------------------------- DataLoader: length, re-iteration, RNG


LENGTH_CASES = {
    "map": lambda lib: len(_data(lib).DataLoader(list(range(10)), batch_size=3)),
    "map_drop_last": lambda lib: len(_data(lib).DataLoader(list(range(10)), batch_size=3, drop_last=True)),
    "map_batch_none": lambda lib: len(_data(lib).DataLoader(list(range(10)), batch_size=None)),
    "map_exact": lambda lib: len(_data(lib).DataLoader(list(range(9)), batch_size=3, drop_last=True)),
    "batch_sampler": lambda lib: len(_data(lib).DataLoader(list(range(10)), batch_sampler=[[1], [2, 3]])),
    "sampler_without_len": lambda lib: len(_data(lib).DataLoader(list(range(10)), sampler=iter([1, 2]))),
    "iterable_without_len": lambda lib: len(_data(lib).DataLoader(_iterable(lib, range(5)))),
    "iterable_len": lambda lib: len(_data(lib).DataLoader(_iterable(lib, range(5), length=5), batch_size=2)),
    "iterable_len_drop_last": lambda lib: len(
        _data(lib).DataLoader(_iterable(lib, range(5), length=5), batch_size=2, drop_last=True)
    ),
    "iterable_len_batch_none": lambda lib: len(
        _data(lib).DataLoader(_iterable(lib, range(5), length=5), batch_size=None)
    ),
    "iterator_len": lambda lib: len(iter(_data(lib).DataLoader(list(range(10)), batch_size=4))),
    "random_sampler_num_samples": lambda lib: len(
        _data(lib).DataLoader(list(range(10)), sampler=_data(lib).RandomSampler(range(10), num_samples=3))
    ),
}


@pytest.mark.parametrize("name", sorted(LENGTH_CASES))
def test_loader_len(name):
    _assert_parity(LENGTH_CASES[name])


@pytest.mark.parametrize("length", [2, 3, 5])
def test_iterable_len_warning_when_too_short(length):
    """torch warns once per extra sample fetched after len(loader) was called with a too-small __len__."""

    def fn(lib):
        loader = _data(lib).DataLoader(_iterable(lib, range(5), length=length), batch_size=None)
        reported = len(loader)
        return reported, list(loader)

    _assert_parity(fn)


def test_iterable_len_warning_with_batches():
    def fn(lib):
        loader = _data(lib).DataLoader(_iterable(lib, range(7), length=2), batch_size=2)
        return len(loader), list(loader)

    _assert_parity(fn)


def test_iterable_no_warning_without_len_call():
    _assert_parity(lambda lib: list(_data(lib).DataLoader(_iterable(lib, range(5), length=1), batch_size=2)))


@pytest.mark.parametrize("drop_last", [False, True])
def test_iterable_batches(drop_last):
    _assert_parity(_loader(lambda lib: _iterable(lib, range(7)), batch_size=3, drop_last=drop_last))


def test_loader_iterates_twice_and_interleaved_iterators():
    def fn(lib):
        loader = _data(lib).DataLoader(list(range(5)), batch_size=2)
        first, second = iter(loader), iter(loader)
        return [next(first), next(second), next(first), list(loader), list(first), list(second)]

    _assert_parity(fn)


def test_exhausted_iterator_keeps_raising_stop_iteration():
    def fn(lib):
        iterator = iter(_data(lib).DataLoader([1], batch_size=1))
        out = [next(iterator)]
        for _ in range(2):
            try:
                next(iterator)
            except StopIteration:
                out.append("stop")
        return out

    _assert_parity(fn)


@pytest.mark.parametrize("seed", [0, 1, 123])
def test_shuffle_order_with_loader_generator(seed):
    def fn(lib):
        loader = _data(lib).DataLoader(
            list(range(10)), batch_size=3, shuffle=True, generator=lib.Generator().manual_seed(seed)
        )
        return [list(loader), list(loader)]

    _assert_parity(fn)


@pytest.mark.parametrize("seed", [0, 7])
def test_shuffle_order_under_global_seed_and_rng_consumption(seed):
    """Without a generator the sampler seeds itself from the global RNG; the global stream afterwards matches."""

    def fn(lib):
        lib.manual_seed(seed)
        loader = _data(lib).DataLoader(list(range(10)), batch_size=4, shuffle=True)
        epochs = [list(loader), list(loader)]
        return epochs, lib.rand(3)

    _assert_parity(fn)


def test_base_seed_drawn_from_loader_generator_even_without_workers():
    def fn(lib):
        generator = lib.Generator().manual_seed(3)
        list(_data(lib).DataLoader(list(range(4)), batch_size=2, generator=generator))
        return lib.randint(0, 1000, (4,), generator=generator)

    _assert_parity(fn)


def test_sequential_loader_draws_base_seed_from_global_rng():
    def fn(lib):
        lib.manual_seed(11)
        iter(_data(lib).DataLoader(list(range(4))))
        return lib.randint(0, 1000, (4,))

    _assert_parity(fn)


def test_pin_memory_without_accelerator_warns_and_keeps_batches():
    def fn(lib):
        batches = list(_data(lib).DataLoader(list(range(4)), batch_size=2, pin_memory=True))
        return batches, [b.is_pinned() for b in batches]

    _assert_parity(fn)


def test_float64_numpy_dataset_stays_float64():
    def fn(lib):
        rows = np.random.default_rng(0).standard_normal((5, 3))
        labels = np.arange(5)
        dataset = list(zip(rows, labels))
        return list(_data(lib).DataLoader(dataset, batch_size=2))

    _assert_parity(fn)


# ---------------------------------------------------------------- samplers

SAMPLER_CASES = {
    "sequential": lambda lib: list(_data(lib).SequentialSampler(range(4))),
    "sequential_len": lambda lib: len(_data(lib).SequentialSampler([1, 2, 3])),
    "random_generator": lambda lib: list(_data(lib).RandomSampler(range(10), generator=lib.Generator().manual_seed(1))),
    "random_twice": lambda lib: (
        lambda s: [list(s), list(s)]
    )(_data(lib).RandomSampler(range(6), generator=lib.Generator().manual_seed(2))),
    "random_replacement": lambda lib: list(
        _data(lib).RandomSampler(range(5), replacement=True, generator=lib.Generator().manual_seed(3))
    ),
    "random_replacement_many": lambda lib: list(
        _data(lib).RandomSampler(range(5), True, num_samples=70, generator=lib.Generator().manual_seed(3))
    ),
    "random_num_samples_more": lambda lib: list(
        _data(lib).RandomSampler(range(4), num_samples=10, generator=lib.Generator().manual_seed(4))
    ),
    "random_num_samples_fewer": lambda lib: list(
        _data(lib).RandomSampler(range(8), num_samples=3, generator=lib.Generator().manual_seed(4))
    ),
    "random_global_seed": lambda lib: (lib.manual_seed(5), list(_data(lib).RandomSampler(range(8))))[1],
    "random_len": lambda lib: len(_data(lib).RandomSampler(range(8), num_samples=3)),
    "random_num_samples_zero": lambda lib: _data(lib).RandomSampler(range(8), num_samples=0),
    "random_num_samples_float": lambda lib: _data(lib).RandomSampler(range(8), num_samples=2.0),
    "random_empty": lambda lib: _data(lib).RandomSampler([]),
    "random_replacement_not_bool": lambda lib: _data(lib).RandomSampler(range(8), replacement=1),
    "random_num_samples_attr": lambda lib: [
        _data(lib).RandomSampler(range(8)).num_samples,
        _data(lib).RandomSampler(range(8), num_samples=2).num_samples,
    ],
    "subset_random": lambda lib: list(
        _data(lib).SubsetRandomSampler([10, 20, 30, 40], generator=lib.Generator().manual_seed(0))
    ),
    "subset_random_range": lambda lib: list(
        _data(lib).SubsetRandomSampler(range(5, 10), generator=lib.Generator().manual_seed(9))
    ),
    "subset_random_global": lambda lib: (lib.manual_seed(2), list(_data(lib).SubsetRandomSampler([1, 2, 3])))[1],
    "subset_random_len": lambda lib: len(_data(lib).SubsetRandomSampler([1, 2, 3])),
    "subset_random_tensor_indices": lambda lib: list(
        _data(lib).SubsetRandomSampler(lib.tensor([4, 5, 6]), generator=lib.Generator().manual_seed(0))
    ),
    "weighted": lambda lib: list(
        _data(lib).WeightedRandomSampler([0.1, 0.9, 0.4, 0.7, 3.0], 8, generator=lib.Generator().manual_seed(0))
    ),
    "weighted_no_replacement": lambda lib: list(
        _data(lib).WeightedRandomSampler([0.9, 0.4, 0.05, 0.2, 0.3], 5, replacement=False,
                                         generator=lib.Generator().manual_seed(1))
    ),
    "weighted_tensor_weights": lambda lib: list(
        _data(lib).WeightedRandomSampler(lib.tensor([1.0, 0.0, 2.0]), 6, generator=lib.Generator().manual_seed(2))
    ),
    "weighted_global_seed": lambda lib: (lib.manual_seed(3), list(_data(lib).WeightedRandomSampler([1, 2, 3], 5)))[1],
    "weighted_attrs": lambda lib: (
        lambda s: [s.weights, s.num_samples, s.replacement, len(s)]
    )(_data(lib).WeightedRandomSampler([1, 2], 3)),
    "weighted_num_samples_zero": lambda lib: _data(lib).WeightedRandomSampler([1.0], 0),
    "weighted_num_samples_bool": lambda lib: _data(lib).WeightedRandomSampler([1.0], True),
    "weighted_replacement_not_bool": lambda lib: _data(lib).WeightedRandomSampler([1.0], 1, replacement=0),
    "weighted_2d": lambda lib: _data(lib).WeightedRandomSampler([[1.0, 2.0]], 1),
    "weighted_too_many_without_replacement": lambda lib: list(
        _data(lib).WeightedRandomSampler([1.0, 0.0, 1.0], 3, replacement=False)
    ),
    "weighted_more_than_categories": lambda lib: list(
        _data(lib).WeightedRandomSampler([1.0, 1.0], 3, replacement=False)
    ),
    "weighted_negative": lambda lib: list(_data(lib).WeightedRandomSampler([1.0, -1.0], 1)),
    "weighted_all_zero": lambda lib: list(_data(lib).WeightedRandomSampler([0.0, 0.0], 1)),
    "weighted_inf": lambda lib: list(_data(lib).WeightedRandomSampler([1.0, float("inf")], 1)),
    "batch": lambda lib: list(_data(lib).BatchSampler(range(7), 3, False)),
    "batch_drop_last": lambda lib: list(_data(lib).BatchSampler(range(7), 3, True)),
    "batch_len": lambda lib: [len(_data(lib).BatchSampler(range(7), 3, d)) for d in (False, True)],
    "batch_of_random": lambda lib: list(
        _data(lib).BatchSampler(_data(lib).RandomSampler(range(7), generator=lib.Generator().manual_seed(0)), 2, False)
    ),
    "batch_over_generator": lambda lib: list(_data(lib).BatchSampler((i * i for i in range(5)), 2, False)),
    "batch_generator_len": lambda lib: len(_data(lib).BatchSampler((i for i in range(5)), 2, False)),
    "batch_size_zero": lambda lib: _data(lib).BatchSampler(range(3), 0, False),
    "batch_size_bool": lambda lib: _data(lib).BatchSampler(range(3), True, False),
    "batch_size_float": lambda lib: _data(lib).BatchSampler(range(3), 2.0, False),
    "batch_drop_last_not_bool": lambda lib: _data(lib).BatchSampler(range(3), 2, 0),
    "base_sampler_iter": lambda lib: iter(_data(lib).Sampler()),
    "base_sampler_len": lambda lib: len(_data(lib).Sampler()),
    "base_sampler_with_source": lambda lib: type(_data(lib).Sampler([1, 2])).__name__,
}


@pytest.mark.parametrize("name", sorted(SAMPLER_CASES))
def test_samplers(name):
    _assert_parity(SAMPLER_CASES[name])


# ---------------------------------------------------------------- DistributedSampler


@pytest.mark.parametrize("n", [10, 11, 2])
@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_partitions(n, shuffle, drop_last):
    def fn(lib):
        out = []
        for rank in range(3):
            sampler = _data(lib).DistributedSampler(
                range(n), num_replicas=3, rank=rank, shuffle=shuffle, drop_last=drop_last, seed=5
            )
            out.append((list(sampler), len(sampler), sampler.num_samples, sampler.total_size))
        return out

    _assert_parity(fn)


def test_distributed_sampler_set_epoch_and_seed():
    def fn(lib):
        sampler = _data(lib).DistributedSampler(range(9), num_replicas=2, rank=1)
        out = [list(sampler)]
        sampler.set_epoch(1)
        out.append(list(sampler))
        sampler.set_epoch(0)
        out.append(list(sampler))
        out.append(list(_data(lib).DistributedSampler(range(9), num_replicas=2, rank=1, seed=1)))
        return out, sampler.epoch

    _assert_parity(fn)


def test_distributed_sampler_ignores_global_seed():
    def fn(lib):
        lib.manual_seed(0)
        first = list(_data(lib).DistributedSampler(range(6), num_replicas=1, rank=0))
        lib.manual_seed(1)
        return first, list(_data(lib).DistributedSampler(range(6), num_replicas=1, rank=0))

    _assert_parity(fn)


@pytest.mark.parametrize("rank", [-1, 2, 5])
def test_distributed_sampler_bad_rank(rank):
    _assert_parity(lambda lib: _data(lib).DistributedSampler(range(4), num_replicas=2, rank=rank))


def test_distributed_sampler_in_loader():
    def fn(lib):
        sampler = _data(lib).DistributedSampler(range(10), num_replicas=2, rank=0, seed=3)
        loader = _data(lib).DataLoader(list(range(10)), batch_size=2, sampler=sampler)
        out = [list(loader), len(loader)]
        sampler.set_epoch(2)
        out.append(list(loader))
        return out

    _assert_parity(fn)


def test_distributed_sampler_without_process_group():
    _assert_parity(lambda lib: _data(lib).DistributedSampler(range(4)), message_prefix=0)


# ---------------------------------------------------------------- datasets


def _tensor_dataset(lib):
    return _data(lib).TensorDataset(lib.arange(4), lib.arange(8.0).reshape(4, 2))


def _concat(lib):
    return _data(lib).ConcatDataset([list(range(3)), [], list(range(10, 12)), _tensor_dataset(lib)])


DATASET_CASES = {
    "tensor_dataset_item": lambda lib: _tensor_dataset(lib)[1],
    "tensor_dataset_negative": lambda lib: _tensor_dataset(lib)[-1],
    "tensor_dataset_slice": lambda lib: _tensor_dataset(lib)[1:3],
    "tensor_dataset_list_index": lambda lib: _tensor_dataset(lib)[[0, 2]],
    "tensor_dataset_out_of_range": lambda lib: _tensor_dataset(lib)[4],
    "tensor_dataset_len": lambda lib: len(_tensor_dataset(lib)),
    "tensor_dataset_mismatch": lambda lib: _data(lib).TensorDataset(lib.zeros(3), lib.zeros(4)),
    "tensor_dataset_empty": lambda lib: _data(lib).TensorDataset().tensors,
    "tensor_dataset_zero_dim": lambda lib: _data(lib).TensorDataset(lib.tensor(1.0)),
    "tensor_dataset_tensors_attr": lambda lib: type(_tensor_dataset(lib).tensors).__name__,
    "concat_items": lambda lib: [_concat(lib)[i] for i in range(len(_concat(lib)))],
    "concat_negative": lambda lib: [_concat(lib)[-1], _concat(lib)[-5], _concat(lib)[-9]],
    "concat_too_negative": lambda lib: _concat(lib)[-10],
    "concat_out_of_range": lambda lib: _concat(lib)[9],
    "concat_cumulative_sizes": lambda lib: _concat(lib).cumulative_sizes,
    "concat_deprecated_cumulative_sizes": lambda lib: _concat(lib).cummulative_sizes,
    "concat_cumsum": lambda lib: _data(lib).ConcatDataset.cumsum([[1], [2, 3], []]),
    "concat_empty": lambda lib: _data(lib).ConcatDataset([]),
    "concat_iterable": lambda lib: _data(lib).ConcatDataset([[1], _iterable(lib, [1])]),
    "concat_add": lambda lib: (lambda d: (type(d).__name__, len(d), d[4]))(_tensor_dataset(lib) + _tensor_dataset(lib)),
    "concat_add_list": lambda lib: (lambda d: (type(d).__name__, len(d), d[5]))(_tensor_dataset(lib) + [7, 8]),
    "concat_loader": lambda lib: list(_data(lib).DataLoader(_data(lib).ConcatDataset([[1, 2], [3]]), batch_size=2)),
    "concat_shuffled_loader": lambda lib: list(
        _data(lib).DataLoader(
            _data(lib).ConcatDataset([[1, 2], [3, 4, 5]]),
            batch_size=2,
            shuffle=True,
            generator=lib.Generator().manual_seed(0),
        )
    ),
    "chain_iter": lambda lib: list(_data(lib).ChainDataset([_iterable(lib, [1, 2]), _iterable(lib, [3])])),
    "chain_len": lambda lib: len(_data(lib).ChainDataset([_iterable(lib, [1, 2], 2), _iterable(lib, [3], 1)])),
    "chain_len_missing": lambda lib: len(_data(lib).ChainDataset([_iterable(lib, [1, 2], 2), _iterable(lib, [3])])),
    "chain_map_style": lambda lib: list(_data(lib).ChainDataset([_iterable(lib, [1]), [2, 3]])),
    "chain_map_style_len": lambda lib: len(_data(lib).ChainDataset([[2, 3]])),
    "chain_add": lambda lib: (lambda d: (type(d).__name__, list(d)))(_iterable(lib, [1]) + _iterable(lib, [2])),
    "chain_loader": lambda lib: list(
        _data(lib).DataLoader(_data(lib).ChainDataset([_iterable(lib, [1, 2]), _iterable(lib, [3])]), batch_size=2)
    ),
    "stack_tuple": lambda lib: _data(lib).StackDataset([1, 2], ["a", "b"])[1],
    "stack_dict": lambda lib: _data(lib).StackDataset(x=[1, 2], y=["a", "b"])[0],
    "stack_len": lambda lib: len(_data(lib).StackDataset([1, 2], ["a", "b"])),
    "stack_mismatch": lambda lib: _data(lib).StackDataset([1, 2], ["a"]),
    "stack_mismatch_kwargs": lambda lib: _data(lib).StackDataset(a=[1, 2], b=["a"]),
    "stack_both": lambda lib: _data(lib).StackDataset([1], a=[1]),
    "stack_none": lambda lib: _data(lib).StackDataset(),
    "stack_datasets_attr": lambda lib: [
        type(_data(lib).StackDataset([1], [2]).datasets).__name__,
        type(_data(lib).StackDataset(a=[1]).datasets).__name__,
    ],
    "stack_loader_tuple": lambda lib: list(
        _data(lib).DataLoader(_data(lib).StackDataset(_tensor_dataset(lib), list("abcd")), batch_size=3)
    ),
    "stack_loader_dict": lambda lib: list(
        _data(lib).DataLoader(_data(lib).StackDataset(x=_tensor_dataset(lib), y=list(range(4))), batch_size=3)
    ),
    "stack_getitems": lambda lib: _data(lib).StackDataset(x=[1, 2, 3], y=[4, 5, 6]).__getitems__([2, 0]),
    "subset_items": lambda lib: [_data(lib).Subset(list("abcdef"), [5, 0, 3])[i] for i in range(3)],
    "subset_negative": lambda lib: _data(lib).Subset(list("abcdef"), [5, 0, 3])[-1],
    "subset_list_index": lambda lib: _data(lib).Subset(_tensor_dataset(lib), [3, 1, 2])[[0, 2]],
    "subset_len": lambda lib: len(_data(lib).Subset(range(10), range(2, 5))),
    "subset_getitems": lambda lib: _data(lib).Subset(list("abc"), [2, 1]).__getitems__([1, 0]),
    "subset_loader": lambda lib: list(_data(lib).DataLoader(_data(lib).Subset(_tensor_dataset(lib), [3, 0]),
                                                            batch_size=2)),
    "subset_tensor_indices": lambda lib: _data(lib).Subset(list("abc"), lib.tensor([2, 0]))[0],
    "dataset_base_getitem": lambda lib: _data(lib).Dataset()[0],
    "dataset_base_len": lambda lib: len(_data(lib).Dataset()),
    "iterable_base_iter": lambda lib: list(_data(lib).IterableDataset()),
    "iterable_base_add_map": lambda lib: type(_iterable(lib, [1]) + [1]).__name__,
}


@pytest.mark.parametrize("name", sorted(DATASET_CASES))
def test_datasets(name):
    _assert_parity(DATASET_CASES[name])


def test_subset_subclass_overriding_getitem_only():
    def fn(lib):
        class Doubled(_data(lib).Subset):
            def __getitem__(self, idx):
                return 2 * super().__getitem__(idx)

        return Doubled([1, 2, 3], [0, 1])

    _assert_parity(fn)


# ---------------------------------------------------------------- random_split

SPLIT_CASES = {
    "lengths": ([3, 7], 0),
    "fractions": ([0.3, 0.7], 1),
    "fractions_remainder": ([0.33, 0.33, 0.34], 2),
    "fractions_zero_split": ([0.05, 0.95], 3),
    "fractions_four_way": ([0.25, 0.25, 0.25, 0.25], 4),
    "wrong_sum": ([3, 3], 0),
    "fraction_out_of_range": ([1.5, -0.5], 0),
    "zero_length": ([0, 10], 0),
    "one_fraction": ([1.0], 0),
}


@pytest.mark.parametrize("name", sorted(SPLIT_CASES))
def test_random_split(name):
    lengths, seed = SPLIT_CASES[name]

    def fn(lib):
        splits = _data(lib).random_split(range(10), lengths, generator=lib.Generator().manual_seed(seed))
        return [(type(s).__name__, list(s.indices), len(s)) for s in splits]

    _assert_parity(fn)


def test_random_split_default_generator_under_global_seed():
    def fn(lib):
        lib.manual_seed(42)
        splits = _data(lib).random_split(list(range(8)), [0.5, 0.5])
        return [list(s) for s in splits], lib.rand(2)

    _assert_parity(fn)


def test_random_split_generator_none():
    _assert_parity(lambda lib: (lib.manual_seed(4), [list(s) for s in _data(lib).random_split(range(5), [2, 3], None)])[1])


# ---------------------------------------------------------------- worker processes (few and small)


def _worker_report(lib):
    """An IterableDataset whose items say which worker produced them and with what seeds."""

    class Report(_data(lib).IterableDataset):
        def __init__(self):
            self.touched = "main"

        def __iter__(self):
            info = _data(lib).get_worker_info()
            dataset_is_copy = info.dataset is self and info.dataset.touched == "main"
            yield {
                "id": info.id,
                "num_workers": info.num_workers,
                "seed": info.seed,
                "initial_seed": lib.initial_seed(),
                "dataset": dataset_is_copy,
                "init": getattr(self, "init", None),
                "rand": lib.rand(2),
                "np": float(np.random.rand()),
            }

    return Report()


def _init_fn(worker_id):
    info = (torch.utils.data.get_worker_info() or ember.utils.data.get_worker_info())
    info.dataset.init = worker_id * 10


def test_worker_info_seeds_and_init_fn_match_torch():
    """Worker ids, seeds (base seed from the loader's generator), initial_seed, RNG draws and worker_init_fn."""

    def fn(lib):
        loader = _data(lib).DataLoader(
            _worker_report(lib), batch_size=None, num_workers=2, worker_init_fn=_init_fn,
            generator=lib.Generator().manual_seed(1234),
        )
        return list(loader), _data(lib).get_worker_info()

    _assert_parity(fn)


def test_persistent_workers_keep_their_seed_across_epochs():
    def fn(lib):
        lib.manual_seed(9)
        loader = _data(lib).DataLoader(_worker_report(lib), batch_size=None, num_workers=1, persistent_workers=True)
        return [list(loader), list(loader)]

    _assert_parity(fn)


def test_iterable_sharding_and_len_warning_with_workers():
    """Shards interleave worker by worker; without sharding every worker yields everything (and torch warns)."""

    def fn(lib):
        sharded = _data(lib).DataLoader(_iterable(lib, range(7)), batch_size=2, num_workers=2)
        unsharded = _data(lib).DataLoader(
            _iterable(lib, range(3), length=3), batch_size=None, num_workers=2, worker_init_fn=_unshard
        )
        return list(sharded), len(unsharded), list(unsharded)

    _assert_parity(fn)


def _unshard(worker_id):
    info = (torch.utils.data.get_worker_info() or ember.utils.data.get_worker_info())
    type(info.dataset).__iter__ = lambda self: iter(self.items)


def test_worker_map_style_shuffle_and_error():
    def fn(lib):
        loader = _data(lib).DataLoader(
            list(range(10)), batch_size=3, shuffle=True, num_workers=2, generator=lib.Generator().manual_seed(5)
        )
        failing = _data(lib).DataLoader([1, 2], sampler=[0, 7], num_workers=1)
        try:
            list(failing)
        except IndexError as error:
            failure = str(error).splitlines()[0]
        return list(loader), failure

    _assert_parity(fn)


def test_worker_timeout():
    def fn(lib):
        class Slow(_data(lib).Dataset):
            def __len__(self):
                return 2

            def __getitem__(self, i):
                import time

                time.sleep(3)
                return i

        return list(_data(lib).DataLoader(Slow(), num_workers=1, timeout=0.3))

    _assert_parity(fn)


# ---------------------------------------------------------------- StatefulDataLoader (ember only: torch has none)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stateful_loader_resumes_torchs_order(num_workers):
    """A resumed StatefulDataLoader continues exactly where an uninterrupted torch DataLoader would be."""
    generator = torch.Generator().manual_seed(21)
    expected = [b.tolist() for epoch in range(2) for b in torch.utils.data.DataLoader(
        list(range(11)), batch_size=2, shuffle=True, generator=generator)]

    def make():
        return ember.utils.data.StatefulDataLoader(
            list(range(11)), batch_size=2, shuffle=True, generator=ember.Generator().manual_seed(21),
            num_workers=num_workers,
        )

    loader = make()
    iterator = iter(loader)
    got = [next(iterator).tolist() for _ in range(2)]
    state = loader.state_dict()
    resumed = make()
    resumed.load_state_dict(state)
    got += [b.tolist() for b in resumed]
    got += [b.tolist() for b in resumed]
    assert got == expected


# ---------------------------------------------------------------- more edge cases: index types, batches as samplers


class _NoLenSampler:
    def __iter__(self):
        return iter([2, 0])


MORE_CASES = {
    "collate_ndarray_batch": lambda lib: _data(lib).default_collate(np.array([1, 2])),
    "collate_tensor_batch": lambda lib: _data(lib).default_collate(lib.arange(3)),
    "collate_tuple_batch": lambda lib: _data(lib).default_collate((1, 2)),
    "collate_string_batch": lambda lib: _data(lib).default_collate("ab"),
    "collate_dict_of_strings_and_bytes": lambda lib: _data(lib).default_collate([{"s": "a", "b": b"x"}] * 2),
    "collate_nested_namedtuple": lambda lib: _data(lib).default_collate([Point(Point(1, 2), [3.0])] * 2),
    "collate_list_of_np_scalar_lists": lambda lib: _data(lib).default_collate([[np.int16(1)], [np.int16(2)]]),
    "tensor_sampler": _loader(lambda lib: _data(lib).TensorDataset(lib.arange(5) * 3), batch_size=2,
                              sampler=[4, 1, 0]),
    "randperm_sampler": lambda lib: list(
        _data(lib).DataLoader(
            _data(lib).TensorDataset(lib.arange(5) * 3), batch_size=2,
            sampler=lib.randperm(5, generator=lib.Generator().manual_seed(0)),
        )
    ),
    "randperm_sampler_list_dataset": lambda lib: list(
        _data(lib).DataLoader(list("abcde"), batch_size=2, sampler=lib.tensor([3, 1, 4]))
    ),
    "numpy_sampler": _loader(lambda lib: _data(lib).TensorDataset(lib.arange(5)), batch_size=2,
                             sampler=np.array([4, 1, 0])),
    "batch_sampler_as_sampler": lambda lib: list(
        _data(lib).DataLoader(
            _data(lib).TensorDataset(lib.arange(6), lib.arange(6.0)), batch_size=None,
            sampler=_data(lib).BatchSampler(_data(lib).SequentialSampler(range(6)), 4, False),
        )
    ),
    "no_len_sampler_iter": lambda lib: list(_data(lib).DataLoader(list("abc"), sampler=_NoLenSampler())),
    "no_len_sampler_len": lambda lib: len(_data(lib).DataLoader(list("abc"), sampler=_NoLenSampler(), batch_size=2)),
    "dict_dataset": _loader({0: "a", 1: "b", 2: "c"}, batch_size=2),
    "range_dataset": lambda lib: list(
        _data(lib).DataLoader(range(5), batch_size=2, shuffle=True, generator=lib.Generator().manual_seed(0))
    ),
    "iter_type_single": lambda lib: type(iter(_data(lib).DataLoader([1]))).__name__,
    "concat_tensor_index": lambda lib: _data(lib).ConcatDataset([[1, 2], [3, 4]])[lib.tensor(2)],
    "concat_numpy_index": lambda lib: _data(lib).ConcatDataset([[1, 2], [3, 4]])[np.int64(-1)],
    "subset_numpy_indices": lambda lib: list(
        _data(lib).DataLoader(_data(lib).Subset(list(range(10)), np.array([9, 3, 5])), batch_size=2)
    ),
    "stack_nested_getitems_mismatch": lambda lib: _data(lib).StackDataset(
        type("Bad", (), {"__len__": lambda s: 2, "__getitem__": lambda s, i: i, "__getitems__": lambda s, i: [1]})(),
        [1, 2],
    ).__getitems__([0, 1]),
    "split_float_sum_below_one": lambda lib: [
        len(s) for s in _data(lib).random_split(range(7), [0.7, 0.2, 0.1], generator=lib.Generator().manual_seed(0))
    ],
    "split_tenths": lambda lib: [
        len(s) for s in _data(lib).random_split(range(13), [0.1] * 10, generator=lib.Generator().manual_seed(0))
    ],
    "split_float_sum_above_one": lambda lib: _data(lib).random_split(range(10), [0.6, 0.3, 0.1 + 1e-15]),
    "split_negative_length": lambda lib: [
        list(s) for s in _data(lib).random_split(range(5), [-1, 6], generator=lib.Generator().manual_seed(1))
    ],
    "split_iterable_dataset": lambda lib: _data(lib).random_split(_iterable(lib, [1, 2]), [1, 1]),
    "concat_without_len": lambda lib: _data(lib).ConcatDataset([[1], _NoLenSampler()]),
    "split_tuple_lengths": lambda lib: [
        list(s) for s in _data(lib).random_split(range(5), (2, 3), generator=lib.Generator().manual_seed(1))
    ],
    "split_dataset_object": lambda lib: [
        [x.tolist() for x in s[0]]
        for s in _data(lib).random_split(_tensor_dataset(lib), [1, 3], generator=lib.Generator().manual_seed(2))
    ],
    "distributed_empty": lambda lib: list(_data(lib).DistributedSampler([], num_replicas=2, rank=0)),
    "distributed_zero_replicas": lambda lib: _data(lib).DistributedSampler(range(3), num_replicas=0, rank=0),
    "distributed_tiny_padding": lambda lib: [
        list(_data(lib).DistributedSampler(range(2), num_replicas=5, rank=r, shuffle=False)) for r in range(5)
    ],
    "distributed_attrs": lambda lib: (
        lambda s: [s.num_replicas, s.rank, s.epoch, s.shuffle, s.seed, s.drop_last, s.num_samples, s.total_size]
    )(_data(lib).DistributedSampler(range(7), num_replicas=3, rank=2, drop_last=True)),
    "single_timeout": lambda lib: iter(_data(lib).DataLoader([1], timeout=1)),
    "generator_not_a_generator": lambda lib: iter(_data(lib).DataLoader([1], generator=42)),
    "too_many_workers_warning": lambda lib: _data(lib).DataLoader([1], num_workers=64).num_workers,
    "worker_info_fields": lambda lib: [f.name for f in dataclasses.fields(_data(lib)._utils.worker.WorkerInfo)],
    "worker_info_frozen": lambda lib: setattr(
        _data(lib)._utils.worker.WorkerInfo(id=0, num_workers=1, seed=1, dataset=None), "id", 3
    ),
    "dataset_kind": lambda lib: [_data(lib)._DatasetKind.Map, _data(lib)._DatasetKind.Iterable],
}


@pytest.mark.parametrize("name", sorted(MORE_CASES))
def test_more_edges(name):
    _assert_parity(MORE_CASES[name], message_prefix=0 if name == "generator_not_a_generator" else None)


class _CustomError(Exception):
    def __init__(self, code, detail):
        super().__init__(code, detail)


class _Raising:
    def __init__(self, error):
        self.error = error

    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise self.error


@pytest.mark.parametrize("error", ["key", "custom"])
def test_worker_exception_types(error):
    """A KeyError keeps a readable multi-line message; an exception needing two arguments becomes a RuntimeError."""
    raised = {"key": KeyError("missing"), "custom": _CustomError(1, "x")}[error]

    def fn(lib):
        try:
            next(iter(_data(lib).DataLoader(_Raising(raised), num_workers=1)))
        except Exception as caught:  # noqa: BLE001 - comparing what the main process sees
            text = str(caught)
            return type(caught).__name__, text.splitlines()[0], "Original Traceback" in text, text.endswith("\n")

    _assert_parity(fn)


def test_in_order_false_delivers_every_batch():
    def fn(lib):
        loader = _data(lib).DataLoader(list(range(6)), batch_size=2, num_workers=2, in_order=False)
        return sorted(b.tolist() for b in loader)

    _assert_parity(fn)


def test_worker_init_fn_error():
    def fn(lib):
        def init(worker_id):
            raise ValueError(f"bad init {worker_id}")

        try:
            list(_data(lib).DataLoader(list(range(2)), num_workers=1, worker_init_fn=init))
        except ValueError as error:
            return str(error).splitlines()[0], "bad init 0" in str(error)

    _assert_parity(fn)


# ---------------------------------------------------------------- type parameters, NumPy subclasses, dtypes

GENERIC_CLASSES = [
    "Dataset", "IterableDataset", "Sampler", "DataLoader", "Subset", "TensorDataset", "ConcatDataset",
    "ChainDataset", "StackDataset", "RandomSampler", "BatchSampler", "DistributedSampler",
]


@pytest.mark.parametrize("name", GENERIC_CLASSES)
def test_classes_subscriptable_as_torch(name):
    """`DataLoader[Tensor]` in an annotation evaluated at run time: torch's classes are Generic (some are not)."""

    def fn(lib):
        cls = getattr(_data(lib), name)
        try:
            return repr(cls[int]).replace(lib.__name__ + ".", "")
        except TypeError as error:
            return "TypeError", str(error).replace(lib.__name__ + ".", "")

    _assert_parity(fn)


def test_user_iterable_dataset_subscriptable():
    def fn(lib):
        class Stream(_data(lib).IterableDataset):
            def __iter__(self):
                return iter([])

        return type(Stream[int]).__name__

    _assert_parity(fn)


NUMPY_SUBCLASS_CASES = {
    "collate_matrix": lambda lib: _data(lib).default_collate([np.matrix([[1.0, 2.0]])] * 2),
    "convert_matrix": lambda lib: _data(lib).default_convert(np.matrix([[1.0, 2.0]])),
    "collate_masked": lambda lib: _data(lib).default_collate([np.ma.array([1.0, 2.0], mask=[0, 1])] * 2),
    "convert_masked": lambda lib: _data(lib).default_convert(np.ma.array([1.0, 2.0], mask=[0, 1])),
    "matrix_times_tensor": lambda lib: lib.from_numpy(np.matrix([[1.0, 2.0]])) * lib.ones(1, 2, dtype=lib.float64),
}


@pytest.mark.parametrize("name", sorted(NUMPY_SUBCLASS_CASES))
def test_numpy_subclasses(name):
    """torch.from_numpy keeps a subclass's memory, not its semantics (np.matrix's `*` is a matrix product)."""
    _assert_parity(NUMPY_SUBCLASS_CASES[name])


@pytest.mark.parametrize("np_dtype", [np.uint16, np.uint32, np.uint64])
def test_collate_unsigned_numpy_arrays(np_dtype):
    _assert_parity(lambda lib: _data(lib).default_collate([np.array([1, 2], np_dtype)] * 2))


# ---------------------------------------------------------------- workers: global RNG, persistence, collate


def test_workers_shuffle_under_global_seed_and_rng_after():
    """Base seed first, then the sampler's own seed, both from the global generator; the stream after matches."""

    def fn(lib):
        lib.manual_seed(3)
        loader = _data(lib).DataLoader(list(range(8)), batch_size=3, shuffle=True, num_workers=2)
        return list(loader), lib.rand(2)

    _assert_parity(fn)


def test_persistent_workers_reuse_iterator_and_draw_base_seed_once():
    def fn(lib):
        lib.manual_seed(4)
        loader = _data(lib).DataLoader(
            _iterable(lib, range(5)), batch_size=2, num_workers=2, persistent_workers=True, drop_last=True
        )
        first = iter(loader)
        epochs = [list(first), list(loader)]
        return epochs, iter(loader) is first, lib.rand(2)

    _assert_parity(fn)


def test_worker_python_random_and_worker_info_extras():
    def fn(lib):
        class Report(_data(lib).Dataset):
            def __len__(self):
                return 1

            def __getitem__(self, i):
                import random

                info = _data(lib).get_worker_info()
                return [random.random(), info.rng, info.worker_method, type(info.seed).__name__, i]

        return list(_data(lib).DataLoader(Report(), batch_size=None, num_workers=1,
                                          generator=lib.Generator().manual_seed(77)))

    _assert_parity(fn)


def test_worker_batches_of_many_types():
    """What a worker sends back: strings, bytes, dicts, namedtuples, numpy leftovers and every tensor dtype."""

    def fn(lib):
        def sample(i):
            return {
                "name": f"s{i}", "raw": b"x", "point": Point(i, float(i)), "objects": np.array([i], dtype=object),
                "half": lib.tensor([i], dtype=lib.float16), "flag": lib.tensor(i % 2 == 0),
                "complex": lib.tensor([1j * i]), "empty": lib.zeros(0, 3),
            }

        return list(_data(lib).DataLoader([sample(i) for i in range(3)], batch_size=2, num_workers=1,
                                          collate_fn=lambda b: _data(lib).default_collate(
                                              [{k: v for k, v in s.items() if k != "objects"} for s in b]
                                          ) | {"objects": [s["objects"] for s in b]}))

    _assert_parity(fn)


def test_worker_collate_of_tensors_requiring_grad_fails_as_torch():
    """torch's worker stacks into shared memory with out=, which autograd refuses; ember refuses to send them."""

    def fn(lib):
        try:
            list(_data(lib).DataLoader([lib.ones(2, requires_grad=True)] * 2, batch_size=2, num_workers=1))
        except RuntimeError as error:
            return str(error).splitlines()[0]

    _assert_parity(fn)


def test_torch_docs_worker_init_fn_splitting_example():
    """The IterableDataset example from torch.utils.data's docs: worker_init_fn narrows each copy's range."""

    def fn(lib):
        class MyIterableDataset(_data(lib).IterableDataset):
            def __init__(self, start, end):
                self.start, self.end = start, end

            def __iter__(self):
                return iter(range(self.start, self.end))

        def worker_init_fn(worker_id):
            info = _data(lib).get_worker_info()
            dataset = info.dataset
            overall_start, overall_end = dataset.start, dataset.end
            per_worker = int(np.ceil((overall_end - overall_start) / float(info.num_workers)))
            dataset.start = overall_start + info.id * per_worker
            dataset.end = min(dataset.start + per_worker, overall_end)

        dataset = MyIterableDataset(3, 7)
        return [
            list(_data(lib).DataLoader(dataset, num_workers=0)),
            list(_data(lib).DataLoader(dataset, num_workers=2, worker_init_fn=worker_init_fn)),
        ]

    _assert_parity(fn)


def test_multiprocessing_context_object():
    import multiprocessing

    def fn(lib):
        context = multiprocessing.get_context("fork")
        loader = _data(lib).DataLoader(list(range(3)), batch_size=2, num_workers=1, multiprocessing_context=context)
        return list(loader), loader.multiprocessing_context is context

    _assert_parity(fn)


# ---------------------------------------------------------------- single-process RNG and dtype details


def test_shuffled_epoch_consumes_loader_generator_as_torch():
    def fn(lib):
        generator = lib.Generator().manual_seed(8)
        batches = list(_data(lib).DataLoader(list(range(6)), batch_size=4, shuffle=True, generator=generator))
        return batches, lib.randint(0, 100, (3,), generator=generator)

    _assert_parity(fn)


def test_loader_generator_with_unseeded_sampler():
    """The loader's generator seeds only the workers; a RandomSampler without one draws from the global stream."""

    def fn(lib):
        lib.manual_seed(12)
        sampler = _data(lib).RandomSampler(range(6), replacement=True)
        loader = _data(lib).DataLoader(list(range(6)), sampler=sampler, generator=lib.Generator().manual_seed(0))
        return list(loader), lib.rand(1)

    _assert_parity(fn)


@pytest.mark.parametrize("batch", [[1, 2.5], [2.5, 1], [True, 1.5], [np.float32(1), 2.0]])
def test_collate_follows_default_dtype(batch):
    """An int-led batch with floats is built by torch.tensor, so it follows the default dtype; floats stay float64."""

    def fn(lib):
        previous = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            return _data(lib).default_collate(batch)
        finally:
            lib.set_default_dtype(previous)

    _assert_parity(fn)


def test_map_dataset_stop_iteration_ends_epoch():
    """A StopIteration from __getitem__ ends a single-process epoch early, silently (torch's fetch loop)."""

    class Stopping:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            if i == 3:
                raise StopIteration
            return i

    _assert_parity(lambda lib: list(_data(lib).DataLoader(Stopping(), batch_size=2)))


def test_iterable_dataset_iter_returning_non_iterator():
    def fn(lib):
        class Broken(_data(lib).IterableDataset):
            def __iter__(self):
                return 3

        return list(_data(lib).DataLoader(Broken()))

    _assert_parity(fn)


@pytest.mark.parametrize("stop_after", [1, 3])
def test_stateful_iterable_resume_with_workers_matches_torch(stop_after):
    """A sharded IterableDataset (no state_dict) resumed mid-epoch continues in torch's worker-interleaved order."""
    expected = [b.tolist() for b in torch.utils.data.DataLoader(_iterable(torch, range(9)), batch_size=2,
                                                                  num_workers=2)]

    def make():
        return ember.utils.data.StatefulDataLoader(_iterable(ember, range(9)), batch_size=2, num_workers=2)

    loader = make()
    iterator = iter(loader)
    got = [next(iterator).tolist() for _ in range(stop_after)]
    state = loader.state_dict()
    del iterator
    resumed = make()
    resumed.load_state_dict(state)
    got += [b.tolist() for b in resumed]
    assert got == expected


def test_collated_batch_of_permuted_images_is_contiguous_as_torch():
    def fn(lib):
        images = [np.zeros((4, 5, 3), np.float32).transpose(2, 0, 1) for _ in range(2)]
        batch = next(iter(_data(lib).DataLoader(images, batch_size=2)))
        return batch.stride(), batch.view(2, -1).shape

    _assert_parity(fn)


def test_sparse_batches_rejected():
    """torch's collate_tensor_fn refuses sparse tensors with a RuntimeError naming the custom-collate way out."""
    _assert_parity(lambda lib: _data(lib).default_collate([lib.eye(2).to_sparse()] * 2))
