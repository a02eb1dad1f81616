"""Functional RNN ops (ember/_ops/rnn_ops.py), low-level conv / pool / grid ATen ops (aten_nn_aliases.py),
torch.cond / torch.while_loop (control_flow.py), runtime knobs and the storage-related Tensor methods
(tensor_storage.py) against real PyTorch: values, shapes, dtypes, gradients and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(11)


def _both(*arrays, grad=True):
    """The same float64 data as (ember tensors, torch tensors), leaves requiring grad when `grad`."""
    mine = [ember.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    return mine, theirs


def _assert_same(mine, theirs, tolerance=1e-10):
    assert tuple(mine.shape) == tuple(theirs.shape)
    assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=tolerance, atol=tolerance)


def _backward_both(mine_outputs, theirs_outputs):
    """Backpropagate the same random weighting of every output through both libraries."""
    weights = [_RNG.standard_normal(tuple(t.shape)) for t in theirs_outputs]
    sum((m * ember.tensor(w)).sum() for m, w in zip(mine_outputs, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(theirs_outputs, weights)).backward()


def _assert_grads(mine_leaves, theirs_leaves, tolerance=1e-9):
    for m, t in zip(mine_leaves, theirs_leaves):
        assert (m.grad is None) == (t.grad is None)
        if t.grad is not None:
            np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=tolerance, atol=tolerance)


def _same_error(call_mine, call_theirs, error=RuntimeError, exact=True):
    with pytest.raises(error) as theirs:
        call_theirs()
    with pytest.raises(error) as mine:
        call_mine()
    if exact:  # messages that print a tensor or dtype name ember's module, torch theirs
        assert str(mine.value).replace("ember", "torch") == str(theirs.value)
    return str(mine.value)


# ---------------------------------------------------------------- functional RNNs

_RNN_MODULES = {"lstm": (torch.nn.LSTM, {}), "gru": (torch.nn.GRU, {}),
                "rnn_tanh": (torch.nn.RNN, {"nonlinearity": "tanh"}),
                "rnn_relu": (torch.nn.RNN, {"nonlinearity": "relu"})}


def _rnn_case(name, bidirectional, bias=True, num_layers=2, proj_size=0):
    module_class, extra = _RNN_MODULES[name]
    if proj_size:
        extra = dict(extra, proj_size=proj_size)
    module = module_class(4, 5, num_layers, bias=bias, bidirectional=bidirectional, **extra).double()
    params = [p.detach().numpy().copy() for p in module._flat_weights]
    layers = num_layers * (2 if bidirectional else 1)
    h0 = _RNG.standard_normal((layers, 3, proj_size or 5))
    c0 = _RNG.standard_normal((layers, 3, 5))
    return params, h0, c0


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_functional_rnn_values_and_grads(name, bidirectional, batch_first, bias):
    params, h0, c0 = _rnn_case(name, bidirectional, bias)
    x = _RNG.standard_normal((3, 6, 4) if batch_first else (6, 3, 4))
    (mx, mh, mc, *mp), (tx, th, tc, *tp) = _both(x, h0, c0, *params)
    mine_hx, theirs_hx = ((mh, mc), (th, tc)) if name == "lstm" else (mh, th)
    mine = getattr(ember, name)(mx, mine_hx, mp, bias, 2, 0.0, False, bidirectional, batch_first)
    theirs = getattr(torch, name)(tx, theirs_hx, tp, bias, 2, 0.0, False, bidirectional, batch_first)
    assert isinstance(mine, tuple) and len(mine) == len(theirs) == (3 if name == "lstm" else 2)
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine, theirs)
    _assert_grads([mx, mh, mc, *mp], [tx, th, tc, *tp])


def test_functional_lstm_with_projections():
    params, h0, c0 = _rnn_case("lstm", True, proj_size=2)
    x = _RNG.standard_normal((6, 3, 4))
    (mx, mh, mc, *mp), (tx, th, tc, *tp) = _both(x, h0, c0, *params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "LSTM with projections is not supported with oneDNN"
        theirs = torch.lstm(tx, (th, tc), tp, True, 2, 0.0, False, True, False)
    mine = ember.lstm(mx, (mh, mc), mp, True, 2, 0.0, False, True, False)
    assert tuple(mine[0].shape) == (6, 3, 4) and tuple(mine[1].shape) == (4, 3, 2)
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine, theirs)
    _assert_grads([mx, mh, mc, *mp], [tx, th, tc, *tp])


@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_functional_rnn_packed_overload(name, bidirectional):
    params, h0, c0 = _rnn_case(name, bidirectional)
    batch_sizes = [3, 3, 2, 1]
    data = _RNG.standard_normal((sum(batch_sizes), 4))
    (md, mh, mc, *mp), (td, th, tc, *tp) = _both(data, h0, c0, *params)
    mine_hx, theirs_hx = ((mh, mc), (th, tc)) if name == "lstm" else (mh, th)
    mine = getattr(ember, name)(md, ember.tensor(batch_sizes), mine_hx, mp, True, 2, 0.0, False, bidirectional)
    theirs = getattr(torch, name)(td, torch.tensor(batch_sizes), theirs_hx, tp, True, 2, 0.0, False, bidirectional)
    assert tuple(mine[0].shape) == (9, 10 if bidirectional else 5)
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine, theirs)
    _assert_grads([md, mh, mc, *mp], [td, th, tc, *tp])


def test_functional_rnn_keywords_and_module_agreement():
    module = ember.nn.GRU(4, 5, 2)
    x = ember.randn(6, 3, 4)
    h0 = ember.randn(2, 3, 5)
    output, h_n = ember.gru(input=x, hx=h0, params=module._flat_weights, has_biases=True, num_layers=2, dropout=0.0,
                            train=False, bidirectional=False, batch_first=False)
    expected, expected_h = module(x, h0)
    np.testing.assert_allclose(output.detach().numpy(), expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(h_n.detach().numpy(), expected_h.detach().numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        ember.gru(x, h0, module._flat_weights, True, 2, 0.0, False, False)


def test_functional_rnn_errors():
    params, h0, c0 = _rnn_case("lstm", False, num_layers=1)
    x = _RNG.standard_normal((6, 3, 4))
    (mx, mh, mc, *mp), (tx, th, tc, *tp) = _both(x, h0, c0, *params, grad=False)
    _same_error(lambda: ember.lstm(mx, (mh,), mp, True, 1, 0.0, False, False, False),
                lambda: torch.lstm(tx, (th,), tp, True, 1, 0.0, False, False, False))
    _same_error(lambda: ember.lstm(mx, (mh, mc), mp[:-1], True, 1, 0.0, False, False, False),
                lambda: torch.lstm(tx, (th, tc), tp[:-1], True, 1, 0.0, False, False, False))
    _same_error(lambda: ember.lstm(mx, (mh, mc), mp, True, 2, 0.0, False, False, False),
                lambda: torch.lstm(tx, (th, tc), tp, True, 2, 0.0, False, False, False))
    _same_error(lambda: ember.lstm(mx, (mh, mc), mp, True, 1, 0.0, False, True, False),
                lambda: torch.lstm(tx, (th, tc), tp, True, 1, 0.0, False, True, False))


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_rnn_cells_values_and_grads(name, bias):
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)
    arrays = [_RNG.standard_normal(shape) for shape in ((3, 4), (3, 5), (3, 5), (gates * 5, 4), (gates * 5, 5),
                                                         (gates * 5,), (gates * 5,))]
    (mx, mh, mc, *mw), (tx, th, tc, *tw) = _both(*arrays)
    if not bias:
        mw, tw = mw[:2], tw[:2]
    mine_hx, theirs_hx = ((mh, mc), (th, tc)) if name == "lstm_cell" else (mh, th)
    mine = getattr(ember, name)(mx, mine_hx, *mw)
    theirs = getattr(torch, name)(tx, theirs_hx, *tw)
    mine, theirs = (mine, theirs) if name == "lstm_cell" else ((mine,), (theirs,))
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine, theirs)
    _assert_grads([mx, mh, mc, *mw], [tx, th, tc, *tw])


def _cell_error_cases():
    i, h = _RNG.standard_normal((3, 4)), _RNG.standard_normal((3, 5))

    def w(*shape):
        return _RNG.standard_normal(shape)

    return [
        ("lstm_cell", [i, (h, h), w(20, 4), w(20, 6)]), ("lstm_cell", [i, (h, h), w(20, 4), w(21, 5)]),
        ("lstm_cell", [i, (h, h[:, :4]), w(20, 4), w(20, 5)]), ("lstm_cell", [i, (h,), w(20, 4), w(20, 5)]),
        ("lstm_cell", [i[:, :3], (h, h), w(21, 4), w(21, 5)]), ("lstm_cell", [i, (h[:2], h), w(20, 4), w(20, 5)]),
        ("gru_cell", [i, h, w(15, 4), w(15, 6)]), ("gru_cell", [i, h, w(15, 4), w(16, 5)]),
        ("gru_cell", [i[:, :3], h, w(16, 4), w(16, 5)]), ("gru_cell", [i, h[:2], w(16, 4), w(16, 5)]),
        ("rnn_tanh_cell", [i, h, w(5, 4), w(5, 6)]), ("rnn_tanh_cell", [i, h, w(5, 4), w(6, 5)]),
        ("rnn_relu_cell", [i[:, :3], h, w(6, 4), w(6, 5)]), ("rnn_relu_cell", [i[:, :3], h[:2], w(5, 4), w(5, 5)]),
        ("rnn_relu_cell", [i, h[:, :4], w(5, 4), w(5, 5)]),
    ]


@pytest.mark.parametrize("case", range(15))
def test_rnn_cell_errors_match_torch_in_order(case):
    name, args = _cell_error_cases()[case]

    def convert(lib):
        return [tuple(lib.tensor(a) for a in arg) if isinstance(arg, tuple) else lib.tensor(arg) for arg in args]

    _same_error(lambda: getattr(ember, name)(*convert(ember)), lambda: getattr(torch, name)(*convert(torch)))


def test_rnn_cell_type_and_rank_errors():
    i, h = np.ones((3, 4)), np.ones((3, 5))
    _same_error(lambda: ember.lstm_cell(ember.tensor(i), ember.tensor(h), ember.ones(20, 4), ember.ones(20, 5)),
                lambda: torch.lstm_cell(torch.tensor(i), torch.tensor(h), torch.ones(20, 4), torch.ones(20, 5)),
                TypeError)
    _same_error(lambda: ember.gru_cell(ember.ones(4), ember.ones(5), ember.ones(15, 4), ember.ones(15, 5)),
                lambda: torch.gru_cell(torch.ones(4), torch.ones(5), torch.ones(15, 4), torch.ones(15, 5)),
                IndexError)


def test_nn_cells_share_the_functional_checks():
    cell = ember.nn.GRUCell(4, 5)
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 6, expected 5"):
        cell(ember.ones(3, 4), ember.ones(3, 6))


# ---------------------------------------------------------------- conv / pool / grid ATen ops


def test_max_pool1d_with_indices():
    x = _RNG.standard_normal((2, 3, 9))
    for args in [(3,), (3, 2, 1, 1, True), (3, [], 1), (2, 1, 0, 2)]:
        (mx,), (tx,) = _both(x)
        mine = ember.max_pool1d_with_indices(mx, *args)
        theirs = torch.max_pool1d_with_indices(tx, *args)
        _assert_same(mine[0], theirs[0])
        np.testing.assert_array_equal(mine[1].numpy(), theirs[1].numpy())
        assert str(mine[1].dtype).endswith("int64")
        _backward_both(mine[:1], theirs[:1])
        _assert_grads([mx], [tx])


def test_native_channel_shuffle():
    x = _RNG.standard_normal((2, 6, 2, 3))
    (mx,), (tx,) = _both(x)
    _assert_same(ember.native_channel_shuffle(mx, 3), torch.native_channel_shuffle(tx, 3))
    _same_error(lambda: ember.native_channel_shuffle(ember.ones(2, 6, 3), 0),
                lambda: torch.native_channel_shuffle(torch.ones(2, 6, 3), 0))
    _same_error(lambda: ember.native_channel_shuffle(ember.ones(2, 6), 3),
                lambda: torch.native_channel_shuffle(torch.ones(2, 6), 3))
    _same_error(lambda: ember.native_channel_shuffle(ember.ones(2, 6, 3), 4),
                lambda: torch.native_channel_shuffle(torch.ones(2, 6, 3), 4))


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5])
def test_embedding_renorm_(norm_type):
    weight = _RNG.standard_normal((6, 3)) * 2
    weight[4] *= 0.01  # a named row already within max_norm stays exactly as it was
    indices = [0, 2, 2, 4]
    mine, theirs = ember.tensor(weight), torch.tensor(weight)
    assert ember.embedding_renorm_(mine, ember.tensor(indices), 1.0, norm_type) is mine
    torch.embedding_renorm_(theirs, torch.tensor(indices), 1.0, norm_type)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    mine32, theirs32 = ember.tensor(weight, dtype=ember.float32), torch.tensor(weight, dtype=torch.float32)
    ember.embedding_renorm_(mine32, ember.tensor(indices, dtype=ember.int32), 0.9, norm_type)
    torch.embedding_renorm_(theirs32, torch.tensor(indices, dtype=torch.int32), 0.9, norm_type)
    # float32 p-norms may round differently in the last bit; the scaling rule is what must agree
    np.testing.assert_allclose(mine32.numpy(), theirs32.numpy(), rtol=1e-6, atol=0)


def test_embedding_max_norm_uses_the_same_renorm():
    weight = _RNG.standard_normal((6, 3)) * 2
    mine, theirs = ember.tensor(weight), torch.tensor(weight)
    ember.nn.functional.embedding(ember.tensor([1, 3]), mine, max_norm=1.5)
    torch.nn.functional.embedding(torch.tensor([1, 3]), theirs, max_norm=1.5)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_embedding_renorm_errors():
    _same_error(lambda: ember.embedding_renorm_(ember.ones(5), ember.tensor([0]), 1.0, 2.0),
                lambda: torch.embedding_renorm_(torch.ones(5), torch.tensor([0]), 1.0, 2.0))
    _same_error(lambda: ember.embedding_renorm_(ember.ones(5, 3), ember.tensor([0.0]), 1.0, 2.0),
                lambda: torch.embedding_renorm_(torch.ones(5, 3), torch.tensor([0.0]), 1.0, 2.0))
    _same_error(lambda: ember.embedding_renorm_(ember.ones(5, 3, requires_grad=True), ember.tensor([0]), 1.0, 2.0),
                lambda: torch.embedding_renorm_(torch.ones(5, 3, requires_grad=True), torch.tensor([0]), 1.0, 2.0))


@pytest.mark.parametrize("pad", [0, 1, 2, -1])
def test_conv_tbc(pad):
    arrays = [_RNG.standard_normal(s) for s in ((7, 2, 3), (3, 3, 4), (4,))]
    mine_in, theirs_in = _both(*arrays)
    mine, theirs = ember.conv_tbc(*mine_in, pad), torch.conv_tbc(*theirs_in, pad)
    _assert_same(mine, theirs)
    _backward_both([mine], [theirs])
    _assert_grads(mine_in, theirs_in)


def test_conv_tbc_errors():
    i, w, b = np.ones((7, 2, 3)), np.ones((3, 3, 4)), np.ones(4)
    cases = [(i[0], w, b), (i, w[0], b), (i, w, b[None]), (i, w[:, :2], b), (i, w, b[:3]), (i, np.ones((9, 3, 4)), b)]
    for args in cases:
        _same_error(lambda: ember.conv_tbc(*[ember.tensor(a) for a in args]),
                    lambda: torch.conv_tbc(*[torch.tensor(a) for a in args]))
    _same_error(lambda: ember.conv_tbc(ember.tensor(i), ember.tensor(w), None),
                lambda: torch.conv_tbc(torch.tensor(i), torch.tensor(w), None), TypeError)


_CONVOLUTIONS = [
    ((2, 4, 9), (6, 4, 3), [1], [0], [1], False, [0], 1),
    ((2, 4, 9, 9), (6, 2, 3, 3), [2], [1], [1], False, [0], 2),
    ((2, 4, 9, 9), (6, 2, 3, 3), [2, 1], [1, 0], [2, 1], False, [0, 0], 2),
    ((2, 4, 5, 5, 5), (6, 4, 3, 3, 3), [1], [0], [1], False, [0], 1),
    ((2, 4, 9, 9), (4, 3, 3, 3), [2, 2], [1, 1], [1, 1], True, [1, 0], 2),
    ((2, 4, 5, 5, 5), (4, 2, 3, 3, 3), [1], [0], [1], True, [0], 1),
    ((2, 4, 7), (4, 3, 3), [3], [1], [2], True, [1], 1),
]


@pytest.mark.parametrize("case", range(len(_CONVOLUTIONS)))
@pytest.mark.parametrize("bias", [True, False])
def test_convolution(case, bias):
    input_shape, weight_shape, stride, padding, dilation, transposed, output_padding, groups = _CONVOLUTIONS[case]
    out_channels = weight_shape[1] * groups if transposed else weight_shape[0]
    arrays = [_RNG.standard_normal(input_shape), _RNG.standard_normal(weight_shape), _RNG.standard_normal(out_channels)]
    mine_in, theirs_in = _both(*arrays)
    mine_bias, theirs_bias = (mine_in[2], theirs_in[2]) if bias else (None, None)
    mine = ember.convolution(mine_in[0], mine_in[1], mine_bias, stride, padding, dilation, transposed,
                             output_padding, groups)
    theirs = torch.convolution(theirs_in[0], theirs_in[1], theirs_bias, stride, padding, dilation, transposed,
                               output_padding, groups)
    _assert_same(mine, theirs)
    _backward_both([mine], [theirs])
    _assert_grads(mine_in, theirs_in)


def test_convolution_ignores_output_padding_when_not_transposed():
    x, w = _RNG.standard_normal((2, 4, 9, 9)), _RNG.standard_normal((6, 2, 3, 3))
    _assert_same(ember.convolution(ember.tensor(x), ember.tensor(w), None, [1], [0], [1], False, [5, 5], 2),
                 torch.convolution(torch.tensor(x), torch.tensor(w), None, [1], [0], [1], False, [5, 5], 2))


def test_convolution_errors():
    x, w = np.ones((2, 4, 9, 9)), np.ones((6, 2, 3, 3))

    def both(*rest, x=x, w=w):
        return (lambda: ember.convolution(ember.tensor(x), ember.tensor(w), None, *rest),
                lambda: torch.convolution(torch.tensor(x), torch.tensor(w), None, *rest))

    _same_error(*both(1, [0, 0], [1, 1], False, [0, 0], 2), TypeError)
    _same_error(*both([1, 1], [0, 0], [1, 1], False, [0, 0], 2, x=x[0]))
    _same_error(*both([1, 1, 1], [0, 0], [1, 1], False, [0, 0], 2))
    _same_error(*both([1, 1], [0, 0], [1, 1], False, [], 2))
    _same_error(*both([1, 1], [-1, 0], [1, 1], False, [0, 0], 2))
    _same_error(*both([1, 1], [0, 0], [1, 1], False, [0, 0], 1))


_GRIDS = {2: ((2, 3, 5, 6), (2, 4, 7, 2)), 3: ((2, 3, 4, 5, 6), (2, 3, 4, 5, 3))}


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_samplers(dims, interpolation, padding, align_corners):
    input_shape, grid_shape = _GRIDS[dims]
    image, grid = _RNG.standard_normal(input_shape), _RNG.uniform(-1.2, 1.2, grid_shape)
    grad = (0, 1) if interpolation == 0 else (0,)
    for name in (f"grid_sampler_{dims}d", "grid_sampler"):
        mine_in, theirs_in = _both(image, grid)
        mine = getattr(ember, name)(*mine_in, interpolation, padding, align_corners)
        theirs = getattr(torch, name)(*theirs_in, interpolation, padding, align_corners)
        _assert_same(mine, theirs)
        _backward_both([mine], [theirs])
        _assert_grads([mine_in[i] for i in grad], [theirs_in[i] for i in grad])


def test_grid_sampler_errors():
    x2, g2 = np.ones((2, 3, 5, 6)), np.zeros((2, 4, 7, 2))
    x3, g3 = np.ones((2, 3, 4, 5, 6)), np.zeros((2, 3, 4, 7, 3))
    cases = [("grid_sampler_2d", x3, g3, 0), ("grid_sampler_3d", x2, g2, 0), ("grid_sampler_3d", x3, g3, 2),
             ("grid_sampler_2d", x2, g2[:1], 0), ("grid_sampler_2d", x2, g2[..., :1], 0)]
    for name, x, g, mode in cases:
        _same_error(lambda: getattr(ember, name)(ember.tensor(x), ember.tensor(g), mode, 0, False),
                    lambda: getattr(torch, name)(torch.tensor(x), torch.tensor(g), mode, 0, False))


@pytest.mark.parametrize("size", [[2, 3, 5, 6], [2, 3, 4, 5, 6]])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_generator(size, align_corners):
    theta = _RNG.standard_normal((2, len(size) - 2, len(size) - 1))
    (mine_theta,), (theirs_theta,) = _both(theta)
    mine = ember.affine_grid_generator(mine_theta, size, align_corners)
    theirs = torch.affine_grid_generator(theirs_theta, size, align_corners)
    _assert_same(mine, theirs)
    _backward_both([mine], [theirs])
    _assert_grads([mine_theta], [theirs_theta])


def test_affine_grid_generator_errors():
    theta, theta3 = np.ones((2, 2, 3)), np.ones((2, 3, 4))
    for t, size in [(theta, [2, 3, 5]), (theta, [2, 3, 4, 5, 6]), (theta, [3, 3, 5, 6]), (theta3, [2, 3, 5, 6])]:
        _same_error(lambda: ember.affine_grid_generator(ember.tensor(t), size, False),
                    lambda: torch.affine_grid_generator(torch.tensor(t), size, False))
    _same_error(lambda: ember.affine_grid_generator(ember.tensor(theta), [2, 3, 5, 6], None),
                lambda: torch.affine_grid_generator(torch.tensor(theta), [2, 3, 5, 6], None), TypeError)


# ---------------------------------------------------------------- torch.cond / torch.while_loop


def test_cond_picks_the_branch():
    x = _RNG.standard_normal(3)
    for pred in (True, False, 1, 0.0):
        _assert_same(ember.cond(pred, lambda a: a.cos(), lambda a: a.sin(), (ember.tensor(x),)),
                     torch.cond(pred, lambda a: a.cos(), lambda a: a.sin(), (torch.tensor(x),)))
    for pred in ([True], [False], [[1.0]], 0):
        _assert_same(ember.cond(ember.tensor(pred), lambda a: a.cos(), lambda a: a.sin(), [ember.tensor(x)]),
                     torch.cond(torch.tensor(pred), lambda a: a.cos(), lambda a: a.sin(), [torch.tensor(x)]))


def test_cond_structures_and_gradients():
    x = _RNG.standard_normal(3)
    (mx,), (tx,) = _both(x)
    mine = ember.cond(ember.tensor(True), lambda d: [d["k"] * d["k"], d["k"] + 1], lambda d: [d["k"], d["k"]],
                      ({"k": mx},))
    theirs = torch.cond(torch.tensor(True), lambda d: [d["k"] * d["k"], d["k"] + 1],
                        lambda d: [d["k"].sin(), d["k"].cos()], ({"k": tx},))
    assert isinstance(mine, list) and isinstance(theirs, list)
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine, theirs)
    _assert_grads([mx], [tx])
    x_mine = ember.tensor(x)
    assert ember.cond(True, lambda a: a, lambda a: a, (x_mine,)) is x_mine  # a constant pred just calls the branch


def test_cond_errors():
    x = np.arange(3.0)

    def both(pred, true_fn, false_fn, operands, convert=True):
        mine_ops = tuple(ember.tensor(o) for o in operands) if convert else operands
        theirs_ops = tuple(torch.tensor(o) for o in operands) if convert else operands
        return (lambda: ember.cond(pred(ember), true_fn, false_fn, mine_ops),
                lambda: torch.cond(pred(torch), true_fn, false_fn, theirs_ops))

    _same_error(*both(lambda lib: "s", lambda a: a, lambda a: a, (x,)))
    _same_error(*both(lambda lib: None, lambda a: a, lambda a: a, (x,)))
    _same_error(*both(lambda lib: lib.tensor([True, False]), lambda a: a, lambda a: a, (x,)))
    _same_error(*both(lambda lib: lib.tensor(True), 3, lambda a: a, (x,)))
    _same_error(lambda: ember.cond(ember.tensor(True), lambda a: a, lambda a: a, ember.tensor(x)),
                lambda: torch.cond(torch.tensor(True), lambda a: a, lambda a: a, torch.tensor(x)))
    _same_error(lambda: ember.cond(ember.tensor(True), lambda a, b: a, lambda a, b: a, (ember.tensor(x), 2)),
                lambda: torch.cond(torch.tensor(True), lambda a, b: a, lambda a, b: a, (torch.tensor(x), 2)))
    # what dynamo refuses when it traces the branches: aliasing, non-int constants, input mutation under grad
    for branch in (lambda a: a, lambda a: a[0], lambda a: None, lambda a: a.add_(1) + 0):
        with pytest.raises(RuntimeError):
            torch.cond(torch.tensor(True), branch, lambda a: a.sin(), (torch.tensor(x),))
        with pytest.raises(RuntimeError):
            ember.cond(ember.tensor(True), branch, lambda a: a.sin(), (ember.tensor(x),))
    mine, theirs = ember.tensor(x), torch.tensor(x)
    with ember.no_grad():  # in inference a branch may mutate its inputs, as torch's
        ember.cond(ember.tensor(True), lambda a: a.add_(1) + 0, lambda a: a + 0, (mine,))
    with torch.no_grad():
        torch.cond(torch.tensor(True), lambda a: a.add_(1) + 0, lambda a: a + 0, (theirs,))
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_while_loop_values_and_gradients():
    x = _RNG.standard_normal(2)
    (mx,), (tx,) = _both(x)
    mine = ember.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v.sin()), (ember.tensor(0), mx))
    theirs = torch.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * v.sin()), (torch.tensor(0), tx))
    assert isinstance(mine, tuple) and len(mine) == 2
    for m, t in zip(mine, theirs):
        _assert_same(m, t)
    _backward_both(mine[1:], theirs[1:])
    _assert_grads([mx], [tx])
    mine = ember.while_loop(lambda i, v: 2 * i < v.shape[0] + 3, lambda i, v: (i + 1, v + i), (0, ember.tensor(x)))
    theirs = torch.while_loop(lambda i, v: 2 * i < v.shape[0] + 3, lambda i, v: (i + 1, v + i), (0, torch.tensor(x)))
    assert mine[0] == theirs[0] == 3
    _assert_same(mine[1], theirs[1])
    mine = ember.while_loop(lambda d: d["i"] < 3, lambda d: ({"i": d["i"] + 1},), ({"i": ember.tensor(0)},))
    theirs = torch.while_loop(lambda d: d["i"] < 3, lambda d: ({"i": d["i"] + 1},), ({"i": torch.tensor(0)},))
    _assert_same(mine[0]["i"], theirs[0]["i"])


def test_while_loop_without_iterations_returns_copies():
    start = ember.tensor([1.0, 2.0])
    result = ember.while_loop(lambda v: v.sum() < 0, lambda v: (v + 1,), (start,))
    theirs = torch.while_loop(lambda v: v.sum() < 0, lambda v: (v + 1,), (torch.tensor([1.0, 2.0]),))
    assert isinstance(result, tuple) and isinstance(theirs, tuple)
    _assert_same(result[0], theirs[0])
    assert result[0] is not start and result[0].data_ptr() != start.data_ptr()


def test_while_loop_errors():
    def both(cond_fn, body_fn, carried):
        return (lambda: ember.while_loop(cond_fn, body_fn, carried(ember)),
                lambda: torch.while_loop(cond_fn, body_fn, carried(torch)))

    _same_error(*both(lambda i: i < 3, 3, lambda lib: (lib.tensor(0),)))
    _same_error(*both(lambda i: i < 3, lambda i: (i + 1,), lambda lib: (1.5,)), AssertionError, exact=False)
    # errors dynamo raises while tracing: cond_fn's result, the body's metadata, aliasing, float outputs
    for cond_fn, body_fn, carried in [
        (lambda i: i + 3, lambda i: (i + 1,), lambda lib: (lib.tensor(0),)),
        (lambda i: i < 3, lambda i: (i + 1,), lambda lib: (lib.tensor([0]),)),
        (lambda i: i < 3, lambda i: (i + 1.5,), lambda lib: (lib.tensor(0),)),
        (lambda i: i < 3, lambda i: (i,), lambda lib: (lib.tensor(0),)),
        (lambda i, j: i < 3, lambda i, j: (i + 1, j * 1.0), lambda lib: (lib.tensor(0), 5)),
    ]:
        _same_error(*both(cond_fn, body_fn, carried), exact=False)


# ---------------------------------------------------------------- runtime knobs


def test_get_device_module():
    expected = ember.cuda if ember.cuda.is_available() else ember.cpu
    assert ember.get_device_module() is expected
    assert ember.get_device_module("cpu") is ember.cpu and ember.get_device_module(ember.device("cpu")) is ember.cpu
    assert ember.get_device_module("cuda:1") is ember.cuda
    assert torch.get_device_module("cpu").__name__.replace("torch", "ember") == ember.cpu.__name__
    assert ember.cpu.current_device() == torch.cpu.current_device() == "cpu"
    assert ember.cpu.device_count() == torch.cpu.device_count() and ember.cpu.is_available()
    _same_error(lambda: ember.get_device_module(3), lambda: torch.get_device_module(3))
    _same_error(lambda: ember.get_device_module("meta"), lambda: torch.get_device_module("meta"))


def test_init_num_threads_and_is_distributed():
    assert ember.init_num_threads() is None and torch.init_num_threads() is None
    with pytest.raises(TypeError):
        ember.init_num_threads(3)
    assert ember.is_distributed(ember.ones(2)) is torch.is_distributed(torch.ones(2)) is False
    assert ember.ones(2).is_distributed() is False
    _same_error(lambda: ember.is_distributed(3), lambda: torch.is_distributed(3), TypeError)


def test_deterministic_debug_mode():
    try:
        for mode in (0, 1, 2, "default", "warn", "error", True):
            ember.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert ember.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
            assert ember.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
            assert (ember.is_deterministic_algorithms_warn_only_enabled()
                    == torch.is_deterministic_algorithms_warn_only_enabled())
        ember.use_deterministic_algorithms(True, warn_only=True)
        assert ember.get_deterministic_debug_mode() == 1
        _same_error(lambda: ember.set_deterministic_debug_mode(3), lambda: torch.set_deterministic_debug_mode(3))
        _same_error(lambda: ember.set_deterministic_debug_mode("x"), lambda: torch.set_deterministic_debug_mode("x"))
        _same_error(lambda: ember.set_deterministic_debug_mode(1.0), lambda: torch.set_deterministic_debug_mode(1.0),
                    TypeError)
    finally:
        ember.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


def test_deprecated_autocast_setters():
    cpu_dtype, gpu_dtype = ember.get_autocast_dtype("cpu"), ember.get_autocast_dtype("cuda")
    try:
        with pytest.warns(DeprecationWarning, match=r"set_autocast_cpu_dtype\(dtype\) is deprecated"):
            ember.set_autocast_cpu_dtype(ember.float16)
        assert ember.get_autocast_dtype("cpu") is ember.float16
        with pytest.warns(DeprecationWarning, match=r"set_autocast_gpu_dtype\(dtype\) is deprecated"):
            ember.set_autocast_gpu_dtype(ember.bfloat16)
        assert ember.get_autocast_gpu_dtype() is ember.bfloat16
        with pytest.warns(DeprecationWarning, match=r"set_autocast_cpu_enabled\(enabled\) is deprecated"):
            ember.set_autocast_cpu_enabled(True)
        assert ember.is_autocast_enabled("cpu")
        ember.set_autocast_enabled("cpu", False)
        for bad in (1, "x", None):
            _same_error(lambda: ember.set_autocast_cpu_dtype(bad), lambda: torch.set_autocast_cpu_dtype(bad),
                        TypeError)
            _same_error(lambda: ember.set_autocast_gpu_dtype(bad), lambda: torch.set_autocast_gpu_dtype(bad),
                        TypeError)
            _same_error(lambda: ember.set_autocast_cpu_enabled(bad), lambda: torch.set_autocast_cpu_enabled(bad),
                        TypeError)
    finally:
        ember.set_autocast_enabled("cpu", False)
        ember.set_autocast_dtype("cpu", cpu_dtype)
        ember.set_autocast_dtype("cuda", gpu_dtype)


# ---------------------------------------------------------------- Tensor methods


class _EmberSub(ember.Tensor):
    pass


class _TorchSub(torch.Tensor):
    pass


def test_as_subclass():
    x = _RNG.standard_normal(4)
    (mx,), (tx,) = _both(x)
    mine, theirs = mx.as_subclass(_EmberSub), tx.as_subclass(_TorchSub)
    assert type(mine) is _EmberSub and type(theirs) is _TorchSub
    assert mine.data_ptr() == mx.data_ptr() and mine.requires_grad and mine.grad_fn is not None
    assert mine._base is mx and theirs._base is tx
    (mine * 3).sum().backward()
    (theirs * 3).sum().backward()
    _assert_grads([mx], [tx])
    _same_error(lambda: ember.ones(2).as_subclass(int), lambda: torch.ones(2).as_subclass(int), TypeError)
    _same_error(lambda: ember.ones(2).as_subclass(3), lambda: torch.ones(2).as_subclass(3), TypeError)


def test_storage_and_storage_type():
    from ember._ops import tensor_storage

    tensor_storage._TypedStorageWarning.warned = False
    mine, theirs = ember.arange(6.0)[2:], torch.arange(6.0)[2:]
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        mine_storage = mine.storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs_storage = theirs.storage()
        assert type(mine_storage).__name__ == type(theirs_storage).__name__ == "TypedStorage"
        assert str(mine_storage.dtype).split(".")[-1] == str(theirs_storage.dtype).split(".")[-1]
        assert mine_storage.size() == len(mine_storage) == theirs_storage.size() == 6
        assert mine_storage.nbytes() == theirs_storage.nbytes() and mine_storage.tolist() == theirs_storage.tolist()
        assert mine_storage[1] == theirs_storage[1] and mine_storage.element_size() == 4
        assert mine_storage.data_ptr() == mine.untyped_storage().data_ptr()
        assert ember.is_storage(mine_storage) and torch.is_storage(theirs_storage)
        for dtype in ("float32", "float64", "int64", "uint8", "bool", "bfloat16", "complex64"):
            mine_type = ember.zeros(1, dtype=getattr(ember, dtype)).storage_type()
            theirs_type = torch.zeros(1, dtype=getattr(torch, dtype)).storage_type()
            assert mine_type.__name__ == theirs_type.__name__
            assert getattr(ember, mine_type.__name__) is mine_type
        assert ember.FloatStorage([1, 2]).tolist() == torch.FloatStorage([1, 2]).tolist()


def test_set_forms():
    mine_source, theirs_source = ember.arange(6.0), torch.arange(6.0)
    mine, theirs = ember.zeros(2), torch.zeros(2)
    assert mine.set_(mine_source) is mine
    theirs.set_(theirs_source)
    mine[0] = 100
    theirs[0] = 100
    np.testing.assert_array_equal(mine_source.numpy(), theirs_source.numpy())
    assert mine.data_ptr() == mine_source.data_ptr()
    view_mine, view_theirs = ember.zeros(1).set_(mine_source[2:]), torch.zeros(1).set_(theirs_source[2:])
    _assert_same(view_mine, view_theirs)
    assert view_mine.storage_offset() == view_theirs.storage_offset() == 2
    _assert_same(ember.zeros(1).set_(mine_source, 1, (2, 2), (1, 2)), torch.zeros(1).set_(theirs_source, 1, (2, 2),
                                                                                          (1, 2)))
    _assert_same(ember.zeros(1).set_(mine_source.untyped_storage()),
                 torch.zeros(1).set_(theirs_source.untyped_storage()))
    _assert_same(ember.zeros(1).set_(mine_source.untyped_storage(), 2, (2,)),
                 torch.zeros(1).set_(theirs_source.untyped_storage(), 2, (2,)))
    empty_mine, empty_theirs = ember.zeros(3).set_(), torch.zeros(3).set_()
    _assert_same(empty_mine, empty_theirs)
    assert empty_mine.untyped_storage().nbytes() == 0
    _same_error(lambda: ember.zeros(3).set_(ember.arange(3)), lambda: torch.zeros(3).set_(torch.arange(3)))
    _same_error(lambda: ember.zeros(3, requires_grad=True).set_(mine_source),
                lambda: torch.zeros(3, requires_grad=True).set_(theirs_source))
    with pytest.raises(TypeError, match="set_"):
        ember.zeros(3).set_(3)


def test_deprecated_resize():
    x = _RNG.standard_normal(6)
    (mx,), (tx,) = _both(x)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        mine = mx.resize(2, 3)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        theirs = tx.resize(2, 3)
    _assert_same(mine, theirs)
    _backward_both([mine], [theirs])
    _assert_grads([mx], [tx])
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        _assert_same(ember.arange(6.0).resize_as(ember.zeros(3, 2)), torch.arange(6.0).resize_as(torch.zeros(3, 2)))
    plain = ember.arange(6.0)
    with pytest.warns(UserWarning):
        shared = plain.resize(3, 2)
    assert shared.data_ptr() == plain.data_ptr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(lambda: ember.arange(6.0).resize(4), lambda: torch.arange(6.0).resize(4))
        _same_error(lambda: ember.arange(6.0).resize((2, 3)), lambda: torch.arange(6.0).resize((2, 3)))
        _same_error(lambda: ember.arange(6.0).resize_as(ember.zeros(3, 3)),
                    lambda: torch.arange(6.0).resize_as(torch.zeros(3, 3)))


def test_record_stream_and_name():
    _same_error(lambda: ember.zeros(2).record_stream(None), lambda: torch.zeros(2).record_stream(None))
    stream = object.__new__(ember.cuda.Stream)  # a CUDA stream object; ember cannot create one without a GPU
    with pytest.raises(NotImplementedError) as theirs:
        torch.zeros(2).record_stream(torch.Stream())
    with pytest.raises(NotImplementedError) as mine:
        ember.zeros(2).record_stream(stream)
    assert str(theirs.value).startswith(str(mine.value))
    assert ember.zeros(2).name is None and torch.zeros(2).name is None
    with pytest.raises(AttributeError):
        ember.zeros(2).name = "x"
    with pytest.raises(AttributeError):
        torch.zeros(2).name = "x"
