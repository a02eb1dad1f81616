"""A whole training step compiled (torch.compile's tutorial shape): optimizer.zero_grad() before the ops and
loss.backward(), clip_grad_norm_ and optimizer.step() after them are replayed around one graph
(tracer.Tracer.take_action), so the forward and loss compile and each step equals eager's."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn


def _model():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3)).double()
    return model, ember.optim.AdamW(model.parameters(), lr=1e-2)


def _batches(sizes=(5, 5, 5, 5)):
    rng = np.random.default_rng(0)
    return [(ember.tensor(rng.standard_normal((n, 6))), ember.tensor(rng.integers(0, 3, n))) for n in sizes]


STEPS = {
    "tutorial": lambda model, opt, x, y: (opt.zero_grad(True), _loss(model, x, y))[1],
    "module zero_grad": lambda model, opt, x, y: (model.zero_grad(), _loss(model, x, y))[1],
    "clip": lambda model, opt, x, y: (opt.zero_grad(), _loss(model, x, y, clip=True))[1],
    "accumulate": lambda model, opt, x, y: _loss(model, x, y, step=False),
}


def _loss(model, x, y, clip=False, step=True):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    if clip:
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    if step:
        model._optimizer.step()
    return loss


def _run(name, compiled, sizes=(5, 5, 5, 5)):
    model, opt = _model()
    model._optimizer = opt
    body = STEPS[name]

    def train_step(x, y):
        return body(model, opt, x, y)

    step = ember.compile(train_step) if compiled else train_step
    losses = [step(x, y).item() for x, y in _batches(sizes)]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
    return losses, [p.detach().numpy().copy() for p in model.parameters()], grads, step


@pytest.mark.parametrize("name", list(STEPS))
def test_compiled_step_equals_eager_and_keeps_one_graph(name):
    eager, compiled = _run(name, False), _run(name, True)
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-12)
    for got, want in zip(compiled[1] + compiled[2], eager[1] + eager[2]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    step = compiled[3]
    # (two captures at most: the first one learns that the code never reads the optimizer's hyperparameters)
    assert step.captures <= 2 and not step.graph_breaks
    assert all(not entry.eager and entry.actions for entry in step.cache.values())


def test_batch_sizes_share_a_size_generic_graph():
    eager, compiled = _run("tutorial", False, (4, 6, 8, 5, 7)), _run("tutorial", True, (4, 6, 8, 5, 7))
    np.testing.assert_allclose(compiled[0], eager[0], rtol=1e-12)
    for got, want in zip(compiled[1], eager[1]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert compiled[3].generic and not compiled[3].graph_breaks


@pytest.mark.parametrize("tail", ["op on a parameter after step", "norm returned", "item, then a line"])
def test_what_follows_the_epilogue_breaks_and_stays_correct(tail):
    """An op after backward()/step() on what they change (a parameter), or a use of clip_grad_norm_'s result,
    ends the graph: eager results.  (An op on the graph's own results commutes with them: test_probe_r25.)"""
    results = []
    for compiled in (False, True):
        model, opt = _model()

        def train_step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if tail == "op on a parameter after step":
                return loss * 2 + model[0].weight.sum()
            if tail == "norm returned":
                return norm
            value = loss.item()  # (`return loss.item()` alone replays: test_probe_r25)
            return value

        step = ember.compile(train_step) if compiled else train_step
        results.append([float(step(x, y)) for x, y in _batches()])
        if compiled:
            assert step.graph_breaks
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)


def test_explain_and_fullgraph_still_break_at_backward_as_torch():
    model, opt = _model()

    def train_step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x, y = _batches()[0]
    assert ember.compiler.explain(train_step)(x, y).graph_break_count > 0
    with pytest.raises(ember.compiler.Unsupported):
        ember.compile(train_step, fullgraph=True)(x, y)


def test_module_zero_grad_inside_is_replayed():
    """Module.zero_grad() wrote `_grad` directly, which a replay skipped: gradients piled up across calls."""
    grads = []
    for compiled in (False, True):
        ember.manual_seed(0)
        layer = nn.Linear(3, 2)

        def forward(x):
            layer.zero_grad()
            return layer(x).sum()

        fn = ember.compile(forward) if compiled else forward
        for _ in range(3):
            fn(ember.ones(1, 3)).backward()
        grads.append(layer.weight.grad.numpy().copy())
    np.testing.assert_array_equal(grads[1], grads[0])


def test_per_step_lr_schedule_replays_one_graph():
    """Only the replayed step() reads the lr: a schedule stepped every call does not recompile, and the
    trajectory is eager's."""
    results = []
    for compiled in (False, True):
        model, opt = _model()
        schedule = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=12)

        def train_step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        step = ember.compile(train_step) if compiled else train_step
        losses = []
        for x, y in _batches((5,) * 10):
            losses.append(step(x, y).item())
            schedule.step()
        results.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
        if compiled:  # (the first capture learns the code never reads the lr: keyed without it from then on)
            assert step.captures <= 2 and step.recompiles <= 1
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    for got, want in zip(results[1][1], results[0][1]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_a_function_reading_the_lr_still_sees_each_value():
    model, opt = _model()

    def scaled(x):
        return x * opt.param_groups[0]["lr"]

    compiled = ember.compile(scaled)
    x = ember.ones(2, dtype=ember.float64)
    for lr in (0.1, 0.2, 0.3):
        opt.param_groups[0]["lr"] = lr
        assert compiled(x).tolist() == [lr, lr]


@pytest.mark.parametrize("unscale_and_clip", [False, True])
def test_grad_scaler_step_and_update_are_replayed(unscale_and_clip):
    """scaler.scale(loss) is in the graph; scaler.step(opt) and scaler.update() are epilogue actions: the
    scale grows and the parameters move as eager's.  So too torch's AMP recipe with clipping, whose
    scaler.unscale_(opt) before clip_grad_norm_ is an action as well (it ran every call eagerly before)."""
    results = []
    for compiled in (False, True):
        model, opt = _model()
        model.float()
        scaler = ember.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2)

        def train_step(x, y):
            opt.zero_grad()
            with ember.autocast("cpu", dtype=ember.bfloat16):
                loss = nn.functional.cross_entropy(model(x).float(), y)
            scaler.scale(loss).backward()
            if unscale_and_clip:
                scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(opt)
            scaler.update()
            return loss

        step = ember.compile(train_step) if compiled else train_step
        losses = [step(x.float(), y).item() for x, y in _batches((5,) * 6)]
        results.append((losses, float(scaler.get_scale()), [p.detach().numpy().copy() for p in model.parameters()]))
        if compiled:  # the first call makes the scaler's lazy state (eager), the second is the capture
            assert step.captures == 2 and any(not entry.eager for entry in step.cache.values())
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    assert results[1][1] == results[0][1] > 2.0 ** 10
    for got, want in zip(results[1][2], results[0][2]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", ["OneCycleLR", "SequentialLR"])
def test_scheduler_step_inside_is_replayed(make):
    """scheduler.step() after optimizer.step() inside the compiled step is an epilogue action: one graph, and
    the lrs and parameters follow eager's."""
    results = []
    for compiled in (False, True):
        model, opt = _model()
        if make == "OneCycleLR":
            schedule = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=12)
        else:
            warm = ember.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
            decay = ember.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
            schedule = ember.optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[3])

        def train_step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            schedule.step()
            return loss

        step = ember.compile(train_step) if compiled else train_step
        losses = [step(x, y).item() for x, y in _batches((5,) * 8)]
        results.append((losses, schedule.get_last_lr(), [p.detach().numpy().copy() for p in model.parameters()]))
        if compiled:
            assert step.captures <= 2 and step.recompiles <= 1 and not step.graph_breaks
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    assert results[1][1] == results[0][1]
    for got, want in zip(results[1][2], results[0][2]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_reading_the_lr_and_stepping_the_schedule_inside_runs_eagerly():
    """A graph that baked the lr its own scheduler step then changes could be replayed with a stale lr."""
    results = []
    for compiled in (False, True):
        model, opt = _model()
        schedule = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def train_step(x, y):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y) * opt.param_groups[0]["lr"]
            loss.backward()
            opt.step()
            schedule.step()
            return loss

        step = ember.compile(train_step) if compiled else train_step
        results.append([step(x, y).item() for x, y in _batches((5,) * 5)])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
