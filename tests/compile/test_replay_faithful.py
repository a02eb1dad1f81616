"""A replay must do what the eager call does: each case here once replayed stale values, lost a gradient, or
crashed (found by compiling realistic programs and comparing every call with eager)."""

import functools
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


def _calls(fn, compiled, make_inputs, n=3):
    for i in range(n):
        inputs = make_inputs(i)
        np.testing.assert_allclose(compiled(*inputs).detach().numpy(), fn(*inputs).detach().numpy(),
                                   rtol=1e-6, atol=1e-6)


def test_detached_alias_of_an_input_reads_this_call():
    """x.detach() and x.data share x's array: they were new externals, frozen to the first call's tensor."""
    def fn(x, w):
        return ((x * w - x.detach()) ** 2).sum() + x.data.sum()

    compiled = ember.compile(fn)
    w = ember.ones(3, requires_grad=True)
    _calls(fn, compiled, lambda i: (ember.full((3,), float(i + 1)), w))
    assert compiled.captures == 1 and "detach" in compiled.graphs[0].code


def test_parameter_detach_follows_in_place_updates():
    linear = nn.Linear(2, 2)
    compiled = ember.compile(lambda x: x @ linear.weight.detach().t() + linear(x))
    x = ember.ones(1, 2)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x).detach().numpy(),
                                   (x @ linear.weight.detach().t() + linear(x)).detach().numpy(), rtol=1e-6)
        with ember.no_grad():
            linear.weight.mul_(2)


@pytest.mark.parametrize("factory", ["rand_like", "randn_generator", "multinomial"])
def test_untraced_random_draws_are_not_frozen(factory):
    """A draw outside a recorded op would be a constant of the graph (it is a graph break, also when a recorded
    random op such as dropout ran in the same call, which used to hide it).  Random factories (rand_like, randn
    with a generator=) are recipe nodes, and multinomial a sampling op: each replay draws anew, in eager's
    order."""
    generator = ember.Generator().manual_seed(1)

    def fn(x):
        noise = {"rand_like": lambda: ember.rand_like(x),
                 "randn_generator": lambda: ember.randn(x.shape, generator=generator),
                 "multinomial": lambda: ember.multinomial(x.abs() + 0.1, 1).float()}[factory]()
        return F.dropout(x, 0.5) * 0 + noise

    compiled = ember.compile(fn)
    x = ember.ones(2, 3)
    draws = [compiled(x).numpy().copy() for _ in range(4)]
    assert any(not np.array_equal(draws[0], d) for d in draws[1:])
    assert not compiled.graph_breaks
    for seed in range(3):
        ember.manual_seed(seed)
        generator.manual_seed(seed)
        out = compiled(x)
        ember.manual_seed(seed)
        generator.manual_seed(seed)
        np.testing.assert_array_equal(out.numpy(), fn(x).numpy())


def test_custom_function_keeps_its_backward():
    class Square(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    compiled = ember.compile(lambda x: Square.apply(x).sum())
    for i in range(3):
        x = ember.full((3,), float(i + 1), requires_grad=True)
        compiled(x).backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 2.0 * (i + 1), np.float32))
    # without gradients the forward's ops replay as usual
    with ember.no_grad():
        assert Square.apply(ember.ones(2)).sum().item() == ember.compile(lambda x: Square.apply(x).sum())(
            ember.ones(2)).item()


def test_no_grad_write_to_a_parameter_keeps_its_gradient():
    """Weight clipping inside the function: later uses of the parameter still pass gradients to it."""
    weight = nn.Parameter(ember.tensor([3.0, -0.5, -2.0]))
    reference = nn.Parameter(weight.detach().clone())

    def make(w):
        def fn(x):
            with ember.no_grad():
                w.clamp_(-1, 1)
            return (x * w * w).sum()
        return fn

    compiled, eager = ember.compile(make(weight)), make(reference)
    for i in range(3):
        x = ember.full((3,), float(i + 1))
        compiled(x).backward()
        eager(x).backward()
        np.testing.assert_array_equal(weight.detach().numpy(), reference.detach().numpy())
        np.testing.assert_array_equal(weight.grad.numpy(), reference.grad.numpy())
        with ember.no_grad():
            weight.mul_(3)
            reference.mul_(3)


def test_embedding_max_norm_weight_gets_its_gradient():
    ember.manual_seed(0)
    embedding = nn.Embedding(10, 4, max_norm=1.0)
    compiled = ember.compile(embedding)
    for i in range(3):
        ids = ember.tensor([[i, i + 1, 3]])
        embedding.weight.grad = None
        compiled(ids).sum().backward()
        grad = embedding.weight.grad.numpy().copy()
        embedding.weight.grad = None
        embedding(ids).sum().backward()
        np.testing.assert_array_equal(grad, embedding.weight.grad.numpy())


@pytest.mark.parametrize("op", ["unique", "nonzero", "bincount"])
def test_data_dependent_shapes_break_the_graph(op):
    """unique/nonzero/bincount results have a size that depends on the values: replaying a graph built for
    one size gave broadcast errors, then a silently wrong sum."""
    def fn(x):
        if op == "unique":
            y = ember.unique(x).float()
        elif op == "nonzero":
            y = ember.nonzero(x > 2).float()
        else:
            y = ember.bincount(x.long()).float()
        return (y * 2 + 1).sum()

    compiled = ember.compile(fn)
    for values in ([1, 2, 2, 3], [4, 5, 5, 5], [1, 2, 3, 4], [7, 7, 7, 7]):
        x = ember.tensor(values, dtype=ember.float32)
        assert compiled(x).item() == fn(x).item()
    assert any("depends on the input's values" in str(b) for b in compiled.graph_breaks)


def test_modules_reached_through_globals_and_closures_are_guarded():
    """net.eval() / a new hook on a model the compiled function only names (not an argument): the train-mode
    graph kept replaying (batch statistics, running stats updated)."""
    ember.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))

    def fn(x):
        return net(x)

    compiled = ember.compile(fn)
    x = ember.randn(8, 4)
    for mode in ("train", "train", "eval", "eval"):
        getattr(net, mode)()
        stats = net[1].running_mean.numpy().copy()
        out = compiled(x).detach().numpy()
        compiled_stats = net[1].running_mean.numpy().copy()
        net[1].running_mean.copy_(ember.from_numpy(stats))
        np.testing.assert_allclose(out, net(x).detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(compiled_stats, net[1].running_mean.numpy(), rtol=1e-6, atol=1e-7)
    handle = net[0].register_forward_hook(lambda module, inputs, output: output * 2)
    np.testing.assert_allclose(compiled(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    handle.remove()
    np.testing.assert_allclose(compiled(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_hooks_added_to_a_compiled_module_recapture():
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    compiled(x)
    model[1].register_forward_hook(lambda module, inputs, output: output * 2)
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    model[0].register_forward_pre_hook(lambda module, inputs: (inputs[0] + 1,))
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert "module hooks" in compiled._compiled.last_reason


def test_partial_and_callable_objects_compile_and_recompile():
    def fn(x, scale, b):
        return x * scale + b

    class Callable:
        def __call__(self, x, scale):
            return x * scale

    for target in (functools.partial(fn, b=3.0), Callable()):
        compiled = ember.compile(target)
        x = ember.ones(2)
        for scale in (1.0, 2.0):
            np.testing.assert_array_equal(compiled(x, scale).numpy(), target(x, scale).numpy())
        assert compiled.captures == 2


def test_an_input_written_and_returned_is_the_input():
    """`x.add_(1); return x` returns x itself in eager; the replay returned a new tensor with its values."""
    compiled = ember.compile(lambda x: x.add_(1))
    for _ in range(3):
        x = ember.zeros(2)
        result = compiled(x)
        assert result is x
        result.mul_(10)
        np.testing.assert_array_equal(x.numpy(), [10.0, 10.0])

    def copies(x):
        y = x + 1
        x.copy_(y)
        return y

    compiled = ember.compile(copies)
    for _ in range(3):
        x = ember.zeros(2)
        assert compiled(x) is not x


@pytest.mark.parametrize("fn", [
    lambda x: (x * 2).sum(-1) + x,  # a (4,) sum broadcasts along the last dim, not per row
    lambda x: x.exp() + x.exp().sum(-1),
    lambda x: F.softmax(x, -1) * x.mean(-1),
    lambda x: x * 2 - (x * 2).amax(-1),
    lambda x: x.sum(-1) * x.sum(-1, keepdim=True),
], ids=["sum_plus", "exp_sum", "softmax_mean", "amax", "row_times_column"])
def test_a_reduction_without_keepdim_is_not_read_per_row(fn):
    """With N == K the shapes agree, but `x.sum(-1)` (shape L) indexes the last dim: merging its group into a
    consumer's read it as a per-row value (forward and gradient wrong)."""
    compiled = ember.compile(fn)
    for _ in range(2):
        x = ember.randn(4, 4, requires_grad=True)
        weight = ember.arange(16.0).reshape(4, 4)
        out, expected = compiled(x), fn(x)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
        grad, = ember.autograd.grad((out * weight).sum(), [x])
        expected_grad, = ember.autograd.grad((expected * weight).sum(), [x])
        np.testing.assert_allclose(grad.numpy(), expected_grad.numpy(), rtol=1e-5, atol=1e-4)


def test_abs_and_amax_gradients_at_nan_match_eager():
    """abs' generated derivative gave nan at a nan input (eager and torch: sgn(nan) = 0); amax's gave 0 over a
    row whose max is nan (eager and torch: nan)."""
    for fn in (lambda x: (x * 2).abs() + x, lambda x: (x * 2).amax(-1) + 1):
        compiled = ember.compile(fn)
        for _ in range(2):
            x = ember.tensor([[float("nan"), -1.0, 2.0], [1.0, 3.0, 3.0]], requires_grad=True)
            grad, = ember.autograd.grad(compiled(x).sum(), [x])
            expected, = ember.autograd.grad(fn(x).sum(), [x])
            np.testing.assert_array_equal(grad.numpy(), expected.numpy())


def test_manual_seed_inside_runs_eagerly():
    def fn(x):
        ember.manual_seed(5)
        return F.dropout(x, 0.5, training=True)

    compiled = ember.compile(fn)
    x = ember.ones(32)
    masks = [compiled(x).numpy().copy() for _ in range(3)]
    for mask in masks:
        np.testing.assert_array_equal(mask, fn(x).numpy())


def test_grads_read_inside_are_this_calls():
    """A hand-written SGD step reads p.grad: the gradient tensor is new after each backward (set_to_none), and
    the graph held the first call's.  `if p.grad is not None` is guarded too."""
    ember.manual_seed(0)
    model, reference = nn.Linear(3, 2), nn.Linear(3, 2)
    reference.load_state_dict(model.state_dict())

    def make_step(net):
        def step():
            with ember.no_grad():
                for p in net.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-0.1)
        return step

    compiled, eager = ember.compile(make_step(model)), make_step(reference)
    compiled()  # no gradients yet: a graph that does nothing
    eager()
    for _ in range(4):
        x = ember.randn(5, 3)
        for net, step in ((model, compiled), (reference, eager)):
            net.zero_grad(set_to_none=True)
            net(x).pow(2).sum().backward()
            step()
        np.testing.assert_allclose(model.weight.detach().numpy(), reference.weight.detach().numpy(), rtol=1e-6)


def test_grad_mode_and_autocast_set_inside_replay_as_eager():
    def turns_grad_off(x):
        ember.set_grad_enabled(False)
        return x * 2

    compiled = ember.compile(turns_grad_off)
    try:
        for _ in range(3):
            ember.set_grad_enabled(True)
            compiled(ember.ones(2))
            assert not ember.is_grad_enabled()
    finally:
        ember.set_grad_enabled(True)

    linear = nn.Linear(4, 4)

    def full_precision(x):
        with ember.autocast("cpu", enabled=False):
            return linear(x)

    compiled = ember.compile(full_precision)
    x = ember.randn(2, 4)
    for _ in range(3):
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out, expected = compiled(x), full_precision(x)
        assert out.dtype == expected.dtype == ember.float32
        np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())


def test_host_decisions_break_the_graph():
    """repeat_interleave with tensor repeats (its size read on the host) and Python's global random module
    gave the first call's result on every replay."""
    import random

    compiled = ember.compile(lambda x, r: ember.repeat_interleave(x, r) * 2)
    x = ember.tensor([1.0, 2.0, 3.0])
    for repeats in ([1, 1, 1], [2, 0, 1], [0, 0, 4]):
        r = ember.tensor(repeats)
        np.testing.assert_array_equal(compiled(x, r).numpy(), (ember.repeat_interleave(x, r) * 2).numpy())

    def coin(x):
        return x + 1 if random.random() < 0.5 else x - 1

    compiled = ember.compile(coin)
    random.seed(0)
    got = [compiled(ember.zeros(1)).item() for _ in range(8)]
    random.seed(0)
    assert got == [coin(ember.zeros(1)).item() for _ in range(8)]


def test_a_user_generator_is_rewound_when_a_chain_misses():
    generator = ember.Generator().manual_seed(0)
    p = ember.full((6,), 0.5)

    def fn(x):
        mask = ember.bernoulli(p, generator=generator)
        if x.sum() > 0:
            return x + mask
        return x - mask

    compiled = ember.compile(fn)
    for i in range(4):
        x = ember.ones(6) * (1 if i % 2 == 0 else -1)
        generator.manual_seed(123)
        got, after = compiled(x).numpy(), ember.rand(1, generator=generator).item()
        generator.manual_seed(123)
        np.testing.assert_array_equal(got, fn(x).numpy())
        assert after == ember.rand(1, generator=generator).item()


def test_explain_does_not_record_disabled_functions():
    @ember.compiler.disable
    def helper(y):
        return (y * 2).exp().cos()

    def fn(x):
        return helper(x.sin()).tanh() + 1

    explained = ember.compiler.explain(fn)(ember.ones(3))
    assert explained.graph_count == 2 and explained.graph_break_count == 1
    assert [len(ops) for ops in explained.ops_per_graph] == [1, 2]


def test_data_rebinding_inside_runs_eagerly():
    """`p.data = p.data * 0.5` (nn.utils.vector_to_parameters does the same) swaps the array outside the ops:
    only the capturing call did it."""
    ember.manual_seed(0)
    model, reference = nn.Linear(2, 2), nn.Linear(2, 2)
    reference.load_state_dict(model.state_dict())

    def decay(net):
        vector = nn.utils.parameters_to_vector(net.parameters())
        nn.utils.vector_to_parameters(vector * 0.5, net.parameters())
        return vector.sum()

    compiled = ember.compile(decay)
    for _ in range(4):
        np.testing.assert_allclose(compiled(model).item(), decay(reference).item(), rtol=1e-6)
        np.testing.assert_array_equal(model.weight.detach().numpy(), reference.weight.detach().numpy())


def test_host_computed_results_break_the_graph():
    """matrix_rank computes its result from the input's values outside the ops (a graph break: the first
    call's result was a constant of the graph); a dynamic quantized Linear is an op, recomputed by each replay."""
    from ember.ao.quantization import quantize_dynamic

    ember.manual_seed(0)
    quantized = quantize_dynamic(nn.Sequential(nn.Linear(8, 4)), {nn.Linear}, dtype=ember.qint8)
    compiled = ember.compile(quantized)
    x = ember.randn(2, 8)
    for scale in (1.0, 2.0, 3.0):
        np.testing.assert_array_equal(compiled(x * scale).numpy(), quantized(x * scale).numpy())
    rank = ember.compile(lambda a: ember.linalg.matrix_rank(a * 1.0) + 0)
    for matrix in (ember.eye(3), ember.ones(3, 3), ember.diag(ember.tensor([1.0, 1.0, 0.0]))):
        assert rank(matrix).item() == ember.linalg.matrix_rank(matrix).item()


def test_compiled_modules_pickle_as_torch(tmp_path):
    """Module.compile()'s graphs are not saved; an OptimizedModule saves as its module and settings."""
    ember.manual_seed(0)
    x = ember.randn(4, 3)
    in_place = nn.Linear(3, 2)
    in_place.compile()
    wrapped = ember.compile(nn.Linear(3, 2), dynamic=False)
    for model in (in_place, wrapped):
        model(x)
        path = tmp_path / "model.pt"
        ember.save(model, path)
        loaded = ember.load(path, weights_only=False)
        np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert type(loaded).__name__ == "OptimizedModule" and loaded._compiled.dynamic is False


def test_a_strided_input_does_not_replay_a_contiguous_inputs_views():
    """nanoGPT's generate() crops `idx[:, -block:]`: same shape as the contiguous context before, but a reshape
    captured as a view cannot replay on it (it raised)."""
    compiled = ember.compile(lambda x: x.reshape(-1) * 2)
    full = ember.arange(34.0).view(2, 17)
    compiled(full[:, :16].contiguous())
    cropped = full[:, 1:]
    np.testing.assert_array_equal(compiled(cropped).numpy(), (cropped.reshape(-1) * 2).numpy())
    # another row stride, the same layout (dims that cannot merge): its graph; a transpose is another layout
    wider = ember.arange(40.0).view(2, 20)[:, 4:]
    np.testing.assert_array_equal(compiled(wider).numpy(), (wider.reshape(-1) * 2).numpy())
    assert compiled.captures == 2
    transposed = ember.arange(32.0).view(16, 2).t()
    np.testing.assert_array_equal(compiled(transposed).numpy(), (transposed.reshape(-1) * 2).numpy())
    assert compiled.captures == 3


def test_tensors_made_inside_are_each_calls_own():
    """`buf = zeros(...); buf[0] = x; return buf` returned one object shared by every call (earlier results were
    overwritten), and a dropout mask buffer written in place broke a second call's backward."""
    compiled = ember.compile(lambda x: _fill_row(x))
    first = compiled(ember.ones(3))
    first = compiled(ember.ones(3))
    second = compiled(ember.full((3,), 5.0))
    assert first is not second
    np.testing.assert_array_equal(first.numpy(), [[1, 1, 1], [0, 0, 0]])
    assert compiled(ember.ones(3)) is not compiled(ember.ones(3))
    made = ember.compile(lambda: ember.zeros(2))
    made().add_(1)
    np.testing.assert_array_equal(made().numpy(), [0.0, 0.0])

    weight = ember.randn(3, requires_grad=True)

    def rows(x):
        buf = ember.zeros(2, 3)
        buf[0] = x * weight
        buf[1] = x + weight
        return buf

    compiled_rows = ember.compile(rows)
    for i in range(3):
        compiled_rows(ember.ones(3) * (i + 1)).sum().backward()
    np.testing.assert_array_equal(weight.grad.numpy(), np.full(3, 9.0, np.float32))

    w = ember.randn(10, 16, requires_grad=True)
    dropped = ember.compile(lambda x: F.dropout(x @ w, 0.3, training=True).sum())
    for _ in range(2):
        (dropped(ember.randn(12, 10)) + dropped(ember.randn(12, 10))).backward()


def _fill_row(x):
    buf = ember.zeros(2, 3)
    buf[0] = x
    return buf


def test_autograd_grad_inside_runs_eagerly():
    """autograd.grad inside a compiled function (a gradient penalty, MAML): the engine adds into raw gradient
    buffers and rebuilds saved outputs outside the ops, so the replay lost a third contribution (sin + cos +
    exp gave 1.88 where eager gives 2.42) and create_graph's history.  As in torch's dynamo, a graph break."""
    def three_paths(x):
        (gx,) = ember.autograd.grad((x.sin() + x.cos() + x.exp()).sum(), x)
        return gx

    def penalty(x):
        (g,) = ember.autograd.grad(ember.tanh(x).sum(), x, create_graph=True)
        return (g ** 2).sum()

    for fn in (three_paths, penalty):
        compiled = ember.compile(fn)
        for value in (1.0, 2.0, 0.5):
            x = ember.full((3,), value, dtype=ember.float64, requires_grad=True)
            out, expected = compiled(x), fn(x)
            np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
            assert out.requires_grad == expected.requires_grad


def test_double_backward_through_a_compiled_linear_with_bias():
    """The split bias add had no results_original: recompute_backward raised AttributeError."""
    linear = nn.Linear(3, 4)
    compiled = ember.compile(lambda x: ember.tanh(linear(x)))
    x = ember.randn(2, 3, requires_grad=True)
    for _ in range(2):
        (g,) = ember.autograd.grad(compiled(x).sum(), x, create_graph=True)
        (expected,) = ember.autograd.grad(ember.tanh(linear(x)).sum(), x, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
        g.sum().backward()


def test_hook_changes_are_one_counter_and_survive_pickling(tmp_path):
    """Hooks are guarded by one number that every HookDict change bumps (walking each module's hook dicts cost
    more than the other guards); a module loaded from a pickle keeps bumping it."""
    from ember.nn.modules import module as module_file

    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh())
    path = tmp_path / "m.pt"
    ember.save(model, path)
    loaded = ember.load(path, weights_only=False)
    assert type(loaded[1]._forward_hooks) is module_file.HookDict
    compiled = ember.compile(loaded)
    x = ember.randn(2, 3)
    compiled(x)
    before = module_file.hook_changes[0]
    handle = loaded[1].register_forward_hook(lambda module, inputs, output: output * 3)
    assert module_file.hook_changes[0] > before
    np.testing.assert_allclose(compiled(x).detach().numpy(), loaded(x).detach().numpy(), rtol=1e-6)
    handle.remove()
    np.testing.assert_allclose(compiled(x).detach().numpy(), loaded(x).detach().numpy(), rtol=1e-6)


def test_made_tensors_views_literals_and_leaves_are_each_calls_own():
    """torch.tensor([...]) written in place piled up across calls; a returned view of a made tensor pointed at
    the graph's constant (a caller's write changed later calls); a made leaf returned got no .grad after the
    first call."""
    def literal(x):
        t = ember.tensor([1.0, 2.0, 3.0])
        t.add_(x)
        return t

    compiled = ember.compile(literal)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(ember.ones(3)).numpy(), [2.0, 3.0, 4.0])

    view = ember.compile(lambda x: ember.zeros(3).unsqueeze(0))
    for _ in range(3):
        out = view(ember.ones(1))
        np.testing.assert_array_equal(out.numpy(), [[0.0, 0.0, 0.0]])
        out.add_(1)

    def leaf(x):
        w = ember.ones(3, requires_grad=True)
        return (x * w).sum(), w

    compiled = ember.compile(leaf)
    for i in range(3):
        loss, w = compiled(ember.full((3,), float(i + 1)))
        loss.backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(3, i + 1.0, np.float32))


def test_grad_of_an_argument_and_out_into_a_made_tensor_run_eagerly():
    @ember.no_grad()
    def sgd(p, lr):
        p.sub_(p.grad * lr)

    compiled = ember.compile(sgd)
    for i in range(3):
        p = ember.zeros(2, requires_grad=True)
        p.grad = ember.full((2,), float(i + 1))
        compiled(p, 1.0)
        np.testing.assert_array_equal(p.detach().numpy(), [-(i + 1.0)] * 2)

    def out_into_empty(x):
        o = ember.empty(3)
        ember.add(x, 1, out=o)
        return o * 2

    compiled = ember.compile(out_into_empty)
    for i in range(3):
        x = ember.full((3,), float(i))
        np.testing.assert_array_equal(compiled(x).numpy(), out_into_empty(x).numpy())


weight = 0


def test_an_attribute_name_is_not_a_global_read():
    """`linear.weight` names `weight` as an attribute; a script's global `weight` (a loop counter, as `step`
    beside `opt.step()`) was guarded and recaptured every call: co_names holds attribute names too."""
    global weight
    linear = nn.Linear(2, 2)
    compiled = ember.compile(lambda x: x @ linear.weight.t())
    try:
        for weight in range(10):  # noqa: B007 - a global that only shares its name with an attribute
            compiled(ember.ones(1, 2))
    finally:
        weight = 0
    assert compiled.captures == 1


S_GLOBAL = 1.0


def test_hooks_elsewhere_do_not_recompile_and_globals_subscript_is_guarded():
    """The hook counter is global, so a hook on an unrelated module changed it: the compiled model recaptured
    each time until the limit.  Its signature is now recomputed on a change and compared.  And a global read
    as globals()['S_GLOBAL'] (a string constant, no global load) replayed its first value."""
    global S_GLOBAL
    model, other = nn.Linear(2, 2), nn.Linear(2, 2)
    compiled = ember.compile(model)
    x = ember.ones(1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            compiled(x)
            other.register_forward_hook(lambda module, inputs, output: output).remove()
    assert compiled._compiled.captures == 1

    def scaled(x):
        return x * globals()["S_GLOBAL"]

    compiled = ember.compile(scaled)
    try:
        for value in (1.0, 2.0, 3.0):
            S_GLOBAL = value
            np.testing.assert_array_equal(compiled(ember.ones(2)).numpy(), [value, value])
    finally:
        S_GLOBAL = 1.0



class _Counted(nn.Module):
    """A model with a counter the training loop bumps (forward never reads it) and attributes it does read:
    directly, and through a property over a private attribute."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.steps = 0
        self.scale = 2.0
        self._shift = 1.0

    @property
    def shift(self):
        return self._shift

    def forward(self, x):
        return self.lin(x) * self.scale + self.shift


class _ComputedName(_Counted):
    """Reads an attribute by a computed name, which no code names."""

    def __init__(self):
        super().__init__()
        self.which = "scale"

    def forward(self, x):
        return self.lin(x) * getattr(self, self.which) + self.shift


def _expected(model, x):
    return (model.lin(x) * getattr(model, getattr(model, "which", "scale")) + model._shift).detach().numpy()


def test_attribute_forward_never_reads_does_not_recompile():
    """A counter bumped outside forward (`model.steps += 1`) was guarded with every other attribute: each call
    recaptured until the recompile limit, then the model ran eagerly.  Only names the captured code can read are
    guarded now; those still are, a property's private attribute included."""
    model = _Counted()
    compiled = ember.compile(model)
    x = ember.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            np.testing.assert_allclose(compiled(x).detach().numpy(), _expected(model, x), rtol=1e-6)
            model.steps += 1
    assert compiled._compiled.captures == 1
    for name, value in (("scale", 3.0), ("_shift", -1.0)):
        setattr(model, name, value)
        np.testing.assert_allclose(compiled(x).detach().numpy(), _expected(model, x), rtol=1e-6)
    assert compiled._compiled.captures == 3


def test_attribute_read_by_computed_name_is_guarded():
    """`getattr(self, self.which)` names no attribute in the code: every attribute is guarded again."""
    model = _ComputedName()
    model.other = 5.0
    compiled = ember.compile(model)
    x = ember.ones(2, 3)
    compiled(x)
    for which, value in (("other", 5.0), ("other", 7.0)):
        model.which = which
        model.other = value
        np.testing.assert_allclose(compiled(x).detach().numpy(), _expected(model, x), rtol=1e-6)
    assert compiled._compiled.attr_names is None


def test_attributes_all_guarded_under_another_profiler():
    """With sys.setprofile taken (cProfile), the names read are unknown: every attribute is guarded."""
    import sys

    model = _Counted()
    compiled = ember.compile(model)
    x = ember.ones(2, 3)
    sys.setprofile(lambda *args: None)
    try:
        compiled(x)
    finally:
        sys.setprofile(None)
    assert compiled._compiled.attr_names is None
    model.steps += 1
    compiled(x)
    assert compiled._compiled.captures == 2


def test_object_arguments_are_guarded_by_contents_or_held():
    """A NumPy array, dataclass or callable-object argument was guarded by id() alone, with nothing holding the
    object: a fresh one made at a freed address (or one changed in place) replayed another's values."""
    import dataclasses

    def weighted(x, w):
        return x * ember.from_numpy(w)

    compiled = ember.compile(weighted)
    x = ember.ones(3)
    rng = np.random.default_rng(0)
    for _ in range(6):
        w = rng.standard_normal(3).astype(np.float32)
        np.testing.assert_array_equal(compiled(x, w).numpy(), weighted(x, w).numpy())
        del w

    @dataclasses.dataclass
    class Opts:
        temperature: float

    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, t):
            return t * self.k

    def tempered(x, o):
        return (x / o.temperature).softmax(-1)

    def applied(x, act):
        return act(x).sum()

    compiled, compiled_act = ember.compile(tempered), ember.compile(applied)
    x = ember.tensor([[1.0, 2.0, 3.0]])
    opts, act = Opts(1.0), Scale(2.0)
    for t in (1.0, 0.25):
        opts.temperature = act.k = t
        np.testing.assert_allclose(compiled(x, opts).numpy(), tempered(x, opts).numpy(), rtol=1e-6)
        assert compiled_act(x, act).item() == applied(x, act).item()
    for t in (1.0, 0.25, 4.0):
        np.testing.assert_allclose(compiled(x, Opts(t)).numpy(), tempered(x, Opts(t)).numpy(), rtol=1e-6)


TABLE = np.array([1.0, 2.0, 3.0], dtype=np.float32)


def test_numpy_arrays_read_in_the_function_are_guarded():
    """`ember.tensor(self.table)` / `from_numpy(TABLE)` bake the array into the graph: a module attribute
    rebound to another array, or a global array written in place, replayed the first values."""
    class Tabled(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = np.ones(3, dtype=np.float32)

        def forward(self, x):
            return x * ember.tensor(self.table)

    model = Tabled()
    compiled = ember.compile(model)
    x = ember.ones(3)
    for s in range(3):
        model.table = np.full(3, float(s), dtype=np.float32)
        np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    compiled = ember.compile(lambda x: x * ember.from_numpy(TABLE))
    for s in range(3):
        TABLE[0] = 10.0 * s
        np.testing.assert_array_equal(compiled(x).numpy(), (x * ember.from_numpy(TABLE)).numpy())


def test_autocast_cached_weight_cast_is_not_frozen():
    """Inside one autocast region the bf16 casts of the weights are cached: a capture that found them cached
    recorded them as constants, and replays kept the weights of that moment."""
    ember.manual_seed(0)
    model = nn.Linear(4, 3)
    compiled = ember.compile(model)
    x = ember.ones(2, 4)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        model(x)  # caches the casts
        compiled(x)  # captures with the cache full
    with ember.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert compiled(x).float().abs().sum().item() == 0.0


def test_grad_scaler_state_created_in_a_capture_is_not_frozen():
    """GradScaler.scale() creates its scale tensor on first use: made during a capture, it was copied into every
    replay, so scaler.update() was never seen."""
    scaler = ember.amp.GradScaler("cpu", init_scale=16.0)
    w = ember.ones(3, requires_grad=True)
    scaled = ember.compile(lambda x: scaler.scale((x * w).sum()))
    x = ember.ones(3)
    for _ in range(3):
        assert scaled(x).item() == scaler.scale((x * w).sum()).item()
        scaler.update(new_scale=scaler.get_scale() * 2)


class _Log:
    last = None


LOG = _Log()


def test_writes_to_module_containers_and_user_objects_run_eagerly():
    """`self.history.append(...)`, `self.stats[k] = ...` and `LOG.last = ...` in forward were skipped on replay
    (only rebinding a module attribute was noticed): such calls now run eagerly, as other Python writes do."""
    class Logging(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.history, self.stats = [], {}

        def forward(self, x):
            y = self.lin(x)
            self.history.append(1)
            self.stats["mean"] = y.detach().mean()
            LOG.last = y.detach().sum()
            return y

    model = Logging()
    compiled = ember.compile(model)
    for i in range(3):
        x = ember.full((2, 3), float(i))
        compiled(x)
        assert len(model.history) == i + 1
        expected = model.lin(x).detach()
        np.testing.assert_allclose(model.stats["mean"].item(), expected.mean().item(), rtol=1e-6)
        np.testing.assert_allclose(LOG.last.item(), expected.sum().item(), rtol=1e-6)


def test_in_place_op_keeps_the_target_dtype():
    """bf16 `h += fp32` keeps h bfloat16 in eager (and torch); the replay made h, and what followed, float32."""
    def fn(x, r):
        h = x * 2
        h += r
        return h * 3

    compiled = ember.compile(fn)
    x, r = ember.randn(3, dtype=ember.bfloat16), ember.full((3,), 1e-3)
    for _ in range(3):
        out = compiled(x, r)
        assert out.dtype == ember.bfloat16
        np.testing.assert_array_equal(out.float().numpy(), fn(x, r).float().numpy())


def test_value_checks_are_ops_not_reads():
    """BCELoss checked its input range with min().item() / max().item(): each batch read new values, so the
    compiled step retraced every call and then ran eagerly.  The check is an op now (range_check): one
    capture, and a replay still raises on bad input."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 1), nn.Sigmoid())
    loss_fn = nn.BCELoss()
    step = ember.compile(lambda x, y: loss_fn(model(x).squeeze(1), y) + F.one_hot(y.long(), 2).sum() * 0)
    for _ in range(5):
        x, y = ember.randn(16, 8), (ember.rand(16) > 0.5).float()
        loss = step(x, y)
        np.testing.assert_allclose(loss.item(), loss_fn(model(x).squeeze(1), y).item(), rtol=1e-6)
    assert step.captures == 1 and step.recompiles == 0
    with ember.no_grad():
        model[0].weight.fill_(float("nan"))
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        step(ember.randn(16, 8), ember.ones(16))


def test_freezing_a_layer_every_other_step_keeps_both_graphs():
    """requires_grad was not in the module's guard key: the external check dropped the cached graph of the
    other state, so alternating freeze/unfreeze recaptured every call and gave up at the recompile limit."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    compiled = ember.compile(model)
    x = ember.randn(8, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in range(10):
            model[0].requires_grad_(step % 2 == 0)
            compiled(x).sum().backward()
            grad = model[2].weight.grad.clone()
            assert (model[0].weight.grad is not None) == (step % 2 == 0)
            model.zero_grad()
            model(x).sum().backward()
            np.testing.assert_allclose(grad.numpy(), model[2].weight.grad.numpy(), rtol=1e-6)
            model.zero_grad(set_to_none=True)
    assert compiled._compiled.captures == 2


def test_non_reentrant_checkpoint_around_a_compiled_block():
    """The first call of a guard set returns the traced (eager) run, and the checkpoint's recompute replayed the
    fused graph, which saves other tensors: CheckpointError on the first backward.  Under saved-tensor hooks a
    compiled function runs eagerly."""
    from ember.utils.checkpoint import checkpoint

    ember.manual_seed(0)
    block = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    compiled = ember.compile(block)
    for _ in range(3):
        x = ember.randn(4, 16, requires_grad=True)
        checkpoint(compiled, x, use_reentrant=False).pow(2).sum().backward()
        expected = x.detach().requires_grad_()
        block(expected).pow(2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), expected.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_private_settings_containers_and_training_objects_are_guarded():
    """Each replayed a value frozen at capture: a private settings attribute (`self._cfg.scale`, `self._mix`),
    a deque, defaultdict or OrderedDict global, a list over 32 items, and an optimizer's lr or a scheduler's
    last lr read in the function."""
    import collections
    import dataclasses

    @dataclasses.dataclass
    class Cfg:
        scale: float = 1.0

    class Private(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self._cfg, self._mix = Cfg(), [0.5, 0.5]

        def forward(self, x):
            return (self._mix[0] * self.lin(x) + self._mix[1] * x) * self._cfg.scale

    model = Private()
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    for change in (lambda: setattr(model._cfg, "scale", 2.0), lambda: model._mix.__setitem__(0, 3.0),
                   lambda: setattr(model, "_mix", [1.0, 0.0])):
        change()
        np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)

    window = collections.deque(maxlen=5)
    weights = collections.defaultdict(lambda: 1.0)
    history = [0.0] * 40
    linear = nn.Linear(3, 1)
    opt = ember.optim.SGD(linear.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)

    def fn(x):
        baseline = sum(window) / len(window) if window else 0.0
        return (x - baseline) * weights["kl"] + sum(history[-5:]) + opt.param_groups[0]["lr"] \
            + sched.get_last_lr()[0]

    compiled = ember.compile(fn)
    for step in range(4):
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy(), rtol=1e-6)
        window.append(float(step))
        weights["kl"] = step * 0.5
        history.append(float(step))
        opt.step()
        sched.step()


def test_bound_object_and_stateful_hooks_are_guarded():
    """A compiled method of a plain object (a trainer's loss, an optimizer subclass's step) and hooks that are
    callable objects or bound methods replayed the attributes they read at capture."""
    class Trainer:
        def __init__(self):
            self.model, self.temperature = nn.Linear(4, 2), 1.0

        def loss(self, x):
            return (self.model(x) / self.temperature).sum()

    class Scale:
        def __init__(self):
            self.s = 1.0

        def __call__(self, module, args, out):
            return out * self.s

    ember.manual_seed(0)
    trainer = Trainer()
    loss = ember.compile(trainer.loss)
    hooked = nn.Linear(4, 2)
    hook = Scale()
    hooked.register_forward_hook(hook)
    compiled_hooked = ember.compile(hooked)
    x = ember.randn(3, 4)
    for value in (1.0, 2.0, 4.0):
        trainer.temperature = hook.s = value
        np.testing.assert_allclose(loss(x).item(), trainer.loss(x).item(), rtol=1e-6)
        np.testing.assert_allclose(compiled_hooked(x).detach().numpy(), hooked(x).detach().numpy(), rtol=1e-6)
    trainer.model = nn.Linear(4, 2)
    np.testing.assert_allclose(loss(x).item(), trainer.loss(x).item(), rtol=1e-6)

    class ClippedSGD(ember.optim.Optimizer):
        def __init__(self, params, lr=0.1, clip=1.0):
            super().__init__(params, {"lr": lr})
            self.clip = clip

        @ember.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    p.add_(p.grad.clamp(-self.clip, self.clip), alpha=-group["lr"])

    results = []
    for compile_step in (False, True):
        ember.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = ClippedSGD(model.parameters())
        step = ember.compile(opt.step) if compile_step else opt.step
        for clip in (1.0, 0.01, 0.001):
            opt.clip = clip
            (model(ember.ones(3, 4)) * 10).sum().backward()
            step()
            opt.zero_grad()
        results.append(model.weight.detach().numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)


def test_vae_reparameterization_compiles_and_draws_as_eager():
    """randn_like (the reparameterization trick) and rand were untraced draws: a VAE's forward always ran
    eagerly.  They are recipe nodes now, drawn in eager's order among the recorded random ops (dropout first
    here: fusion had hoisted made tensors above it), and batch-generic."""
    import copy

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.mu, self.lv, self.dec = nn.Linear(6, 8), nn.Linear(8, 3), nn.Linear(8, 3), nn.Linear(3, 6)
            self.drop = nn.Dropout(0.2)

        def forward(self, x):
            h = self.drop(F.relu(self.enc(x)))
            mu, lv = self.mu(h), self.lv(h)
            z = mu + ember.randn_like(mu) * (0.5 * lv).exp()
            rec = self.dec(z) + ember.rand(x.shape[0], 1) * 0.1
            return F.mse_loss(rec, x) - 0.5 * (1 + lv - mu**2 - lv.exp()).mean()

    ember.manual_seed(0)
    model = VAE()
    twin = copy.deepcopy(model)
    compiled = ember.compile(model)
    for step, B in enumerate((8, 8, 5, 8, 3)):
        x = ember.randn(B, 6)
        ember.manual_seed(100 + step)
        loss = compiled(x)
        loss.backward()
        ember.manual_seed(100 + step)
        expected = twin(x)
        expected.backward()
        np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-6)
        np.testing.assert_allclose(model.enc.weight.grad.numpy(), twin.enc.weight.grad.numpy(), rtol=1e-5,
                                   atol=1e-7)
        model.zero_grad()
        twin.zero_grad()
    assert not compiled._compiled.graph_breaks and compiled._compiled.captures == 2


def test_settings_nested_in_settings_are_guarded():
    """`self.config.attn.scale`, `self.config.layers[0]["mult"]`: settings inside settings were not guarded
    at all (only one level was compared), so their changes replayed the old values."""
    import dataclasses

    @dataclasses.dataclass
    class Attn:
        scale: float = 1.0

    @dataclasses.dataclass
    class Cfg:
        attn: Attn = dataclasses.field(default_factory=Attn)
        layers: list = dataclasses.field(default_factory=lambda: [{"mult": 2.0}])

    class Configured(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.config = nn.Linear(3, 3), Cfg()

        def forward(self, x):
            return self.lin(x) * self.config.attn.scale * self.config.layers[0]["mult"]

    model = Configured()
    compiled = ember.compile(model)
    x = ember.randn(2, 3)
    with ember.no_grad():
        for change in (lambda: None, lambda: setattr(model.config.attn, "scale", 3.0),
                       lambda: model.config.layers[0].__setitem__("mult", 5.0),
                       lambda: setattr(model.config, "attn", Attn(7.0))):
            change()
            np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6)


def test_recipes_keep_requires_grad_and_unused_draws():
    """A remade tensor lost requires_grad_() (a replay's backward raised), and an unused random draw was
    dropped as dead code, so the generator's stream diverged from eager's after the call."""
    def leaf(x):
        w = ember.randn(x.shape[1]).requires_grad_()
        return (x * w).sum(), w

    compiled = ember.compile(leaf)
    for _ in range(3):
        y, w = compiled(ember.ones(2, 3))
        y.backward()
        np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 2.0, np.float32))

    def unused(x):
        ember.rand(5)
        return x + ember.rand_like(x)

    compiled = ember.compile(unused)
    for seed in range(3):
        ember.manual_seed(seed)
        out, after = compiled(ember.zeros(3)), ember.rand(2)
        ember.manual_seed(seed)
        np.testing.assert_array_equal(out.numpy(), unused(ember.zeros(3)).numpy())
        np.testing.assert_array_equal(after.numpy(), ember.rand(2).numpy())


def test_write_through_numpy_runs_eagerly():
    """`y.numpy()[0] = 100` inside: the read break split the graph as if the value were only read, and the
    replay skipped the write."""
    def fn(x):
        y = x * 2
        y.numpy()[0] = 100.0
        return y + 1

    compiled = ember.compile(fn)
    for _ in range(3):
        np.testing.assert_array_equal(compiled(ember.ones(3)).numpy(), [101.0, 3.0, 3.0])


def test_attributes_the_function_writes_do_not_recompile_every_call():
    """A counter or log list the function writes (on its module, or on the object of a compiled method) made
    each call miss the guards until the recompile limit.  Written attributes are left out of the guards (the
    calls run eagerly, as writes require); the others are still guarded."""
    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin, self.seen, self.calls = nn.Linear(4, 4), [], 0

        def forward(self, x):
            self.seen.append(x.shape[0])
            self.calls += 1
            return self.lin(x)

    class Agent:
        def __init__(self):
            self.w, self.steps, self.scale = ember.ones(3), 0, 2.0

        def act(self, x):
            self.steps += 1
            return x * self.w * self.scale

    model, agent = Counting(), Agent()
    compiled, act = ember.compile(model), ember.compile(agent.act)
    x = ember.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(12):
            compiled(x)
            act(ember.ones(3))
    assert (len(model.seen), model.calls, agent.steps) == (12, 12, 12)
    assert compiled._compiled.captures <= 2 and act.captures <= 2
    agent.scale = 5.0
    np.testing.assert_array_equal(act(ember.ones(3)).numpy(), np.full(3, 5.0, np.float32))


def test_scheduler_read_recompiles_only_when_the_lr_changes():
    linear = nn.Linear(3, 3)
    opt = ember.optim.SGD(linear.parameters(), lr=0.1)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    compiled = ember.compile(lambda x: linear(x).pow(2).mean() * sched.get_last_lr()[0])
    x = ember.randn(2, 3)
    for _ in range(12):
        loss = compiled(x)
        np.testing.assert_allclose(loss.item(), (linear(x).pow(2).mean() * sched.get_last_lr()[0]).item(), rtol=1e-6)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    assert compiled.captures == 3  # lr 0.1, 0.05, 0.025


def test_attention_dropout_compiles_and_draws_as_eager():
    """SDPA's dropout seed was read into Python from the generator (an untraced draw): any model with attention
    dropout, nn.TransformerEncoderLayer's default included, ran every call eagerly.  The seed is a 0-d tensor
    drawn by a random factory now, an operand of the op, drawn anew by each replay."""
    import copy

    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.1, is_causal=True)

    q, k, v = (ember.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    compiled = ember.compile(attention)
    for seed in range(3):
        ember.manual_seed(seed)
        out = compiled(q, k, v)
        out.sum().backward()
        grad, q.grad = q.grad, None
        ember.manual_seed(seed)
        expected = attention(q, k, v)
        expected.sum().backward()
        # attention with dropout runs torch's math backend (softmax, dropout, matmul): the replay's fused softmax
        # may round an ulp away from eager's; a different dropout draw would differ by O(1)
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
        q.grad = None
    assert not compiled.graph_breaks and len(compiled.graphs) == 1

    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)  # dropout=0.1 by default
    twin = copy.deepcopy(layer)
    compiled_layer = ember.compile(layer)
    for seed in range(3):
        x = ember.randn(2, 10, 32)
        ember.manual_seed(seed)
        out = compiled_layer(x)
        ember.manual_seed(seed)
        np.testing.assert_allclose(out.detach().numpy(), twin(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not compiled_layer._compiled.graph_breaks


def test_attributes_set_on_the_compiled_module_reach_the_original():
    """`compiled.head = nn.Linear(...)` / `compiled.scale = 3.0` landed on the wrapper: forward kept the old
    head and scale, and parameters() listed both heads.  As torch's OptimizedModule, they are set (and deleted)
    on `_orig_mod`."""
    import copy

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head, self.scale = nn.Linear(4, 8), nn.Linear(8, 3), 1.0

        def forward(self, x):
            return self.head(self.body(x).tanh()) * self.scale

    ember.manual_seed(0)
    eager = Net()
    compiled = ember.compile(copy.deepcopy(eager))
    x = ember.randn(5, 4)
    compiled(x)
    head = nn.Linear(8, 3)
    eager.head, compiled.head = copy.deepcopy(head), head
    eager.scale = compiled.scale = 3.0
    np.testing.assert_allclose(compiled(x).detach().numpy(), eager(x).detach().numpy(), rtol=1e-6)
    assert compiled._orig_mod.head is head and len(list(compiled.parameters())) == 4
    compiled.extra = 1
    del compiled.extra
    assert not hasattr(compiled._orig_mod, "extra")
    compiled.eval()
    assert not compiled.training and not compiled._orig_mod.training


def test_view_of_a_fused_output_with_another_layout_replays():
    """HF LLaMA attention: `(q * cos + rotate(q) * sin)` on a transposed q, then `.transpose(1, 2).contiguous()
    .view(B, T, -1)`.  Eager's elementwise result keeps the transposed layout, so contiguous() was a no-op and
    the view was recorded bare; the fused kernel's output is row-major, and the replay raised."""
    def fn(x, a, b):
        y = x.transpose(1, 2) * a + b
        return (y.transpose(1, 2).contiguous().view(x.shape[0], x.shape[1], -1),
                y.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1))

    compiled = ember.compile(fn)
    for _ in range(3):
        x, a, b = ember.randn(2, 8, 4, 16, requires_grad=True), ember.randn(16), ember.randn(16)
        outs, expected = compiled(x, a, b), fn(x, a, b)
        for out, ref in zip(outs, expected):
            np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
        (outs[0].sum() + outs[1].square().sum()).backward()
        grad, x.grad = x.grad, None
        (expected[0].sum() + expected[1].square().sum()).backward()
        np.testing.assert_allclose(grad.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-5)
