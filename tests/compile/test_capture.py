"""Capture, guards, recompiles, graph breaks, explain, fullgraph, in-place writes, randomness."""

import argparse
import collections
import dataclasses
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_graph_is_printable_with_meta_and_source():
    def fn(x, y):
        return (x * y).relu() + 1

    compiled = ember.compile(fn, options={"fusion": False})
    compiled(ember.ones(2, 3), ember.ones(2, 3))
    (graph,) = compiled.graphs
    code = graph.code
    assert "mul(p0, p1)" in code and "float32[2, 3]" in code and "test_capture.py" in code
    table = graph.tabular()
    assert "placeholder" in table and "relu" in table and "output" in table


def test_decorator_and_call_counts_replay():
    @ember.compile
    def fn(x):
        return x.exp() * 2

    x = ember.randn(5)
    for _ in range(3):
        _same(fn(x), x.exp() * 2)
    assert fn.captures == 1 and not next(iter(fn.cache.values())).eager

    calls = []

    @ember.compile
    def appends(x):
        calls.append(1)  # a write to a closure's list: a replay would skip it, so the call runs eagerly
        return x.exp() * 2

    for _ in range(3):
        _same(appends(x), x.exp() * 2)
    assert len(calls) == 3  # as torch, which replays the append


def test_guards_recompile_on_shape_dtype_and_grad_mode():
    compiled = ember.compile(lambda x: x.sigmoid() * x)
    compiled(ember.randn(4, 3))
    compiled(ember.randn(4, 3))
    assert len(compiled.cache) == 1
    compiled(ember.randn(5, 3))  # shape
    compiled(ember.randn(5, 3, dtype=ember.float64))  # dtype
    with ember.no_grad():
        compiled(ember.randn(5, 3))  # grad mode
    compiled(ember.randn(5, 3, requires_grad=True))  # requires_grad
    assert len(compiled.cache) == 5
    assert "grad mode (was False, now True)" == compiled.last_reason  # compared with the newest graph


def test_non_tensor_arguments_guarded_by_value():
    compiled = ember.compile(lambda x, scale: x * scale)
    x = ember.ones(3)
    _same(compiled(x, 2.0), x * 2)
    _same(compiled(x, 3.0), x * 3)
    _same(compiled(x, 2.0), x * 2)
    assert len(compiled.cache) == 2


def test_module_training_flag_and_dropout_randomness():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 6), nn.Dropout(0.5))
    model.compile()
    x = ember.randn(64, 6)
    first, second = model(x), model(x)
    assert not np.allclose(first.detach().numpy(), second.detach().numpy())  # a fresh mask per replay
    model.eval()
    _same(model(x), model[0](x))
    assert len(model._compiled_call_impl.cache) == 2


def test_parameter_updates_are_seen_and_replacement_recompiles():
    layer = nn.Linear(3, 2)
    compiled = ember.compile(layer)
    x = ember.randn(4, 3)
    compiled(x)
    with ember.no_grad():
        layer.weight.mul_(2)
    _same(compiled(x), layer(x))
    # a replacement of the same shape is read from the module's entry (tests/compile/test_lifted_params.py)
    layer.weight = nn.Parameter(ember.randn(2, 3))
    _same(compiled(x), layer(x))
    assert len(compiled._compiled.cache) == 1 and compiled._compiled.captures == 1
    layer.weight = nn.Parameter(ember.randn(5, 3))  # another shape: a new capture
    layer.bias = nn.Parameter(ember.randn(5))
    _same(compiled(x), layer(x))
    assert compiled._compiled.captures == 2
    layer.weight, layer.bias = nn.Parameter(ember.randn(2, 3)), nn.Parameter(ember.randn(2))  # back: a graph each
    _same(compiled(x), layer(x))
    assert compiled._compiled.captures == 2 and len(compiled._compiled.cache) == 2


def test_recompile_limit_warns_once_and_runs_eagerly():
    ember.compiler.config.recompile_limit = 2
    try:
        compiled = ember.compile(lambda x, n: x + n, dynamic=False)
        x = ember.ones(2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for n in range(6):
                _same(compiled(x, n), x + n)
        messages = [str(w.message) for w in caught if "recompile limit" in str(w.message)]
        assert len(messages) == 1 and "args[1] == " in messages[0]
        assert len(compiled.cache) == 3
    finally:
        ember.compiler.config.recompile_limit = 8


def test_dynamic_sizes_do_not_count_against_the_limit():
    compiled = ember.compile(lambda x: (x * 2).tanh())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 12):
            x = ember.randn(n, 4)
            _same(compiled(x), (x * 2).tanh())
    # sizes 1 and 2 are captured (1 is never symbolic, as in torch), 3 makes the size-generic graph, and the
    # other eight sizes match it without a capture or a recompile
    assert compiled.captures == 3 and len(compiled.matched) == 8 and compiled.recompiles == 0


def _branchy(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def test_graph_break_falls_back_to_eager_and_stays_correct():
    compiled = ember.compile(_branchy)
    for sign in (1, -1, 1, -1):
        x = ember.ones(3) * sign
        _same(compiled(x), _branchy(x))
    assert compiled.graph_breaks and "Tensor.__bool__" in compiled.graph_breaks[0].reason
    # split at the read: compiled segments, one chain per path (test_split_and_index.py)
    assert not any(e.eager for e in compiled.cache.values()) and compiled.captures == 2
    unsplit = ember.compile(_branchy, options={"split": False})  # the old fallback: the call runs eagerly
    for sign in (1, -1):
        x = ember.ones(3) * sign
        _same(unsplit(x), _branchy(x))
    assert all(e.eager for e in unsplit.cache.values())


def test_explain_counts_graphs_and_breaks():
    result = ember.compiler.explain(_branchy)(ember.ones(3))
    assert result.graph_count == 2 and result.graph_break_count == 1
    assert "if y.sum() > 0" in result.break_reasons[0].source
    text = str(result)
    assert "Graph Count: 2" in text and "Graph Break Count: 1" in text
    assert ember.compiler.explain(lambda x: x.exp() + 1, ember.ones(2)).graph_break_count == 0


def test_fullgraph_raises_at_the_break():
    with pytest.raises(ember.compiler.Unsupported, match="__bool__"):
        ember.compile(_branchy, fullgraph=True)(ember.ones(3))
    with pytest.raises(ember.compiler.Unsupported, match="item"):
        ember.compile(lambda x: x * x.sum().item(), fullgraph=True)(ember.ones(3))


def test_other_breaks_item_numpy_backward_disable():
    def backward_inside(x):
        (x * 2).sum().backward()
        return x.grad

    x = ember.ones(2, requires_grad=True)
    compiled = ember.compile(backward_inside)
    compiled(x)
    # backward() after the ops is replayed around the graph (Tracer.take_action); reading an argument's .grad
    # after it is the break, and the call runs eagerly
    assert ".grad" in compiled.graph_breaks[0].reason
    assert x.grad.tolist() == [2.0, 2.0] and compiled(x).tolist() == [4.0, 4.0]

    def backward_with_graph(x):
        (x * 2).sum().backward(create_graph=True)
        return x * 1

    compiled = ember.compile(backward_with_graph)
    compiled(ember.ones(2, requires_grad=True))
    assert "backward" in compiled.graph_breaks[0].reason

    @ember.compiler.disable
    def opaque(t):
        return t + 1

    explained = ember.compiler.explain(lambda t: opaque(t * 2) * 3, ember.ones(2))
    assert explained.graph_break_count == 1 and "disable" in explained.break_reasons[0].reason


def test_inplace_on_intermediate_and_input_buffer():
    def fn(x, running):
        y = x * 2
        y.add_(1)  # rebinding an intermediate
        with ember.no_grad():
            running.mul_(0.9).add_(y.mean() * 0.1)  # an input buffer updated in place
        return y.relu()

    compiled = ember.compile(fn)
    x = ember.randn(4)
    eager_buffer, compiled_buffer = ember.zeros(()), ember.zeros(())
    for _ in range(3):
        _same(compiled(x, compiled_buffer), fn(x, eager_buffer))
        _same(compiled_buffer, eager_buffer)


def test_detach_inside_is_an_alias_not_a_constant():
    compiled = ember.compile(lambda x: (x * 3).detach() + x)
    compiled(ember.ones(2))
    _same(compiled(ember.full((2,), 2.0)), ember.full((2,), 8.0))


def test_random_factory_is_recorded_and_draws_anew():
    """randn() in the function is a recipe node: each replay draws from the generator, in eager's order."""
    fn = lambda x: x + ember.randn(x.shape)  # noqa: E731
    compiled = ember.compile(fn)
    x = ember.zeros(1000)
    for seed in range(3):
        ember.manual_seed(seed)
        out = compiled(x)
        ember.manual_seed(seed)
        np.testing.assert_array_equal(out.numpy(), fn(x).numpy())
    assert not compiled.graph_breaks and compiled.captures == 1
    assert not np.allclose(compiled(x).numpy(), compiled(x).numpy())


def test_batchnorm_training_updates_running_stats():
    ember.manual_seed(0)
    eager = nn.BatchNorm1d(4)
    compiled_bn = nn.BatchNorm1d(4)
    compiled_bn.compile()
    x = ember.randn(8, 4)
    for _ in range(2):
        _same(compiled_bn(x), eager(x))
    _same(compiled_bn.running_mean, eager.running_mean)
    _same(compiled_bn.running_var, eager.running_var)


def test_logs_print_graph_and_kernels(capsys):
    compiled = ember.compile(lambda x: F.gelu(x) * 2 + 1, options={"trace": True})
    compiled(ember.randn(3, 4))
    err = capsys.readouterr().err
    assert "[ember.compile graph_code]" in err and "[ember.compile output_code]" in err
    assert "void fused_" in err or "def fused_" in err


def test_setitem_into_a_fresh_tensor_is_recorded():
    """F.pad makes zeros and writes the input into them with setitem: under capture that write must be an op
    of the graph, or every replay returns the first call's values (found by ember.onnx's tests)."""
    import ember.nn.functional as F

    compiled = ember.compile(lambda q: F.pad(q, (1, 1)) * 2)
    for scale in (1.0, 2.0, 3.0):
        q = ember.ones(2, 3) * scale
        np.testing.assert_array_equal(compiled(q).numpy(), np.pad(q.numpy(), ((0, 0), (1, 1))) * 2)
    assert compiled.graph_breaks == []


@pytest.mark.parametrize("shape", [(4, 8), (256, 256)])  # replayed op by op / with fused kernels
def test_non_finite_and_object_constants_replay(shape):
    """Constant arguments the graph runner cannot write as literals -- -inf (a causal mask's fill), inf, nan, a
    dtype -- are valid in the replay and in the printed code (`float('-inf')`, not `-inf`)."""
    def fn(x, mask):
        return (x.masked_fill(mask, float("-inf")).softmax(-1), ember.where(mask, x, float("inf")).amin(-1),
                x.to(ember.float64) * float("nan"), ember.full_like(x, float("-inf")).maximum(x))

    x = ember.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    mask = x > 1
    compiled = ember.compile(fn)
    for _ in range(3):  # capture, then replays
        got = compiled(x, mask)
    for g, w in zip(got, fn(x, mask)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)  # nan where nan, inf where inf
    code = ember.compiler.explain(fn)(x, mask).graphs[0].code
    assert "float('-inf')" in code and "float('nan')" in code
    compile(code, "<graph code>", "exec")  # the printed code is Python


SCALE = 1.0
USE_RELU = False


def _scaled(x):
    return x * SCALE


def test_scalar_globals_read_at_capture_are_guarded():
    """A global number the function (or a helper it calls) read is baked into the graph: changing it must
    recapture, as torch's dynamo guards on it; an unchanged global replays."""
    global SCALE, USE_RELU

    def fn(x):
        y = _scaled(x) - 1
        return y.relu() if USE_RELU else y

    compiled = ember.compile(fn)
    x = ember.tensor([-1.0, 2.0])
    try:
        for scale, relu in ((1.0, False), (1.0, False), (2.0, False), (2.0, True), (2.0, True)):
            SCALE, USE_RELU = scale, relu
            np.testing.assert_array_equal(compiled(x).numpy(), fn(x).numpy())
    finally:
        SCALE, USE_RELU = 1.0, False
    assert compiled.captures == 3
    assert "SCALE" in compiled.labels[next(reversed(compiled.cache))][-1]


def test_closure_cells_and_module_attributes_are_guarded():
    factor = 3.0

    def fn(x):
        return x * factor

    compiled = ember.compile(fn)
    x = ember.ones(2)
    assert compiled(x).numpy()[0] == 3.0
    factor = 4.0
    assert compiled(x).numpy()[0] == 4.0

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)
            self.temperature = 1.0
            self.clip = False

        def forward(self, x):
            y = self.linear(x) / self.temperature
            return y.clamp(-0.1, 0.1) if self.clip else y

    model = Scaled()
    compiled_model = ember.compile(model)
    compiled_model(x)
    for temperature, clip in ((2.0, False), (2.0, True)):
        model.temperature, model.clip = temperature, clip
        np.testing.assert_allclose(compiled_model(x).detach().numpy(), model(x).detach().numpy())
    assert "module attributes" in compiled_model._compiled.last_reason


def _closure_pair():
    k = 2.0

    def helper(x):
        return x * k

    def set_k(value):
        nonlocal k
        k = value

    return helper, set_k


SETTINGS = argparse.Namespace(scale=2.0, relu=False)


def test_callee_closures_and_settings_objects_are_guarded():
    """Values read one step away from the compiled function: a helper's closure cell, a global settings
    object's attribute (`args.scale`), a module's config dataclass and settings dict.  Each is baked into the
    graph at capture; changing it must recapture (torch guards each read), never replay the old value."""
    helper, set_k = _closure_pair()

    def fn(x):
        y = helper(x) * SETTINGS.scale
        return y.relu() if SETTINGS.relu else y

    compiled = ember.compile(fn)
    x = ember.tensor([-1.0, 2.0])
    try:
        for k, scale, relu in ((2.0, 2.0, False), (5.0, 2.0, False), (5.0, 3.0, False), (5.0, 3.0, True),
                               (5.0, 3.0, True)):
            set_k(k)
            SETTINGS.scale, SETTINGS.relu = scale, relu
            np.testing.assert_array_equal(compiled(x).numpy(), fn(x).numpy())
    finally:
        SETTINGS.scale, SETTINGS.relu = 2.0, False
    assert compiled.captures == 4

    @dataclasses.dataclass
    class Config:
        scale: float = 1.0
        kernel: tuple = (1, 1)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = Config()
            self.options = {"clip": False}
            self.linear = nn.Linear(2, 2)

        def forward(self, x):
            y = self.linear(x) * self.config.scale * sum(self.config.kernel)
            return y.clamp(-0.01, 0.01) if self.options["clip"] else y

    model = Model()
    compiled_model = ember.compile(model)
    for change in (lambda: None, lambda: setattr(model.config, "scale", 10.0),
                   lambda: setattr(model.config, "kernel", (2, 3)), lambda: model.options.update(clip=True)):
        change()
        np.testing.assert_array_equal(compiled_model(x).detach().numpy(), model(x).detach().numpy())
    assert compiled_model._compiled.captures == 4
    assert "module attributes" in compiled_model._compiled.last_reason


def test_settings_guards_leave_other_objects_alone():
    """Objects that are not settings (a module, a function, ember's optimizer, a large dict) are guarded by
    identity only (a large container by identity and length), and an unchanged settings object replays
    without recapture."""
    from ember._compile import pyguards

    linear = nn.Linear(2, 2)
    assert pyguards._settings(linear) is None and pyguards._settings(np) is None
    assert pyguards._settings(ember.optim.SGD(linear.parameters(), lr=0.1)) is None
    assert pyguards._settings(dict.fromkeys(range(2000), 1.0)) is None  # (guarded by identity and length)
    assert pyguards._settings(SETTINGS) is SETTINGS.__dict__
    compiled = ember.compile(lambda x: x * SETTINGS.scale)
    for _ in range(3):
        compiled(ember.ones(2))
    assert compiled.captures == 1


class _ClassConfig:
    scale = 2.0


@dataclasses.dataclass(slots=True)
class _SlotsConfig:
    scale: float
_NamedConfig = collections.namedtuple("_NamedConfig", "scale")
DTYPE = ember.float32
NUMPY_SCALE = np.float32(2.0)
WEIGHTS = [1.0]


def test_more_python_values_are_guarded():
    """Class attributes, slots dataclasses, namedtuples, dtypes, NumPy scalars, lists: each was replayed at its
    captured value after it changed."""
    global DTYPE, NUMPY_SCALE
    slots, named = _SlotsConfig(2.0), _NamedConfig(2.0)
    cases = [
        (lambda x: x * _ClassConfig.scale, lambda: setattr(_ClassConfig, "scale", 3.0)),
        (lambda x: x * slots.scale, lambda: setattr(slots, "scale", 3.0)),
        (lambda x: x.to(DTYPE), lambda: globals().update(DTYPE=ember.float64)),
        (lambda x: x * NUMPY_SCALE, lambda: globals().update(NUMPY_SCALE=np.float32(7.0))),
        (lambda x: x * WEIGHTS[0], lambda: WEIGHTS.__setitem__(0, 4.0)),
    ]
    x = ember.ones(2)
    try:
        for fn, change in cases:
            compiled = ember.compile(fn)
            compiled(x)
            change()
            result, expected = compiled(x), fn(x)
            assert result.dtype == expected.dtype
            np.testing.assert_array_equal(result.numpy(), expected.numpy())
        compiled = ember.compile(lambda x: x * named.scale)
        compiled(x)
        named = _NamedConfig(9.0)  # noqa: F841 - the closure cell is rebound
        # (a closure cell holding a namedtuple is guarded by value)
    finally:
        _ClassConfig.scale, DTYPE, NUMPY_SCALE, WEIGHTS[0] = 2.0, ember.float32, np.float32(2.0), 1.0


def test_modules_in_containers_and_rebound_parameters_are_guarded():
    """eval() on a module held in a dict, a namespace or a list attribute, and a parameter or buffer of a
    global module rebound: the graph kept the old mode or the old tensors."""
    dropouts = {"enc": nn.Dropout(0.5)}
    holder = argparse.Namespace(drop=nn.Dropout(0.5))

    class WithList(nn.Module):
        def __init__(self):
            super().__init__()
            self.helpers = [nn.Dropout(0.5)]

        def forward(self, x):
            return self.helpers[0](x)

    with_list = WithList()
    x = ember.ones(4)
    for fn, module in ((lambda x: dropouts["enc"](x), dropouts["enc"]), (lambda x: holder.drop(x), holder.drop),
                       (with_list, with_list.helpers[0])):
        compiled = ember.compile(fn)
        compiled(x)
        module.eval()
        np.testing.assert_array_equal(compiled(x).numpy(), np.ones(4, np.float32))
    linear = nn.Linear(2, 2)
    compiled = ember.compile(lambda x: linear(x))
    compiled(ember.ones(1, 2))
    linear.weight = nn.Parameter(ember.zeros(2, 2))
    np.testing.assert_array_equal(compiled(ember.ones(1, 2)).detach().numpy(), linear.bias.detach().numpy()[None])


def test_private_and_class_attributes_of_a_module_are_guarded():
    class Scaled(nn.Module):
        factor = 2.0

        def __init__(self):
            super().__init__()
            self._scale = 2.0

        def forward(self, x):
            return x * self._scale * self.factor

    model = Scaled()
    compiled = ember.compile(model)
    x = ember.ones(2)
    compiled(x)
    model._scale = 3.0
    np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    Scaled.factor = 5.0
    np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    assert compiled._compiled.captures == 3


def test_another_profiler_is_left_in_place():
    """Globals are found with sys.setprofile while tracing; a profiler already installed keeps running."""
    import sys

    calls = []

    def profiler(frame, event, arg):
        calls.append(event)

    sys.setprofile(profiler)
    try:
        ember.compile(lambda x: x * SCALE + 1)(ember.ones(2))
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    assert calls


STATS: dict = {}


def test_python_writes_during_the_call_run_eagerly():
    """A replay would not append to a list argument or write a global dict: such calls run eagerly (a graph
    break naming the write), so every call makes its writes."""
    def collect(x, activations):
        activations.append(x.relu())
        STATS["mean"] = x.mean()
        return x * 2

    compiled = ember.compile(collect)
    for i in range(3):
        activations = []
        compiled(ember.ones(2) * i, activations)
        assert len(activations) == 1 and STATS["mean"].item() == i
    reasons = [b.reason for b in compiled.graph_breaks]
    assert any("args[1]" in r and "global STATS" in r for r in reasons), reasons

    class Keeps(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)
            self.last = None

        def forward(self, x):
            y = self.linear(x)
            self.last = y.detach()
            return y

    model = Keeps()
    compiled_model = ember.compile(model)
    for i in range(3):
        out = compiled_model(ember.ones(1, 2) * i)
        assert np.array_equal(model.last.numpy(), out.detach().numpy())
    # a module attribute set to a tensor the graph computes is set again by each replay
    # (tests/compile/test_attribute_writes.py): no eager fallback
    assert compiled_model._compiled.captures == 2 and not compiled_model._compiled.cache[
        next(iter(compiled_model._compiled.cache))].eager
    with pytest.raises(ember.compiler.Unsupported, match="Python state written"):
        ember.compile(collect, fullgraph=True)(ember.ones(2), [])


def test_hooks_registered_inside_run_eagerly():
    """A replay makes new tensors, so it could not register a tensor hook on them (nor retain their grad):
    registering one inside a compiled function is a graph break, and the hook runs on every call."""
    def fn(x):
        y = x * 2
        y.register_hook(lambda g: g * 10)
        return (y * y).sum()

    compiled = ember.compile(fn)
    for _ in range(3):
        x = ember.ones(3, requires_grad=True)
        compiled(x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 80.0))
    assert "register_hook" in compiled.graph_breaks[0].reason


WEIGHT = ember.ones(3)


def test_rebound_tensor_names_recapture():
    """A graph reads the tensors it names at their current values (in-place updates are seen), but a global,
    a closure variable or a plain module attribute rebound to another tensor needs a new capture: guarded
    by identity."""
    global WEIGHT
    x = ember.ones(3)

    def scaled(x):
        return x * WEIGHT

    compiled = ember.compile(scaled)
    try:
        compiled(x)
        WEIGHT = ember.full((3,), 2.0)
        assert compiled(x).tolist() == [2.0, 2.0, 2.0]
    finally:
        WEIGHT = ember.ones(3)

    offset = ember.ones(3)

    def shifted(x):
        return x + offset

    compiled = ember.compile(shifted)
    compiled(x)
    offset = ember.zeros(3)
    assert compiled(x).tolist() == [1.0, 1.0, 1.0]

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = ember.ones(3)  # a plain attribute, not a registered buffer

        def forward(self, x):
            return x * self.mask

    model = Masked()
    compiled_model = ember.compile(model)
    compiled_model(x)
    model.mask = ember.zeros(3)
    assert compiled_model(x).tolist() == [0.0, 0.0, 0.0]
    model.mask.add_(5.0)  # in place: no recapture needed, the graph reads it live
    assert compiled_model(x).tolist() == [5.0, 5.0, 5.0]


def test_one_time_setup_writes_are_retried_once():
    """Writes made only on the first call (an attribute cached on first use, a lazy module's parameters) do
    not condemn the call to eager mode: the next call captures again and, writing nothing, compiles; writes
    on every call run eagerly after that second capture."""
    class CachesMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            if not hasattr(self, "_mask"):
                self._mask = ember.ones(4)
            return self.linear(x) * self._mask

    model = CachesMask()
    compiled = ember.compile(model)._compiled
    for _ in range(4):
        out = compiled(ember.ones(2, 4))
    np.testing.assert_allclose(out.detach().numpy(), model(ember.ones(2, 4)).detach().numpy())
    assert compiled.captures == 2 and [entry.eager for entry in compiled.cache.values()] == [False]

    every = ember.compile(_appends_to_log)
    for _ in range(4):
        every(ember.ones(2))
    assert len(CALL_LOG) == 4 and every.captures == 2 and all(entry.eager for entry in every.cache.values())


STATS = {"calls": 0}


def test_a_settings_dict_the_function_writes_runs_eagerly_without_recompiles():
    """A small global dict is guarded by content, but one the function updates every call (a counter) is
    keyed by identity once seen written: the call runs eagerly, not recaptured until the recompile limit."""
    def counts(x):
        STATS["calls"] += 1
        return x * 2

    compiled = ember.compile(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            compiled(ember.ones(2))
    assert STATS["calls"] == 12 and compiled.captures == 2 and compiled.recompiles == 0


CALL_LOG: list = []


def _appends_to_log(x):
    CALL_LOG.append(1)
    return x + 1


def test_installed_packages_count_as_user_code():
    """Globals of ember, NumPy and the standard library are not guarded (they are not the user's settings);
    a model library installed in site-packages (under the stdlib prefix on most systems) is user code."""
    import json
    import os
    import sysconfig

    from ember._compile import pyguards

    assert pyguards._library(np.__file__) and pyguards._library(json.__file__)
    assert pyguards._library(pyguards.__file__) and not pyguards._library(__file__)
    installed = os.path.join(sysconfig.get_paths()["stdlib"], "site-packages", "models", "gpt.py")
    assert not pyguards._library(installed)


def test_inference_mode_entered_inside_replays_inference_tensors():
    """An @inference_mode() body makes inference tensors; its replay must too (the runner enters inference
    mode for the call).  inference_mode around only part of the function is a graph break."""
    w = ember.randn(3, 3, requires_grad=True)

    @ember.inference_mode()
    def predict(x):
        return (x @ w).relu()

    compiled = ember.compile(predict)
    for _ in range(3):
        out = compiled(ember.ones(2, 3))
    assert out.is_inference() and not out.requires_grad and compiled.captures == 1
    assert not ember.is_inference_mode_enabled()  # restored after the replay

    def partly(x):
        with ember.inference_mode():
            y = x @ w
        return y, x * 2

    compiled = ember.compile(partly)
    for _ in range(2):
        inside, outside = compiled(ember.ones(2, 3))
    assert inside.is_inference() and not outside.is_inference()
    assert "inference_mode around part" in compiled.graph_breaks[0].reason


def test_embedding_max_norm_renorms_in_the_graph():
    """Embedding(max_norm=...) renormalises the looked-up rows in place without unique() (a size that depends
    on the values): one graph, and the weight after each call equals eager's."""
    ember.manual_seed(0)
    eager, compiled_layer = nn.Embedding(10, 4, max_norm=1.0), nn.Embedding(10, 4, max_norm=1.0)
    compiled_layer.load_state_dict(eager.state_dict())
    compiled = ember.compile(compiled_layer)
    for step in range(3):
        ids = ember.tensor([[1, 3, 1], [step, 7, 3]])
        _same(compiled(ids), eager(ids))
        np.testing.assert_allclose(compiled_layer.weight.detach().numpy(), eager.weight.detach().numpy(), rtol=1e-6)
    assert compiled._compiled.captures == 1 and not compiled._compiled.graph_breaks
