"""Helpers shared by the ONNX export tests: export, check the model, run it with onnxruntime, compare."""

import io

import numpy as np
import onnx
import onnxruntime as ort

import ember
import ember.onnx


class Fn(ember.nn.Module):
    """A module around a function of tensors (ops are exported through a module, as users do)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def flat_tensors(result) -> list:
    found = []

    def walk(value):
        if isinstance(value, ember.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    walk(result)
    return found


def export_bytes(model, args, **options) -> bytes:
    buffer = io.BytesIO()
    ember.onnx.export(model, args, buffer, **options)
    return buffer.getvalue()


def session_of(data) -> ort.InferenceSession:
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def run(session, args) -> list:
    tensors = flat_tensors(args)
    inputs = session.get_inputs()
    assert len(inputs) == len(tensors)
    return session.run(None, {i.name: t.detach().numpy() for i, t in zip(inputs, tensors)})


def compare(got: list, model, args, rtol=1e-5, atol=1e-5) -> None:
    with ember.no_grad():
        want = flat_tensors(model(*args))
    assert len(got) == len(want)
    for actual, expected in zip(got, want):
        expected = expected.detach().numpy()
        assert actual.shape == expected.shape
        assert actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def check_export(model, args, *, other_args=(), rtol=1e-5, atol=1e-5, **options) -> onnx.ModelProto:
    """Export, check_model (full), run on args and on each of other_args, compare with ember's eager output."""
    if not isinstance(model, ember.nn.Module):
        model = Fn(model).eval()
    data = export_bytes(model, args, **options)
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    session = session_of(data)
    for call_args in (args, *other_args):
        compare(run(session, call_args), model, call_args, rtol, atol)
    return proto
