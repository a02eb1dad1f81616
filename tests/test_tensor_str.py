"""Tests for ``ember._tensor_str``: its output must equal torch's ``repr`` exactly.

Every check builds a real torch tensor, feeds its NumPy data and metadata to
``tensor_repr`` and compares with ``repr(t)`` (``torch.`` replaced by
``ember.``), under the same print options on both sides.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib
import time
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def _load_tensor_str() -> ModuleType:
    """Import ``ember._tensor_str``, or load it by path if the package is not importable yet."""
    try:
        from ember import _tensor_str
    except ImportError:
        path = pathlib.Path(__file__).resolve().parents[1] / "ember" / "_tensor_str.py"
        spec = importlib.util.spec_from_file_location("_ember_tensor_str", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return _tensor_str


ts = _load_tensor_str()

DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.complex128,
]


@pytest.fixture(autouse=True)
def _restore_global_state() -> Iterator[None]:
    """Reset print options (torch and ember) and torch's default dtype after each test."""
    default_dtype = torch.get_default_dtype()
    yield
    torch.set_printoptions(profile="default")
    ts.set_printoptions(profile="default")
    torch.set_default_dtype(default_dtype)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def ember_repr(t: Any, *, prefix: str = "tensor(", bf16_ml_dtypes: bool = False) -> str:
    """Call ``tensor_repr`` with everything ember's Tensor.__repr__ would pass for ``t``."""
    if t.is_meta:
        values = None
    else:
        data = t.detach().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            values = data.float().numpy()
            if bf16_ml_dtypes:
                import ml_dtypes

                values = values.astype(ml_dtypes.bfloat16)
        else:
            values = data.numpy()
    return ts.tensor_repr(
        values,
        shape=tuple(t.shape),
        dtype_name=_dtype_name(t.dtype),
        default_dtype_name=_dtype_name(torch.get_default_dtype()),
        device=None if t.device.type == "cpu" else str(t.device),
        requires_grad=t.requires_grad,
        grad_fn_name=None if t.grad_fn is None else type(t.grad_fn).__name__,
        prefix=prefix,
    )


def check(t: Any, **kwargs: Any) -> None:
    """Assert ember's rendering of ``t`` matches torch's."""
    expected = repr(t).replace("torch.", "ember.")
    assert ember_repr(t, **kwargs) == expected


def set_both(**kwargs: Any) -> None:
    """Apply the same print options to torch and ember."""
    torch.set_printoptions(**kwargs)
    ts.set_printoptions(**kwargs)


def random_tensor(
    gen: Any, shape: tuple[int, ...], dtype: Any, scale: float = 1.0
) -> Any:
    """Random values of ``dtype``: normal floats times ``scale``, small or full-range ints."""
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_complex:
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(
            dtype
        ) + (1j * torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(
            dtype
        )
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * scale).to(
            dtype
        )
    info = torch.iinfo(dtype)
    high = min(info.max - 1, int(scale)) if scale >= 1 else info.max - 1
    low = max(info.min, -high)
    return torch.randint(low, high + 1, shape, generator=gen, dtype=dtype)


SHAPES = [
    (),
    (1,),
    (5,),
    (3, 4),
    (2, 3, 4),
    (2, 1, 3, 2),
    (40,),
    (7, 13),
    (1200,),
    (40, 40),
    (11, 12, 13),
]
SCALES = [1.0, 1e-6, 1e3, 1e10, 100.0]


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_name)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_random_values(dtype: Any, shape: tuple[int, ...], scale: float) -> None:
    gen = torch.Generator().manual_seed(
        zlib.crc32(repr((dtype, shape, scale)).encode())
    )
    check(random_tensor(gen, shape, dtype, scale))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64]
)
def test_integral_floats_and_mixed_magnitudes(dtype: Any) -> None:
    gen = torch.Generator().manual_seed(1)
    check(torch.randint(-50, 50, (4, 5), generator=gen).to(dtype))
    check(torch.arange(12, dtype=dtype).reshape(3, 4))
    mixed = torch.randn(6, 7, generator=gen) * torch.logspace(-6, 6, 7)
    check(mixed.to(dtype))


HAND_PICKED = [
    [],
    [0.0],
    [-0.0],
    [0.0, -0.0],
    [-0.0, 1.0],
    [-0.0, 1.5],
    [1.0, 2.0, 3.0],
    [1.5, -2.25],
    [1e-5],
    [1e-4, 1.0],
    [1e-4, 0.1],
    [1.0, 1000.0],
    [1.0, 1000.1],
    [1.0, 1001.0],
    [1e8],
    [1e8 + 8],
    [123456789.0],
    [1e20, 1.0],
    [1e-30, 1e30],
    [float("nan")],
    [float("inf")],
    [float("-inf"), float("inf"), float("nan")],
    [float("nan"), 1.5, 0.0],
    [float("nan"), 2.0, -3.0],
    [float("inf"), 1e-10, 1.0],
    [float("nan"), 0.0, -0.0, float("inf")],
    [0.1, 0.2, 0.3],
    [0.00049999, 0.5],
    [9.99995, 10.0],
    [99999.5, 0.5],
    [-9.99996e-5, 1.0],
    [3.14159265358979, -2.718281828459045, 1.4142135623730951],
]


@pytest.mark.parametrize("values", HAND_PICKED, ids=repr)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16]
)
def test_hand_picked_floats(values: list[float], dtype: Any) -> None:
    check(torch.tensor(values, dtype=dtype))
    if values:
        check(torch.tensor(values[0], dtype=dtype))  # 0-d
        check(torch.tensor([values, values], dtype=dtype))


@pytest.mark.parametrize(
    "values",
    [
        [0],
        [-1, 0, 1],
        [-128, 127],
        [10**9, -(10**9)],
        [2**62, -(2**63)],
        [255, 0],
        [7],
    ],
    ids=repr,
)
@pytest.mark.parametrize(
    "dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
)
def test_integers(values: list[int], dtype: Any) -> None:
    info = torch.iinfo(dtype)
    values = [v for v in values if info.min <= v <= info.max]
    if not values:
        pytest.skip("values out of range for dtype")
    check(torch.tensor(values, dtype=dtype))
    check(torch.tensor(values[-1], dtype=dtype))
    check(torch.tensor(values, dtype=dtype).repeat(30, 1))


def test_bool() -> None:
    check(torch.tensor(True))
    check(torch.tensor(False))
    check(torch.tensor([True, True]))
    check(torch.tensor([[True, False], [False, True]]))
    check(torch.ones(3000, dtype=torch.bool))
    check(torch.rand(30, 30) > 0.5)


COMPLEX_VALUES = [
    [1 + 2j],
    [1 - 2j, -3.5 + 0.25j],
    [0j, -0.0 - 0.0j, complex(0.0, -0.0)],
    [
        complex(float("nan"), 1),
        complex(1, float("nan")),
        complex(float("inf"), -float("inf")),
    ],
    [1e-6 + 1e6j, 3 + 4j],
    [1e10 + 1j],
    [2 + 3j, 4 + 5j],
]


@pytest.mark.parametrize("values", COMPLEX_VALUES, ids=repr)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex(values: list[complex], dtype: Any) -> None:
    check(torch.tensor(values, dtype=dtype))
    check(torch.tensor(values[0], dtype=dtype))
    check(torch.tensor([values] * 3, dtype=dtype))


def test_complex_conjugate_view() -> None:
    t = torch.tensor([1 + 2j, 3 - 4j])
    check(t.conj())


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_name)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (2, 0, 4), (0, 0)], ids=str)
def test_empty(dtype: Any, shape: tuple[int, ...]) -> None:
    check(torch.empty(shape, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=_dtype_name)
@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (0,), (0, 2)], ids=str)
def test_meta(dtype: Any, shape: tuple[int, ...]) -> None:
    check(torch.empty(shape, dtype=dtype, device="meta"))


def test_meta_with_grad() -> None:
    check(torch.empty(2, 3, device="meta", requires_grad=True))
    t = torch.empty(2, 3, device="meta", requires_grad=True) * 2
    check(t)


def test_device_suffix_string() -> None:
    """A non-cpu device is printed first; checked against torch's text shape by hand."""
    out = ts.tensor_repr(
        np.array([1.0, 2.0], dtype=np.float16),
        shape=(2,),
        dtype_name="float16",
        default_dtype_name="float32",
        device="cuda:0",
        requires_grad=True,
    )
    assert (
        out
        == "tensor([1., 2.], device='cuda:0', dtype=ember.float16, requires_grad=True)"
    )
    assert "device" not in ts.tensor_repr(
        np.array(1),
        shape=(),
        dtype_name="int64",
        default_dtype_name="float32",
        device="cpu",
    )


def test_grad_suffixes() -> None:
    leaf = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    check(leaf)
    check(leaf * 2)
    check((leaf * 2).sum())
    check(leaf.double().exp())
    check(torch.randn(20, 20, requires_grad=True) @ torch.randn(20, 20))
    check(torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True))
    check(torch.zeros(0, 3, requires_grad=True))
    check(torch.zeros(0, 3, requires_grad=True) + 1)


def test_suffixes_wrap_to_new_line() -> None:
    wide = torch.full((7,), 1.2345678e3, dtype=torch.float64) * torch.arange(7)
    check(wide)
    check(wide.to(torch.float16).requires_grad_())
    check(torch.tensor([123456.5] * 6, dtype=torch.float64, requires_grad=True) * 3)
    for n in range(1, 12):
        check(torch.arange(n, dtype=torch.int32) * 1000000)
        check(torch.arange(n, dtype=torch.float16).requires_grad_() * 1.5)


def test_wide_lines_wrap() -> None:
    gen = torch.Generator().manual_seed(3)
    check(torch.randn(50, generator=gen))
    check(torch.randn(3, 30, generator=gen))
    check(torch.randn(2, 2, 30, generator=gen) * 1e-6)
    check(torch.randn(2, 40, generator=gen, dtype=torch.complex64))
    check(torch.arange(100))


def test_large_tensors_summarize() -> None:
    gen = torch.Generator().manual_seed(4)
    check(torch.arange(1001))
    check(torch.arange(1000))
    check(torch.randn(100, 100, generator=gen))
    check(torch.randn(4, 300, generator=gen))
    check(torch.randn(300, 4, generator=gen))
    check(torch.randn(10, 10, 11, generator=gen))
    check(torch.randn(3, 7, 7, 7, generator=gen, dtype=torch.complex128))
    check(torch.randint(0, 10**6, (5000,), generator=gen, dtype=torch.int32))
    # Middle elements must not influence width or notation when summarised.
    t = torch.ones(2000)
    t[1000] = 1e12
    t[1001] = float("nan")
    check(t)


@pytest.mark.parametrize(
    "options",
    [
        {"precision": 2},
        {"precision": 0},
        {"precision": 8},
        {"threshold": 5},
        {"threshold": 5, "edgeitems": 1},
        {"threshold": 5, "edgeitems": 0},
        {"edgeitems": 0},
        {"linewidth": 40},
        {"linewidth": 10},
        {"linewidth": 200},
        {"profile": "short"},
        {"profile": "full"},
        {"profile": "full", "precision": 6},
        {"sci_mode": True},
        {"sci_mode": False},
        {"sci_mode": True, "precision": 1},
    ],
    ids=repr,
)
def test_print_options(options: dict[str, Any]) -> None:
    set_both(**options)
    assert ts.get_printoptions() == torch._tensor_str.get_printoptions()
    gen = torch.Generator().manual_seed(5)
    tensors = [
        torch.arange(10),
        torch.arange(10.0),
        torch.arange(24.0).reshape(2, 3, 4),
        torch.tensor(3.25),
        torch.tensor([1e-8, 1.0, 1e8]),
        torch.tensor([0.0, float("nan")]),
        torch.randn(6, 7, generator=gen) * 123.456,
        torch.randn(5, 5, generator=gen, dtype=torch.complex64),
        torch.randn(1500, generator=gen, dtype=torch.float64),
        torch.randn(40, 40, generator=gen).to(torch.bfloat16),
        torch.arange(2000, dtype=torch.int16).reshape(4, 5, 100),
        torch.empty(0, 4),
        torch.randn(30, requires_grad=True) * 2,
    ]
    for t in tensors:
        check(t)


def test_printoptions_context_manager_and_profiles() -> None:
    assert ts.get_printoptions() == {
        "precision": 4,
        "threshold": 1000,
        "edgeitems": 3,
        "linewidth": 80,
        "sci_mode": None,
    }
    with ts.printoptions(precision=2, sci_mode=True):
        assert ts.get_printoptions()["precision"] == 2
        assert ts.get_printoptions()["sci_mode"] is True
    assert ts.get_printoptions()["precision"] == 4
    assert ts.get_printoptions()["sci_mode"] is None
    ts.set_printoptions(profile="full")
    assert ts.get_printoptions()["threshold"] == math.inf
    ts.set_printoptions(profile="short", linewidth=100)
    assert ts.get_printoptions() == {
        "precision": 2,
        "threshold": 1000,
        "edgeitems": 2,
        "linewidth": 100,
        "sci_mode": None,
    }


@pytest.mark.parametrize("default", [torch.float64, torch.float16, torch.bfloat16])
def test_default_dtype_changes_dtype_suffix(default: Any) -> None:
    torch.set_default_dtype(default)
    for dtype in DTYPES:
        check(torch.tensor([1, 0], dtype=dtype))
        check(torch.empty(0, dtype=dtype))
        check(torch.empty(2, device="meta", dtype=dtype))


def test_bfloat16_ml_dtypes_input() -> None:
    pytest.importorskip("ml_dtypes")
    gen = torch.Generator().manual_seed(6)
    for t in [
        torch.randn(5, 6, generator=gen).bfloat16(),
        torch.tensor([1e-6, 3.0, float("inf")]).bfloat16(),
        torch.tensor(2.5).bfloat16(),
    ]:
        check(t, bf16_ml_dtypes=True)


def test_custom_prefix_sets_indent() -> None:
    class MyTensor(torch.Tensor):
        pass

    gen = torch.Generator().manual_seed(7)
    for base in [
        torch.randn(3, 30, generator=gen),
        torch.arange(200.0).reshape(2, 100),
    ]:
        t = base.as_subclass(MyTensor)
        expected = repr(t).replace("torch.", "ember.")
        assert expected.startswith("MyTensor(")
        assert ember_repr(base, prefix="MyTensor(") == expected


def test_fuzz_against_torch() -> None:
    """Random dtypes, shapes, magnitudes and print options, all checked against torch."""
    rng = np.random.default_rng(8)
    gen = torch.Generator().manual_seed(8)
    for _ in range(400):
        dtype = DTYPES[rng.integers(len(DTYPES))]
        shape = tuple(int(n) for n in rng.integers(1, 9, size=rng.integers(0, 4)))
        scale = float(10.0 ** rng.integers(-7, 11))
        t = random_tensor(gen, shape, dtype, scale)
        if dtype.is_floating_point and t.numel() and rng.random() < 0.3:
            flat = t.view(-1)
            flat[int(rng.integers(t.numel()))] = float(
                rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0])
            )
        set_both(
            precision=int(rng.integers(0, 7)),
            threshold=int(rng.choice([5, 50, 1000])),
            edgeitems=int(rng.integers(0, 4)),
            linewidth=int(rng.choice([20, 50, 80, 150])),
            sci_mode=[None, True, False][rng.integers(3)],
        )
        check(t)


def test_huge_tensor_is_fast() -> None:
    """Summarised printing of a million elements must not loop over all of them in Python."""
    values = np.random.default_rng(9).standard_normal((1000, 1000)).astype(np.float32)
    start = time.perf_counter()
    out = ts.tensor_repr(
        values,
        shape=values.shape,
        dtype_name="float32",
        default_dtype_name="float32",
        device=None,
    )
    assert time.perf_counter() - start < 2.0
    assert out == repr(torch.from_numpy(values))
