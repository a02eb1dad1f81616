"""ember.quasirandom.SobolEngine against torch.quasirandom.SobolEngine."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_DTYPES = {None: (None, None), "float64": (ember.float64, torch.float64), "float32": (ember.float32, torch.float32)}


def _same(ours, theirs) -> None:
    got, expected = ours.numpy(), theirs.numpy()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


def _engines(dimension, scramble=False, seed=None):
    return (ember.quasirandom.SobolEngine(dimension, scramble=scramble, seed=seed),
            torch.quasirandom.SobolEngine(dimension, scramble=scramble, seed=seed))


def _run(ours, theirs, steps) -> None:
    for kind, n, dtype in steps:
        if kind == "ff":
            ours.fast_forward(n)
            theirs.fast_forward(n)
        elif kind == "reset":
            ours.reset()
            theirs.reset()
        elif kind == "base2":
            _same(ours.draw_base2(n), theirs.draw_base2(n))
        else:
            _same(ours.draw(n, dtype=_DTYPES[dtype][0]), theirs.draw(n, dtype=_DTYPES[dtype][1]))
        assert ours.num_generated == theirs.num_generated
        np.testing.assert_array_equal(ours.quasi.numpy(), theirs.quasi.numpy())


_STEPS = [("draw", 1, None), ("draw", 9, None), ("ff", 6, None), ("draw", 16, "float64"), ("ff", 1, None),
          ("draw", 3, "float32"), ("reset", 0, None), ("ff", 3, None), ("draw", 5, None), ("reset", 0, None),
          ("base2", 3, None), ("base2", 3, None)]


@pytest.mark.parametrize("dimension", [1, 2, 7, 50, 1111, 1200])
def test_unscrambled_matches(dimension):
    ours, theirs = _engines(dimension)
    np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
    _run(ours, theirs, _STEPS)


def test_direction_numbers_all_dimensions():
    ours, theirs = _engines(21201)
    np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
    _same(ours.draw(5, dtype=ember.float64), theirs.draw(5, dtype=torch.float64))


@pytest.mark.parametrize("dimension,seed", [(1, 0), (3, 7), (20, 123456), (5, 2**40 + 3), (4, -5)])
def test_scrambled_with_seed_matches(dimension, seed):
    ours, theirs = _engines(dimension, scramble=True, seed=seed)
    np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
    np.testing.assert_array_equal(ours.shift.numpy(), theirs.shift.numpy())
    _run(ours, theirs, _STEPS)


def test_first_point_uses_default_dtype_then_casts():
    ours, theirs = _engines(3, scramble=True, seed=11)
    _same(ours.draw(1, dtype=ember.float64), theirs.draw(1, dtype=torch.float64))  # float32 first point, cast


def test_unseeded_scramble_is_reproducible_and_uniform():
    # unseeded scrambling draws from the default generator, which is torch's: the same points as torch's
    ember.manual_seed(0)
    first = ember.quasirandom.SobolEngine(4, scramble=True).draw(1024)
    torch.manual_seed(0)
    np.testing.assert_array_equal(first.numpy(), torch.quasirandom.SobolEngine(4, scramble=True).draw(1024).numpy())
    ember.manual_seed(0)
    again = ember.quasirandom.SobolEngine(4, scramble=True).draw(1024, dtype=ember.float64)
    np.testing.assert_array_equal(first.numpy(), again.numpy().astype(np.float32))
    points = again.numpy()  # float64: float32 rounds a point just below k/1024 up to it
    assert points.min() >= 0 and points.max() < 1
    # a scrambled (0, m, s)-net: every 1/1024-wide interval of each coordinate holds exactly one point
    for column in points.T:
        np.testing.assert_array_equal(np.sort(np.floor(column * 1024)), np.arange(1024))
    assert abs(points.mean() - 0.5) < 1e-3


def test_out_and_repr():
    ours, theirs = _engines(3, scramble=True, seed=2)
    out_ours, out_theirs = ember.empty(0), torch.empty(0)
    assert ours.draw(4, out=out_ours) is out_ours
    theirs.draw(4, out=out_theirs)
    _same(out_ours, out_theirs)
    assert repr(ours) == repr(theirs) == "SobolEngine(dimension=3, scramble=True, seed=2)"
    assert repr(ember.quasirandom.SobolEngine(2)) == "SobolEngine(dimension=2)"


def _error(build, draw):
    try:
        draw(build())
    except Exception as error:  # noqa: BLE001  (comparing the two libraries' errors)
        return type(error), str(error)
    return None


@pytest.mark.parametrize("case", ["dim0", "dim_big", "half", "long", "base2", "draw0"])
def test_errors(case):
    def run(lib):
        dimension = {"dim0": 0, "dim_big": 21202}.get(case, 2)
        engine = lib.quasirandom.SobolEngine(dimension)
        if case == "half":
            engine.draw(1)
            return engine.draw(3, dtype=lib.float16)
        if case == "long":
            return engine.draw(3, dtype=lib.int64)
        if case == "base2":
            engine.draw(3)
            return engine.draw_base2(2)
        return engine.draw(0)

    expected = _error(lambda: torch, run)
    assert expected is not None
    assert _error(lambda: ember, run) == expected
