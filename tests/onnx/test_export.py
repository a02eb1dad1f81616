"""ember.onnx.export on real models (MLP, CNN with BatchNorm and pooling, Transformer encoder layer, GPT with causal
attention and embeddings, LSTM, GRU) and its API: names, dynamic axes, files, modes, options and errors.

Every exported model passes onnx.checker (full check) and is run with onnxruntime against ember's eager output
(rtol = atol = 1e-5 in float32), at the export's sizes and, with dynamic axes, at other sizes."""

import io
import subprocess
import sys
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx_export_helpers import Fn, check_export, compare, export_bytes, run, session_of

import ember as torch
import ember.nn as nn
import ember.nn.functional as F
import ember.onnx

# ---------------------------------------------------------------- models


def _mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 32), nn.GELU(),
                         nn.Linear(32, 3)).eval()


def _cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    return model.eval()


class Block(nn.Module):
    """A pre-norm GPT block: causal scaled_dot_product_attention and a GELU MLP."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=50, width=32, heads=4, context=16, layers=2):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def test_mlp_with_dynamic_batch():
    proto = check_export(_mlp(), (torch.randn(4, 10),), other_args=[(torch.randn(7, 10),), (torch.randn(1, 10),)],
                         input_names=["x"], output_names=["logits"], dynamic_axes={"x": {0: "batch"},
                                                                                   "logits": {0: "batch"}})
    assert [d.dim_param or d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim] == ["batch", 10]
    assert [d.dim_param or d.dim_value for d in proto.graph.output[0].type.tensor_type.shape.dim] == ["batch", 3]


def test_cnn_with_batch_norm_and_pooling():
    proto = check_export(_cnn(), (torch.randn(2, 3, 16, 16),), other_args=[(torch.randn(5, 3, 16, 16),)],
                         input_names=["image"], dynamic_axes={"image": {0: "batch"}})
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "MaxPool", "Gemm"} <= ops


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_with_padding_mask(norm_first):
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=norm_first).eval()
    model = Fn(lambda x, mask: layer(x, src_key_padding_mask=mask)).eval()
    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[0, 3:] = True
    other_mask = torch.zeros(3, 8, dtype=torch.bool)
    other_mask[1, 2:] = True
    check_export(model, (torch.randn(2, 5, 16), mask), other_args=[(torch.randn(3, 8, 16), other_mask)],
                 input_names=["x", "mask"], dynamic_axes={"x": {0: "batch", 1: "seq"},
                                                          "mask": {0: "batch", 1: "seq"}})


def test_gpt_with_causal_attention_embeddings_and_dynamic_sequence():
    model = GPT().eval()
    proto = check_export(model, (torch.randint(0, 50, (2, 6)),),
                         other_args=[(torch.randint(0, 50, (3, 11)),), (torch.randint(0, 50, (1, 16)),)],
                         dynamic_axes={"idx": {0: "batch", 1: "seq"}})
    initializers = {t.name for t in proto.graph.initializer}
    assert {"tokens.weight", "positions.weight", "blocks.0.qkv.weight", "ln.bias"} <= initializers
    assert "head.weight" not in initializers  # tied to tokens.weight: stored once
    assert [i.name for i in proto.graph.input] == ["idx"]


def test_lstm_bidirectional_two_layers_with_states():
    lstm = nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True).eval()
    check_export(lstm, (torch.randn(2, 3, 4),), other_args=[(torch.randn(4, 7, 4),)], input_names=["x"],
                 dynamic_axes={"x": {0: "batch", 1: "seq"}})
    h0, c0 = torch.randn(4, 2, 8), torch.randn(4, 2, 8)
    model = Fn(lambda x, h, c: lstm(x, (h, c))).eval()
    proto = check_export(model, (torch.randn(2, 5, 4), h0, c0))
    assert "LSTM" in {n.op_type for n in proto.graph.node}


def test_gru_unrolled_with_dynamic_batch():
    gru = nn.GRU(4, 8, batch_first=True).eval()
    check_export(gru, (torch.randn(2, 3, 4),), other_args=[(torch.randn(5, 3, 4),)], input_names=["x"],
                 dynamic_axes={"x": {0: "batch"}})


def test_reshapes_that_depend_on_two_dynamic_sizes():
    def fn(x):
        B, T, C = x.shape
        heads = x.reshape(B, T, 2, C // 2).permute(0, 2, 1, 3).reshape(B * 2, T, C // 2)
        return heads.softmax(-1).reshape(B, 2 * T * (C // 2)), x[:, : T - 1].sum(1), x.new_zeros(B, T) + x[..., 0]

    check_export(fn, (torch.randn(2, 3, 4),), other_args=[(torch.randn(5, 7, 4),)], input_names=["x"],
                 dynamic_axes={"x": {0: "batch", 1: "seq"}})


# ---------------------------------------------------------------- names, files, return values


def test_input_output_names_and_defaults():
    model = Fn(lambda x, y: (x + y, {"product": x * y, "list": [x - y]})).eval()
    data = export_bytes(model, (torch.randn(2, 3), torch.randn(2, 3)), input_names=["a"], output_names=["sum"])
    proto = onnx.load_from_string(data)
    assert [i.name for i in proto.graph.input] == ["a", "inputs_1"]
    assert [o.name for o in proto.graph.output] == ["sum", "output_1", "output_2"]
    linear = nn.Linear(3, 2).eval()
    proto = onnx.load_from_string(export_bytes(linear, (torch.randn(4, 3),)))
    assert [i.name for i in proto.graph.input] == ["input"]  # the forward's parameter name
    assert sorted(t.name for t in proto.graph.initializer) == ["bias", "weight"]
    with pytest.raises(ValueError, match="number of input names provided"):
        export_bytes(linear, (torch.randn(4, 3),), input_names=["a", "b"])


def test_dynamic_axes_list_form_gets_torch_names():
    proto = check_export(_mlp(), (torch.randn(3, 10),), other_args=[(torch.randn(6, 10),)], input_names=["x"],
                         output_names=["y"], dynamic_axes={"x": [0], "y": [0]})
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "y_dynamic_axes_1"


def test_static_export_rejects_another_batch_size():
    session = session_of(export_bytes(_mlp(), (torch.randn(3, 10),)))
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument):
        run(session, (torch.randn(4, 10),))


def test_dynamic_shapes_form():
    class Named:
        __name__ = "rows"

    model = Fn(lambda x, y: x @ y).eval()
    proto = check_export(model, (torch.randn(3, 4), torch.randn(4, 5)), other_args=[(torch.randn(6, 4), torch.randn(4, 2))],
                         dynamic_shapes=({0: Named()}, {1: "cols"}))
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in proto.graph.input]
    assert dims == [["rows", 4], [4, "cols"]]
    with pytest.raises(ValueError, match="dynamic_axes when dynamo=False"):
        export_bytes(model, (torch.randn(3, 4), torch.randn(4, 5)), dynamo=False, dynamic_shapes=({0: "rows"}, None))


def test_f_as_path_and_file_objects(tmp_path):
    model, x = _mlp(), torch.randn(2, 10)
    path = tmp_path / "model.onnx"
    program = ember.onnx.export(model, (x,), path)  # torch's default (dynamo=True): weights in model.onnx.data
    assert isinstance(program, ember.onnx.ONNXProgram)
    assert (tmp_path / "model.onnx.data").exists()
    compare(run(session_of(str(path)), (x,)), model, (x,))
    legacy = tmp_path / "legacy.onnx"
    assert ember.onnx.export(model, (x,), str(legacy), dynamo=False) is None
    assert not (tmp_path / "legacy.onnx.data").exists()
    onnx.checker.check_model(str(legacy), full_check=True)
    compare(run(session_of(str(legacy)), (x,)), model, (x,))
    buffer = io.BytesIO()
    ember.onnx.export(model, x, buffer)  # a single tensor as args
    assert buffer.getvalue() == program.model_proto.SerializeToString()
    with open(tmp_path / "handle.onnx", "wb") as handle:
        ember.onnx.export(model, (x,), handle, dynamo=False)
    compare(run(session_of(str(tmp_path / "handle.onnx")), (x,)), model, (x,))


def test_onnx_program_runs_and_saves(tmp_path):
    model, x = _cnn(), torch.randn(2, 3, 8, 8)
    program = ember.onnx.export(model, (x,))
    outputs = program(x)
    np.testing.assert_allclose(outputs[0].numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    program.save(tmp_path / "saved.onnx")
    compare(run(session_of(str(tmp_path / "saved.onnx")), (x,)), model, (x,))
    assert "ONNXProgram(" in repr(program)
    ember.onnx.export(model, (x,), verify=True)


def test_export_params_and_initializers_as_inputs():
    model, x = nn.Linear(3, 2).eval(), torch.randn(4, 3)
    proto = onnx.load_from_string(export_bytes(model, (x,), export_params=False, dynamo=False))
    assert not proto.graph.initializer
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    session = session_of(proto.SerializeToString())
    got = session.run(None, {"input": x.numpy(), "weight": model.weight.detach().numpy(),
                             "bias": model.bias.detach().numpy()})
    compare(got, model, (x,))
    proto = onnx.load_from_string(export_bytes(model, (x,), keep_initializers_as_inputs=True))
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    assert sorted(t.name for t in proto.graph.initializer) == ["bias", "weight"]
    compare(run_with_defaults(proto, x), model, (x,))


def run_with_defaults(proto, x):
    return session_of(proto.SerializeToString()).run(None, {"input": x.numpy()})


def test_kwargs_and_trailing_dict():
    class WithKeyword(nn.Module):
        def forward(self, x, *, scale):
            return x * scale

    model, x, scale = WithKeyword().eval(), torch.randn(2, 3), torch.randn(3)
    want = model(x, scale=scale).numpy()
    for data in (export_bytes(model, (x,), kwargs={"scale": scale}), export_bytes(model, (x, {"scale": scale}))):
        session = session_of(data)
        assert [i.name for i in session.get_inputs()] == ["x", "scale"]
        got = session.run(None, {"x": x.numpy(), "scale": scale.numpy()})[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("opset", [13, 17, 18, 21])
def test_opset_versions(opset):
    proto = check_export(GPT(layers=1).eval(), (torch.randint(0, 50, (2, 5)),),
                         other_args=[(torch.randint(0, 50, (3, 7)),)], opset_version=opset,
                         dynamic_axes={"idx": {0: "batch", 1: "seq"}})
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", opset)]


def test_default_opset_and_invalid_opset():
    proto = onnx.load_from_string(export_bytes(_mlp(), (torch.randn(2, 10),)))
    assert proto.opset_import[0].version == 18
    assert (proto.producer_name, proto.producer_version) == ("ember", torch.__version__)
    with pytest.raises(ValueError, match="opset_version"):
        export_bytes(_mlp(), (torch.randn(2, 10),), opset_version=9)


# ---------------------------------------------------------------- modes


def test_training_mode_follows_torch():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    x = torch.randn(3, 4)
    # dynamo=False: exported in TrainingMode.EVAL (dropout is the identity), the model's mode restored after
    proto = onnx.load_from_string(export_bytes(model, (x,), dynamo=False))
    assert model.training
    model.eval()
    compare(run(session_of(proto.SerializeToString()), (x,)), model, (x,))
    model.train()
    # dynamo=True (torch's default): exported in the mode the model is in, with torch's warning; training-mode
    # dropout draws random numbers, which an ONNX model cannot reproduce
    with pytest.warns(UserWarning, match="training mode"):
        with pytest.raises(ember.onnx.OnnxExporterError, match="random numbers"):
            export_bytes(model, (x,))
    with ember.onnx.select_model_mode_for_export(model, ember.onnx.TrainingMode.EVAL):
        assert not model.training
    assert model.training


def test_is_in_onnx_export():
    seen = []

    def fn(x):
        seen.append(ember.onnx.is_in_onnx_export())
        return x * 2

    assert not ember.onnx.is_in_onnx_export()
    export_bytes(Fn(fn).eval(), (torch.randn(2),))
    assert seen and all(seen)
    assert not ember.onnx.is_in_onnx_export()


def test_compiled_module_and_exported_program():
    model = _mlp()
    check_export(torch.compile(model), (torch.randn(2, 10),))
    x = torch.randn(3, 10)
    program = ember.onnx.export(torch.export.export(model, (x,)))  # args from the program's example inputs
    assert {t.name for t in program.model_proto.graph.initializer} >= {"0.weight", "5.bias"}
    compare(run(session_of(program.model_proto.SerializeToString()), (x,)), model, (x,))


# ---------------------------------------------------------------- errors


def test_unsupported_op_names_the_op_and_the_line():
    model = Fn(lambda x: torch.cumprod(x, 1)).eval()
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError) as info:
        export_bytes(model, (torch.randn(2, 3),))
    message = str(info.value)
    assert "ember::cumprod" in message and "opset version 18" in message
    assert "test_export.py" in message  # the user's line that called the op
    assert isinstance(info.value, ember.onnx.OnnxExporterError) and isinstance(info.value, RuntimeError)
    with pytest.raises(NotImplementedError, match="custom_translation_table"):
        ember.onnx.register_custom_op_symbolic("aten::cumprod", lambda g, x: x, 18)


def test_custom_translation_table_adds_an_op():
    def cumprod(builder, node):  # exp(cumsum(log x)) for positive inputs
        x = builder.arg(node, 0)
        total = builder.add("CumSum", [builder.add("Log", [x]), builder.scalar(node.params["dim"], torch.int64)])
        return builder.add("Exp", [total])

    check_export(lambda x: torch.cumprod(x, 1), (torch.rand(2, 5) + 0.5,),
                 custom_translation_table={"cumprod": cumprod})


def test_graph_break_is_an_error():
    model = Fn(lambda x: x * float(x.sum().item())).eval()
    with pytest.raises(ember.onnx.OnnxExporterError, match="item"):
        export_bytes(model, (torch.randn(3),))


def test_constant_computed_from_inputs_is_refused():
    # a write into a fresh tensor that no op records (raw array access, as library code could do) would leave
    # the example's values in the graph as a constant: the second trace with shifted inputs catches it
    def fn(x):
        fresh = torch.zeros(2, 3)
        fresh._data[...] = x._data
        return fresh * 2

    with pytest.raises(ember.onnx.errors.SymbolicValueError, match="values change with the input values"):
        export_bytes(Fn(fn).eval(), (torch.randn(2, 3),))


def test_pad_exports():
    # F.pad writes its input into fresh zeros with setitem, a recorded op under the tracer (it once was not)
    check_export(lambda x: F.pad(x, (1, 1)) * 2, (torch.randn(2, 3),))


def test_size_dependent_python_is_refused_for_dynamic_axes():
    def fn(x):
        total = x[0]
        for row in range(1, x.shape[0]):  # unrolled: another graph for each batch size
            total = total + x[row]
        return total

    check_export(fn, (torch.randn(3, 4),))  # static: fine
    with pytest.raises(ember.onnx.errors.SymbolicValueError, match="different graph"):
        export_bytes(Fn(fn).eval(), (torch.randn(3, 4),), input_names=["x"], dynamic_axes={"x": {0: "batch"}})


def test_in_place_update_of_a_buffer_is_refused():
    model = nn.BatchNorm1d(3).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ember.onnx.OnnxExporterError, match="in place"):
            export_bytes(model, (torch.randn(4, 3),))


def test_missing_onnx_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ModuleNotFoundError, match="'onnx' package"):
        ember.onnx.export(_mlp(), (torch.randn(2, 10),))


def test_ember_imports_without_onnx_and_torch():
    code = ("import sys; sys.modules['onnx'] = None; import ember, ember.onnx; "
            "assert 'torch' not in sys.modules and ember.onnx.is_in_onnx_export() is False")
    subprocess.run([sys.executable, "-c", code], check=True)
