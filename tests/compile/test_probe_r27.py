"""Probe round 27: an adversarial probe of this round's compile features (writes through views, slot reads of
globals, zero_grad moves, ops after the epilogue) -- each case against eager ember over several calls."""

import numpy as np
import pytest

import ember
import ember.nn as nn


def _grads_per_call(fn, calls=3):
    out = []
    for _ in range(calls):
        x = ember.ones(2, 3, requires_grad=True)
        value = fn(x)
        value.backward()
        out.append((value.item(), x.grad.tolist()))
    return out


def _through_data(x):
    y = x * 2
    y.data.mul_(3)  # invisible to autograd: y keeps its grad_fn
    return y.sum()


def _through_detach(x):
    y = x * 2
    y.detach().clamp_(min=0).mul_(2)
    return (y * x).sum()


def _under_no_grad(x):
    y = x * 2
    with ember.no_grad():
        y[0] = 0
    return (y * x).sum()


@pytest.mark.parametrize("fn", [_through_data, _through_detach, _under_no_grad])
def test_writes_autograd_does_not_see_keep_the_gradient(fn):
    """A write through .data / .detach(), or under no_grad, into a result that requires grad: the replay
    routed the gradient into the (detached) written values, so calls after the capture got zero gradients."""
    assert _grads_per_call(ember.compile(fn)) == _grads_per_call(fn)


def _linear_step_run(compiled, tail):
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        if tail == "write after step":
            running = loss.detach()
            running.mul_(0.5)  # an in-place write after step(): not moved before backward()
            return running
        if tail == "input written after step":
            x.add_(1)
            return loss.detach()
        return loss.detach(), model.bias.grad  # a .grad read after backward(): this call's gradient

    run = ember.compile(step) if compiled else step
    rng = np.random.default_rng(0)
    results = []
    for _ in range(3):
        x = ember.from_numpy(rng.standard_normal((5, 4)).astype(np.float32))
        y = ember.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
        out = run(x, y)
        results.append([t.detach().clone() for t in (out if isinstance(out, tuple) else (out,))] + [x.clone()])
    return results, model.bias.detach().clone()


@pytest.mark.parametrize("tail", ["write after step", "input written after step", "grad read after step"])
def test_what_follows_the_step_and_cannot_move_before_it(tail):
    want, want_bias = _linear_step_run(False, tail)
    got, bias = _linear_step_run(True, tail)
    assert ember.allclose(bias, want_bias, rtol=1e-6, atol=1e-7)
    for want_row, got_row in zip(want, got):
        for expected, value in zip(want_row, got_row):
            assert ember.allclose(value, expected, rtol=1e-6, atol=1e-7)


_G = ember.tensor([1.0, 2.0, 3.0])


def _global_plus_one(x):
    x.mul_(2)
    return _G + 1


def test_a_global_tensor_first_passed_as_the_argument():
    """Called as f(G), the capture resolves G to the argument; a later f(other) replayed other * 2 + 1."""
    compiled = ember.compile(_global_plus_one)
    results = []
    for fn in (_global_plus_one, compiled):
        global _G
        _G = ember.tensor([1.0, 2.0, 3.0])
        fn(_G)
        results.append(fn(ember.tensor([10.0, 20.0, 30.0])).tolist())
    assert results[1] == results[0]


def test_a_nonlocal_tensor_rebound_inside_is_a_python_write():
    def make():
        state = ember.zeros(3)

        def step(x):
            nonlocal state
            state = 0.5 * state + x
            return state

        return step

    eager, compiled = make(), ember.compile(make())
    for _ in range(3):
        x = ember.tensor([1.0, 2.0, 3.0])
        assert compiled(x).tolist() == eager(x).tolist()


def _view_after_a_write_through_a_view(x):
    x[:, 0].mul_(2)
    return x[0]


def _view_after_setitem(x):
    x[0] = 5.0
    return x.view(-1)


def _view_after_a_write(x):
    x.mul_(2)
    return x[0]


@pytest.mark.parametrize("fn", [_view_after_a_write_through_a_view, _view_after_setitem, _view_after_a_write])
def test_a_returned_view_of_a_written_input_stays_an_alias(fn):
    results = []
    for run in (fn, ember.compile(fn)):
        for _ in range(3):
            x = ember.ones(2, 3)
            run(x).zero_()  # the caller writes through the returned view
        results.append(x.tolist())
    assert results[1] == results[0]


_W = ember.ones(3, 4)


def _flat_global(x):
    return _W.reshape(-1) * x


def test_a_global_rebound_to_a_strided_tensor_is_not_replayed_on():
    global _W
    compiled = ember.compile(_flat_global)
    results = []
    for fn in (_flat_global, compiled):
        _W = ember.ones(3, 4)
        fn(ember.ones(12))
        _W = ember.arange(12.0).reshape(4, 3).t()  # same shape and dtype, transposed layout
        results.append(fn(ember.ones(12)).tolist())
    assert results[1] == results[0]


# ---- round 28: a second adversarial pass over the fixes above


class _Smoothing(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = ember.zeros(3)

    def forward(self, x):
        self.state = 0.5 * self.state + x
        return self.state * 1


def test_attribute_writes_of_a_module_reached_through_a_closure_are_not_skipped():
    """A module the function reaches through a closure or a global was not watched for Python writes: a replay
    kept the first call's `state` (1.0 every call; eager: 1.0, 1.5, 1.75)."""
    module = _Smoothing()
    compiled = ember.compile(lambda x: module(x))
    reference = _Smoothing()
    for _ in range(3):
        assert compiled(ember.ones(3)).tolist() == reference(ember.ones(3)).tolist()
    assert module.state.tolist() == reference.state.tolist()


def test_a_view_made_before_a_write_and_first_read_under_no_grad_keeps_its_gradient():
    def fn(x):
        y = x * 2
        v = y[0]
        y.mul_(3)
        with ember.no_grad():
            v.sum()
        return (v * x[0]).sum()

    assert _grads_per_call(ember.compile(fn)) == _grads_per_call(fn)


_A = ember.tensor([1.0, 2.0, 3.0])
_B = _A


def _two_names(x):
    return _A + _B * x


def test_one_global_tensor_under_two_names_is_not_read_through_one_of_them():
    global _A
    compiled = ember.compile(_two_names)
    results = []
    for fn in (_two_names, compiled):
        _A = _B
        fn(ember.ones(3))
        _A = ember.tensor([10.0, 0.0, 0.0])  # _B still holds the first tensor
        results.append(fn(ember.ones(3)).tolist())
    assert results[1] == results[0]


def test_a_data_write_into_a_result_its_backward_saved():
    """exp's backward reads its saved result, which a .data write changes in eager; a replay's graft would pass
    the op's own result, so such a call runs eagerly."""
    def fn(x):
        y = x.exp()
        y.data.mul_(0.5)
        return y.sum()

    def grads(run):
        out = []
        for _ in range(3):
            x = ember.zeros(3, requires_grad=True)
            run(x).backward()
            out.append(x.grad.tolist())
        return out

    assert grads(ember.compile(fn)) == grads(fn)


def test_a_closure_module_writing_an_attribute_each_call_is_not_traced_each_call():
    """Round 29: such calls run eagerly (a replay would not write the attribute), but the closure's module was
    guarded by its attributes, which the call itself changes, so every call traced again up to the limit."""
    module = _Smoothing()
    compiled = ember.compile(lambda x: module(x))
    reference = _Smoothing()
    for _ in range(6):
        assert compiled(ember.ones(3)).tolist() == reference(ember.ones(3)).tolist()
    assert compiled.captures <= 2
