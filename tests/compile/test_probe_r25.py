"""Probe round 25 (whole training and inference programs, compiled vs eager ember over many steps): the
cases that differed, or recaptured where they should replay."""

import pytest

import ember
import ember.nn as nn


def test_a_returned_view_of_an_input_written_through_it_stays_an_alias():
    """`x = img.reshape(n, -1); x.clamp_(min=0); return x`: eager returns a view of img; a replay of the
    functionalised write returned a copy, so the caller's later write missed img.  It now runs eagerly."""
    def prep(img):
        x = img.reshape(img.shape[0], -1)
        x.clamp_(min=0)
        return x

    compiled = ember.compile(prep)
    for _ in range(3):
        img = ember.tensor([[[-1.0, 2.0], [3.0, -4.0]]])
        out = compiled(img)
        out.mul_(10)
        assert img.flatten().tolist() == [0.0, 20.0, 30.0, 0.0]
        assert out.untyped_storage().data_ptr() == img.untyped_storage().data_ptr()


@pytest.mark.parametrize("variant", ["clip_grad_norm_", "clamp"])
def test_a_per_step_lr_schedule_outside_does_not_recapture_when_the_step_clamps(variant):
    """clamp and clip_grad_norm_ call ml_dtypes' finfo, which reads attributes by computed names: counted as
    user code, it turned guards on for every attribute (the lr too), so each scheduler step recaptured."""
    ember.manual_seed(0)
    model = nn.Linear(4, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, 1, gamma=0.9)

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        if variant == "clamp":
            out = out.clamp(-5, 5)
        loss = ((out - y) ** 2).mean()
        loss.backward()
        if variant == "clip_grad_norm_":
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    compiled = ember.compile(step)
    for _ in range(10):
        compiled(ember.randn(8, 4), ember.randn(8, 1))
        sched.step()
    assert compiled.captures == 1
