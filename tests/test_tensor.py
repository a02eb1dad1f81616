"""Tensor basics compared with torch: properties, Python conversions, to()/type(), meta and devices, pickling, repr."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(source: str, module):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return eval(source, {"torch": module, "np": np}), None
    except Exception as error:  # noqa: BLE001 - compared with torch's exception below
        return None, error


def _normalise(value):
    if isinstance(value, (torch.Tensor, ember.Tensor)):
        dtype = str(value.dtype).split(".")[-1]
        if value.device.type == "meta":
            return ("tensor", dtype, tuple(value.shape), "meta")
        data = value.detach()
        data = data.float() if dtype == "bfloat16" else data
        return ("tensor", dtype, tuple(value.shape), str(value.device), data.numpy().tolist(), value.requires_grad)
    if isinstance(value, (torch.dtype, ember.dtype)):
        return ("dtype", str(value).split(".")[-1])
    if isinstance(value, (torch.device, ember.device)):
        return ("device", str(value))
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.tolist())
    if isinstance(value, (list, tuple)) and not isinstance(value, (torch.Size, ember.Size)):
        return type(value)(_normalise(v) for v in value)
    if isinstance(value, (torch.Size, ember.Size)):
        return ("size", tuple(value))
    return (type(value).__name__, value)


def check(source: str, message: bool = True) -> None:
    """`source` gives the same value (or the same exception type and message) in ember and torch."""
    expected, expected_error = _run(source, torch)
    actual, actual_error = _run(source, ember)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), (source, actual_error, expected_error)
        if message:
            assert str(actual_error) == str(expected_error), source
        return
    assert _normalise(actual) == _normalise(expected), source


PROPERTY_CASES = [
    "torch.ones(2, 3).shape", "torch.ones(2, 3).size()", "torch.ones(2, 3).size(1)", "torch.ones(2, 3).size(-1)",
    "torch.ones(2, 3).size(2)", "torch.ones(()).size()", "torch.ones(2, 3).dim()", "torch.ones(2, 3).ndim",
    "torch.ones(()).dim()", "torch.ones(2, 3).numel()", "torch.ones(0, 3).numel()", "torch.ones(2).nelement()",
    "torch.ones(2, dtype=torch.float16).element_size()", "torch.ones(2, dtype=torch.complex128).element_size()",
    "torch.ones(2, 3, dtype=torch.int32).nbytes", "torch.ones(2, dtype=torch.bfloat16).itemsize",
    "torch.ones(2, 3).stride()", "torch.ones(2, 3).t().stride()", "torch.ones(2, 3).is_contiguous()",
    "torch.ones(2, 3).t().is_contiguous()", "torch.ones(2).is_floating_point()", "torch.ones(2).is_complex()",
    "torch.ones(2, dtype=torch.uint8).is_signed()", "torch.ones(2).dtype", "torch.ones(2).device", "torch.ones(2).is_cuda",
    "torch.ones(2).is_leaf", "torch.ones(2).requires_grad", "torch.ones(2).grad_fn", "torch.ones(2).get_device()",
    "torch.ones(2).ndimension()", "torch.ones(2, 3).shape[1:]", "torch.ones(2, 3).shape + (4,)",
    "torch.ones(2).is_meta", "torch.ones(2).is_cpu", "torch.ones(2).is_sparse", "torch.ones(2).layout",
]


@pytest.mark.parametrize("source", PROPERTY_CASES)
def test_properties(source):
    if source.endswith(".layout"):
        assert str(ember.ones(2).layout).replace("ember", "torch") == str(torch.ones(2).layout)
        return
    check(source)


CONVERSION_CASES = [
    "torch.tensor(2.5).item()", "torch.tensor([3]).item()", "torch.tensor(True).item()", "torch.tensor(1 + 2j).item()",
    "torch.tensor([1, 2]).item()", "torch.tensor([]).item()", "torch.tensor(1.5, dtype=torch.bfloat16).item()",
    "torch.tensor([[1, 2], [3, 4]]).tolist()", "torch.tensor(3).tolist()", "torch.tensor([1.5], dtype=torch.bfloat16).tolist()",
    "torch.tensor([1.5], dtype=torch.float16).tolist()", "torch.tensor([True]).tolist()", "torch.tensor([1j]).tolist()",
    "torch.ones(2, requires_grad=True).tolist()", "torch.ones(2, requires_grad=True).numpy()",
    "torch.ones(2, requires_grad=True).numpy(force=True)", "torch.ones(2, dtype=torch.int16).numpy()",
    "torch.tensor(2.5).numpy()", "bool(torch.tensor([0]))", "bool(torch.tensor([1, 2]))", "bool(torch.tensor([]))",
    "bool(torch.tensor(0.5))", "int(torch.tensor(2.7))", "int(torch.tensor([1, 2]))", "float(torch.tensor([3]))",
    "float(torch.tensor([1., 2.]))", "complex(torch.tensor(2.0))", "int(torch.tensor(-2.7))",
    "[0, 1, 2][torch.tensor(1)]", "[0, 1, 2][torch.tensor([1])]", "[0, 1, 2][torch.tensor(1.0)]",
    "[0, 1, 2][torch.tensor([1, 2])]", "len(torch.ones(3, 2))", "len(torch.tensor(1.0))", "list(torch.tensor(1.0))",
    "list(torch.arange(3))", "[t.shape for t in torch.ones(2, 3)]", "range(5)[torch.tensor(2)]",
    "float(torch.tensor(1.5, dtype=torch.bfloat16))", "int(torch.tensor(True))", "2 in torch.arange(3)",
    "'{:.2f}'.format(torch.tensor(1.2345))", "torch.tensor([1.0]).__index__()", "hex(torch.tensor(255))",
]


@pytest.mark.parametrize("source", CONVERSION_CASES)
def test_python_conversions(source):
    check(source)


TO_CASES = [
    "torch.ones(2).to(torch.float64)", "torch.ones(2).to(torch.int32)", "torch.tensor([1.7, -1.7]).to(torch.int64)",
    "torch.ones(2).to('cpu')", "torch.ones(2).to(torch.device('cpu'))", "torch.ones(2).to('cpu', torch.int8)",
    "torch.ones(2).to(torch.ones(1, dtype=torch.float16))", "torch.ones(2).to(dtype=torch.bool)",
    "torch.ones(2).to(device='cpu', dtype=torch.float64)", "torch.ones(2).float()", "torch.ones(2).double()",
    "torch.ones(2).half()", "torch.ones(2).bfloat16()", "torch.ones(2).long()", "torch.ones(2).int()",
    "torch.ones(2).short()", "torch.ones(2).char()", "torch.ones(2).byte()", "torch.ones(2).bool()", "torch.ones(2).cfloat()",
    "torch.ones(2).cdouble()", "torch.ones(2).type()", "torch.ones(2, dtype=torch.int64).type()",
    "torch.ones(2, dtype=torch.bfloat16).type()", "torch.ones(2).type(torch.int32)", "torch.ones(2).type('torch.DoubleTensor')",
    "torch.ones(2).type(torch.float32)", "torch.ones(2).type_as(torch.ones(1, dtype=torch.int16))", "torch.ones(2).cpu()",
    "torch.ones(2, requires_grad=True).to(torch.float64)", "torch.ones(2).to('meta')", "torch.ones(2).to('meta').dtype",
    "torch.ones(2).to(torch.float64, copy=True)", "torch.tensor([300.0]).to(torch.uint8)", "torch.tensor([-1]).to(torch.uint8)",
    "torch.tensor([1.5 + 2j]).to(torch.float32)", "torch.tensor([0.5, 0.0]).to(torch.bool)",
    "torch.tensor([70000.0]).to(torch.float16)", "torch.tensor([1.0]).to('cpu', non_blocking=True)",
]


@pytest.mark.parametrize("source", TO_CASES)
def test_to_and_type(source):
    check(source)


def test_to_returns_self_when_nothing_changes():
    x = ember.ones(2)
    assert x.to(ember.float32) is x and x.to("cpu") is x and x.float() is x and x.cpu() is x
    assert x.to(ember.float32, copy=True) is not x
    assert x.type(ember.float32) is x


META_CASES = [
    "torch.ones(2, 3, device='meta')", "torch.empty(4, device='meta').dtype", "torch.zeros(2, device='meta').device",
    "torch.ones(2, device='meta') + torch.ones(2, device='meta')", "torch.ones(2, 3, device='meta').sum(0)",
    "torch.ones(2, 3, device='meta').t().shape", "torch.ones(2, device='meta').item()",
    "torch.ones(2, device='meta').is_meta", "(torch.ones(2, device='meta') * 2).device", "torch.ones(2, device='meta').to('cpu')",
    "torch.ones(2, device='meta').numpy()", "torch.ones(2, device='meta') + torch.ones(2)",
    "torch.ones(2, 3, device='meta').reshape(3, 2).shape", "torch.ones(2).to('meta').to(torch.int64)",
    "torch.arange(3, device='meta').dtype", "torch.tensor([1, 2], device='meta').shape",
]


@pytest.mark.parametrize("source", META_CASES)
def test_meta_device(source):
    check(source, message="item()" not in source and "numpy()" not in source and "to('cpu')" not in source)


DEVICE_CASES = [
    "torch.device('cpu')", "torch.device('cuda:1')", "torch.device('cuda', 2)", "torch.device('cuda:1').index",
    "torch.device('cuda:1').type", "torch.device('cpu').index", "torch.device('cpu') == 'cpu'",
    "torch.device('cuda:0') == 'cuda:0'", "torch.device('cuda:0') == 'cuda'", "torch.device('cuda') == torch.device('cuda')",
    "repr(torch.device('cpu'))", "repr(torch.device('cuda:1'))", "str(torch.device('cuda', 3))", "torch.device('meta')",
    "torch.device('gpu')", "torch.device('cuda:x')", "torch.device('cuda:1', 1)", "torch.device('cuda', -1)",
    "hash(torch.device('cpu')) == hash(torch.device('cpu'))", "torch.device(torch.device('cpu'))",
    "torch.ones(2).device == 'cpu'", "str(torch.ones(2).device)", "torch.device('cpu', 0)", "torch.device('cpu:0')",
]


@pytest.mark.parametrize("source", DEVICE_CASES)
def test_device_objects(source):
    if source.startswith(("repr(", "torch.device('meta')")):
        expected, _ = _run(source, torch)
        actual, _ = _run(source, ember)
        assert str(actual) == str(expected) and repr(actual) == repr(expected)
        return
    check(source, message="gpu" not in source and "x')" not in source)


def test_device_pickle():
    for value in (ember.device("cpu"), ember.device("cuda:1")):
        assert pickle.loads(pickle.dumps(value)) == value


def test_two_device_error_message():
    cpu = ember.ones(2)
    meta = ember.ones(2, device="meta")
    with pytest.raises(RuntimeError) as info:
        cpu + meta
    torch_message = None
    try:
        torch.ones(2) + torch.ones(2, device="meta")
    except RuntimeError as error:
        torch_message = str(error)
    assert str(info.value) == torch_message or "Expected all tensors to be on the same device" in str(info.value)


def test_pickle_and_deepcopy():
    for tensor in (ember.arange(6.0).reshape(2, 3), ember.tensor([1, 2], dtype=ember.int8), ember.ones(2, 3).t(),
                   ember.tensor([1.5], dtype=ember.bfloat16), ember.ones(2, device="meta")):
        for clone in (pickle.loads(pickle.dumps(tensor)), copy.deepcopy(tensor)):
            assert clone.dtype is tensor.dtype and clone.shape == tensor.shape and clone.device == tensor.device
            if not tensor.is_meta:
                assert clone.tolist() == tensor.tolist()
                assert clone.data_ptr() != tensor.data_ptr()
    leaf = ember.ones(2, requires_grad=True)
    leaf.grad = ember.full((2,), 3.0)
    clone = copy.deepcopy(leaf)
    assert clone.requires_grad and clone.grad.tolist() == [3.0, 3.0]
    assert pickle.loads(pickle.dumps(leaf)).requires_grad
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(leaf * 2)
    shared = ember.ones(2)
    pair = copy.deepcopy([shared, shared])
    assert pair[0] is pair[1]


REPR_CASES = [
    "torch.tensor([1.0, 2.5])", "torch.tensor(3)", "torch.tensor([True, False])", "torch.arange(6).reshape(2, 3)",
    "torch.tensor([1.5], dtype=torch.float64)", "torch.tensor([1, 2], dtype=torch.int32)", "torch.zeros(0)",
    "torch.tensor([1.0], requires_grad=True)", "torch.tensor([1 + 2j])", "torch.tensor([1.5], dtype=torch.bfloat16)",
    "torch.ones(2, 2, device='meta')", "torch.tensor([1e-8, 1e8])", "torch.tensor(float('nan'))", "torch.ones(2, 3).shape",
    "torch.ones(2).dtype", "torch.tensor([1.0], requires_grad=True) * 2", "torch.zeros(2, 0, dtype=torch.int64)",
]


@pytest.mark.parametrize("source", REPR_CASES)
def test_repr_matches_torch(source):
    expected, _ = _run(source, torch)
    actual, _ = _run(source, ember)
    assert repr(actual) == repr(expected).replace("torch.", "ember."), source


@pytest.mark.parametrize("shape", [(3, 4), (2,), (), (30, 30)])
def test_parameter_repr_matches_torch(shape):
    """torch prints "Parameter containing:" then the tensor's own repr, wrapped lines indented as a tensor's."""
    import torch

    values = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    expected = repr(torch.nn.Parameter(torch.from_numpy(values)))
    assert repr(ember.nn.Parameter(ember.from_numpy(values))) == expected
