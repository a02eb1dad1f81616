"""The hand-written C loops (ember/_compile/loops.py): attention's K^T / V^T copy, the embedding backward's
row scatter-add."""

import numpy as np
import pytest

import ember
from ember._compile import codegen, loops

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
    out = loops.transposed(array)
    assert out.flags.c_contiguous and out.dtype == array.dtype
    assert np.array_equal(out, array.swapaxes(-1, -2))


@pytest.mark.skipif(codegen.find_compiler() is None, reason="needs a C compiler")
def test_the_c_copy_runs_for_4d_float_arrays(monkeypatch):
    """The C function (not NumPy's copy) handles 4-D float arrays with a contiguous last dim."""
    calls = []
    functions = loops._library()
    monkeypatch.setattr(loops, "_functions", [{key: (lambda fn: lambda *a: calls.append(1) or fn(*a))(fn)
                                               for key, fn in functions.items()}])
    cases = _cases()
    for name in ("heads_last", "contiguous", "flipped", "float32"):
        assert np.array_equal(loops.transposed(cases[name]), cases[name].swapaxes(-1, -2))
    assert len(calls) == 4
    loops.transposed(cases["lastdim_strided"])
    assert len(calls) == 4  # a strided last dim goes to NumPy


def test_without_a_compiler_numpy_copies(monkeypatch):
    monkeypatch.setattr(loops, "_functions", [None])
    array = _cases()["heads_last"]
    assert np.array_equal(loops.transposed(array), array.swapaxes(-1, -2))


def test_add_rows_adds_repeated_rows_in_index_order():
    """Sequential adds in index order: the same bits as adding the rows one at a time in a Python loop."""
    region = RNG.standard_normal((7, 3, 5)).astype(np.float32)
    index = RNG.integers(0, 7, 50)
    values = RNG.standard_normal((50, 3, 5)).astype(np.float32)
    want = region.copy()
    for i, row in zip(index, values):
        want[i] += row
    got = region.copy()
    if not loops.add_rows(got, index, values):
        pytest.skip("no C compiler")
    assert np.array_equal(got, want)


@pytest.mark.parametrize("compiler", [True, False])
def test_embedding_backward_matches_torch(monkeypatch, compiler):
    """An embedding's weight gradient (index_put with accumulate) equals torch's bit for bit with the C loop
    (both add in index order); the sort-and-reduceat path used without a compiler sums groups in another
    order, within float32 rounding.  Negative indices of index_put_ too."""
    import torch

    if not compiler:
        monkeypatch.setattr(loops, "_functions", [None])
    index = RNG.integers(0, 64, (16, 128))
    grad = RNG.standard_normal((16, 128, 32)).astype(np.float32)
    weights = []
    for lib in (torch, ember):
        weight = lib.zeros(64, 32, requires_grad=True)
        lib.nn.functional.embedding(lib.tensor(index), weight).backward(lib.tensor(grad))
        weights.append(weight.grad.numpy())
    exact = compiler and codegen.find_compiler() is not None
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-5, atol=1e-5)
    if exact:
        assert np.array_equal(weights[0], weights[1])
    base = RNG.standard_normal((10, 4)).astype(np.float32)
    rows = RNG.integers(-10, 10, 40)
    values = RNG.standard_normal((40, 4)).astype(np.float32)
    results = [lib.tensor(base).index_put_((lib.tensor(rows),), lib.tensor(values), accumulate=True).numpy()
               for lib in (torch, ember)]
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-6)
    if exact:
        assert np.array_equal(results[1], results[0])  # torch's CPU kernel also adds in index order


@pytest.mark.parametrize("geometry", [
    ((3, 2), (1, 1), ((1, 1), (0, 2)), (1, 1)),
    ((3, 3), (2, 3), ((2, 1), (1, 0)), (2, 1)),
    ((1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1)),
    ((5, 5), (1, 1), ((4, 4), (4, 4)), (1, 1)),  # windows wholly in the padding
    ((2, 3), (3, 1), ((0, 3), (2, 0)), (1, 2)),
])
def test_im2col2d_equals_the_padded_window_copy(monkeypatch, geometry):
    """The C im2col (read from the unpadded input, zeros outside) against conv's NumPy path (a padded copy,
    then a strided-window copy), for float32/float64 and an input with transposed strides."""
    from ember._ops import conv

    kernel, stride, padding, dilation = geometry
    x = RNG.standard_normal((2, 3, 9, 11))
    for array in (x.astype(np.float32), x, x.transpose(0, 1, 3, 2).copy().transpose(0, 1, 3, 2)):
        built = loops.im2col2d(array, kernel, stride, padding, dilation)
        if built is None:
            pytest.skip("no C compiler")
        with monkeypatch.context() as patch:
            patch.setattr(loops, "_functions", [None])
            want = conv._columns(np, array, kernel, stride, padding, dilation)
        assert built[1] == want[1] and np.array_equal(built[0], want[0])


@pytest.mark.parametrize("geometry", [
    ((3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1)),
    ((1, 1), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((3, 2), (2, 3), ((2, 0), (1, 2)), (2, 1)),
    ((5, 5), (1, 1), ((4, 4), (4, 4)), (1, 1)),
])
def test_col2im2d_equals_numpys_strided_adds(monkeypatch, geometry):
    """col2im (a strided convolution's input gradient): the C loop adds in NumPy's kernel-offset order, so
    the sums are the same bits."""
    from ember._ops import conv

    kernel, stride, padding, dilation = geometry
    shape = (2, 3, 9, 11)
    out = [(shape[2 + i] + sum(padding[i]) - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(2)]
    for dtype in (np.float32, np.float64):
        cols = RNG.standard_normal((2, 3 * kernel[0] * kernel[1], out[0] * out[1])).astype(dtype)
        added = loops.col2im2d(cols, shape, kernel, stride, padding, dilation, out)
        if added is None:
            pytest.skip("no C compiler")
        with monkeypatch.context() as patch:
            patch.setattr(loops, "_functions", [None])
            want = conv._col2im(np, cols, shape, kernel, stride, padding, dilation, out)
        assert np.array_equal(added, want)


@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_backward_from_saved_statistics(monkeypatch, affine):
    """The C batch-norm backward (NCHW in place, the forward's mean and rstd) against a float64 reference and
    against the generated kernel that recomputes the statistics: as accurate, within float32 rounding."""
    from ember.nn import _functional_norm as norm

    x = RNG.standard_normal((16, 8, 16, 10)).astype(np.float32) * 3 + 1  # >= native.MIN_ELEMENTS: kernels
    g = RNG.standard_normal(x.shape).astype(np.float32)
    weight = RNG.standard_normal((1, 8, 1, 1)).astype(np.float32) if affine else None
    bias = np.zeros((1, 8, 1, 1), np.float32) if affine else None
    axes = (0, 2, 3)
    _, mean, rstd = norm._normalize_impl(np, x, weight, bias, axes, 1e-5)
    got = norm._norm_grad_impl(np, x, weight, bias, g, mean, rstd, axes, 1e-5)
    if loops.batch_norm_backward(x, g, mean, rstd, weight) is None:
        pytest.skip("no C compiler")
    with monkeypatch.context() as patch:
        patch.setattr(loops, "_functions", [None])
        generated = norm._norm_grad_impl(np, x, weight, bias, g, mean, rstd, axes, 1e-5)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    xhat = (x64 - x64.mean(axes, keepdims=True)) / np.sqrt(x64.var(axes, keepdims=True) + 1e-5)
    count = x.size / x.shape[1]
    scale = (weight if affine else 1.0) / np.sqrt(x64.var(axes, keepdims=True) + 1e-5)
    want = scale * (g64 - g64.sum(axes, keepdims=True) / count - xhat * (g64 * xhat).sum(axes, keepdims=True) / count)
    for result in (got, generated):
        np.testing.assert_allclose(result[0], want, rtol=0, atol=2e-6 * np.abs(want).max())
    if affine:
        np.testing.assert_allclose(got[1], (g64 * xhat).sum(axes, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(got[2], g64.sum(axes, keepdims=True), rtol=1e-5, atol=1e-4)
        assert got[1].shape == weight.shape and got[2].shape == bias.shape


def test_batch_norm_forward_matches_the_generated_kernel(monkeypatch):
    """The C batch-norm forward (NCHW in place, channels split over threads) gives the generated channel
    kernel's values: the same bits where a sample's plane is one 1024-element block as the kernel's, float
    rounding otherwise; one thread or two, the same bits."""
    from ember.nn import _functional_norm as norm

    for shape in ((16, 6, 32, 32), (8, 5, 9, 11)):  # the first is large enough to split over two threads
        x = (RNG.standard_normal(shape) * 2 + 0.5).astype(np.float32)
        weight = RNG.standard_normal((1, shape[1], 1, 1)).astype(np.float32)
        bias = RNG.standard_normal((1, shape[1], 1, 1)).astype(np.float32)
        if loops.batch_norm_forward(x, weight, bias, 1e-5) is None:
            pytest.skip("no C compiler")
        runs = []
        for threads in (1, 2):
            with monkeypatch.context() as patch:
                patch.setattr(ember._runtime, "get_num_threads", lambda: threads)
                runs.append(norm._normalize_impl(np, x, weight, bias, (0, 2, 3), 1e-5))
        with monkeypatch.context() as patch:
            patch.setattr(loops, "_functions", [None])
            generated = norm._normalize_impl(np, x, weight, bias, (0, 2, 3), 1e-5)
        for ours, one_thread, theirs in zip(runs[1], runs[0], generated):
            assert ours.shape == theirs.shape and np.array_equal(ours, one_thread)
            if shape[2] * shape[3] == 1024:
                assert np.array_equal(ours, theirs)
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)
