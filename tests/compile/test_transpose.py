"""The tiled transposing copy behind attention's K^T and V^T (ember/_compile/transpose.py)."""

import numpy as np
import pytest

from ember._compile import codegen, transpose

RNG = np.random.default_rng(0)


def _cases():
    qkv = RNG.standard_normal((3, 37, 3 * 40))
    heads_last = qkv[..., 40:80].reshape(3, 37, 5, 8).swapaxes(1, 2)  # a k split from one qkv projection
    contiguous = RNG.standard_normal((2, 3, 19, 33))
    flipped = contiguous[::-1, :, ::-2]  # negative and doubled strides, last dim still contiguous
    return {"heads_last": heads_last, "contiguous": contiguous, "flipped": flipped,
            "float32": heads_last.astype(np.float32)[:, :, 1:], "lastdim_strided": contiguous[..., ::2],
            "3d": contiguous[0]}


@pytest.mark.parametrize("name", list(_cases()))
def test_transposed_is_the_swapped_copy(name):
    array = _cases()[name]
    out = transpose.transposed(array)
    assert out.flags.c_contiguous and out.dtype == array.dtype
    assert np.array_equal(out, array.swapaxes(-1, -2))


@pytest.mark.skipif(codegen.find_compiler() is None, reason="needs a C compiler")
def test_the_c_copy_runs_for_4d_float_arrays(monkeypatch):
    """The C function (not NumPy's copy) handles 4-D float arrays with a contiguous last dim."""
    calls = []
    functions = transpose._library()
    monkeypatch.setattr(transpose, "_functions", [{dtype: (lambda fn: lambda *a: calls.append(1) or fn(*a))(fn)
                                                   for dtype, fn in functions.items()}])
    cases = _cases()
    for name in ("heads_last", "contiguous", "flipped", "float32"):
        assert np.array_equal(transpose.transposed(cases[name]), cases[name].swapaxes(-1, -2))
    assert len(calls) == 4
    transpose.transposed(cases["lastdim_strided"])
    assert len(calls) == 4  # a strided last dim goes to NumPy


def test_without_a_compiler_numpy_copies(monkeypatch):
    monkeypatch.setattr(transpose, "_functions", [None])
    array = _cases()["heads_last"]
    assert np.array_equal(transpose.transposed(array), array.swapaxes(-1, -2))
