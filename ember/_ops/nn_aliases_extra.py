"""More top-level ATen aliases with torch's signatures: losses (reduction as ATen's int), native_* normalizations
and dropout, constant_pad_nd, grid_sampler, nuclear/frobenius norms, segment_reduce, and the randomized
svd_lowrank / pca_lowrank.  As in nn_aliases.py, each maps its arguments onto ember.nn.functional or
ember.linalg, so values, errors and gradients are theirs.
"""

from __future__ import annotations

import warnings

from .. import _dtype as dt
from .._tensor import Tensor
from ._api import export, write_out
from .nn_aliases import _functional, _reduction

# ---------------------------------------------------------------- losses (reduction: 0 none, 1 mean, 2 sum;
# torch's Python binding defaults it to 0, not the schema's 1 -- see nn_aliases.py)


def _reduce(loss: Tensor, reduction) -> Tensor:
    reduction = _reduction(reduction)
    return loss if reduction == "none" else loss.mean() if reduction == "mean" else loss.sum()


@export(method=False)
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None, pos_weight=None,
                                     reduction: int = 0, *, out=None) -> Tensor:
    """torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)."""
    result = _functional().binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                            pos_weight=pos_weight)
    return result if out is None else write_out(out, result)


@export(method=False)
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """torch.cosine_embedding_loss(input1, input2, target, margin, reduction)."""
    return _functional().cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@export(method=False)
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: int = 0) -> Tensor:
    """torch.hinge_embedding_loss(input, target, margin, reduction)."""
    return _functional().hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


@export(method=False)
def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *, log_target: bool = False) -> Tensor:
    """torch.kl_div(input, target, reduction, log_target=False): ATen's mean is over all elements (F's 'mean',
    without F's batchmean warning)."""
    loss = _functional().kl_div(input, target, reduction="none", log_target=log_target)
    return _reduce(loss, reduction)


@export(method=False)
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """torch.margin_ranking_loss(input1, input2, target, margin, reduction)."""
    return _functional().margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


@export(method=False)
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """torch.poisson_nll_loss(input, target, log_input, full, eps, reduction): every argument required."""
    return _functional().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


# ---------------------------------------------------------------- normalization and dropout


@export(method=False)
def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """torch.rms_norm(input, normalized_shape, weight=None, eps=None)."""
    return _functional().rms_norm(input, normalized_shape, weight, eps)


@export(method=False)
def native_batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float,
                      eps: float, *, out=None, save_mean=None, save_invstd=None) -> tuple:
    """(batch_norm(input), save_mean, save_invstd): in training the batch mean and 1/sqrt(biased var + eps) per
    channel (not differentiable, as torch), running statistics updated in place; in eval two empty tensors."""
    output = _functional().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    from .creation import empty

    if training:
        detached = input.detach()
        dims = (0,) + tuple(range(2, input.ndim))
        mean = detached.mean(dims)
        invstd = (detached.var(dims, unbiased=False) + eps).rsqrt()
    else:
        mean = empty(0, dtype=input.dtype, device=input.device)
        invstd = empty(0, dtype=input.dtype, device=input.device)
    results = (output, mean, invstd)
    if out is None:
        return results
    return tuple(write_out(target, value) for target, value in zip((out, save_mean, save_invstd), results))


@export(method=False)
def native_group_norm(input: Tensor, weight, bias, N: int, C: int, HxW: int, group: int, eps: float) -> tuple:
    """(group_norm(input), mean, rstd): the per-(sample, group) statistics, shape (N, group), differentiable."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, but got {input.numel()} elements")
    output = _functional().group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(-1)
    rstd = (grouped.var(-1, unbiased=False) + eps).rsqrt()
    return output, mean, rstd


@export(method=False)
def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple:
    """(output, mask): mask is a bool tensor of kept elements, output = input * mask / (1 - p); train=None is
    training, as torch.  In eval the output is a copy and the mask all True."""
    from .creation import empty, ones

    if train is False:
        return input.clone(), ones(input.shape, dtype=dt.bool_, device=input.device)
    if p == 1:
        return input * 0, ones(input.shape, dtype=dt.bool_, device=input.device).logical_not()
    mask = empty(input.shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    return input * mask * (1.0 / (1 - p)), mask.to(dt.bool_)


@export(method=False)
def constant_pad_nd(input: Tensor, pad, value=0, *, out=None) -> Tensor:
    """torch.constant_pad_nd(input, pad, value=0): F.pad in constant mode (negative pads crop)."""
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    result = _functional().pad(input, tuple(pad), "constant", value)
    return result if out is None else write_out(out, result)


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


@export(method=False)
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """torch.grid_sampler: F.grid_sample with ATen's int modes (0 bilinear, 1 nearest, 2 bicubic; padding
    0 zeros, 1 border, 2 reflection)."""
    return _functional().grid_sample(input, grid, _INTERPOLATION[int(interpolation_mode)],
                                     _PADDING[int(padding_mode)], bool(align_corners))


# ---------------------------------------------------------------- norms


def _linalg():
    from .. import linalg

    return linalg


@export(method=False)
def nuclear_norm(input: Tensor, dim=None, keepdim: bool = False, *, out=None) -> Tensor:
    """torch.nuclear_norm(input, keepdim=False) or (input, dim, keepdim=False): the sum of singular values
    over the last two dims, or over `dim`."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    dims = (-2, -1) if dim is None else tuple(dim)
    result = _linalg().matrix_norm(input, "nuc", dims, keepdim)
    return result if out is None else write_out(out, result)


@export(method=False)
def frobenius_norm(input: Tensor, dim, keepdim: bool = False, *, out=None) -> Tensor:
    """torch.frobenius_norm(input, dim, keepdim=False): the 2-norm over one or two dims (all dims if empty)."""
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        from .._tensor import SCALAR_NAMES

        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{SCALAR_NAMES[input.dtype.name]} instead.")
    result = _linalg().vector_norm(input, 2, dims or None, keepdim)
    return result if out is None else write_out(out, result)


# ---------------------------------------------------------------- segment_reduce

_SEGMENT_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "amax", "amax": "amax",
                       "min": "amin", "amin": "amin"}
_EMPTY_SEGMENT = {"sum": 0.0, "prod": 1.0, "mean": float("nan"), "amax": float("-inf"), "amin": float("inf")}


@export(method=False)
def segment_reduce(data: Tensor, reduce: str, *, lengths=None, indices=None, offsets=None, axis: int = 0,
                   unsafe: bool = False, initial=None) -> Tensor:
    """Reduce consecutive segments of `data` along `axis`, given by 1-D `lengths` or `offsets` (boundaries);
    empty segments give `initial`, or the reduction's identity (nan for mean).  `initial` also joins every
    non-empty segment (mean: (sum + initial) / length, as torch)."""
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    reduction = _SEGMENT_REDUCTIONS[reduce]
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not (data.dtype.is_floating_point):
        from .._tensor import SCALAR_NAMES

        raise NotImplementedError(f'"_segment_reduce_cpu" not implemented for \'{SCALAR_NAMES[data.dtype.name]}\'')
    segments = lengths if lengths is not None else offsets
    if segments.ndim != 1:
        raise NotImplementedError("segment_reduce: ember supports 1-D lengths or offsets only")
    from .._tensor import wrap_dim

    axis = wrap_dim(axis, data.ndim)
    if axis != 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got {axis})")
    bounds = [int(v) for v in segments.tolist()]
    if lengths is not None:
        starts = [sum(bounds[:i]) for i in range(len(bounds))]
        sizes = bounds
    else:
        starts, sizes = bounds[:-1], [end - start for start, end in zip(bounds[:-1], bounds[1:])]
    if not unsafe and sum(sizes) != data.shape[axis]:
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    from .creation import full
    from .movement import stack

    pieces = []
    for start, size in zip(starts, sizes):
        if size == 0:
            value = _EMPTY_SEGMENT[reduction] if initial is None else initial
            pieces.append(full(tuple(data.shape[1:]), value, dtype=data.dtype, device=data.device))
            continue
        segment = data.narrow(axis, start, size)
        if reduction == "mean":
            total = segment.sum(axis)
            piece = (total if initial is None else total + initial) / size
        else:
            piece = getattr(segment, reduction)(axis)
            if initial is not None:
                piece = {"sum": lambda: piece + initial, "prod": lambda: piece * initial,
                         "amax": lambda: piece.clamp_min(initial), "amin": lambda: piece.clamp_max(initial)}[
                    reduction]()
        pieces.append(piece)
    return stack(pieces, axis)
