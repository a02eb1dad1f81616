"""Bad input to nn modules and functions: torch's exception type, and an ember message naming the sizes.

Each case runs the same call in torch and ember, compares the exception types, and checks that
ember's message mentions the given fragments (the shapes or values at fault).
"""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _x(lib, *shape, dtype="float32"):
    return lib.tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype))


def _long(lib, values):
    return lib.tensor(np.asarray(values, dtype=np.int64))


def _mha(lib, query, key, value, **kwargs):
    torch.manual_seed(0)
    return lib.nn.MultiheadAttention(6, 2)(query, key, value, **kwargs)


CASES = [
    ("linear-in_features", lambda lib: lib.nn.Linear(4, 3)(_x(lib, 2, 5)), ["2x5", "4x3"]),
    ("linear-functional", lambda lib: lib.nn.functional.linear(_x(lib, 2, 5), _x(lib, 3, 4)), ["2x5", "4x3"]),
    ("bilinear-size", lambda lib: lib.nn.Bilinear(3, 4, 2)(_x(lib, 5, 3), _x(lib, 5, 3)), ["4"]),
    ("conv2d-channels", lambda lib: lib.nn.Conv2d(3, 4, 3)(_x(lib, 1, 2, 5, 5)), ["[4, 3, 3, 3]", "3", "2"]),
    ("conv2d-rank", lambda lib: lib.nn.Conv2d(3, 4, 3)(_x(lib, 3, 5)), ["3D", "4D"]),
    ("conv2d-kernel-too-big", lambda lib: lib.nn.Conv2d(3, 4, 5)(_x(lib, 1, 3, 3, 3)), ["5 x 5", "3 x 3"]),
    ("conv1d-groups", lambda lib: lib.nn.Conv1d(4, 6, 3, groups=2)(_x(lib, 1, 3, 5)), ["4", "3"]),
    ("conv-groups-divisible", lambda lib: lib.nn.Conv2d(3, 4, 3, groups=2), ["in_channels must be divisible"]),
    ("conv-same-stride", lambda lib: lib.nn.Conv2d(3, 4, 3, padding="same", stride=2), ["padding='same'"]),
    ("conv-bad-padding-string", lambda lib: lib.nn.Conv2d(3, 4, 3, padding="full"), ["full"]),
    ("conv-padding-mode", lambda lib: lib.nn.Conv2d(3, 4, 3, padding_mode="mirror"), ["mirror"]),
    ("batchnorm2d-3d", lambda lib: lib.nn.BatchNorm2d(3)(_x(lib, 2, 3, 4)), ["4D", "3D"]),
    ("batchnorm1d-4d", lambda lib: lib.nn.BatchNorm1d(3)(_x(lib, 2, 3, 4, 4)), ["2D or 3D", "4D"]),
    ("batchnorm-channels", lambda lib: lib.nn.BatchNorm1d(3)(_x(lib, 4, 5)), ["5", "3"]),
    ("layernorm-shape", lambda lib: lib.nn.LayerNorm(4)(_x(lib, 2, 5)), ["[*, 4]", "[2, 5]"]),
    ("groupnorm-divisible", lambda lib: lib.nn.GroupNorm(3, 4), ["4", "3"]),
    ("groupnorm-channels", lambda lib: lib.nn.GroupNorm(2, 4)(_x(lib, 2, 6, 3)), ["6"]),
    ("instancenorm-rank", lambda lib: lib.nn.InstanceNorm2d(3)(_x(lib, 3, 4)), ["3D or 4D", "2D"]),
    ("cross_entropy-target-range", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 3, 4), _long(lib, [0, 4, 1])),
     ["4", "out of bounds"]),
    ("cross_entropy-negative-target", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 3, 4),
                                                                                 _long(lib, [0, -2, 1])),
     ["-2", "out of bounds"]),
    ("cross_entropy-batch", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 3, 4), _long(lib, [0, 1])),
     ["3", "2"]),
    ("cross_entropy-probs-shape", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 3, 4), _x(lib, 3, 5)), []),
    ("nll_loss-float-target", lambda lib: lib.nn.functional.nll_loss(_x(lib, 3, 4), _x(lib, 3)), ["Long"]),
    ("mse-shape-broadcast", lambda lib: lib.nn.functional.mse_loss(_x(lib, 3, 4), _x(lib, 2, 4)), ["3", "2"]),
    ("bce-target-size", lambda lib: lib.nn.functional.binary_cross_entropy(_x(lib, 3).sigmoid(), _x(lib, 4)),
     ["[4]", "[3]"]),
    ("bce-input-range", lambda lib: lib.nn.functional.binary_cross_entropy(_x(lib, 3), _x(lib, 3).sigmoid()),
     ["between 0 and 1"]),
    ("bce-input-nan", lambda lib: lib.nn.functional.binary_cross_entropy(lib.full((3,), float("nan")),
                                                                         _x(lib, 3).sigmoid()), ["between 0 and 1"]),
    ("one_hot-too-large", lambda lib: lib.nn.functional.one_hot(_long(lib, [0, 3]), 3), ["smaller than"]),
    ("one_hot-negative", lambda lib: lib.nn.functional.one_hot(_long(lib, [-1, 1]), 3), ["non-negative"]),
    ("avg_pool2d-int32", lambda lib: lib.nn.functional.avg_pool2d(lib.ones(1, 1, 4, 4, dtype=lib.int32), 2),
     ["avg_pool2d", "Int"]),
    ("adaptive_avg_pool2d-long", lambda lib: lib.nn.functional.adaptive_avg_pool2d(
        lib.ones(1, 1, 4, 4, dtype=lib.int64), 2), ["adaptive_avg_pool2d", "Long"]),
    ("adaptive_max_pool2d-long", lambda lib: lib.nn.functional.adaptive_max_pool2d(
        lib.ones(1, 1, 4, 4, dtype=lib.int64), 2), ["adaptive_max_pool2d", "Long"]),
    ("adaptive_avg_pool2d-empty", lambda lib: lib.nn.functional.adaptive_avg_pool2d(lib.ones(1, 2, 0, 4), 2),
     ["non-zero size", "dimension 2"]),
    ("bce-logits-size", lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(_x(lib, 3), _x(lib, 4)),
     ["[4]", "[3]"]),
    ("mha-attn_mask-shape", lambda lib: _mha(lib, _x(lib, 4, 2, 6), _x(lib, 3, 2, 6), _x(lib, 3, 2, 6),
                                             attn_mask=lib.zeros(4, 4, dtype=lib.bool)), ["(4, 4)", "(4, 3)"]),
    ("mha-attn_mask-3d-shape", lambda lib: _mha(lib, _x(lib, 4, 2, 6), _x(lib, 3, 2, 6), _x(lib, 3, 2, 6),
                                                attn_mask=lib.zeros(2, 4, 3, dtype=lib.bool)),
     ["(2, 4, 3)", "(4, 4, 3)"]),
    ("mha-embed-dim", lambda lib: _mha(lib, _x(lib, 4, 2, 5), _x(lib, 4, 2, 5), _x(lib, 4, 2, 5)), ["6", "5"]),
    ("mha-heads-divisible", lambda lib: lib.nn.MultiheadAttention(6, 4), ["embed_dim must be divisible"]),
    ("mha-key_padding_mask-shape", lambda lib: _mha(lib, _x(lib, 4, 2, 6), _x(lib, 3, 2, 6), _x(lib, 3, 2, 6),
                                                    key_padding_mask=lib.zeros(2, 4, dtype=lib.bool)), []),
    ("embedding-index-range", lambda lib: lib.nn.Embedding(5, 3)(_long(lib, [1, 5])), ["index out of range"]),
    ("embedding-float-index", lambda lib: lib.nn.Embedding(5, 3)(_x(lib, 2)), []),
    ("embedding-padding_idx", lambda lib: lib.nn.Embedding(5, 3, padding_idx=7), ["Padding_idx"]),
    ("lstm-input-size", lambda lib: lib.nn.LSTM(3, 4)(_x(lib, 5, 2, 4)), ["input.size(-1) must be equal to "
                                                                          "input_size. Expected 3, got 4"]),
    ("lstm-rank", lambda lib: lib.nn.LSTM(3, 4)(_x(lib, 1, 5, 2, 3)), ["2D or 3D", "4D"]),
    ("lstm-hidden-shape", lambda lib: lib.nn.LSTM(3, 4)(_x(lib, 5, 2, 3), (_x(lib, 1, 3, 4), _x(lib, 1, 2, 4))),
     ["(1, 2, 4)", "[1, 3, 4]"]),
    ("gru-hidden-shape", lambda lib: lib.nn.GRU(3, 4, 2)(_x(lib, 5, 2, 3), _x(lib, 1, 2, 4)),
     ["(2, 2, 4)", "[1, 2, 4]"]),
    ("rnncell-input-size", lambda lib: lib.nn.RNNCell(3, 4)(_x(lib, 2, 5)), ["5", "3"]),
    ("maxpool-pad-too-big", lambda lib: lib.nn.MaxPool2d(2, padding=2)(_x(lib, 1, 1, 4, 4)), ["half"]),
    ("avgpool-output-empty", lambda lib: lib.nn.AvgPool2d(5)(_x(lib, 1, 1, 3, 3)), ["too small"]),
    ("adaptive-pool-rank", lambda lib: lib.nn.AdaptiveAvgPool2d(2)(_x(lib, 4)), []),
    ("pixel_shuffle-divisible", lambda lib: lib.nn.PixelShuffle(2)(_x(lib, 1, 3, 2, 2)), ["3", "4"]),
    ("reflection-pad-too-big", lambda lib: lib.nn.ReflectionPad1d(4)(_x(lib, 1, 2, 3)), ["4", "3"]),
    ("upsample-no-size", lambda lib: lib.nn.functional.interpolate(_x(lib, 1, 1, 3, 3)), []),
    ("upsample-bad-mode", lambda lib: lib.nn.functional.interpolate(_x(lib, 1, 1, 3, 3), scale_factor=2,
                                                                    mode="linear"), ["3D"]),
    ("dropout-p", lambda lib: lib.nn.Dropout(-0.1), ["-0.1"]),
    ("softmax-dim", lambda lib: lib.nn.functional.softmax(_x(lib, 2, 3), dim=2), ["[-2, 1]", "2"]),
    ("unflatten-size", lambda lib: lib.nn.Unflatten(1, (2, 4))(_x(lib, 3, 6)), ["6"]),
    ("ctc-lengths", lambda lib: lib.nn.CTCLoss()(_x(lib, 4, 2, 3).log_softmax(2), _long(lib, [[1, 2], [1, 1]]),
                                                 _long(lib, [4, 4]), _long(lib, [3, 2])), []),
    ("fold-size", lambda lib: lib.nn.Fold((4, 5), 2)(_x(lib, 2, 12, 11)), ["12"]),
    ("triplet-margin-distance-margin", lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=0.0),
     ["margin"]),
    ("transformer-d_model", lambda lib: lib.nn.TransformerEncoderLayer(6, 4), []),
    ("module-list-index", lambda lib: lib.nn.ModuleList([lib.nn.ReLU()])[2], ["2"]),
    ("sequential-slice-assign", lambda lib: lib.nn.ModuleDict({"a": lib.nn.ReLU()})["b"], ["b"]),
    # validation torch does and ember skipped (found by a probe round)
    ("ce-label-smoothing", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 2, 3), _long(lib, [0, 1]),
                                                                       label_smoothing=1.5), ["1.5"]),
    ("ce-probs-ignore-index", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 2, 3), _x(lib, 2, 3).softmax(1),
                                                                          ignore_index=1), ["ignore_index"]),
    ("ce-weight-dtype", lambda lib: lib.nn.functional.cross_entropy(_x(lib, 2, 3).double(), _long(lib, [0, 1]),
                                                                    weight=lib.ones(3)), ["Double", "Float"]),
    ("huber-delta", lambda lib: lib.nn.functional.huber_loss(_x(lib, 3), _x(lib, 3), delta=0.0), ["delta"]),
    ("smooth-l1-beta", lambda lib: lib.nn.functional.smooth_l1_loss(_x(lib, 3), _x(lib, 3), beta=-1.0), ["beta"]),
    ("one-hot-empty", lambda lib: lib.nn.functional.one_hot(lib.zeros(0, dtype=lib.int64)), ["empty"]),
    ("kl-div-integral", lambda lib: lib.nn.functional.kl_div(_x(lib, 3), lib.ones(3, dtype=lib.int64),
                                                             reduction="sum"), ["Integral"]),
    ("randperm-float", lambda lib: lib.randperm(5.0), ["int"]),
    ("rand-no-size", lambda lib: lib.rand(), []),
    ("avg-pool-divisor-zero", lambda lib: lib.nn.functional.avg_pool2d(_x(lib, 1, 1, 4, 4), 2, divisor_override=0),
     ["divisor"]),
    ("adaptive-pool-size-length", lambda lib: lib.nn.functional.adaptive_avg_pool2d(_x(lib, 1, 1, 4, 4), (2, 2, 2)),
     ["output_size must be 2"]),
    ("bce-target-dtype", lambda lib: lib.nn.functional.binary_cross_entropy(lib.full((3,), 0.5),
                                                                            lib.ones(3, dtype=lib.int64)), ["Long"]),
    ("bce-weight-shape", lambda lib: lib.nn.functional.binary_cross_entropy(lib.full((2, 3), 0.5), lib.ones(2, 3),
                                                                            weight=lib.ones(2, 2, 3)), ["[2, 3]"]),
    ("bce-logits-target-dtype", lambda lib: lib.nn.functional.binary_cross_entropy_with_logits(
        _x(lib, 3), lib.ones(3, dtype=lib.int64)), ["Long"]),
    ("instance-norm-one-element", lambda lib: lib.nn.InstanceNorm1d(3)(_x(lib, 2, 3, 1)), ["spatial"]),
    ("triplet-dims", lambda lib: lib.nn.functional.triplet_margin_loss(_x(lib, 2, 3), _x(lib, 3), _x(lib, 2, 3)),
     ["dimensions"]),
]


@pytest.mark.parametrize("name,call,fragments", CASES, ids=[c[0] for c in CASES])
def test_error_parity(name, call, fragments):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as actual:
        call(ember)
    assert type(actual.value) is type(expected.value), (
        f"{name}: ember raised {type(actual.value).__name__}: {actual.value}\n"
        f"torch raised {type(expected.value).__name__}: {expected.value}")
    message = str(actual.value)
    for fragment in fragments:
        assert fragment in message, f"{name}: {fragment!r} not in ember's message {message!r} " \
                                    f"(torch: {expected.value})"
