"""torch.histogramdd: an N-dimensional histogram of the points in the rows of an (..., N) tensor.

Follows ATen's Histogram.cpp: bins as one int, N ints (equal-width bins over `range` or the data's extent per
dimension, edges from torch's CPU linspace) or N edge tensors (used as given, and returned as the very same
tensors); each coordinate is binned by a search among its dimension's edges (every bin closed on the left, the
last also on the right), and points outside any bin (NaN included) are dropped.  Not differentiable, as torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np

from .. import _dtype as dt
from .._dispatch import OpDef, call
from .._tensor import SCALAR_NAMES, Tensor
from ._api import export
from .decompositions import _return_type
from .statistics import _linspace_impl, check_bin_edges, check_weight_dtype

Histogramdd = _return_type("histogramdd", ("hist", "bin_edges"))

_SIGNATURES = (
    " * (Tensor input, int bins, tuple of floats range = None, Tensor weight = None, bool density = False)\n"
    " * (Tensor input, tuple of ints bins, tuple of floats range = None, Tensor weight = None, bool density = False)\n"
    " * (Tensor input, tuple of Tensors bins, tuple of floats range = None, Tensor weight = None, "
    "bool density = False)\n"
)


def _edges_impl(xp, values, low, high, steps):
    return _linspace_impl(xp, values, low, high, steps)


_EDGES = OpDef("histogramdd_bin_edges", _edges_impl, None, dtype_rule=lambda args, params: (None, args[0]._dtype),
               meta=lambda args, params: (params["steps"],), upcast_half=False)


def _histogramdd_impl(xp, points, weight, *edges, density):
    """Counts (or summed weights) per N-dimensional bin, accumulated in the input's dtype as ATen's kernel."""
    shape = tuple(e.shape[0] - 1 for e in edges)
    if not edges:  # a 0-dimensional histogram: ATen's kernel counts nothing
        hist = xp.zeros((), dtype=points.dtype)
        return hist / hist if density else hist
    inside = xp.ones(points.shape[0], dtype=bool)
    flat = xp.zeros(points.shape[0], dtype=np.int64)
    for dim, dim_edges in enumerate(edges):
        column = points[:, dim]
        inside &= (column >= dim_edges[0]) & (column <= dim_edges[-1])
        position = xp.searchsorted(dim_edges, column, side="right") - 1
        flat = flat * shape[dim] + xp.clip(position, 0, shape[dim] - 1)
    flat = flat[inside]
    dtype = points.dtype
    if dtype.itemsize >= 4:  # float32/float64: bincount's double sums, rounded once
        weights = None if weight is None else weight.reshape(-1)[inside].astype(np.float64)
        hist = xp.bincount(flat, weights=weights, minlength=math.prod(shape)).astype(dtype)
    else:  # float16/bfloat16 accumulate (and round) one point at a time, as torch's kernel does
        hist = xp.zeros(math.prod(shape), dtype=dtype)
        xp.add.at(hist, flat, xp.ones(flat.shape, dtype) if weight is None else weight.reshape(-1)[inside])
    hist = hist.reshape(shape)
    if density:
        with np.errstate(invalid="ignore", divide="ignore"):
            hist = hist / hist.astype(np.float64).sum().astype(dtype)
            for dim, dim_edges in enumerate(edges):
                lengths = (dim_edges[1:] - dim_edges[:-1]).astype(dtype)
                hist = hist / lengths.reshape((-1,) + (1,) * (len(edges) - dim - 1))
    return hist.astype(dtype)


_HISTOGRAMDD = OpDef("histogramdd", _histogramdd_impl, None, dtype_rule=lambda args, params: (None, args[0]._dtype),
                     meta=lambda args, params: tuple(e.shape[0] - 1 for e in args[2:]), upcast_half=False)


def _type_error(input, bins) -> TypeError:
    return TypeError(f"histogramdd() received an invalid combination of arguments - got ({type(input).__name__}, "
                     f"{type(bins).__name__}), but expected one of:\n{_SIGNATURES}")


def _bin_spec(input, bins):
    """bins as ('counts', [ints]) or ('edges', [tensors]), with torch's argument-parsing TypeErrors."""
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        return "counts", [int(bins)] * input.shape[-1] if input.ndim else []
    if not isinstance(bins, (list, tuple)):
        raise _type_error(input, bins)
    if all(isinstance(b, numbers.Integral) and not isinstance(b, bool) for b in bins) and bins:
        return "counts", [int(b) for b in bins]
    for position, b in enumerate(bins):
        if not isinstance(b, Tensor):
            raise TypeError(f"expected Tensor as element {position} in argument 1, but got {type(b).__name__}")
    return "edges", list(bins)


def _outer_edges(points: Tensor, bounds) -> tuple:
    """ATen's select_outer_bin_edges: `bounds` (torch's `range`), the data's extent per dimension, or [0, 1] for
    no data; an empty extent is widened by 0.5 each side."""
    n = points.shape[-1]
    low, high = [0.0] * n, [1.0] * n
    if bounds is not None:
        if len(bounds) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should have {2 * n} "
                               f"elements, but got {len(bounds)}")
        low, high = [float(v) for v in bounds[0::2]], [float(v) for v in bounds[1::2]]
    elif points.numel():
        if points._dtype not in (dt.float32, dt.float64):
            raise NotImplementedError(f"\"histogramdd\" not implemented for '{SCALAR_NAMES[points._dtype.name]}'")
        values = np.asarray(points.detach().cpu().numpy(), np.float64)
        with np.errstate(invalid="ignore"):
            low = [float(v) for v in np.min(values, axis=0)]
            high = [float(v) for v in np.max(values, axis=0)]
    for dim in range(n):
        if not (math.isfinite(low[dim]) and math.isfinite(high[dim])):
            raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{low[dim]:g}, {high[dim]:g}] is not "
                               "finite")
        if low[dim] > high[dim]:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low[dim]:g} max "
                               f"{high[dim]:g} for dimension {dim}")
        if low[dim] == high[dim]:
            low[dim], high[dim] = low[dim] - 0.5, high[dim] + 0.5
    return low, high


def _edges_from_counts(points: Tensor, counts: list, bounds) -> list:
    low, high = _outer_edges(points, bounds)
    if len(counts) != points.shape[-1]:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    edges = []
    for dim, count in enumerate(counts):
        if count + 1 < 0:
            raise RuntimeError("number of steps must be non-negative")
        if points._dtype is dt.bool_:
            raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
        edges.append(call(_EDGES, (points.detach(),), {"low": low[dim], "high": high[dim], "steps": count + 1}))
    return edges


def _check_inputs(input: Tensor, edges: list, weight) -> None:
    """ATen's histogramdd_check_inputs, then histogramdd_prepare_out's bin-count check."""
    n = input.shape[-1]
    if len(edges) != n:
        raise RuntimeError(f"torch.histogramdd: expected {n} sequences of bin edges for a {n}-dimensional histogram "
                           f"but got {len(edges)}")
    for dim, dim_edges in enumerate(edges):
        check_bin_edges(input, dim_edges, dim)
    if weight is not None:
        check_weight_dtype(input, weight)
        if list(input.shape[:-1]) != (list(weight.shape) or [1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                               f"input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    for dim, dim_edges in enumerate(edges):
        if dim_edges.numel() - 1 <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {dim_edges.numel() - 1} for dimension "
                               f"{dim}")
    if input._dtype.category != 2:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{SCALAR_NAMES[input._dtype.name]}'")


@export(method=False)
def histogramdd(input: Tensor, bins: int | Sequence[int] | Sequence[Tensor], *, range: Sequence[float] | None = None,
                weight: Tensor | None = None, density: bool = False):
    """(hist, bin_edges): the (or weighted, or density-normalised) count of the points in input's rows per
    N-dimensional bin; bins is an int, N ints or N edge tensors."""
    if not isinstance(input, Tensor):
        raise _type_error(input, bins)
    kind, spec = _bin_spec(input, bins)
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    points = input.reshape(math.prod(input.shape[:-1]), input.shape[-1])
    edges = spec if kind == "edges" else _edges_from_counts(points, spec, range)
    _check_inputs(input, edges, weight)
    flat_weight = None if weight is None else weight.detach().reshape(-1)
    hist = call(_HISTOGRAMDD, (points.detach(), flat_weight) + tuple(e.detach() for e in edges),
                {"density": bool(density)})
    return Histogramdd(hist, tuple(edges))
