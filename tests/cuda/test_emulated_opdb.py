"""Every OpInfo on the cuda device, compared with the same call on the CPU ("numpy vs cupy" parity).

On a machine without a GPU the cuda device is emulated (NOTE [ Emulated cuda ] in ember/_backends/emulated.py):
NumPy behind a CuPy-shaped module whose arrays refuse NumPy functions and host arrays.  That checks that op
impls use the `xp` they are given and that dispatch, device movement and autograd work on 'cuda'; it does not
check GPU numerics.  With a real GPU (ember.cuda.is_available() and not emulated) the same tests also run on
the real device, with looser float tolerances: run scripts/gpu_check.sh.

Dtypes are sampled (float32 and one integral type per op, float64 for gradients) to keep this under a minute.
"""

from __future__ import annotations

import contextlib
import zlib

import numpy as np
import pytest

import ember
from ember import _backends
from ember.testing.opdb import all_ops
from ember.testing.opdb.core import TOLERANCES, build_value, to_numpy

from ._xp_gaps import GAPS

OPS = all_ops()
REAL_GPU = ember.cuda.is_available() and not ember.cuda.is_emulated()
MODES = ["emulated"] + (["real"] if REAL_GPU else [])
# a real GPU computes float32 with other reduction orders, fused multiply-adds and (if allowed) TF32
REAL_TOLERANCES = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "complex64": (1e-4, 1e-4),
                   "float16": (2e-3, 2e-3)}

# Known xp-discipline gaps found by the emulation (tests/cuda/_xp_gaps.py): such a test that fails is an xfail
# naming where; one that passes passes (some gaps hit only one of the sampled dtypes).  Unlisted ops must pass.
XFAIL: dict = GAPS


@contextlib.contextmanager
def _known_gap(name: str, kind: str):
    reason = XFAIL.get((name, kind))
    if reason is None:
        yield
        return
    try:
        yield
    except Exception as error:
        pytest.xfail(f"{reason} ({type(error).__name__})")


@pytest.fixture(params=MODES)
def cuda_mode(request):
    was = _backends.cuda_is_emulated()
    _backends.emulate_cuda(request.param == "emulated")
    try:
        yield request.param
    finally:
        _backends.emulate_cuda(was)


def _rng(*keys) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def _sampled_dtypes(op) -> list:
    """float32 (else the first dtype) and the first integral or bool type: the two code paths most ops have."""
    dtypes = list(op.dtypes)
    chosen = ["float32"] if "float32" in dtypes else dtypes[:1]
    chosen += [d for d in dtypes if d.startswith(("int", "uint", "bool"))][:1]
    return chosen


def _to_cuda(value):
    if isinstance(value, ember.Tensor):
        moved = value.detach().to("cuda")
        return moved.requires_grad_(True) if value.requires_grad else moved
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cuda(v) for v in value)
    if isinstance(value, dict):  # keyword arguments (cov's weights, gradient's spacing)
        return {k: _to_cuda(v) for k, v in value.items()}
    return value


def _call(op, sample, args, kwargs):
    call = op.call or (lambda lib, *a, **k: getattr(lib, op.name)(*a, **k))
    return call(ember, *args, **kwargs)


def _check_on_cuda(result):
    results = result if isinstance(result, (tuple, list)) else (result,)
    for r in results:
        if isinstance(r, ember.Tensor):
            assert r.device.type == "cuda", f"a result left the cuda device: {r.device}"


def _compare(actual, expected, dtype, op, mode, path):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected), path
        for index, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, dtype, op, mode, f"{path}[{index}]")
        return
    if not isinstance(expected, ember.Tensor):
        assert actual == expected or (actual != actual and expected != expected), f"{path}: {actual} != {expected}"
        return
    assert actual.device.type == "cuda", f"{path}: result on {actual.device}"
    assert tuple(actual.shape) == tuple(expected.shape), path
    assert actual.dtype == expected.dtype, f"{path}: {actual.dtype} != {expected.dtype}"
    a, e = to_numpy(actual.cpu()), to_numpy(expected)
    name = str(expected.dtype).split(".")[-1]
    rtol, atol = (0, 0) if mode == "emulated" else REAL_TOLERANCES.get(name, op.tolerances.get(name, (0, 0)))
    if mode == "emulated" and a.dtype.kind in "fc":
        rtol, atol = op.tolerances.get(name, TOLERANCES.get(name, (0, 0)))
        rtol, atol = rtol * 1e-3, atol * 1e-3  # same NumPy underneath: only op-order differences are allowed
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, e, err_msg=path)
    else:
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)


def _forward_cases():
    for op in OPS:
        for dtype in _sampled_dtypes(op):
            yield pytest.param(op, dtype, id=f"{op.name}-{dtype}")


@pytest.mark.parametrize("op,dtype", list(_forward_cases()))
def test_forward_on_cuda(op, dtype, cuda_mode):
    with _known_gap(op.name, "forward"):
        _forward(op, dtype, cuda_mode)


def _forward(op, dtype, cuda_mode):
    samples = op.sample_inputs(dtype, _rng(op.name, dtype))[: min(op.max_samples, 6)]
    for sample in samples:
        cpu_args = tuple(build_value(ember, a, False, sample.noncontiguous) for a in sample.args)
        cpu_kwargs = {k: build_value(ember, v) for k, v in sample.kwargs.items()}
        try:
            expected = _call(op, sample, cpu_args, cpu_kwargs)
        except Exception as error:  # the CPU rejects it: cuda must reject it with the same type
            with pytest.raises(type(error)):
                _call(op, sample, _to_cuda(cpu_args), _to_cuda(cpu_kwargs))
            continue
        actual = _call(op, sample, _to_cuda(cpu_args), _to_cuda(cpu_kwargs))
        _compare(actual, expected, dtype, op, cuda_mode, f"{op.name} {sample}")


def _float_tensors(values):
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_float_tensors(v))
        elif isinstance(v, ember.Tensor) and v.requires_grad:
            out.append(v)
    return out


def _differentiable(result):
    results = result if isinstance(result, (tuple, list)) else (result,)
    return [r for r in results if isinstance(r, ember.Tensor) and r.dtype.is_floating_point and r.requires_grad]


@pytest.mark.parametrize("op", [op for op in OPS if op.grad], ids=lambda op: op.name)
def test_grad_on_cuda(op, cuda_mode):
    """float64 gradients of a fixed cotangent: cuda vs cpu (the backward ops run on cuda too)."""
    with _known_gap(op.name, "grad"):
        _grad(op, cuda_mode)


def _grad(op, cuda_mode):
    rng = _rng(op.name, "grad")
    for sample in op.sample_inputs("float64", _rng(op.name, "float64"))[:3]:
        if not sample.grad:
            continue
        cpu_args = tuple(build_value(ember, a, True, sample.noncontiguous) for a in sample.args)
        cpu_kwargs = {k: build_value(ember, v) for k, v in sample.kwargs.items()}
        try:
            expected = _call(op, sample, cpu_args, cpu_kwargs)
        except Exception:
            continue
        cuda_args = _to_cuda(cpu_args)
        actual = _call(op, sample, cuda_args, _to_cuda(cpu_kwargs))
        cpu_outs, cuda_outs = _differentiable(expected), _differentiable(actual)
        assert len(cpu_outs) == len(cuda_outs)
        if not cpu_outs:
            continue
        cotangents = [rng.standard_normal(tuple(o.shape)) for o in cpu_outs]
        cpu_inputs, cuda_inputs = _float_tensors(cpu_args), _float_tensors(cuda_args)
        expected_grads = ember.autograd.grad(cpu_outs, cpu_inputs, [ember.tensor(c) for c in cotangents],
                                             allow_unused=True)
        actual_grads = ember.autograd.grad(cuda_outs, cuda_inputs,
                                           [ember.tensor(c, device="cuda") for c in cotangents], allow_unused=True)
        for index, (a, e) in enumerate(zip(actual_grads, expected_grads)):
            if e is None:
                assert a is None, f"{op.name}: grad {index}"
                continue
            assert a is not None and a.device.type == "cuda", f"{op.name} {sample}: grad {index}"
            tolerance = 1e-9 if cuda_mode == "real" else 1e-12
            np.testing.assert_allclose(to_numpy(a.cpu()), to_numpy(e), rtol=tolerance, atol=tolerance,
                                       err_msg=f"{op.name} {sample} grad {index}")
