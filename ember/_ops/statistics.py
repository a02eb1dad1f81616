"""Statistics and distances: quantile/nanquantile, cov/corrcoef, histogram, dist/cdist/pdist and renorm.

Most are composites of existing ember ops written the way ATen writes them
(aten/src/ATen/native/Sorting.cpp, Correlation.cpp, Distance.cpp, Normalization),
so values, dtypes and gradients follow torch's with no backward of their own.
Two are ops: histogram (counting, not differentiable) and the matmul form of
euclidean cdist, whose backward is torch's `_euclidean_dist_backward`.
"""

from __future__ import annotations

import math
import warnings

from .. import _dtype as dt
from .. import _runtime
from .._dispatch import SAVE_INPUTS, SAVE_RESULT, OpDef, call
from .._tensor import SCALAR_NAMES, Tensor, wrap_dim
from ._api import export, finish_out
from .elementwise import where

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def _name(dtype) -> str:
    return SCALAR_NAMES[dtype.name]


def _scalar(value: float, like: Tensor) -> Tensor:
    from .creation import full

    return full((), value, dtype=like.dtype, device=like.device)


def _scalar_tensor(value, like: Tensor) -> Tensor:
    """A 0-d tensor of like's dtype and device (an integer tensor never meets a Python int on cuda)."""
    from .creation import full

    return full((), value, dtype=like.dtype, device=like.device)


# ---------------------------------------------------------------- quantile


def _quantile(name: str, input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    """ATen's quantile_impl: sort, turn q into fractional ranks, gather the neighbours and interpolate."""
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if not isinstance(q, Tensor):
        q = float(q)
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q:g}")
        q = _scalar(q, input)
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q._dtype is not input._dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    if q.device.type == "cpu" and not bool(((q >= 0) & (q <= 1)).all()):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is None:
        values = input.reshape(-1)
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        dim = wrap_dim(dim, input.ndim)
        values = input.movedim(dim, -1) if input.ndim else input.reshape(1)
        shape = list(input.shape)
        if shape:
            if keepdim:
                shape[dim] = 1
            else:
                del shape[dim]
        out_shape = tuple(shape)
    result = _quantile_of_rows(values.sort(-1).values, q.reshape(-1), interpolation, ignore_nan)
    if q.ndim:
        return result.movedim(-1, 0).reshape((q.shape[0],) + out_shape)
    return result.reshape(out_shape)


def _quantile_of_rows(sorted_values: Tensor, q: Tensor, interpolation: str, ignore_nan: bool) -> Tensor:
    """Quantiles q (1-d) of each sorted last-dim row: shape (..., len(q))."""
    last_index = sorted_values.shape[-1] - 1
    if ignore_nan:
        # ranks from the count of non-nan values; an all-nan row gets rank 0, whose value is nan
        counts = (~sorted_values.isnan()).sum(-1, keepdim=True)
        ranks = q * (counts.to(q.dtype) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        # a row holding nan gets the last rank, whose (sorted) value is nan
        has_nan = sorted_values.isnan().any(-1, keepdim=True)
        ranks = where(has_nan, float(last_index), q * last_index)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.long()
    values_below = sorted_values.gather(-1, below)
    if interpolation not in ("linear", "midpoint"):
        return values_below
    if interpolation == "midpoint":
        weights = (ranks != last_index).to(ranks.dtype) * 0.5
    else:
        weights = ranks - below
    values_above = sorted_values.gather(-1, ranks.ceil().long())
    return values_below.lerp(values_above, weights)


@export
def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
             out=None) -> Tensor:
    """The q-th quantiles of input (all of it, or along `dim`), interpolating between neighbours as torch does."""
    return finish_out(_quantile("quantile", input, q, dim, keepdim, interpolation, False), out)


@export
def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
                out=None) -> Tensor:
    """quantile ignoring nan values (nan only where a reduced row is all nan)."""
    return finish_out(_quantile("nanquantile", input, q, dim, keepdim, interpolation, True), out)


# ---------------------------------------------------------------- cov, corrcoef


def _check_weights(kind: str, w: Tensor, observations: int) -> None:
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with {w.ndim} "
                           "dimensions")
    if kind == "fweights" and w._dtype.category != 1:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{_name(w._dtype)} dtype")
    if kind == "aweights" and w._dtype.category != 2:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{_name(w._dtype)} dtype")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {observations}")
    if observations and w.min().item() < 0:
        raise RuntimeError(f"cov(): {kind} cannot be negative")


@export
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance matrix of the variables in input's rows (observations in columns), as ATen's cov."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    if input._dtype is dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    data = input.reshape(1, -1) if input.ndim < 2 else input
    observations = data.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations)
        w = aweights if w is None else w * aweights
    if w is None:
        from .creation import full

        w_sum = full((), observations, dtype=dt.int64, device=input.device)
    else:
        w_sum = w.sum()
        if w_sum.item() == 0:
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    average = (data if w is None else data * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm_factor = w_sum - (w * aweights).sum() * correction / w_sum
    else:
        norm_factor = w_sum - _scalar_tensor(correction, w_sum)
    if norm_factor.item() <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm_factor = norm_factor * 0
    centered = data - average.unsqueeze(1)
    weighted = centered if w is None else centered * w
    if weighted._dtype.is_complex:
        weighted = weighted.conj()
    product = centered.matmul(weighted.t())
    return product.true_divide(norm_factor).squeeze()


@export
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of input's rows: cov normalised by the standard deviations, clipped."""
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c  # nan for a zero, inf or nan variance, 1 otherwise
    diagonal = c.diagonal()
    stddev = (diagonal.real if diagonal._dtype.is_complex else diagonal).sqrt()
    c = c / stddev.view(-1, 1)
    c = c / stddev.view(1, -1)
    if c._dtype.is_complex:
        return c.real.clip(-1, 1) + 1j * c.imag.clip(-1, 1)
    return c.clip(-1, 1)


# ---------------------------------------------------------------- histogram


def _linspace_impl(xp, like, start, end, steps):
    """torch's CPU linspace: start + i*step for the first half, end - (steps-1-i)*step for the rest."""
    dtype = like.dtype
    if xp.__name__ == "numpy" and dtype == xp.float32 and steps > 1 and _runtime.kernels_fuse_multiply_add():
        from .creation import _linspace_float32

        return _linspace_float32(xp.float32(start), xp.float32(end), steps)
    start, end = xp.asarray(start, dtype=dtype), xp.asarray(end, dtype=dtype)
    step = (end - start) / xp.asarray(max(steps - 1, 1), dtype=dtype)
    index = xp.arange(steps).astype(dtype)
    low = start + step * index
    high = end - step * (xp.asarray(steps - 1, dtype=dtype) - index)
    return xp.where(xp.arange(steps) < steps // 2, low, high).astype(dtype)


def _histogram_impl(xp, values, edges, weight, bins, low, high, density):
    """Counts (or summed weights) of values in each bin: bin i holds [edges[i], edges[i+1]), the last one closed."""
    if edges is None:
        edges = _linspace_impl(xp, values, low, high, bins + 1)
    count = edges.shape[0] - 1
    flat = values.reshape(-1)
    inside = (flat >= edges[0]) & (flat <= edges[-1])
    position = xp.searchsorted(edges, flat, side="right") - 1
    position = xp.minimum(position, count - 1)[inside]
    weights = None if weight is None else weight.reshape(-1)[inside].astype(xp.float64)
    hist = xp.bincount(position, weights=weights, minlength=count).astype(values.dtype)
    if density:
        hist = hist / hist.sum()
        hist = hist / (edges[1:] - edges[:-1])
    return hist.astype(values.dtype), edges.astype(values.dtype)


def _histogram_meta(args, params):
    edges = args[1]
    bins = params["bins"] if edges is None else edges.shape[0] - 1
    return (bins,), (bins + 1,)


_HISTOGRAM = OpDef("histogram", _histogram_impl, None, dtype_rule=lambda args, params: (None, args[0]._dtype),
                   meta=_histogram_meta, outputs=2, upcast_half=False)


def _finite_range(values: Tensor, range) -> tuple:
    """ATen's select_outer_bin_edges: the given range or the data's, widened by 0.5 each side when empty."""
    if range is not None:
        low, high = float(range[0]), float(range[1])
    elif values.numel():
        low, high = float(values.min()), float(values.max())
    else:
        low, high = 0.0, 1.0
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{low:g}, {high:g}] is not finite")
    if low > high:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} for "
                           "dimension 0")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return low, high


def check_bin_edges(input: Tensor, edges: Tensor, dim: int) -> None:
    """ATen's histogramdd check of one dimension's bin edges (torch.histogram runs it too, as dimension 0)."""
    cpp = dt.CPP_TYPE_NAMES
    if edges._dtype is not input._dtype:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but got "
                           f"input with dtype {cpp[input._dtype.name]} and bins for dimension {dim} with dtype "
                           f"{cpp[edges._dtype.name]}")
    if edges.ndim != 1:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got {edges.ndim} "
                           f"dimensions in the bins tensor for dimension {dim}")
    if edges.numel() == 0:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements "
                           f"in the bins tensor for dimension {dim}")


def check_weight_dtype(input: Tensor, weight: Tensor) -> None:
    """ATen's histogramdd check that a weight tensor has the input's dtype."""
    if weight._dtype is not input._dtype:
        cpp = dt.CPP_TYPE_NAMES
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                           f"should have the same dtype, but got input({cpp[input._dtype.name]}), and "
                           f"weight({cpp[weight._dtype.name]})")


@export
def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False,
              out=None):
    """(hist, bin_edges): bins equal-width bins over `range` (default the data's), or the given edges tensor."""
    from .. import return_types

    if isinstance(bins, Tensor):
        check_bin_edges(input, bins, 0)
    elif int(bins) <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {int(bins)} for dimension 0")
    if weight is not None:
        check_weight_dtype(input, weight)
        if weight.numel() != input.numel():  # torch flattens both before comparing
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"[{input.numel()}, 1] and weight with shape [{weight.numel()}]")
    if input._dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_name(input._dtype)}'")
    params = {"bins": 0, "low": 0.0, "high": 0.0, "density": bool(density)}
    edges = None
    if isinstance(bins, Tensor):
        edges = bins
        params["bins"] = bins.shape[0] - 1
    else:
        params["bins"] = int(bins)
        params["low"], params["high"] = _finite_range(input, range)
    hist, bin_edges = call(_HISTOGRAM, (input.detach(), edges if edges is None else edges.detach(),
                                        None if weight is None else weight.detach()), params)
    return finish_out(return_types.histogram(hist, bin_edges), out)


# ---------------------------------------------------------------- distances


@export(method=True)
def dist(input: Tensor, other: Tensor, p=2) -> Tensor:
    """The p-norm of input - other (broadcast), as torch.norm(input - other, p)."""
    from .norms import vector_norm

    difference = input - other
    if difference._dtype.category < 2:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_name(difference._dtype)} instead.")
    return vector_norm(difference, p)


def _euclidean_impl(xp, x1, x2):
    """ATen's _euclidean_dist: ||a||^2 + ||b||^2 - 2 a.b as one matmul of padded operands, clamped, sqrt."""
    x1_norm = (x1 * x1).sum(-1, keepdims=True)
    x2_norm = (x2 * x2).sum(-1, keepdims=True)
    x1_padded = xp.concatenate([x1 * -2, x1_norm, xp.ones_like(x1_norm)], axis=-1)
    x2_padded = xp.concatenate([x2, xp.ones_like(x2_norm), x2_norm], axis=-1)
    squared = xp.matmul(x1_padded, xp.swapaxes(x2_padded, -1, -2))
    return xp.sqrt(xp.maximum(squared, 0))


def _euclidean_backward(ctx, g):
    """torch's _euclidean_dist_backward: 0 (a subgradient) where a distance is 0."""
    x1, x2 = ctx.inputs
    result = ctx.result
    ratio = (g / result).masked_fill(result == 0, 0)
    grad1 = x1 * ratio.sum(-1, keepdim=True) - ratio.matmul(x2)
    grad2 = x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT.matmul(x1)
    return grad1, grad2


_EUCLIDEAN = OpDef("euclidean_dist", _euclidean_impl, _euclidean_backward, saves=SAVE_INPUTS | SAVE_RESULT,
                   meta=lambda args, params: args[0].shape[:-1] + (args[1].shape[-2],))


@export(method=False)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of x1 (..., P, M) and each row of x2 (..., R, M): (..., P, R)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _CDIST_MODES[compute_mode]
    for label, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {label} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for label, x in (("X1", x1), ("X2", x2)):
        if x._dtype.category != 2:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {label} got: {_name(x._dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1._dtype is not x2._dtype:
        raise RuntimeError(f"expected scalar type {_name(x1._dtype)} but found {_name(x2._dtype)}")
    from ._shapes import broadcast_shapes

    batch = tuple(broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    x1 = x1.expand(batch + tuple(x1.shape[-2:]))
    x2 = x2.expand(batch + tuple(x2.shape[-2:]))
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    if x1.numel() == 0 or x2.numel() == 0:
        return x1.new_zeros(batch + (rows1, rows2)) + (x1.sum() + x2.sum()) * 0
    if p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25))):
        return call(_EUCLIDEAN, (x1, x2))
    if x1._dtype in (dt.float16, dt.bfloat16):  # only the matmul form has half kernels in torch
        raise NotImplementedError(f"\"cdist\" not implemented for '{_name(x1._dtype)}'")
    return _distance(x1.unsqueeze(-2) - x2.unsqueeze(-3), float(p))


def _distance(difference: Tensor, p: float) -> Tensor:
    """The p-norm over the last dim with the gradients of ATen's cdist/pdist kernels: at p = inf each tied
    largest |difference| gets the whole gradient (vector_norm would share it among the ties)."""
    from .norms import vector_norm

    if p == 0:  # the count of differing entries, whose gradient ATen's kernels give as zeros (not undefined)
        return (difference != 0).sum(-1).to(difference.dtype) + (difference * 0).sum(-1)
    if not math.isinf(p):
        return vector_norm(difference, p, -1)
    magnitude = difference.abs()
    largest = magnitude.amax(-1, keepdim=True).detach()
    # largest + 0 in value; the gradient is sign(difference) on every entry equal to the largest
    touching = (magnitude - largest).masked_fill(magnitude != largest, 0).sum(-1)
    return largest.squeeze(-1) + touching


@export(method=False)
def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of input (N, M), pairs (i, j > i) in row-major order: N(N-1)/2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if input._dtype.category != 2:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from .movement import cat

    rows = input.shape[0]
    if rows < 2:
        return input.new_zeros((0,)) + input.sum() * 0
    if input._dtype in (dt.float16, dt.bfloat16):
        raise NotImplementedError(f"\"pdist\" not implemented for '{_name(input._dtype)}'")
    # row i against every later row, by slices only (no index ops): torch's pair order, one piece per row
    pieces = [input[i:i + 1] - input[i + 1:] for i in range(rows - 1)]
    return _distance(cat(pieces, 0), float(p))


# ---------------------------------------------------------------- renorm


@export(inplace=True)
def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice along `dim` whose p-norm exceeds maxnorm to norm maxnorm (ATen's renorm)."""
    if isinstance(p, complex):
        raise RuntimeError("renorm: p must be real-valued")
    if float(p) <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if isinstance(maxnorm, complex):
        raise RuntimeError("renorm: maxnorm must be real-valued")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {float(maxnorm):g}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    from .norms import vector_norm

    dim = wrap_dim(dim, input.ndim)
    reduce_dims = tuple(d for d in range(input.ndim) if d != dim)
    accumulate = dt.float32 if input._dtype in (dt.float16, dt.bfloat16) else None
    norm = vector_norm(input, float(p), reduce_dims, True, dtype=accumulate)
    maxnorm = float(maxnorm)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    real = {dt.complex64: dt.float32, dt.complex128: dt.float64}.get(input._dtype, input._dtype)
    return input * factor.to(real)

