"""ember.jit: torch.jit's Python surface without TorchScript (the eager callable is returned)."""

import pytest

import ember
import ember.nn as nn


def test_script_and_trace_return_a_working_callable():
    model = nn.Linear(3, 2)
    x = ember.randn(4, 3)
    scripted = ember.jit.script(model)
    traced = ember.jit.trace(model, (x,))
    assert ember.equal(scripted(x), model(x)) and ember.equal(traced(x), model(x))
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes"):
        ember.jit.trace(model, (ember.randn(4, 5),))  # trace runs the example, as torch's tracer does


def test_decorators_and_helpers_are_eager():
    @ember.jit.ignore
    def helper(x):
        return x + 1

    @ember.jit.ignore(drop=True)
    def dropped(x):
        return x * 2

    assert helper(1) == 2 and dropped(2) == 4
    assert not ember.jit.is_scripting() and not ember.jit.is_tracing()
    assert ember.jit.annotate(list, [1]) == [1]
    assert ember.jit.wait(ember.jit.fork(lambda a, b: a * b, 3, 4)) == 12


def test_torchscript_archives_are_refused_with_the_alternative(tmp_path):
    with pytest.raises(NotImplementedError, match="state_dict"):
        ember.jit.save(nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(NotImplementedError, match="state_dict"):
        ember.jit.load(tmp_path / "m.pt")
