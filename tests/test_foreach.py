"""torch._foreach_* over lists of tensors, against torch (values, return types, errors)."""

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
DATA = [RNG.uniform(0.5, 2.0, 3).astype(np.float32), RNG.uniform(0.5, 2.0, (2, 2)).astype(np.float32)]


def _tensors(lib):
    return [lib.tensor(a) for a in DATA]


CASES = {
    "sqrt": lambda lib, a: lib._foreach_sqrt(a),
    "exp_": lambda lib, a: lib._foreach_exp_(a),
    "neg": lambda lib, a: lib._foreach_neg(a),
    "add_scalar": lambda lib, a: lib._foreach_add(a, 2.0),
    "add_list_alpha": lambda lib, a: lib._foreach_add(a, _tensors(lib), alpha=0.5),
    "add_scalars": lambda lib, a: lib._foreach_add(a, [1.0, 2.0]),
    "sub_": lambda lib, a: lib._foreach_sub_(a, [0.5, 0.25]),
    "mul_tensor": lambda lib, a: lib._foreach_mul(a, lib.tensor(3.0)),
    "mul_": lambda lib, a: lib._foreach_mul_(a, 0.9),
    "div": lambda lib, a: lib._foreach_div(a, _tensors(lib)),
    "pow": lambda lib, a: lib._foreach_pow(a, 2.0),
    "pow_base": lambda lib, a: lib._foreach_pow(2.0, a),
    "maximum_": lambda lib, a: lib._foreach_maximum_(a, 1.0),
    "clamp_min": lambda lib, a: lib._foreach_clamp_min(a, 1.0),
    "lerp_": lambda lib, a: lib._foreach_lerp_(a, _tensors(lib)[::-1][::-1], 0.3),
    "lerp_list": lambda lib, a: lib._foreach_lerp(a, [t * 2 for t in a], [0.1, 0.9]),
    "addcmul_": lambda lib, a: lib._foreach_addcmul_(a, a, _tensors(lib), value=0.5),
    "addcdiv": lambda lib, a: lib._foreach_addcdiv(a, a, _tensors(lib), [1.0, 3.0]),
    "norm": lambda lib, a: lib._foreach_norm(a),
    "norm_1": lambda lib, a: lib._foreach_norm(a, 1),
    "max": lambda lib, a: lib._foreach_max(a),
    "zero_": lambda lib, a: lib._foreach_zero_(a),
    "copy_": lambda lib, a: lib._foreach_copy_(a, [t * 2 for t in _tensors(lib)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_foreach_matches_torch(case):
    outs = []
    for lib in (ember, torch):
        tensors = _tensors(lib)
        result = CASES[case](lib, tensors)
        outs.append((type(result).__name__, [r.numpy() for r in result], [t.numpy() for t in tensors]))
    assert outs[0][0] == outs[1][0]
    for ours, theirs in zip(outs[0][1] + outs[0][2], outs[1][1] + outs[1][2]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_foreach_list_length_errors():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="same number of tensors"):
            lib._foreach_add(_tensors(lib), [lib.ones(3)])
        with pytest.raises(RuntimeError, match="scalar list"):
            lib._foreach_add(_tensors(lib), [1.0])


def test_foreach_argument_checks_as_torch():
    for lib in (ember, torch):
        xs = [lib.ones(2), lib.ones(3)]
        out = lib._foreach_addcmul(xs, xs, xs, lib.tensor([0.5, 2.0]))  # scalars as a 1-D tensor
        assert [t.tolist() for t in out] == [[1.5, 1.5], [3.0, 3.0, 3.0]]
        with pytest.raises(RuntimeError, match="can't be cast"):
            lib._foreach_maximum_([lib.tensor([1, 5])], lib.tensor(1.5))
        with pytest.raises(TypeError):
            lib._foreach_add([lib.ones(2)], 1.5, alpha=2)
        with pytest.raises(RuntimeError, match="at least one tensor"):
            lib._foreach_mul([], 2)
