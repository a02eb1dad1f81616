"""Probe round 25 (whole training and inference programs, compiled vs eager ember over many steps): the
cases that differed, or recaptured where they should replay."""

import numpy as np
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


def _gan(compiled):
    ember.manual_seed(0)
    gen = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    disc = nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    opt_g = ember.optim.Adam(gen.parameters(), 1e-3)
    opt_d = ember.optim.Adam(disc.parameters(), 1e-3)
    bce = nn.functional.binary_cross_entropy_with_logits

    def d_step(real, z):
        fake = gen(z).detach()
        opt_d.zero_grad()  # after the generator's ops: replayed before them (it commutes with them)
        loss = bce(disc(real), ember.ones(real.shape[0], 1)) + bce(disc(fake), ember.zeros(z.shape[0], 1))
        loss.backward()
        opt_d.step()
        return loss

    def g_step(z):
        opt_g.zero_grad()
        loss = bce(disc(gen(z)), ember.ones(z.shape[0], 1))
        loss.backward()
        opt_g.step()
        return loss

    d_run, g_run = (ember.compile(d_step), ember.compile(g_step)) if compiled else (d_step, g_step)
    ember.manual_seed(1)
    losses = []
    for _ in range(5):
        real, z = ember.randn(16, 2), ember.randn(16, 4)
        losses.append((d_run(real, z).item(), g_run(z).item()))
    return losses, [p.detach().clone() for p in (*gen.parameters(), *disc.parameters())], d_run


def test_zero_grad_between_the_ops_and_backward_replays_as_a_prologue():
    """A GAN's discriminator step (`fake = G(z).detach(); optD.zero_grad(); ...; backward(); step()`) ran
    eagerly every call: a zero_grad after ops was an epilogue action, and the ops after it broke the graph."""
    eager_losses, eager_params, _ = _gan(False)
    losses, params, d_run = _gan(True)
    np.testing.assert_allclose(losses, eager_losses, rtol=1e-5)
    for got, want in zip(params, eager_params):
        assert ember.allclose(got, want, rtol=1e-4, atol=1e-6)
    assert d_run.captures == 1 and not any(entry.eager for entry in d_run.cache.values())


def test_a_grad_read_after_a_moved_zero_grad_breaks_the_graph():
    def build():
        ember.manual_seed(0)
        model = nn.Linear(3, 1)
        for p in model.parameters():
            p.grad = ember.ones_like(p)
        return model, ember.optim.SGD(model.parameters(), lr=0.1)

    def make_step(model, opt):
        def step(x):
            out = model(x)
            opt.zero_grad(set_to_none=False)
            loss = out.sum() + model.weight.grad.abs().sum()  # zeros here, eagerly
            loss.backward()
            opt.step()
            return loss
        return step

    model, opt = build()
    reference, ref_opt = build()
    compiled, eager = ember.compile(make_step(model, opt)), make_step(reference, ref_opt)
    for _ in range(4):
        x = ember.randn(2, 3)
        assert ember.allclose(compiled(x), eager(x))
    assert ember.allclose(model.weight, reference.weight)
    assert any("zero_grad" in str(reason) for reason in compiled.graph_breaks)


def _classifier_run(compiled, ema_after_step):
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    ema = nn.Linear(4, 3)
    ema.load_state_dict(model.state_dict())

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        accuracy = (out.argmax(1) == y).float().mean()  # the graph's own results: commutes with backward/step
        if ema_after_step:  # reads the stepped parameters: only after the step, so the graph ends before it
            with ember.no_grad():
                for target, source in zip(ema.parameters(), model.parameters()):
                    target.mul_(0.9).add_(source, alpha=0.1)
        return loss.detach(), accuracy, ember.zeros(2) + accuracy

    run = ember.compile(step) if compiled else step
    ember.manual_seed(1)
    results = []
    for _ in range(4):
        x, y = ember.randn(8, 4), ember.randint(0, 3, (8,))
        results.append([t.clone() for t in run(x, y)])
    return results, [p.detach().clone() for p in (*model.parameters(), *ema.parameters())], run


@pytest.mark.parametrize("ema_after_step", [False, True])
def test_ops_on_graph_results_after_the_step_join_the_graph(ema_after_step):
    """An accuracy computed after opt.step() ran the whole step eagerly ("only those calls may follow the
    graph"); it reads only the graph's results, so it is recorded before the epilogue.  An EMA update after the
    step still ends the graph, and the step runs eagerly with eager's results."""
    eager, eager_params, _ = _classifier_run(False, ema_after_step)
    got, params, run = _classifier_run(True, ema_after_step)
    for want_row, got_row in zip(eager, got):
        for want, value in zip(want_row, got_row):
            assert ember.allclose(value, want)
    for want, value in zip(eager_params, params):
        assert ember.allclose(value, want)
    replayed = any(not entry.eager for entry in run.cache.values())
    assert replayed != ema_after_step


def test_a_view_of_a_parameter_read_after_the_step_is_not_moved_before_it():
    """`w = model.weight.t()` before the step is a view: read after opt.step() it sees the new weights, so the
    op reading it cannot join the graph before the epilogue (the call runs eagerly)."""
    def run(compiled):
        ember.manual_seed(0)
        model = nn.Linear(4, 3)
        opt = ember.optim.SGD(model.parameters(), lr=0.5)

        def step(x):
            opt.zero_grad()
            w = model.weight.t()
            loss = (x @ w).sum()
            loss.backward()
            opt.step()
            return loss.detach(), w * 1

        fn = ember.compile(step) if compiled else step
        ember.manual_seed(1)
        return [[t.clone() for t in fn(ember.randn(2, 4))] for _ in range(3)]

    for want_row, got_row in zip(run(False), run(True)):
        for want, got in zip(want_row, got_row):
            assert ember.allclose(got, want)


def _item_step_run(compiled, tail):
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    seen = []

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if tail == "return item":
            return loss.item()
        if tail == "item in a dict":
            return {"scaled": loss.detach() * 2, "loss": loss.item()}  # (the read last: nothing follows it)
        if tail == "rounded":
            return round(loss.item(), 3)  # not the read float itself
        if tail == "max":
            return max(loss.item(), 0.0)  # a builtin given the float (it may return it as it is)
        if tail == "or":
            return loss.item() or 1.0  # a branch on the float
        value = loss.item()  # a line after the read: Python may use the value
        seen.append(value)
        return value

    run = ember.compile(step) if compiled else step
    ember.manual_seed(1)
    results = [run(ember.randn(8, 4), ember.randint(0, 3, (8,))) for _ in range(4)]
    return results, model.weight.detach().clone(), run, seen


@pytest.mark.parametrize("tail", ["return item", "item in a dict", "rounded", "max", "or", "line after"])
def test_a_training_step_returning_loss_item_replays(tail):
    """`return loss.item()` ended every compiled training step in a read break, and a step with actions cannot
    split into chains, so it ran eagerly each call; the read is now the graph's output, read by `.item()` at
    each replay, when nothing but the return follows it (else the call still runs eagerly)."""
    want, want_weight, _, want_seen = _item_step_run(False, tail)
    got, weight, run, seen = _item_step_run(True, tail)
    np.testing.assert_allclose(got if tail != "item in a dict" else [g["loss"] for g in got],
                               want if tail != "item in a dict" else [w["loss"] for w in want], rtol=1e-6)
    assert all(type(g) is type(w) for g, w in zip(got, want))
    assert ember.allclose(weight, want_weight, rtol=1e-6, atol=1e-7)
    assert seen == want_seen
    replayed = any(not entry.eager for entry in run.cache.values())
    assert replayed == (tail in ("return item", "item in a dict"))


def test_a_parameter_relaid_out_since_the_capture_is_not_replayed_on():
    """`w.data = w.data.contiguous(memory_format=channels_last)` after the capture: eager's `w.view(4, -1)`
    raises, a replay ran the view captured on the contiguous weight (externals' layouts are guarded now)."""
    weight = nn.Parameter(ember.randn(4, 3, 2, 2))

    def fn(x):
        return x @ weight.view(4, -1).t()

    compiled = ember.compile(fn)
    x = ember.randn(2, 12)
    assert ember.allclose(compiled(x), fn(x))
    weight.data = weight.data.contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError) as eager_error:
        fn(x)
    with pytest.raises(RuntimeError, match=str(eager_error.value)[:40]):
        compiled(x)
