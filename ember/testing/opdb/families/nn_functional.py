"""OpInfos for torch.nn.functional: activations, linear/conv, pooling, normalization, losses, pad, interpolate, sdpa.

Every entry calls `lib.nn.functional.<name>`.  Samples are tiny on purpose: tests/test_opdb.py runs
gradcheck and gradgradcheck (O(numel^2)) on samples of at most 40 elements.  Class weights and
pos_weight are passed as Python lists and turned into tensors of the input's dtype by the caller, so
the gradient tests do not differentiate with respect to them (torch has no derivative for nll_loss's
weight).  Pooling inputs that pick maxima use distinct values, so the gradient has no ties.
"""

from __future__ import annotations

import numpy as np

from ..core import DType, ErrorSample, OpInfo, Sample, make_array

FLOAT = ("float32", "float64")
HALF_TOO = ("float32", "float64", "float16", "bfloat16")


def _functional(name, tensor_kwargs=()):
    """lib.nn.functional.<name>(*args, **kwargs); list-valued `tensor_kwargs` become tensors of the input's dtype."""

    def run(lib, *args, **kwargs):
        for key in tensor_kwargs:
            if isinstance(kwargs.get(key), list):
                kwargs[key] = lib.tensor(kwargs[key], dtype=args[0].dtype, device=args[0].device)
        return getattr(lib.nn.functional, name)(*args, **kwargs)

    return run


def _array(shape, dtype, rng, low=-3.0, high=3.0):
    return make_array(shape, dtype, rng, low, high)


def _distinct(shape, dtype, rng):
    """A shuffled range (no ties), scaled to a small interval."""
    count = int(np.prod(shape))
    values = (rng.permutation(count) - count / 2) / 4 + 0.125
    return values.reshape(shape).astype(make_array((), dtype, rng).dtype)


def _op(name, samples, dtypes=FLOAT, tensor_kwargs=(), **options):
    return OpInfo(name, samples, call=_functional(name, tensor_kwargs), dtypes=dtypes, **options)


# ---------------------------------------------------------------- activations


def _activation_samples(kwargs_list=(), positive_inf=True):
    """positive_inf=False: torch's vectorised gelu returns nan for +inf (its scalar path returns inf), an
    artifact of the SIMD kernel that ember does not copy."""

    def samples(dtype, rng):
        shapes = [(), (0,), (5,), (3, 4), (2, 3, 2)]
        result = [Sample((_array(s, dtype, rng),)) for s in shapes]
        result.append(Sample((_array((4, 3), dtype, rng),), noncontiguous=True, name="noncontiguous"))
        edge = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 25.0, -25.0])
        if not positive_inf:
            edge = edge[1:]
        result.append(Sample((edge.astype(make_array((), dtype, rng).dtype),), grad=False, name="edge values"))
        for kwargs in kwargs_list:
            result.append(Sample((_array((3, 4), dtype, rng),), dict(kwargs), name=f"kwargs {kwargs}"))
        return result

    return samples


def _softmax_samples(dtype, rng):
    return [
        Sample((_array((3, 4), dtype, rng),), {"dim": 1}),
        Sample((_array((2, 3, 2), dtype, rng),), {"dim": 0}),
        Sample((_array((5,), dtype, rng),), {"dim": -1}),
        Sample((_array((), dtype, rng),), {"dim": 0}),
        Sample((_array((0, 3), dtype, rng),), {"dim": 1}),
        Sample((_array((4, 3), dtype, rng),), {"dim": 0}, noncontiguous=True),
        Sample((np.array([[1.0, np.inf, 2.0], [-np.inf, -np.inf, 0.0]]).astype(make_array((), dtype, rng).dtype),),
               {"dim": 1}, grad=False, name="infinities"),
        Sample((_array((2, 3), dtype, rng),), {"dim": 1, "dtype": DType("float64")}, grad=False, name="dtype"),
    ]


# ---------------------------------------------------------------- linear and convolution


def _linear_samples(dtype, rng):
    return [
        Sample((_array((2, 3), dtype, rng), _array((4, 3), dtype, rng), _array((4,), dtype, rng))),
        Sample((_array((2, 3), dtype, rng), _array((2, 3), dtype, rng))),
        Sample((_array((3,), dtype, rng), _array((2, 3), dtype, rng), _array((2,), dtype, rng)), name="1-d input"),
        Sample((_array((2, 2, 3), dtype, rng), _array((2, 3), dtype, rng), _array((), dtype, rng)), name="3-d"),
        Sample((_array((0, 3), dtype, rng), _array((2, 3), dtype, rng)), name="empty"),
        Sample((_array((3, 4), dtype, rng), _array((2, 4), dtype, rng), _array((2,), dtype, rng)), noncontiguous=True),
    ]


def _conv1d_samples(dtype, rng):
    return [
        Sample((_array((1, 2, 5), dtype, rng), _array((3, 2, 2), dtype, rng), _array((3,), dtype, rng))),
        Sample((_array((2, 2, 5), dtype, rng), _array((2, 1, 3), dtype, rng)),
               {"stride": 2, "padding": 1, "dilation": 1, "groups": 2}),
        Sample((_array((1, 2, 6), dtype, rng), _array((2, 2, 2), dtype, rng)), {"dilation": 2, "padding": "same"}),
        Sample((_array((2, 4), dtype, rng), _array((2, 2, 2), dtype, rng)), {"padding": "valid"}, name="unbatched"),
        Sample((_array((1, 2, 5), dtype, rng), _array((2, 2, 3), dtype, rng)), noncontiguous=True),
    ]


def _conv2d_samples(dtype, rng):
    return [
        Sample((_array((1, 2, 3, 3), dtype, rng), _array((2, 2, 2, 2), dtype, rng), _array((2,), dtype, rng))),
        Sample((_array((1, 2, 4, 3), dtype, rng), _array((2, 1, 2, 2), dtype, rng)),
               {"stride": (2, 1), "padding": (1, 0), "groups": 2}),
        Sample((_array((1, 1, 4, 4), dtype, rng), _array((2, 1, 3, 2), dtype, rng)), {"padding": "same",
                                                                                     "dilation": (1, 2)}),
        Sample((_array((1, 3, 3), dtype, rng), _array((1, 1, 2, 2), dtype, rng)), name="unbatched"),
        Sample((_array((0, 1, 3, 3), dtype, rng), _array((1, 1, 2, 2), dtype, rng)), name="empty batch"),
        Sample((_array((1, 2, 3, 3), dtype, rng), _array((2, 2, 2, 2), dtype, rng)), noncontiguous=True),
    ]


def _conv_transpose2d_samples(dtype, rng):
    return [
        Sample((_array((1, 2, 2, 2), dtype, rng), _array((2, 2, 2, 2), dtype, rng), _array((2,), dtype, rng))),
        Sample((_array((1, 2, 2, 2), dtype, rng), _array((2, 1, 2, 2), dtype, rng)),
               {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
        Sample((_array((1, 1, 3, 2), dtype, rng), _array((1, 2, 2, 2), dtype, rng)),
               {"stride": (1, 2), "dilation": (2, 1)}),
        Sample((_array((1, 2, 2), dtype, rng), _array((1, 1, 2, 2), dtype, rng)), name="unbatched"),
        Sample((_array((1, 2, 2, 2), dtype, rng), _array((2, 2, 2, 2), dtype, rng)), noncontiguous=True),
    ]


def _conv_errors():
    rng = np.random.default_rng(0)
    return [
        ErrorSample(Sample((_array((1, 3, 4, 4), "float32", rng), _array((2, 2, 2, 2), "float32", rng))),
                    RuntimeError, r"\[2, 2, 2, 2\].*3"),
        ErrorSample(Sample((_array((2, 4), "float32", rng), _array((2, 2, 2, 2), "float32", rng))),
                    RuntimeError, r"3D \(unbatched\) or 4D \(batched\).*\[2, 4\]"),
    ]


# ---------------------------------------------------------------- pooling


def _max_pool2d_samples(dtype, rng):
    return [
        Sample((_distinct((1, 2, 4, 4), dtype, rng), 2)),
        Sample((_distinct((1, 1, 4, 5), dtype, rng), 3), {"stride": 2, "padding": 1, "ceil_mode": True}),
        Sample((_distinct((1, 1, 5, 5), dtype, rng), 2), {"stride": 1, "dilation": 2, "return_indices": True}),
        Sample((_distinct((2, 4, 4), dtype, rng), (2, 1)), name="unbatched"),
        Sample((_distinct((1, 2, 4, 4), dtype, rng), 2), noncontiguous=True),
    ]


def _avg_pool2d_samples(dtype, rng):
    return [
        Sample((_array((1, 2, 4, 4), dtype, rng), 2)),
        Sample((_array((1, 1, 5, 4), dtype, rng), 3), {"stride": 2, "padding": 1, "ceil_mode": True}),
        Sample((_array((1, 1, 5, 4), dtype, rng), 3), {"stride": 2, "padding": 1, "count_include_pad": False}),
        Sample((_array((1, 1, 4, 4), dtype, rng), 2), {"divisor_override": 3}),
        Sample((_array((2, 4, 4), dtype, rng), (2, 1)), name="unbatched"),
        Sample((_array((1, 2, 4, 4), dtype, rng), 2), noncontiguous=True),
    ]


def _adaptive_avg_pool2d_samples(dtype, rng):
    return [
        Sample((_array((1, 2, 4, 4), dtype, rng), 2)),
        Sample((_array((1, 1, 5, 7), dtype, rng), (3, 4))),
        Sample((_array((1, 2, 3, 5), dtype, rng), (None, 2))),
        Sample((_array((2, 3, 3), dtype, rng), 1), name="unbatched"),
        Sample((_array((1, 2, 4, 4), dtype, rng), (3, 3)), noncontiguous=True),
    ]


# ---------------------------------------------------------------- normalization


def _layer_norm_samples(dtype, rng):
    return [
        Sample((_array((2, 3, 4), dtype, rng), (4,), _array((4,), dtype, rng), _array((4,), dtype, rng))),
        Sample((_array((2, 3, 2), dtype, rng), (3, 2))),
        Sample((_array((3, 4), dtype, rng), [4], _array((4,), dtype, rng)), {"eps": 1e-3}),
        Sample((_array((0, 4), dtype, rng), (4,)), name="empty"),
        Sample((_array((4, 3), dtype, rng), (3,), _array((3,), dtype, rng), _array((3,), dtype, rng)),
               noncontiguous=True),
    ]


def _batch_norm(lib, input, running_mean, running_var, *rest, **kwargs):
    """The output, and the running statistics the call updated in place."""
    output = lib.nn.functional.batch_norm(input, running_mean, running_var, *rest, **kwargs)
    if running_mean is None:
        return output
    return output, running_mean, running_var


def _batch_norm_samples(dtype, rng):
    def positive(shape):
        return make_array(shape, dtype, rng, 0.5, 2.0)

    return [
        Sample((_array((4, 3), dtype, rng), None, None, _array((3,), dtype, rng), _array((3,), dtype, rng)),
               {"training": True}),
        Sample((_array((2, 2, 3), dtype, rng), None, None), {"training": True, "eps": 1e-3}),
        Sample((_array((2, 2, 2, 2), dtype, rng), None, None, _array((2,), dtype, rng)), {"training": True}),
        Sample((_array((4, 3), dtype, rng), _array((3,), dtype, rng), positive((3,)), _array((3,), dtype, rng),
                _array((3,), dtype, rng)), {"training": True, "momentum": 0.3}, grad=False, name="running stats"),
        Sample((_array((4, 3), dtype, rng), _array((3,), dtype, rng), positive((3,))), {"training": False},
               grad=False, name="eval"),
        Sample((_array((4, 3), dtype, rng), None, None), {"training": True}, noncontiguous=True),
    ]


def _group_norm_samples(dtype, rng):
    return [
        Sample((_array((2, 4, 3), dtype, rng), 2, _array((4,), dtype, rng), _array((4,), dtype, rng))),
        Sample((_array((1, 4, 2, 2), dtype, rng), 4)),
        Sample((_array((2, 3, 2), dtype, rng), 1, _array((3,), dtype, rng)), {"eps": 1e-3}),
        Sample((_array((2, 4, 3), dtype, rng), 2), noncontiguous=True),
    ]


def _normalize_samples(dtype, rng):
    return [
        Sample((_array((3, 4), dtype, rng),)),
        Sample((_array((2, 3, 2), dtype, rng),), {"p": 1.0, "dim": 0}),
        Sample((_array((5,), dtype, rng),), {"dim": 0, "p": 3.0}),
        Sample((np.zeros((2, 3)).astype(make_array((), dtype, rng).dtype),), grad=False, name="zeros (eps)"),
        Sample((_array((4, 3), dtype, rng),), {"dim": 0}, noncontiguous=True),
    ]


# ---------------------------------------------------------------- embedding and losses


def _embedding_samples(dtype, rng):
    return [
        Sample((rng.integers(0, 5, (2, 3)), _array((5, 3), dtype, rng))),
        Sample((np.array(3), _array((4, 2), dtype, rng)), name="0-d index"),
        Sample((rng.integers(0, 5, (2, 3)), _array((5, 3), dtype, rng)), noncontiguous=True),
        # padding_idx rows get no gradient by definition, so gradcheck (which runs on the first three
        # samples) would see a numerical derivative that torch's analytical one also lacks: keep them last.
        Sample((rng.integers(0, 4, (5,)), _array((4, 2), dtype, rng)), {"padding_idx": 1}),
        Sample((np.array([[0, 2, 2], [2, 3, 0]]), _array((4, 2), dtype, rng)), {"padding_idx": -2}),
    ]


def _class_targets(shape, classes, rng, ignore=None):
    targets = rng.integers(0, classes, shape)
    if ignore is not None:
        targets.flat[0] = ignore
    return targets


def _cross_entropy_samples(dtype, rng):
    probabilities = rng.dirichlet(np.ones(4), size=3).astype(make_array((), dtype, rng).dtype)
    return [
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng))),
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng)), {"weight": [1.0, 2.0, 0.5, 1.5]}),
        Sample((_array((4, 3), dtype, rng), _class_targets((4,), 3, rng, ignore=1)),
               {"ignore_index": 1, "reduction": "sum"}),
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng)),
               {"label_smoothing": 0.2, "weight": [1.0, 2.0, 0.5, 1.5]}),
        Sample((_array((3, 4), dtype, rng), probabilities), {"label_smoothing": 0.1}, name="probabilities"),
        Sample((_array((2, 3, 2), dtype, rng), _class_targets((2, 2), 3, rng)), {"reduction": "none"}, name="K-dim"),
        Sample((_array((4,), dtype, rng), np.array(2)), name="unbatched"),
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng)), noncontiguous=True),
    ]


def _nll_loss_samples(dtype, rng):
    return [
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng))),
        Sample((_array((3, 4), dtype, rng), _class_targets((3,), 4, rng)), {"weight": [1.0, 2.0, 0.5, 1.5],
                                                                          "reduction": "sum"}),
        Sample((_array((4, 3), dtype, rng), _class_targets((4,), 3, rng, ignore=-100)), {"reduction": "none"}),
        Sample((_array((2, 3, 2), dtype, rng), _class_targets((2, 2), 3, rng)), {"weight": [1.0, 0.5, 2.0]},
               name="K-dim"),
        Sample((_array((3,), dtype, rng), np.array(1)), name="unbatched"),
    ]


def _loss_errors():
    rng = np.random.default_rng(0)
    return [
        ErrorSample(Sample((_array((3, 4), "float32", rng), np.array([0, 4, 1]))), IndexError, "4"),
        ErrorSample(Sample((_array((3, 4), "float32", rng), np.array([0, 1]))), ValueError, r"\(3\).*\(2\)"),
    ]


def _mse_loss_samples(dtype, rng):
    return [
        Sample((_array((3, 4), dtype, rng), _array((3, 4), dtype, rng))),
        Sample((_array((3, 4), dtype, rng), _array((3, 4), dtype, rng)), {"reduction": "sum"}),
        Sample((_array((2, 3), dtype, rng), _array((2, 3), dtype, rng)), {"reduction": "none"}),
        Sample((_array((), dtype, rng), _array((), dtype, rng))),
        Sample((_array((4, 3), dtype, rng), _array((4, 3), dtype, rng)), noncontiguous=True),
    ]


def _bce_logits_samples(dtype, rng):
    def target(shape):
        return make_array(shape, dtype, rng, 0.0, 1.0)

    return [
        Sample((_array((3, 4), dtype, rng), target((3, 4)))),
        Sample((_array((3, 4), dtype, rng), target((3, 4))), {"pos_weight": [3.0, 1.0, 0.5, 2.0]}),
        Sample((_array((2, 3), dtype, rng), target((2, 3))), {"weight": [1.0, 2.0, 0.5], "reduction": "sum"}),
        Sample((_array((2, 3), dtype, rng), target((2, 3))), {"reduction": "none", "pos_weight": [2.0, 1.0, 3.0]}),
        Sample((np.array([50.0, -50.0, 0.0]).astype(make_array((), dtype, rng).dtype), np.array([0.0, 1.0, 0.5])
                .astype(make_array((), dtype, rng).dtype)), name="large logits"),
    ]


# ---------------------------------------------------------------- pad, interpolate, attention


def _pad_samples(dtype, rng):
    return [
        Sample((_array((2, 3), dtype, rng), (1, 2))),
        Sample((_array((1, 2, 3), dtype, rng), (1, 0, 2, 1)), {"value": 1.5}),
        Sample((_array((1, 2, 4), dtype, rng), (2, 1)), {"mode": "reflect"}),
        Sample((_array((1, 1, 3, 3), dtype, rng), (1, 2, 2, 0)), {"mode": "replicate"}),
        Sample((_array((1, 1, 3, 3), dtype, rng), (1, 1, 2, 1)), {"mode": "circular"}),
        Sample((_array((1, 2, 3, 3), dtype, rng), (-1, 1, 0, -2)), name="negative"),
        Sample((_array((3, 4), dtype, rng), (1, 1)), noncontiguous=True),
    ]


def _interpolate_samples(dtype, rng):
    return [
        Sample((_array((1, 1, 2, 3), dtype, rng),), {"scale_factor": 2, "mode": "bilinear"}),
        Sample((_array((1, 2, 3, 2), dtype, rng),), {"size": (4, 5), "mode": "bilinear", "align_corners": True}),
        Sample((_array((1, 1, 4, 4), dtype, rng),), {"size": (3, 2), "mode": "bilinear"}, name="downsample"),
        Sample((_array((1, 1, 3, 3), dtype, rng),), {"scale_factor": 1.5, "mode": "bilinear"}),
        Sample((_array((1, 2, 2, 3), dtype, rng),), {"scale_factor": 2, "mode": "bilinear"}, noncontiguous=True),
    ]


def _sdpa_samples(dtype, rng):
    def qkv(batch, length, source, dim):
        return (_array(batch + (length, dim), dtype, rng), _array(batch + (source, dim), dtype, rng),
                _array(batch + (source, dim), dtype, rng))

    return [
        Sample(qkv((1,), 3, 3, 2)),
        Sample(qkv((1,), 2, 3, 2), {"attn_mask": np.array([[True, False, True], [True, True, False]])}),
        Sample(qkv((1,), 3, 3, 2), {"is_causal": True}),
        Sample(qkv((1,), 3, 2, 2), {"scale": 0.3}),
        Sample(qkv((1, 2), 3, 2, 4), {"attn_mask": _array((3, 2), dtype, rng)}, grad=False, name="float mask 4-d"),
        Sample(qkv((2,), 3, 3, 2), noncontiguous=True),
        # several query blocks (causal blocks are 32 rows; the triangle past each block is skipped)
        Sample(qkv((1,), 70, 70, 2), {"is_causal": True}, name="causal 3 blocks"),
        Sample(qkv((1,), 40, 70, 2), {"is_causal": True}, name="causal more keys"),
        Sample(qkv((1,), 70, 40, 2), {"is_causal": True}, name="causal fewer keys"),
        Sample(qkv((1,), 130, 5, 2), {"attn_mask": rng.random((130, 5)) < 0.7}, name="bool mask 2 blocks"),
    ]


OPS = [
    _op("relu", _activation_samples(), HALF_TOO),
    _op("gelu", _activation_samples([{"approximate": "tanh"}], positive_inf=False), HALF_TOO,
        tolerances={"bfloat16": (1.6e-2, 2e-2), "float16": (1e-3, 2e-3)}),
    _op("silu", _activation_samples(), HALF_TOO),
    _op("softplus", _activation_samples([{"beta": 2.0, "threshold": 3.0}, {"beta": 0.5}]), HALF_TOO),
    _op("elu", _activation_samples([{"alpha": 0.5}]), HALF_TOO),
    _op("leaky_relu", _activation_samples([{"negative_slope": 0.2}]), HALF_TOO),
    _op("hardtanh", _activation_samples([{"min_val": -0.5, "max_val": 2.0}]), HALF_TOO),
    _op("softmax", _softmax_samples),
    _op("log_softmax", _softmax_samples),
    _op("linear", _linear_samples, grad_tolerance=(1e-6, 1e-6),
        error_inputs=lambda: [ErrorSample(Sample((np.ones((2, 5), np.float32), np.ones((4, 3), np.float32))),
                                          RuntimeError, "2x5 and 3x4")]),
    _op("conv1d", _conv1d_samples, error_inputs=None),
    _op("conv2d", _conv2d_samples, error_inputs=_conv_errors),
    _op("conv_transpose2d", _conv_transpose2d_samples),
    _op("max_pool2d", _max_pool2d_samples),
    _op("avg_pool2d", _avg_pool2d_samples),
    _op("adaptive_avg_pool2d", _adaptive_avg_pool2d_samples),
    _op("layer_norm", _layer_norm_samples),
    OpInfo("batch_norm", _batch_norm_samples, call=_batch_norm, dtypes=FLOAT),
    _op("group_norm", _group_norm_samples),
    _op("embedding", _embedding_samples),
    # meta=False: the target range check reads the targets' values (data-dependent), as torch's CPU kernel does
    _op("cross_entropy", _cross_entropy_samples, tensor_kwargs=("weight",), error_inputs=_loss_errors, meta=False),
    _op("nll_loss", _nll_loss_samples, tensor_kwargs=("weight",), meta=False),
    _op("mse_loss", _mse_loss_samples),
    _op("binary_cross_entropy_with_logits", _bce_logits_samples, tensor_kwargs=("weight", "pos_weight")),
    _op("pad", _pad_samples),
    _op("interpolate", _interpolate_samples),
    _op("scaled_dot_product_attention", _sdpa_samples,
        # torch's flash/efficient kernels have no double backward either; ember's backward is a fused rule
        # whose own derivative is not implemented (see nn/_functional_attention.py).
        gradgradcheck=False),
    _op("normalize", _normalize_samples),
]
