"""ember.export: capture, run, print, save and load in a fresh process, dynamic batch, graph-break errors."""

import io
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import pytest

import ember
import ember.export
import ember.nn as nn
import ember.nn.functional as F
import ember.safetensors

REPO = pathlib.Path(__file__).resolve().parents[2]


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6)
        self.pool, self.fc = nn.MaxPool2d(2), nn.Linear(6 * 4 * 4, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(ember.flatten(x, 1))


class GPTBlock(nn.Module):
    """Token + position embedding, a causal attention block and an MLP block (LayerNorm, GELU), an LM head."""

    def __init__(self, vocab=50, width=32, heads=4, context=8) -> None:
        super().__init__()
        self.heads = heads
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tok(idx) + self.pos(ember.arange(T))
        q, k, v = self.qkv(self.ln1(x)).split(x.shape[-1], dim=-1)
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, -1))
        x = x + self.out(F.gelu(self.fc(self.ln2(x))))
        return self.head(x)


def _cases():
    ember.manual_seed(0)
    return {
        "mlp": (MLP(), lambda b: ember.randn(b, 8)),
        "cnn": (CNN().eval(), lambda b: ember.randn(b, 3, 8, 8)),
        "gpt": (GPTBlock().eval(), lambda b: ember.randint(0, 50, (b, 8))),
    }


CASES = _cases()
OPS = {
    "mlp": ["linear", "relu", "linear"],
    "cnn": ["convolution", "max_pool", "linear"],
    "gpt": ["index", "native_layer_norm", "linear", "scaled_dot_product_attention", "gelu"],
}


def _call_targets(ep) -> list:
    return [node.target for node in ep.graph.nodes if node.op == "call_function"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_module_equals_eager_bitwise(name):
    model, make = CASES[name]
    x = make(2)
    ep = ember.export.export(model, (x,))
    targets = _call_targets(ep)
    for op in OPS[name]:
        assert op in targets, (op, targets)
    module = ep.module()
    assert isinstance(module, nn.Module)
    assert ember.equal(module(x), model(x))
    other = make(2)  # new values, same shapes: the graph is not specialised on data
    assert ember.equal(module(other), model(other))


def test_exported_module_holds_the_parameters_by_name():
    model, make = CASES["cnn"]
    ep = ember.export.export(model, (make(2),))
    module = ep.module()
    assert list(module.state_dict()) == list(model.state_dict())
    assert sorted(ep.state_dict) == sorted(model.state_dict())  # parameters first, then buffers, as torch
    assert [name for name, _ in ep.named_parameters()] == [name for name, _ in model.named_parameters()]
    assert [name for name, _ in ep.named_buffers()] == [name for name, _ in model.named_buffers()]
    signature = ep.graph_signature
    assert signature.parameters[0] == "conv.weight"
    assert signature.inputs_to_buffers["b_bn_running_mean"] == "bn.running_mean"
    assert signature.user_inputs == ["x"]
    args, kwargs = ep.example_inputs
    assert len(args) == 1 and kwargs == {}
    lifted = [args[0] if spec.kind == "USER_INPUT" else ep.state_dict[spec.target] for spec in signature.input_specs]
    assert ember.equal(ep.graph_module(*lifted)[0], model(args[0]))  # the lifted graph: parameters as inputs


def test_print_shows_op_names_and_signature():
    model, make = CASES["mlp"]
    ep = ember.export.export(model, (make(2),))
    text = str(ep)
    assert "class GraphModule(torch.nn.Module):" in text
    assert 'linear: "f32[2, 16]" = linear(x, p_fc1_weight, p_fc1_bias)' in text
    assert 'relu: "f32[2, 16]" = relu(linear)' in text
    assert "return (linear_1,)" in text
    assert "p_fc1_weight: PARAMETER target='fc1.weight'" in text
    assert "x: USER_INPUT" in text and "linear_1: USER_OUTPUT" in text
    assert "call_function[target=relu](args = (%linear,), kwargs = {})" in str(ep.graph)
    assert ep.graph_module.code.startswith("def forward(self, p_fc1_weight")
    assert ep.module().code == ep.graph_module.code


# ---------------------------------------------------------------- the file format


def _save_io(tmp_path, name, model, x):
    path = tmp_path / f"{name}.pt2"
    ember.export.save(ember.export.export(model, (x,)), path)
    ember.safetensors.save_file({"x": x, "y": model(x)}, tmp_path / f"{name}.io.safetensors")
    return path


# The fresh process imports ember only (no test module, no model class) and forbids unpickling.
FRESH = """
import pickle, sys
def refuse(*args, **kwargs):
    raise AssertionError("ember.export.load unpickled something")
class Refuse:
    def __init__(self, *args, **kwargs):
        refuse()
pickle.load = pickle.loads = refuse
pickle.Unpickler = pickle._Unpickler = Refuse
import ember, ember.export, ember.safetensors
io = ember.safetensors.load_file(sys.argv[2])
ep = ember.export.load(sys.argv[1])
out = ep.module()(io["x"])
print(ember.equal(out, io["y"]), any("test_export" in name for name in sys.modules), ep.graph_signature.user_inputs)
"""


@pytest.mark.parametrize("name", sorted(CASES))
def test_load_in_a_fresh_process(tmp_path, name):
    model, make = CASES[name]
    path = _save_io(tmp_path, name, model, make(3))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", FRESH, str(path), str(tmp_path / f"{name}.io.safetensors")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    expected_input = "idx" if name == "gpt" else "x"
    assert done.stdout.split("\n")[0] == f"True False ['{expected_input}']"


def test_archive_holds_json_and_raw_tensors_only(tmp_path):
    model, make = CASES["cnn"]
    path = _save_io(tmp_path, "cnn", model, make(2))
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert names == ["archive/version", "archive/program.json", "archive/weights.safetensors",
                         "archive/constants.safetensors", "archive/example_inputs.safetensors"]
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            assert not archive.read(info.filename).startswith(b"\x80")  # no pickle protocol header

        def no_constants(token):
            raise AssertionError(f"non-standard JSON constant {token}")

        program = json.loads(archive.read("archive/program.json"), parse_constant=no_constants)
        weights = ember.safetensors.load(archive.read("archive/weights.safetensors"))
    assert [node["target"] for node in program["nodes"]][:2] == ["convolution", "add"]
    conv = program["nodes"][0]
    assert conv["args"] == {"$tuple": [{"$value": "x"}, {"$value": "p_conv_weight"}, {"$value": "p_conv_bias"}]}
    assert conv["params"]["padding"] == {"$tuple": [{"$tuple": [1, 1]}, {"$tuple": [1, 1]}]}
    assert sorted(weights) == sorted(model.state_dict())
    for key, value in model.state_dict().items():
        assert ember.equal(weights[key], value), key


def test_save_and_load_through_file_objects_with_extra_files():
    model, make = CASES["gpt"]
    x = make(2)
    buffer = io.BytesIO()
    ember.export.save(ember.export.export(model, (x,)), buffer, extra_files={"note.txt": "hello"})
    buffer.seek(0)
    extra = {"note.txt": ""}
    loaded = ember.export.load(buffer, extra_files=extra)
    assert extra == {"note.txt": "hello"}
    assert ember.equal(loaded.module()(x), model(x))
    assert str(loaded) == str(ember.export.export(model, (x,)))
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in loaded.module().parameters())


def test_gradients_through_a_loaded_module_equal_eager():
    model, make = CASES["mlp"]
    x = make(4)
    buffer = io.BytesIO()
    ember.export.save(ember.export.export(model, (x,)), buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer).module()
    model.zero_grad()
    model(x).square().sum().backward()
    loaded(x).square().sum().backward()
    for (name, ours), (_, theirs) in zip(loaded.named_parameters(), model.named_parameters()):
        assert ember.equal(ours.grad, theirs.grad), name
    model.zero_grad()


def test_ops_with_shared_names_resolve_to_the_same_op():
    class Divisions(nn.Module):
        def forward(self, x, y):
            return x / y, ember.div(x, y, rounding_mode="floor"), ember.div(x, y, rounding_mode="trunc")

    x, y = ember.randn(5) * 10, ember.randn(5)
    buffer = io.BytesIO()
    ember.export.save(ember.export.export(Divisions(), (x, y)), buffer)
    buffer.seek(0)
    outputs = ember.export.load(buffer).module()(x, y)
    for ours, theirs in zip(outputs, Divisions()(x, y)):
        assert ember.equal(ours, theirs)


# ---------------------------------------------------------------- training mode, randomness, structures


def test_train_mode_batchnorm_updates_buffers_like_eager():
    ember.manual_seed(1)
    model = CNN().train()
    twin = CNN().train()
    twin.load_state_dict(model.state_dict())
    x = ember.randn(4, 3, 8, 8)
    before = model.bn.running_mean.clone()
    ep = ember.export.export(model, (x,))
    assert ember.equal(model.bn.running_mean, before)  # export leaves the module's state alone
    assert "BUFFER_MUTATION target='bn.running_mean'" in str(ep)
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer).module()
    assert ember.equal(loaded(x), twin(x))
    for key in ("bn.running_mean", "bn.running_var", "bn.num_batches_tracked"):
        assert ember.equal(loaded.state_dict()[key], twin.state_dict()[key]), key
    assert loaded.state_dict()["bn.num_batches_tracked"].item() == 1


def test_dropout_in_training_mode_draws_from_the_default_generator():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            return F.dropout(self.fc(x), 0.5, self.training)

    model, x = Net().train(), ember.randn(3, 6)
    ep = ember.export.export(model, (x,))
    ember.manual_seed(7)
    eager = model(x)
    ember.manual_seed(7)
    assert ember.equal(ep.module()(x), eager)


def test_keyword_inputs_and_nested_outputs():
    class Net(nn.Module):
        def forward(self, x, y=None, *, scale=2.0):
            return {"scaled": x * scale, "pair": (x + y, 3)}

    x, y = ember.randn(2), ember.randn(2)
    ep = ember.export.export(Net(), (x,), {"y": y, "scale": 3.0})
    result = ep.module()(x, y=y, scale=3.0)
    expected = Net()(x, y=y, scale=3.0)
    assert ember.equal(result["scaled"], expected["scaled"]) and ember.equal(result["pair"][0], expected["pair"][0])
    assert result["pair"][1] == 3
    with pytest.raises(AssertionError, match=r"Expected input at \*\*kwargs\['scale'\] to be equal to 3.0"):
        ep.module()(x, y=y, scale=4.0)
    with pytest.raises(AssertionError, match=r"Guard failed: x.size\(\)\[0\] == 2 \(got 3\)"):
        ep.module()(ember.randn(3), y=ember.randn(3), scale=3.0)


# ---------------------------------------------------------------- dynamic batch


@pytest.mark.parametrize("name", sorted(CASES))
def test_dynamic_batch_dim(name):
    model, make = CASES[name]
    batch = ember.export.Dim("batch", max=16)
    key = "idx" if name == "gpt" else "x"
    ep = ember.export.export(model, (make(3),), dynamic_shapes={key: {0: batch}})
    assert ep.range_constraints == {"batch": (0, 16)}
    assert f'{key}: "' in str(ep) and "[batch, " in str(ep)
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    module = ember.export.load(buffer).module()
    for size in (1, 2, 5, 16):
        x = make(size)
        assert ember.equal(module(x), model(x)), size
    with pytest.raises(AssertionError, match="Guard failed: batch = 17"):
        module(make(17))


def test_batch_dependent_int_literals_follow_the_batch():
    class Net(nn.Module):
        def forward(self, x):
            return x * x.shape[0] + x.reshape(-1).sum() + x / x.shape[0]

    ep = ember.export.export(Net(), (ember.ones(2, 3),), dynamic_shapes=({0: ember.export.Dim("b")},))
    for size in (2, 4, 7):
        x = ember.ones(size, 3)
        assert ember.equal(ep.module()(x), Net()(x)), size


def test_dynamic_specs_ember_cannot_honour_raise_user_errors():
    class Mean(nn.Module):
        def forward(self, x):
            return x * (1.0 / x.shape[0])  # a float literal that depends on the size: not m * batch

    with pytest.raises(ember.export.UserError, match=r"Constraints violated \(batch\)"):
        ember.export.export(Mean(), (ember.randn(3, 2),), dynamic_shapes={"x": {0: ember.export.Dim("batch")}})

    class Pair(nn.Module):
        def forward(self, x, y):
            return x.sum() + y.sum()

    a, b = ember.export.dims("a", "b")
    with pytest.raises(ember.export.UserError, match="one dynamic size"):
        ember.export.export(Pair(), (ember.randn(3), ember.randn(4)), dynamic_shapes={"x": {0: a}, "y": {0: b}})
    with pytest.raises(ember.export.UserError, match="at least 2"):
        ember.export.export(MLP(), (ember.randn(1, 8),), dynamic_shapes={"x": {0: ember.export.Dim("batch")}})
    with pytest.raises(ember.export.UserError, match="not an input of forward"):
        ember.export.export(MLP(), (ember.randn(2, 8),), dynamic_shapes={"y": {0: ember.export.Dim("batch")}})


# ---------------------------------------------------------------- errors


def test_graph_breaks_raise_with_the_reason():
    class Item(nn.Module):
        def forward(self, x):
            return x * x.sum().item()

    class Branch(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x + 1
            return x - 1

    with pytest.raises(ember.export.Unsupported, match=r"Tensor.item\(\)") as caught:
        ember.export.export(Item(), (ember.randn(3),))
    assert "return x * x.sum().item()" in str(caught.value)
    assert isinstance(caught.value, ember.compiler.Unsupported)
    with pytest.raises(ember.export.Unsupported, match="data-dependent control flow") as caught:
        ember.export.export(Branch(), (ember.randn(3),))
    assert "if x.sum() > 0:" in str(caught.value)


def test_bad_arguments():
    with pytest.raises(ember.export.UserError, match="Expecting `args` to be a tuple"):
        ember.export.export(MLP(), [ember.randn(2, 8)])
    with pytest.raises(ValueError, match="Expected `mod` to be an instance of `torch.nn.Module`"):
        ember.export.export(lambda x: x, (ember.randn(2),))
    with pytest.raises(RuntimeError, match="not an exported program archive"):
        ember.export.load(io.BytesIO(b"not a zip"))


class _ViewWrites(nn.Module):
    def forward(self, x):
        y = x * 2
        y[:, :2] *= 3
        y[y > 3] = 0.0  # the mask is read from the graph at each call (a boolean ArrayArg)
        return y + 1


def test_writes_through_views_and_mask_fills_round_trip(tmp_path):
    model = _ViewWrites()
    program = ember.export.export(model, (ember.randn(4, 6),))
    path = tmp_path / "writes.pt2"
    ember.export.save(program, path)
    loaded = ember.export.load(path).module()
    for _ in range(2):
        x = ember.randn(4, 6)
        assert ember.equal(loaded(x), model(x))
