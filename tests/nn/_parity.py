"""Shared helpers for the nn parity tests: build the same module in torch and ember, run both, compare.

A case names a constructor (called with the library, `torch` or `ember`), input specs (random float64
arrays, integer arrays, constants, packed sequences) and keyword arguments.  `check_module` copies torch's
state_dict into ember, compares state_dict keys, named_parameters order and repr, then runs both in each
mode and compares outputs, input gradients, parameter gradients and buffers (running statistics).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def rng_for(*keys) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("/".join(map(str, keys)).encode()))


# ---------------------------------------------------------------- input specs


@dataclass
class F:
    """A random float64 array (normal, or uniform in [low, high)); requires grad unless grad=False."""

    shape: tuple
    low: float | None = None
    high: float | None = None
    grad: bool = True

    def array(self, rng):
        if self.low is None:
            return rng.standard_normal(self.shape)
        return rng.uniform(self.low, self.high, self.shape)

    def wrap(self, lib, array):
        tensor = lib.tensor(array)
        return tensor.requires_grad_(True) if self.grad else tensor


@dataclass
class L:
    """A random int64 array in [low, high)."""

    high: int
    shape: tuple
    low: int = 0

    def array(self, rng):
        return rng.integers(self.low, self.high, self.shape).astype(np.int64)

    def wrap(self, lib, array):
        return lib.tensor(array)


@dataclass
class C:
    """A constant array (bool masks, lengths, indices), never requiring grad."""

    value: object

    def array(self, rng):
        return np.asarray(self.value)

    def wrap(self, lib, array):
        return lib.tensor(array)


@dataclass
class Packed:
    """A padded float64 batch packed with pack_padded_sequence (grad flows back to the padded tensor)."""

    shape: tuple
    lengths: list
    batch_first: bool = False
    enforce_sorted: bool = False

    def array(self, rng):
        return rng.standard_normal(self.shape)

    def wrap(self, lib, array):
        tensor = lib.tensor(array).requires_grad_(True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(tensor, lib.tensor(self.lengths), self.batch_first,
                                                       self.enforce_sorted)
        packed._leaf = tensor  # the gradient is read from the padded leaf
        return packed


@dataclass
class Raw:
    """A Python value passed as is (ints, floats, tuples)."""

    value: object

    def array(self, rng):
        return None

    def wrap(self, lib, array):
        return self.value


SPECS = (F, L, C, Packed, Raw)


@dataclass
class Case:
    """One module configuration: `build(lib)` -> module; inputs and kwargs are specs."""

    name: str
    build: object
    inputs: tuple = ()
    kwargs: dict = field(default_factory=dict)
    modes: tuple = ("train", "eval")
    grad: bool = True
    tol: tuple = (1e-7, 1e-9)
    double: bool = True
    call: object = None  # (module, *inputs, **kwargs) -> output, default module(*inputs, **kwargs)

    def __repr__(self) -> str:
        return self.name


def _leaves(values):
    """The tensors a gradient is read from (the padded leaf of a packed input)."""
    leaves = []
    for value in values:
        leaf = getattr(value, "_leaf", None)
        if leaf is not None:
            leaves.append(leaf)
        elif hasattr(value, "requires_grad") and value.requires_grad:
            leaves.append(value)
    return leaves


def flatten(value) -> list:
    """Tensors of a (nested) result in order; PackedSequence and namedtuples as their fields; None skipped."""
    if value is None:
        return []
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flatten(v)]
    return [value]


def to_numpy(tensor) -> np.ndarray:
    if isinstance(tensor, (int, float, bool)):
        return np.asarray(tensor)
    return np.array(tensor.detach().numpy())


def compare_values(actual, expected, tol, path):
    actual_list, expected_list = flatten(actual), flatten(expected)
    assert len(actual_list) == len(expected_list), f"{path}: {len(actual_list)} results != {len(expected_list)}"
    for index, (a, e) in enumerate(zip(actual_list, expected_list)):
        where = f"{path}[{index}]"
        if not hasattr(e, "shape"):
            assert a == e or (e != e and a != a), f"{where}: {a} != {e}"
            continue
        assert tuple(a.shape) == tuple(e.shape), f"{where}: shape {tuple(a.shape)} != {tuple(e.shape)}"
        assert str(a.dtype).split(".")[-1] == str(e.dtype).split(".")[-1], f"{where}: dtype {a.dtype} != {e.dtype}"
        np.testing.assert_allclose(to_numpy(a), to_numpy(e), rtol=tol[0], atol=tol[1], equal_nan=True,
                                   err_msg=where)


def copy_state(ember_module, torch_module):
    """Load torch's state_dict into the ember module (strict), returning the result."""
    state = {k: ember.tensor(v.detach().numpy().copy()) for k, v in torch_module.state_dict().items()}
    return ember_module.load_state_dict(state)


def build_pair(case):
    torch.manual_seed(0)
    torch_module = case.build(torch)
    ember_module = case.build(ember)
    if case.double:
        torch_module, ember_module = torch_module.double(), ember_module.double()
    copy_state(ember_module, torch_module)
    return torch_module, ember_module


def make_inputs(case, rng):
    arrays = [spec.array(rng) for spec in case.inputs]
    kwarg_arrays = {k: spec.array(rng) for k, spec in case.kwargs.items() if isinstance(spec, SPECS)}
    return arrays, kwarg_arrays


def wrap_inputs(lib, case, arrays, kwarg_arrays):
    args = [spec.wrap(lib, a) for spec, a in zip(case.inputs, arrays)]
    kwargs = {}
    for key, spec in case.kwargs.items():
        kwargs[key] = spec.wrap(lib, kwarg_arrays[key]) if isinstance(spec, SPECS) else spec
    return args, kwargs


def _float_outputs(result):
    return [t for t in flatten(result) if hasattr(t, "requires_grad") and t.requires_grad
            and t.dtype.is_floating_point]


def run_and_backward(lib, module, case, arrays, kwarg_arrays, cotangent_rng_seed):
    args, kwargs = wrap_inputs(lib, case, arrays, kwarg_arrays)
    leaves = _leaves(args) + _leaves(kwargs.values())
    call = case.call or (lambda m, *a, **k: m(*a, **k))
    result = call(module, *args, **kwargs)
    if not case.grad:
        return result, [], leaves
    outputs = _float_outputs(result)
    rng = np.random.default_rng(cotangent_rng_seed)
    total = None
    for output in outputs:
        cotangent = lib.tensor(rng.standard_normal(tuple(output.shape)))
        term = (output * cotangent).sum()
        total = term if total is None else total + term
    if total is not None:
        total.backward()
    return result, [leaf.grad for leaf in leaves], leaves


def check_structure(torch_module, ember_module):
    assert list(ember_module.state_dict()) == list(torch_module.state_dict())
    assert [n for n, _ in ember_module.named_parameters()] == [n for n, _ in torch_module.named_parameters()]
    assert [n for n, _ in ember_module.named_buffers()] == [n for n, _ in torch_module.named_buffers()]
    assert repr(ember_module) == repr(torch_module)


def check_module(case):
    """Everything the brief asks per module: structure, then outputs and gradients per mode."""
    torch_module, ember_module = build_pair(case)
    check_structure(torch_module, ember_module)
    rng = rng_for(case.name)
    for mode in case.modes:
        torch_module.train(mode == "train")
        ember_module.train(mode == "train")
        torch_module.zero_grad()
        ember_module.zero_grad()
        arrays, kwarg_arrays = make_inputs(case, rng)
        expected, expected_grads, _ = run_and_backward(torch, torch_module, case, arrays, kwarg_arrays, 1)
        actual, actual_grads, _ = run_and_backward(ember, ember_module, case, arrays, kwarg_arrays, 1)
        compare_values(actual, expected, case.tol, f"{case.name} {mode} output")
        for index, (a, e) in enumerate(zip(actual_grads, expected_grads)):
            if e is None:
                assert a is None or not np.any(to_numpy(a)), f"{case.name} {mode} input grad {index}"
                continue
            assert a is not None, f"{case.name} {mode}: input grad {index} is None"
            compare_values(a, e, case.tol, f"{case.name} {mode} input grad {index}")
        torch_params = dict(torch_module.named_parameters())
        for name, param in ember_module.named_parameters():
            e = torch_params[name].grad
            if e is None:
                assert param.grad is None or not np.any(to_numpy(param.grad)), f"{case.name} {mode} grad {name}"
                continue
            assert param.grad is not None, f"{case.name} {mode}: grad of {name} is None"
            compare_values(param.grad, e, case.tol, f"{case.name} {mode} grad {name}")
        torch_buffers = dict(torch_module.named_buffers())
        for name, buffer in ember_module.named_buffers():
            compare_values(buffer, torch_buffers[name], case.tol, f"{case.name} {mode} buffer {name}")
