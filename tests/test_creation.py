"""Factory functions (tensor, as_tensor, zeros/ones/full/empty, arange, linspace, ...) compared with torch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _run(source: str, module, namespace: dict):
    """Evaluate `source` with `torch` bound to `module`: (result, None) or (None, exception)."""
    try:
        return eval(source, {"torch": module, "np": np, **namespace}), None
    except Exception as error:  # noqa: BLE001 - compared with torch's exception below
        return None, error


def _as_numpy(value):
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        if value.dtype in (torch.bfloat16, ember.bfloat16):
            return value.float().detach().numpy()
        return value.detach().numpy()
    return np.asarray(value)


def check(source: str, *, exact: bool = True, rtol: float = 1e-6, atol: float = 0.0, message: bool = True,
          **namespace) -> None:
    """`source` gives the same values, dtype, shape and requires_grad (or the same error) in ember and torch."""
    expected, expected_error = _run(source, torch, namespace)
    actual, actual_error = _run(source, ember, namespace)
    if expected_error is not None or actual_error is not None:
        assert type(actual_error) is type(expected_error), (source, actual_error, expected_error)
        if message:
            assert str(actual_error) == str(expected_error), source
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, ember.Tensor), source
        assert str(actual.dtype).replace("ember.", "torch.") == str(expected.dtype), (source, actual.dtype)
        assert tuple(actual.shape) == tuple(expected.shape), source
        assert actual.requires_grad == expected.requires_grad, source
        assert str(actual.device) == str(expected.device), source
        if expected.device.type == "meta":
            return
        expected, actual = _as_numpy(expected), _as_numpy(actual)
        if exact:
            np.testing.assert_array_equal(actual, expected, err_msg=source)
        else:
            np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=source)
    elif isinstance(expected, torch.dtype):
        assert str(actual).replace("ember.", "torch.") == str(expected), source
    else:
        assert actual == expected, source


TENSOR_CASES = [
    "torch.tensor(True)", "torch.tensor([True, False])", "torch.tensor(3)", "torch.tensor([1, 2])",
    "torch.tensor(2.5)", "torch.tensor([1, 2.5])", "torch.tensor([True, 2])", "torch.tensor([True, 2.0])",
    "torch.tensor(1 + 2j)", "torch.tensor([1, 2j])", "torch.tensor([[1, 2], [3, 4]])", "torch.tensor([])",
    "torch.tensor([[]])", "torch.tensor(())", "torch.tensor([[1], [2.0]])", "torch.tensor([[True], [1]])",
    "torch.tensor(np.arange(3, dtype=np.int16))", "torch.tensor(np.arange(3.0, dtype=np.float32))",
    "torch.tensor(np.array([True]))", "torch.tensor(np.float64(1.5))", "torch.tensor(np.int32(3))",
    "torch.tensor(np.float16(1.5))", "torch.tensor([np.float64(1.5), 2])", "torch.tensor([np.int8(1), 2])",
    "torch.tensor([torch.tensor(1), torch.tensor(2)])", "torch.tensor([torch.tensor(1.5), 2])",
    "torch.tensor([torch.tensor(1, dtype=torch.int8), 2])", "torch.tensor([torch.tensor(True), False])",
    "torch.tensor([[1, 2], [3]])", "torch.tensor([[1, 2], 3])", "torch.tensor([1, [2, 3]])",
    "torch.tensor([[[1, 2]], [[3, 4], [5, 6]]])", "torch.tensor([1, 'a'])", "torch.tensor('a')",
    "torch.tensor([1, 2], dtype=torch.float16)", "torch.tensor([1.7, -1.7], dtype=torch.int32)",
    "torch.tensor([1.5], dtype=torch.bfloat16)", "torch.tensor([1, 2], dtype=torch.bool)",
    "torch.tensor([1.0], requires_grad=True)", "torch.tensor([1], requires_grad=True)",
    "torch.tensor(torch.ones(2, dtype=torch.float64))", "torch.tensor(np.arange(6).reshape(2, 3)[:, ::2])",
    "torch.tensor([[1, 2]], device='meta')", "torch.tensor(3, dtype=torch.complex64)",
    "torch.tensor(float('inf'))", "torch.tensor([2**62])", "torch.tensor(2**63)", "torch.tensor([[1.5, 2]], dtype=torch.float64)",
"torch.tensor(range(4))", "torch.tensor([range(2), range(2)])",
]


@pytest.mark.parametrize("source", TENSOR_CASES)
def test_tensor_inference(source):
    check(source)


def test_tensor_default_dtype_float64():
    previous = ember.get_default_dtype()
    torch_previous = torch.get_default_dtype()
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        for source in ("torch.tensor([1.5])", "torch.tensor(1j)", "torch.tensor([1, 2.0])", "torch.arange(0, 1, 0.25)",
                       "torch.zeros(2)", "torch.full((2,), 1.5)", "torch.linspace(0, 1, 3)", "torch.tensor(np.float32(1))",
                       "torch.Tensor([1, 2])", "torch.eye(2)", "torch.ones(2).new_tensor([1.5])",
                       "torch.tensor([1.5], dtype=torch.float32)", "torch.full((1,), 2j)"):
            check(source)
    finally:
        ember.set_default_dtype(previous)
        torch.set_default_dtype(torch_previous)


def test_tensor_ragged_message():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        ember.tensor([[1, 2], [3]])


def test_from_numpy_shares_memory():
    array = np.arange(4.0)
    tensor = ember.from_numpy(array)
    array[0] = 7
    assert tensor[0].item() == 7
    tensor.add_(1)
    assert array[1] == 2
    assert ember.from_numpy(np.arange(3, dtype=np.int16)).dtype is ember.int16


def test_from_numpy_errors():
    check("torch.from_numpy([1, 2])")
    check("torch.from_numpy(np.arange(3)[::-1])")
    check("torch.from_numpy(np.array(['a']))", message=False)


def test_as_tensor_sharing():
    array = np.arange(3.0)
    shared = ember.as_tensor(array)
    array[0] = 5
    assert shared[0].item() == 5
    copied = ember.as_tensor(array, dtype=ember.float32)
    array[1] = 9
    assert copied[1].item() == 1
    base = ember.ones(3)
    assert ember.as_tensor(base) is base
    assert ember.as_tensor(base, dtype=ember.float64) is not base
    check("torch.as_tensor([1, 2.5])")
    check("torch.as_tensor(np.arange(3), dtype=torch.float32)")
    check("torch.as_tensor(3)")


def test_asarray_sharing_and_copy():
    array = np.arange(3.0)
    shared = ember.asarray(array)
    array[0] = 5
    assert shared[0].item() == 5
    copied = ember.asarray(array, copy=True)
    array[0] = 6
    assert copied[0].item() == 5
    base = ember.ones(2)
    assert ember.asarray(base).data_ptr() == base.data_ptr()
    assert ember.asarray(base, copy=True).data_ptr() != base.data_ptr()
    check("torch.asarray([1, 2])")
    check("torch.asarray([1.5], dtype=torch.float64, requires_grad=True)")
    check("torch.asarray(np.float32(2.5))")


SIZE_CASES = [
    "torch.{f}(2, 3)", "torch.{f}((2, 3))", "torch.{f}([2, 3])", "torch.{f}(torch.Size([2, 3]))", "torch.{f}(())",
    "torch.{f}([])", "torch.{f}(0)", "torch.{f}(2, dtype=torch.int32)", "torch.{f}(2, dtype=torch.bool)",
    "torch.{f}(2, requires_grad=True)", "torch.{f}(2, 3, device='meta')", "torch.{f}(-1)", "torch.{f}(2, -3)",
    "torch.{f}(2.5)", "torch.{f}(size=(2, 1))", "torch.{f}(2, dtype=torch.int64, requires_grad=True)",
    "torch.{f}(torch.tensor(3))",
]


@pytest.mark.parametrize("function", ["zeros", "ones"])
@pytest.mark.parametrize("template", SIZE_CASES)
def test_zeros_ones_sizes(function, template):
    check(template.format(f=function), message=False)


@pytest.mark.parametrize("template", SIZE_CASES)
def test_empty_sizes(template):
    source = template.format(f="empty")
    expected, expected_error = _run(source, torch, {})
    actual, actual_error = _run(source, ember, {})
    assert type(actual_error) is type(expected_error), source
    if expected_error is None:
        assert tuple(actual.shape) == tuple(expected.shape)
        assert str(actual.dtype).replace("ember", "torch") == str(expected.dtype)
        assert actual.requires_grad == expected.requires_grad


FULL_CASES = [
    "torch.full((2,), 1)", "torch.full((2,), 1.5)", "torch.full((2,), True)", "torch.full((2,), 1j)",
    "torch.full([2, 2], 3, dtype=torch.float16)", "torch.full((2,), 1.5, dtype=torch.int64)",
    "torch.full((2,), -1, dtype=torch.uint8)", "torch.full((2,), 300, dtype=torch.uint8)",
    "torch.full((2,), torch.tensor(1.5))", "torch.full((2,), torch.tensor(3))", "torch.full(2, 1)",
    "torch.full((), 4)", "torch.full((2,), float('nan'))", "torch.full((1,), 2.0, requires_grad=True)",
    "torch.full((2,), np.float32(2.5))", "torch.full((2,), np.int16(3))", "torch.full((2, 2), 1, device='meta')",
    "torch.full_like(torch.ones(2, dtype=torch.int32), 2.7)", "torch.full_like(torch.ones(2), 7, dtype=torch.int8)",
    "torch.zeros_like(torch.ones(2, 3, dtype=torch.int16))", "torch.ones_like(torch.ones(2), dtype=torch.bool)",
    "torch.zeros_like(torch.ones(2), requires_grad=True)", "torch.ones_like(torch.ones(2, device='meta'))",
    "torch.empty_like(torch.ones(2, 3)).shape", "torch.full_like(torch.ones(2), 1000, dtype=torch.int8)",
]


@pytest.mark.parametrize("source", FULL_CASES)
def test_full(source):
    check(source)


ARANGE_CASES = [
    "torch.arange(5)", "torch.arange(2, 7)", "torch.arange(1, 10, 3)", "torch.arange(0, 1, 0.1)",
    "torch.arange(1, 0, -0.1)", "torch.arange(10, 0, -3)", "torch.arange(0.5)", "torch.arange(5.0)",
    "torch.arange(0, 5, dtype=torch.float32)", "torch.arange(0, 2.5, 0.5, dtype=torch.int64)",
    "torch.arange(0, 1, 0.3, dtype=torch.float64)", "torch.arange(-1.5, 1.5, 0.5)", "torch.arange(0, 0)",
    "torch.arange(0, 5, 0)", "torch.arange(0, 5, -1)", "torch.arange(5, 0)", "torch.arange(1e-3, 3e-3, 1e-4)",
    "torch.arange(torch.tensor(3))", "torch.arange(torch.tensor(3.0))", "torch.arange(0, 10, 2, dtype=torch.uint8)",
    "torch.arange(0, 1, 0.1, dtype=torch.float16)", "torch.arange(0, 1, 0.1, dtype=torch.bfloat16)",
    "torch.arange(3, requires_grad=True)", "torch.arange(3.0, requires_grad=True)", "torch.arange(4, device='meta')",
    "torch.arange(0, 5, 1.5)", "torch.arange(-5, 5, 0.7)", "torch.arange(0, float('inf'))",
    "torch.arange(10**10, 10**10 + 3)", "torch.arange(0.1, 0.7, 0.2)", "torch.arange(1, 4, dtype=torch.complex64)",
    "torch.arange(np.int64(3))", "torch.arange(np.float32(1.5))", "torch.arange(True)",
    "torch.range(0, 3)", "torch.range(0, 1, 0.25)", "torch.range(0, 3, dtype=torch.int64)",
]


@pytest.mark.parametrize("source", ARANGE_CASES)
def test_arange(source):
    check(source, exact=False, rtol=1e-6, atol=1e-7, message="range(" not in source)


LINSPACE_CASES = [
    "torch.linspace(0, 1, 5)", "torch.linspace(0, 1, 7)", "torch.linspace(-3.7, 11.2, 100)", "torch.linspace(0, 1, 1)",
    "torch.linspace(0, 1, 0)", "torch.linspace(1, 0, 6)", "torch.linspace(0, 10, 5, dtype=torch.int64)",
    "torch.linspace(0, 9, 7, dtype=torch.int32)", "torch.linspace(0, 1, 5, dtype=torch.float64)",
    "torch.linspace(0, 1j, 3)", "torch.linspace(0, 1, -1)", "torch.linspace(torch.tensor(0), torch.tensor(2), 3)",
    "torch.linspace(0, 1, 5, dtype=torch.float16)", "torch.linspace(0, 1, 5, requires_grad=True)",
    "torch.linspace(2, 2, 4)", "torch.linspace(0, 1, 3, device='meta')", "torch.linspace(-1, 1, 2)",
    "torch.logspace(0, 2, 3)", "torch.logspace(0, 3, 4, base=2)", "torch.logspace(-1, 1, 5, dtype=torch.float64)",
    "torch.logspace(0, 2, 3, dtype=torch.int64)", "torch.logspace(0, 1, 1)", "torch.logspace(0, 1, 0)",
    "torch.logspace(1, 0, 4, base=3.5)",
]


@pytest.mark.parametrize("source", LINSPACE_CASES)
def test_linspace_logspace(source):
    # float64 tolerance: torch's AVX2/AVX512 kernels fuse start + step*i into one rounding, which ember emulates
    # for float32 only (bitwise there: tests/test_torch_cpu_arithmetic.py)
    check(source, exact=False, rtol=1e-6, atol=1e-5)


EYE_CASES = [
    "torch.eye(3)", "torch.eye(2, 4)", "torch.eye(0)", "torch.eye(3, dtype=torch.int64)", "torch.eye(2, dtype=torch.bool)",
    "torch.eye(-1)", "torch.eye(2, -1)", "torch.eye(2, requires_grad=True)", "torch.eye(2, device='meta')",
    "torch.empty_strided((2, 3), (1, 2)).shape", "torch.empty_strided((2, 3), (1, 2)).stride()",
    "torch.empty_strided((2, 3), (3, 1), dtype=torch.int32).dtype", "torch.scalar_tensor(3)",
    "torch.scalar_tensor(True)", "torch.scalar_tensor(2, dtype=torch.int64)",
]


@pytest.mark.parametrize("source", EYE_CASES)
def test_eye_and_others(source):
    check(source)


NEW_CASES = [
    "torch.ones(2, dtype=torch.int32).new_zeros(3)", "torch.ones(2, dtype=torch.int32).new_zeros((3, 2))",
    "torch.ones(2).new_ones([1, 2], dtype=torch.float64)", "torch.ones(2, dtype=torch.int8).new_full((2,), 3.7)",
    "torch.ones(2, dtype=torch.float16).new_tensor([1, 2])", "torch.ones(2).new_tensor(np.arange(3))",
    "torch.ones(2).new_tensor([1.5], requires_grad=True)", "torch.ones(2).new_empty(3).shape",
    "torch.ones(2, dtype=torch.int64).new_empty((2, 2)).dtype", "torch.ones(2).new_zeros(2, requires_grad=True)",
    "torch.ones(2, device='meta').new_ones(2)", "torch.ones(2).new_empty_strided((2, 2), (1, 2)).shape",
    "torch.ones(2).new_zeros(torch.Size([1, 3]))", "torch.ones(2, dtype=torch.bool).new_full((2,), 1)",
]


@pytest.mark.parametrize("source", NEW_CASES)
def test_new_methods(source):
    check(source)


LEGACY_CASES = [
    "torch.Tensor([1, 2])", "torch.Tensor([[1.5], [2]])", "torch.Tensor(2, 3).shape", "torch.Tensor().shape",
    "torch.Tensor(np.arange(3))", "torch.Tensor(torch.Size([2, 2])).shape", "torch.Tensor([True])", "torch.Tensor(0).shape",
]


@pytest.mark.parametrize("source", LEGACY_CASES)
def test_legacy_constructor(source):
    check(source)


def test_out_argument():
    out = ember.empty(0)
    ember.zeros(2, 3, out=out)
    assert out.shape == (2, 3) and out.sum().item() == 0
    result = ember.arange(4, out=ember.empty(4, dtype=ember.int64))
    assert result.tolist() == [0, 1, 2, 3]
