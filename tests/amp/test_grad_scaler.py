"""ember.amp.GradScaler against torch.amp.GradScaler("cpu"): the same scales and skipped steps on a run that
overflows on purpose."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OVERFLOW_STEPS = {2, 3, 9}


def run(lib, steps=14):
    w0 = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    w = lib.nn.Parameter(lib.tensor(w0))
    opt = lib.optim.SGD([w], lr=0.1)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0**10, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    x = lib.tensor(np.ones((4, 3), dtype=np.float32))
    scales, stepped = [], []
    for step in range(steps):
        opt.zero_grad()
        loss = (x @ w.T).sum()
        if step in OVERFLOW_STEPS:
            loss = loss * float("inf")
        before = w.detach().clone()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        stepped.append(not bool((w.detach() == before).all()))
        scales.append(scaler.get_scale())
    return scales, stepped, w.detach().numpy(), scaler.state_dict()


def test_scale_and_skip_sequence_matches_torch():
    e_scales, e_stepped, e_w, e_state = run(ember)
    t_scales, t_stepped, t_w, t_state = run(torch)
    assert e_scales == t_scales
    assert e_stepped == t_stepped
    assert [i for i, s in enumerate(e_stepped) if not s] == sorted(OVERFLOW_STEPS)
    np.testing.assert_allclose(e_w, t_w, rtol=1e-6)
    assert e_state == t_state


def test_unscale_then_clip_then_step():
    w = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([w], lr=1.0)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    scaler.scale((w * 2).sum()).backward()
    assert w.grad.tolist() == [16.0, 16.0, 16.0]
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == [-1.0, -1.0, -1.0]


def test_state_dict_round_trip_and_disabled():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_interval=7)
    other = ember.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.state_dict() == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 7,
                                  "_growth_tracker": 0}
    off = ember.amp.GradScaler("cpu", enabled=False)
    loss = ember.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and not off.is_enabled() and off.state_dict() == {}
    with pytest.raises(AssertionError, match="growth factor"):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
