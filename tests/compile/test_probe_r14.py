"""Probe round 14: inference-time patterns (generation loops, structured outputs, compile settings, the
torch._dynamo aliases) compiled and compared with eager; each test here failed before its fix."""

import dataclasses
from collections import OrderedDict, defaultdict

import numpy as np
import pytest

import ember
import ember.nn as nn


class _ModelOutput(OrderedDict):
    """HF's ModelOutput, reduced: a dataclass over an OrderedDict whose non-None fields are also items."""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None:
                self[field.name] = value

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __setattr__(self, key, value):
        if key in self.keys() and value is not None:
            super().__setitem__(key, value)
        super().__setattr__(key, value)

    def update(self, *args, **kwargs):
        raise RuntimeError("You cannot use ``update`` on a ModelOutput instance.")

    def __getitem__(self, key):
        return dict(self.items())[key] if isinstance(key, str) else self.to_tuple()[key]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class _CausalLMOutput(_ModelOutput):
    loss: ember.Tensor | None = None
    logits: ember.Tensor = None
    hidden_states: tuple | None = None


@dataclasses.dataclass(frozen=True)
class _Frozen:
    logits: ember.Tensor
    steps: int = 3


class _Net(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.kind = kind

    def forward(self, x):
        h = self.fc(x)
        if self.kind == "model_output":
            return _CausalLMOutput(logits=h, hidden_states=(x, h))
        if self.kind == "frozen":
            return _Frozen(h * 2)
        if self.kind == "defaultdict":
            return defaultdict(list, {"h": h})
        return OrderedDict(h=h, y=h + 1)


@pytest.mark.parametrize("kind", ["model_output", "frozen", "defaultdict", "ordereddict"])
def test_structured_outputs_replay_as_their_own_type(kind):
    """A forward returning an HF-style ModelOutput (an OrderedDict subclass) replayed a plain dict, and one
    returning a dataclass ran every call eagerly (fullgraph raised): both are rebuilt as their type now."""
    ember.manual_seed(0)
    model = _Net(kind).eval()
    compiled = ember.compile(model, fullgraph=True)
    for _ in range(3):
        x = ember.randn(2, 4)
        with ember.no_grad():
            eager, replayed = model(x), compiled(x)
        assert type(replayed) is type(eager)
        if kind == "model_output":
            assert list(replayed.keys()) == ["logits", "hidden_states"] and replayed.loss is None
            assert replayed[0] is replayed.logits and replayed.hidden_states[0] is x
            np.testing.assert_allclose(replayed.logits.numpy(), eager.logits.numpy(), rtol=1e-6, atol=1e-6)
        elif kind == "frozen":
            assert replayed.steps == 3
            np.testing.assert_allclose(replayed.logits.numpy(), eager.logits.numpy(), rtol=1e-6, atol=1e-6)
        elif kind == "defaultdict":
            assert replayed.default_factory is list and replayed["missing"] == []
            np.testing.assert_allclose(replayed["h"].numpy(), eager["h"].numpy(), rtol=1e-6, atol=1e-6)
        else:
            assert list(replayed) == ["h", "y"]
            replayed.move_to_end("h")
            assert list(replayed) == ["y", "h"]
            np.testing.assert_allclose(replayed["y"].numpy(), eager["y"].numpy(), rtol=1e-6, atol=1e-6)
    assert compiled._compiled.captures == 1


def test_changed_default_arguments_recompile():
    """`f.__kwdefaults__["k"] = 4` or a new `__defaults__` replayed the graph captured with the old default
    (torch guards a function's defaults)."""
    def top(x, *, k=2):
        return x.topk(k).values

    def scaled(x, t=1.0):
        return x * t

    x = ember.randn(3, 6)
    for fn, change in ((top, lambda: top.__kwdefaults__.update(k=4)),
                       (scaled, lambda: setattr(scaled, "__defaults__", (0.5,)))):
        compiled = ember.compile(fn)
        compiled(x)
        compiled(x)
        change()
        np.testing.assert_allclose(compiled(x).numpy(), fn(x).numpy())


def test_module_forward_default_changed_recompiles():
    class Net(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    model = Net()
    compiled = ember.compile(model)
    x = ember.ones(2)
    compiled(x)
    Net.forward.__defaults__ = (3.0,)
    np.testing.assert_allclose(compiled(x).numpy(), [3.0, 3.0])


def test_compile_mode_checked_as_torch():
    """An unknown mode was accepted silently, and mode together with options too (torch raises both)."""
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs", None):
        assert ember.compile(lambda x: x + 1, mode=mode)(ember.ones(2)).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="Unrecognized mode=bogus"):
        ember.compile(lambda x: x, mode="bogus")
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ember.compile(lambda x: x, mode="max-autotune", options={"trace": True})


def test_dynamo_aliases():
    """`torch._dynamo.reset()` and `torch._dynamo.config.cache_size_limit = N` had no ember counterpart."""
    import ember._dynamo

    saved = ember.compiler.config.recompile_limit
    try:
        ember._dynamo.config.cache_size_limit = 3
        assert ember.compiler.config.recompile_limit == 3 == ember._dynamo.config.recompile_limit
    finally:
        ember._dynamo.config.recompile_limit = saved
    compiled = ember.compile(lambda x: x * 2)
    compiled(ember.ones(2))
    assert compiled.cache
    ember._dynamo.reset()
    assert not compiled.cache
    assert ember._dynamo.is_compiling() is False


def test_multinomial_sampling_step_compiles_and_draws_anew():
    """multinomial is an op drawing from its generator when it runs (as bernoulli): a compiled sampling step
    has no graph break, and each replay draws what eager draws from the same generator state."""
    F = ember.nn.functional
    step = ember.compile(lambda logits, t, g: ember.multinomial(F.softmax(logits / t, -1), 1, generator=g))
    logits = ember.randn(4, 10)
    compiled_generator, eager_generator = ember.Generator().manual_seed(0), ember.Generator().manual_seed(0)
    for _ in range(4):
        got = step(logits, 0.7, compiled_generator)
        want = ember.multinomial(F.softmax(logits / 0.7, -1), 1, generator=eager_generator)
        assert got.tolist() == want.tolist()
    assert step.captures == 1 and not step.graph_breaks
