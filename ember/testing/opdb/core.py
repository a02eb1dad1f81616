"""The op database's building blocks: OpInfo, Sample, ErrorSample, argument makers, comparison.

An OpInfo says how to call an op on a library module (ember or torch: the same
callable serves both), which sample inputs to try per dtype, and which variant
tests apply.  Samples hold NumPy arrays; `build` turns them into tensors of
either library, so ember and torch see identical inputs.  The generic tests in
tests/test_opdb.py expand every entry into forward, gradient, gradcheck, meta,
in-place, out=, method-variant, non-contiguous and error-parity tests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

FLOATING = ("float32", "float64", "float16", "bfloat16")
INTEGRAL = ("uint8", "int8", "int16", "int32", "int64")
COMPLEX = ("complex64", "complex128")
ALL_TYPES = ("bool",) + INTEGRAL + FLOATING
ALL_WITH_COMPLEX = ALL_TYPES + COMPLEX
FLOAT_AND_COMPLEX = FLOATING + COMPLEX

# (rtol, atol) per dtype for forward comparisons
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}

NUMPY_TYPES = {
    "bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
    "float64": np.float64, "complex64": np.complex64, "complex128": np.complex128,
}


@dataclass
class Sample:
    """One call: positional and keyword arguments (NumPy arrays become tensors)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    name: str = ""
    noncontiguous: bool = False
    grad: bool = True  # usable for gradient tests

    def __repr__(self) -> str:
        shapes = [a.shape if isinstance(a, np.ndarray) else a for a in self.args]
        return f"Sample({self.name or shapes}, {self.kwargs})"


@dataclass
class ErrorSample:
    """A call that must raise `error` with a message matching `match` in ember (and the same type in torch)."""

    sample: Sample
    error: type
    match: str = ""


@dataclass
class OpInfo:
    name: str
    sample_inputs: Callable  # (dtype name, numpy Generator) -> list[Sample]
    call: Callable | None = None  # (lib, *args, **kwargs) -> result; default lib.<name>
    dtypes: tuple = FLOATING
    grad: bool = True
    gradcheck: bool = True
    gradgradcheck: bool = True
    method: str | None = None  # Tensor method to compare with the function
    inplace: str | None = None  # in-place method name
    supports_out: bool = False
    meta: bool = True
    tolerances: dict = field(default_factory=dict)
    grad_tolerance: tuple = (1e-6, 1e-6)
    error_inputs: Callable | None = None  # () -> list[ErrorSample]
    xfail: dict = field(default_factory=dict)  # test name -> reason (strict)
    max_samples: int = 12

    def run(self, lib, sample: Sample, tensors: tuple):
        call = self.call or (lambda lib, *a, **k: getattr(lib, self.name)(*a, **k))
        return call(lib, *tensors, **_build_kwargs(lib, sample.kwargs))


def _build_kwargs(lib, kwargs):
    return {k: build_value(lib, v) for k, v in kwargs.items()}


def build_value(lib, value, requires_grad: bool = False, noncontiguous: bool = False):
    """A sample value as `lib`'s object: arrays -> tensors, dtype names -> lib dtypes, containers mapped."""
    if isinstance(value, np.ndarray):
        return to_tensor(lib, value, requires_grad and value.dtype.kind in "fcV", noncontiguous)
    if isinstance(value, DType):
        return getattr(lib, value.name)
    if isinstance(value, list):
        return [build_value(lib, v, requires_grad, noncontiguous) for v in value]
    if isinstance(value, tuple):
        return tuple(build_value(lib, v, requires_grad, noncontiguous) for v in value)
    return value


@dataclass(frozen=True)
class DType:
    """A dtype argument in a sample (resolved to ember.X or torch.X)."""

    name: str


def dtype_name(array: np.ndarray) -> str:
    for name, numpy_type in NUMPY_TYPES.items():
        if array.dtype == np.dtype(numpy_type):
            return name
    raise TypeError(array.dtype)


def to_tensor(lib, array: np.ndarray, requires_grad: bool = False, noncontiguous: bool = False):
    """Build the same tensor in either library (bfloat16 goes through float32, which is exact)."""
    name = dtype_name(array)
    source = array.astype(np.float32) if name == "bfloat16" else array
    if noncontiguous and array.ndim and array.size > 1:
        doubled = np.stack([source, np.zeros_like(source)], axis=-1)
        tensor = lib.tensor(doubled)[..., 0]
        if name == "bfloat16":
            tensor = tensor.to(lib.bfloat16)
    else:
        tensor = lib.tensor(source)
        if name == "bfloat16":
            tensor = tensor.to(lib.bfloat16)
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


# ---------------------------------------------------------------- argument makers


def make_array(shape, dtype: str, rng: np.random.Generator, low: float | None = None,
               high: float | None = None, exclude_zero: bool = False) -> np.ndarray:
    """Random values of `dtype` in [low, high) (defaults: -9..9 for floats, the type's small range for ints)."""
    numpy_type = NUMPY_TYPES[dtype]
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in INTEGRAL:
        lo = 0 if dtype == "uint8" else -9
        lo = int(low) if low is not None else lo
        hi = int(high) if high is not None else 10
        values = rng.integers(lo, hi, size=shape)
        if exclude_zero:
            values[values == 0] = 1
        return np.asarray(values).astype(numpy_type)
    lo = -9.0 if low is None else low
    hi = 9.0 if high is None else high
    values = rng.uniform(lo, hi, size=shape)
    if dtype in COMPLEX:
        values = values + 1j * rng.uniform(lo, hi, size=shape)
    if exclude_zero:
        values = np.where(np.abs(values) < 0.1, 0.5, values)
    return np.asarray(values).astype(numpy_type)


def to_numpy(tensor) -> np.ndarray:
    """Values of an ember or torch tensor as a NumPy array (bfloat16 widened to float32)."""
    tensor = tensor.detach()
    if hasattr(tensor, "resolve_conj"):  # torch's lazy conjugate (adjoint, .mH) can't go to NumPy unresolved
        tensor = tensor.resolve_conj()
    if str(tensor.dtype).endswith("bfloat16"):
        tensor = tensor.float()
    if type(tensor).__module__.startswith("torch"):
        return np.asarray(tensor.numpy(force=True))  # force: torch's conj-bit views and ZeroTensor grads
    return np.asarray(tensor.numpy() if hasattr(tensor, "numpy") else tensor)


def compare(actual, expected, dtype: str, tolerances: dict | None = None, path: str = "output") -> None:
    """Assert an ember result equals torch's: structure, shape, dtype and values (nan == nan)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)), f"{path}: expected a sequence, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"{path}: length {len(actual)} != {len(expected)}"
        for index, (a, e) in enumerate(zip(actual, expected)):
            compare(a, e, dtype, tolerances, f"{path}[{index}]")
        return
    if not hasattr(expected, "dtype") or not hasattr(expected, "shape"):
        assert actual == expected or (actual != actual and expected != expected), f"{path}: {actual} != {expected}"
        return
    assert tuple(actual.shape) == tuple(expected.shape), (
        f"{path}: shape {tuple(actual.shape)} != {tuple(expected.shape)}"
    )
    actual_dtype = str(actual.dtype).split(".")[-1]
    expected_dtype = str(expected.dtype).split(".")[-1]
    assert actual_dtype == expected_dtype, f"{path}: dtype {actual_dtype} != {expected_dtype}"
    rtol, atol = (tolerances or {}).get(expected_dtype, TOLERANCES.get(expected_dtype, (0, 0)))
    a, e = to_numpy(actual), to_numpy(expected)
    if a.dtype.kind in "biu" and e.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=path)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)


# ---------------------------------------------------------------- common sample shapes


def unary_samples(dtype: str, rng, low=None, high=None, exclude_zero=False):
    """0-d, empty, 1-d, 2-d and 3-d inputs, one of them non-contiguous."""
    shapes = [(), (0,), (5,), (3, 4), (2, 3, 4)]
    samples = [Sample((make_array(s, dtype, rng, low, high, exclude_zero),)) for s in shapes]
    samples.append(Sample((make_array((4, 3), dtype, rng, low, high, exclude_zero),), noncontiguous=True,
                          name="noncontiguous"))
    return samples


def binary_samples(dtype: str, rng, low=None, high=None, exclude_zero=False, scalars=True):
    """Same-shape, broadcasting, 0-d, empty and Python-scalar pairs."""
    pairs = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (3,)), ((3,), ()), ((0, 3), (3,))]
    samples = [
        Sample((make_array(a, dtype, rng, low, high), make_array(b, dtype, rng, low, high, exclude_zero)))
        for a, b in pairs
    ]
    samples.append(Sample((make_array((4, 3), dtype, rng, low, high),
                           make_array((4, 3), dtype, rng, low, high, exclude_zero)), noncontiguous=True,
                          name="noncontiguous"))
    if scalars:
        scalar = 2 if dtype in INTEGRAL or dtype == "bool" else 2.5
        if dtype == "bool":
            scalar = True
        samples.append(Sample((make_array((3, 4), dtype, rng, low, high), scalar), name="python scalar"))
    return samples
