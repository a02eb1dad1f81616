"""The pytorch/examples programs (tests/programs/_examples.py, _examples_more.py) run as their originals do, on
small synthetic data.

(a) ember eager against torch: torch builds the modules, its initial weights are copied into ember, both train the
same steps on the same data; losses, outputs, first-step gradients and final parameters must agree (float64: rtol
1e-8, so rounding passes and bugs do not; float32: rtol 1e-3).
(b) the same ember program with its model (and loss, where the original has one) wrapped in ember.compile, against
ember eager: the same records, and no compiled function given up on or broken where it needs not be.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from _examples import (
    actor_critic,
    dcgan,
    forward_forward,
    gcn,
    language_model,
    reinforce,
    siamese,
    super_resolution,
    time_sequence,
    vae,
)
from _examples_more import fast_neural_style, imagenet, mnist, mnist_rnn, regression

torch = pytest.importorskip("torch")
import ember  # noqa: E402

# ------------------------------------------------------------------------------------------------ data


def _vae_data(rng):
    return [rng.uniform(size=(3, 4, 16)), rng.standard_normal((3, 4, 4))]


def _dcgan_data(rng):
    return [rng.uniform(-1, 1, size=(3, 4, 3, 16, 16)), rng.standard_normal((3, 4, 8, 1, 1))]


def _episodes(rng, episodes=3, T=5):
    states = [rng.standard_normal((T, 4)) for _ in range(episodes)]
    actions = [rng.integers(0, 2, T) for _ in range(episodes)]
    rewards = [np.ones(T) for _ in range(episodes)]
    return [states, actions, rewards]


def _tokens(rng):
    return [rng.integers(0, 20, (16, 3))]


def _waves(rng):
    x = np.arange(13) + rng.integers(-8, 8, (8, 1))
    return [np.sin(x / 2.0)]


def _super_resolution_data(rng):
    return [rng.uniform(size=(3, 2, 1, 6, 6)), rng.uniform(size=(3, 2, 1, 12, 12))]


def _pairs(rng):
    images = [rng.standard_normal((3, 4, 1, 6, 6)) for _ in range(3)]
    return images + [rng.integers(0, 2, (3, 4)).astype(np.float64)]


def _overlay_data(rng):
    return [rng.uniform(size=(16, 20)), rng.integers(0, 10, 16), rng.permutation(16)]


def _graph(rng, V=10):
    content = (rng.uniform(size=(V, 6)) < 0.4).astype(np.float64)
    content[3] = 0  # a node without features: 1 / 0 = inf, set to 0 as the original does
    edges = np.array([(i, (i + 1) % V) for i in range(V)] + [(0, 5), (2, 7)], dtype=np.int32)
    return [content, edges, rng.integers(0, 3, V), rng.permutation(V)]


def _style_data(rng):
    return [rng.uniform(0, 255, size=(2, 2, 3, 8, 8)), rng.uniform(0, 255, size=(1, 3, 8, 8))]


def _regression_data(rng):
    return [rng.standard_normal((4, 1)) * 5, rng.standard_normal(1) * 5, rng.standard_normal((4, 32))]


def _mnist_data(rng):
    return [rng.standard_normal((3, 4, 1, 10, 10)), rng.integers(0, 10, (3, 4))]


def _mnist_data_6(rng):
    return [rng.standard_normal((3, 4, 1, 6, 6)), rng.integers(0, 10, (3, 4))]


def _imagenet_data(rng):
    return [rng.standard_normal((4, 5, 3, 6, 6)), rng.integers(0, 6, (4, 5))]


# name -> (program, data)
PROGRAMS = {
    "vae": (vae, _vae_data),
    "dcgan": (dcgan, _dcgan_data),
    "actor_critic": (actor_critic, _episodes),
    "reinforce": (reinforce, _episodes),
    "lm-LSTM": (language_model("LSTM"), _tokens),
    "lm-GRU": (language_model("GRU"), _tokens),
    "lm-LSTM-legacy": (language_model("LSTM", legacy=True), _tokens),
    "lm-GRU-legacy": (language_model("GRU", legacy=True), _tokens),
    "lm-RNN_TANH": (language_model("RNN_TANH"), _tokens),
    "lm-RNN_RELU": (language_model("RNN_RELU"), _tokens),
    "lm-Transformer": (language_model("Transformer"), _tokens),
    "time_sequence": (time_sequence, _waves),
    "super_resolution": (super_resolution, _super_resolution_data),
    "siamese": (siamese, _pairs),
    "forward_forward": (forward_forward, _overlay_data),
    "gcn": (gcn, _graph),
    "gcn-dense": (functools.partial(gcn, dense=True), _graph),
    "fast_neural_style": (fast_neural_style, _style_data),
    "regression": (regression, _regression_data),
    "mnist": (mnist, _mnist_data),
    "mnist_rnn": (mnist_rnn, _mnist_data_6),
    "imagenet": (imagenet, _imagenet_data),
}


def compare(got, want, rtol, atol, step_size=0.0, noise=0.0):
    """Every mismatching record, with its largest error; empty when all agree.

    A gradient that is zero in exact arithmetic (a conv bias an InstanceNorm subtracts again) is rounding noise
    on both sides: it is compared against the largest gradient's scale, and Adam, which normalises it into a full
    lr-sized step of random sign, may move that parameter entry by up to `step_size` (2 * steps * lr).  `noise`:
    such gradients' size relative to the largest one."""
    problems = [f"keys differ: {sorted(set(got) ^ set(want))}"] if set(got) != set(want) else []
    grads = [np.abs(g).max() for k, g in want.items() if k.startswith("grad:") and g is not None and g.size]
    floor = noise * max(grads, default=0.0)
    for key in set(got) & set(want):
        a, b = got[key], want[key]
        if a is None or b is None or isinstance(b, str):
            if a != b if isinstance(b, str) else a is not b:
                problems.append(f"{key}: {a!r} vs {b!r}")
            continue
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        tolerance = atol
        if key.startswith("grad:"):
            tolerance = max(atol, floor)
        elif key.startswith("param:") and want.get("grad:" + key[6:]) is not None:
            tolerance = np.where(np.abs(want["grad:" + key[6:]]) <= floor, max(step_size, atol), atol)
        if a.shape != b.shape:
            problems.append(f"{key}: shape {a.shape} vs {b.shape}")
        elif not np.all(np.isclose(a, b, rtol=rtol, atol=0, equal_nan=True) | (np.abs(a - b) <= tolerance)):
            problems.append(f"{key}: max abs err {np.abs(a - b).max():.3g} (scale {np.abs(b).max():.3g})")
    return sorted(problems)


def _eager(fn):
    return fn


class Compiler:
    """ember.compile, remembering what it compiled so the test can read their counters."""

    def __init__(self):
        self.compiled = []

    def __call__(self, fn):
        compiled = ember.compile(fn)
        self.compiled.append(compiled)
        return compiled

    def problems(self):
        """Compiled functions that gave up, or have a guard set that runs eagerly for good (a graph break that a
        retry did not clear: a one-time attribute write such as the Transformer's cached src_mask does)."""
        out = []
        for c in self.compiled:
            inner = getattr(c, "_compiled", c)
            eager = [entry for entry in inner.cache.values() if entry.eager]
            if inner.gave_up or eager:
                out.append(f"{inner.__name__}: gave_up={inner.gave_up} eager entries={len(eager)} "
                           f"breaks={inner.graph_breaks[:2]} last={inner.last_reason}")
        return out


TOLERANCE = {"float64": (1e-8, 1e-10), "float32": (1e-3, 1e-4)}
# per program: compare() keywords by dtype, where rounding is amplified beyond the defaults above
LOOSER = {
    # LBFGS's 20 line-search-free iterations per step amplify last-bit differences (1e-16 -> 1e-10 in step 1)
    "time_sequence": {"float64": {"rtol": 1e-5, "atol": 1e-6}},
    # style_weight 1e10: the conv biases an InstanceNorm cancels get pure rounding noise as gradients
    "fast_neural_style": {"float64": {"noise": 1e-10, "step_size": 4e-3}, "float32": {"noise": 1e-5, "step_size": 4e-3}},
}


def _tolerance(name, dtype):
    rtol, atol = TOLERANCE[dtype]
    return {"rtol": rtol, "atol": atol, **LOOSER.get(name, {}).get(dtype, {})}


def _run_pair(name, dtype):
    program, data_of = PROGRAMS[name]
    data = data_of(np.random.default_rng(0))
    torch.manual_seed(0)
    want, state = program(torch, dtype, data, None, _eager)
    got, _ = program(ember, dtype, data, state, _eager)
    return got, want


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_eager_matches_torch_float64(name):
    got, want = _run_pair(name, "float64")
    assert not compare(got, want, **_tolerance(name, "float64"))


@pytest.mark.parametrize("name", ["vae", "dcgan", "lm-LSTM", "lm-Transformer", "super_resolution", "mnist",
                                  "fast_neural_style"])
def test_eager_matches_torch_float32(name):
    got, want = _run_pair(name, "float32")
    assert not compare(got, want, **_tolerance(name, "float32"))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_compiled_matches_eager(name):
    program, data_of = PROGRAMS[name]
    data = data_of(np.random.default_rng(0))
    torch.manual_seed(0)
    _, state = program(torch, "float64", data, None, _eager)
    want, _ = program(ember, "float64", data, state, _eager)
    compiler = Compiler()
    got, _ = program(ember, "float64", data, state, compiler)
    assert not compare(got, want, **_tolerance(name, "float64"))
    problems = compiler.problems()
    if name == "gcn":  # mm / spmm on sparse tensors: not captured (nor by torch.compile); every call runs eagerly
        assert len(problems) == 1 and "sparse" in problems[0]
    else:
        assert not problems


# ------------------------------------------------------------------------------------------------ what the programs found


def test_float32_var_std_round_once_as_torch():
    """torch's CPU var/std accumulate float32 in double and round once: actor_critic's
    `(returns - returns.mean()) / (returns.std() + eps)` was an ulp off, and Adam spread it."""
    rng = np.random.default_rng(0)
    for shape, dim in [((5,), None), ((3,), None), ((7, 9), 1), ((4, 6, 5), (0, 2)), ((33,), 0)]:
        a = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
        for correction in (0, 1):
            for name in ("var", "std"):
                want = getattr(torch, name)(torch.tensor(a), dim=dim, correction=correction).numpy()
                got = getattr(ember, name)(ember.tensor(a), dim=dim, correction=correction).numpy()
                assert got.dtype == want.dtype and np.array_equal(got, want), (shape, dim, correction, name)
    a = rng.standard_normal(6).astype(np.float16)
    assert ember.tensor(a).std().dtype == ember.float16
    np.testing.assert_array_equal(ember.tensor(a).std().numpy(), torch.tensor(a).std().numpy())


def test_index_with_range():
    """mnist_forward_forward's `x_[range(x.shape[0]), y] = x.max()`: torch takes any sequence as an index."""
    for lib in (torch, ember):
        x = lib.arange(12.0).view(3, 4)
        x[range(3), lib.tensor([1, 0, 3])] = -1.0
        x[range(1, 3), 2] += 10
        if lib is torch:
            want = (x.numpy().copy(), x[range(2)].numpy(), x[:, range(0, 4, 2)].numpy(), x[range(0)].shape)
        else:
            got = (x.numpy(), x[range(2)].numpy(), x[:, range(0, 4, 2)].numpy(), tuple(x[range(0)].shape))
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_variable_and_deprecated_add_overload():
    """The pre-0.4 idioms of word_language_model: Variable(...) is a detached alias with requires_grad set (and
    every tensor is a Variable); add_(Number alpha, Tensor other) and sub(...) still work, with torch's warning."""
    for lib in (torch, ember):
        Variable = lib.autograd.Variable
        w = lib.ones(2, 3, requires_grad=True)
        h = Variable(w.new(2, 4).zero_())
        v = Variable(w * 2, requires_grad=True)
        assert not h.requires_grad and v.requires_grad and v.is_leaf and isinstance(w, Variable)
        assert not isinstance(3, Variable) and Variable().shape == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor"):
            Variable(3)
    results = []
    for lib in (torch, ember):
        p, g = lib.ones(3), lib.arange(3.0)
        if lib is ember:  # (torch warns once per process, and the legacy programs above may have had it)
            with pytest.warns(UserWarning, match="This overload of add_? is deprecated"):
                p.data.add_(-0.5, g.data)
        else:
            p.data.add_(-0.5, g.data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            results.append((p.numpy(), lib.sub(p, 2, g).numpy(), p.add(3, g).numpy()))
        with pytest.raises(TypeError):
            lib.add(p, 2, g, alpha=3)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def _mask_structure(lib, fn, shape, training):
    """Which dims a dropout mask is constant along, its values, how many warnings; or the error."""
    lib.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            y = fn(lib.ones(*shape), 0.5, training=training).numpy()
        except Exception as error:  # noqa: BLE001 (the exception type is what is compared)
            return type(error).__name__, str(error)[:60], len(caught)
    constant = [bool(np.all(y == y.take([0], axis=d))) for d in range(y.ndim)]
    return constant, sorted(set(y.ravel().tolist())), len(caught)


@pytest.mark.parametrize("name, shapes", [
    ("dropout1d", [(3, 40), (2, 30, 4), (2, 3, 4, 5)]),
    ("dropout2d", [(40, 30), (2, 30, 4), (2, 30, 4, 5), (2, 3, 4, 5, 6)]),
    ("dropout3d", [(30, 4), (2, 30, 4, 5), (2, 30, 4, 5, 6)]),
])
def test_feature_dropout_ranks_match_torch(name, shapes):
    """mnist_rnn's Dropout2d on a 2-D (N, C) input raised in ember: torch warns and drops element-wise, reads a 3-D
    input as (N, C, L), and dropout1d rejects other ranks even in eval.  Compared by mask structure (which dims one
    draw covers), never by raw draws."""
    for shape in shapes:
        for training in (True, False):
            want = _mask_structure(torch, getattr(torch.nn.functional, name), shape, training)
            got = _mask_structure(ember, getattr(ember.nn.functional, name), shape, training)
            assert got == want, (shape, training)


def test_compiled_train_step_with_backward_keeps_a_graph():
    """The examples' loop body compiled whole: eager results (checked), and a graph kept for the forward."""
    rng = np.random.default_rng(0)
    xs, ys = rng.standard_normal((3, 5, 6)), rng.integers(0, 3, (3, 5))
    results = []
    for compiled in (False, True):
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Linear(6, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3)).double()
        if results:
            model.load_state_dict(results[0][1])
        state = {k: v.clone() for k, v in model.state_dict().items()}
        optimizer = ember.optim.Adam(model.parameters(), lr=1e-2)

        def train_step(x, y):
            optimizer.zero_grad()
            loss = ember.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            ember.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            return loss

        step = ember.compile(train_step) if compiled else train_step
        losses = [step(ember.tensor(x), ember.tensor(y)).item() for x, y in zip(xs, ys)]
        results.append((losses, state, [p.detach().numpy().copy() for p in model.parameters()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-12)
    for a, b in zip(results[1][2], results[0][2]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert not any(entry.eager for entry in step.cache.values())
