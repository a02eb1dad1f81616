"""ember.fx against torch.fx: the same model source, written against a library namespace (`lib` is ember or
torch), traced by both.  Node sequences (opcode, name, target), generated code, GraphModule outputs and
gradients, graph edits, Interpreter / Transformer subclasses, tracing errors and the pass helpers."""

from __future__ import annotations

import copy
import operator

import numpy as np
import pytest

import ember
import ember.fx
from ember.fx.passes.shape_prop import ShapeProp

torch = pytest.importorskip("torch")
pytest.importorskip("torch.fx")
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp  # noqa: E402

LIBS = {"ember": ember, "torch": torch}


def fx_of(lib):
    return ember.fx if lib is ember else torch.fx


# ---------------------------------------------------------------------------------------------- helpers
def copy_weights(src, dst) -> None:
    """torch module -> ember module (same source, same names)."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


def as_np(t):
    if isinstance(t, ember.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def as_ember_text(text: str) -> str:
    """torch.fx's printing of a torch program, as ember.fx prints the same program: F.gelu is a builtin of
    torch._C._nn and fx.wrap a function of torch.fx._symbolic_trace, which torch.fx prints by those modules."""
    text = text.replace("torch._C._nn.", "torch.nn.functional.").replace("torch.fx._symbolic_trace.", "torch.fx.")
    return text.replace("torch.", "ember.")


def target_str(lib, node) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    if lib is ember:
        return ember.fx.node.Node._pretty_print_target(t)
    return as_ember_text(torch.fx.node.Node._pretty_print_target(t))


def node_seq(lib, gm):
    return [(n.op, n.name, target_str(lib, n)) for n in gm.graph.nodes]


def both(build, *args, **kwargs):
    """(ember module, torch module) from the same builder, weights copied from torch."""
    torch.manual_seed(0)
    theirs = build(torch, *args, **kwargs)
    mine = build(ember, *args, **kwargs)
    copy_weights(theirs, mine)
    return mine, theirs


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------------------------- models
def build_mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 16)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(16, 16)
            self.out = nn.Linear(16, 3)

        def forward(self, x):
            h = self.act(self.fc1(x))
            h = lib.relu(self.fc2(h)) + h
            return self.out(h)

    return MLP()


def build_basic_block(lib, downsample=True):
    nn = lib.nn
    F = lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, inplanes, planes, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.downsample = (nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
                               if downsample else None)

        def forward(self, x):
            identity = x
            out = self.conv1(x)
            out = self.bn1(out)
            out = self.relu(out)
            out = self.conv2(out)
            out = self.bn2(out)
            if self.downsample is not None:
                identity = self.downsample(x)
            out += identity
            return F.relu(out)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Sequential(BasicBlock(3, 4, 2))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            x = self.layer1(x)
            x = self.pool(x)
            x = lib.flatten(x, 1)
            return self.fc(x)

    return Net()


def build_transformer_block(lib):
    nn = lib.nn
    F = lib.nn.functional

    class Block(nn.Module):
        def __init__(self, d=8, heads=2):
            super().__init__()
            self.ln1 = nn.LayerNorm(d)
            self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
            self.ln2 = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)
            self.scale = nn.Parameter(lib.ones(d))

        def forward(self, x, mask=None):
            h = self.ln1(x)
            attn_out, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
            x = x + attn_out
            h = self.fc2(F.gelu(self.fc1(self.ln2(x))))
            x = x + h * self.scale
            b, t, d = x.shape
            return x.reshape(b * t, d).mean(dim=0, keepdim=True)

    return Block()


# ---------------------------------------------------------------------------------------------- tracing
@pytest.mark.parametrize("build, shape", [(build_mlp, (4, 6)), (build_basic_block, (2, 3, 8, 8)),
                                          (build_transformer_block, (2, 5, 8))],
                         ids=["mlp", "basic_block", "transformer_block"])
def test_module_graph_matches_torch_fx_and_runs(build, shape):
    mine, theirs = both(build)
    mine.eval()
    theirs.eval()
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    x = rand(*shape)
    expected = theirs(torch.tensor(x))
    np.testing.assert_allclose(as_np(gm(ember.tensor(x))), as_np(mine(ember.tensor(x))), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x))), as_np(expected), rtol=1e-4, atol=1e-5)
    assert isinstance(gm, ember.fx.GraphModule) and isinstance(gm, ember.nn.Module)
    assert type(gm).__name__ == type(mine).__name__
    assert list(gm.state_dict()) == list(tgm.state_dict())


def test_mlp_code_matches_torch_and_relu_target_is_the_public_function():
    mine, theirs = both(build_mlp)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    assert gm.code == as_ember_text(tgm.code)
    assert str(gm.graph) == as_ember_text(str(tgm.graph))
    relus = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is ember.relu]
    assert len(relus) == 1 and relus[0].name == "relu"
    assert [n.name for n in relus[0].users] == ["add"]


def test_transformer_block_keeps_multihead_attention_as_a_leaf_and_unpacks_with_getitem():
    mine, _ = both(build_transformer_block)
    gm = ember.fx.symbolic_trace(mine)
    attn = [n for n in gm.graph.nodes if n.op == "call_module" and n.target == "attn"]
    assert len(attn) == 1
    assert attn[0].kwargs == {"attn_mask": list(gm.graph.nodes)[1], "need_weights": False}
    getitems = [u for u in attn[0].users]
    assert [u.target for u in getitems] == [operator.getitem, operator.getitem]
    assert [u.args[1] for u in getitems] == [0, 1]


def test_gradients_flow_through_graph_module():
    mine, theirs = both(build_basic_block)
    gm = ember.fx.symbolic_trace(mine)
    x = rand(2, 3, 8, 8, seed=1)
    xe = ember.tensor(x, requires_grad=True)
    gm(xe).pow(2).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    theirs(xt).pow(2).sum().backward()
    np.testing.assert_allclose(as_np(xe.grad), as_np(xt.grad), rtol=1e-4, atol=1e-5)
    # the GraphModule shares the original's parameters, so the grads land on them
    mine_params = dict(mine.named_parameters())
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(as_np(mine_params[name].grad), as_np(p.grad), rtol=1e-4, atol=1e-5)
    assert gm.fc.weight is mine.fc.weight


def functions(lib):
    def arith(x, y):
        z = x + y * 2 - 1 / (x.abs() + 1)
        w = (-z) ** 2 @ y.t() // 3
        return z, w % 2, abs(x) > y, 3 - x, 2 ** x, x.pow(2)

    def indexing(x):
        a = x[0]
        b = x[:, 1:3]
        c = x[..., None, -1]
        n = x.shape[0]
        m = x.size(1)
        return a, b, c, x.view(n, m, 1), x.size(), x.dim()

    def methods_and_kwargs(x, y, scale: float = 2.0):
        s = x.sum(dim=1, keepdim=True)
        t = lib.cat([x, y], dim=-1)
        u = lib.softmax(t, dim=-1)
        v = lib.add(x, y, alpha=scale)
        w = lib.where(x > 0, x, y).clamp(min=-0.5, max=0.5)
        return s, u.transpose(0, 1).contiguous(), v, w, lib.stack((x, y)).mean(0)

    return {"arith": arith, "indexing": indexing, "methods_and_kwargs": methods_and_kwargs}


@pytest.mark.parametrize("name", ["arith", "indexing", "methods_and_kwargs"])
def test_functions_trace_like_torch_fx(name):
    gm = ember.fx.symbolic_trace(functions(ember)[name])
    tgm = torch.fx.symbolic_trace(functions(torch)[name])
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)
    x, y = rand(3, 4), rand(3, 4, seed=1)
    args = (x,) if name == "indexing" else (x, y)
    mine = gm(*map(ember.tensor, args))
    theirs = tgm(*map(torch.tensor, args))
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        if isinstance(b, torch.Tensor):
            np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-5, atol=1e-6)
        else:
            assert tuple(a) == tuple(b) if isinstance(b, tuple) else a == b


def test_buffer_and_constant_tensor_attributes_become_get_attr_like_torch():
    def build(lib):
        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("buf", lib.ones(4))
                self.p = lib.nn.Parameter(lib.ones(4) * 3)
                self.c = lib.arange(4.0)

            def forward(self, x):
                a = self.buf + x
                b = x * self.c + self.p
                return a, b, self.buf.sum(), self.p * self.p

        return M()

    mine, theirs = build(ember), build(torch)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)
    out = gm(ember.ones(4))
    np.testing.assert_allclose(as_np(out[0]), np.full(4, 2.0))
    np.testing.assert_allclose(as_np(out[2]), 4.0)
    assert set(gm.state_dict()) == set(tgm.state_dict())


def test_concrete_args_specialise_like_torch():
    def f(lib):
        def fn(x, flag, bias=None):
            if flag:
                x = x + 1
            if bias is not None:
                x = x + bias
            return lib.relu(x)

        return fn

    gm = ember.fx.symbolic_trace(f(ember), concrete_args={"flag": True, "bias": None})
    tgm = torch.fx.symbolic_trace(f(torch), concrete_args={"flag": True, "bias": None})
    mine = [(op, name, t.replace("ember._assert", "ember.fx._assert")) for op, name, t in node_seq(torch, tgm)]
    assert [(op, name) for op, name, _ in node_seq(ember, gm)] == [(op, name) for op, name, _ in mine]
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is operator.eq
    x = rand(3)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x), True, None)), np.maximum(x + 1, 0), rtol=1e-6)
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gm(ember.tensor(x), False, None)


def test_placeholder_defaults_and_star_args():
    def fn(x, *args, scale=3, **kwargs):
        return x * scale + args[0]

    gm = ember.fx.symbolic_trace(fn)
    tgm = torch.fx.symbolic_trace(fn)
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)


# ---------------------------------------------------------------------------------------------- errors
def test_control_flow_on_a_proxy_is_a_trace_error():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ember.fx.proxy.TraceError,
                       match="symbolically traced variables cannot be used as inputs to control flow"):
        ember.fx.symbolic_trace(f)
    assert issubclass(ember.fx.proxy.TraceError, ValueError)


def test_iterating_a_proxy_is_a_trace_error_but_unpacking_records_getitems():
    def loop(x):
        return [r for r in x]

    with pytest.raises(ember.fx.proxy.TraceError, match="Proxy object cannot be iterated"):
        ember.fx.symbolic_trace(loop)

    def unpack(x):
        a, b = x.chunk(2)
        return b - a

    gm = ember.fx.symbolic_trace(unpack)
    assert node_seq(ember, gm) == node_seq(torch, torch.fx.symbolic_trace(unpack))

    with pytest.raises(RuntimeError, match="'len' is not supported in symbolic tracing"):
        ember.fx.symbolic_trace(lambda x: len(x))


def test_patches_are_restored_even_when_tracing_raises():
    relu, f_relu, add, cat, call = ember.relu, ember.nn.functional.relu, ember.Tensor.__add__, ember.cat, \
        ember.nn.Module.__call__
    add_method = ember.Tensor.__dict__["add"]  # (the same function as __add__, until __torch_function__ wraps each)
    getattr_ = ember.nn.Module.__getattr__

    def bad(x):
        ember.relu(x)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        ember.fx.symbolic_trace(bad)
    ember.fx.symbolic_trace(build_mlp(ember))
    assert ember.relu is relu and ember.nn.functional.relu is f_relu and ember.cat is cat
    assert ember.Tensor.__add__ is add and ember.Tensor.__dict__["add"] is add_method
    assert ember.nn.Module.__call__ is call and ember.nn.Module.__getattr__ is getattr_
    assert ember.relu(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


# ---------------------------------------------------------------------------------------------- wrap
def my_leaf(x, y):
    return x * 2 + y


ember.fx.wrap("my_leaf")
torch.fx.wrap("my_leaf")


def test_wrap_records_a_leaf_call_function():
    def f(x, y):
        return my_leaf(x, y).relu()

    gm, tgm = ember.fx.symbolic_trace(f), torch.fx.symbolic_trace(f)
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    node = list(gm.graph.nodes)[2]
    assert node.op == "call_function" and node.target is my_leaf
    assert gm.code == as_ember_text(tgm.code)
    x, y = rand(3), rand(3, seed=2)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x), ember.tensor(y))), np.maximum(2 * x + y, 0), rtol=1e-6)


# ---------------------------------------------------------------------------------------------- graph edits
def swap_relu_for_gelu(lib, gm):
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is lib.relu:
            with graph.inserting_after(node):
                new = graph.call_function(lib.nn.functional.gelu, node.args, node.kwargs)
            node.replace_all_uses_with(new)
            graph.erase_node(node)
    graph.lint()
    gm.recompile()
    return gm


def test_replace_relu_with_gelu_like_torch():
    mine, theirs = both(build_mlp)
    gm = swap_relu_for_gelu(ember, ember.fx.symbolic_trace(mine))
    tgm = swap_relu_for_gelu(torch, torch.fx.symbolic_trace(theirs))
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)
    assert "gelu" in gm.code and "ember.relu" not in gm.code
    x = rand(4, 6, seed=3)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x))), as_np(tgm(torch.tensor(x))), rtol=1e-4, atol=1e-5)


def insert_scale_after_linear(lib, gm):
    graph = gm.graph
    for node in list(graph.nodes):
        if node.op == "call_module" and node.target == "fc2":
            with graph.inserting_after(node):
                scaled = graph.call_function(operator.mul, (node, 0.5))
            node.replace_all_uses_with(scaled, delete_user_cb=lambda user: user is not scaled)
    with graph.inserting_before(list(graph.nodes)[1]):
        graph.call_method("neg", (list(graph.nodes)[0],))  # dead code
    gm.recompile()
    return gm


def test_insert_node_and_eliminate_dead_code_like_torch():
    mine, theirs = both(build_mlp)
    gm = insert_scale_after_linear(ember, ember.fx.symbolic_trace(mine))
    tgm = insert_scale_after_linear(torch, torch.fx.symbolic_trace(theirs))
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)
    x = rand(4, 6, seed=4)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x))), as_np(tgm(torch.tensor(x))), rtol=1e-4, atol=1e-5)
    assert gm.graph.eliminate_dead_code() is True and tgm.graph.eliminate_dead_code() is True
    gm.recompile()
    tgm.recompile()
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert "neg" not in gm.code
    assert gm.graph.eliminate_dead_code() is False
    np.testing.assert_allclose(as_np(gm(ember.tensor(x))), as_np(tgm(torch.tensor(x))), rtol=1e-4, atol=1e-5)


def test_erase_node_with_users_raises_and_lint_catches_bad_order():
    gm = ember.fx.symbolic_trace(build_mlp(ember))
    fc1 = next(n for n in gm.graph.nodes if n.target == "fc1")
    with pytest.raises(RuntimeError, match="still had 1 users"):
        gm.graph.erase_node(fc1)
    x = next(iter(gm.graph.nodes))
    out = next(n for n in gm.graph.nodes if n.op == "output")
    out.prepend(fc1)  # fc1 after its user
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        gm.graph.lint()
    assert fc1.args == (x,)


def test_build_a_graph_by_hand():
    for lib in (ember, torch):
        graph = fx_of(lib).Graph()
        x = graph.placeholder("x")
        y = graph.call_function(lib.sigmoid, (x,))
        z = graph.call_method("mul", (y, x))
        w = graph.call_function(operator.add, (z, 1.0), name="out_add")
        graph.output(w)
        gm = fx_of(lib).GraphModule(lib.nn.Module(), graph)
        if lib is ember:
            code, seq = gm.code, node_seq(lib, gm)
            res = gm(ember.tensor([0.5]))
        else:
            assert code == as_ember_text(gm.code)
            assert seq == node_seq(lib, gm)
            np.testing.assert_allclose(as_np(res), as_np(gm(torch.tensor([0.5]))), rtol=1e-6)


def test_node_api_users_args_replace_input_with_and_meta():
    gm = ember.fx.symbolic_trace(functions(ember)["arith"])
    nodes = list(gm.graph.nodes)
    x, y = nodes[0], nodes[1]
    add = next(n for n in nodes if n.name == "add")
    assert add.args[0] is x and add in x.users
    assert add.op == "call_function" and add.target is operator.add
    add.replace_input_with(x, y)
    assert add.args[0] is y and add not in x.users and add in y.users
    assert add.all_input_nodes == [y, add.args[1]]
    add.meta["tag"] = 1
    assert add.meta["tag"] == 1
    with pytest.raises(TypeError):
        add.args[0:1] = (x,)  # args are immutable; edit through the setter
    add.args = (x, add.args[1])
    assert add.args[0] is x and add in x.users


# ---------------------------------------------------------------------------------------------- Interpreter
def interpreter_classes(lib):
    fx = fx_of(lib)

    class SwapReluForSigmoid(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target in (lib.relu, lib.nn.functional.relu):
                return lib.sigmoid(*args)
            return super().call_function(target, args, kwargs)

        def call_module(self, target, args, kwargs):
            self.seen.append(target)
            return super().call_module(target, args, kwargs)

    class NegSigmSwap(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is lib.relu:
                return lib.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            return super().call_method(target, args, kwargs)

    return SwapReluForSigmoid, NegSigmSwap


def test_interpreter_subclass_matches_torch():
    mine, theirs = both(build_mlp)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    x = rand(4, 6, seed=5)
    results = []
    for lib, module, xx in ((ember, gm, ember.tensor(x)), (torch, tgm, torch.tensor(x))):
        interp_cls, _ = interpreter_classes(lib)
        interp = interp_cls(module)
        interp.seen = []
        results.append((as_np(interp.run(xx)), interp.seen))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4, atol=1e-5)
    assert results[0][1] == results[1][1] == ["fc1", "act", "fc2", "out"]
    # the plain Interpreter reproduces the module
    np.testing.assert_allclose(as_np(ember.fx.Interpreter(gm).run(ember.tensor(x))), as_np(gm(ember.tensor(x))))


def test_interpreter_error_names_the_node():
    gm = ember.fx.symbolic_trace(lambda x: x.view(7, -1))
    with pytest.raises(Exception, match="While executing %view"):
        ember.fx.Interpreter(gm).run(ember.zeros(3, 4))


def test_transformer_subclass_matches_torch():
    mine, theirs = both(build_mlp)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    new = interpreter_classes(ember)[1](gm).transform()
    tnew = interpreter_classes(torch)[1](tgm).transform()
    assert node_seq(ember, new) == node_seq(torch, tnew)
    assert new.code == as_ember_text(tnew.code)
    assert any(n.target is ember.neg for n in new.graph.nodes)
    x = rand(4, 6, seed=6)
    np.testing.assert_allclose(as_np(new(ember.tensor(x))), as_np(tnew(torch.tensor(x))), rtol=1e-4, atol=1e-5)
    assert ember.neg is not None and ember.neg(ember.tensor([1.0])).tolist() == [-1.0]  # patches undone


# ---------------------------------------------------------------------------------------------- GraphModule
def test_print_readable_str_and_tabular(capsys):
    mine, theirs = both(build_mlp)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    assert gm.print_readable(print_output=False) == as_ember_text(tgm.print_readable(print_output=False))
    assert str(gm).endswith(gm.code + "\n# To see more debug info, please use `graph_module.print_readable()`")
    gm.graph.print_tabular()
    out = capsys.readouterr().out
    assert out.split()[:5] == ["opcode", "name", "target", "args", "kwargs"]
    assert "call_module    fc1" in out


def test_retrace_deepcopy_and_parameter_sharing():
    mine, _ = both(build_transformer_block)
    gm = ember.fx.symbolic_trace(mine)
    again = ember.fx.symbolic_trace(gm)
    assert node_seq(ember, again) == node_seq(ember, gm)
    dup = copy.deepcopy(gm)
    assert dup.code == gm.code and dup.fc1.weight is not gm.fc1.weight
    x = ember.tensor(rand(2, 5, 8, seed=7))
    mine.eval(), gm.eval(), again.eval(), dup.eval()
    for other in (again, dup):
        np.testing.assert_allclose(as_np(other(x)), as_np(gm(x)), rtol=1e-6, atol=1e-6)
    assert type(dup) is not type(gm)  # one class per instance, each with its own forward


def test_graph_module_pickles_and_saves():
    import io
    import pickle

    mine, _ = both(build_mlp)
    gm = ember.fx.symbolic_trace(mine)
    x = ember.tensor(rand(4, 6, seed=11))
    again = pickle.loads(pickle.dumps(gm))
    assert again.code == gm.code
    np.testing.assert_allclose(as_np(again(x)), as_np(gm(x)))
    buffer = io.BytesIO()
    ember.save(gm, buffer)
    buffer.seek(0)
    np.testing.assert_allclose(as_np(ember.load(buffer, weights_only=False)(x)), as_np(gm(x)))


# ---------------------------------------------------------------------------------------------- passes
def test_shape_prop_matches_torch():
    mine, theirs = both(build_basic_block)
    gm, tgm = ember.fx.symbolic_trace(mine), torch.fx.symbolic_trace(theirs)
    x = rand(2, 3, 8, 8, seed=8)
    ShapeProp(gm).propagate(ember.tensor(x))
    TorchShapeProp(tgm).propagate(torch.tensor(x))
    for n, tn in zip(gm.graph.nodes, tgm.graph.nodes):
        assert ("tensor_meta" in n.meta) == ("tensor_meta" in tn.meta), n.name
        if "tensor_meta" in n.meta:
            assert tuple(n.meta["tensor_meta"].shape) == tuple(tn.meta["tensor_meta"].shape), n.name
            assert str(n.meta["tensor_meta"].dtype).split(".")[-1] == str(tn.meta["tensor_meta"].dtype).split(".")[-1]


def test_replace_pattern_matches_torch():
    def model(lib):
        def f(x, w):
            a = lib.sigmoid(x) * x
            b = lib.relu(a + w)
            c = lib.sigmoid(b) * b
            return c - a

        return f

    def pattern(lib):
        def p(x):
            return lib.sigmoid(x) * x

        return p

    def replacement(lib):
        def r(x):
            return lib.nn.functional.silu(x)

        return r

    gm = ember.fx.symbolic_trace(model(ember))
    tgm = torch.fx.symbolic_trace(model(torch))
    matches = ember.fx.subgraph_rewriter.replace_pattern(gm, pattern(ember), replacement(ember))
    tmatches = torch.fx.subgraph_rewriter.replace_pattern(tgm, pattern(torch), replacement(torch))
    assert len(matches) == len(tmatches) == 2
    assert [(op, t) for op, _, t in node_seq(ember, gm)] == [(op, t) for op, _, t in node_seq(torch, tgm)]
    x, w = rand(5, seed=9), rand(5, seed=10)
    np.testing.assert_allclose(as_np(gm(ember.tensor(x), ember.tensor(w))),
                               as_np(tgm(torch.tensor(x), torch.tensor(w))), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- ember's functions
def attention(lib):
    import math

    softmax = lib.softmax  # a name bound before tracing (closure) is still recorded

    def attn(q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        mask = lib.ones_like(scores).tril()
        scores = scores.masked_fill(mask == 0, float("-inf"))
        return softmax(scores, dim=-1) @ v, lib.zeros_like(q[:, 0]) + q.shape[0]

    return attn


def test_closures_math_autowrap_and_factory_calls_trace_like_torch():
    gm, tgm = ember.fx.symbolic_trace(attention(ember)), torch.fx.symbolic_trace(attention(torch))
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    assert gm.code == as_ember_text(tgm.code)
    q, k, v = rand(2, 3, 4), rand(2, 3, 4, seed=1), rand(2, 3, 4, seed=2)
    mine = gm(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    theirs = tgm(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-5, atol=1e-6)


def test_functional_calls_record_the_arguments_as_written():
    # torch's Python-level functionals (F.softmax, F.relu) record their defaults too (`_stacklevel = 3`,
    # `inplace = False`); ember records the call as the program wrote it
    gm = ember.fx.symbolic_trace(lambda x: ember.nn.functional.softmax(ember.nn.functional.relu(x), dim=-1))
    tgm = torch.fx.symbolic_trace(lambda x: torch.nn.functional.softmax(torch.nn.functional.relu(x), dim=-1))
    assert node_seq(ember, gm) == node_seq(torch, tgm)
    relu, softmax = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert relu.target is ember.nn.functional.relu and relu.kwargs == {}
    assert softmax.target is ember.nn.functional.softmax and softmax.kwargs == {"dim": -1}
    assert "ember.nn.functional.softmax(relu, dim = -1)" in gm.code


def test_ember_functions_keep_their_identity_and_code_after_tracing():
    code = ember.relu.__code__
    sig = str(__import__("inspect").signature(ember.nn.functional.softmax))
    ember.fx.symbolic_trace(build_transformer_block(ember))
    assert ember.relu.__code__ is code
    assert str(__import__("inspect").signature(ember.nn.functional.softmax)) == sig
