"""Generic op tests: every OpInfo in ember.testing.opdb against real PyTorch.

forward parity (values, dtype, shape) per dtype, gradient parity and float64
gradcheck/gradgradcheck, meta-device shapes and dtypes, in-place and out=
variants, method vs function, and error parity.
"""

from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import ember
from ember.testing.opdb import all_ops, compare
from ember.testing.opdb.core import build_value, to_numpy

torch = pytest.importorskip("torch")

OPS = all_ops()
OP_IDS = [op.name for op in OPS]


def _rng(*keys) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


def _samples(op, dtype):
    samples = op.sample_inputs(dtype, _rng(op.name, dtype))
    return samples[: op.max_samples]


def _xfail(op, test: str):
    if test in op.xfail:
        pytest.xfail(op.xfail[test])


def _build(lib, sample, requires_grad=False, noncontiguous=None):
    noncontiguous = sample.noncontiguous if noncontiguous is None else noncontiguous
    return tuple(build_value(lib, a, requires_grad, noncontiguous) for a in sample.args)


def _run_both(op, sample, requires_grad=False):
    ember_args = _build(ember, sample, requires_grad)
    torch_args = _build(torch, sample, requires_grad)
    try:
        expected = op.run(torch, sample, torch_args)
    except Exception as error:  # torch rejects this dtype/sample: ember must reject it too
        with pytest.raises(type(error)):
            op.run(ember, sample, ember_args)
        return None, None, error, ember_args, torch_args
    actual = op.run(ember, sample, ember_args)
    return actual, expected, None, ember_args, torch_args


def _forward_cases():
    for op in OPS:
        for dtype in op.dtypes:
            yield pytest.param(op, dtype, id=f"{op.name}-{dtype}")


@pytest.mark.parametrize("op,dtype", list(_forward_cases()))
def test_forward(op, dtype):
    _xfail(op, "forward")
    for sample in _samples(op, dtype):
        actual, expected, error, _, _ = _run_both(op, sample)
        if error is None:
            compare(actual, expected, dtype, op.tolerances, path=f"{op.name} {sample}")


def _float_tensors(values):
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_float_tensors(v))
        elif hasattr(v, "requires_grad") and v.requires_grad:
            out.append(v)
    return out


def _differentiable_outputs(result):
    results = result if isinstance(result, (tuple, list)) else (result,)
    return [r for r in results if hasattr(r, "dtype") and r.dtype.is_floating_point and r.requires_grad]


@pytest.mark.parametrize("op", [op for op in OPS if op.grad], ids=lambda op: op.name)
def test_grad(op):
    """Gradients of a random cotangent, ember vs torch, in float64."""
    _xfail(op, "grad")
    rng = _rng(op.name, "grad")
    for sample in _samples(op, "float64"):
        if not sample.grad:
            continue
        actual, expected, error, ember_args, torch_args = _run_both(op, sample, requires_grad=True)
        if error is not None:
            continue
        ember_outs, torch_outs = _differentiable_outputs(actual), _differentiable_outputs(expected)
        assert len(ember_outs) == len(torch_outs), f"{op.name}: differentiable outputs differ"
        if not torch_outs:
            continue
        cotangents = [rng.standard_normal(tuple(o.shape)) for o in torch_outs]
        torch_inputs, ember_inputs = _float_tensors(torch_args), _float_tensors(ember_args)
        expected_grads = torch.autograd.grad(torch_outs, torch_inputs, [torch.tensor(c) for c in cotangents],
                                             allow_unused=True)
        actual_grads = ember.autograd.grad(ember_outs, ember_inputs, [ember.tensor(c) for c in cotangents],
                                           allow_unused=True)
        for index, (a, e) in enumerate(zip(actual_grads, expected_grads)):
            if e is None:
                assert a is None or not np.any(to_numpy(a)), f"{op.name}: grad {index} should be None/zero"
                continue
            assert a is not None, f"{op.name} {sample}: grad {index} is None but torch's is not"
            np.testing.assert_allclose(to_numpy(a), to_numpy(e), rtol=op.grad_tolerance[0],
                                       atol=op.grad_tolerance[1], err_msg=f"{op.name} {sample} grad {index}")


def _gradcheck_samples(op):
    for sample in _samples(op, "float64"):
        if not sample.grad:
            continue
        args = _build(ember, sample, requires_grad=True, noncontiguous=False)
        inputs = _float_tensors(args)
        if not inputs or sum(t.numel() for t in inputs) > 40 or any(t.numel() == 0 for t in inputs):
            continue
        yield sample, args, inputs


def _positional_function(op, sample, args, inputs):
    """A function of just the differentiable tensors, the rest of the sample held fixed."""
    positions = [id(t) for t in inputs]

    def substitute(value, replacements):
        if isinstance(value, (list, tuple)):
            return type(value)(substitute(v, replacements) for v in value)
        if id(value) in positions:
            return replacements[positions.index(id(value))]
        return value

    def fn(*replacements):
        return op.run(ember, sample, tuple(substitute(a, replacements) for a in args))

    return fn


@pytest.mark.parametrize("op", [op for op in OPS if op.grad and op.gradcheck], ids=lambda op: op.name)
def test_gradcheck(op):
    _xfail(op, "gradcheck")
    checked = 0
    for sample, args, inputs in _gradcheck_samples(op):
        fn = _positional_function(op, sample, args, inputs)
        assert ember.autograd.gradcheck(fn, tuple(inputs)), f"{op.name} {sample}"
        checked += 1
        if checked >= 3:
            break


@pytest.mark.parametrize("op", [op for op in OPS if op.grad and op.gradgradcheck], ids=lambda op: op.name)
def test_gradgradcheck(op):
    _xfail(op, "gradgradcheck")
    for sample, args, inputs in _gradcheck_samples(op):
        fn = _positional_function(op, sample, args, inputs)
        assert ember.autograd.gradgradcheck(fn, tuple(inputs)), f"{op.name} {sample}"
        break


def _to_meta(value):
    if isinstance(value, ember.Tensor):
        return value.to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(v) for v in value)
    return value


@pytest.mark.parametrize("op", [op for op in OPS if op.meta], ids=lambda op: op.name)
def test_meta(op):
    """On the meta device, an op computes torch's shapes and dtypes without data."""
    _xfail(op, "meta")
    dtype = op.dtypes[0]
    for sample in _samples(op, dtype):
        torch_args = _build(torch, sample)
        try:
            expected = op.run(torch, sample, torch_args)
        except Exception:
            continue
        ember_args = _to_meta(_build(ember, sample))
        sample_kwargs = {k: _to_meta(build_value(ember, v)) for k, v in sample.kwargs.items()}
        kwargs_sample = type(sample)(sample.args, sample_kwargs, sample.name)
        actual = op.run(ember, kwargs_sample, ember_args)
        actual_list = actual if isinstance(actual, (tuple, list)) else [actual]
        expected_list = expected if isinstance(expected, (tuple, list)) else [expected]
        for a, e in zip(actual_list, expected_list):
            if hasattr(e, "shape"):
                assert a.device.type == "meta"
                assert tuple(a.shape) == tuple(e.shape), f"{op.name} {sample}"
                assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], f"{op.name} {sample}"


@pytest.mark.parametrize("op", [op for op in OPS if op.method], ids=lambda op: op.name)
def test_method_variant(op):
    """tensor.op(*rest) == ember.op(tensor, *rest)."""
    dtype = op.dtypes[0]
    for sample in _samples(op, dtype):
        args = _build(ember, sample)
        if not isinstance(args[0], ember.Tensor):
            continue
        try:
            expected = op.run(ember, sample, args)
        except Exception:
            continue
        kwargs = {k: build_value(ember, v) for k, v in sample.kwargs.items()}
        actual = getattr(args[0], op.method)(*args[1:], **kwargs)
        compare(actual, expected, dtype, op.tolerances)


@pytest.mark.parametrize("op", [op for op in OPS if op.inplace], ids=lambda op: op.name)
def test_inplace(op):
    """tensor.op_(...) writes torch's values into the same tensor (or raises where torch does)."""
    _xfail(op, "inplace")
    for dtype in op.dtypes[:2]:
        for sample in _samples(op, dtype):
            ember_args, torch_args = _build(ember, sample), _build(torch, sample)
            if not isinstance(torch_args[0], torch.Tensor):
                continue
            kwargs_e = {k: build_value(ember, v) for k, v in sample.kwargs.items()}
            kwargs_t = {k: build_value(torch, v) for k, v in sample.kwargs.items()}
            target = torch_args[0].clone()
            try:
                expected = getattr(target, op.inplace)(*torch_args[1:], **kwargs_t)
            except RuntimeError:
                with pytest.raises(RuntimeError):
                    getattr(ember_args[0].clone(), op.inplace)(*ember_args[1:], **kwargs_e)
                continue
            mine = ember_args[0].clone()
            version = mine._version
            actual = getattr(mine, op.inplace)(*ember_args[1:], **kwargs_e)
            assert actual is mine
            assert mine._version > version
            compare(actual, expected, dtype, op.tolerances)


@pytest.mark.parametrize("op", [op for op in OPS if op.supports_out], ids=lambda op: op.name)
def test_out(op):
    """op(..., out=t) fills t with the result (resizing an empty t)."""
    dtype = op.dtypes[0]
    for sample in _samples(op, dtype):
        args = _build(ember, sample)
        try:
            expected = op.run(ember, sample, args)
        except Exception:
            continue
        if not isinstance(expected, ember.Tensor):
            continue
        out = ember.empty(0, dtype=expected.dtype)
        kwargs = dict(sample.kwargs, out=out)
        result = op.run(ember, type(sample)(sample.args, kwargs), args)
        assert result is out
        compare(out, expected, dtype, op.tolerances)


def _error_cases():
    for op in OPS:
        if op.error_inputs is None:
            continue
        for index, error_sample in enumerate(op.error_inputs()):
            yield pytest.param(op, error_sample, id=f"{op.name}-{index}")


@pytest.mark.parametrize("op,error_sample", list(_error_cases()))
def test_errors(op, error_sample):
    """Bad input raises torch's exception type, with a message naming what is wrong."""
    sample = error_sample.sample
    with pytest.raises(error_sample.error):
        op.run(torch, sample, _build(torch, sample))
    with pytest.raises(error_sample.error) as caught:
        op.run(ember, sample, _build(ember, sample))
    if error_sample.match:
        assert re.search(error_sample.match, str(caught.value)), str(caught.value)
