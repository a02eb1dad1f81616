"""torch.utils._pytree: flatten nested containers to a list of leaves and a TreeSpec, and rebuild them.

Libraries written against torch (optimizers, FSDP-style wrappers, export, func transforms, data collation)
walk arbitrary nests of tuples, lists, dicts and namedtuples with these functions, so ember carries the same
registry, the same TreeSpec (repr, equality, hash, JSON form) and the same errors as torch's pure-Python
pytree.  The node types are tuple, list, dict (insertion order kept), namedtuple, OrderedDict, defaultdict and
deque; everything else, `None` and ember Tensors included, is a leaf.  Users add node types with
`register_pytree_node` / `register_dataclass`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
import threading
import types
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Any, NamedTuple, Protocol

__all__ = [
    "PyTree",
    "Context",
    "FlattenFn",
    "UnflattenFn",
    "DumpableContext",
    "ToDumpableContextFn",
    "FromDumpableContextFn",
    "PyTreeSpec",
    "TreeSpec",
    "LeafSpec",
    "keystr",
    "key_get",
    "register_pytree_node",
    "register_dataclass",
    "tree_is_leaf",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_unflatten",
    "tree_iter",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_structure",
    "tree_map",
    "tree_map_with_path",
    "tree_map_",
    "tree_map_only",
    "tree_map_only_",
    "tree_all",
    "tree_any",
    "tree_all_only",
    "tree_any_only",
    "treespec_dumps",
    "treespec_loads",
    "treespec_pprint",
    "is_namedtuple",
    "is_namedtuple_class",
    "is_namedtuple_instance",
]

Context = Any
PyTree = Any
FlattenFn = Callable[[PyTree], "tuple[list[Any], Context]"]
UnflattenFn = Callable[[Iterable[Any], Context], PyTree]
DumpableContext = Any
ToDumpableContextFn = Callable[[Context], DumpableContext]
FromDumpableContextFn = Callable[[DumpableContext], Context]
FlattenWithKeysFn = Callable[[PyTree], "tuple[list[tuple[Any, Any]], Any]"]
IsLeafFn = Callable[[PyTree], bool] | None

DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL = 1
NO_SERIALIZED_TYPE_NAME_FOUND = "NO_SERIALIZED_TYPE_NAME_FOUND"


class KeyEntry(Protocol):
    """One step of a key path: printable, hashable, and able to fetch its child from a parent."""

    def __hash__(self) -> int: ...

    def __eq__(self, other: object) -> bool: ...

    def __str__(self) -> str: ...

    def get(self, parent: Any) -> Any: ...


KeyPath = tuple[KeyEntry, ...]


# --- the registry -------------------------------------------------------------------------------------------


class NodeDef(NamedTuple):
    """How to take one container type apart and put it back together."""

    type: type
    flatten_fn: FlattenFn
    unflatten_fn: UnflattenFn
    flatten_with_keys_fn: FlattenWithKeysFn | None


class _SerializeNodeDef(NamedTuple):
    """How a container type's TreeSpec is named and its context written in `treespec_dumps`' JSON."""

    typ: type
    serialized_type_name: str
    to_dumpable_context: ToDumpableContextFn | None
    from_dumpable_context: FromDumpableContextFn | None


_NODE_REGISTRY_LOCK = threading.RLock()
SUPPORTED_NODES: dict[type, NodeDef] = {}
SUPPORTED_SERIALIZED_TYPES: dict[type, _SerializeNodeDef] = {}
SERIALIZED_TYPE_TO_PYTHON_TYPE: dict[str, type] = {}


def _private_register_pytree_node(
    cls: type,
    flatten_fn: FlattenFn,
    unflatten_fn: UnflattenFn,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: ToDumpableContextFn | None = None,
    from_dumpable_context: FromDumpableContextFn | None = None,
    flatten_with_keys_fn: FlattenWithKeysFn | None = None,
) -> None:
    """Register (or, with a warning, re-register) a node type; the public entry points check first."""
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            warnings.warn(f"{cls} is already registered as pytree node. Overwriting the previous registration.",
                          stacklevel=2)
        SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)
        if (to_dumpable_context is None) ^ (from_dumpable_context is None):
            raise ValueError(f"Both to_dumpable_context and from_dumpable_context for {cls} must "
                             "be None or registered.")
        if serialized_type_name is None:
            serialized_type_name = NO_SERIALIZED_TYPE_NAME_FOUND
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, serialized_type_name, to_dumpable_context,
                                                            from_dumpable_context)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[serialized_type_name] = cls


def register_pytree_node(
    cls: type,
    flatten_fn: FlattenFn,
    unflatten_fn: UnflattenFn,
    *,
    serialized_type_name: str | None = None,
    to_dumpable_context: ToDumpableContextFn | None = None,
    from_dumpable_context: FromDumpableContextFn | None = None,
    flatten_with_keys_fn: FlattenWithKeysFn | None = None,
) -> None:
    """Make `cls` a container: `flatten_fn(obj) -> (children, context)`, `unflatten_fn(children, context) -> obj`.

    `flatten_with_keys_fn(obj) -> ([(key_entry, child), ...], context)` enables the `*_with_path` functions;
    `serialized_type_name` and the dumpable-context pair enable `treespec_dumps` / `treespec_loads`.
    Registering a type twice is a ValueError, as in torch.
    """
    with _NODE_REGISTRY_LOCK:
        if cls in SUPPORTED_NODES:
            raise ValueError(f"{cls} is already registered as pytree node.")
    _private_register_pytree_node(cls, flatten_fn, unflatten_fn, serialized_type_name=serialized_type_name,
                                  to_dumpable_context=to_dumpable_context,
                                  from_dumpable_context=from_dumpable_context,
                                  flatten_with_keys_fn=flatten_with_keys_fn)


def _deregister_pytree_node(cls: type) -> None:
    """Undo a registration (torch keeps this private too; tests use it to clean up)."""
    with _NODE_REGISTRY_LOCK:
        del SUPPORTED_NODES[cls]
        node_def = SUPPORTED_SERIALIZED_TYPES.pop(cls)
        SERIALIZED_TYPE_TO_PYTHON_TYPE.pop(node_def.serialized_type_name, None)


def register_dataclass(
    cls: type,
    *,
    field_names: list[str] | None = None,
    drop_field_names: list[str] | None = None,
    serialized_type_name: str | None = None,
) -> None:
    """Register a dataclass-like type whose children are the named fields; `None`-valued fields go in the context."""
    drop_field_names = drop_field_names or []
    if not dataclasses.is_dataclass(cls):
        if field_names is None:
            raise ValueError("field_names must be specified with a list of all fields used to "
                             f"initialize {cls}, as it is not a dataclass.")
    elif field_names is None:
        field_names = [f.name for f in dataclasses.fields(cls) if f.init]
    else:
        init_fields = {f.name for f in dataclasses.fields(cls) if f.init} - set(drop_field_names)
        if init_fields != set(field_names):
            message = "field_names does not include all dataclass fields.\n"
            if missing := init_fields - set(field_names):
                message += (f"Missing fields in `field_names`: {missing}. If you want to include these fields in "
                            "the pytree, please add them to `field_names`, otherwise please add them to "
                            "`drop_field_names`.\n")
            if unexpected := set(field_names) - init_fields:
                message += (f"Unexpected fields in `field_names`: {unexpected}. Please remove these fields, or "
                            "add them to `drop_field_names`.\n")
            raise ValueError(message)
    names = list(field_names)

    def flatten(obj: Any) -> tuple[list[Any], Context]:
        present = [name for name in names if getattr(obj, name) is not None]
        absent = [name for name in names if getattr(obj, name) is None]
        return [getattr(obj, name) for name in present], [present, absent]

    def unflatten(values: Iterable[Any], context: Context) -> Any:
        present, absent = context
        return cls(**dict(zip(present, values, strict=True)), **dict.fromkeys(absent))

    def flatten_with_keys(obj: Any) -> tuple[list[tuple[KeyEntry, Any]], Context]:
        values, (present, _) = flatten(obj)
        return [(GetAttrKey(name), value) for name, value in zip(present, values, strict=True)], present

    _private_register_pytree_node(cls, flatten, unflatten, serialized_type_name=serialized_type_name,
                                  flatten_with_keys_fn=flatten_with_keys)


# --- key entries --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A child reached by position: prints as `[0]`."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A child reached by key: prints as `['a']`."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """A child reached by attribute (namedtuple field, dataclass field): prints as `.name`."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        return getattr(obj, self.name)


def keystr(kp: KeyPath) -> str:
    """A key path as text, e.g. `['a'][0].x`."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: KeyPath) -> Any:
    """The value found by following key path `kp` from `obj`."""
    for k in kp:
        obj = k.get(obj)
    return obj


# --- namedtuples --------------------------------------------------------------------------------------------


def is_namedtuple_class(cls: type) -> bool:
    """Whether `cls` is a namedtuple class (a tuple subclass with `_fields`, `_make` and `_asdict`)."""
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(field) is str for field in cls._fields)
            and callable(getattr(cls, "_make", None)) and callable(getattr(cls, "_asdict", None)))


def is_namedtuple(obj: object) -> bool:
    """Whether `obj` is a namedtuple class or instance."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj: object) -> bool:
    """Whether `obj` is a namedtuple instance."""
    return is_namedtuple_class(type(obj))


# --- the built-in containers --------------------------------------------------------------------------------


def _seq_keys(values: list[Any]) -> list[tuple[KeyEntry, Any]]:
    return [(SequenceKey(i), v) for i, v in enumerate(values)]


def _map_keys(keys: list[Any], values: list[Any]) -> list[tuple[KeyEntry, Any]]:
    return [(MappingKey(k), v) for k, v in zip(keys, values, strict=True)]


def _namedtuple_serialize(context: Context) -> DumpableContext:
    node_def = SUPPORTED_SERIALIZED_TYPES.get(context)
    if node_def is None or node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        reason = "didn't register" if node_def is None else "couldn't find"
        raise NotImplementedError(f"Can't serialize TreeSpec of namedtuple class {context} because we {reason} a "
                                  "serializated_type_name. Please register using `_register_namedtuple`.")
    return node_def.serialized_type_name


def _namedtuple_deserialize(dumpable_context: DumpableContext) -> Context:
    if dumpable_context not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Can't deserialize TreeSpec of namedtuple class {dumpable_context} "
                                  "because we couldn't find a serializated name.")
    return SERIALIZED_TYPE_TO_PYTHON_TYPE[dumpable_context]


def _register_namedtuple(cls: type, *, serialized_type_name: str) -> None:
    """Name a namedtuple class so TreeSpecs holding it can be dumped and loaded."""
    with _NODE_REGISTRY_LOCK:
        SUPPORTED_SERIALIZED_TYPES[cls] = _SerializeNodeDef(cls, serialized_type_name, None, None)
        SERIALIZED_TYPE_TO_PYTHON_TYPE[serialized_type_name] = cls


def _defaultdict_serialize(context: Context) -> DumpableContext:
    default_factory, dict_context = context
    return {"default_factory_module": default_factory.__module__,
            "default_factory_name": default_factory.__qualname__, "dict_context": dict_context}


def _defaultdict_deserialize(dumpable_context: DumpableContext) -> Context:
    module = importlib.import_module(dumpable_context["default_factory_module"])
    return [getattr(module, dumpable_context["default_factory_name"]), dumpable_context["dict_context"]]


_private_register_pytree_node(
    tuple, lambda d: (list(d), None), lambda values, context: tuple(values),
    serialized_type_name="builtins.tuple", flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), None))
_private_register_pytree_node(
    list, lambda d: (d, None), lambda values, context: list(values),
    serialized_type_name="builtins.list", flatten_with_keys_fn=lambda d: (_seq_keys(d), None))
_private_register_pytree_node(
    dict, lambda d: (list(d.values()), list(d.keys())),
    lambda values, context: dict(zip(context, values, strict=True)),
    serialized_type_name="builtins.dict",
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), list(d)))
_private_register_pytree_node(
    namedtuple, lambda d: (list(d), type(d)), lambda values, context: context(*values),
    serialized_type_name="collections.namedtuple", to_dumpable_context=_namedtuple_serialize,
    from_dumpable_context=_namedtuple_deserialize,
    flatten_with_keys_fn=lambda d: ([(GetAttrKey(f), v) for f, v in zip(d._fields, d, strict=True)], type(d)))
_private_register_pytree_node(
    OrderedDict, lambda d: (list(d.values()), list(d.keys())),
    lambda values, context: OrderedDict(zip(context, values, strict=True)),
    serialized_type_name="collections.OrderedDict",
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), list(d)))
_private_register_pytree_node(
    defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d.keys())]),
    lambda values, context: defaultdict(context[0], zip(context[1], values, strict=True)),
    serialized_type_name="collections.defaultdict", to_dumpable_context=_defaultdict_serialize,
    from_dumpable_context=_defaultdict_deserialize,
    flatten_with_keys_fn=lambda d: (_map_keys(list(d), list(d.values())), [d.default_factory, list(d)]))
_private_register_pytree_node(
    deque, lambda d: (list(d), d.maxlen), lambda values, context: deque(values, maxlen=context),
    serialized_type_name="collections.deque", flatten_with_keys_fn=lambda d: (_seq_keys(list(d)), d.maxlen))

STANDARD_DICT_TYPES: frozenset[type] = frozenset({dict, OrderedDict, defaultdict})
BUILTIN_TYPES: frozenset[type] = frozenset({tuple, list, dict, namedtuple, OrderedDict, defaultdict, deque})


def _get_node_type(tree: Any) -> Any:
    """The registry key for `tree`: every namedtuple class shares the `namedtuple` entry, as in torch."""
    node_type = type(tree)
    return namedtuple if is_namedtuple_class(node_type) else node_type


def tree_is_leaf(tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether `tree` is a leaf: `is_leaf(tree)` says so, or its type is not a registered container."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _get_node_type(tree) not in SUPPORTED_NODES


# --- TreeSpec -----------------------------------------------------------------------------------------------


class TreeSpec:
    """The structure of a pytree: the root's node type, its context (keys, namedtuple class...) and child specs.

    A leaf's spec has type `None` and prints as `*`.  Specs compare equal when types, contexts and children do,
    hash accordingly, and rebuild a tree from leaves with `unflatten`.
    """

    __slots__ = ("type", "_context", "_children", "num_nodes", "num_leaves", "num_children")

    def __init__(self, type: Any, context: Context, children_specs: list[TreeSpec]) -> None:
        if type is None:
            if context is not None:
                raise AssertionError("leaf node should not have a context")
            if len(children_specs) != 0:
                raise AssertionError("leaf node should not have children")
        self.type = type
        self._context = context
        self._children = children_specs
        self.num_nodes = 1 + sum(child.num_nodes for child in children_specs)
        self.num_leaves = 1 if type is None else sum(child.num_leaves for child in children_specs)
        self.num_children = len(children_specs)

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        text = f"TreeSpec({self.type.__name__}, {self._context}, ["
        if self.num_children > 0:
            indent += 2
            text += self._children[0].__repr__(indent)
            text += "," if self.num_children > 1 else ""
            text += ",".join("\n" + " " * indent + child.__repr__(indent) for child in self._children[1:])
        return text + "])"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, TreeSpec):
            return NotImplemented
        return (str(self.type) == str(other.type) and self._context == other._context
                and self._children == other._children)

    def __hash__(self) -> int:
        node_type = self.type
        if node_type is defaultdict:
            context = (self._context[0], tuple(self._context[1]))
        elif node_type in (dict, OrderedDict):
            context = tuple(self._context)
        elif node_type is None or node_type in BUILTIN_TYPES:
            context = self._context
        else:
            context = None  # a custom node's context may be unhashable; equal specs still hash equal
        return hash((node_type, context, tuple(self._children)))

    def __copy__(self) -> TreeSpec:
        return self

    def __deepcopy__(self, memo: dict) -> TreeSpec:
        return self  # specs are immutable

    def __reduce__(self):
        return (TreeSpec, (self.type, self._context, self._children))

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "num_children"):  # set last in __init__: frozen from then on
            raise dataclasses.FrozenInstanceError(f"cannot assign to field '{name}'")
        object.__setattr__(self, name, value)

    @property
    def context(self) -> Context:
        return self._context

    @property
    def children_specs(self) -> list[TreeSpec]:
        warnings.warn("`treespec.children_specs` is deprecated. Use `treespec.child(index)` to access a single "
                      "child, or `treespec.children()` to get all children.", FutureWarning, stacklevel=2)
        return self._children

    def is_leaf(self) -> bool:
        """Whether this spec is a single leaf."""
        return self.num_nodes == 1 and self.num_leaves == 1

    def children(self) -> list[TreeSpec]:
        """The child specs (a copy of the list)."""
        return self._children.copy()

    def child(self, index: int) -> TreeSpec:
        """The child spec at `index`."""
        return self._children[index]

    def flatten_up_to(self, tree: PyTree) -> list[PyTree]:
        """The subtrees of `tree` sitting where this spec's leaves are; `tree` must have this spec as a prefix."""
        subtrees: list[PyTree] = []
        self._flatten_up_to(tree, subtrees)
        return subtrees

    def _flatten_up_to(self, node: PyTree, subtrees: list[PyTree]) -> None:
        if self.is_leaf():
            subtrees.append(node)
            return
        node_type = _get_node_type(node)
        if self.type not in BUILTIN_TYPES:  # custom node types must match exactly
            if node_type != self.type:
                raise ValueError(f"Type mismatch; expected {self.type!r}, but got {node_type!r}.")
            children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
            if len(children) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(children)}.")
            if context != self._context:
                raise ValueError(f"Node context mismatch for custom node type {self.type!r}.")
        else:
            both_dicts = self.type in STANDARD_DICT_TYPES and node_type in STANDARD_DICT_TYPES
            if not both_dicts and node_type != self.type:
                raise ValueError(f"Node type mismatch; expected {self.type!r}, but got {node_type!r}.")
            if len(node) != self.num_children:
                raise ValueError(f"Node arity mismatch; expected {self.num_children}, but got {len(node)}.")
            if both_dicts:  # the dict kinds are interchangeable; keys are matched by name, not order
                expected = self._context if self.type is not defaultdict else self._context[1]
                got_keys, expected_keys = set(node), set(expected)
                if got_keys != expected_keys:
                    message = ""
                    if missing := expected_keys - got_keys:
                        message += f"; missing key(s): {missing}"
                    if extra := got_keys - expected_keys:
                        message += f"; extra key(s): {extra}"
                    raise ValueError(f"Node keys mismatch{message}.")
                children = [node[key] for key in expected]
            else:
                children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
                if node_type is not deque and context != self._context:  # a deque's maxlen may differ
                    raise ValueError(f"Node context mismatch for node type {self.type!r}; "
                                     f"expected {self._context!r}, but got {context!r}.")
        for child, spec in zip(children, self._children, strict=True):
            spec._flatten_up_to(child, subtrees)

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild the tree this spec describes, with `leaves` in flattening order."""
        if not isinstance(leaves, (list, tuple)):
            leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        if self.is_leaf():
            return leaves[0]
        children, start = [], 0
        for spec in self._children:
            children.append(spec.unflatten(leaves[start:start + spec.num_leaves]))
            start += spec.num_leaves
        return SUPPORTED_NODES[self.type].unflatten_fn(children, self._context)


PyTreeSpec = TreeSpec


class LeafSpec(TreeSpec):
    """The spec of a single leaf (deprecated in torch in favour of `treespec_leaf()` / `spec.is_leaf()`)."""

    __slots__ = ()

    def __init__(self) -> None:
        if type(self) is LeafSpec and _LEAF_SPEC_READY:
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use `isinstance(treespec, TreeSpec) and "
                          "treespec.is_leaf()` instead.", FutureWarning, stacklevel=2)
        super().__init__(None, None, [])

    def __repr__(self, indent: int = 0) -> str:
        return "*"

    def __reduce__(self):
        return (treespec_leaf, ())


_LEAF_SPEC_READY = False
_LEAF_SPEC = LeafSpec()  # every leaf shares one spec object
_LEAF_SPEC_READY = True


def treespec_leaf() -> TreeSpec:
    """The spec of a single leaf."""
    return _LEAF_SPEC


def treespec_tuple(iterable: Iterable[TreeSpec] = (), /) -> TreeSpec:
    """A tuple spec with the given child specs."""
    children = list(iterable)
    if any(not isinstance(child, TreeSpec) for child in children):
        raise ValueError(f"Expected a tuple of TreeSpec values, got: {children!r}.")
    return TreeSpec(tuple, None, children)


def treespec_dict(mapping: Mapping[Any, TreeSpec] | Iterable[tuple[Any, TreeSpec]] = (), /,
                  **kwargs: TreeSpec) -> TreeSpec:
    """A dict spec with the given keys and child specs."""
    dct = dict(mapping, **kwargs)
    if any(not isinstance(child, TreeSpec) for child in dct.values()):
        raise ValueError(f"Expected a dictionary of TreeSpec values, got: {dct!r}.")
    return TreeSpec(dict, list(dct.keys()), list(dct.values()))


# --- flatten, unflatten, map --------------------------------------------------------------------------------


def tree_flatten(tree: PyTree, is_leaf: IsLeafFn = None) -> tuple[list[Any], TreeSpec]:
    """The leaves of `tree` in order (depth first, containers' own order) and the TreeSpec to rebuild it."""
    leaves: list[Any] = []

    def walk(node: PyTree) -> TreeSpec:
        if tree_is_leaf(node, is_leaf=is_leaf):
            leaves.append(node)
            return _LEAF_SPEC
        node_type = _get_node_type(node)
        children, context = SUPPORTED_NODES[node_type].flatten_fn(node)
        return TreeSpec(node_type, context, [walk(child) for child in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The inverse of `tree_flatten` (the arguments may also come the other way round, as torch allows)."""
    if not isinstance(treespec, TreeSpec):
        if not isinstance(leaves, TreeSpec):
            raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                            f"{type(treespec)}.")
        leaves, treespec = treespec, leaves
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: IsLeafFn = None) -> Iterator[Any]:
    """Yield the leaves of `tree` lazily."""
    if tree_is_leaf(tree, is_leaf=is_leaf):
        yield tree
        return
    children, _ = SUPPORTED_NODES[_get_node_type(tree)].flatten_fn(tree)
    for child in children:
        yield from tree_iter(child, is_leaf=is_leaf)


def tree_leaves(tree: PyTree, is_leaf: IsLeafFn = None) -> list[Any]:
    """The leaves of `tree` as a list."""
    return list(tree_iter(tree, is_leaf=is_leaf))


def tree_structure(tree: PyTree, is_leaf: IsLeafFn = None) -> TreeSpec:
    """The TreeSpec of `tree`."""
    return tree_flatten(tree, is_leaf=is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None) -> PyTree:
    """A new tree shaped like `tree` holding `func(leaf, *matching leaves of rests)`.

    Each of `rests` must have `tree`'s structure as a prefix: a leaf of `tree` may face a whole subtree there.
    """
    leaves, spec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *flat_args))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None) -> PyTree:
    """Call `func` on every leaf for its side effect (an in-place update) and return `tree` itself."""
    leaves, spec = tree_flatten(tree, is_leaf=is_leaf)
    flat_args = [leaves] + [spec.flatten_up_to(r) for r in rests]
    deque(map(func, *flat_args), maxlen=0)
    return tree


TypeOrPred = type | tuple[type, ...] | types.UnionType | Callable[[Any], bool]


def map_only(type_or_types_or_pred: TypeOrPred, /) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Decorator: apply the function only to values of the given type(s) (or passing the predicate)."""
    if isinstance(type_or_types_or_pred, (type, tuple, types.UnionType)):
        def pred(x: Any) -> bool:
            return isinstance(x, type_or_types_or_pred)
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")

    def wrapper(func: Callable[[Any], Any]) -> Callable[[Any], Any]:
        @functools.wraps(func)
        def wrapped(x: Any) -> Any:
            return func(x) if pred(x) else x

        return wrapped

    return wrapper


def tree_map_only(type_or_types_or_pred: TypeOrPred, /, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: IsLeafFn = None) -> PyTree:
    """`tree_map` that changes only the leaves of the given type(s); other leaves are kept as they are."""
    return tree_map(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred: TypeOrPred, /, func: Callable[[Any], Any], tree: PyTree,
                   is_leaf: IsLeafFn = None) -> PyTree:
    """`tree_map_` restricted to the leaves of the given type(s)."""
    return tree_map_(map_only(type_or_types_or_pred)(func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether `pred` holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree, is_leaf: IsLeafFn = None) -> bool:
    """Whether `pred` holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf=is_leaf)))


def tree_all_only(type_or_types: type | tuple[type, ...], /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: IsLeafFn = None) -> bool:
    """Whether `pred` holds for every leaf of the given type(s) (leaves of other types are ignored)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: type | tuple[type, ...], /, pred: Callable[[Any], bool], tree: PyTree,
                  is_leaf: IsLeafFn = None) -> bool:
    """Whether `pred` holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf=is_leaf) if isinstance(x, type_or_types))


def _broadcast_to_and_flatten(tree: PyTree, treespec: TreeSpec, is_leaf: IsLeafFn = None) -> list[Any] | None:
    """`tree` (a prefix of `treespec`'s structure) repeated out to one value per leaf; None if it is no prefix."""
    full_tree = tree_unflatten([0] * treespec.num_leaves, treespec)
    result: list[Any] = []

    def add_leaves(x: Any, subtree: PyTree) -> None:
        result.extend([x] * tree_structure(subtree, is_leaf=is_leaf).num_leaves)

    try:
        tree_map_(add_leaves, tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        return None
    return result


def arg_tree_leaves(*args: PyTree, **kwargs: PyTree) -> list[Any]:
    """The leaves of `(args, kwargs)` as one list."""
    leaves: list[Any] = []
    for a in (*args, *kwargs.values()):
        leaves.extend(tree_iter(a))
    return leaves


# --- key paths ----------------------------------------------------------------------------------------------


def _generate_key_paths(key_path: KeyPath, tree: PyTree, is_leaf: IsLeafFn = None) -> Iterator[tuple[KeyPath, Any]]:
    if is_leaf is not None and is_leaf(tree):
        yield key_path, tree
        return
    node_type = _get_node_type(tree)
    handler = SUPPORTED_NODES.get(node_type)
    if handler is None:
        yield key_path, tree
        return
    if handler.flatten_with_keys_fn is None:
        raise ValueError(f"Did not find a flatten_with_keys_fn for type: {node_type}. "
                         "Please pass a flatten_with_keys_fn argument to register_pytree_node.")
    key_children, _ = handler.flatten_with_keys_fn(tree)
    for k, child in key_children:
        yield from _generate_key_paths((*key_path, k), child, is_leaf)


def tree_flatten_with_path(tree: PyTree, is_leaf: IsLeafFn = None) -> tuple[list[tuple[KeyPath, Any]], TreeSpec]:
    """Like `tree_flatten`, with each leaf paired with its key path (a tuple of key entries)."""
    _, spec = tree_flatten(tree, is_leaf)
    return list(_generate_key_paths((), tree, is_leaf)), spec


def tree_leaves_with_path(tree: PyTree, is_leaf: IsLeafFn = None) -> list[tuple[KeyPath, Any]]:
    """The `(key path, leaf)` pairs of `tree`."""
    return list(_generate_key_paths((), tree, is_leaf))


def tree_map_with_path(func: Callable[..., Any], tree: PyTree, *rests: PyTree, is_leaf: IsLeafFn = None) -> PyTree:
    """Like `tree_map`, but `func` receives each leaf's key path first: `func(path, leaf, *others)`."""
    path_leaves, spec = tree_flatten_with_path(tree, is_leaf)
    columns = list(zip(*path_leaves, strict=True)) + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns, strict=True))


# --- JSON serialization -------------------------------------------------------------------------------------


class EnumEncoder(json.JSONEncoder):
    """Writes Enum members in contexts as `{"__enum__": true, "fqn": "module:Class", "name": ...}`."""

    def default(self, obj: object) -> Any:
        if isinstance(obj, Enum):
            return {"__enum__": True, "fqn": f"{obj.__class__.__module__}:{obj.__class__.__qualname__}",
                    "name": obj.name}
        return super().default(obj)


def enum_object_hook(obj: dict[str, Any]) -> Any:
    """The JSON hook that reads back what EnumEncoder wrote."""
    if "__enum__" in obj:
        modname, _, classname = obj["fqn"].partition(":")
        enum_cls: Any = importlib.import_module(modname)
        for attr in classname.split("."):
            enum_cls = getattr(enum_cls, attr)
        return enum_cls[obj["name"]]
    return obj


def _treespec_to_json(spec: TreeSpec) -> dict[str, Any]:
    if spec.is_leaf():
        return {"type": None, "context": None, "children_spec": []}
    if spec.type not in SUPPORTED_SERIALIZED_TYPES:
        raise NotImplementedError(f"Serializing {spec.type} in pytree is not registered.")
    node_def = SUPPORTED_SERIALIZED_TYPES[spec.type]
    if node_def.serialized_type_name == NO_SERIALIZED_TYPE_NAME_FOUND:
        raise NotImplementedError(f"No registered serialization name for {spec.type} found. Please update your "
                                  "_register_pytree_node call with a `serialized_type_name` kwarg.")
    if node_def.to_dumpable_context is None:
        try:
            context = json.dumps(spec._context, cls=EnumEncoder)
        except TypeError as e:
            raise TypeError("Unable to serialize context. Please make the context json dump-able, or register a "
                            "custom serializer using _register_pytree_node.") from e
    else:
        context = node_def.to_dumpable_context(spec._context)
    return {"type": node_def.serialized_type_name, "context": context,
            "children_spec": [_treespec_to_json(child) for child in spec._children]}


def _json_to_treespec(schema: dict[str, Any]) -> TreeSpec:
    if schema["type"] is None and schema["context"] is None and len(schema["children_spec"]) == 0:
        return _LEAF_SPEC
    if schema["type"] not in SERIALIZED_TYPE_TO_PYTHON_TYPE:
        raise NotImplementedError(f"Deserializing {schema['type']} in pytree is not registered.")
    typ = SERIALIZED_TYPE_TO_PYTHON_TYPE[schema["type"]]
    node_def = SUPPORTED_SERIALIZED_TYPES[typ]
    if node_def.from_dumpable_context is None:
        context = json.loads(schema["context"], object_hook=enum_object_hook)
    else:
        context = node_def.from_dumpable_context(schema["context"])
    return TreeSpec(typ, context, [_json_to_treespec(child) for child in schema["children_spec"]])


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """`treespec` as a JSON string (torch's protocol 1 layout, so the text is the same as torch's)."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                        f"{type(treespec)}.")
    protocol = DEFAULT_TREESPEC_SERIALIZATION_PROTOCOL if protocol is None else protocol
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return json.dumps((protocol, _treespec_to_json(treespec)), cls=EnumEncoder)


@functools.lru_cache
def treespec_loads(serialized: str) -> TreeSpec:
    """The TreeSpec that `treespec_dumps` wrote."""
    protocol, schema = json.loads(serialized)
    if protocol != 1:
        raise ValueError(f"Unknown protocol {protocol}. Available protocols: [1]")
    return _json_to_treespec(schema)


class _Asterisk(str):
    """A string that prints as a bare `*`, standing for a leaf in `treespec_pprint`."""

    __slots__ = ()

    def __new__(cls) -> _Asterisk:
        return super().__new__(cls, "*")

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure drawn as the container it describes, with `*` for each leaf, e.g. `{'a': *, 'b': [*, *]}`."""
    return repr(tree_unflatten([_Asterisk()] * treespec.num_leaves, treespec))
