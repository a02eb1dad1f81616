"""Round-17 sweep: argument variants of nn.functional, losses, init and nn.utils run in torch and ember.

A table of snippets that agreed (or were fixed to agree) when probed, kept as a regression net for the
rarely used arguments: reductions, weights, ignore_index, label smoothing, interpolation modes, padding
modes, pooling geometry, normalisation flags, activation parameters, attention masks and nn.utils options.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _probe_r17 import assert_parity, ints, rnd

torch = pytest.importorskip("torch")


def F(lib):
    return lib.nn.functional


CASES = {}


def case(name, grad=True, rtol=1e-6, atol=1e-8):
    """Register fn(lib, make) under `name`."""
    def register(fn):
        CASES[name] = (fn, grad, rtol, atol)
        return fn
    return register


# ---------------------------------------------------------------- losses

for _name in ["l1_loss", "mse_loss", "smooth_l1_loss", "huber_loss", "soft_margin_loss"]:
    for _reduction in ["none", "sum", "mean"]:
        for _shape in [(5,), (2, 3, 4), (0, 3), ()]:
            @case(f"{_name}-{_reduction}-{_shape}")
            def _pointwise(lib, make, name=_name, reduction=_reduction, shape=_shape):
                target = rnd(*shape, seed=2)
                target = np.sign(target) if name == "soft_margin_loss" else target
                return getattr(F(lib), name)(make(rnd(*shape, seed=1), True), make(target), reduction=reduction)

for _beta in [0.0, 2.0, -1.0]:
    case(f"smooth_l1-beta{_beta}")(lambda lib, make, beta=_beta: F(lib).smooth_l1_loss(
        make(rnd(6), True), make(rnd(6, seed=3)), beta=beta))
for _delta in [0.5, -0.5]:
    case(f"huber-delta{_delta}")(lambda lib, make, delta=_delta: F(lib).huber_loss(
        make(rnd(6), True), make(rnd(6, seed=3)), delta=delta))

for _reduction in ["none", "sum", "mean"]:
    for _ignore in [-100, 1]:
        for _weighted in [False, True]:
            @case(f"nll4d-{_reduction}-ignore{_ignore}-w{_weighted}")
            def _nll(lib, make, reduction=_reduction, ignore=_ignore, weighted=_weighted):
                weight = make(rnd(3, low=0.5, high=2, seed=5)) if weighted else None
                return F(lib).nll_loss(make(rnd(2, 3, 4, 5, seed=1), True), make(ints(3, 2, 4, 5)), weight,
                                       ignore_index=ignore, reduction=reduction)

            for _smoothing in [0.0, 0.2]:
                @case(f"ce-{_reduction}-ignore{_ignore}-w{_weighted}-ls{_smoothing}")
                def _ce(lib, make, reduction=_reduction, ignore=_ignore, weighted=_weighted, smoothing=_smoothing):
                    weight = make(rnd(3, low=0.5, high=2, seed=5)) if weighted else None
                    return F(lib).cross_entropy(make(rnd(2, 3, 4, seed=1), True), make(ints(3, 2, 4)), weight,
                                                ignore_index=ignore, reduction=reduction, label_smoothing=smoothing)

        @case(f"ce-probabilities-{_reduction}")
        def _ce_probabilities(lib, make, reduction=_reduction):
            return F(lib).cross_entropy(make(rnd(2, 3, 4, seed=1), True), make(rnd(2, 3, 4, low=0, high=1, seed=2)),
                                        make(rnd(3, low=0.5, high=2, seed=5)), reduction=reduction,
                                        label_smoothing=0.1)

        for _pos_weight in [False, True]:
            @case(f"bce-logits-{_reduction}-pw{_pos_weight}")
            def _bce_logits(lib, make, reduction=_reduction, pos_weight=_pos_weight):
                return F(lib).binary_cross_entropy_with_logits(
                    make(rnd(3, 4), True), make(rnd(3, 4, low=0, high=1, seed=2), True),
                    weight=make(rnd(4, low=0.5, high=2, seed=5)),
                    pos_weight=make(rnd(4, low=0.5, high=2, seed=6)) if pos_weight else None, reduction=reduction)

    for _log_target in [False, True]:
        case(f"kl-{_reduction}-lt{_log_target}")(lambda lib, make, reduction=_reduction, lt=_log_target: F(lib).kl_div(
            make(np.log(rnd(3, 4, low=0.1, high=1)), True), make(rnd(3, 4, low=0.01, high=1, seed=2), True),
            reduction=reduction, log_target=lt))
    for _log_input in [False, True]:
        case(f"poisson-{_reduction}-li{_log_input}")(
            lambda lib, make, reduction=_reduction, li=_log_input: F(lib).poisson_nll_loss(
                make(rnd(3, 4) if li else rnd(3, 4, low=0.1, high=2), True), make(ints(5, 3, 4).astype(float)),
                log_input=li, full=True, reduction=reduction, eps=1e-4))
    for _var_shape in [(3, 4), (3, 1), (3,)]:
        case(f"gaussian-{_reduction}-{_var_shape}")(
            lambda lib, make, reduction=_reduction, shape=_var_shape: F(lib).gaussian_nll_loss(
                make(rnd(3, 4), True), make(rnd(3, 4, seed=3), True), make(rnd(*shape, low=0.1, high=2, seed=4), True),
                full=True, reduction=reduction))
    for _swap in [False, True]:
        for _p in [1, 3]:
            case(f"triplet-{_reduction}-swap{_swap}-p{_p}")(
                lambda lib, make, reduction=_reduction, swap=_swap, p=_p: F(lib).triplet_margin_loss(
                    make(rnd(4, 5), True), make(rnd(4, 5, seed=2), True), make(rnd(4, 5, seed=3), True), margin=0.5,
                    p=p, swap=swap, reduction=reduction))
    case(f"multi_margin-{_reduction}")(lambda lib, make, reduction=_reduction: F(lib).multi_margin_loss(
        make(rnd(3, 4), True), make(np.array([3, 0, 1])), p=2, margin=0.7, weight=make(rnd(4, low=0.5, high=1)),
        reduction=reduction))
    case(f"multilabel_margin-{_reduction}")(lambda lib, make, reduction=_reduction: F(lib).multilabel_margin_loss(
        make(rnd(3, 4), True), make(np.array([[3, 0, -1, 1], [0, 1, 2, 3], [-1, 1, 2, 0]])), reduction=reduction))
    case(f"cosine_embedding-{_reduction}")(lambda lib, make, reduction=_reduction: F(lib).cosine_embedding_loss(
        make(rnd(4, 5), True), make(rnd(4, 5, seed=2), True), make(np.array([1, -1, 1, -1])), margin=0.2,
        reduction=reduction))
    for _blank in [0, 3]:
        @case(f"ctc-{_reduction}-blank{_blank}")
        def _ctc(lib, make, reduction=_reduction, blank=_blank):
            targets = np.array([[1, 2, 2], [3, 1, 0]]) if blank == 0 else np.array([[0, 1, 1], [2, 0, 2]])
            return F(lib).ctc_loss(make(rnd(6, 2, 4), True).log_softmax(-1), make(targets), (6, 5), (3, 2),
                                   blank=blank, reduction=reduction)
    for _zero_infinity in [False, True]:
        case(f"ctc-impossible-{_reduction}-zi{_zero_infinity}")(
            lambda lib, make, reduction=_reduction, zi=_zero_infinity: F(lib).ctc_loss(
                make(rnd(6, 2, 4), True).log_softmax(-1), make(np.array([[1, 2, 2], [3, 1, 0]])), (2, 5), (3, 2),
                reduction=reduction, zero_infinity=zi))

case("ce-empty-batch")(lambda lib, make: F(lib).cross_entropy(make(rnd(0, 4), True), make(np.zeros(0, np.int64))))
case("ce-all-ignored")(lambda lib, make: F(lib).cross_entropy(make(rnd(3, 4), True), make(np.array([1, 1, 1])),
                                                              ignore_index=1, label_smoothing=0.1))
case("nll-unbatched")(lambda lib, make: F(lib).nll_loss(make(rnd(4), True), make(np.array(2))))
case("nll-target-out-of-bounds")(lambda lib, make: F(lib).nll_loss(make(rnd(3, 4)), make(np.array([1, 2, 7]))))
case("bce-at-0-and-1")(lambda lib, make: F(lib).binary_cross_entropy(make(np.array([0.0, 1.0, 0.5]), True),
                                                                     make(np.array([1.0, 0.0, 0.3]))))
case("gaussian-negative-var")(lambda lib, make: F(lib).gaussian_nll_loss(make(rnd(3)), make(rnd(3)),
                                                                         make(np.array([1.0, -1.0, 1.0]))))

# ---------------------------------------------------------------- interpolate, grid_sample, pad, unfold

_SHAPES = {3: (2, 3, 7), 4: (1, 2, 5, 7), 5: (1, 2, 3, 4, 5)}
for _mode, _dims in {"nearest": [3, 4, 5], "nearest-exact": [3, 4], "linear": [3], "bilinear": [4], "bicubic": [4],
                     "trilinear": [5], "area": [3, 4, 5]}.items():
    for _ndim in _dims:
        for _spec in [("size", (11, 6, 8)[:_ndim - 2]), ("scale_factor", 0.6), ("scale_factor", (1.7, 0.5, 2.3)[:_ndim - 2])]:
            _corners = [False, True] if _mode in ("linear", "bilinear", "bicubic", "trilinear") else [None]
            for _align in _corners:
                _antialias = [False, True] if _mode in ("bilinear", "bicubic") else [False]
                for _aa in _antialias:
                    @case(f"interpolate-{_mode}-{_ndim}d-{_spec}-ac{_align}-aa{_aa}")
                    def _interpolate(lib, make, mode=_mode, ndim=_ndim, spec=_spec, align=_align, aa=_aa):
                        kwargs = {spec[0]: spec[1], "recompute_scale_factor": True if spec[0] != "size" else None}
                        return F(lib).interpolate(make(rnd(*_SHAPES[ndim]), True), mode=mode, align_corners=align,
                                                  antialias=aa, **kwargs)

for _mode in ["bilinear", "nearest", "bicubic"]:
    for _padding in ["zeros", "border", "reflection"]:
        for _align in [False, True]:
            @case(f"grid_sample-{_mode}-{_padding}-ac{_align}", rtol=1e-5, atol=1e-7)
            def _grid_sample(lib, make, mode=_mode, padding=_padding, align=_align):
                grid = make(rnd(2, 4, 3, 2, low=-1.4, high=1.4, seed=3), mode != "nearest")
                return F(lib).grid_sample(make(rnd(2, 3, 5, 6), True), grid, mode=mode, padding_mode=padding,
                                          align_corners=align)
for _align in [False, True]:
    case(f"affine_grid-2d-ac{_align}")(lambda lib, make, align=_align: F(lib).affine_grid(
        make(rnd(2, 2, 3), True), [2, 3, 4, 5], align_corners=align))
    case(f"affine_grid-3d-ac{_align}")(lambda lib, make, align=_align: F(lib).affine_grid(
        make(rnd(2, 3, 4), True), [2, 3, 2, 4, 5], align_corners=align))

for _mode in ["constant", "reflect", "replicate", "circular"]:
    for _ndim, _pad in [(3, (1, 2)), (3, (-1, 2)), (4, (2, 0, 1, 1)), (4, (-1, 1, 1, -1)), (5, (1, 0, 1, 1, 0, 2))]:
        case(f"pad-{_mode}-{_ndim}d-{_pad}")(lambda lib, make, mode=_mode, ndim=_ndim, pad=_pad: F(lib).pad(
            make(rnd(*(2, 3, 4, 5, 4)[:ndim]), True), pad, mode=mode, **({"value": 1.5} if mode == "constant" else {})))
case("pad-reflect-too-big")(lambda lib, make: F(lib).pad(make(rnd(1, 2, 3)), (3, 0), mode="reflect"))
case("pad-circular-too-big")(lambda lib, make: F(lib).pad(make(rnd(1, 2, 3)), (4, 0), mode="circular"))

for _kernel, _dilation, _padding, _stride in [(2, 1, 0, 1), ((2, 3), (1, 2), (1, 0), (2, 1)), (3, 2, 1, 2)]:
    case(f"unfold-{_kernel}-{_dilation}-{_padding}-{_stride}")(
        lambda lib, make, a=(_kernel, _dilation, _padding, _stride): F(lib).unfold(make(rnd(2, 3, 6, 7), True), *a))

    @case(f"fold-{_kernel}-{_dilation}-{_padding}-{_stride}")
    def _fold(lib, make, a=(_kernel, _dilation, _padding, _stride)):
        blocks = F(lib).unfold(make(rnd(2, 3, 6, 7)), *a)
        return F(lib).fold(make(rnd(*blocks.shape, seed=4), True), (6, 7), *a)
case("pixel_shuffle-5d")(lambda lib, make: F(lib).pixel_shuffle(make(rnd(2, 2, 4, 2, 3), True), 2))
case("pixel_unshuffle-3d")(lambda lib, make: F(lib).pixel_unshuffle(make(rnd(3, 4, 6), True), 2))
case("pixel_shuffle-bad-channels")(lambda lib, make: F(lib).pixel_shuffle(make(rnd(2, 6, 3, 4)), 2))

# ---------------------------------------------------------------- embedding, similarity, one_hot

_WEIGHT = rnd(6, 4)
for _mode in ["sum", "mean", "max"]:
    for _padding_idx in [None, 2]:
        for _last in [False, True]:
            @case(f"embedding_bag-{_mode}-pad{_padding_idx}-last{_last}")
            def _bag(lib, make, mode=_mode, padding_idx=_padding_idx, last=_last):
                offsets = make(np.array([0, 3, 3, 5] + ([7] if last else [])))
                return F(lib).embedding_bag(make(np.array([0, 2, 5, 2, 2, 1, 3])), make(_WEIGHT, True), offsets,
                                            mode=mode, padding_idx=padding_idx, include_last_offset=last)
case("embedding_bag-per_sample_weights")(lambda lib, make: F(lib).embedding_bag(
    make(np.array([0, 2, 5, 2])), make(_WEIGHT, True), make(np.array([0, 2])), mode="sum",
    per_sample_weights=make(rnd(4, seed=3), True), padding_idx=2))
case("embedding-padding_idx-negative")(lambda lib, make: F(lib).embedding(
    make(np.array([[0, 2, 5], [2, 2, 1]])), make(_WEIGHT, True), padding_idx=-1))
case("embedding-scale_grad_by_freq")(lambda lib, make: F(lib).embedding(
    make(np.array([[0, 2, 5], [2, 2, 1]])), make(_WEIGHT, True), scale_grad_by_freq=True))
for _norm_type in [1.0, 2.0, math.inf]:
    @case(f"embedding-max_norm-p{_norm_type}", grad=False)
    def _max_norm(lib, make, norm_type=_norm_type):
        weight = make(_WEIGHT * 2)
        return F(lib).embedding(make(np.array([0, 2, 5, 2])), weight, max_norm=1.5, norm_type=norm_type), weight
for _p in [1, 3.5, math.inf]:
    case(f"normalize-p{_p}")(lambda lib, make, p=_p: F(lib).normalize(make(rnd(3, 4), True), p=p, dim=0))
for _p in [1, 2, math.inf]:
    case(f"pairwise_distance-p{_p}")(lambda lib, make, p=_p: F(lib).pairwise_distance(
        make(rnd(2, 1, 4), True), make(rnd(3, 4, seed=2), True), p=p, keepdim=True, eps=0.1))
for _num_classes, _values in [(-1, [0, 3, 1]), (5, [[0, 3], [1, 1]]), (3, [0, 3]), (-1, [0, -1])]:
    case(f"one_hot-{_num_classes}-{_values}")(lambda lib, make, n=_num_classes, v=_values: F(lib).one_hot(
        make(np.array(v)), n))

# ---------------------------------------------------------------- pooling

_POOL_SHAPES = {1: (2, 3, 9), 2: (2, 2, 7, 8), 3: (1, 2, 5, 6, 7)}
for _dims in [1, 2, 3]:
    for _kernel, _stride, _padding, _ceil in [(3, 2, 1, True), (2, None, 0, True), (4, 3, 2, True), (2, 1, 1, False)]:
        for _include_pad in [True, False]:
            @case(f"avg_pool{_dims}d-k{_kernel}s{_stride}p{_padding}c{_ceil}cip{_include_pad}")
            def _avg(lib, make, dims=_dims, a=(_kernel, _stride, _padding, _ceil, _include_pad)):
                extra = {"divisor_override": 3} if dims > 1 and a[4] else {}
                return getattr(F(lib), f"avg_pool{dims}d")(make(rnd(*_POOL_SHAPES[dims]), True), *a, **extra)
        case(f"max_pool{_dims}d-k{_kernel}s{_stride}p{_padding}c{_ceil}-dilation2")(
            lambda lib, make, dims=_dims, a=(_kernel, _stride, _padding): getattr(F(lib), f"max_pool{dims}d")(
                make(rnd(*_POOL_SHAPES[dims]), True), a[0], a[1], min(a[2], a[0] // 2), 2, True, True))
    for _output in [1, 3, 5]:
        case(f"adaptive_avg{_dims}d-{_output}")(lambda lib, make, dims=_dims, out=_output: getattr(
            F(lib), f"adaptive_avg_pool{dims}d")(make(rnd(*_POOL_SHAPES[dims]), True), out))
        case(f"adaptive_max{_dims}d-{_output}")(lambda lib, make, dims=_dims, out=_output: getattr(
            F(lib), f"adaptive_max_pool{dims}d")(make(rnd(*_POOL_SHAPES[dims]), True), out, return_indices=True))
    for _norm_type in [1, 2, 3.0]:
        case(f"lp_pool{_dims}d-p{_norm_type}")(lambda lib, make, dims=_dims, p=_norm_type: getattr(
            F(lib), f"lp_pool{dims}d")(make(rnd(*_POOL_SHAPES[dims], low=0.1, high=2), True), p, 2, None, True))
for _dims in [2, 3]:
    for _spec in [{"output_size": 3}, {"output_ratio": (0.5,) * _dims}]:
        @case(f"fractional_max_pool{_dims}d-{_spec}")
        def _fractional(lib, make, dims=_dims, spec=_spec):
            x = make(rnd(*_POOL_SHAPES[dims]), True)
            samples = make(rnd(x.shape[0], x.shape[1], dims, low=0, high=1, seed=9))
            return getattr(F(lib), f"fractional_max_pool{dims}d")(x, 2, _random_samples=samples, return_indices=True,
                                                                   **spec)
case("max_pool-nan")(lambda lib, make: F(lib).max_pool1d(make(np.array([[[1.0, np.nan, 3.0, 0.0]]]), True), 2,
                                                         return_indices=True))

# ---------------------------------------------------------------- normalisation

for _training in [False, True]:
    for _shape in [(4, 3), (2, 3, 5), (2, 3, 4, 4)]:
        @case(f"batch_norm-training{_training}-{_shape}")
        def _batch_norm(lib, make, training=_training, shape=_shape):
            mean, var = make(rnd(3, seed=4)), make(rnd(3, seed=5, low=0.5, high=2))
            out = F(lib).batch_norm(make(rnd(*shape), True), mean, var, make(rnd(3, seed=6), True),
                                    make(rnd(3, seed=7), True), training=training, momentum=0.3, eps=1e-3)
            return out, mean, var
for _use_input_stats in [True, False]:
    @case(f"instance_norm-uis{_use_input_stats}")
    def _instance_norm(lib, make, use_input_stats=_use_input_stats):
        mean, var = make(rnd(3, seed=4)), make(rnd(3, seed=5, low=0.5, high=2))
        out = F(lib).instance_norm(make(rnd(2, 3, 5, 4), True), mean, var, make(rnd(3, seed=6), True), None,
                                   use_input_stats=use_input_stats, momentum=0.2, eps=1e-4)
        return out, mean, var
for _groups, _shape in [(1, (2, 6, 4)), (3, (2, 6, 4)), (6, (2, 6, 2, 3)), (2, (2, 6))]:
    case(f"group_norm-{_groups}-{_shape}")(lambda lib, make, g=_groups, shape=_shape: F(lib).group_norm(
        make(rnd(*shape), True), g, make(rnd(6, seed=3), True), make(rnd(6, seed=4), True), eps=1e-3))
for _affine in ["none", "w", "b", "wb"]:
    case(f"layer_norm-{_affine}")(lambda lib, make, affine=_affine: F(lib).layer_norm(
        make(rnd(2, 3, 4), True), (3, 4), make(rnd(3, 4, seed=3), True) if "w" in affine else None,
        make(rnd(3, 4, seed=4), True) if "b" in affine else None, eps=1e-3))
for _eps in [None, 1e-2]:
    case(f"rms_norm-eps{_eps}")(lambda lib, make, eps=_eps: F(lib).rms_norm(
        make(rnd(2, 3, 4), True), (3, 4), make(rnd(3, 4, seed=3), True), eps=eps))
for _size in [1, 2, 5]:
    for _shape in [(2, 6, 4), (2, 6, 3, 3), (1, 6, 2, 2, 2)]:
        case(f"local_response_norm-{_size}-{_shape}")(lambda lib, make, size=_size, shape=_shape: F(
            lib).local_response_norm(make(rnd(*shape), True), size, alpha=1e-2, beta=0.6, k=1.5))

# ---------------------------------------------------------------- activations

_X = rnd(3, 5) * 3
_EDGES = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 25.0, -25.0, 19.9, 20.0, 20.1])
for _approximate in ["none", "tanh"]:
    case(f"gelu-{_approximate}")(lambda lib, make, a=_approximate: F(lib).gelu(make(_X, True), approximate=a))
for _beta, _threshold in [(2, 20), (0.5, 1), (-1, 5)]:
    case(f"softplus-{_beta}-{_threshold}")(lambda lib, make, b=_beta, t=_threshold: F(lib).softplus(
        make(_EDGES, True), beta=b, threshold=t))
for _low, _high in [(-2, 0.5), (1, 1), (2, 1)]:
    case(f"hardtanh-{_low}-{_high}")(lambda lib, make, lo=_low, hi=_high: F(lib).hardtanh(make(_X, True), lo, hi))
for _alpha in [0.5, 2.0]:
    case(f"celu-{_alpha}")(lambda lib, make, a=_alpha: F(lib).celu(make(_X, True), a))
for _dim in [0, 1, -1]:
    case(f"glu-{_dim}")(lambda lib, make, d=_dim: F(lib).glu(make(rnd(4, 6, 2), True), d))
for _dim in [0, None]:
    case(f"softmin-{_dim}")(lambda lib, make, d=_dim: F(lib).softmin(make(_X, True, "float32"), d, dtype=lib.float64))
case("rrelu-eval")(lambda lib, make: F(lib).rrelu(make(_X, True), 0.1, 0.3, training=False))
case("threshold")(lambda lib, make: F(lib).threshold(make(np.array([0.5, 0.4, 0.6]), True), 0.5, -1.0))
case("hardswish-edges")(lambda lib, make: F(lib).hardswish(make(_EDGES, True)))
case("hardsigmoid-edges")(lambda lib, make: F(lib).hardsigmoid(make(_EDGES, True)))
case("log_softmax-inf-row")(lambda lib, make: F(lib).log_softmax(make(np.array([[-np.inf, 0.0, -np.inf]]), True), 1))
case("prelu-channels")(lambda lib, make: F(lib).prelu(make(rnd(2, 3, 4), True), make(rnd(3, seed=4), True)))

# ---------------------------------------------------------------- attention


def _sdpa(lib, make, length=4, source=5, mask=None, causal=False, heads=(4, 4), **kwargs):
    q = make(rnd(2, heads[0], length, 6, seed=1), True)
    k = make(rnd(2, heads[1], source, 6, seed=2), True)
    v = make(rnd(2, heads[1], source, 7, seed=3), True)
    if mask == "bool":
        mask = make(rnd(length, source, seed=4) > -0.5)
    elif mask == "float":
        mask = make(rnd(length, source, seed=4))
    return F(lib).scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, **kwargs)


for _length, _source in [(4, 5), (5, 4), (1, 3)]:
    case(f"sdpa-causal-L{_length}-S{_source}")(lambda lib, make, lq=_length, ls=_source: _sdpa(
        lib, make, lq, ls, causal=True))
case("sdpa-bool-mask")(lambda lib, make: _sdpa(lib, make, mask="bool"))
case("sdpa-float-mask-scale")(lambda lib, make: _sdpa(lib, make, mask="float", scale=0.3))
case("sdpa-gqa")(lambda lib, make: _sdpa(lib, make, heads=(4, 2), enable_gqa=True))
case("sdpa-gqa-bad")(lambda lib, make: _sdpa(lib, make, heads=(4, 3), enable_gqa=True))
case("sdpa-causal-and-mask")(lambda lib, make: _sdpa(lib, make, mask="bool", causal=True))


def _mha(lib, make, kdim=None, vdim=None, add_bias_kv=False, add_zero_attn=False, batch_first=False,
         key_padding_mask=None, attn_mask=None, average=True):
    module = lib.nn.MultiheadAttention(8, 2, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn, kdim=kdim,
                                       vdim=vdim, batch_first=batch_first, dtype=lib.float64)
    with lib.no_grad():
        for index, (_, parameter) in enumerate(sorted(module.named_parameters())):
            parameter.copy_(lib.tensor(rnd(*parameter.shape, seed=50 + index) * 0.3))

    def shape(length, width):
        return (2, length, width) if batch_first else (length, 2, width)

    kwargs = {}
    if key_padding_mask == "bool":
        mask = rnd(2, 4, seed=5) > 0.3
        mask[:, 0] = False
        kwargs["key_padding_mask"] = make(mask)
    elif key_padding_mask == "float":
        kwargs["key_padding_mask"] = make(rnd(2, 4, seed=5))
    if attn_mask == "bool":
        mask = rnd(3, 4, seed=6) > 0.5
        mask[:, 0] = False
        kwargs["attn_mask"] = make(mask)
    elif attn_mask == "3d":
        kwargs["attn_mask"] = make(rnd(4, 3, 4, seed=6))
    return module(make(rnd(*shape(3, 8), seed=1), True), make(rnd(*shape(4, kdim or 8), seed=2), True),
                  make(rnd(*shape(4, vdim or 8), seed=3), True), average_attn_weights=average, **kwargs)


for _variant in [{}, {"kdim": 5, "vdim": 3}, {"add_bias_kv": True}, {"add_zero_attn": True}, {"batch_first": True},
                 {"key_padding_mask": "bool"}, {"key_padding_mask": "float", "attn_mask": "3d"},
                 {"attn_mask": "bool", "add_zero_attn": True}, {"average": False, "add_bias_kv": True},
                 {"kdim": 5, "vdim": 3, "batch_first": True, "key_padding_mask": "bool"}]:
    case(f"mha-{_variant}")(lambda lib, make, v=_variant: _mha(lib, make, **v))

# ---------------------------------------------------------------- init and nn.utils

for _nonlinearity in ["linear", "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu", "gelu"]:
    case(f"calculate_gain-{_nonlinearity}", grad=False)(
        lambda lib, make, n=_nonlinearity: [lib.nn.init.calculate_gain(n)])
for _param in [None, 0.2, 1, True, "x"]:
    case(f"calculate_gain-leaky-{_param}", grad=False)(
        lambda lib, make, p=_param: [lib.nn.init.calculate_gain("leaky_relu", p)])
for _shape in [(3, 4), (2, 3, 4, 5), (5,), (4, 0)]:
    case(f"fan-{_shape}", grad=False)(lambda lib, make, s=_shape: list(
        lib.nn.init._calculate_fan_in_and_fan_out(lib.empty(*s))))


def _trunc_normal_bounds(lib, make):
    values = lib.nn.init.trunc_normal_(lib.empty(2000, dtype=lib.float64), 3, 0.5, 2, 4)
    return [bool(values.min() >= 2), bool(values.max() <= 4), round(float(values.mean()), 1)]


case("trunc_normal_-bounds", grad=False)(_trunc_normal_bounds)


def _clip(lib, make, max_norm, norm_type, foreach):
    grads = [rnd(3, 4, seed=10), rnd(5, seed=11) * 3, rnd(2, 2, seed=12)]
    parameters = []
    for grad in grads:
        parameter = lib.nn.Parameter(lib.zeros(grad.shape, dtype=lib.float64))
        parameter.grad = lib.tensor(grad)
        parameters.append(parameter)
    total = lib.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=norm_type, foreach=foreach)
    return [total] + [p.grad for p in parameters]


for _norm_type in [2, 1, math.inf, "inf", 0.5]:
    for _foreach in [None, True]:
        case(f"clip_grad_norm-{_norm_type}-fe{_foreach}", grad=False)(
            lambda lib, make, n=_norm_type, fe=_foreach: _clip(lib, make, 0.5, n, fe))


def _clip_nonfinite(lib, make, error):
    parameter = lib.nn.Parameter(lib.zeros(3, dtype=lib.float64))
    parameter.grad = lib.tensor([1.0, math.nan, 2.0], dtype=lib.float64)
    return [lib.nn.utils.clip_grad_norm_([parameter], 1.0, error_if_nonfinite=error), parameter.grad]


for _error in [False, True]:
    case(f"clip_grad_norm-nonfinite-{_error}", grad=False)(lambda lib, make, e=_error: _clip_nonfinite(lib, make, e))

_SEQUENCES = [rnd(3, 2, seed=1), rnd(5, 2, seed=2), rnd(1, 2, seed=3)]
for _batch_first in [False, True]:
    for _side in ["right", "left"]:
        case(f"pad_sequence-bf{_batch_first}-{_side}")(lambda lib, make, bf=_batch_first, side=_side: lib.nn.utils.rnn
                                                      .pad_sequence([make(s, True) for s in _SEQUENCES], batch_first=bf,
                                                                    padding_value=-1.5, padding_side=side))
    for _enforce, _lengths in [(True, [5, 3, 1]), (False, [3, 5, 1])]:
        @case(f"pack_padded-bf{_batch_first}-enforce{_enforce}")
        def _pack(lib, make, bf=_batch_first, enforce=_enforce, lengths=_lengths):
            packed = lib.nn.utils.rnn.pack_padded_sequence(make(rnd(3, 5, 2) if bf else rnd(5, 3, 2), True), lengths,
                                                           batch_first=bf, enforce_sorted=enforce)
            padded, out_lengths = lib.nn.utils.rnn.pad_packed_sequence(packed, batch_first=bf, padding_value=-2.0,
                                                                       total_length=7)
            return [packed.data, packed.batch_sizes, padded, out_lengths]


@pytest.mark.parametrize("name", sorted(CASES))
def test_sweep(name):
    fn, grad, rtol, atol = CASES[name]
    assert_parity(fn, grad=grad, rtol=rtol, atol=atol, message_chars=60)
