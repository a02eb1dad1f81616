"""Every ember.nn module against torch.nn: same constructor, torch's weights, float64 inputs.

Each Case builds the module in both libraries, loads torch's state_dict into ember, and compares
state_dict keys, parameter order, repr, outputs, input and parameter gradients and buffers in train
and eval mode (see _parity.check_module).  Default initialisation is checked by statistics, and the
dropout family by the fraction of zeros and the scaling of survivors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _parity import C, Case, F, L, Packed, check_module

import ember

torch = pytest.importorskip("torch")

EVAL = ("eval",)
TRAIN = ("train",)
X2 = F((2, 3, 6))  # (N, C, L)
X4 = F((2, 3, 5, 6))  # (N, C, H, W)
X5 = F((1, 2, 4, 5, 4))  # (N, C, D, H, W)

CASES = []


def case(name, build, inputs=(), **options):
    CASES.append(Case(name, build, tuple(inputs), **options))


# ---------------------------------------------------------------- linear, shape
case("Linear", lambda lib: lib.nn.Linear(4, 3), [F((2, 4))])
case("Linear-nobias-3d", lambda lib: lib.nn.Linear(4, 3, bias=False), [F((2, 5, 4))])
case("Linear-1d", lambda lib: lib.nn.Linear(4, 3), [F((4,))])
case("Bilinear", lambda lib: lib.nn.Bilinear(3, 4, 2), [F((5, 3)), F((5, 4))])
case("Identity", lambda lib: lib.nn.Identity(3, unused="x"), [F((2, 3))])
case("Flatten", lambda lib: lib.nn.Flatten(), [F((2, 3, 4))])
case("Flatten-dims", lambda lib: lib.nn.Flatten(0, 1), [F((2, 3, 4))])
case("Unflatten", lambda lib: lib.nn.Unflatten(1, (2, 3)), [F((4, 6))])

# ---------------------------------------------------------------- convolution
case("Conv1d", lambda lib: lib.nn.Conv1d(3, 4, 3), [X2])
case("Conv1d-stride-pad-dil", lambda lib: lib.nn.Conv1d(3, 4, 3, stride=2, padding=2, dilation=2), [X2])
case("Conv1d-same", lambda lib: lib.nn.Conv1d(3, 6, 4, padding="same", groups=3), [X2])
case("Conv1d-valid-unbatched", lambda lib: lib.nn.Conv1d(3, 2, 2, padding="valid"), [F((3, 6))])
case("Conv1d-circular", lambda lib: lib.nn.Conv1d(3, 2, 3, padding=2, padding_mode="circular"), [X2])
case("Conv2d", lambda lib: lib.nn.Conv2d(3, 4, 3), [X4])
case("Conv2d-stride-pad", lambda lib: lib.nn.Conv2d(3, 4, (2, 3), stride=(2, 1), padding=(1, 2)), [X4])
case("Conv2d-same-dil", lambda lib: lib.nn.Conv2d(3, 2, 3, padding="same", dilation=2, bias=False), [X4])
case("Conv2d-groups", lambda lib: lib.nn.Conv2d(4, 6, 3, groups=2, padding=1), [F((2, 4, 4, 5))])
case("Conv2d-reflect", lambda lib: lib.nn.Conv2d(3, 2, 3, padding=1, padding_mode="reflect"), [X4])
case("Conv2d-replicate", lambda lib: lib.nn.Conv2d(3, 2, 3, padding=(2, 1), padding_mode="replicate"), [X4])
case("Conv2d-circular", lambda lib: lib.nn.Conv2d(3, 2, 3, padding=1, padding_mode="circular"), [X4])
case("Conv2d-unbatched", lambda lib: lib.nn.Conv2d(3, 2, 2), [F((3, 4, 4))])
case("Conv3d", lambda lib: lib.nn.Conv3d(2, 3, 2, padding=1, stride=(1, 2, 1)), [X5])
case("Conv3d-same", lambda lib: lib.nn.Conv3d(2, 2, (3, 2, 1), padding="same"), [X5])
case("ConvTranspose1d", lambda lib: lib.nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1, output_padding=1), [X2])
case("ConvTranspose1d-groups-dil", lambda lib: lib.nn.ConvTranspose1d(3, 6, 3, groups=3, dilation=2), [X2])
case("ConvTranspose2d", lambda lib: lib.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), [X4])
case("ConvTranspose2d-groups", lambda lib: lib.nn.ConvTranspose2d(4, 2, (2, 3), groups=2, dilation=(1, 2)),
     [F((2, 4, 3, 3))])
case("ConvTranspose2d-output_size", lambda lib: lib.nn.ConvTranspose2d(3, 2, 3, stride=2), [X4],
     kwargs={"output_size": [12, 14]})
case("ConvTranspose3d", lambda lib: lib.nn.ConvTranspose3d(2, 2, 2, stride=2, output_padding=(1, 0, 0)), [X5])

# ---------------------------------------------------------------- pooling
case("MaxPool1d", lambda lib: lib.nn.MaxPool1d(3, stride=2, padding=1, return_indices=True), [X2])
case("MaxPool1d-ceil-dil", lambda lib: lib.nn.MaxPool1d(2, dilation=2, ceil_mode=True), [F((2, 3, 7))])
case("MaxPool2d", lambda lib: lib.nn.MaxPool2d(2), [X4])
case("MaxPool2d-full", lambda lib: lib.nn.MaxPool2d(3, 2, padding=1, dilation=1, ceil_mode=True,
                                                    return_indices=True), [X4])
case("MaxPool2d-dil", lambda lib: lib.nn.MaxPool2d((2, 2), stride=1, dilation=2), [X4])
case("MaxPool3d", lambda lib: lib.nn.MaxPool3d(2, stride=1, padding=1, return_indices=True), [X5])
case("AvgPool1d", lambda lib: lib.nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), [X2])
case("AvgPool1d-ceil", lambda lib: lib.nn.AvgPool1d(2, ceil_mode=True), [F((2, 3, 7))])
case("AvgPool2d", lambda lib: lib.nn.AvgPool2d(2), [X4])
case("AvgPool2d-pad", lambda lib: lib.nn.AvgPool2d(3, 2, padding=1, ceil_mode=True), [X4])
case("AvgPool2d-nopad-count", lambda lib: lib.nn.AvgPool2d(3, 2, padding=1, count_include_pad=False), [X4])
case("AvgPool2d-divisor", lambda lib: lib.nn.AvgPool2d(2, divisor_override=3), [X4])
case("AvgPool3d", lambda lib: lib.nn.AvgPool3d(2, stride=(1, 2, 2), padding=1, count_include_pad=False), [X5])
case("AdaptiveAvgPool1d", lambda lib: lib.nn.AdaptiveAvgPool1d(4), [X2])
case("AdaptiveAvgPool2d", lambda lib: lib.nn.AdaptiveAvgPool2d((3, 4)), [X4])
case("AdaptiveAvgPool2d-None", lambda lib: lib.nn.AdaptiveAvgPool2d((None, 2)), [X4])
case("AdaptiveAvgPool3d", lambda lib: lib.nn.AdaptiveAvgPool3d(2), [X5])
case("AdaptiveAvgPool1d-global", lambda lib: lib.nn.AdaptiveAvgPool1d(1), [X2])
case("AdaptiveAvgPool2d-global", lambda lib: lib.nn.AdaptiveAvgPool2d(1), [X4])
case("AdaptiveAvgPool3d-global", lambda lib: lib.nn.AdaptiveAvgPool3d((1, 1, 1)), [X5])
case("AdaptiveMaxPool1d", lambda lib: lib.nn.AdaptiveMaxPool1d(4, return_indices=True), [X2])
case("AdaptiveMaxPool2d", lambda lib: lib.nn.AdaptiveMaxPool2d((2, 4)), [X4])
case("AdaptiveMaxPool3d", lambda lib: lib.nn.AdaptiveMaxPool3d((2, 3, 2)), [X5])
case("LPPool1d", lambda lib: lib.nn.LPPool1d(2, 3, stride=2), [F((2, 3, 7), 0.1, 2.0)])
case("LPPool3d", lambda lib: lib.nn.LPPool3d(2, 2), [F((1, 2, 4, 4, 5), 0.1, 2.0)])
case("LPPool2d", lambda lib: lib.nn.LPPool2d(2, 2), [F((2, 3, 4, 6), 0.1, 2.0)])
case("LPPool2d-p3", lambda lib: lib.nn.LPPool2d(3.0, (2, 3), stride=1), [F((2, 3, 4, 6), 0.1, 2.0)])


def _unpool(module, x):
    pooled, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True) if isinstance(x, torch.Tensor) \
        else ember.nn.functional.max_pool2d(x, 2, return_indices=True)
    return module(pooled, indices)


case("MaxUnpool2d", lambda lib: lib.nn.MaxUnpool2d(2), [X4], call=_unpool)
case("MaxUnpool2d-output_size", lambda lib: lib.nn.MaxUnpool2d(2),
     [F((2, 3, 5, 7))], call=lambda m, x: _unpool_size(m, x))


def _unpool_size(module, x):
    lib = torch if isinstance(x, torch.Tensor) else ember
    pooled, indices = lib.nn.functional.max_pool2d(x, 2, return_indices=True)
    return module(pooled, indices, output_size=x.size())


def _unpool1d(module, x):
    lib = torch if isinstance(x, torch.Tensor) else ember
    pooled, indices = lib.nn.functional.max_pool1d(x, 2, return_indices=True)
    return module(pooled, indices)


case("MaxUnpool1d", lambda lib: lib.nn.MaxUnpool1d(2), [X2], call=_unpool1d)


def _unpool3d(module, x):
    lib = torch if isinstance(x, torch.Tensor) else ember
    pooled, indices = lib.nn.functional.max_pool3d(x, 2, stride=1, return_indices=True)
    return module(pooled, indices)


case("MaxUnpool3d", lambda lib: lib.nn.MaxUnpool3d(2, stride=1), [X5], call=_unpool3d)

# ---------------------------------------------------------------- normalization
case("BatchNorm1d", lambda lib: lib.nn.BatchNorm1d(3), [F((4, 3))])
case("BatchNorm1d-3d", lambda lib: lib.nn.BatchNorm1d(3, momentum=0.3), [X2])
case("BatchNorm2d", lambda lib: lib.nn.BatchNorm2d(3), [X4])
case("BatchNorm2d-cumulative", lambda lib: lib.nn.BatchNorm2d(3, momentum=None), [X4])
case("BatchNorm2d-no-stats", lambda lib: lib.nn.BatchNorm2d(3, track_running_stats=False), [X4])
case("BatchNorm2d-no-affine", lambda lib: lib.nn.BatchNorm2d(3, affine=False, eps=1e-3), [X4])
case("BatchNorm3d", lambda lib: lib.nn.BatchNorm3d(2), [X5])
case("LayerNorm", lambda lib: lib.nn.LayerNorm(6), [X2])
case("LayerNorm-2d-nobias", lambda lib: lib.nn.LayerNorm((3, 6), bias=False), [X2])
case("LayerNorm-noaffine", lambda lib: lib.nn.LayerNorm([6], elementwise_affine=False, eps=1e-3), [X2])
case("GroupNorm", lambda lib: lib.nn.GroupNorm(2, 4), [F((2, 4, 3, 2))])
case("GroupNorm-noaffine", lambda lib: lib.nn.GroupNorm(1, 3, affine=False), [X2])
case("InstanceNorm1d", lambda lib: lib.nn.InstanceNorm1d(3), [X2])
case("InstanceNorm1d-affine-stats", lambda lib: lib.nn.InstanceNorm1d(3, affine=True, track_running_stats=True), [X2])
case("InstanceNorm2d-affine", lambda lib: lib.nn.InstanceNorm2d(3, affine=True), [X4])
case("InstanceNorm2d-stats", lambda lib: lib.nn.InstanceNorm2d(3, track_running_stats=True), [X4])
case("InstanceNorm3d", lambda lib: lib.nn.InstanceNorm3d(2, affine=True), [X5])
case("RMSNorm", lambda lib: lib.nn.RMSNorm(6), [X2])
case("RMSNorm-eps-2d", lambda lib: lib.nn.RMSNorm([3, 6], eps=1e-3), [X2])
case("RMSNorm-noaffine", lambda lib: lib.nn.RMSNorm(6, elementwise_affine=False), [X2])
case("LocalResponseNorm", lambda lib: lib.nn.LocalResponseNorm(3), [F((2, 5, 3, 3))])
case("LocalResponseNorm-3d", lambda lib: lib.nn.LocalResponseNorm(2, alpha=0.1, beta=0.5, k=2.0), [X2])

# ---------------------------------------------------------------- dropout (eval: identity)
for _name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
    _shape = {"Dropout1d": (2, 3, 4), "Dropout3d": (2, 3, 2, 2, 2)}.get(_name, (2, 3, 4, 4))
    case(_name, lambda lib, n=_name: getattr(lib.nn, n)(0.3), [F(_shape)], modes=EVAL)

# ---------------------------------------------------------------- embedding
case("Embedding", lambda lib: lib.nn.Embedding(10, 3), [L(10, (2, 4))])
case("Embedding-padding", lambda lib: lib.nn.Embedding(10, 3, padding_idx=2), [C([[2, 1, 2], [0, 2, 9]])])
case("Embedding-max_norm", lambda lib: lib.nn.Embedding(10, 3, max_norm=1.0), [C([1, 3, 1, 5])])
case("Embedding-scale_grad_by_freq", lambda lib: lib.nn.Embedding(10, 3, scale_grad_by_freq=True, padding_idx=1),
     [C([[2, 1, 2], [0, 2, 9]])])
case("Embedding-from_pretrained",
     lambda lib: lib.nn.Embedding.from_pretrained(lib.tensor(np.arange(12.0).reshape(4, 3)), freeze=False),
     [C([0, 3, 3])])
case("EmbeddingBag-mean", lambda lib: lib.nn.EmbeddingBag(10, 3), [L(10, (3, 4))])
case("EmbeddingBag-sum-offsets", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="sum"),
     [C([1, 2, 4, 5, 4, 3, 2, 9]), C([0, 3, 3, 6])])
case("EmbeddingBag-max", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="max"),
     [C([1, 2, 4, 5, 4, 3, 2, 9]), C([0, 2, 5])])
case("EmbeddingBag-last-offset", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="mean", include_last_offset=True),
     [C([1, 2, 4, 5, 4, 3, 2, 9]), C([0, 2, 5, 8])])
case("EmbeddingBag-psw", lambda lib: lib.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=4),
     [C([1, 2, 4, 5, 4, 3]), C([0, 2])], kwargs={"per_sample_weights": F((6,))})

# ---------------------------------------------------------------- recurrent
case("RNN", lambda lib: lib.nn.RNN(3, 4), [F((5, 2, 3))])
case("RNN-relu-2layer-bi", lambda lib: lib.nn.RNN(3, 4, 2, nonlinearity="relu", bidirectional=True), [F((5, 2, 3))])
case("RNN-h0-batch_first", lambda lib: lib.nn.RNN(3, 4, batch_first=True, bias=False), [F((2, 5, 3)), F((1, 2, 4))])
case("LSTM", lambda lib: lib.nn.LSTM(3, 4), [F((5, 2, 3))])
case("LSTM-2layer-bi-dropout", lambda lib: lib.nn.LSTM(3, 4, 2, bidirectional=True, dropout=0.5), [F((5, 2, 3))],
     modes=EVAL)
case("LSTM-proj", lambda lib: lib.nn.LSTM(3, 5, 2, proj_size=2, batch_first=True), [F((2, 4, 3))])
case("LSTM-proj-bi-states", lambda lib: lib.nn.LSTM(3, 5, proj_size=2, bidirectional=True),
     [F((4, 2, 3)), F((2, 2, 2)), F((2, 2, 5))], call=lambda m, x, h, c: m(x, (h, c)))
case("LSTM-unbatched", lambda lib: lib.nn.LSTM(3, 4, 2), [F((5, 3))])
case("LSTM-packed", lambda lib: lib.nn.LSTM(3, 4, bidirectional=True), [Packed((5, 3, 3), [3, 5, 2])])
case("GRU", lambda lib: lib.nn.GRU(3, 4, 2, batch_first=True), [F((2, 5, 3))])
case("GRU-packed-bi", lambda lib: lib.nn.GRU(3, 4, 2, bidirectional=True, batch_first=True),
     [Packed((3, 4, 3), [2, 4, 1], batch_first=True), F((4, 3, 4))])
case("GRU-unbatched-h0", lambda lib: lib.nn.GRU(3, 4, bidirectional=True), [F((5, 3)), F((2, 4))])
case("RNNCell", lambda lib: lib.nn.RNNCell(3, 4), [F((2, 3)), F((2, 4))])
case("RNNCell-relu-unbatched", lambda lib: lib.nn.RNNCell(3, 4, nonlinearity="relu", bias=False), [F((3,))])
case("LSTMCell", lambda lib: lib.nn.LSTMCell(3, 4), [F((2, 3)), F((2, 4)), F((2, 4))],
     call=lambda m, x, h, c: m(x, (h, c)))
case("LSTMCell-no-state", lambda lib: lib.nn.LSTMCell(3, 4), [F((2, 3))])
case("GRUCell", lambda lib: lib.nn.GRUCell(3, 4), [F((2, 3)), F((2, 4))])
case("GRUCell-unbatched", lambda lib: lib.nn.GRUCell(3, 4), [F((3,))])

# ---------------------------------------------------------------- attention and transformers
Q = F((2, 4, 6))  # batch_first (N, L, E)
case("MHA", lambda lib: lib.nn.MultiheadAttention(6, 2), [F((4, 2, 6)), F((3, 2, 6)), F((3, 2, 6))])
case("MHA-self-batch_first", lambda lib: lib.nn.MultiheadAttention(6, 3, batch_first=True), [Q, Q, Q],
     call=lambda m, q, k, v: m(q, q, q))
case("MHA-masks", lambda lib: lib.nn.MultiheadAttention(6, 2, batch_first=True), [Q, F((2, 3, 6)), F((2, 3, 6))],
     kwargs={"key_padding_mask": C([[False, False, True], [False, True, True]]),
             "attn_mask": C(np.triu(np.ones((4, 3), bool), 1)), "average_attn_weights": False})
case("MHA-float-mask-noweights", lambda lib: lib.nn.MultiheadAttention(6, 2), [F((4, 2, 6))] * 3,
     kwargs={"attn_mask": F((4, 4), grad=False), "need_weights": False})
case("MHA-3d-mask", lambda lib: lib.nn.MultiheadAttention(6, 2), [F((4, 2, 6))] * 3,
     kwargs={"attn_mask": F((4, 4, 4), grad=False)})
case("MHA-kdim-vdim", lambda lib: lib.nn.MultiheadAttention(6, 2, kdim=4, vdim=5, batch_first=True),
     [Q, F((2, 3, 4)), F((2, 3, 5))])
case("MHA-bias_kv-zero_attn", lambda lib: lib.nn.MultiheadAttention(6, 2, add_bias_kv=True, add_zero_attn=True),
     [F((4, 2, 6)), F((3, 2, 6)), F((3, 2, 6))], kwargs={"key_padding_mask": C([[0, 0, 1], [0, 0, 0]]).__class__(
         np.array([[False, False, True], [False, False, False]]))})
case("MHA-unbatched", lambda lib: lib.nn.MultiheadAttention(6, 2, bias=False), [F((4, 6)), F((3, 6)), F((3, 6))])

CAUSAL = C(np.triu(np.full((4, 4), -np.inf), 1))
case("TransformerEncoderLayer",
     lambda lib: lib.nn.TransformerEncoderLayer(6, 2, dim_feedforward=8, dropout=0.0, batch_first=True), [Q],
     kwargs={"src_mask": CAUSAL})
case("TransformerEncoderLayer-norm_first-gelu",
     lambda lib: lib.nn.TransformerEncoderLayer(6, 3, 8, 0.0, activation="gelu", norm_first=True), [F((4, 2, 6))],
     kwargs={"src_key_padding_mask": C([[False, False, False, True], [False, False, False, False]])})
case("TransformerEncoder",
     lambda lib: lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(6, 2, 8, 0.0, batch_first=True), 2,
                                           norm=lib.nn.LayerNorm(6), enable_nested_tensor=False), [Q],
     kwargs={"mask": CAUSAL})
case("TransformerDecoderLayer",
     lambda lib: lib.nn.TransformerDecoderLayer(6, 2, 8, 0.0, batch_first=True), [Q, F((2, 3, 6))],
     kwargs={"tgt_mask": CAUSAL, "memory_key_padding_mask": C([[False, False, True], [False, False, False]])})
case("TransformerDecoderLayer-norm_first",
     lambda lib: lib.nn.TransformerDecoderLayer(6, 2, 8, 0.0, activation=lib.nn.functional.gelu, norm_first=True),
     [F((4, 2, 6)), F((3, 2, 6))], kwargs={"tgt_is_causal": False})
case("TransformerDecoder",
     lambda lib: lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(6, 2, 8, 0.0), 2), [F((4, 2, 6)),
                                                                                             F((3, 2, 6))])
case("Transformer",
     lambda lib: lib.nn.Transformer(6, 2, 1, 2, 8, 0.0, batch_first=True), [F((2, 3, 6)), Q],
     kwargs={"tgt_mask": CAUSAL})

# ---------------------------------------------------------------- activations
ACTIVATIONS = [
    ("ReLU", ()), ("ReLU6", ()), ("ELU", (0.7,)), ("SELU", ()), ("CELU", (1.3,)), ("GELU", ()), ("SiLU", ()),
    ("Mish", ()), ("Sigmoid", ()), ("Tanh", ()), ("LogSigmoid", ()), ("Softplus", (2.0, 3.0)), ("Softsign", ()),
    ("Tanhshrink", ()), ("Hardtanh", (-0.5, 0.7)), ("Hardsigmoid", ()), ("Hardswish", ()), ("LeakyReLU", (0.2,)),
    ("Hardshrink", (0.3,)), ("Softshrink", (0.3,)), ("Threshold", (0.1, 20.0)), ("Softmax", (1,)),
    ("Softmin", (-1,)), ("LogSoftmax", (0,)), ("GLU", (1,)), ("PReLU", ()), ("Softmax2d", ()),
]
for _name, _args in ACTIVATIONS:
    case(_name, lambda lib, n=_name, a=_args: getattr(lib.nn, n)(*a), [F((2, 4, 3))])
case("GELU-tanh", lambda lib: lib.nn.GELU(approximate="tanh"), [F((2, 4, 3))])
case("PReLU-channels", lambda lib: lib.nn.PReLU(4, init=0.1), [F((2, 4, 3))])
case("RReLU-eval", lambda lib: lib.nn.RReLU(0.1, 0.3), [F((2, 4, 3))], modes=EVAL)
case("Softmax-nodim", lambda lib: lib.nn.Softmax(dim=-1), [F((3, 5))])

# ---------------------------------------------------------------- losses
P = F((3, 4), 0.05, 0.95)  # probabilities
T01 = F((3, 4), 0.0, 1.0, grad=False)
for _reduction in ("none", "mean", "sum"):
    def loss(name, build, inputs, r=_reduction, **options):
        case(f"{name}-{r}", lambda lib, b=build: b(lib, r), inputs, **options)

    loss("L1Loss", lambda lib, r: lib.nn.L1Loss(reduction=r), [F((3, 4)), F((3, 4))])
    loss("MSELoss", lambda lib, r: lib.nn.MSELoss(reduction=r), [F((3, 4)), F((3, 4))])
    loss("CrossEntropy", lambda lib, r: lib.nn.CrossEntropyLoss(reduction=r), [F((4, 5)), L(5, (4,))])
    loss("CrossEntropy-weight-ignore",
         lambda lib, r: lib.nn.CrossEntropyLoss(lib.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=lib.float64),
                                                ignore_index=2, reduction=r), [F((5, 5)), C([0, 2, 4, 1, 2])])
    loss("CrossEntropy-smoothing-weight",
         lambda lib, r: lib.nn.CrossEntropyLoss(lib.tensor([1.0, 2.0, 0.5, 1.5], dtype=lib.float64),
                                                label_smoothing=0.2, reduction=r), [F((3, 4)), C([0, 3, 1])])
    loss("CrossEntropy-probs", lambda lib, r: lib.nn.CrossEntropyLoss(reduction=r, label_smoothing=0.1),
         [F((3, 4)), F((3, 4), 0.0, 1.0)])
    loss("CrossEntropy-Kdim", lambda lib, r: lib.nn.CrossEntropyLoss(reduction=r, ignore_index=1),
         [F((2, 3, 4, 2)), L(3, (2, 4, 2))])
    loss("CrossEntropy-unbatched", lambda lib, r: lib.nn.CrossEntropyLoss(reduction=r), [F((4,)), C(2)])
    loss("NLLLoss", lambda lib, r: lib.nn.NLLLoss(reduction=r), [F((4, 5)), L(5, (4,))])
    loss("NLLLoss-weight-ignore-Kdim",
         lambda lib, r: lib.nn.NLLLoss(lib.tensor([1.0, 2.0, 0.5], dtype=lib.float64), ignore_index=0,
                                       reduction=r), [F((2, 3, 4)), L(3, (2, 4))])
    loss("BCELoss", lambda lib, r: lib.nn.BCELoss(reduction=r), [P, T01])
    loss("BCELoss-weight", lambda lib, r: lib.nn.BCELoss(lib.tensor([1.0, 2.0, 0.5, 1.0], dtype=lib.float64),
                                                          reduction=r), [P, T01])
    loss("BCEWithLogits", lambda lib, r: lib.nn.BCEWithLogitsLoss(reduction=r), [F((3, 4)), F((3, 4), 0.0, 1.0)])
    loss("BCEWithLogits-pos_weight",
         lambda lib, r: lib.nn.BCEWithLogitsLoss(lib.tensor([1.0, 2.0, 0.5, 1.0], dtype=lib.float64),
                                                 reduction=r, pos_weight=lib.tensor([3.0, 1.0, 0.5, 2.0],
                                                                                    dtype=lib.float64)),
         [F((3, 4)), T01])
    loss("KLDivLoss", lambda lib, r: lib.nn.KLDivLoss(reduction=r), [F((3, 4)), F((3, 4), 0.05, 1.0)])
    loss("KLDivLoss-log_target", lambda lib, r: lib.nn.KLDivLoss(reduction=r, log_target=True),
         [F((3, 4)), F((3, 4))])
    loss("HuberLoss", lambda lib, r: lib.nn.HuberLoss(reduction=r, delta=0.7), [F((3, 4)), F((3, 4))])
    loss("SmoothL1Loss", lambda lib, r: lib.nn.SmoothL1Loss(reduction=r), [F((3, 4)), F((3, 4))])
    loss("SmoothL1Loss-beta", lambda lib, r: lib.nn.SmoothL1Loss(reduction=r, beta=0.5), [F((3, 4)), F((3, 4))])
    loss("SoftMarginLoss", lambda lib, r: lib.nn.SoftMarginLoss(reduction=r), [F((3, 4)), C(np.sign(
        np.arange(12.0).reshape(3, 4) % 3 - 1) + (np.arange(12).reshape(3, 4) % 3 == 1))])
    loss("MultiLabelSoftMarginLoss", lambda lib, r: lib.nn.MultiLabelSoftMarginLoss(reduction=r), [F((3, 4)), T01])
    loss("MultiLabelMarginLoss", lambda lib, r: lib.nn.MultiLabelMarginLoss(reduction=r),
         [F((2, 4)), C([[3, 0, -1, 1], [1, 2, 3, -1]])])
    loss("MultiMarginLoss", lambda lib, r: lib.nn.MultiMarginLoss(reduction=r), [F((3, 4)), C([3, 0, 1])])
    loss("MultiMarginLoss-p2-weight",
         lambda lib, r: lib.nn.MultiMarginLoss(p=2, margin=0.5, weight=lib.tensor([1.0, 2.0, 3.0, 0.5],
                                                                                  dtype=lib.float64), reduction=r),
         [F((3, 4)), C([3, 0, 1])])
    loss("MarginRankingLoss", lambda lib, r: lib.nn.MarginRankingLoss(0.2, reduction=r),
         [F((5,)), F((5,)), C([1.0, -1.0, 1.0, 1.0, -1.0])])
    loss("HingeEmbeddingLoss", lambda lib, r: lib.nn.HingeEmbeddingLoss(0.5, reduction=r),
         [F((3, 4)), C(np.where(np.arange(12).reshape(3, 4) % 2, 1.0, -1.0))])
    loss("CosineEmbeddingLoss", lambda lib, r: lib.nn.CosineEmbeddingLoss(0.1, reduction=r),
         [F((3, 5)), F((3, 5)), C([1, -1, 1])])
    loss("TripletMarginLoss", lambda lib, r: lib.nn.TripletMarginLoss(reduction=r, swap=True),
         [F((3, 5)), F((3, 5)), F((3, 5))])
    loss("TripletMarginLoss-p1", lambda lib, r: lib.nn.TripletMarginLoss(margin=2.0, p=1, reduction=r),
         [F((3, 5)), F((3, 5)), F((3, 5))])
    loss("TripletMarginWithDistance",
         lambda lib, r: lib.nn.TripletMarginWithDistanceLoss(
             distance_function=lambda a, b: 1.0 - lib.nn.functional.cosine_similarity(a, b), margin=0.5,
             reduction=r), [F((3, 5)), F((3, 5)), F((3, 5))])
    loss("TripletMarginWithDistance-default", lambda lib, r: lib.nn.TripletMarginWithDistanceLoss(reduction=r),
         [F((3, 5)), F((3, 5)), F((3, 5))])
    loss("PoissonNLLLoss", lambda lib, r: lib.nn.PoissonNLLLoss(reduction=r), [F((3, 4)), F((3, 4), 0.0, 3.0)])
    loss("PoissonNLLLoss-full-nolog", lambda lib, r: lib.nn.PoissonNLLLoss(log_input=False, full=True, reduction=r),
         [F((3, 4), 0.1, 2.0), F((3, 4), 0.0, 3.0)])
    loss("GaussianNLLLoss", lambda lib, r: lib.nn.GaussianNLLLoss(reduction=r),
         [F((3, 4)), F((3, 4)), F((3, 4), 0.1, 1.0)])
    loss("GaussianNLLLoss-full-1var", lambda lib, r: lib.nn.GaussianNLLLoss(full=True, reduction=r, eps=1e-3),
         [F((3, 4)), F((3, 4)), F((3, 1), 0.1, 1.0)])
    loss("CTCLoss", lambda lib, r: lib.nn.CTCLoss(reduction=r), [F((6, 2, 4)), C([[1, 2, 2], [3, 1, 0]]),
                                                                C([6, 5]), C([3, 2])],
         call=lambda m, x, *rest: m(x.log_softmax(2), *rest))
    loss("CTCLoss-blank-zero_inf", lambda lib, r: lib.nn.CTCLoss(blank=3, reduction=r, zero_infinity=True),
         [F((4, 2, 4)), C([0, 1, 1, 2, 2, 0, 1, 2]), C([4, 4]), C([3, 5])],
         call=lambda m, x, *rest: m(x.log_softmax(2), *rest))

case("KLDivLoss-batchmean", lambda lib: lib.nn.KLDivLoss(reduction="batchmean"), [F((3, 4)), F((3, 4), 0.05, 1.0)])
case("CrossEntropy-Kdim-probs-weight",
     lambda lib: lib.nn.CrossEntropyLoss(lib.tensor([1.0, 2.0, 0.5], dtype=lib.float64), reduction="mean"),
     [F((2, 3, 2)), F((2, 3, 2), 0.0, 1.0)])

# ---------------------------------------------------------------- padding, upsampling, shuffles, distances, fold
for _kind in ("Zero", "Constant", "Reflection", "Replication", "Circular"):
    for _dims, _shape, _pad in ((1, (2, 3, 5), (2, 1)), (2, (1, 2, 4, 5), (1, 2, 0, 3)), (3, X5.shape, 1)):
        _args = (_pad, 0.5) if _kind == "Constant" else (_pad,)
        case(f"{_kind}Pad{_dims}d", lambda lib, n=f"{_kind}Pad{_dims}d", a=_args: getattr(lib.nn, n)(*a),
             [F(_shape)])
case("ZeroPad2d-negative", lambda lib: lib.nn.ZeroPad2d((-1, 2, 1, -2)), [X4])

UPSAMPLE = [
    ({"scale_factor": 2}, X4), ({"size": (7, 9), "mode": "nearest"}, X4), ({"size": 9, "mode": "linear"}, X2),
    ({"scale_factor": 1.5, "mode": "linear", "align_corners": True}, X2),
    ({"scale_factor": 2, "mode": "bilinear"}, X4), ({"size": (4, 9), "mode": "bilinear", "align_corners": True}, X4),
    ({"scale_factor": (1.5, 2), "mode": "bicubic"}, X4), ({"size": 7, "mode": "bicubic", "align_corners": True}, X4),
    ({"scale_factor": 2, "mode": "trilinear"}, X5), ({"size": (3, 3, 5), "mode": "trilinear", "align_corners": True},
                                                     X5),
    ({"size": (7, 4), "mode": "nearest-exact"}, X4), ({"scale_factor": 1.7, "mode": "nearest"}, X2),
    ({"scale_factor": 2, "mode": "nearest"}, X5),
]
for _kwargs, _x in UPSAMPLE:
    case(f"Upsample-{_kwargs}", lambda lib, k=_kwargs: lib.nn.Upsample(**k), [_x])
case("UpsamplingNearest2d", lambda lib: lib.nn.UpsamplingNearest2d(scale_factor=2), [X4])
case("UpsamplingBilinear2d", lambda lib: lib.nn.UpsamplingBilinear2d(size=(6, 7)), [X4])
case("PixelShuffle", lambda lib: lib.nn.PixelShuffle(2), [F((2, 8, 2, 3))])
case("PixelUnshuffle", lambda lib: lib.nn.PixelUnshuffle(2), [F((2, 2, 4, 6))])
case("ChannelShuffle", lambda lib: lib.nn.ChannelShuffle(2), [F((2, 6, 2, 2))], modes=EVAL)
case("CosineSimilarity", lambda lib: lib.nn.CosineSimilarity(dim=1, eps=1e-6), [F((3, 5)), F((3, 5))])
case("CosineSimilarity-broadcast", lambda lib: lib.nn.CosineSimilarity(dim=-1), [F((2, 3, 5)), F((3, 5))])
case("PairwiseDistance", lambda lib: lib.nn.PairwiseDistance(), [F((3, 5)), F((3, 5))])
case("PairwiseDistance-p1-keepdim", lambda lib: lib.nn.PairwiseDistance(p=1.0, keepdim=True), [F((3, 5)), F((3, 5))])
case("Unfold", lambda lib: lib.nn.Unfold(kernel_size=(2, 3)), [X4])
case("Unfold-full", lambda lib: lib.nn.Unfold(kernel_size=2, dilation=2, padding=1, stride=2), [X4])
case("Fold", lambda lib: lib.nn.Fold(output_size=(4, 5), kernel_size=(2, 2)), [F((2, 12, 12))])
case("Fold-full", lambda lib: lib.nn.Fold(output_size=(5, 6), kernel_size=2, dilation=1, padding=1, stride=2),
     [F((2, 8, 12))])

# ---------------------------------------------------------------- containers running real layers
case("Sequential-mlp", lambda lib: lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.BatchNorm1d(5), lib.nn.ReLU(),
                                                     lib.nn.Dropout(0.0), lib.nn.Linear(5, 2)), [F((6, 4))])
case("Sequential-convnet", lambda lib: lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.GroupNorm(2, 4),
                                                         lib.nn.SiLU(), lib.nn.MaxPool2d(2), lib.nn.Flatten(),
                                                         lib.nn.Linear(24, 3)), [X4])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_module_parity(case):
    check_module(case)


def test_every_module_class_is_covered():
    """A new module in ember.nn must get a case here (or be listed as covered elsewhere)."""
    from test_more_layers import CASES as MORE_CASES  # lazy modules, fractional pooling, ... (their own file)

    covered = {c.name.split("-")[0] for c in CASES + MORE_CASES}
    elsewhere = {"Module", "Container", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
                 "LazyLinear", "Parameter", "Buffer", "UninitializedBuffer", "UninitializedParameter",
                 "LazyModuleMixin", "RNNBase", "RNNCellBase", "SyncBatchNorm", "CrossEntropyLoss", "NLLLoss",
                 "BCEWithLogitsLoss", "TripletMarginWithDistanceLoss", "MultiheadAttention", "RReLU",
                 "LinearCrossEntropyLoss", "LinearCrossEntropyOptions"}  # (tests/nn/test_linear_cross_entropy.py)
    renamed = {"CrossEntropy", "BCEWithLogits", "TripletMarginWithDistance", "MHA"}
    names = {n for n in dir(ember.nn) if n[0].isupper() and isinstance(getattr(ember.nn, n), type)}
    missing = sorted(names - covered - elsewhere - renamed)
    assert not missing, missing


# ---------------------------------------------------------------- default initialisation, by statistics


def _uniform_bound_check(values, bound):
    """Within ±bound, mean ≈ 0 and variance ≈ bound²/3 (uniform), to a few standard errors."""
    values = np.asarray(values, dtype=np.float64).ravel()
    assert np.all(np.abs(values) <= bound + 1e-7)
    count = values.size
    assert abs(values.mean()) < 5 * bound / math.sqrt(3 * count)
    expected_var = bound**2 / 3
    # the variance of a U(-b, b) sample variance: (b^4/5 - b^4/9) / n
    assert abs(values.var() - expected_var) < 5 * math.sqrt((bound**4 / 5 - bound**4 / 9) / count)
    assert values.max() > 0.9 * bound and values.min() < -0.9 * bound


def test_linear_init_statistics():
    ember.manual_seed(0)
    layer = ember.nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    _uniform_bound_check(layer.weight.detach().numpy(), bound)
    _uniform_bound_check(layer.bias.detach().numpy(), bound)
    assert layer.weight.dtype == ember.float32


def test_conv2d_init_statistics():
    ember.manual_seed(0)
    layer = ember.nn.Conv2d(16, 64, 3)
    fan_in = 16 * 9
    _uniform_bound_check(layer.weight.detach().numpy(), 1 / math.sqrt(fan_in))
    _uniform_bound_check(layer.bias.detach().numpy(), 1 / math.sqrt(fan_in))
    grouped = ember.nn.ConvTranspose2d(32, 64, 3, groups=4)
    # torch computes the transposed conv's fan_in from weight.size(1) * kernel = (64/4) * 9
    _uniform_bound_check(grouped.weight.detach().numpy(), 1 / math.sqrt(16 * 9))


def test_embedding_init_statistics():
    ember.manual_seed(0)
    table = ember.nn.Embedding(500, 64, padding_idx=3).weight.detach().numpy()
    assert np.all(table[3] == 0)
    values = np.delete(table, 3, axis=0).ravel()
    assert abs(values.mean()) < 5 / math.sqrt(values.size)
    assert abs(values.std() - 1.0) < 0.02


def test_lstm_init_statistics():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(50, 100, 2, bidirectional=True)
    bound = 1 / math.sqrt(100)
    for param in lstm.parameters():
        if param.numel() > 1000:
            _uniform_bound_check(param.detach().numpy(), bound)
        else:
            np.testing.assert_array_less(np.abs(param.detach().numpy()), bound + 1e-7)


def test_mha_and_bilinear_init_statistics():
    ember.manual_seed(0)
    mha = ember.nn.MultiheadAttention(64, 4)
    bound = math.sqrt(6 / (64 + 3 * 64))  # xavier_uniform_ on the packed (3E, E) in_proj_weight
    _uniform_bound_check(mha.in_proj_weight.detach().numpy(), bound)
    assert not np.any(mha.in_proj_bias.detach().numpy())
    assert not np.any(mha.out_proj.bias.detach().numpy())
    bilinear = ember.nn.Bilinear(30, 20, 40)
    _uniform_bound_check(bilinear.weight.detach().numpy(), 1 / math.sqrt(30))


def test_norm_init_values():
    for layer in (ember.nn.BatchNorm2d(5), ember.nn.LayerNorm(5), ember.nn.GroupNorm(1, 5)):
        np.testing.assert_array_equal(layer.weight.detach().numpy(), np.ones(5, np.float32))
        np.testing.assert_array_equal(layer.bias.detach().numpy(), np.zeros(5, np.float32))
    batch_norm = ember.nn.BatchNorm1d(5)
    assert batch_norm.num_batches_tracked.dtype == ember.int64
    np.testing.assert_array_equal(batch_norm.running_var.numpy(), np.ones(5, np.float32))


# ---------------------------------------------------------------- dropout statistics in train mode


@pytest.mark.parametrize("name,shape,p", [
    ("Dropout", (200, 250), 0.3), ("Dropout", (100, 100), 0.7), ("Dropout1d", (100, 50, 40), 0.4),
    ("Dropout2d", (60, 50, 8, 8), 0.25), ("Dropout3d", (40, 50, 4, 4, 4), 0.5),
])
def test_dropout_statistics(name, shape, p):
    ember.manual_seed(0)
    module = getattr(ember.nn, name)(p)
    x = ember.ones(shape, dtype=ember.float64, requires_grad=True)
    y = module(x)
    values = y.detach().numpy()
    if name != "Dropout":  # whole channels are zeroed together
        per_channel = values.reshape(shape[0], shape[1], -1)
        assert np.all(per_channel.min(axis=-1) == per_channel.max(axis=-1))
        values = per_channel[..., 0]
    zeroed = np.mean(values == 0)
    assert abs(zeroed - p) < 5 * math.sqrt(p * (1 - p) / values.size)
    np.testing.assert_allclose(values[values != 0], 1 / (1 - p))
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())  # grad == mask / (1 - p)
    module.eval()
    assert module(x) is x or np.array_equal(module(x).detach().numpy(), x.detach().numpy())


def test_dropout_p_edges():
    x = ember.ones(4, 5)
    assert not np.any(ember.nn.Dropout(1.0)(x).numpy())
    np.testing.assert_array_equal(ember.nn.Dropout(0.0)(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="dropout probability"):
        ember.nn.Dropout(1.5)


def test_alpha_dropout_statistics():
    ember.manual_seed(0)
    x = ember.randn(400, 500, dtype=ember.float64)
    y = ember.nn.AlphaDropout(0.2)(x).numpy()
    # alpha dropout keeps mean 0 and variance 1 of a standard normal input
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    # dropped elements all take one value, a * (-alpha') + b
    values, counts = np.unique(y, return_counts=True)
    assert abs(counts.max() / y.size - 0.2) < 0.01


def test_rrelu_train_slopes_in_range():
    ember.manual_seed(0)
    x = -ember.rand(1000, dtype=ember.float64) - 0.1
    y = ember.nn.RReLU(0.1, 0.3)(x)
    slopes = y.numpy() / x.numpy()
    assert slopes.min() >= 0.1 - 1e-12 and slopes.max() <= 0.3 + 1e-12
    assert slopes.std() > 0.03  # drawn per element, not one slope


# ---------------------------------------------------------------- a few mode / argument variants


def test_batchnorm_eval_uses_running_stats_and_counts_batches():
    torch_bn, ember_bn = torch.nn.BatchNorm1d(3).double(), ember.nn.BatchNorm1d(3).double()
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((5, 3))
        torch_bn(torch.tensor(x))
        ember_bn(ember.tensor(x))
    assert int(ember_bn.num_batches_tracked) == 3
    np.testing.assert_allclose(ember_bn.running_mean.numpy(), torch_bn.running_mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ember_bn.running_var.numpy(), torch_bn.running_var.numpy(), rtol=1e-12)
    torch_bn.eval()
    ember_bn.eval()
    x = rng.standard_normal((2, 3))
    np.testing.assert_allclose(ember_bn(ember.tensor(x)).detach().numpy(),
                               torch_bn(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_batchnorm_single_value_train_raises():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        ember.nn.BatchNorm1d(3)(ember.randn(1, 3))


def test_embedding_padding_idx_grad_is_zero():
    emb = ember.nn.Embedding(6, 3, padding_idx=1)
    out = emb(ember.tensor([[1, 2, 1], [1, 0, 5]]))
    out.sum().backward()
    grad = emb.weight.grad.numpy()
    assert not np.any(grad[1])
    np.testing.assert_array_equal(grad[2], np.ones(3, np.float32))


def test_embedding_max_norm_renormalises_weight_in_place():
    torch.manual_seed(0)
    torch_emb = torch.nn.Embedding(5, 4, max_norm=0.5, norm_type=1.0).double()
    ember_emb = ember.nn.Embedding(5, 4, max_norm=0.5, norm_type=1.0).double()
    ember_emb.load_state_dict({"weight": ember.tensor(torch_emb.weight.detach().numpy().copy())})
    torch_emb(torch.tensor([0, 2, 2]))
    ember_emb(ember.tensor([0, 2, 2]))
    np.testing.assert_allclose(ember_emb.weight.detach().numpy(), torch_emb.weight.detach().numpy(), rtol=1e-12)


def test_from_pretrained_freezes():
    weights = np.arange(6.0).reshape(3, 2)
    emb = ember.nn.Embedding.from_pretrained(ember.tensor(weights))
    assert not emb.weight.requires_grad
    bag = ember.nn.EmbeddingBag.from_pretrained(ember.tensor(weights), mode="sum")
    np.testing.assert_array_equal(bag(ember.tensor([[0, 2]])).numpy(), [[4.0, 6.0]])


def test_rnn_dropout_train_changes_output_between_layers():
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(3, 4, 2, dropout=0.9)
    x = ember.randn(5, 2, 3)
    lstm.eval()
    first = lstm(x)[0].detach().numpy()
    assert np.array_equal(first, lstm(x)[0].detach().numpy())
    lstm.train()
    assert not np.allclose(first, lstm(x)[0].detach().numpy())


def test_pad_sequence_and_pack_roundtrip():
    seqs = [np.arange(3.0), np.arange(5.0), np.arange(2.0)]
    for lib in (torch, ember):
        tensors = [lib.tensor(s) for s in seqs]
        padded = lib.nn.utils.rnn.pad_sequence(tensors, batch_first=True, padding_value=-1.0)
        packed = lib.nn.utils.rnn.pack_sequence(tensors, enforce_sorted=False)
        unpacked, lengths = lib.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True, padding_value=-1.0)
        if lib is torch:
            expected = (padded.numpy(), packed.data.numpy(), packed.batch_sizes.numpy(), unpacked.numpy(),
                        lengths.numpy())
    actual = (padded.numpy(), packed.data.numpy(), packed.batch_sizes.numpy(), unpacked.numpy(), lengths.numpy())
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)
    assert packed.batch_sizes.dtype == ember.int64
