"""Ops on quantized tensors (ember/_ops/quantized_ops.py), FloatFunctional / QFunctional, quantized BatchNorm2d and
a ResNet-style model through eager-mode static quantization, all against real torch: integers (int_repr), scale,
zero point and memory layout equal.  NOTE [ QuantizedCPU vector and scalar paths ] explains the formulas; the
tie tests below are built so that each alternative formula would fail them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as EF

torch = pytest.importorskip("torch")
F = torch.nn.functional
warnings.filterwarnings("ignore", message=".*quantize_per_tensor.*deprecated.*")
warnings.filterwarnings("ignore", category=DeprecationWarning)

RANGES = {"quint8": (0, 256, np.uint8), "qint8": (-128, 128, np.int8)}
# power-of-two scales make exact ties, decimal ones near ties (the float32 rounding decides)
SCALES = [0.5, 0.25, 0.1, 0.05, 1 / 3, 0.0137]
# the build torch runs its QuantizedCPU kernels with (ATEN_CPU_CAPABILITY lowers it; ember reads the same variable):
# NOTE [ QuantizedCPU kernels per CPU capability ] in ember/_ops/quantized_numerics.py
CAPABILITY = torch.backends.cpu.get_cpu_capability()


def _dequantize_val(integers: np.ndarray, scale: float, zero_point: int = 0) -> np.ndarray:
    """torch's scalar dequantization, written out: float32(float32(q - zp) * double(float32(scale)))."""
    shifted = integers.astype(np.float32) - np.float32(zero_point)
    return (shifted.astype(np.float64) * np.float64(np.float32(scale))).astype(np.float32)


def _quantize_val(values: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """torch's scalar quantization, written out: rint(float32(float32(x * (1 / scale)) + zp)), quint8 range."""
    inverse = np.float32(1.0) / np.float32(scale)
    shifted = (values.astype(np.float32) * inverse).astype(np.float32) + np.float32(zero_point)
    return np.clip(np.rint(shifted.astype(np.float32)), 0, 255)


def _quantize_vec(values: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """fbgemm's vector quantization (quantize_vec), written out: one fused multiply-add, rounded once."""
    inverse = np.float32(1.0) / np.float32(scale)
    fused = values.astype(np.float64) * np.float64(inverse) + zero_point
    return np.clip(np.rint(fused.astype(np.float32)), 0, 255)


def _pair(integers: np.ndarray, scale: float, zero_point: int, channels_last: bool = False):
    """The same quantized tensor in ember and torch, built from its integers."""
    t = torch._make_per_tensor_quantized_tensor(torch.tensor(integers), scale, zero_point)
    values = ((integers.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)).astype(np.float32)
    name = "qint8" if integers.dtype == np.int8 else "quint8"
    e = ember.quantize_per_tensor(ember.tensor(values), scale, zero_point, getattr(ember, name))
    np.testing.assert_array_equal(e.int_repr().numpy(), integers)
    if channels_last:
        e = e.contiguous(memory_format=ember.channels_last)
        t = t.contiguous(memory_format=torch.channels_last)
    return e, t


def _random_pair(rng, shape, dtype="quint8", channels_last=False, scale=None, zero_point=None):
    low, high, np_type = RANGES[dtype]
    integers = rng.integers(low, high, shape).astype(np_type)
    scale = float(rng.choice(SCALES)) if scale is None else scale
    zero_point = int(rng.integers(low, high)) if zero_point is None else zero_point
    return _pair(integers, scale, zero_point, channels_last)


def _assert_same(out_e, out_t, what=""):
    """Same integers, parameters, dtype and (4-d) layout."""
    assert out_e.is_quantized and out_t.is_quantized, what
    assert str(out_e.dtype).split(".")[-1] == str(out_t.dtype).split(".")[-1], what
    assert tuple(out_e.shape) == tuple(out_t.shape), what
    assert out_e.q_scale() == out_t.q_scale() and out_e.q_zero_point() == out_t.q_zero_point(), what
    if out_t.ndim == 4:
        assert (out_e.is_contiguous(memory_format=ember.channels_last)
                == out_t.is_contiguous(memory_format=torch.channels_last)), what
    np.testing.assert_array_equal(out_e.int_repr().numpy(), out_t.int_repr().numpy(), err_msg=what)


# ---------------------------------------------------------------- the CPU capability


def test_ember_reads_torchs_cpu_capability():
    # every exact comparison below assumes ember emulates the kernel build torch runs
    assert ember.backends.cpu.get_cpu_capability() == CAPABILITY


@pytest.mark.parametrize("capability, avg_pool_lanes, adaptive_lanes, vector_rounds_first", [
    ("AVX512", 16, 8, False), ("AVX2", 8, 8, False), ("DEFAULT", 0, 0, True),
])
def test_vector_widths_follow_cpu_capability(monkeypatch, capability, avg_pool_lanes, adaptive_lanes,
                                             vector_rounds_first):
    from ember._ops import quantized_numerics as qn
    from ember._ops import quantized_ops

    monkeypatch.setattr(ember._runtime, "cpu_capability", lambda: capability)
    assert qn.elementwise_block() == 64  # 2 * Vectorized<quint8>::size() of the AVX2 or DEFAULT build
    assert qn.vector_path().float_lanes == 8  # cat and batch_norm: Vectorized<float>::size(), no AVX512 build
    assert qn.vector_path(avx512_build=True).pool_channel_lanes() == avg_pool_lanes
    assert qn.vector_path().pool_channel_lanes() == adaptive_lanes
    assert qn.vector_path().intrinsics is not vector_rounds_first
    # the kernels follow: channels-last average pooling of ties rounds the vector channels the other way ...
    integers = _tie_channels(44)
    pooled = [EF.avg_pool2d(_pair(integers, 0.5, 3, channels_last)[0], (2, 1)).int_repr().numpy()
              for channels_last in (False, True)]
    differing = np.nonzero((pooled[0] != pooled[1]).any(axis=(0, 2, 3)))[0]
    assert differing.tolist() == list(range(44 // avg_pool_lanes * avg_pool_lanes if avg_pool_lanes else 0))
    # ... and quantized add's body adds the zero point after rounding ties, except on DEFAULT
    rng = np.random.default_rng(14)
    a = rng.integers(0, 120, 100).astype(np.uint8)
    b = (a % 2 == 0).astype(np.uint8) + rng.integers(0, 60, 100).astype(np.uint8) * 2
    out = quantized_ops.add(_pair(a, 0.5, 0)[0], _pair(b, 0.5, 0)[0], 1.0, 7).int_repr().numpy()
    rounded_first = np.nonzero(out != _tail_of_add(a, b, 0.5, 1.0))[0]
    assert rounded_first.tolist() == ([] if vector_rounds_first else list(range(64)))


def test_fbgemm_quantization_follows_the_cpu_flags(monkeypatch):
    # fbgemm::Quantize picks its AVX2 loop (one fused multiply-add) from the CPU's flags, not from torch's CPU
    # capability; without avx2 / fma its scalar loop rounds the product first (from fbgemm's source: no such CPU
    # here to compare against torch)
    # k * float32(0.1) / 2 for odd k: a few ulp from a half-integer after scaling, where the two loops differ
    values = (np.array([-67, -63, -61, -59, -43]) * np.float32(0.1) / 2).astype(np.float32)
    out_t = torch.quantize_per_tensor(torch.tensor(values), 0.1, 37, torch.quint8)
    _assert_same(ember.quantize_per_tensor(ember.tensor(values), 0.1, 37, ember.quint8), out_t)
    for flags, formula in (({"avx", "avx2", "fma"}, _quantize_vec), ({"sse2", "avx"}, _quantize_val)):
        monkeypatch.setattr(ember._runtime, "cpu_flags", lambda flags=flags: frozenset(flags))
        out = ember.quantize_per_tensor(ember.tensor(values), 0.1, 37, ember.quint8).int_repr().numpy()
        np.testing.assert_array_equal(out, formula(values, 0.1, 37), err_msg=str(flags))
    assert (_quantize_vec(values, 0.1, 37) != _quantize_val(values, 0.1, 37)).all()


# ---------------------------------------------------------------- activations


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_relu_variants_match_torch(dtype, channels_last):
    rng = np.random.default_rng(0)
    for _ in range(4):
        e, t = _random_pair(rng, (2, 5, 3, 4), dtype, channels_last)
        _assert_same(ember.relu(e), torch.relu(t), "torch.relu")
        _assert_same(EF.relu(e), F.relu(t), "F.relu")
        _assert_same(e.relu(), t.relu(), "Tensor.relu")
        _assert_same(ember.nn.ReLU()(e), torch.nn.ReLU()(t), "nn.ReLU")
        e_in, t_in = e.clone(), t.clone()
        assert EF.relu(e_in, inplace=True) is e_in
        F.relu(t_in, inplace=True)
        np.testing.assert_array_equal(e_in.int_repr().numpy(), t_in.int_repr().numpy())
        e_in, t_in = e.clone(), t.clone()
        ember.relu_(e_in)
        torch.relu_(t_in)
        np.testing.assert_array_equal(e_in.int_repr().numpy(), t_in.int_repr().numpy())
        assert e_in.q_zero_point() == t_in.q_zero_point()


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_hardtanh_relu6_clamp_match_torch_at_ties(dtype):
    rng = np.random.default_rng(1)
    for scale in SCALES:
        e, t = _random_pair(rng, (3, 40), dtype, scale=scale)
        # bounds on (and next to) the quantization grid: their own rounding decides where the clamp lands
        for low, high in [(-0.5, 0.5), (-scale * 2.5, scale * 3.5), (-1.05, 0.35), (0.0, 6.0), (-2.0, -0.1)]:
            _assert_same(EF.hardtanh(e, low, high), F.hardtanh(t, low, high), f"hardtanh {scale} {low} {high}")
            _assert_same(ember.clamp(e, low, high), torch.clamp(t, low, high), "clamp")
            _assert_same(ember.clamp(e, min=low), torch.clamp(t, min=low), "clamp min")
            _assert_same(e.clip(low, high), t.clip(low, high), "clip")
        _assert_same(EF.relu6(e), F.relu6(t), "relu6")
        _assert_same(ember.nn.ReLU6()(e), torch.nn.ReLU6()(t), "nn.ReLU6")


def test_clamp_min_max_and_tensor_bounds_are_refused_as_in_torch():
    e, t = _random_pair(np.random.default_rng(2), (4,), scale=0.1, zero_point=3)
    for call_e, call_t in [(lambda: ember.clamp_min(e, 0.1), lambda: torch.clamp_min(t, 0.1)),
                           (lambda: ember.clamp_max(e, 0.1), lambda: torch.clamp_max(t, 0.1)),
                           (lambda: ember.clamp(e, ember.tensor(0.1)), lambda: torch.clamp(t, torch.tensor(0.1)))]:
        with pytest.raises(RuntimeError) as error_t:
            call_t()
        with pytest.raises(RuntimeError) as error_e:
            call_e()
        assert str(error_e.value) == str(error_t.value)


# ---------------------------------------------------------------- pooling


POOL_CASES = [  # kernel, stride, padding, ceil_mode
    (2, None, 0, False), (3, 2, 1, False), ((3, 2), (2, 1), (1, 0), True), (2, 1, 1, True), ((1, 3), 2, (0, 1), False),
]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", POOL_CASES)
def test_max_pool2d_matches_torch(kernel, stride, padding, ceil_mode, channels_last):
    rng = np.random.default_rng(3)
    for dtype in ("quint8", "qint8"):
        e, t = _random_pair(rng, (2, 20, 7, 6), dtype, channels_last)
        _assert_same(EF.max_pool2d(e, kernel, stride, padding, 1, ceil_mode),
                     F.max_pool2d(t, kernel, stride, padding, 1, ceil_mode), f"max_pool2d {dtype}")
    _assert_same(ember.nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil_mode)(e),
                 torch.nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil_mode)(t), "nn.MaxPool2d")
    _assert_same(EF.max_pool2d(e, 3, 1, 1, dilation=2), F.max_pool2d(t, 3, 1, 1, dilation=2), "dilation")


def test_max_pool_1d_3d_input_and_indices():
    rng = np.random.default_rng(4)
    e, t = _random_pair(rng, (6, 9, 8))
    _assert_same(EF.max_pool2d(e, 2), F.max_pool2d(t, 2), "unbatched")
    _assert_same(EF.max_pool1d(e, 3, 2, 1), F.max_pool1d(t, 3, 2, 1), "max_pool1d")
    with pytest.raises(NotImplementedError) as error_t:
        F.max_pool2d(t, 2, return_indices=True)
    with pytest.raises(NotImplementedError) as error_e:
        EF.max_pool2d(e, 2, return_indices=True)
    assert str(error_e.value).split(". ")[0] == str(error_t.value).split(". ")[0]


AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None),
    ((2, 3), (1, 2), (1, 1), False, False, None), (3, 1, 1, False, True, 5), ((1, 2), 1, 0, True, True, None),
]


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad,divisor", AVG_CASES)
def test_avg_pool2d_matches_torch(kernel, stride, padding, ceil_mode, count_include_pad, divisor, channels_last):
    rng = np.random.default_rng(5)
    for dtype in ("quint8", "qint8"):
        for channels in (5, 19, 40):  # below, between and above the channels-last kernel's vector lanes
            e, t = _random_pair(rng, (2, channels, 7, 6), dtype, channels_last)
            _assert_same(EF.avg_pool2d(e, kernel, stride, padding, ceil_mode, count_include_pad, divisor),
                         F.avg_pool2d(t, kernel, stride, padding, ceil_mode, count_include_pad, divisor),
                         f"avg_pool2d {dtype} {channels}")
    _assert_same(ember.nn.AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor)(e),
                 torch.nn.AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor)(t), "module")


def _tie_channels(channels: int) -> np.ndarray:
    """(1, C, 2, 2) integers whose 2x1 window sums are odd: with an odd zero point every average is k + 0.5."""
    rng = np.random.default_rng(6)
    top = rng.integers(40, 200, (1, channels, 1, 2))
    bottom = top + 2 * rng.integers(-10, 10, top.shape) + 1
    return np.concatenate([top, bottom], axis=2).astype(np.uint8)


# channels of 44 that qavg_pool2d_nhwc vectorises: multiples of 16 with its AVX512 build, of 8 with its AVX2 build,
# none with its DEFAULT build (torch's source: do_avg_pool_nhwc_on_AVX_n)
AVG_POOL_VECTOR_CHANNELS = {"AVX512": 32, "AVX2": 40, "DEFAULT": 0}


def test_avg_pool_ties_round_as_torch_in_each_layout():
    # torch's contiguous kernel adds the (odd) zero point before rounding k + 0.5, its channels-last kernel after
    # (vector channels) or before (scalar channels): the three formulas give different integers here
    integers = _tie_channels(44)
    results = {}
    for channels_last in (False, True):
        e, t = _pair(integers, 0.5, 3, channels_last)
        out_t = F.avg_pool2d(t, (2, 1))
        _assert_same(EF.avg_pool2d(e, (2, 1)), out_t, f"channels_last={channels_last}")
        results[channels_last] = out_t.int_repr().numpy()
    vector = AVG_POOL_VECTOR_CHANNELS[CAPABILITY]
    assert (results[False][:, :vector] != results[True][:, :vector]).all()  # the vector channels round the other way
    np.testing.assert_array_equal(results[False][:, vector:], results[True][:, vector:])  # scalar channels agree


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("output_size", [1, (1, 1), (2, 3), (4, 5), (3, None), (7, 6)])
def test_adaptive_avg_pool2d_matches_torch(output_size, channels_last):
    rng = np.random.default_rng(7)
    for dtype in ("quint8", "qint8"):
        for channels in (3, 12, 37):  # the channels-last kernel vectorises 8 channels at a time
            e, t = _random_pair(rng, (2, channels, 7, 6), dtype, channels_last)
            _assert_same(EF.adaptive_avg_pool2d(e, output_size), F.adaptive_avg_pool2d(t, output_size),
                         f"{dtype} {channels}")
    _assert_same(ember.nn.AdaptiveAvgPool2d(output_size)(e), torch.nn.AdaptiveAvgPool2d(output_size)(t), "module")


def test_adaptive_avg_pool_rounds_with_a_float32_reciprocal_as_torch():
    # a 2x7 window summing to 91: the exact mean 6.5 rounds to even (6), torch's contiguous kernel multiplies by
    # float32(float32(1/2)/7) and gets 6.5000005, which rounds up
    integers = np.full((1, 2, 2, 7), 6, dtype=np.uint8)
    integers[0, 0, 1] = 7
    e, t = _pair(integers, 0.1, 0)
    out_t = F.adaptive_avg_pool2d(t, 1)
    _assert_same(EF.adaptive_avg_pool2d(e, 1), out_t)
    assert out_t.int_repr().flatten().tolist() == [7, 6]


def test_pools_of_unbatched_and_1d_inputs_match_torch():
    rng = np.random.default_rng(8)
    e, t = _random_pair(rng, (6, 9, 8))
    _assert_same(EF.avg_pool2d(e, 3, 2, 1), F.avg_pool2d(t, 3, 2, 1), "avg_pool2d 3-d")
    _assert_same(EF.adaptive_avg_pool2d(e, (2, 3)), F.adaptive_avg_pool2d(t, (2, 3)), "adaptive 3-d")
    _assert_same(EF.avg_pool1d(e, 3, 2, 1), F.avg_pool1d(t, 3, 2, 1), "avg_pool1d")
    _assert_same(EF.adaptive_avg_pool1d(e, 3), F.adaptive_avg_pool1d(t, 3), "adaptive_avg_pool1d")


# ---------------------------------------------------------------- cat, stack, comparisons


def _qfunctional(lib, scale, zero_point):
    module = lib.ao.nn.quantized.QFunctional()
    module.scale, module.zero_point = scale, zero_point
    return module


@pytest.mark.parametrize("channels_last", [False, True])
def test_cat_matches_torch(channels_last):
    rng = np.random.default_rng(9)
    for dtype in ("quint8", "qint8"):
        a_e, a_t = _random_pair(rng, (2, 21, 3, 4), dtype, channels_last)
        b_e, b_t = _random_pair(rng, (2, 13, 3, 4), dtype, channels_last)
        same_e, same_t = _pair(b_t.int_repr().numpy(), a_t.q_scale(), a_t.q_zero_point(), channels_last)
        # the result takes the first tensor's parameters; a tensor with others is requantized (with torch's warning)
        with pytest.warns(UserWarning, match="must share the same quantization parameters"):
            _assert_same(ember.cat([a_e, b_e], 1), torch.cat([a_t, b_t], 1), f"cat dim 1 {dtype}")
        _assert_same(ember.cat([a_e, same_e], 1), torch.cat([a_t, same_t], 1), "cat, shared parameters")
        _assert_same(ember.cat([a_e, a_e], 0), torch.cat([a_t, a_t], 0), "cat dim 0")
        _assert_same(ember.cat([a_e, a_e], -1), torch.cat([a_t, a_t], -1), "cat dim -1")
        _assert_same(ember.stack([a_e, a_e], 1), torch.stack([a_t, a_t], 1), "stack")
    # every integer requantized from decimal scales: some land a few ulp from ties, where the rounding order
    # (torch's quantize_per_tensor fuses the zero point into one multiply-add) decides
    every = np.tile(np.arange(256, dtype=np.uint8), 2).reshape(2, 16, 4, 4)
    for scale, zero_point, out_scale, out_zero_point in ((0.03, 0, 0.06, 50), (0.003, 200, 0.006, 131)):
        a_e, a_t = _pair(every, scale, zero_point, channels_last)
        for dim in (0, 1):
            _assert_same(_qfunctional(ember, out_scale, out_zero_point).cat([a_e, a_e], dim),
                         _qfunctional(torch, out_scale, out_zero_point).cat([a_t, a_t], dim), f"{scale} {dim}")


def _requantization_splitting_the_paths(rng, shape) -> tuple:
    """(integers, scale, output scale) with zero points 0 -> 7 for which torch's vector and scalar requantization
    differ at every element: on AVX2 / AVX512 odd integers at scale 0.5 to scale 1, exact ties k + 0.5 that the
    vector path rounds before adding the zero point and the scalar path after; on DEFAULT, whose vector path adds
    the zero point first too, integers whose near ties (0.03 -> 0.06) its fused quantize_vec and the scalar
    path's two roundings put on different sides."""
    if CAPABILITY != "DEFAULT":
        return (rng.integers(0, 100, shape) * 2 + 1).astype(np.uint8), 0.5, 1.0
    every = np.arange(256)
    values = _dequantize_val(every, 0.03)
    splitting = every[_quantize_vec(values, 0.06, 7) != _quantize_val(values, 0.06, 7)]
    return rng.choice(splitting, shape).astype(np.uint8), 0.03, 0.06


def test_channels_last_cat_requantizes_vector_and_scalar_channels_as_torch():
    # 13 channels requantized so that torch's vector and scalar formulas differ at every element: its NHWC cat
    # vectorises the first 8 channels of each input (every build), the other 5 take the scalar formula
    rng = np.random.default_rng(23)
    integers, scale, out_scale = _requantization_splitting_the_paths(rng, (2, 13, 3, 3))
    a_e, a_t = _pair(integers, scale, 0, channels_last=True)
    out_t = torch.ops.quantized.cat([a_t, a_t], scale=out_scale, zero_point=7, dim=1)
    _assert_same(_qfunctional(ember, out_scale, 7).cat([a_e, a_e], 1), out_t)
    scalar = _quantize_val(_dequantize_val(integers, scale), out_scale, 7)
    out = out_t.int_repr().numpy()
    assert (out[:, :8] != scalar[:, :8]).all() and (out[:, 8:13] == scalar[:, 8:]).all()


def test_quantize_per_tensor_fuses_the_zero_point_as_torch():
    # values a few ulp from k + 0.5 after scaling: torch's fbgemm loop rounds x * (1/s) + zp once (a fused
    # multiply-add); rounding the product first moves some of them across the tie
    rng = np.random.default_rng(24)
    for scale in (0.1, 0.05, 1 / 3, 0.02):
        values = (rng.integers(-500, 500, 4000) * np.float32(scale) / 2).astype(np.float32)
        for dtype in ("quint8", "qint8"):
            zero_point = 37 if dtype == "quint8" else -3
            out_e = ember.quantize_per_tensor(ember.tensor(values), scale, zero_point, getattr(ember, dtype))
            out_t = torch.quantize_per_tensor(torch.tensor(values), scale, zero_point, getattr(torch, dtype))
            _assert_same(out_e, out_t, f"{scale} {dtype}")


def test_cat_errors_match_torch():
    rng = np.random.default_rng(10)
    a_e, a_t = _random_pair(rng, (2, 3), "quint8")
    b_e, b_t = _random_pair(rng, (2, 3), "qint8")
    with pytest.raises(RuntimeError, match="All dtypes must be the same"):
        torch.cat([a_t, b_t])
    with pytest.raises(RuntimeError, match="All dtypes must be the same"):
        ember.cat([a_e, b_e])
    per_channel_t = torch.quantize_per_channel(torch.ones(2, 3), torch.tensor([0.1, 0.2]), torch.tensor([0, 0]), 0,
                                               torch.quint8)
    per_channel_e = ember.quantize_per_channel(ember.ones(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([0, 0]), 0,
                                               ember.quint8)
    for lib, tensor in ((torch, per_channel_t), (ember, per_channel_e)):
        with pytest.raises(RuntimeError, match="Only per-tensor quantization is supported in 'cat'!"):
            lib.cat([tensor, tensor])
        with pytest.raises(RuntimeError, match="kPerTensorAffine"):
            lib.relu(tensor)


def test_comparisons_and_equal_match_torch():
    rng = np.random.default_rng(11)
    a_e, a_t = _random_pair(rng, (3, 7), scale=0.1, zero_point=5)
    b_e, b_t = _random_pair(rng, (3, 7), scale=0.05, zero_point=100)
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        assert getattr(ember, name)(a_e, b_e).tolist() == getattr(torch, name)(a_t, b_t).tolist(), name
        assert getattr(ember, name)(a_e, 0.3).tolist() == getattr(torch, name)(a_t, 0.3).tolist(), name
    assert (a_e == a_e).all().item() and ember.equal(a_e, a_e) and torch.equal(a_t, a_t)
    c_e, c_t = _pair(a_t.int_repr().numpy(), 0.1, 5)
    assert ember.equal(a_e, c_e) is torch.equal(a_t, c_t) is True
    # equal compares quantizers and integers, not values: the same values under other parameters differ
    d_e = ember.quantize_per_tensor(a_e.dequantize(), 0.05, 10, ember.quint8)
    d_t = torch.quantize_per_tensor(a_t.dequantize(), 0.05, 10, torch.quint8)
    assert (a_e == d_e).all().item() == (a_t == d_t).all().item()
    assert ember.equal(a_e, d_e) is torch.equal(a_t, d_t) is False
    assert ember.equal(a_e, a_e.dequantize()) is torch.equal(a_t, a_t.dequantize()) is False


def test_ops_without_quantized_kernels_are_still_refused():
    e, t = _random_pair(np.random.default_rng(12), (2, 3))
    for call_e, call_t in [(lambda: e + e, lambda: t + t), (lambda: ember.exp(e), lambda: torch.exp(t)),
                           (lambda: e.sum(), lambda: t.sum())]:
        with pytest.raises(NotImplementedError) as error_t:
            call_t()
        with pytest.raises(NotImplementedError) as error_e:
            call_e()
        assert "QuantizedCPU" in str(error_e.value) and "QuantizedCPU" in str(error_t.value)
    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::add'"):
        e + e


# ---------------------------------------------------------------- QFunctional: quantized add, mul, cat


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
@pytest.mark.parametrize("layouts", [(False, False), (True, True), (True, False)])
def test_qfunctional_binary_ops_match_torch(dtype, layouts):
    rng = np.random.default_rng(13)
    low, high, _ = RANGES[dtype]
    for trial in range(12):
        shape = (2, int(rng.integers(1, 40)), int(rng.integers(1, 6)), int(rng.integers(1, 6)))
        a_e, a_t = _random_pair(rng, shape, dtype, layouts[0])
        b_e, b_t = _random_pair(rng, shape, dtype, layouts[1])
        scale, zero_point = float(rng.choice(SCALES)), int(rng.integers(low, high))
        q_e, q_t = _qfunctional(ember, scale, zero_point), _qfunctional(torch, scale, zero_point)
        for name in ("add", "add_relu", "mul"):
            _assert_same(getattr(q_e, name)(a_e, b_e), getattr(q_t, name)(a_t, b_t), f"{name} {trial}")
        _assert_same(q_e.cat([a_e, b_e], 1), q_t.cat([a_t, b_t], 1), f"cat {trial}")
        _assert_same(q_e.cat([a_e, b_e], 0), q_t.cat([a_t, b_t], 0), f"cat dim 0 {trial}")
        broadcast_e, broadcast_t = _random_pair(rng, (2, 1) + shape[2:], dtype)
        _assert_same(q_e.add(a_e, broadcast_e), q_t.add(a_t, broadcast_t), f"broadcast add {trial}")


def _addition_splitting_the_paths(rng, size: int) -> tuple:
    """(a, b, scale, output scale), quint8 operands with zero points 0 added to output zero point 7, for which
    torch's vectorised body and scalar tail give different integers at every element: on AVX2 / AVX512 exact ties
    k + 0.5 (the body adds the zero point after rounding, the tail before); on DEFAULT, whose body adds it first
    too, near ties where the body's fused quantize_vec and the tail's two roundings differ."""
    if CAPABILITY != "DEFAULT":
        a = rng.integers(0, 120, size).astype(np.uint8)
        b = (a % 2 == 0).astype(np.uint8) + rng.integers(0, 60, size).astype(np.uint8) * 2
        return a, b, 0.5, 1.0
    a, b = (grid.ravel() for grid in np.meshgrid(np.arange(256), np.arange(256)))
    sums = _dequantize_val(a, 0.03) + _dequantize_val(b, 0.03)
    splitting = np.nonzero(_quantize_vec(sums, 0.06, 7) != _quantize_val(sums, 0.06, 7))[0]
    chosen = rng.choice(splitting, size)
    return a[chosen].astype(np.uint8), b[chosen].astype(np.uint8), 0.03, 0.06


def _tail_of_add(a: np.ndarray, b: np.ndarray, scale: float, out_scale: float) -> np.ndarray:
    """What torch's scalar loop of quantized::add gives (zero points 0 and 7)."""
    return _quantize_val(_dequantize_val(a, scale) + _dequantize_val(b, scale), out_scale, 7)


def test_quantized_add_vector_body_and_scalar_tail_round_as_torch():
    from ember._ops import quantized_ops

    # torch's vectorised body covers blocks of 64 elements (2 * Vectorized<quint8>::size() of its AVX2 and DEFAULT
    # builds; the AVX512 CPU runs the AVX2 build), the scalar tail the rest; the operands make the two differ
    rng = np.random.default_rng(14)
    a, b, scale, out_scale = _addition_splitting_the_paths(rng, 100)
    a_e, a_t = _pair(a, scale, 0)
    b_e, b_t = _pair(b, scale, 0)
    out_t = torch.ops.quantized.add(a_t, b_t, out_scale, 7)
    _assert_same(quantized_ops.add(a_e, b_e, out_scale, 7), out_t)
    tail = _tail_of_add(a, b, scale, out_scale)
    assert (out_t.int_repr().numpy()[:64] != tail[:64]).all()  # body
    assert (out_t.int_repr().numpy()[64:] == tail[64:]).all()  # tail


def test_quantized_add_of_large_tensors_splits_as_torch_threads():
    # at::parallel_for gives each thread a range; each range has its own scalar tail
    threads_t, threads_e = torch.get_num_threads(), ember.get_num_threads()
    torch.set_num_threads(2)
    ember.set_num_threads(2)
    try:
        rng = np.random.default_rng(15)
        a, b, scale, out_scale = _addition_splitting_the_paths(rng, 70001)
        a_e, a_t = _pair(a, scale, 0)
        b_e, b_t = _pair(b, scale, 0)
        out_t = torch.ops.quantized.add(a_t, b_t, out_scale, 7)
        _assert_same(_qfunctional(ember, out_scale, 7).add(a_e, b_e), out_t)
        tails = np.nonzero(out_t.int_repr().numpy() == _tail_of_add(a, b, scale, out_scale))[0]
        # two ranges of 35001 and 35000 elements, each 34944 (546 blocks of 64) vectorised, then its own tail
        np.testing.assert_array_equal(tails, np.r_[34944:35001, 35001 + 34944:70001])
    finally:
        torch.set_num_threads(threads_t)
        ember.set_num_threads(threads_e)


@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_qfunctional_scalar_ops_match_torch(dtype):
    rng = np.random.default_rng(16)
    q_e, q_t = ember.ao.nn.quantized.QFunctional(), torch.ao.nn.quantized.QFunctional()
    for channels_last in (False, True):
        e, t = _random_pair(rng, (2, 5, 3, 3), dtype, channels_last, scale=0.05, zero_point=10)
        # in range: only the zero point moves; beyond it: a saturated zero point, a stretched scale
        for value in (0.3, -0.2, 0.0, 5.0, -7.0, 100.0, 0.125):
            _assert_same(q_e.add_scalar(e, value), q_t.add_scalar(t, value), f"add_scalar {value}")
            _assert_same(q_e.mul_scalar(e, value), q_t.mul_scalar(t, value), f"mul_scalar {value}")


def test_quantized_op_errors_match_torch():
    rng = np.random.default_rng(17)
    a_e, a_t = _random_pair(rng, (2, 3), "quint8")
    b_e, b_t = _random_pair(rng, (2, 3), "qint8")
    q_e, q_t = ember.ao.nn.quantized.QFunctional(), torch.ao.nn.quantized.QFunctional()
    for name in ("add", "mul"):
        with pytest.raises(RuntimeError) as error_t:
            getattr(q_t, name)(a_t, b_t)
        with pytest.raises(RuntimeError) as error_e:
            getattr(q_e, name)(a_e, b_e)
        assert str(error_e.value) == str(error_t.value).split("\n")[0]
    with pytest.raises(NotImplementedError) as error_t:
        q_t.add(a_t.dequantize(), a_t.dequantize())
    with pytest.raises(NotImplementedError) as error_e:
        q_e.add(a_e.dequantize(), a_e.dequantize())
    assert str(error_e.value).split(". ")[0] == str(error_t.value).split(". ")[0]
    for lib, module in ((ember, q_e), (torch, q_t)):
        with pytest.raises(RuntimeError, match="is not intended to use the 'forward'"):
            module(a_e if lib is ember else a_t)


# ---------------------------------------------------------------- FloatFunctional and the prepare / convert flow


def test_float_functional_computes_torch_ops_and_is_observed_by_prepare():
    rng = np.random.default_rng(18)
    x, y = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((2, 3, 4)).astype(np.float32)
    f_e, f_t = ember.ao.nn.quantized.FloatFunctional(), torch.ao.nn.quantized.FloatFunctional()
    assert repr(f_e) == repr(f_t)
    x_e, y_e, x_t, y_t = ember.tensor(x), ember.tensor(y), torch.tensor(x), torch.tensor(y)
    for name, args_e, args_t in [("add", (x_e, y_e), (x_t, y_t)), ("mul", (x_e, y_e), (x_t, y_t)),
                                 ("add_relu", (x_e, y_e), (x_t, y_t)), ("add_scalar", (x_e, 0.5), (x_t, 0.5)),
                                 ("mul_scalar", (x_e, 0.5), (x_t, 0.5)), ("cat", ([x_e, y_e], 1), ([x_t, y_t], 1)),
                                 ("matmul", (x_e, y_e.transpose(1, 2)), (x_t, y_t.transpose(1, 2)))]:
        np.testing.assert_allclose(getattr(f_e, name)(*args_e).numpy(), getattr(f_t, name)(*args_t).numpy(),
                                   rtol=1e-6, atol=1e-6, err_msg=name)
    for module in (f_e, f_t):
        with pytest.raises(RuntimeError, match="FloatFunctional is not intended to use the 'forward'"):
            module(x_e if module is f_e else x_t)
    prepared = []
    for lib, module in ((ember, f_e), (torch, f_t)):
        wrapper = lib.nn.Sequential()
        wrapper.add_module("f", module)
        wrapper.qconfig = lib.ao.quantization.default_qconfig
        prepared.append(lib.ao.quantization.prepare(wrapper))
    prepared[0].f.add(x_e, y_e)
    prepared[1].f.add(x_t, y_t)
    assert repr(prepared[0]) == repr(prepared[1]).replace("torch.", "ember.")  # the observer saw the same sum
    assert type(prepared[0].f.activation_post_process).__name__ == "MinMaxObserver"


def test_convert_swaps_float_functional_for_qfunctional():
    rng = np.random.default_rng(19)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    converted = []
    for lib in (ember, torch):
        class Adder(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.quant = lib.ao.quantization.QuantStub()
                self.add = lib.ao.nn.quantized.FloatFunctional()
                self.dequant = lib.ao.quantization.DeQuantStub()

            def forward(self, x):
                q = self.quant(x)
                return self.dequant(self.add.add_relu(q, q))

        model = Adder().eval()
        model.qconfig = lib.ao.quantization.default_qconfig
        prepared = lib.ao.quantization.prepare(model)
        prepared(lib.tensor(x))
        converted.append(lib.ao.quantization.convert(prepared))
    ours, theirs = converted
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    assert type(ours.add) is ember.ao.nn.quantized.QFunctional
    assert (ours.add.scale, ours.add.zero_point) == (theirs.add.scale, theirs.add.zero_point)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert float(ours.state_dict()["add.scale"]) == float(theirs.state_dict()["add.scale"])
    np.testing.assert_array_equal(ours(ember.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())
    with pytest.raises(AssertionError, match="expects an instance of FloatFunctional"):
        ember.ao.nn.quantized.QFunctional.from_float(ember.nn.ReLU())


# ---------------------------------------------------------------- quantized BatchNorm2d


def test_quantized_batch_norm_kernel_matches_torch():
    from ember._ops import quantized_ops

    rng = np.random.default_rng(20)
    for trial in range(12):
        channels = int(rng.integers(1, 80))
        stats = [rng.uniform(low, high, channels).astype(np.float32)
                 for low, high in ((0.5, 1.5), (-0.5, 0.5), (-0.5, 0.5), (0.3, 2.0))]
        e, t = _random_pair(rng, (2, channels, 3, 4), channels_last=bool(trial % 2))
        scale, zero_point = float(rng.choice(SCALES)), int(rng.integers(0, 256))
        out_e = quantized_ops.batch_norm2d(e, *[ember.tensor(s) for s in stats], 1e-5, scale, zero_point)
        out_t = torch.ops.quantized.batch_norm2d(t, *[torch.tensor(s) for s in stats], 1e-5, scale, zero_point)
        _assert_same(out_e, out_t, f"batch_norm2d {trial}")


def test_quantized_batch_norm_rounds_as_the_torch_build(monkeypatch):
    from ember._ops import quantized_ops

    # every integer in each of 45 channels, alpha = float32(0.1 / 0.3) and beta ~ float32(0.05 / 0.3): alpha * x +
    # beta lies within an ulp of k + 0.5 for x = 3k + 1.  The AVX2 build (torch's kernel on AVX2 and AVX512 CPUs)
    # fuses the multiply-add and adds the zero point after rounding; the DEFAULT build rounds the multiply-add twice
    # and its vector channels (the first 40) add the zero point before rounding
    rng = np.random.default_rng(25)
    channels = 45
    integers = np.tile(np.arange(256, dtype=np.uint8), channels).reshape(1, channels, 16, 16)
    e, t = _pair(integers, 0.1, 0)
    biases = (np.float32(0.05) + rng.integers(-40, 40, channels) * np.float32(2**-28)).astype(np.float32)
    stats = [np.ones(channels, np.float32), biases, np.zeros(channels, np.float32), np.ones(channels, np.float32)]
    out_t = torch.ops.quantized.batch_norm2d(t, *[torch.tensor(s) for s in stats], 0.0, 0.3, 7)
    _assert_same(quantized_ops.batch_norm2d(e, *[ember.tensor(s) for s in stats], 0.0, 0.3, 7), out_t)
    # the data tells the builds apart: the other build's formulas miss torch's integers in every channel
    monkeypatch.setattr(ember._runtime, "cpu_capability", lambda: "AVX2" if CAPABILITY == "DEFAULT" else "DEFAULT")
    other = quantized_ops.batch_norm2d(e, *[ember.tensor(s) for s in stats], 0.0, 0.3, 7).int_repr().numpy()
    assert (other != out_t.int_repr().numpy()).any(axis=(0, 2, 3)).all()


def test_unfused_batch_norm_is_observed_and_converted_as_torch():
    torch.manual_seed(0)
    converted = []
    rng = np.random.default_rng(21)
    calibration = [rng.standard_normal((2, 3, 6, 6)).astype(np.float32) for _ in range(2)]
    for lib in (torch, ember):
        tq = lib.ao.quantization
        model = lib.nn.Sequential(tq.QuantStub(), lib.nn.BatchNorm2d(3), lib.nn.ReLU(), tq.DeQuantStub()).eval()
        if lib is torch:
            with torch.no_grad():
                model[1].running_mean.uniform_(-0.5, 0.5)
                model[1].running_var.uniform_(0.5, 2.0)
                model[1].weight.uniform_(0.5, 1.5)
                model[1].bias.uniform_(-0.3, 0.3)
            state = {k: ember.tensor(v.numpy()) for k, v in model.state_dict().items()}
        else:
            model.load_state_dict(state)
        model.qconfig = tq.default_qconfig
        prepared = tq.prepare(model)
        for batch in calibration:
            prepared(lib.tensor(batch))
        converted.append(tq.convert(prepared))
    theirs, ours = converted
    assert repr(ours) == repr(theirs).replace("torch.", "ember.")
    assert type(ours[1]).__name__ == "BatchNorm2d" and ours[1]._get_name() == "QuantizedBatchNorm2d"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert float(ours[1].scale) == float(theirs[1].scale) and int(ours[1].zero_point) == int(theirs[1].zero_point)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    _assert_same(ours[1](ours[0](ember.tensor(x))), theirs[1](theirs[0](torch.tensor(x))), "QuantizedBatchNorm2d")
    np.testing.assert_array_equal(ours(ember.tensor(x)).numpy(), theirs(torch.tensor(x)).numpy())


# ---------------------------------------------------------------- a ResNet-style model, end to end


def _resnet(lib):
    nn, tq, nnq = lib.nn, lib.ao.quantization, lib.ao.nn.quantized

    class BasicBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1, self.relu1 = nn.BatchNorm2d(channels), nn.ReLU()
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)
            self.skip = nnq.FloatFunctional()

        def forward(self, x):
            out = self.relu1(self.bn1(self.conv1(x)))
            return self.skip.add_relu(self.bn2(self.conv2(out)), x)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant = tq.QuantStub()
            self.conv, self.bn, self.relu = nn.Conv2d(3, 24, 3, padding=1, bias=False), nn.BatchNorm2d(24), nn.ReLU()
            self.pool = nn.MaxPool2d(3, 2, 1)
            self.layer = BasicBlock(24)
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(24, 10)
            self.dequant = tq.DeQuantStub()

        def forward(self, x):
            x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
            x = self.avgpool(self.layer(x))
            return self.dequant(self.fc(lib.flatten(x, 1)))

    return ResNet()


RESNET_FUSION = [["conv", "bn", "relu"], ["layer.conv1", "layer.bn1", "layer.relu1"], ["layer.conv2", "layer.bn2"]]


def _resnet_pair():
    torch.manual_seed(0)
    model_t = _resnet(torch)
    with torch.no_grad():  # running statistics that make the folding matter
        for module in model_t.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.3, 0.3)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    model_t.eval()
    model_e = _resnet(ember).eval()
    model_e.load_state_dict({k: ember.tensor(v.numpy()) for k, v in model_t.state_dict().items()})
    return model_e, model_t


def _capture(model):
    """name -> output of every submodule (QFunctional's result through its Identity activation_post_process)."""
    outputs = {}
    for name, module in model.named_modules():
        if name and not name.endswith("_packed_params"):
            module.register_forward_hook(lambda m, i, o, name=name: outputs.__setitem__(name, o))
    return outputs


def test_resnet_static_quantization_matches_torch():
    torch.backends.quantized.engine = "x86"
    rng = np.random.default_rng(22)
    calibration = [rng.standard_normal((4, 3, 16, 16)).astype(np.float32) for _ in range(3)]
    prepared = []
    for lib, model in zip((ember, torch), _resnet_pair()):
        fused = lib.ao.quantization.fuse_modules(model, RESNET_FUSION)
        fused.qconfig = lib.ao.quantization.default_qconfig
        prepared.append(lib.ao.quantization.prepare(fused))
        for batch in calibration:
            prepared[-1](lib.tensor(batch))
    prepared_e, prepared_t = prepared
    observers_t = {n: m for n, m in prepared_t.named_modules() if type(m).__name__ == "MinMaxObserver"}
    observers_e = {n: m for n, m in prepared_e.named_modules() if type(m).__name__ == "MinMaxObserver"}
    assert sorted(observers_e) == sorted(observers_t)
    assert "layer.skip.activation_post_process" in observers_e  # FloatFunctional observed through its attribute
    for name, observer_t in observers_t.items():
        # float convolutions differ from torch's in the last bits (summation order): ranges agree closely; then
        # torch's calibrated ranges are loaded so that convert and the kernels compare exactly
        np.testing.assert_allclose(observers_e[name].max_val.numpy(), observer_t.max_val.numpy(), rtol=1e-5)
        observers_e[name].min_val.copy_(ember.tensor(observer_t.min_val.numpy()))
        observers_e[name].max_val.copy_(ember.tensor(observer_t.max_val.numpy()))
    assert repr(prepared_e) == repr(prepared_t).replace("torch.", "ember.")

    converted_e = ember.ao.quantization.convert(prepared_e)
    converted_t = torch.ao.quantization.convert(prepared_t)
    assert repr(converted_e) == repr(converted_t).replace("torch.", "ember.")
    assert type(converted_e.layer.skip) is ember.ao.nn.quantized.QFunctional
    assert type(converted_e.pool) is ember.nn.MaxPool2d  # pools and ReLU stay float modules, as in torch
    assert list(converted_e.state_dict()) == list(converted_t.state_dict())

    outputs_e, outputs_t = _capture(converted_e), _capture(converted_t)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    final_e, final_t = converted_e(ember.tensor(x)), converted_t(torch.tensor(x))
    quantized = [name for name, out in outputs_t.items() if isinstance(out, torch.Tensor) and out.is_quantized]
    for name in ("quant", "conv", "pool", "layer.conv1", "layer.conv2", "layer.skip.activation_post_process",
                 "layer", "avgpool", "fc"):
        assert name in quantized, name
    for name in quantized:
        _assert_same(outputs_e[name], outputs_t[name], name)
    np.testing.assert_array_equal(final_e.numpy(), final_t.detach().numpy())
    # a meaningful comparison: the residual sum and the pooled features use much of their range
    assert np.unique(outputs_e["layer.skip.activation_post_process"].int_repr().numpy()).size > 50
    assert np.unique(outputs_e["avgpool"].int_repr().numpy()).size > 20
