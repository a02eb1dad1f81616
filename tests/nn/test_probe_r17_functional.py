"""nn.functional / losses / nn.utils discrepancies against torch found by the round-17 probe.

Each test reproduces one discrepancy (fixed in ember) and compares with the installed torch through
`_probe_r17.assert_parity`: values, dtypes, shapes, float64 gradients, or exception types and messages.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _probe_r17 import assert_parity, ints, rnd

torch = pytest.importorskip("torch")


def F(lib):
    return lib.nn.functional


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize("reduction", ["none", "sum", "mean", "avg"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_pointwise_loss_weight_is_per_element_and_mean_divides_by_weight(name, reduction):
    """torch's weight must have the input's size; mse/l1 'mean' divide by sum(weight), huber's takes a mean."""
    def fn(lib, make):
        x, y = make(rnd(2, 3), True), make(rnd(2, 3, seed=1))
        return getattr(F(lib), name)(x, y, reduction=reduction, weight=make(rnd(2, 3, seed=2, low=0.5, high=2), True))

    assert_parity(fn)
    assert_parity(lambda lib, make: getattr(F(lib), name)(make(rnd(2, 3)), make(rnd(2, 3)), weight=make(rnd(3))))


@pytest.mark.parametrize("dims, dtype", [(2, np.int32), (2, np.float64), (2, np.int16), (3, np.int32),
                                         (4, np.uint8), (3, np.uint8), (2, np.uint8)])
def test_nll_loss_target_dtype_errors(dims, dtype):
    shape = (2, 3, 4, 5)[:dims]
    target_shape = shape[:1] + shape[2:]

    def fn(lib, make):
        return F(lib).nll_loss(make(rnd(*shape), True), make(ints(3, *target_shape).astype(dtype)))

    assert_parity(fn, message_chars=80)


@pytest.mark.parametrize("target_shape", [(3,), (2, 4), (3, 5)])
def test_cross_entropy_float_target_of_another_shape_is_a_class_index_target(target_shape):
    assert_parity(lambda lib, make: F(lib).cross_entropy(make(rnd(3, 4), True), make(rnd(*target_shape))),
                  message_chars=80)
    assert_parity(lambda lib, make: F(lib).cross_entropy(make(rnd(3, 4)), make(rnd(3)), ignore_index=1),
                  message_chars=80)


@pytest.mark.parametrize("case", ["bce", "bcel_weight", "bcel_pos_weight", "multi_margin", "no_grad"])
def test_loss_weights_requiring_grad_are_rejected(case):
    """torch's kernels have no derivative for weight/pos_weight and refuse one that needs it."""
    def fn(lib, make):
        weight = make(rnd(3, low=0.5, high=2), True)
        x, y = make(rnd(2, 3, low=0.1, high=0.9), True), make(rnd(2, 3, low=0, high=1, seed=1))
        if case == "bce":
            return F(lib).binary_cross_entropy(x, y, weight=weight)
        if case == "bcel_weight":
            return F(lib).binary_cross_entropy_with_logits(x, y, weight=weight)
        if case == "bcel_pos_weight":
            return F(lib).binary_cross_entropy_with_logits(x, y, pos_weight=weight)
        if case == "multi_margin":
            return F(lib).multi_margin_loss(x, make(np.array([0, 2])), weight=weight)
        with lib.no_grad():
            return F(lib).binary_cross_entropy_with_logits(x, y, weight=weight, pos_weight=weight)

    assert_parity(fn, message_chars=200)


def test_gaussian_nll_loss_reduction_message():
    assert_parity(lambda lib, make: F(lib).gaussian_nll_loss(make(rnd(3)), make(rnd(3)), make(rnd(3, low=0.1, high=1)),
                                                             reduction="avg"), message_chars=100)


@pytest.mark.parametrize("margin", [0.0, -1.0])
@pytest.mark.parametrize("name", ["triplet_margin_loss", "triplet_margin_with_distance_loss"])
def test_triplet_losses_need_a_positive_margin(name, margin):
    def fn(lib, make):
        return getattr(F(lib), name)(make(rnd(4, 5)), make(rnd(4, 5, seed=1)), make(rnd(4, 5, seed=2)), margin=margin)

    assert_parity(fn, message_chars=100)


def test_multi_margin_loss_has_no_gradient_where_the_margin_is_exactly_met():
    for p in (1, 2):
        assert_parity(lambda lib, make: F(lib).multi_margin_loss(make(np.array([[1.0, 0.0, 2.0], [0.5, 0.1, 1.5]]), True),
                                                                 make(np.array([0, 2])), p=p))


@pytest.mark.parametrize("case", ["target_out_of_range", "negative_target", "weight_2d", "input_3d", "target_size",
                                  "float_target", "no_classes"])
def test_multi_margin_loss_argument_errors(case):
    def fn(lib, make):
        x, target, kwargs = make(rnd(2, 3)), make(np.array([0, 1])), {}
        if case == "target_out_of_range":
            target = make(np.array([0, 3]))
        elif case == "negative_target":
            target = make(np.array([0, -1]))
        elif case == "weight_2d":
            kwargs["weight"] = make(rnd(1, 3))
        elif case == "input_3d":
            x = make(rnd(2, 3, 1))
        elif case == "target_size":
            target = make(np.array([0, 1, 2]))
        elif case == "float_target":
            target = make(np.array([0.0, 1.0]))
        else:
            x = make(rnd(2, 0))
        return F(lib).multi_margin_loss(x, target, **kwargs)

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("case", ["out_of_range", "below_minus_one", "shape", "input_3d", "float_target"])
def test_multilabel_margin_loss_argument_errors(case):
    def fn(lib, make):
        x, target = make(rnd(2, 3)), np.array([[0, -1, 1], [0, 1, 2]])
        if case == "out_of_range":
            target = np.array([[3, -1, 0], [0, 1, 2]])
        elif case == "below_minus_one":
            target = np.array([[-2, 0, 1], [0, 1, 2]])
        elif case == "shape":
            target = target[:, :2]
        elif case == "input_3d":
            x, target = make(rnd(2, 3, 1)), target[..., None]
        return F(lib).multilabel_margin_loss(x, make(target.astype(np.float64) if case == "float_target" else target))

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("reduction", ["none"])  # (torch's 'sum' and 'mean' of no samples read uninitialised memory)
def test_margin_losses_on_an_empty_batch(reduction):
    assert_parity(lambda lib, make: F(lib).multilabel_margin_loss(make(rnd(0, 3), True), make(np.zeros((0, 3), np.int64)),
                                                                  reduction=reduction))
    assert_parity(lambda lib, make: F(lib).multi_margin_loss(make(rnd(0, 3), True), make(np.zeros(0, np.int64)),
                                                             reduction=reduction))


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 3, 4), (2,)), ((4,), (4,), (1,)), ((2, 4), (4,), (2,)),
                                    ((2, 4), (2, 4), (2, 1)), ((4,), (4,), ())])
def test_cosine_embedding_loss_dimension_checks(shapes):
    def fn(lib, make):
        return F(lib).cosine_embedding_loss(make(rnd(*shapes[0]), True), make(rnd(*shapes[1], seed=1), True),
                                            make(np.ones(shapes[2])))

    assert_parity(fn, message_chars=200)


def test_margin_ranking_loss_needs_inputs_of_one_dimension():
    def fn(lib, make):
        return F(lib).margin_ranking_loss(make(rnd(2, 3)), make(rnd(3)), make(np.ones(3)))

    assert_parity(fn, message_chars=100)


def test_ctc_loss_concatenated_targets_must_match_the_lengths_total():
    def fn(lib, make):
        log_probs = make(rnd(5, 2, 4), True).log_softmax(-1)
        return F(lib).ctc_loss(log_probs, make(np.array([1, 2, 2])), (5, 5), (2, 2))

    assert_parity(fn, message_chars=200)


# ---------------------------------------------------------------- resampling, padding, unfold


@pytest.mark.parametrize("shape, size, mode", [((1, 1, 4), 0, "linear"), ((1, 1, 4, 4), (0, 3), "nearest"),
                                               ((1, 1, 4, 4), (0, 2), "bicubic"), ((1, 1, 0, 4), (2, 2), "bilinear"),
                                               ((1, 1, 2, 3, 4), (0, 3, 3), "nearest-exact"),
                                               ((1, 1, 4), 0, "area")])
def test_interpolate_needs_positive_sizes(shape, size, mode):
    assert_parity(lambda lib, make: F(lib).interpolate(make(rnd(*shape)), size=size, mode=mode), message_chars=200)


def test_interpolate_scale_factor_rounding_to_zero():
    assert_parity(lambda lib, make: F(lib).interpolate(make(rnd(1, 1, 4, 4)), scale_factor=0.1, mode="bilinear"),
                  message_chars=200)


def test_grid_sample_dtype_mismatch_message():
    def fn(lib, make):
        return F(lib).grid_sample(make(rnd(1, 2, 3, 4)), make(rnd(1, 2, 3, 2), dtype="float32"), align_corners=False)

    assert_parity(fn, message_chars=100)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_nan_grid_points_do_not_crash(mode):
    """A nan coordinate used to become an int64 index out of range; torch gives nan (0 for nearest)."""
    def fn(lib, make):
        grid = np.array([[[[np.nan, 0.0], [0.5, np.nan], [np.inf, 0.2]]]])
        return F(lib).grid_sample(make(rnd(1, 1, 3, 4)), make(grid), mode=mode, align_corners=False)

    assert_parity(fn)


def test_affine_grid_batch_mismatch_message():
    assert_parity(lambda lib, make: F(lib).affine_grid(make(rnd(1, 2, 3)), [2, 3, 4, 5], align_corners=False),
                  message_chars=200)


@pytest.mark.parametrize("pad", [(-2, -2), (-4, 0), (0, -4), (1, -5), (-3, 0)])
def test_constant_pad_beyond_the_input(pad):
    assert_parity(lambda lib, make: F(lib).pad(make(rnd(2, 3), True), pad), message_chars=200)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", [((2, 3, 0), (1, 1)), ((0, 3), (1, 1)), ((3, 0), (1, 1)),
                                        ((0, 3, 4), (1, 1, 1, 1)), ((0, 3, 4), (1, 1)), ((2, 3, 0), (1, 1, 1, 1))])
def test_non_constant_pad_of_empty_dims(mode, shape, pad):
    assert_parity(lambda lib, make: F(lib).pad(make(rnd(*shape)), pad, mode=mode), message_chars=200)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_unfold_and_fold_of_integer_tensors(dtype):
    assert_parity(lambda lib, make: F(lib).unfold(make(np.ones((1, 1, 3, 3), dtype)), 2), message_chars=200)
    assert_parity(lambda lib, make: F(lib).fold(make(np.ones((1, 4, 4), dtype)), (3, 3), 2), message_chars=200)


# ---------------------------------------------------------------- embedding, similarity


def test_embedding_weight_must_be_2d():
    assert_parity(lambda lib, make: F(lib).embedding(make(np.array([0, 1])), make(rnd(6))), message_chars=100)


@pytest.mark.parametrize("shapes", [((3, 4), (1, 4)), ((2, 1, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (3, 4))])
@pytest.mark.parametrize("dim", [0, -1])
def test_cosine_similarity_broadcasts_before_reducing(shapes, dim):
    assert_parity(lambda lib, make: F(lib).cosine_similarity(make(rnd(*shapes[0]), True),
                                                             make(rnd(*shapes[1], seed=1), True), dim=dim))


def test_cosine_similarity_clamps_each_norm():
    """x1 / max(|x1|, eps) . x2 / max(|x2|, eps), the clamps outside autograd (finite gradients at 0)."""
    assert_parity(lambda lib, make: F(lib).cosine_similarity(make(rnd(2, 3) * 1e-5, True), make(rnd(2, 3), True),
                                                             eps=1e-3))
    assert_parity(lambda lib, make: F(lib).cosine_similarity(make(np.zeros((2, 3)), True), make(rnd(2, 3), True)))
    assert_parity(lambda lib, make: F(lib).cosine_similarity(make(np.array([[3.0, 4.0]]) * 1e200, True),
                                                             make(np.array([[3.0, 4.0]]) * 1e200, True)))


@pytest.mark.parametrize("dtypes", [("int64", "int64"), ("bool", "bool"), ("int64", "float32"),
                                    ("float32", "float64"), ("complex64", "complex64")])
def test_cosine_similarity_dtypes(dtypes):
    def fn(lib, make):
        return F(lib).cosine_similarity(make(ints(3, 2, 3) + 1, dtype=dtypes[0]), make(ints(3, 2, 3, seed=1) + 1,
                                                                                      dtype=dtypes[1]))

    assert_parity(fn, rtol=1e-6, message_chars=100)


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (4,))])
def test_pairwise_distance_p0_leaves_no_gradient(shapes):
    """torch's norm_backward returns an undefined gradient for p = 0: the inputs' .grad stays None."""
    assert_parity(lambda lib, make: F(lib).pairwise_distance(make(rnd(*shapes[0]), True),
                                                             make(rnd(*shapes[1], seed=1), True), p=0))
    assert_parity(lambda lib, make: lib.linalg.vector_norm(make(np.array([1.0, 0.0, 2.0]), True), 0) * 2)


# ---------------------------------------------------------------- pooling


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_adaptive_max_pool_of_an_empty_batch(dims):
    def fn(lib, make):
        pool = getattr(F(lib), f"adaptive_max_pool{dims}d")
        return pool(make(rnd(0, 2, *(4,) * dims)), 2, return_indices=True)

    assert_parity(fn)


@pytest.mark.parametrize("name, args", [
    ("max_pool1d", (2, 0)), ("max_pool1d", (2, -1)), ("max_pool1d", (0, 1)), ("max_pool1d", (2, 1, -1)),
    ("max_pool1d", (2, 1, 0, 0)), ("max_pool2d", (2, 0)), ("max_pool2d", (2, (1, 0))), ("max_pool2d", (2, -1)),
    ("max_pool2d", ((2, 0), 1)), ("max_pool2d", (2, 1, -1)), ("max_pool2d", (2, 1, 0, (1, 0))),
    ("max_pool3d", (2, 1, 0, 0)), ("max_pool3d", (2, -1)), ("avg_pool1d", (2, 0)), ("avg_pool1d", (0, 1)),
    ("avg_pool1d", (2, -1)), ("avg_pool1d", (2, 1, -1)), ("avg_pool2d", (0,)), ("avg_pool2d", ((2, 0), 1)),
    ("avg_pool3d", (0, 1)), ("avg_pool3d", (2, 0)),
])
def test_pool_geometry_errors(name, args):
    dims = int(name[-2])

    def fn(lib, make):
        return getattr(F(lib), name)(make(rnd(1, 1, *(5,) * dims)), *args)

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("values, args", [([-math.inf, -math.inf, 3.0, 0.0], (2, 1, 1)),
                                          ([-math.inf, -math.inf, 3.0, 0.0], (2, 1, 0)),
                                          ([-math.inf] * 4, (3, 1, 1))])
def test_max_pool_index_of_a_window_without_a_larger_value(values, args):
    """torch keeps the first in-bounds element when nothing beats -inf (never a padding position)."""
    assert_parity(lambda lib, make: F(lib).max_pool1d(make(np.array([[values]]), True), *args, return_indices=True))
    assert_parity(lambda lib, make: F(lib).max_pool2d(make(np.full((1, 1, 3, 3), -math.inf)), 2, 1, 1,
                                                      return_indices=True))


@pytest.mark.parametrize("dims, output_size", [(1, [10]), (1, [9]), (2, [2, 2, 8, 9]), (2, [3, 3]), (2, [9, 9]),
                                               (2, [1, 8, 8]), (3, [4, 6, 6])])
def test_max_unpool_output_size_checks(dims, output_size):
    def fn(lib, make):
        x = make(rnd(2, 2, *(8,) * dims))
        pooled, indices = getattr(F(lib), f"max_pool{dims}d")(x, 2, return_indices=True)
        return getattr(F(lib), f"max_unpool{dims}d")(pooled, indices, 2, output_size=output_size)

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("scale", [5, -1])
def test_max_unpool_invalid_index(scale):
    def fn(lib, make):
        pooled, indices = F(lib).max_pool2d(make(rnd(1, 1, 4, 4)), 2, return_indices=True)
        return F(lib).max_unpool2d(pooled, indices * scale + (scale < 0) * -1, 2)

    # (which invalid index torch names depends on its vectorised loop: only the message's start is compared)
    assert_parity(fn, message_chars=28)


@pytest.mark.parametrize("norm_type", [math.inf, -math.inf])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_lp_pool_infinite_norm_is_a_max_of_abs(dims, norm_type):
    def fn(lib, make):
        return getattr(F(lib), f"lp_pool{dims}d")(make(rnd(1, 2, *(5,) * dims), True), norm_type, 2, None, True)

    assert_parity(fn)


# ---------------------------------------------------------------- normalization


@pytest.mark.parametrize("stats", ["none", "mean_only", "var_only"])
def test_batch_norm_eval_without_running_stats(stats):
    def fn(lib, make):
        mean = make(np.zeros(3)) if stats == "mean_only" else None
        var = make(np.ones(3)) if stats == "var_only" else None
        return F(lib).batch_norm(make(rnd(4, 3)), mean, var, training=False)

    assert_parity(fn, message_chars=100)


@pytest.mark.parametrize("name", ["batch_norm", "batch_norm_train", "instance_norm", "layer_norm", "group_norm"])
@pytest.mark.parametrize("input_dtype, param_dtypes", [("float32", ("float64", "float64")),
                                                       ("float64", ("float32", "float32")),
                                                       ("float32", ("float32", "float64")),
                                                       ("int64", (None, None))])
def test_norm_parameter_dtypes_must_match_the_input(name, input_dtype, param_dtypes):
    def fn(lib, make):
        x = make(rnd(4, 3, 2) if input_dtype != "int64" else ints(3, 4, 3, 2), dtype=input_dtype)
        size = 2 if name == "layer_norm" else 3
        weight, bias = (None if d is None else make(rnd(size), dtype=d) for d in param_dtypes)
        if name == "layer_norm":
            return F(lib).layer_norm(x, (2,), weight, bias)
        if name == "group_norm":
            return F(lib).group_norm(x, 3, weight, bias)
        if name == "instance_norm":
            return F(lib).instance_norm(x, weight=weight, bias=bias)
        if name == "batch_norm_train":
            return F(lib).batch_norm(x, None, None, weight, bias, training=True)
        return F(lib).batch_norm(x, weight if weight is None else weight * 0, bias if bias is None else bias.abs())

    assert_parity(fn, rtol=1e-5, message_chars=200)


def test_batch_norm_of_a_1d_input():
    assert_parity(lambda lib, make: F(lib).batch_norm(make(rnd(3)), None, None, training=True), message_chars=200)


def test_instance_norm_without_input_stats_needs_running_stats():
    def fn(lib, make):
        return F(lib).instance_norm(make(rnd(2, 3, 4)), make(np.zeros(3)), None, use_input_stats=False)

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("affine", [False, True])
def test_group_norm_of_an_empty_batch(affine):
    def fn(lib, make):
        weight, bias = (make(rnd(6, seed=s), True) if affine else None for s in (1, 2))
        return F(lib).group_norm(make(rnd(0, 6, 3), True), 3, weight, bias)

    assert_parity(fn)


@pytest.mark.parametrize("shape", [(3,), (6, 1)])
def test_group_norm_weight_must_be_a_channel_vector(shape):
    assert_parity(lambda lib, make: F(lib).group_norm(make(rnd(2, 6, 4)), 3, make(rnd(*shape))), message_chars=200)


@pytest.mark.parametrize("case", ["ln_weight", "ln_weight_2d", "ln_bias", "rms_weight", "rms_input"])
def test_layer_and_rms_norm_shape_checks(case):
    def fn(lib, make):
        x = make(rnd(2, 3, 4))
        if case == "ln_weight":
            return F(lib).layer_norm(x, (4,), make(rnd(3)))
        if case == "ln_weight_2d":
            return F(lib).layer_norm(x, (4,), make(rnd(4, 1)))
        if case == "ln_bias":
            return F(lib).layer_norm(x, (4,), None, make(rnd(3)))
        if case == "rms_weight":
            return F(lib).rms_norm(x, (4,), make(rnd(3)))
        return F(lib).rms_norm(x, (3,))

    assert_parity(fn, message_chars=200)


def test_rms_norm_result_keeps_the_input_dtype():
    assert_parity(lambda lib, make: F(lib).rms_norm(make(rnd(2, 4), True, "float32"), (4,),
                                                    make(rnd(4, seed=1), dtype="float64")), rtol=1e-5)


# ---------------------------------------------------------------- activations


@pytest.mark.parametrize("case", ["celu_alpha_0", "softshrink_negative", "softshrink_negative_float32",
                                  "hardtanh_bool", "relu6_bool", "hardtanh_module"])
def test_activation_argument_errors(case):
    def fn(lib, make):
        x = make(rnd(3, 4))
        if case == "celu_alpha_0":
            return F(lib).celu(x, 0.0)
        if case == "softshrink_negative":
            return F(lib).softshrink(x, -0.7)
        if case == "softshrink_negative_float32":
            return F(lib).softshrink(x.float(), -0.25)
        if case == "hardtanh_bool":
            return F(lib).hardtanh(make(np.array([True, False])))
        if case == "relu6_bool":
            return F(lib).relu6(make(np.array([True, False])))
        return lib.nn.Hardtanh(2, 1)

    assert_parity(fn, message_chars=200)


# ---------------------------------------------------------------- attention, rnn utils


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_without_keys_is_zero(is_causal):
    def fn(lib, make):
        return F(lib).scaled_dot_product_attention(make(rnd(2, 3, 2), True), make(rnd(2, 0, 2), True),
                                                   make(rnd(2, 0, 4), True), is_causal=is_causal)

    assert_parity(fn)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_padded_sequence_needs_one_length_per_sequence(batch_first):
    def fn(lib, make):
        return lib.nn.utils.rnn.pack_padded_sequence(make(rnd(5, 3, 2)), [5, 3], batch_first=batch_first)

    assert_parity(fn, message_chars=200)


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_transposes_its_input_in_place(batch_first):
    """torch's unpad_sequence calls transpose_: the caller's tensor is left batch-first (and a leaf that
    requires grad is refused)."""
    def fn(lib, make):
        padded = make(rnd(5, 3, 2) if not batch_first else rnd(3, 5, 2))
        pieces = lib.nn.utils.rnn.unpad_sequence(padded, lib.tensor([3, 5, 1]), batch_first=batch_first)
        return pieces + [padded]

    assert_parity(fn)
    assert_parity(lambda lib, make: lib.nn.utils.rnn.unpad_sequence(make(rnd(5, 3, 2), True), lib.tensor([3, 5, 1])),
                  message_chars=200)

