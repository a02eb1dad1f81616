"""Op parameters, literal arguments and argument/result structures <-> JSON, with no pickle.

JSON has numbers, strings, booleans, null, lists and objects; everything else a graph holds is written as
an object with one `$`-key naming its kind, so decoding is a table lookup and never runs stored code:

    {"$tuple": [...]}  {"$dict": [[key, value], ...]}  {"$slice": [start, stop, step]}  {"$ellipsis": 0}
    {"$float": "inf" | "-inf" | "nan"}  {"$complex": [re, im]}  {"$dtype": "float32"}  {"$device": "cpu"}
    {"$generator": "default"}  {"$ndarray": {"dtype", "shape", "data"}}  {"$namedtuple": name, "items": [...]}
    {"$value": name} (a graph value)  {"$array_arg": [position, shape(, "bool")]} (an index read from a graph value)
    {"$batch": m} (m times the symbolic batch size)  {"$input": name} (a user input, in the input spec)

Lists stay JSON lists.  Named tuples are limited to ember's own (torch.return_types, IndexKey), found by
name in a fixed table.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _dtype as dt
from .. import return_types
from .._compile.graph import Value
from .._compile.symbolic import Batch
from .._compile.tracer import ArrayArg
from .._device import as_device, device
from .._ops._index_keys import IndexKey
from ._errors import Unsupported


class Ref:
    """A reference to a named graph value inside decoded args, params and output structures."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, Ref) and other.name == self.name

    def __hash__(self) -> int:
        return hash((Ref, self.name))


class InputRef(Ref):
    """A user input's place in the input spec (decoded `$input`)."""

    __slots__ = ()


def _named_tuples() -> dict:
    table = {"IndexKey": IndexKey}
    for name in return_types.__all__:
        table[f"return_types.{name}"] = getattr(return_types, name)
    return table


_NAMED_TUPLES = _named_tuples()
_NAMED_TUPLE_NAMES = {cls: name for name, cls in _NAMED_TUPLES.items()}
_ARRAY_KINDS = "biuf"  # bool, signed, unsigned, float arrays: exact as JSON numbers


def encode(value, where: str, names=None):
    """`value` as JSON-able data.  `names(Value) -> str` names graph values; `where` goes into errors."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Value):
        if names is None:
            raise Unsupported(f"{where}: a tensor where a constant was expected")
        return {"$value": names(value)}
    if isinstance(value, Batch):
        return {"$batch": value.m}
    if isinstance(value, ArrayArg):
        return {"$array_arg": [value.position, encode(value.shape, where)] + (["bool"] if value.boolean else [])}
    if isinstance(value, tuple):
        items = [encode(item, where, names) for item in value]
        if hasattr(value, "_fields"):
            name = _NAMED_TUPLE_NAMES.get(type(value))
            if name is None:
                raise Unsupported(f"{where}: the named tuple {type(value).__qualname__} is not one of ember's")
            return {"$namedtuple": name, "items": items}
        return {"$tuple": items}
    if isinstance(value, list):
        return [encode(item, where, names) for item in value]
    if isinstance(value, dict):
        return {"$dict": [[encode(k, where), encode(v, where, names)] for k, v in value.items()]}
    return _encode_object(value, where)


def _encode_object(value, where: str):
    """Leaves that are neither JSON nor containers: slices, dtypes, devices, arrays..."""
    if isinstance(value, slice):
        return {"$slice": [encode(value.start, where), encode(value.stop, where), encode(value.step, where)]}
    if value is Ellipsis:
        return {"$ellipsis": 0}
    if isinstance(value, complex):
        return {"$complex": [encode(value.real, where), encode(value.imag, where)]}
    if isinstance(value, dt.dtype):
        return {"$dtype": value.name}
    if isinstance(value, device):
        return {"$device": str(value)}
    if isinstance(value, np.ndarray) and value.dtype.kind in _ARRAY_KINDS:
        return {"$ndarray": {"dtype": value.dtype.str, "shape": list(value.shape), "data": value.ravel().tolist()}}
    from .._ops.random import default_generator

    if value is default_generator:
        return {"$generator": "default"}
    raise Unsupported(f"{where}: a value of type {type(value).__name__} ({value!r:.60}) cannot be saved in the "
                      "exported program")


def decode(data):
    """The inverse of `encode`: `$value` becomes a Ref, `$input` an InputRef, `$array_arg` an ArrayArg."""
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 2 and "$namedtuple" in data:
        cls = _NAMED_TUPLES.get(data["$namedtuple"])
        if cls is None:
            raise ValueError(f"ember.export: unknown named tuple {data['$namedtuple']!r}")
        return cls(*[decode(item) for item in data["items"]])
    if len(data) != 1:
        raise ValueError(f"ember.export: malformed program data {str(data)[:80]}")
    (tag, body), = data.items()
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise ValueError(f"ember.export: unknown tag {tag!r} in program data")
    return decoder(body)


def _decode_array(body):
    array = np.array(body["data"], dtype=np.dtype(body["dtype"]))
    return array.reshape(body["shape"])


def _decode_generator(body):
    from .._ops.random import default_generator

    if body != "default":
        raise ValueError(f"ember.export: unknown generator {body!r}")
    return default_generator


_DECODERS = {
    "$tuple": lambda body: tuple(decode(item) for item in body),
    "$dict": lambda body: {decode(key): decode(value) for key, value in body},
    "$float": lambda body: float(body),
    "$complex": lambda body: complex(decode(body[0]), decode(body[1])),
    "$slice": lambda body: slice(*[decode(item) for item in body]),
    "$ellipsis": lambda body: Ellipsis,
    "$dtype": lambda body: dt._dtype_by_name(body),
    "$device": lambda body: as_device(body),
    "$generator": _decode_generator,
    "$ndarray": _decode_array,
    "$value": lambda body: Ref(body),
    "$input": lambda body: InputRef(body),
    "$batch": lambda body: Batch(int(body)),
    "$array_arg": lambda body: ArrayArg(int(body[0]), decode(body[1]), "", boolean=body[2:] == ["bool"]),
}


def values_in(structure):
    """Every Ref in a decoded structure (tuples, lists, dicts, named tuples)."""
    if isinstance(structure, Ref):
        yield structure
    elif isinstance(structure, (tuple, list)):
        for item in structure:
            yield from values_in(item)
    elif isinstance(structure, dict):
        for item in structure.values():
            yield from values_in(item)


def substitute(structure, lookup):
    """The decoded structure with every Ref replaced by lookup(ref) (containers rebuilt)."""
    if isinstance(structure, Ref):
        return lookup(structure)
    if isinstance(structure, tuple):
        items = [substitute(item, lookup) for item in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, list):
        return [substitute(item, lookup) for item in structure]
    if isinstance(structure, dict):
        return {key: substitute(item, lookup) for key, item in structure.items()}
    return structure


def dtype_abbreviation(dtype) -> str:
    """torch's short dtype names in printed graphs: f32, i64, b8..."""
    return _ABBREVIATIONS.get(dtype.name, dtype.name)


_ABBREVIATIONS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                  "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8", "complex64": "c64",
                  "complex128": "c128"}
