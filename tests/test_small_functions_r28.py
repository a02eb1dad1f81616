"""torch's top-level functions that ember lacked: hash_tensor, quantize_per_tensor_dynamic, the quantized
tensor accessors as functions (torch.q_scale(q)...), norm_except_dim and _weight_norm, compared with torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
VALUES = RNG.standard_normal((3, 4, 5)).astype(np.float32) * 3


def _both(fn):
    return fn(ember), fn(torch)


def same_error(call, kind=Exception) -> None:
    """call(ember) and call(torch) raise the same exception type with the same message."""
    errors = []
    for lib in (ember, torch):
        with pytest.raises(kind) as info:
            call(lib)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]


def _numbers(result):
    return result.numpy() if hasattr(result, "numpy") else result


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64",
                                   "bool"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (-1, True), ([0, 2], False), ([], False)])
def test_hash_tensor_matches_torch(dtype, dim, keepdim):
    def run(lib):
        x = lib.tensor(VALUES).to(getattr(lib, dtype))
        return lib.hash_tensor(x, keepdim=keepdim) if dim is None else lib.hash_tensor(x, dim, keepdim=keepdim)

    ours, theirs = _both(run)
    assert str(ours.dtype) == "ember.uint64" and ours.shape == theirs.shape
    assert ours.tolist() == theirs.tolist()


@pytest.mark.parametrize("case", ["complex", "empty_all", "empty_dim", "mode"])
def test_hash_tensor_errors_match_torch(case):
    calls = {
        "complex": lambda lib: lib.hash_tensor(lib.ones(2, dtype=lib.complex64)),
        "empty_all": lambda lib: lib.hash_tensor(lib.ones(0, 3)),
        "empty_dim": lambda lib: lib.hash_tensor(lib.ones(0, 3), 0),
        "mode": lambda lib: lib.hash_tensor(lib.ones(2), mode=1),
    }
    same_error(calls[case])
    assert ember.hash_tensor(ember.ones(0, 3), 1).shape == (0,)  # (a non-empty reduced dim is fine)


@pytest.mark.parametrize("dtype", ["qint8", "quint8", "float16"])
@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("scale", [1.0, 1e-6, 40.0])
def test_quantize_per_tensor_dynamic_matches_torch(dtype, reduce_range, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's deprecation of quantized tensor creation)
        ours, theirs = _both(lambda lib: lib.quantize_per_tensor_dynamic(lib.tensor(VALUES * scale),
                                                                         getattr(lib, dtype), reduce_range))
    if dtype == "float16":
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
        return
    assert ours.q_scale() == theirs.q_scale() and ours.q_zero_point() == theirs.q_zero_point()
    np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy())


def test_quantize_per_tensor_dynamic_errors_match_torch():
    for call in (lambda lib: lib.quantize_per_tensor_dynamic(lib.ones(3), lib.float32, False),
                 lambda lib: lib.quantize_per_tensor_dynamic(lib.ones(3, dtype=lib.float64), lib.qint8, False)):
        same_error(call, RuntimeError)


def test_quantized_accessors_are_functions_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per_tensor = _both(lambda lib: lib.quantize_per_tensor(lib.tensor(VALUES), 0.05, 3, lib.quint8))
        per_channel = _both(lambda lib: lib.quantize_per_channel(
            lib.tensor(VALUES), lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64), lib.tensor([0, 1, 2]), 0, lib.qint8))
    for (ours, theirs), names in ((per_tensor, ("q_scale", "q_zero_point", "int_repr")),
                                  (per_channel, ("q_per_channel_scales", "q_per_channel_zero_points",
                                                 "q_per_channel_axis", "int_repr"))):
        for name in names:
            got, want = getattr(ember, name)(ours), getattr(torch, name)(theirs)
            np.testing.assert_array_equal(_numbers(got), _numbers(want))
            np.testing.assert_array_equal(_numbers(got), _numbers(getattr(ours, name)()))
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.q_scale(lib.ones(2))


@pytest.mark.parametrize("pow_, dim", [(2, 0), (2, 1), (2, 2), (2, -1), (3, 0), (1, 1)])
def test_norm_except_dim_and_weight_norm_match_torch(pow_, dim):
    ours, theirs = _both(lambda lib: lib.norm_except_dim(lib.tensor(VALUES), pow_, dim))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)
    if dim != -1:
        g = np.abs(RNG.standard_normal(theirs.shape)).astype(np.float32)
        ours, theirs = _both(lambda lib: lib._weight_norm(lib.tensor(VALUES), lib.tensor(g), dim))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5)


def test_norm_except_dim_takes_int_pow_as_torch():
    same_error(lambda lib: lib.norm_except_dim(lib.ones(2, 2), 1.5, 0), TypeError)
