"""Tensor.grad_dtype (torch 2.13): the dtype a leaf's .grad must have; the engine casts incoming gradients to it,
None allows any dtype, and assigning .grad checks it; and Tensor.module_load, load_state_dict's swap hook.  Each
scenario runs in both libraries."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn, lib):
    try:
        result = fn(lib)
    except Exception as error:  # noqa: BLE001 - the comparison is of the error
        return ("raised", type(error).__name__, str(error))
    return ("ok", repr(result).replace("torch.", "").replace("ember.", ""))


def cast_to_half(lib):
    x = lib.ones(2, requires_grad=True)
    x.grad_dtype = lib.float16
    (x.double() * 3).sum().backward()
    return x.grad_dtype, x.grad.dtype, x.grad.tolist()


def none_allows_any(lib):
    x = lib.ones(2, requires_grad=True)
    x.grad_dtype = None
    x.grad = lib.ones(2, dtype=lib.float64)
    first = x.grad.dtype
    x.grad = None
    (x * 3).sum().backward()
    return x.grad_dtype, first, x.grad.dtype


def assign_checks_grad_dtype(lib):
    w = lib.ones(2, requires_grad=True)
    w.grad_dtype = lib.float64
    w.grad = lib.ones(2)


def accumulate_into_wider_grad(lib):
    w = lib.ones(2, requires_grad=True)
    w.grad_dtype = lib.float64
    w.grad = lib.ones(2, dtype=lib.float64)
    (w * 2).sum().backward()
    return w.grad.dtype, w.grad.tolist()


def non_leaf_get(lib):
    return (lib.ones(2, requires_grad=True) * 2).grad_dtype


def non_leaf_set(lib):
    y = lib.ones(2, requires_grad=True) * 2
    y.grad_dtype = lib.float16


def defaults(lib):
    x = lib.ones(2, requires_grad=True)
    x.grad_dtype = lib.float64
    return (lib.nn.Linear(2, 2).weight.grad_dtype, lib.ones(2, dtype=lib.int64).grad_dtype,
            x.detach().grad_dtype, x.grad_dtype)


@pytest.mark.parametrize("scenario", [cast_to_half, none_allows_any, assign_checks_grad_dtype,
                                      accumulate_into_wider_grad, non_leaf_get, non_leaf_set, defaults],
                         ids=lambda f: f.__name__)
def test_grad_dtype_matches_torch(scenario):
    assert _outcome(scenario, ember) == _outcome(scenario, torch)


def module_load_copy(lib):
    buffer = lib.zeros(3)
    value = lib.arange(3.0)
    loaded = buffer.module_load(value)
    return loaded.tolist(), buffer.tolist(), loaded is buffer, loaded is value


def module_load_assign(lib):
    buffer = lib.zeros(3)
    value = lib.arange(3.0, requires_grad=True)
    loaded = buffer.module_load(value, assign=True)
    return loaded.tolist(), buffer.tolist(), loaded.requires_grad, loaded is value


def module_load_leaf_requiring_grad(lib):
    return lib.nn.Parameter(lib.zeros(3)).module_load(lib.ones(3))


@pytest.mark.parametrize("scenario", [module_load_copy, module_load_assign, module_load_leaf_requiring_grad],
                         ids=lambda f: f.__name__)
def test_module_load_matches_torch(scenario):
    assert _outcome(scenario, ember) == _outcome(scenario, torch)
