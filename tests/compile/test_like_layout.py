"""A *_like made inside a compiled function keeps its input's layout in every replay (the remade tensor's recipe
carries the layout), so in-place draws into it land in memory order as eager's (and torch's) do."""

from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")


def _step(lib, x):
    drawn = lib.empty_like(x).bernoulli_(0.5)
    filled = lib.full_like(x, 3.0)
    return drawn * 2 + lib.zeros_like(x) + filled


@pytest.mark.parametrize("layout", ["transposed", "channels_last"])
def test_like_layouts_replay_as_eager_and_torch(layout):
    if layout == "transposed":
        x = ember.arange(12.0).reshape(4, 3).t()
    else:
        x = ember.arange(120.0).reshape(2, 3, 4, 5).contiguous(memory_format=ember.channels_last)
    compiled = ember.compile(lambda t: _step(ember, t))
    ember.manual_seed(0)
    eager = [_step(ember, x).tolist() for _ in range(3)]
    ember.manual_seed(0)
    replayed = [compiled(x).tolist() for _ in range(3)]
    torch.manual_seed(0)
    reference = torch.from_numpy(x.numpy()).as_strided(tuple(x.shape), tuple(x.stride()))
    expected = [_step(torch, reference).tolist() for _ in range(3)]
    assert replayed == eager == expected
    assert ember.empty_like(x).stride() == x.stride()
