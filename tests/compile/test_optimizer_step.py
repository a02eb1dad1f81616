"""ember.compile(optimizer.step): grads and state are graph inputs, the step is one kernel per parameter,
and the parameters follow eager's trajectory."""

import numpy as np
import pytest

import ember
import ember.nn as nn

pytestmark = pytest.mark.filterwarnings("error:ember.compile:RuntimeWarning")

OPTIMIZERS = [
    (ember.optim.AdamW, {"lr": 0.1}),
    (ember.optim.Adam, {"lr": 0.05, "amsgrad": True, "weight_decay": 0.01}),
    (ember.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    # the step-derived scalars of these stay tensor ops under compile (no per-step read into Python)
    (ember.optim.Adamax, {"lr": 0.05}),
    (ember.optim.NAdam, {"lr": 0.05}),
    (ember.optim.RAdam, {"lr": 0.05}),  # crosses rho > 5 (rectification on) at step 6
    (ember.optim.Adagrad, {"lr": 0.1, "lr_decay": 0.01}),
    (ember.optim.Adafactor, {"lr": 0.05, "weight_decay": 0.01}),  # norms and clip as tensors too
    (ember.optim.ASGD, {"lr": 0.05, "t0": 3.0}),  # averaging (mu != 1) starts at step 5
]


def _train(optimizer_class, options, compiled, steps=8):
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    optimizer = optimizer_class(model.parameters(), **options)
    step = ember.compile(optimizer.step) if compiled else optimizer.step
    x = ember.randn(16, 4)
    for i in range(steps):
        optimizer.zero_grad()  # new grad tensors every step: a replay must read these, not the captured ones
        model(x + i).pow(2).mean().backward()
        step()
    return [p.detach().numpy().copy() for p in model.parameters()], step


@pytest.mark.parametrize("optimizer_class, options", OPTIMIZERS, ids=lambda v: getattr(v, "__name__", ""))
def test_compiled_step_follows_eager(optimizer_class, options):
    expected, _ = _train(optimizer_class, options, compiled=False)
    actual, step = _train(optimizer_class, options, compiled=True)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)
    assert step.graph_breaks == []
    # the first step creates the state, every later one replays the second graph (Adagrad's state exists
    # from construction, as in torch: one graph)
    assert step.captures == (1 if optimizer_class is ember.optim.Adagrad else 2)


def test_one_kernel_per_parameter():
    model = nn.Linear(4, 3, bias=False)
    model.weight.grad = ember.randn(3, 4)
    optimizer = ember.optim.AdamW(model.parameters(), lr=1e-3)
    step = ember.compile(optimizer.step)
    for _ in range(3):
        step()
    graph = step.graphs[-1]
    fused = [n for n in graph.nodes if n.kind == "fused" and n.results[0].shape != ()]
    # weight decay, both moments, the denominator and the update: one kernel (the chains merge where they meet);
    # the step counter's increment, written back, is a 0-d kernel of its own
    assert len(fused) == 1, graph.code


def test_changed_lr_recompiles_naming_it():
    model = nn.Linear(2, 2)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    step = ember.compile(optimizer.step)
    for lr in (0.1, 0.1, 0.05):
        optimizer.param_groups[0]["lr"] = lr
        model(ember.ones(1, 2)).sum().backward()
        before = model.weight.detach().clone()
        step()
        np.testing.assert_allclose((before - model.weight.detach()).numpy(), lr * model.weight.grad.numpy(), rtol=1e-6)
    assert "SGD hyperparameters" in step.last_reason



@pytest.mark.parametrize("tensor_lr", [False, True])
def test_step_wrapped_by_an_lr_scheduler_sees_the_lr(tensor_lr):
    """An lr scheduler replaces `optimizer.step` with a plain function (torch's step-call tracking), so
    compiling it after the scheduler is made compiles that wrapper: it must still find the optimizer's
    inputs and hyperparameter guards.  A float lr that the schedule changes recompiles (it replayed the
    first lr before); a tensor lr is read at its current value with no recompile."""
    def train(compiled):
        ember.manual_seed(0)
        model = nn.Linear(4, 2)
        optimizer = ember.optim.Adam(model.parameters(), lr=ember.tensor(0.1) if tensor_lr else 0.1)
        scheduler = ember.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)
        step = ember.compile(optimizer.step) if compiled else optimizer.step
        for _ in range(4):
            optimizer.zero_grad()
            model(ember.ones(3, 4)).pow(2).sum().backward()
            step()
            scheduler.step()
        return [p.detach().numpy().copy() for p in model.parameters()], step

    expected, _ = train(False)
    actual, step = train(True)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)
    assert step.captures == (2 if tensor_lr else 4)  # the state-creating step, then one per float lr

def test_state_loaded_after_capture_is_read():
    """Replacing the optimizer's state (load_state_dict) replays with the new tensors: they are inputs."""
    actual, _ = _train(ember.optim.Adam, {"lr": 0.05}, compiled=False, steps=3)
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    optimizer = ember.optim.Adam(model.parameters(), lr=0.05)
    step = ember.compile(optimizer.step)
    x = ember.randn(16, 4)
    saved = None
    for i in range(3):
        optimizer.zero_grad()
        model(x + i).pow(2).mean().backward()
        if i == 2:
            optimizer.load_state_dict(saved)
        step()
        if i == 1:
            saved = optimizer.state_dict()
    for a, e in zip([p.detach().numpy() for p in model.parameters()], actual):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)


def test_two_chains_meeting_merge_into_one_kernel():
    def f(a, b):
        return (a * 2).exp() + (b * 3).sin()

    compiled = ember.compile(f)
    a, b = ember.randn(8, 16), ember.randn(8, 16)
    out = compiled(a, b)
    (graph,) = compiled.graphs
    assert len([n for n in graph.nodes if n.kind == "fused"]) == 1, graph.code
    np.testing.assert_allclose(out.numpy(), f(a, b).numpy(), rtol=1e-6)


def _adam_step():
    model = nn.Linear(4, 3)
    for p in model.parameters():
        p.grad = ember.randn(*p.shape)
    optimizer = ember.optim.Adam(model.parameters(), lr=1e-3)
    step = ember.compile(optimizer.step)
    for _ in range(3):
        step()
    return model, step


def test_bias_corrections_are_computed_in_the_parameter_kernel():
    """Adam's per-parameter 0-d chains (beta ** step, 1 - that, its root, lr / that) join the update kernel:
    only the step counters' increments stay separate (they are written back): 0-d kernels of their own."""
    _, step = _adam_step()
    graph = step.graphs[-1]
    calls = [n.op.name for n in graph.nodes if n.kind == "call"]
    assert calls == [], graph.code
    # the two parameters' kernels are one C function, and so are their step increments (0-d in-place
    # kernels): one horizontal node runs each pair (fuse_horizontally)
    steps, updates = [n for n in graph.nodes if n.kind == "fused"]
    assert steps.op.name.endswith("_x2") and [v.shape for v in steps.results] == [(), ()]
    assert updates.op.name.endswith("_x2") and len(updates.results) == 2 * 3  # param, exp_avg, exp_avg_sq


def test_parameter_and_moments_are_updated_in_place_by_the_kernel(monkeypatch):
    """The kernel writes the new parameter and moments into their own arrays; the write-back at the end of the
    graph then has nothing to copy (it still bumps the version counter)."""
    from ember import _tensor

    model, step = _adam_step()
    kernels = [m.group.kernel for n in step.graphs[-1].nodes if n.kind == "fused" for m in n.members or [n]
               if m.results[0].shape != ()]
    assert [len(k.aliases) for k in kernels] == [3, 3]  # exp_avg, exp_avg_sq and the parameter, per parameter
    weight = model.weight
    address, version, before = weight._data.__array_interface__["data"][0], weight._version, weight.detach().clone()
    copies = []
    real = _tensor.write_array
    monkeypatch.setattr(_tensor, "write_array", lambda target, values: copies.append(target.shape) or
                        real(target, values))
    step()
    assert weight._data.__array_interface__["data"][0] == address
    assert weight._version == version + 1
    assert not np.array_equal(weight.detach().numpy(), before.numpy())
    assert copies == [(), ()], copies  # only the two 0-d step counters are copied back


@pytest.mark.parametrize("printer", [None, "numpy"])
def test_adam_trajectory_with_either_printer(printer):
    """The NumPy printer computes whole-array temporaries, so it never writes an output over an input."""
    def train(compiled):
        ember.manual_seed(0)
        model = nn.Linear(6, 5)
        optimizer = ember.optim.Adam(model.parameters(), lr=0.1)
        step = ember.compile(optimizer.step, options={"printer": printer} if printer else None) if compiled \
            else optimizer.step
        for i in range(5):
            optimizer.zero_grad()
            model(ember.ones(2, 6) * i).pow(2).sum().backward()
            step()
        return model.weight.detach().numpy().copy()

    np.testing.assert_allclose(train(True), train(False), rtol=1e-5, atol=1e-6)


def test_target_read_outside_the_kernel_is_not_overwritten_early():
    def f(p, g):
        total = p.sum()  # reads p's old value outside the kernel
        p.add_(g * 2)
        return total

    compiled = ember.compile(f)
    compiled(ember.randn(8, 16), ember.randn(8, 16))  # the capture
    p, g = ember.randn(8, 16), ember.randn(8, 16)
    expected_total, expected_p = p.sum().item(), (p + g * 2).numpy()
    total = compiled(p, g)
    (graph,) = compiled.graphs
    assert all(not n.group.kernel.aliases for n in graph.nodes if n.kind == "fused")
    np.testing.assert_allclose(total.item(), expected_total, rtol=1e-6)
    np.testing.assert_allclose(p.numpy(), expected_p, rtol=1e-6)


def test_overlapping_input_memory_gets_a_new_output_array():
    """p and g share memory (g[i] is p[i - 1]): writing p while reading g would read new values."""
    def f(p, g):
        p.add_(g * 2)

    def run(fn):
        buffer = np.arange(65, dtype=np.float32)
        fn(ember.from_numpy(buffer[1:65]), ember.from_numpy(buffer[0:64]))
        return buffer

    compiled = ember.compile(f)
    run(compiled)  # the capture (runs eagerly)
    replayed = run(compiled)
    assert [n.group.kernel.aliases for n in compiled.graphs[0].nodes if n.kind == "fused"] == [{0: 1}]
    np.testing.assert_array_equal(replayed, run(f))


def test_single_op_update_gets_an_in_place_kernel():
    """SGD's `p.add_(g, alpha=-lr)` is one op: it still gets a kernel, which writes into p (no write-back)."""
    model = nn.Linear(4, 3)
    for p in model.parameters():
        p.grad = ember.randn(*p.shape)
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    step = ember.compile(optimizer.step)
    step()
    expected = [(p - 0.1 * p.grad).detach().numpy() for p in model.parameters()]
    addresses = [p._data.__array_interface__["data"][0] for p in model.parameters()]
    step()
    fused = [m for n in step.graphs[-1].nodes if n.kind == "fused" for m in n.members or [n]]
    assert [n.group.kernel.aliases for n in fused] == [{0: 0}, {0: 0}], step.graphs[-1].code
    assert [p._data.__array_interface__["data"][0] for p in model.parameters()] == addresses
    for p, e in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.detach().numpy(), e, rtol=1e-6)


@pytest.mark.parametrize("printer", [None, "numpy"])
def test_float64_scalar_chain_inside_a_float32_kernel(printer):
    """A 0-d float64 chain (a bias correction computed as eager's Python floats would) joins the float32
    kernel that reads it, keeps its precision there, and is cast once where it meets the tensor."""
    def f(step, x, out):
        scale = (-0.01 / (1 - 0.999 ** step.double())).to(x.dtype)
        out.copy_(x * scale + 1)

    step, x = ember.tensor(3.0), ember.randn(8, 16)
    compiled = ember.compile(f, options={"printer": printer} if printer else None)
    with ember.no_grad():
        for _ in range(2):
            out = ember.empty(8, 16)
            compiled(step, x, out)
    (graph,) = compiled.graphs
    fused = [n for n in graph.nodes if n.kind == "fused"]
    assert len(fused) == 1 and [n for n in graph.nodes if n.kind == "call"] == [], graph.code
    if printer is None:
        assert "double" in fused[0].group.kernel.types.values()
    scale = np.float32(-0.01 / (1 - 0.999 ** 3.0))  # the float64 value rounded once
    # (the C compiler may contract x * scale + 1 into one fma: within an ulp, not always equal)
    np.testing.assert_allclose(out.numpy(), x.numpy() * scale + np.float32(1), rtol=1.3e-6, atol=1e-7)


def test_a_function_calling_optimizer_step_runs_it_eagerly():
    """torch's tutorial pattern `@compile def fn(): opt.step(); sched.step()`: only `compile(opt.step)` passes
    the grads, state and lr in; a function calling step() froze the first call's grad (SGD momentum buffer 1.0
    where eager has 5.61) and the lr.  It is a graph break now, so it matches eager."""
    results = []
    for compiled in (True, False):
        p = ember.nn.Parameter(ember.ones(3))
        opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
        sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

        def fn():
            opt.step()
            sched.step()

        step = ember.compile(fn) if compiled else fn
        for i in range(3):
            p.grad = ember.full((3,), float(i + 1))
            step()
        results.append((p.detach().numpy().copy(), opt.state[p]["momentum_buffer"].numpy().copy(),
                        opt.param_groups[0]["lr"]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]


@pytest.mark.parametrize("name", ["Adamax", "Adagrad"])
def test_float64_step_sizes_are_float64_when_compiled(name):
    params = []
    for compiled in (True, False):
        ember.manual_seed(0)
        p = ember.nn.Parameter(ember.ones(4, dtype=ember.float64))
        opt = getattr(ember.optim, name)([p], lr=0.05)
        step = ember.compile(opt.step) if compiled else opt.step
        for i in range(5):
            p.grad = ember.full((4,), 0.1 * (i + 1), dtype=ember.float64)
            step()
        params.append(p.detach().numpy().copy())
    np.testing.assert_allclose(params[0], params[1], rtol=1e-15, atol=1e-15)
