"""Operator schemas for custom ops: inferred from type hints (torch.library.infer_schema) or given as text.

A schema names each argument, its type in torch's schema language ("Tensor",
"SymInt", "float[]", "Tensor?") and whether the op writes into it
("Tensor(a0!) x"); ember keeps what calling and checking an op needs from it
(`Schema`): the argument names, which hold tensors, which are mutated.
"""

from __future__ import annotations

import collections.abc
import inspect
import numbers
import re
import types
import typing
from dataclasses import dataclass

from .. import _device, _dtype
from .._tensor import Tensor

__all__ = ["infer_schema", "Schema", "parse_schema"]

_BASE = ((Tensor, "Tensor"), (bool, "bool"), (int, "SymInt"), (float, "float"), (str, "str"),
         (numbers.Number, "Scalar"), (_dtype.dtype, "ScalarType"), (_device.device, "Device"))
_LISTABLE = {"Tensor", "SymInt", "float", "bool", "Scalar"}  # X[] exists
_OPTIONAL_LIST = {"SymInt", "float", "bool"}  # X[]? exists
_VALID = ("Tensor, int, float, bool, str, numbers.Number, dtype, device; Optional[...] of each; list/Sequence of "
          "Tensor, Optional[Tensor], int, float, bool, Number; Optional lists of int, float, bool")
_RETURNS = {"Tensor", "Tensor[]", "SymInt", "float", "bool", "Scalar"}


def _union_args(annotation) -> tuple | None:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return None


def _base(annotation) -> str | None:
    if annotation == typing.Union[int, float, bool] or annotation == typing.Union[int, float]:
        return "Scalar"  # torch.types.Number
    for python_type, schema_type in _BASE:
        if annotation is python_type:
            return schema_type
    return None


def _is_sequence(annotation) -> bool:
    return typing.get_origin(annotation) in (list, collections.abc.Sequence)


def _schema_type(annotation) -> str | None:
    """torch's schema type of a parameter annotation, or None when torch does not support it."""
    base = _base(annotation)
    if base is not None:
        return base
    union = _union_args(annotation)
    if union is not None:
        others = [a for a in union if a is not type(None)]
        if len(others) == 1 and len(union) == 2:
            inner = others[0]
            base = _base(inner)
            if base is not None:
                return base + "?"
            if _is_sequence(inner):
                element = _base(typing.get_args(inner)[0]) if typing.get_args(inner) else None
                if element in _OPTIONAL_LIST:
                    return element + "[]?"
        return None
    if _is_sequence(annotation) and typing.get_args(annotation):
        element = typing.get_args(annotation)[0]
        base = _base(element)
        if base in _LISTABLE:
            return base + "[]"
        if _union_args(element) is not None and _schema_type(element) == "Tensor?":
            return "Tensor?[]"
    return None


def _return_type(annotation, error) -> str:
    if annotation is None or annotation is type(None):
        return "()"
    if annotation is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    if typing.get_origin(annotation) is tuple:
        parts = []
        for arg in typing.get_args(annotation):
            part = _schema_type(arg)
            if part not in _RETURNS:
                error(f"Return has unsupported type {annotation}. The valid types are: {sorted(_RETURNS)}.")
            parts.append(part)
        text = ", ".join(parts)
        return f"(({text}))" if len(parts) == 1 else f"({text})"
    result = _schema_type(annotation)
    if result not in _RETURNS:
        error(f"Return has unsupported type {annotation}. The valid types are: {sorted(_RETURNS)}.")
    return result


def _default_text(name: str, default, error) -> str:
    if default is None or isinstance(default, (int, float, bool)):
        return str(default)
    if isinstance(default, (str, _device.device)):
        return f'"{default}"'
    if isinstance(default, _dtype.dtype):
        return str(default).rsplit(".", 1)[-1]
    error(f"Parameter {name} has an unsupported default value type {type(default)}. Please file an issue on "
          "GitHub so we can prioritize this.")
    return ""


def infer_schema(prototype_function: typing.Callable, /, *, mutates_args, op_name: str | None = None,
                 tags=()) -> str:
    """The schema of a function from its type hints: "(Tensor x, SymInt n=3) -> Tensor" (torch's rules)."""
    signature = inspect.signature(prototype_function)
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def error(what: str):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {signature})")

    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:  # unresolvable names: fall back to the raw annotations, reported below
        hints = {}
    params, seen, keyword_only = [], set(), False
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            params.append("*")
            keyword_only = True
        if param.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        annotation = hints.get(name, param.annotation)
        if isinstance(annotation, str):
            error(f"Unsupported type annotation {annotation}. It is not a type.")
        schema_type = _schema_type(annotation)
        if schema_type is None:
            if typing.get_origin(annotation) is tuple:
                error(f"Parameter {name} has unsupported type {param.annotation}. We do not support Tuple inputs in "
                      f"schema. As a workaround, please try to use List instead. The valid types are: {_VALID}.")
            error(f"Parameter {name} has unsupported type {param.annotation}. The valid types are: {_VALID}.")
        if type(mutates_args) is str:
            if mutates_args != "unknown":
                raise ValueError("mutates_args must either be a sequence of the names of the arguments that are "
                                 "mutated or the string 'unknown'. ")
            if schema_type.startswith("Tensor"):
                schema_type = f"Tensor(a{index}!){schema_type[len('Tensor'):]}"
        elif name in mutates_args:
            if not schema_type.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                      "mutated")
            schema_type = f"Tensor(a{index}!){schema_type[len('Tensor'):]}"
        seen.add(name)
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            params.append(f"{schema_type} {name}={_default_text(name, param.default, error)}")
    if mutates_args != "unknown":
        missing = set(mutates_args) - seen
        if missing:
            error(f"{missing} in mutates_args were not found in the custom op's signature. mutates_args should "
                  "contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                  "don't know.")
    returns = _return_type(hints.get("return", signature.return_annotation), error)
    prefix = op_name or ""
    return f"{prefix}({', '.join(params)}) -> {returns}"


@dataclass(frozen=True)
class Argument:
    """One schema argument: its name, schema type (without the alias annotation), and whether it is written."""

    name: str
    type: str
    mutable: bool
    keyword_only: bool
    default: str | None = None  # the default's text in the schema ("3", "None", '"a"'), None when required

    def default_value(self):
        """The default as a Python value (numbers, None, True/False, strings; dtypes and devices by name)."""
        text = self.default
        if text in ("None", "True", "False"):
            return {"None": None, "True": True, "False": False}[text]
        if text[:1] in "\"'":
            return text[1:-1]
        for convert in (int, float):
            try:
                return convert(text)
            except ValueError:
                pass
        from .. import _dtype

        return getattr(_dtype, text, text)

    @property
    def holds_tensors(self) -> bool:
        return self.type.startswith("Tensor")


@dataclass(frozen=True)
class Schema:
    """A parsed schema: "(Tensor x, Tensor(a1!) out, *, bool flag=False) -> (Tensor, Tensor)"."""

    text: str
    arguments: tuple[Argument, ...]
    returns: str

    @property
    def mutable_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arguments if a.mutable)


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


_ARGUMENT = re.compile(r"^(?P<type>[A-Za-z]+(?:\([a-z0-9]+!?\))?[\[\]?]*)\s+(?P<name>\w+)(?:\s*=\s*(?P<default>.+))?$")


def parse_schema(text: str) -> Schema:
    """The arguments and return of a schema string (with or without the op name before "(")."""
    match = re.match(r"^\s*[\w:.]*\s*\((?P<args>.*)\)\s*->\s*(?P<returns>.+?)\s*$", text, re.DOTALL)
    if match is None:
        raise RuntimeError(f"Expected a schema like '(Tensor x) -> Tensor', got: {text!r}")
    arguments, keyword_only = [], False
    for part in _split_top_level(match["args"]):
        if part == "*":
            keyword_only = True
            continue
        found = _ARGUMENT.match(part)
        if found is None:
            raise RuntimeError(f"Could not parse the schema argument {part!r} in {text!r}")
        schema_type = found["type"]
        mutable = "!" in schema_type
        plain = re.sub(r"\([a-z0-9]+!?\)", "", schema_type)
        arguments.append(Argument(found["name"], plain, mutable, keyword_only, found["default"]))
    return Schema(text, tuple(arguments), match["returns"])
