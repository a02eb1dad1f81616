"""A minimal pytree for the function transforms: tuples, lists, dicts and namedtuples are nodes, all else is a leaf.

The transforms take and return nested containers of tensors (torch.func's pytrees).  This module flattens
them to a list of leaves plus a `TreeSpec` and rebuilds them, and its `TreeSpec` prints like
torch.utils._pytree's so that error messages that show structures read the same as torch's.  `None` is a
leaf, as in torch.
"""

from __future__ import annotations

__all__ = ["TreeSpec", "tree_flatten", "tree_unflatten", "tree_map", "broadcast_to_and_flatten", "treespec_pprint"]


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


class TreeSpec:
    """The structure of a pytree: a node type, its context (dict keys / namedtuple class) and child specs."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, node_type=None, context=None, children=()) -> None:
        self.type = node_type  # None for a leaf
        self.context = context
        self.children = list(children)
        self.num_leaves = 1 if node_type is None else sum(child.num_leaves for child in self.children)

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.type, len(self.children)))

    def __repr__(self, indent: int = 0) -> str:
        if self.type is None:
            return "*"
        name = "namedtuple" if _is_namedtuple_type(self.type) else self.type.__name__
        text = f"TreeSpec({name}, {self.context}, ["
        if self.children:
            indent += 2
            text += self.children[0].__repr__(indent)
            text += "," if len(self.children) > 1 else ""
            text += ",".join("\n" + " " * indent + child.__repr__(indent) for child in self.children[1:])
        return text + "])"


def _is_namedtuple_type(node_type) -> bool:
    return issubclass(node_type, tuple) and hasattr(node_type, "_fields")


def tree_flatten(tree) -> tuple[list, TreeSpec]:
    """Leaves in order (dicts in insertion order, as torch) and the spec that rebuilds the tree."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves: list) -> TreeSpec:
    if _is_namedtuple(tree):
        return TreeSpec(type(tree), type(tree), [_flatten(child, leaves) for child in tree])
    if type(tree) in (tuple, list):
        return TreeSpec(type(tree), None, [_flatten(child, leaves) for child in tree])
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec(type(tree), keys, [_flatten(tree[key], leaves) for key in keys])
    leaves.append(tree)
    return TreeSpec()


def tree_unflatten(leaves, spec: TreeSpec):
    """Rebuild the tree of `spec` from its leaves."""
    iterator = iter(leaves)
    return _unflatten(iterator, spec)


def _unflatten(iterator, spec: TreeSpec):
    if spec.type is None:
        return next(iterator)
    children = [_unflatten(iterator, child) for child in spec.children]
    if _is_namedtuple_type(spec.type):
        return spec.type(*children)
    if spec.type in (tuple, list):
        return spec.type(children)
    return spec.type(zip(spec.context, children))


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(leaf) for leaf in leaves], spec)


def broadcast_to_and_flatten(prefix, spec: TreeSpec) -> list | None:
    """Spread each leaf of `prefix` (a tree prefix of `spec`, as vmap's in_dims/out_dims) over the leaves of the
    matching subtree of `spec`; None when `prefix` is not a prefix of `spec`."""
    result: list = []
    return result if _broadcast(prefix, spec, result) else None


def _broadcast(prefix, spec: TreeSpec, result: list) -> bool:
    prefix_spec = tree_flatten(prefix)[1] if isinstance(prefix, (tuple, list, dict)) else TreeSpec()
    if prefix_spec.type is None:
        result.extend([prefix] * spec.num_leaves)
        return True
    if prefix_spec.type is not spec.type or len(prefix) != len(spec.children):
        return False
    if isinstance(prefix, dict):
        if set(prefix) != set(spec.context):
            return False
        # torch's _broadcast_to_and_flatten lists a dict's entries in the prefix's key order, and vmap pairs
        # that list with the inputs' leaves in their own order: keys in another order pair by position
        specs = dict(zip(spec.context, spec.children))
        return all(_broadcast(prefix[key], specs[key], result) for key in prefix)
    return all(_broadcast(child, child_spec, result) for child, child_spec in zip(prefix, spec.children))


def treespec_pprint(spec: TreeSpec) -> str:
    """The structure with leaves shown as `*`, as torch's treespec_pprint: `(*, {'a': *})`."""
    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))


class _Star:
    def __repr__(self) -> str:
        return "*"

