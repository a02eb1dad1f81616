"""More of torch's smaller names, against torch: F.conv_tbc, nn.init.dirac / eye (deprecated aliases), and
autograd's set_multithreading_enabled, enforce_grad_layout_policy, is_view_replay_enabled."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
from test_small_functions_r28 import same_error  # noqa: E402

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch(pad):
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in ((7, 2, 3), (3, 3, 4), (4,))]
    results = []
    for lib in (ember, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in arrays)
        out = lib.nn.functional.conv_tbc(x, w, b, pad)
        out.pow(2).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [((7, 2), (3, 3, 4), (4,)), ((7, 2, 3), (3, 2, 4), (4,)),
                                    ((7, 2, 3), (3, 3, 4), (3,))])
def test_conv_tbc_errors_match_torch(shapes):
    same_error(lambda lib: lib.nn.functional.conv_tbc(*(lib.ones(s) for s in shapes)), RuntimeError)


@pytest.mark.parametrize("name", ["dirac", "eye"])
def test_deprecated_init_aliases_match_torch(name):
    shape = (4, 4, 3) if name == "dirac" else (3, 5)
    outs = []
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = getattr(lib.nn.init, name)(lib.empty(shape))
        outs.append((out.numpy(), [(w.category, str(w.message)) for w in caught]))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]


def test_grad_layout_policy_matches_torch():
    strides = []
    for lib in (ember, torch):
        seen = []
        for enforce in (True, False):
            p = lib.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
            with lib.autograd.enforce_grad_layout_policy(enforce):
                (p * lib.ones(4, 2, 3)).sum().backward()
            seen.append(p.grad.stride())
        strides.append(seen)
    assert strides[0] == strides[1]


def test_flag_modes_match_torch():
    states = []
    for lib in (ember, torch):
        autograd = lib.autograd
        seen = [autograd.is_multithreading_enabled(), autograd.is_view_replay_enabled()]
        with autograd.set_multithreading_enabled(False):
            seen.append(autograd.is_multithreading_enabled())
        seen.append(autograd.is_multithreading_enabled())
        setting = autograd.set_multithreading_enabled(False)  # (as a function it takes effect at once)
        seen.append(autograd.is_multithreading_enabled())
        setting.__exit__(None, None, None)

        @autograd.set_multithreading_enabled(False)
        def inside():
            return autograd.is_multithreading_enabled()

        seen += [autograd.is_multithreading_enabled(), inside(), autograd.is_multithreading_enabled()]
        with autograd.grad_mode._force_original_view_tracking(True):
            seen.append(autograd.is_view_replay_enabled())
        seen.append(autograd.is_view_replay_enabled())
        states.append(seen)
    assert states[0] == states[1]
