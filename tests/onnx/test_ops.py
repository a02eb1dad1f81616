"""ember.onnx.export, op by op: each family exported, checked with onnx.checker and run with onnxruntime against
ember's eager output (float32: rtol = atol = 1e-5; ints and bools exactly)."""

import pytest
from onnx_export_helpers import check_export

import ember as torch
import ember.nn as nn
import ember.nn.functional as F


def randn(*shape):
    return torch.randn(*shape)


def positive(*shape):
    return torch.rand(*shape) + 0.5


def ints(*shape, low=-9, high=10):
    return torch.randint(low, high, shape)


def nonzero_ints(*shape):
    values = torch.randint(1, 6, shape)
    return torch.where(torch.rand(*shape) > 0.5, values, -values)


ELEMENTWISE = {
    "add_sub_mul_div": (lambda x, y: (x + y, x - y, x * y, x / y, x.add(y, alpha=2), x.sub(y, alpha=0.5)),
                        lambda: (randn(2, 3, 4), positive(3, 4))),
    "scalars": (lambda x: (x + 1, 2 * x, 1 - x, x / 2, 2 / x, x ** 2, -x, x * 0.5 - 3), lambda: (positive(2, 3),)),
    "pow": (lambda x, y: (x ** y, torch.pow(x, 0.5), torch.pow(2.0, y)), lambda: (positive(3, 4), randn(3, 4))),
    "int_float_promotion": (lambda i, x: (i + x, i * 2, i / 2, i * 1.5, i.float() + 1), lambda: (ints(3, 4), randn(3, 4))),
    "math": (lambda x: (x.exp(), x.log(), x.sqrt(), x.rsqrt(), torch.erf(x), x.abs(), x.sin(), x.cos(), x.tanh(),
                        x.sigmoid(), x.reciprocal(), x.log1p(), x.expm1(), x.log2(), x.log10(), torch.exp2(x),
                        torch.square(x), x.tan(), x.atan(), x.sinh(), x.cosh()), lambda: (positive(2, 5),)),
    "rounding": (lambda x: (x.floor(), x.ceil(), x.round(), x.sign(), x.trunc(), x.frac()),
                 lambda: (randn(4, 5) * 4,)),
    "integer_division": (lambda a, b: (a // b, a % b, torch.fmod(a, b), a.div(b, rounding_mode="floor"),
                                       a.div(b, rounding_mode="trunc"), a / b),
                         lambda: (ints(4, 5), nonzero_ints(4, 5))),
    "float_division": (lambda a, b: (a // b, a % b, torch.fmod(a, b), a.div(b, rounding_mode="floor"),
                                     a.div(b, rounding_mode="trunc")),
                       lambda: (randn(4, 5) * 5, randn(4, 5) + 3)),
    "comparisons": (lambda x, y: (x < y, x <= y, x > y, x >= 0, x == y, x != y, x == x, torch.maximum(x, y),
                                  torch.minimum(x, y)), lambda: (ints(3, 4).float(), ints(3, 4).float())),
    "where_clamp": (lambda x, y: (torch.where(x > y, x, y), torch.where(x > 0, x, 0.0), x.clamp(-0.5, 0.5),
                                  x.clamp(min=0), x.clamp(max=0.2), torch.clamp(x, y, None)),
                    lambda: (randn(3, 4), randn(3, 4))),
    "logical_bitwise": (lambda a, b, i: (a & b, a | b, a ^ b, ~a, torch.logical_and(a, b), torch.logical_or(a, b),
                                         torch.logical_not(a), torch.logical_xor(a, b), i & 6, i | 1, i ^ 3, ~i),
                        lambda: (randn(3, 4) > 0, randn(3, 4) > 0, ints(3, 4))),
    "nan_inf": (lambda x: (x.isnan(), x.isinf(), x.isfinite(), torch.nan_to_num(x), torch.nan_to_num(x, 0.5, 9.0, -9.0)),
                lambda: (torch.tensor([[1.0, float("nan"), float("inf")], [float("-inf"), -2.0, 0.0]]),)),
    "masked_fill": (lambda x, m: (x.masked_fill(m, 0.0), x.masked_fill(~m, float("-inf"))),
                    lambda: (randn(2, 3, 4), randn(3, 4) > 0)),
}

ACTIVATIONS = {
    "relu_gelu_silu": (lambda x: (F.relu(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x), F.relu6(x * 4)),
                       lambda: (randn(4, 8) * 3,)),
    "saturating": (lambda x: (torch.sigmoid(x), torch.tanh(x), F.hardtanh(x), F.hardtanh(x, -0.3, 0.7),
                              F.hardsigmoid(x), F.hardswish(x), F.softsign(x), F.logsigmoid(x)),
                   lambda: (randn(4, 8) * 3,)),
    "exponential": (lambda x: (F.elu(x), F.elu(x, alpha=0.5), F.selu(x), F.celu(x, 2.0), F.leaky_relu(x),
                               F.leaky_relu(x, 0.2), F.softplus(x), F.softplus(x, beta=2.0, threshold=3.0), F.mish(x)),
                    lambda: (randn(4, 8) * 3,)),
    "softmax": (lambda x: (F.softmax(x, -1), F.softmax(x, 1), F.log_softmax(x, -1), F.log_softmax(x, 0)),
                lambda: (randn(2, 3, 5) * 3,)),
    "prelu_glu": (lambda x, w: (F.prelu(x, w), F.glu(x, -1), F.glu(x, 1)), lambda: (randn(2, 4, 6), positive(4))),
}

SHAPES = {
    "reshape_view_flatten": (lambda x: (x.reshape(6, 4), x.view(-1), x.flatten(1), x.view(2, 3, 2, 2), x.flatten()),
                             lambda: (randn(2, 3, 4),)),
    "transpose_permute": (lambda x: (x.transpose(0, 2), x.permute(2, 0, 1), x.movedim(1, -1), x[0].t(), x.mT,
                                     x.transpose(1, 2).contiguous()), lambda: (randn(2, 3, 4),)),
    "unsqueeze_squeeze": (lambda x: (x.unsqueeze(1), x.unsqueeze(-1), x[:, :1].squeeze(1), x.unsqueeze(0).squeeze(),
                                     x[None], x[:, None, ..., None]), lambda: (randn(2, 3, 4),)),
    "cat_stack": (lambda x, y: (torch.cat([x, y], 1), torch.cat([x, y], -1), torch.stack([x, y]),
                                torch.stack([x, y], -1), torch.cat([x, y.long().float()], 0)),
                  lambda: (randn(2, 3, 4), randn(2, 3, 4))),
    "split_chunk_unbind": (lambda x: (*x.split(2, -1), *x.chunk(3, 1), *x.split([1, 3], 2), *x.unbind(0)),
                           lambda: (randn(2, 3, 4),)),
    "slicing": (lambda x: (x[:, 1:3], x[..., ::2], x[0], x[:, -1], x[1, 2, 3], x[:, 1:, :-1], x[..., 1:3, None],
                           x.narrow(2, 1, 2), x[:, :, 5:]), lambda: (randn(2, 3, 4),)),
    "expand_repeat_flip": (lambda x: (x[:, :1].expand(2, 3, 4), x[:1].expand(5, -1, -1), x.repeat(1, 2, 1),
                                      x.repeat(2, 1, 1, 1), torch.flip(x, (0, 2)), x.expand_as(torch.zeros(4, 2, 3, 4))),
                           lambda: (randn(2, 3, 4),)),
    "tril_triu": (lambda x: (torch.tril(x), torch.triu(x), torch.tril(x, -1), torch.triu(x, 2)),
                  lambda: (randn(2, 4, 5),)),
    "casts": (lambda x: (x.float(), x.to(torch.float64), x.long(), x.int(), x.bool(), (x > 0).float(), x.type_as(x > 0),
                         x.double().float()), lambda: (randn(3, 4) * 5,)),
}

INDEXING = {
    "index_select_gather": (lambda x, i, j: (x.index_select(1, i), x[:, i], x[i % 2], torch.gather(x, 2, j), x[..., i % 4],
                                             x[:, [0, 2]], x[torch.tensor([1, 0])]),
                            lambda: (randn(2, 3, 4), torch.tensor([2, 0, 1]), torch.randint(0, 4, (2, 3, 2)))),
    "index_matrix": (lambda x, i: (x[i], x[:, i]), lambda: (randn(5, 6), torch.randint(0, 5, (2, 3)))),
    "diagonal": (lambda x: (x.diagonal(), x.diagonal(1, 1, 2), x.diagonal(-1, 0, 2), x[0].diagonal().sum(),
                            torch.diagonal(x, 0, -2, -1)), lambda: (randn(3, 4, 5),)),
    "pad_reflect_replicate": (lambda x: (F.pad(x, (1, 2, 0, 0), mode="reflect"),
                                         F.pad(x, (1, 1, 2, 0), mode="replicate"),
                                         F.pad(x, (2, 1, 0, 0), mode="circular")), lambda: (randn(2, 3, 5, 5),)),
    "interpolate": (lambda x: (F.interpolate(x, scale_factor=2, mode="nearest"),
                               F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
                               F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True)),
                    lambda: (randn(2, 3, 4, 4),)),
}

REDUCTIONS = {
    "sum_mean": (lambda x: (x.sum(), x.sum(1), x.sum((0, 2), keepdim=True), x.mean(), x.mean(-1), x.mean(1, True),
                            x.prod(-1)), lambda: (randn(2, 3, 4),)),
    "max_min": (lambda x: (x.amax(1), x.amin((0, 2)), x.max(), x.min(), *x.max(1), *x.min(-1, keepdim=True)),
                lambda: (randn(2, 3, 4),)),
    "argmax_argmin": (lambda x: (x.argmax(), x.argmax(-1), x.argmin(1), x.argmax(1, keepdim=True)),
                      lambda: (randn(2, 3, 4),)),
    "var_std_norm": (lambda x: (x.var(1), x.std(), x.var(-1, unbiased=False, keepdim=True), x.std(0, correction=0),
                                x.norm(), x.norm(dim=-1), x.norm(p=1, dim=1), x.norm(p=float("inf"), dim=0),
                                torch.logsumexp(x, 1), F.normalize(x, dim=-1)), lambda: (randn(2, 3, 4),)),
    "bool_int_reductions": (lambda x: ((x > 0).all(), (x > 0).any(-1), (x > 0).sum(1), x.long().sum(), x.cumsum(-1),
                                       (x > 0).cumsum(0)), lambda: (randn(2, 3, 4),)),
    "topk_sort": (lambda x: (*torch.topk(x, 2), *torch.topk(x, 3, dim=1, largest=False), *x.sort(-1),
                             *x.sort(1, descending=True)), lambda: (randn(2, 5, 4),)),
}

PRODUCTS = {
    "matmul": (lambda a, b, v: (a @ b, torch.matmul(a, b[0]), a @ v, torch.bmm(a, b), a[0] @ b[0], torch.mm(a[0], b[1]),
                                torch.mv(a[0], v), v.dot(v), torch.outer(v, v)),
               lambda: (randn(2, 3, 4), randn(2, 4, 5), randn(4))),
    "addmm_baddbmm_einsum": (lambda a, b, c: (torch.addmm(c, a[0], b[0]), torch.addmm(c, a[0], b[0], beta=0.5, alpha=2),
                                              torch.baddbmm(c, a, b), torch.baddbmm(c, a, b, beta=0.0, alpha=3.0),
                                              torch.einsum("bij,bjk->bik", a, b), torch.einsum("bij->bj", a)),
                             lambda: (randn(2, 3, 4), randn(2, 4, 5), randn(5))),
    "linear": (lambda x, w, b: (F.linear(x, w, b), F.linear(x[0], w, b), F.linear(x, w), F.linear(x[0, 0], w, b)),
               lambda: (randn(2, 3, 4), randn(6, 4), randn(6))),
}


def _cases(table):
    return [pytest.param(fn, make, id=name) for name, (fn, make) in table.items()]


@pytest.mark.parametrize("fn, make", _cases(ELEMENTWISE) + _cases(ACTIVATIONS))
def test_elementwise_and_activations(fn, make):
    check_export(fn, make())


@pytest.mark.parametrize("fn, make", _cases(SHAPES) + _cases(INDEXING))
def test_shapes_and_indexing(fn, make):
    check_export(fn, make())


@pytest.mark.parametrize("fn, make", _cases(REDUCTIONS) + _cases(PRODUCTS))
def test_reductions_and_products(fn, make):
    check_export(fn, make())


def test_embedding_with_padding_idx():
    embedding = nn.Embedding(10, 4, padding_idx=0).eval()
    check_export(embedding, (torch.tensor([[0, 3, 9], [2, 2, 1]]),))


CONVOLUTIONS = {
    "conv2d": nn.Conv2d(3, 6, 3, padding=1),
    "conv2d_stride_dilation": nn.Conv2d(3, 4, 3, stride=2, padding=2, dilation=2),
    "conv2d_groups_no_bias": nn.Conv2d(4, 8, (3, 1), groups=2, bias=False, padding=(1, 0)),
    "conv2d_padding_same": nn.Conv2d(3, 4, 4, padding="same"),
    "conv1d": nn.Conv1d(3, 5, 3, stride=2, padding=1, dilation=2),
    "conv1d_depthwise": nn.Conv1d(4, 4, 5, groups=4, padding=2),
    "conv3d": nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1),
    "conv_transpose2d": nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
    "conv_transpose1d_groups": nn.ConvTranspose1d(4, 6, 4, stride=3, groups=2),
}


@pytest.mark.parametrize("name", list(CONVOLUTIONS))
def test_convolutions(name):
    module = CONVOLUTIONS[name].eval()
    spatial = module.weight.ndim - 2
    check_export(module, (randn(2, module.in_channels, *(9, 8, 6)[:spatial]),))


POOLS = {
    "max_pool2d": lambda x: (F.max_pool2d(x, 2), F.max_pool2d(x, 3, 2, 1), F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
                             F.max_pool2d(x, (2, 3), (1, 2), dilation=(2, 1))),
    "avg_pool2d": lambda x: (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1),
                             F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
    "adaptive_avg_pool2d": lambda x: (F.adaptive_avg_pool2d(x, 1), F.adaptive_avg_pool2d(x, (2, 3)),
                                      F.adaptive_avg_pool2d(x, (4, 4)), F.adaptive_max_pool2d(x, 1)),
    "pool1d": lambda x: (F.max_pool1d(x[0], 2), F.avg_pool1d(x[0], 3, 1, 1), F.adaptive_avg_pool1d(x[0], 1)),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_pooling(name):
    check_export(POOLS[name], (randn(2, 3, 8, 8),))


NORMS = {
    "batch_norm": nn.BatchNorm2d(3),
    "batch_norm_1d": nn.BatchNorm1d(3),
    "layer_norm": nn.LayerNorm(8),
    "layer_norm_2d_no_affine": nn.LayerNorm((4, 8), elementwise_affine=False),
    "group_norm": nn.GroupNorm(3, 6),
    "instance_norm": nn.InstanceNorm2d(3, affine=True),
}


@pytest.mark.parametrize("name", list(NORMS))
def test_norms(name):
    module = NORMS[name]
    if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
        with torch.no_grad():
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.uniform_(0.5, 1.5)
            module.bias.uniform_(-1, 1)
    module.eval()
    shapes = {"batch_norm": (2, 3, 4, 5), "batch_norm_1d": (4, 3, 7), "layer_norm": (2, 5, 8),
              "layer_norm_2d_no_affine": (2, 4, 8), "group_norm": (2, 6, 4, 4), "instance_norm": (2, 3, 5, 5)}
    check_export(module, (randn(*shapes[name]),))


def test_layer_norm_before_opset_17_is_spelled_out():
    proto = check_export(nn.LayerNorm(8).eval(), (randn(2, 5, 8),), opset_version=13)
    assert "LayerNormalization" not in {n.op_type for n in proto.graph.node}
    proto = check_export(nn.LayerNorm(8).eval(), (randn(2, 5, 8),), opset_version=17)
    assert "LayerNormalization" in {n.op_type for n in proto.graph.node}


def test_dropout_in_eval_mode_is_identity():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5), nn.ReLU(), nn.Dropout(0.2)).eval()
    proto = check_export(model, (randn(3, 4),))
    assert {n.op_type for n in proto.graph.node} == {"Gemm", "Relu"}


ATTENTION = {
    "plain": lambda q, k, v: F.scaled_dot_product_attention(q, k, v),
    "causal": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    "causal_rectangular": lambda q, k, v: F.scaled_dot_product_attention(q[:, :, :3], k, v, is_causal=True),
    "bool_mask": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(5, 5).tril().bool()),
    "float_mask_and_scale": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(5, 5) * 0.3,
                                                                           scale=0.2),
    "grouped_query": lambda q, k, v: F.scaled_dot_product_attention(q, k[:, :1], v[:, :1], enable_gqa=True),
}


@pytest.mark.parametrize("name", list(ATTENTION))
def test_scaled_dot_product_attention(name):
    check_export(ATTENTION[name], (randn(2, 2, 5, 8), randn(2, 2, 5, 8), randn(2, 2, 5, 8)))


def test_index_assignment_with_grad_is_exported():
    # a fresh tensor written under autograd is recorded (index_put): F.pad's constant mode on a grad input
    x = randn(2, 3, 4).requires_grad_()
    check_export(lambda t: F.pad(t, (1, 2, 0, 1), value=0.5) * 2, (x,))


def test_float64_and_integer_graphs():
    model = nn.Sequential(nn.Linear(4, 5), nn.LayerNorm(5), nn.Tanh(), nn.Linear(5, 2), nn.Softmax(-1)).double().eval()
    check_export(model, (torch.randn(3, 4, dtype=torch.float64),), rtol=1e-12, atol=1e-12)
    check_export(lambda i: (i * 3 + 1, i.sum(0), i.argmax(-1), (i > 2).long().cumsum(1), i.float() / 2),
                 (ints(3, 4),))


def _written_through_views(x, mask):
    y = x * 2
    y[:, :2] *= 3  # a write through a slice: copy_slices (ScatterElements)
    row = y[1]
    y.diagonal().add_(1)  # row, read again after this write: Gather at its positions
    y[y > 3] = 0.0  # a one-element boolean-mask fill: Where
    y[:, mask] = -1.0
    return y + 1, row * 1


def test_writes_through_views_and_mask_fills():
    check_export(_written_through_views, (randn(4, 4), torch.tensor([True, False, True, False])),
                 other_args=[(randn(4, 4), torch.tensor([False, True, True, True]))])
