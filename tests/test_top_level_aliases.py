"""Top-level torch functions outside the op families: *_copy view copies, in-place function forms (torch.abs_),
detach/is_inference/get_device, runtime switches, frombuffer/from_file/DLPack -- against real PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _both(array, requires_grad=False):
    return (ember.tensor(array, requires_grad=requires_grad), torch.tensor(array, requires_grad=requires_grad))


def _assert_same(mine, theirs, tolerance=1e-12):
    assert tuple(mine.shape) == tuple(theirs.shape)
    assert str(mine.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=tolerance, atol=tolerance)


# ---------------------------------------------------------------- *_copy

_RNG = np.random.default_rng(0)
_X = _RNG.standard_normal((3, 4))
_COPIES = [
    ("alias_copy", _X, ()), ("as_strided_copy", _X, ((2, 2), (1, 2), 1)), ("detach_copy", _X, ()),
    ("diagonal_copy", _X, (1,)), ("expand_copy", _X[:1], ((3, -1),)), ("permute_copy", _X, ((1, 0),)),
    ("select_copy", _X, (1, 2)), ("slice_copy", _X, (1, 1, 10, 2)), ("slice_copy", _X, ()),
    ("split_copy", _X, (3, 1)), ("split_with_sizes_copy", _X, ((1, 2), 0)), ("squeeze_copy", _X[:, :1], ()),
    ("squeeze_copy", _X[:1], (0,)), ("t_copy", _X, ()), ("transpose_copy", _X, (0, 1)), ("unbind_copy", _X, (1,)),
    ("unfold_copy", _X, (1, 2, 1)), ("unsqueeze_copy", _X, (-1,)), ("view_as_real_copy", _X + 1j * _X, ()),
    ("view_as_complex_copy", _X[:, :2].copy(), ()), ("view_copy", _X, ((4, 3),)), ("view_copy", _X, ((-1,),)),
]


@pytest.mark.parametrize("name,array,args", _COPIES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_COPIES)])
def test_view_copies(name, array, args):
    grad = array.dtype.kind == "f" and name not in ("detach_copy", "view_as_complex_copy")
    mine_in, theirs_in = _both(array, requires_grad=grad)
    mine, theirs = getattr(ember, name)(mine_in, *args), getattr(torch, name)(theirs_in, *args)
    mine_list = list(mine) if isinstance(mine, tuple) else [mine]
    theirs_list = list(theirs) if isinstance(theirs, tuple) else [theirs]
    assert len(mine_list) == len(theirs_list)
    for a, e in zip(mine_list, theirs_list):
        _assert_same(a, e)
        assert a.is_contiguous()
        assert a.untyped_storage().data_ptr() != mine_in.untyped_storage().data_ptr()
        assert a.requires_grad == e.requires_grad
    if grad:
        weights = [_RNG.standard_normal(tuple(e.shape)) for e in theirs_list]
        (sum((a * ember.tensor(w)).sum() for a, w in zip(mine_list, weights))).backward()
        (sum((e * torch.tensor(w)).sum() for e, w in zip(theirs_list, weights))).backward()
        _assert_same(mine_in.grad, theirs_in.grad)


def test_view_copy_out_and_errors():
    mine_in, theirs_in = _both(_X)
    out = ember.empty(0, dtype=ember.float64)
    assert ember.transpose_copy(mine_in, 0, 1, out=out) is out
    _assert_same(out, torch.transpose_copy(theirs_in, 0, 1))
    outs = [ember.empty(0, dtype=ember.float64) for _ in range(3)]
    assert ember.unbind_copy(mine_in, 0, out=outs) is None
    _assert_same(outs[2], theirs_in[2])
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="view_as_complex_copy does not support automatic differentiation"):
            lib.view_as_complex_copy(lib.ones(2, 2, requires_grad=True))
    assert ember.view_copy(ember.tensor(_X.astype(np.float32)), ember.int32).dtype == ember.int32
    for lib in (ember, torch):
        x = lib.tensor(_X)
        with pytest.raises(RuntimeError, match="slice step must be positive"):
            lib.slice_copy(x, 1, 0, 4, 0)
        with pytest.raises(IndexError, match="Dimension out of range"):
            lib.slice_copy(x, 2)
        with pytest.raises(TypeError, match="must be Tensor"):
            lib.t_copy(3)


# ---------------------------------------------------------------- in-place function forms

_POSITIVE = ["acosh_", "arccosh_"]
_UNIT = ["acos_", "arccos_", "arcsin_", "asin_", "atanh_", "arctanh_", "logit_"]
_INPLACE_ARGS = {"clamp_": (-0.5, 0.5), "clamp_max_": (0.3,), "clamp_min_": (-0.3,), "clip_": (-0.2, 0.4),
                 "xlogy_": (2.0,), "round_": (), "nan_to_num_": (0.0,)}
_SIMPLE = ["abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
           "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_",
           "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "i0_",
           "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_",
           "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_",
           "tan_", "tanh_", "trunc_", "xlogy_"]


@pytest.mark.parametrize("name", _SIMPLE)
def test_inplace_functions(name):
    values = np.array([0.1, 0.45, 0.9, 0.3])
    if name in _POSITIVE:
        values = values + 1.5
    elif name not in _UNIT and name not in ("log_", "log10_", "log2_", "sqrt_", "rsqrt_", "xlogy_"):
        values = values * np.array([1, -3, 2, -1])
    mine, theirs = _both(values)
    args = _INPLACE_ARGS.get(name, ())
    assert getattr(ember, name)(mine, *args) is mine
    assert getattr(torch, name)(theirs, *args) is theirs
    _assert_same(mine, theirs)


def test_inplace_functions_with_tensors_and_autograd():
    for lib in (ember, torch):
        with pytest.raises(TypeError, match=r"abs_\(\): argument 'input' \(position 1\) must be Tensor, not int"):
            lib.abs_(3)
    for name, other in (("gcd_", [4, 6, 9]), ("lcm_", [4, 6, 9]), ("ldexp_", [1, 2, 3])):
        mine, theirs = _both(np.array([6, 4, 3]) if name != "ldexp_" else np.array([1.5, 2.0, -1.0]))
        assert getattr(ember, name)(mine, ember.tensor(other)) is mine
        getattr(torch, name)(theirs, torch.tensor(other))
        _assert_same(mine, theirs)
    mine, theirs = _both(np.zeros((2, 2)))
    ember.index_put_(mine, (ember.tensor([0, 1]), ember.tensor([1, 0])), ember.tensor(5.0, dtype=ember.float64))
    torch.index_put_(theirs, (torch.tensor([0, 1]), torch.tensor([1, 0])), torch.tensor(5.0, dtype=torch.float64))
    _assert_same(mine, theirs)
    mine = ember.zeros(6)
    assert ember.as_strided_(mine, (2, 2), (1, 2)).shape == (2, 2)
    assert ember.resize_as_(ember.zeros(3), ember.zeros(2, 2)).shape == (2, 2)
    leaf = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        ember.exp_(leaf)
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = x * 1
    ember.sin_(y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.0]))
    detached = ember.detach_(x * 2)
    assert not detached.requires_grad and detached.grad_fn is None


# ---------------------------------------------------------------- detach, is_inference, get_device


def test_detach_get_device_is_inference():
    x = ember.ones(2, requires_grad=True)
    d = ember.detach(x)
    assert not d.requires_grad and d.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert ember.get_device(x) == -1 == torch.get_device(torch.ones(2))
    for lib in (ember, torch):
        normal = lib.ones(2)
        with lib.inference_mode():
            made = lib.ones(2)
            computed = normal + 1
            view_of_normal = normal[0]
            in_place = normal.add_(1)
        assert made.is_inference() and computed.is_inference() and lib.is_inference(made[:1])
        assert not view_of_normal.is_inference() and not in_place.is_inference() and not normal.is_inference()
        with lib.inference_mode(False):
            assert not lib.ones(1).is_inference()
        with lib.no_grad():
            assert not lib.ones(1).is_inference()


# ---------------------------------------------------------------- runtime switches


def test_set_default_tensor_type():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type("torch.DoubleTensor")
        assert ember.get_default_dtype() == ember.float64 and ember.ones(1).dtype == ember.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
                ember.set_default_tensor_type("torch.IntTensor")
            with pytest.raises(TypeError, match="invalid type object"):
                ember.set_default_tensor_type(3)
            with pytest.raises(AttributeError, match="has no attribute 'FooTensor'"):
                ember.set_default_tensor_type("torch.FooTensor")
            ember.set_default_tensor_type("ember.FloatTensor")
        assert ember.get_default_dtype() == ember.float32
    finally:
        ember.set_default_dtype(ember.float32)


def test_flush_denormal_warn_always_is_storage():
    assert ember.set_flush_denormal(True) is False and ember.set_flush_denormal(False) is False
    assert ember.is_warn_always_enabled() is False
    ember.set_warn_always(True)
    try:
        assert ember.is_warn_always_enabled() is True
    finally:
        ember.set_warn_always(False)
    assert ember.is_storage(ember.ones(2).untyped_storage()) and not ember.is_storage(ember.ones(2))


# ---------------------------------------------------------------- frombuffer, from_file, DLPack


def test_frombuffer():
    buffer = bytearray(np.arange(4, dtype=np.float32).tobytes())
    mine = ember.frombuffer(buffer, dtype=ember.float32, offset=4, count=2)
    _assert_same(mine, torch.frombuffer(bytearray(buffer), dtype=torch.float32, offset=4, count=2))
    mine[0] = 9.0
    assert np.frombuffer(buffer, dtype=np.float32)[1] == 9.0  # shares the buffer's memory
    for kwargs in ({"count": 0}, {"offset": 20}, {"offset": -1}, {"count": 5}):
        messages = []
        for lib in (ember, torch):
            with pytest.raises(ValueError) as info:
                lib.frombuffer(bytearray(16), dtype=lib.float32, **kwargs)
            messages.append(str(info.value))
        assert messages[0] == messages[1]
    for lib in (ember, torch):
        with pytest.raises(ValueError, match=r"must be a multiple of element size \(4\)"):
            lib.frombuffer(bytearray(10), dtype=lib.float32)
    assert ember.frombuffer(bytearray(8), dtype=ember.float32, requires_grad=True).requires_grad


def test_from_file(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    _assert_same(ember.from_file(path, size=6, dtype=ember.float32), torch.from_file(path, size=6,
                                                                                      dtype=torch.float32))
    assert ember.from_file(path).shape == (0,)
    copied = ember.from_file(path, shared=False, size=6, dtype=ember.float32)
    copied[0] = 7.0
    assert np.fromfile(path, dtype=np.float32)[0] == 0.0
    shared = ember.from_file(path, shared=True, size=8, dtype=ember.float32)
    shared[0] = 42.0
    del shared
    assert np.fromfile(path, dtype=np.float32).tolist() == [42.0, 1, 2, 3, 4, 5, 0, 0]
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="is smaller than the required mapping size <40>"):
            lib.from_file(path, size=10, dtype=lib.float32)
        with pytest.raises(RuntimeError, match="unable to open file"):
            lib.from_file(str(tmp_path / "missing.bin"), size=2)
    created = str(tmp_path / "created.bin")
    assert ember.from_file(created, shared=True, size=2).tolist() == [0.0, 0.0]


def test_dlpack():
    theirs = torch.arange(4.0)
    mine = ember.from_dlpack(theirs)
    mine[0] = 5.0
    assert theirs[0].item() == 5.0 and mine.dtype == ember.float32
    back = torch.from_dlpack(ember.arange(3, dtype=ember.int32))
    assert back.tolist() == [0, 1, 2] and back.dtype == torch.int32
    capsule = ember.to_dlpack(ember.tensor([1.0, 2.0]))
    assert ember.utils.dlpack.from_dlpack(capsule).tolist() == [1.0, 2.0]
    assert torch.utils.dlpack.from_dlpack(ember.utils.dlpack.to_dlpack(ember.tensor([3, 4]))).tolist() == [3, 4]
    with pytest.raises(BufferError, match="Can't export tensors that require gradient"):
        ember.ones(2, requires_grad=True).__dlpack__()
