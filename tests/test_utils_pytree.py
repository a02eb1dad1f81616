"""ember.utils._pytree against torch.utils._pytree: same leaves, specs, reprs, JSON, key paths and errors."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import warnings
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch.utils._pytree as tpt

import ember
import ember.utils._pytree as ept

Point = namedtuple("Point", "x y")


def _trees():
    return [
        1,
        None,
        [],
        (),
        {},
        [1, 2, (3, 4)],
        {"b": 1, "a": [2, (3, None)], "c": OrderedDict(z=4, y=5)},
        Point(1, [2, 3]),
        deque([1, 2, 3], maxlen=5),
        deque([1, (2,)]),
        defaultdict(list, {"k": 1, "j": [2]}),
        [None, [None], {"x": None}],
        ("s", 2.5, True, [{"q": (1,)}]),
        {1: "a", (2, 3): "b"},
    ]


@pytest.mark.parametrize("index", range(len(_trees())))
def test_flatten_unflatten_match_torch(index):
    tree = _trees()[index]
    e_leaves, e_spec = ept.tree_flatten(tree)
    t_leaves, t_spec = tpt.tree_flatten(tree)
    assert e_leaves == t_leaves
    assert repr(e_spec) == repr(t_spec)
    assert str(e_spec) == str(t_spec)
    assert (e_spec.num_leaves, e_spec.num_nodes, e_spec.num_children) == (
        t_spec.num_leaves, t_spec.num_nodes, t_spec.num_children)
    assert e_spec.is_leaf() == t_spec.is_leaf()
    rebuilt = ept.tree_unflatten(e_leaves, e_spec)
    assert rebuilt == tree and type(rebuilt) is type(tree)
    if isinstance(tree, deque):
        assert rebuilt.maxlen == tree.maxlen
    if isinstance(tree, defaultdict):
        assert rebuilt.default_factory is tree.default_factory
    assert ept.tree_leaves(tree) == tpt.tree_leaves(tree)
    assert ept.tree_structure(tree) == e_spec
    assert ept.treespec_pprint(e_spec) == tpt.treespec_pprint(t_spec)


@pytest.mark.parametrize("index", range(len(_trees())))
def test_paths_match_torch(index):
    tree = _trees()[index]
    e_paths, _ = ept.tree_flatten_with_path(tree)
    t_paths, _ = tpt.tree_flatten_with_path(tree)
    assert [(ept.keystr(p), v) for p, v in e_paths] == [(tpt.keystr(p), v) for p, v in t_paths]
    assert [repr(p) for p, _ in e_paths] == [repr(p) for p, _ in t_paths]
    for path, value in e_paths:
        assert ept.key_get(tree, path) is value
    mapped = ept.tree_map_with_path(lambda p, v: ept.keystr(p), tree)
    assert mapped == tpt.tree_map_with_path(lambda p, v: tpt.keystr(p), tree)


def test_dict_keeps_insertion_order_and_json_matches_torch():
    tree = {"b": 1, "a": [2, (3, None)], "c": OrderedDict(z=4)}
    assert ept.tree_leaves(tree) == [1, 2, 3, None, 4]
    e_json = ept.treespec_dumps(ept.tree_structure(tree))
    assert e_json == tpt.treespec_dumps(tpt.tree_structure(tree))
    assert ept.treespec_loads(e_json) == ept.tree_structure(tree)
    dd = defaultdict(int, {"x": 1})
    assert ept.treespec_dumps(ept.tree_structure(dd)) == tpt.treespec_dumps(tpt.tree_structure(dd))
    assert ept.treespec_loads(ept.treespec_dumps(ept.tree_structure(dd))) == ept.tree_structure(dd)
    with pytest.raises(NotImplementedError):  # an unnamed namedtuple class cannot be serialized, as in torch
        ept.treespec_dumps(ept.tree_structure(Point(1, 2)))
    with pytest.raises(NotImplementedError):
        tpt.treespec_dumps(tpt.tree_structure(Point(1, 2)))
    with pytest.raises(ValueError, match="Unknown protocol"):
        ept.treespec_dumps(ept.tree_structure([1]), protocol=7)


def test_tensors_and_none_are_leaves():
    a, b = ember.ones(2), ember.zeros(3)
    leaves, spec = ept.tree_flatten({"w": a, "opt": [b, None]})
    assert leaves[0] is a and leaves[1] is b and leaves[2] is None
    assert ept.tree_is_leaf(a) and ept.tree_is_leaf(None) and not ept.tree_is_leaf([a])
    assert str(spec) == str(tpt.tree_structure({"w": 0, "opt": [0, None]}))
    doubled = ept.tree_map_only(ember.Tensor, lambda t: t * 2, {"w": a, "n": 3, "s": "x"})
    assert doubled["n"] == 3 and doubled["s"] == "x" and doubled["w"].tolist() == [2.0, 2.0]
    assert ept.tree_map_only((int, str), lambda v: v * 2, [1, "a", a])[:2] == [2, "aa"]
    assert ept.tree_map_only(lambda v: isinstance(v, int), lambda v: -v, [1, 2.5]) == [-1, 2.5]
    with pytest.raises(TypeError, match="type, a tuple of types, or a callable"):
        ept.tree_map_only(3, lambda v: v, [1])


def test_tree_map_variants():
    assert ept.tree_map(lambda x: x + 1, {"x": 7, "y": (42, 64)}) == {"x": 8, "y": (43, 65)}
    assert ept.tree_map(lambda x: x is None, {"x": 7, "z": None}) == {"x": False, "z": True}
    # later trees need only the first one's structure as a prefix; dicts are matched by key
    assert ept.tree_map(lambda x, y: [x] + y, [5, 6], [[7, 9], [1, 2]]) == [[5, 7, 9], [6, 1, 2]]
    assert ept.tree_map(lambda a, b: a + b, {"a": 1, "b": 2}, OrderedDict(b=10, a=20)) == {"a": 21, "b": 12}
    assert ept.tree_map(lambda a, b: a + b, deque([1, 2], maxlen=2), deque([3, 4])) == deque([4, 6])

    seen = []
    tree = [ember.zeros(2), ember.zeros(1)]
    assert ept.tree_map_(lambda t: seen.append(t.shape) or t.add_(1), tree) is tree
    assert seen == [ember.Size([2]), ember.Size([1])] and tree[0].tolist() == [1.0, 1.0]
    counter = []
    ept.tree_map_only_(int, counter.append, [1, "a", (2,)])
    assert counter == [1, 2]

    assert ept.tree_all(lambda v: v > 0, [1, (2, 3)]) and not ept.tree_all(lambda v: v > 1, [1, (2, 3)])
    assert ept.tree_any(lambda v: v > 2, [1, (2, 3)]) and not ept.tree_any(lambda v: v > 3, [1, (2, 3)])
    mixed = [1, "abc", (2, "de")]
    assert ept.tree_all_only(int, lambda v: v > 0, mixed)
    assert ept.tree_any_only(str, lambda v: len(v) == 2, mixed)
    assert not ept.tree_any_only(str, lambda v: len(v) == 5, mixed)
    assert ept.tree_all(lambda v: False, []) and not ept.tree_any(lambda v: True, [])
    assert ept.tree_leaves([(1,), 2], is_leaf=lambda n: isinstance(n, tuple)) == [(1,), 2]
    assert ept.arg_tree_leaves(1, [2], k=(3,)) == [1, 2, 3]


@pytest.mark.parametrize("first, second", [
    ([1, 2], [1]),
    ([1, 2], (1, 2)),
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 2}, {"a": 1, "c": 2, "d": 3}),
    (Point(1, 2), (1, 2)),
    ([1, [2]], [1, 3]),
])
def test_structure_mismatch_errors_match_torch(first, second):
    with pytest.raises(ValueError) as t_err:
        tpt.tree_map(lambda a, b: a, first, second)
    with pytest.raises(ValueError) as e_err:
        ept.tree_map(lambda a, b: a, first, second)
    assert str(e_err.value) == str(t_err.value)


def test_spec_errors_match_torch():
    tree = {"b": 1, "a": [2, 3]}
    with pytest.raises(ValueError) as t_err:
        tpt.tree_structure(tree).unflatten([1])
    with pytest.raises(ValueError) as e_err:
        ept.tree_structure(tree).unflatten([1])
    assert str(e_err.value) == str(t_err.value)
    with pytest.raises(TypeError, match="Expected `treespec` to be an instance of PyTreeSpec"):
        ept.tree_unflatten([1], [1])
    spec = ept.tree_structure([1, 2])
    assert ept.tree_unflatten(spec, [3, 4]) == [3, 4]  # torch accepts the arguments swapped


def test_treespec_value_semantics():
    spec = ept.tree_structure({"a": [1, (2, 3)], "b": None})
    same = ept.tree_structure({"a": [7, (8, 9)], "b": 0})
    other = ept.tree_structure({"b": [1, (2, 3)], "a": None})
    assert spec == same and hash(spec) == hash(same) and spec != other
    assert len({spec, same, other}) == 2
    assert ept.tree_structure([1]) != ept.tree_structure((1,))
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert copy.deepcopy(spec) == spec
    assert spec.context == ["a", "b"] and spec.child(1).is_leaf() and len(spec.children()) == 2
    assert ept.treespec_leaf() is ept.tree_structure(5)
    assert ept.treespec_tuple([ept.treespec_leaf()] * 2) == ept.tree_structure((1, 2))
    assert ept.treespec_dict(a=ept.treespec_leaf()) == ept.tree_structure({"a": 1})
    up_to = {"a": [[1], (2, 3)], "b": "x"}
    assert spec.flatten_up_to(up_to) == [[1], 2, 3, "x"]
    assert spec.flatten_up_to(up_to) == tpt.tree_structure({"a": [1, (2, 3)], "b": None}).flatten_up_to(up_to)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.type = list
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        leaf = ept.LeafSpec()
    assert any(issubclass(w.category, FutureWarning) for w in caught)
    assert repr(leaf) == "*" and leaf == ept.treespec_leaf() and leaf.is_leaf()


class Pair:
    def __init__(self, left, right, tag="t"):
        self.left, self.right, self.tag = left, right, tag

    def __eq__(self, other):
        return isinstance(other, Pair) and (self.left, self.right, self.tag) == (other.left, other.right, other.tag)


def test_register_pytree_node():
    ept.register_pytree_node(
        Pair, lambda p: ([p.left, p.right], p.tag), lambda values, tag: Pair(*values, tag),
        serialized_type_name="tests.Pair",
        flatten_with_keys_fn=lambda p: ([(ept.GetAttrKey("left"), p.left), (ept.GetAttrKey("right"), p.right)],
                                        p.tag))
    try:
        tree = {"p": Pair(1, [2, 3], "u")}
        leaves, spec = ept.tree_flatten(tree)
        assert leaves == [1, 2, 3]
        assert ept.tree_unflatten([4, 5, 6], spec) == {"p": Pair(4, [5, 6], "u")}
        assert repr(spec) == "TreeSpec(dict, ['p'], [TreeSpec(Pair, u, [*,\n    TreeSpec(list, None, [*,\n      *])])])"
        assert [ept.keystr(p) for p, _ in ept.tree_leaves_with_path(tree)] == \
            ["['p'].left", "['p'].right[0]", "['p'].right[1]"]
        assert ept.treespec_loads(ept.treespec_dumps(spec)) == spec
        with pytest.raises(ValueError, match="already registered"):
            ept.register_pytree_node(Pair, lambda p: ([], None), lambda v, c: Pair(0, 0))
        with pytest.raises(ValueError, match="context mismatch"):
            ept.tree_map(lambda a, b: a, Pair(1, 2, "u"), Pair(1, 2, "v"))
    finally:
        ept._deregister_pytree_node(Pair)
    assert ept.tree_leaves(Pair(1, 2)) == [Pair(1, 2)]


def test_register_dataclass():
    @dataclasses.dataclass
    class State:
        weight: object
        bias: object = None

    ept.register_dataclass(State)
    try:
        leaves, spec = ept.tree_flatten(State(ember.ones(1), None))
        assert len(leaves) == 1
        rebuilt = ept.tree_unflatten([ember.zeros(1)], spec)
        assert isinstance(rebuilt, State) and rebuilt.bias is None and rebuilt.weight.tolist() == [0.0]
        assert [ept.keystr(p) for p, _ in ept.tree_flatten_with_path(State(1, 2))[0]] == [".weight", ".bias"]
    finally:
        ept._deregister_pytree_node(State)
    with pytest.raises(ValueError, match="field_names must be specified"):
        ept.register_dataclass(Pair)


def test_reachable_from_ember_utils():
    assert ember.utils._pytree is ept
    assert set(tpt.__all__) - set(ept.__all__) <= {"is_structseq", "is_structseq_class", "is_structseq_instance"}
