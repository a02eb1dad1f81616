"""Top-level aliases of nn.functional ops with torch's signatures (torch.dropout, torch.layer_norm, ...).

torch exposes many ATen ops at the top level whose argument lists are the ATen schema's, not
torch.nn.functional's: `torch.dropout(input, p, train)` takes all three, `torch.batch_norm` puts weight and
bias before the running statistics and requires every argument, `torch.embedding` takes the weight first,
losses take `reduction` as an int
(0 none, 1 mean, 2 sum; torch's binding defaults it to 0).  Each alias here is a thin wrapper that maps that
signature onto ember.nn.functional, so values, errors and gradients are F's.
"""

from __future__ import annotations

from .._tensor import Tensor
from ._api import export

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _functional():
    """ember.nn.functional, imported on first use (nn is built on top of the op registry)."""
    from ..nn import functional

    return functional


def _reduction(reduction) -> str:
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _REDUCTIONS[reduction]


# ---------------------------------------------------------------- dropout


@export(method=False)
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """torch.dropout(input, p, train): zero elements with probability p and scale the rest by 1 / (1 - p)."""
    return _functional().dropout(input, p, train)


@export(method=False)
def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _functional().dropout(input, p, train, inplace=True)


@export(method=False)
def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """torch.alpha_dropout(input, p, train): dropout that keeps SELU's zero mean and unit variance."""
    return _functional().alpha_dropout(input, p, train)


@export(method=False)
def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return _functional().alpha_dropout(input, p, train, inplace=True)


def _feature_noise(input: Tensor, p: float) -> Tensor:
    """Bernoulli(1 - p) noise of shape (N, C, 1, ..., 1): one draw per feature map (torch's make_feature_noise)."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    from .creation import empty

    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)


def _feature_dropout(input: Tensor, p: float, train: bool, alpha: bool) -> Tensor:
    """torch's _dropout_impl with feature_dropout=true (whole channels dropped)."""
    if p == 0 or not train or input.numel() == 0:
        return input
    if p == 1:
        return input * 0
    noise = _feature_noise(input, p)
    if not alpha:
        return input * (noise / (1 - p))
    alpha_value = 1.7580993408473766
    a = 1.0 / ((alpha_value * alpha_value * p + 1) * (1 - p)) ** 0.5
    b = (noise - 1) * (alpha_value * a) + alpha_value * a * p
    return input * (noise * a) + b


@export(method=False)
def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """torch.feature_dropout(input, p, train): drop whole channels (dim 1), scaling the rest by 1 / (1 - p)."""
    return _feature_dropout(input, p, train, False)


@export(method=False)
def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return input.copy_(_feature_dropout(input, p, train, False))


@export(method=False)
def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """torch.feature_alpha_dropout(input, p, train): alpha dropout of whole channels."""
    return _feature_dropout(input, p, train, True)


@export(method=False)
def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    return input.copy_(_feature_dropout(input, p, train, True))


# ---------------------------------------------------------------- normalization


@export(method=False)
def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool) -> Tensor:
    """torch.batch_norm: ATen's argument order (weight, bias before the running statistics), all required."""
    return _functional().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@export(method=False)
def instance_norm(input: Tensor, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool) -> Tensor:
    """torch.instance_norm: ATen's argument order, all required."""
    return _functional().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


@export(method=False)
def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """torch.layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)."""
    return _functional().layer_norm(input, normalized_shape, weight, bias, eps)


@export(method=False)
def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """torch.group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)."""
    return _functional().group_norm(input, num_groups, weight, bias, eps)


@export(method=False)
def native_layer_norm(input: Tensor, normalized_shape, weight, bias, eps: float) -> tuple:
    """(layer_norm(input), mean, rstd): the statistics over the normalized dims, kept as size-1 dims.

    As in torch, mean and rstd are not differentiable outputs (they come back without a grad_fn)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    output = _functional().layer_norm(input, shape, weight, bias, eps)
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    detached = input.detach()
    if detached.numel() == 0:
        mean = detached.sum(dims, keepdim=True) if dims else detached
        return output, mean, mean
    mean = detached.mean(dims, keepdim=True) if dims else detached
    variance = detached.var(dims, unbiased=False, keepdim=True) if dims else detached * 0
    return output, mean, (variance + eps).rsqrt()


# ---------------------------------------------------------------- convolution and pooling


def _same_as_functional(name: str, doc: str) -> None:
    """Export F.<name> unchanged: torch's top-level signature is nn.functional's."""

    def alias(*args, **kwargs):
        return getattr(_functional(), name)(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = name
    alias.__doc__ = doc
    export(alias, method=False)


for _name in ("conv1d", "conv2d", "conv3d"):
    _same_as_functional(_name, f"torch.{_name}(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)")
for _name in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    _same_as_functional(_name, f"torch.{_name}(input, weight, bias=None, stride=1, padding=0, output_padding=0, "
                               "groups=1, dilation=1)")
_same_as_functional("avg_pool1d", "torch.avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, "
                                  "count_include_pad=True)")
_same_as_functional("adaptive_avg_pool1d", "torch.adaptive_avg_pool1d(input, output_size)")
_same_as_functional("prelu", "torch.prelu(input, weight)")
_same_as_functional("hardshrink", "torch.hardshrink(input, lambd=0.5)")
_same_as_functional("pixel_shuffle", "torch.pixel_shuffle(input, upscale_factor)")
_same_as_functional("pixel_unshuffle", "torch.pixel_unshuffle(input, downscale_factor)")
_same_as_functional("channel_shuffle", "torch.channel_shuffle(input, groups)")
_same_as_functional("cosine_similarity", "torch.cosine_similarity(x1, x2, dim=1, eps=1e-8)")
_same_as_functional("pairwise_distance", "torch.pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False)")
_same_as_functional("bilinear", "torch.bilinear(input1, input2, weight, bias=None)")
_same_as_functional("selu", "torch.selu(input)")


def _stride(stride):
    """ATen's `stride=[]` (and None) means 'the kernel size'."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def _max_pool(name: str):
    def pool(input: Tensor, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False) -> Tensor:
        return getattr(_functional(), name)(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)

    pool.__name__ = pool.__qualname__ = name
    pool.__doc__ = f"torch.{name}(input, kernel_size, stride=[], padding=0, dilation=1, ceil_mode=False): values only."
    export(pool, method=False)


for _name in ("max_pool1d", "max_pool2d", "max_pool3d"):
    _max_pool(_name)


@export(method=False)
def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """torch.adaptive_max_pool1d(input, output_size): (values, indices), always both."""
    return _functional().adaptive_max_pool1d(input, output_size, return_indices=True)


# ---------------------------------------------------------------- activations


@export(method=False)
def selu_(input: Tensor) -> Tensor:
    return _functional().selu(input, inplace=True)


@export(method=False)
def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """torch.celu(input, alpha=1.0)."""
    return _functional().celu(input, alpha)


@export(method=False)
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return _functional().celu(input, alpha, inplace=True)


@export(method=False)
def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator=None) -> Tensor:
    """torch.rrelu(input, lower, upper, training=False, generator=None)."""
    return _functional().rrelu(input, lower, upper, training)


@export(method=False)
def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator=None) -> Tensor:
    return _functional().rrelu(input, lower, upper, training, inplace=True)


@export(method=False)
def threshold(input: Tensor, threshold: float, value: float, *, out=None) -> Tensor:
    """torch.threshold(input, threshold, value): value where input <= threshold, else input."""
    result = _functional().threshold(input, threshold, value)
    return result if out is None else out.copy_(result)


@export(method=False)
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    return _functional().threshold(input, threshold, value, inplace=True)


# ---------------------------------------------------------------- embeddings and losses


@export(method=False)
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """torch.embedding(weight, indices, ...): the weight comes first; a negative padding_idx means none."""
    padding = None if padding_idx is None or padding_idx < 0 else padding_idx
    return _functional().embedding(indices, weight, padding, None, 2.0, scale_grad_by_freq, sparse)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


@export(method=False)
def embedding_bag(weight: Tensor, indices: Tensor, offsets: Tensor, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights=None, include_last_offset: bool = False,
                  padding_idx=None) -> tuple:
    """torch.embedding_bag(weight, indices, offsets, ...): (output, offset2bag, bag_size, max_indices).

    The output is F.embedding_bag's; the three bookkeeping tensors follow torch's CPU kernel for 1-D indices
    (bag_size and max_indices zero in sum mode, where float32 weights also skip offset2bag; max_indices
    the bag sizes in mean mode)."""
    if not isinstance(offsets, Tensor):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    output = _functional().embedding_bag(indices, weight, offsets, None, 2, scale_grad_by_freq,
                                         _BAG_MODES[int(mode)], sparse, per_sample_weights, include_last_offset,
                                         padding_idx)
    return (output,) + _bag_bookkeeping(weight, indices, offsets, int(mode), include_last_offset, output)


def _bag_bookkeeping(weight, indices, offsets, mode, include_last_offset, output):
    from .creation import tensor, zeros

    device = weight.device
    bags = output.shape[0]
    if mode == 0 and weight.dtype.itemsize <= 4:  # torch's fast sum path (float32 and half types) skips offset2bag
        empty_index = zeros(0, dtype=indices.dtype, device=device)
        return empty_index, zeros(bags, dtype=indices.dtype, device=device), zeros(bags, dtype=indices.dtype,
                                                                                    device=device)
    flat = [int(i) for i in indices.reshape(-1).tolist()]
    starts = [int(o) for o in offsets.tolist()][:bags]
    bounds = starts[1:] + [len(flat)] if not include_last_offset else [int(o) for o in offsets.tolist()][1:bags + 1]
    offset2bag = [0] * len(flat)
    sizes = []
    for bag, (start, end) in enumerate(zip(starts, bounds)):
        for position in range(start, end):
            offset2bag[position] = bag
        sizes.append(end - start)
    offset2bag_tensor = tensor(offset2bag, dtype=indices.dtype, device=device)
    if mode == 0:
        return offset2bag_tensor, zeros(bags, dtype=indices.dtype, device=device), zeros(bags, dtype=indices.dtype,
                                                                                         device=device)
    sizes_tensor = tensor(sizes, dtype=indices.dtype, device=device)
    if mode != 2:
        return offset2bag_tensor, sizes_tensor, sizes_tensor.clone()
    rows = weight.detach()
    maxima = []
    for start, end in zip(starts, bounds):
        if end <= start:
            maxima.append([0] * weight.shape[1])
            continue
        bag_indices = flat[start:end]
        chosen = rows[tensor(bag_indices, device=device)].argmax(0).tolist()
        maxima.append([bag_indices[c] for c in chosen])
    return offset2bag_tensor, sizes_tensor, tensor(maxima, dtype=indices.dtype, device=device)


@export(method=False)
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: int = 0) -> Tensor:
    """torch.triplet_margin_loss: F's, with `reduction` as ATen's int (0 none, 1 mean, 2 sum).

    The default is 0 (no reduction), as torch's Python binding gives, not the schema's Mean."""
    return _functional().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                             reduction=_reduction(reduction))


@export(method=False)
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0, reduction: int = 0,
             zero_infinity: bool = False) -> Tensor:
    """torch.ctc_loss: F's, with `reduction` as ATen's int (0 none, 1 mean, 2 sum; default 0, as torch's binding)."""
    return _functional().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                                  zero_infinity)
