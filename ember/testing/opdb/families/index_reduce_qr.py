"""OpInfos for index_reduce, the Householder pair geqrf/ormqr, and histogramdd.

index_reduce samples cover every reduce with and without include_self, repeated indices, int32 indices, 0-d,
1-d and 3-d inputs; values are drawn without ties or zeros so gradcheck is at differentiable points (ties and
zeros are in tests/test_missing_ops_a.py).  geqrf and histogramdd are not differentiable (grad=False); geqrf
takes well-conditioned matrices, whose factorization is unique up to rounding.
"""

from __future__ import annotations

import numpy as np

from ..core import NUMPY_TYPES, ErrorSample, OpInfo, Sample, make_array
from .linalg import DECOMP_TOLERANCE, LINALG_TYPES

_REDUCES = ("prod", "mean", "amax", "amin")


def _i(*values, dtype=np.int64):
    return np.array(values, dtype)


def _distinct(shape, dtype, rng, low=0.5, high=2.0):
    """Values without ties or zeros, with random signs (floats), or small nonzero integers."""
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        count = int(np.prod(shape))
        magnitudes = np.linspace(low, high, max(count, 1))[:count]
        values = rng.permutation(magnitudes) * rng.choice((-1.0, 1.0), count)
        return np.asarray(values.reshape(shape)).astype(NUMPY_TYPES[dtype])
    return make_array(shape, dtype, rng, 1 if dtype == "uint8" else -4, 5, exclude_zero=True)


def index_reduce_samples(dtype, rng):
    samples = []
    for reduce in _REDUCES:
        for include_self in (True, False):
            x = _distinct((3, 4), dtype, rng)
            source = _distinct((5, 4), dtype, rng, 2.5, 4.0)
            samples.append(Sample((x, 0, _i(2, 0, 2, 2, 1), source, reduce), {"include_self": include_self},
                                  name=f"{reduce} include_self={include_self}"))
    samples += [
        Sample((_distinct((2, 3, 4), dtype, rng), -2, _i(0, 2, 0, dtype=np.int32), _distinct((2, 3, 4), dtype, rng),
                "prod"), name="3-d int32 index"),
        Sample((_distinct((5,), dtype, rng), 0, _i(4, 0, 4), _distinct((3,), dtype, rng), "amax"),
               {"include_self": False}, name="1-d"),
        Sample((_distinct((), dtype, rng), 0, _i(0), _distinct((), dtype, rng), "mean"), name="0-d"),
        Sample((_distinct((4, 3), dtype, rng), 1, _i(2, 2), _distinct((4, 2), dtype, rng), "amin"),
               noncontiguous=True, name="noncontiguous"),
    ]
    return samples


def index_reduce_errors():
    x = np.ones((3, 4), np.float32)
    source = np.ones((2, 4), np.float32)
    return [
        ErrorSample(Sample((x, 0, _i(0, 1), source, "sum")), RuntimeError,
                    "Expected reduce to be one of prod, mean, amax or amin but got sum"),
        ErrorSample(Sample((x, 0, _i(0, 3), source, "prod")), IndexError, "index out of range in self"),
        ErrorSample(Sample((x, 0, _i(0, -1), source, "prod")), IndexError, "index out of range in self"),
        ErrorSample(Sample((x, 0, np.array([[0, 1]]), source, "prod")), IndexError,
                    r"Index is supposed to be a vector, but got dim: 2 with type: Long and size: \[1, 2\]"),
        ErrorSample(Sample((x, 0, np.array([0.0, 1.0]), source, "prod")), RuntimeError,
                    "Expected dtype int32/int64 for index but got: Double"),
        ErrorSample(Sample((x, 0, _i(0, 1), source.astype(np.float64), "prod")), RuntimeError,
                    r"self \(Float\) and source \(Double\) must have the same scalar type"),
        ErrorSample(Sample((x, 0, _i(0, 1, 2), source, "mean")), RuntimeError,
                    r"Number of indices \(3\) should be equal to source.size\(dim\): \(2\), for dim: 0"),
        ErrorSample(Sample((x, 0, _i(0, 1), np.ones((2, 3), np.float32), "amax")), RuntimeError,
                    "source tensor shape must match self tensor shape, excluding the specified dimension"),
        ErrorSample(Sample((x, 1, _i(0, 1), np.ones(2, np.float32), "amax")), RuntimeError,
                    "Indexing dim 1 is out of bounds of the source tensor with dim 1"),
        ErrorSample(Sample((x.astype(bool), 0, _i(0, 1), source.astype(bool), "mean")), NotImplementedError,
                    "\"div_floor_cpu\" not implemented for 'Bool'"),
        ErrorSample(Sample((x.astype(np.complex64), 0, _i(0, 1), source.astype(np.complex64), "amax")),
                    NotImplementedError, "\"maximum_cpu\" not implemented for 'ComplexFloat'"),
        ErrorSample(Sample((x.astype(np.complex64), 0, _i(0, 1), source.astype(np.complex64), "prod"),
                           {"include_self": False}), NotImplementedError,
                    "\"index_reduce_func_exclude_input_init\" not implemented for 'ComplexFloat'"),
    ]


# ---------------------------------------------------------------- geqrf, ormqr


def _well_conditioned(shape, dtype, rng):
    """A random matrix (batch) plus a dominant diagonal: full rank, far from ties in geqrf's pivots."""
    values = make_array(shape, dtype, rng, -1, 1)
    m, n = shape[-2], shape[-1]
    values[..., range(min(m, n)), range(min(m, n))] += 3
    return values


def geqrf_samples(dtype, rng):
    shapes = [(4, 3), (3, 3), (3, 5), (2, 4, 3), (0, 3), (3, 0)]
    samples = [Sample((_well_conditioned(s, dtype, rng),), grad=False) for s in shapes]
    samples.append(Sample((_well_conditioned((5, 4), dtype, rng),), noncontiguous=True, grad=False))
    return samples


def geqrf_errors():
    return [
        ErrorSample(Sample((np.ones(3, np.float32),)), RuntimeError,
                    "torch.geqrf: input must have at least 2 dimensions."),
        ErrorSample(Sample((np.ones((3, 2), np.float16),)), NotImplementedError,
                    "\"geqrf_cpu\" not implemented for 'Half'"),
        ErrorSample(Sample((np.ones((3, 2), np.int64),)), NotImplementedError,
                    "\"geqrf_cpu\" not implemented for 'Long'"),
    ]


def ormqr_samples(dtype, rng):
    # (input, tau length, other, left, transpose): tau has min(other.shape[side], input.shape[-1]) entries
    cases = [((4, 3), 3, (4, 2), True, False), ((4, 3), 3, (4, 2), True, True), ((4, 3), 3, (2, 4), False, False),
             ((3, 3), 3, (5, 3), False, True), ((3, 5), 3, (3, 2), True, False), ((2, 4, 2), 2, (2, 4, 3), True, True),
             ((4, 3), 3, (4, 0), True, False)]
    samples = []
    for input_shape, k, other_shape, left, transpose in cases:
        tau_shape = input_shape[:-2] + (k,)
        samples.append(Sample((make_array(input_shape, dtype, rng, -1, 1), make_array(tau_shape, dtype, rng, 0.2, 1.5),
                               make_array(other_shape, dtype, rng, -1, 1), left, transpose),
                              name=f"{input_shape} left={left} transpose={transpose}"))
    samples.append(Sample(samples[0].args, noncontiguous=True, name="noncontiguous"))
    return samples


def ormqr_errors():
    f32 = np.float32
    a, tau, other = np.ones((4, 3), f32), np.ones(3, f32), np.ones((4, 2), f32)
    return [
        ErrorSample(Sample((np.ones(3, f32), tau, other)), RuntimeError, "input must have at least 2 dimensions"),
        ErrorSample(Sample((a, tau, np.ones(4, f32))), RuntimeError, "other must have at least 2 dimensions"),
        ErrorSample(Sample((a, tau, np.ones((3, 2), f32))), RuntimeError,
                    r"other.shape\[-2\] must be equal to input.shape\[-2\]"),
        ErrorSample(Sample((a, np.ones(2, f32), other)), RuntimeError,
                    r"tau.shape\[-1\] must be equal to min\(other.shape\[-2\], input.shape\[-1\]\)"),
        ErrorSample(Sample((a, np.ones((1, 3), f32), other)), RuntimeError,
                    "Expected tau to have one dimension less than input"),
        ErrorSample(Sample((np.ones((2, 4, 3), f32), np.ones((3, 3), f32), np.ones((2, 4, 2), f32))), RuntimeError,
                    r"Expected batch dimensions of tau to be equal to input.shape\[:-2\], but got \[3\]"),
        ErrorSample(Sample((a, tau, other.astype(np.float64))), RuntimeError,
                    "Expected input and other to have the same dtype, but input has dtypeFloat and other has dtype "
                    "Double"),
        ErrorSample(Sample((a.astype(np.int64), tau.astype(np.int64), other.astype(np.int64))), NotImplementedError,
                    "\"ormqr_cpu\" not implemented for 'Long'"),
    ]


# ---------------------------------------------------------------- histogramdd


def _histogramdd(lib, input, bins, **kwargs):
    return lib.histogramdd(input, bins, **kwargs)


def histogramdd_samples(dtype, rng):
    points = make_array((20, 2), dtype, rng, -2, 2)
    points[0] = (2.5, 0.0)  # outside a given range
    weight = make_array((20,), dtype, rng, 0, 2)
    edges = [np.array([-2.0, -0.5, 0.0, 1.0, 2.5], dtype), np.array([-1.0, 1.0], dtype)]
    return [
        Sample((points, 4), grad=False),
        Sample((points, [3, 5]), {"range": [-1.0, 1.0, -2.0, 2.0]}, grad=False),
        Sample((points, [3, 2]), {"weight": weight, "density": True}, grad=False),
        Sample((points, edges), grad=False, name="edge tensors"),
        Sample((points, edges), {"weight": weight, "density": True}, grad=False, name="edge tensors, density"),
        Sample((make_array((2, 5, 3), dtype, rng), [2, 3, 4]), {"weight": make_array((2, 5), dtype, rng, 0, 1)},
               grad=False, name="3-d input"),
        Sample((make_array((0, 2), dtype, rng), 3), grad=False, name="no points"),
        Sample((make_array((10, 3), dtype, rng), 2), noncontiguous=True, grad=False, name="noncontiguous"),
    ]


def histogramdd_errors():
    points = np.ones((10, 2), np.float32)
    return [
        ErrorSample(Sample((np.ones(5, np.float32), 3)), RuntimeError,
                    "input tensor should have at least 2 dimensions"),
        ErrorSample(Sample((points, [3])), RuntimeError, "The size of bins must be equal to the innermost dimension"),
        ErrorSample(Sample((points, [0, 3])), RuntimeError, "bins must be > 0, but got 0 for dimension 0"),
        ErrorSample(Sample((points, [3, 3]), {"range": [0.0, 1.0]}), RuntimeError,
                    "for a 2-dimensional histogram range should have 4 elements, but got 2"),
        ErrorSample(Sample((points, [3, 3]), {"range": [1.0, 0.0, 0.0, 1.0]}), RuntimeError,
                    "min should not exceed max, but got min 1 max 0 for dimension 0"),
        ErrorSample(Sample((points, [3, 3]), {"weight": np.ones(9, np.float32)}), RuntimeError,
                    r"but got input with shape \[10, 2\] and weight with shape \[9\]"),
        ErrorSample(Sample((points, [np.ones(3, np.float32)])), RuntimeError,
                    "expected 2 sequences of bin edges for a 2-dimensional histogram but got 1"),
        ErrorSample(Sample((points.astype(np.int64), 3)), NotImplementedError,
                    "\"histogramdd\" not implemented for 'Long'"),
        ErrorSample(Sample((points, 3.0)), TypeError, "histogramdd\\(\\) received an invalid combination of arguments"),
    ]


OPS = [
    OpInfo("index_reduce", index_reduce_samples, dtypes=("float32", "float64", "float16", "bfloat16", "int64", "int32",
                                                          "uint8"),
           method="index_reduce", inplace="index_reduce_", supports_out=True, error_inputs=index_reduce_errors,
           max_samples=12),
    OpInfo("geqrf", geqrf_samples, dtypes=LINALG_TYPES, method="geqrf", grad=False, tolerances=DECOMP_TOLERANCE,
           error_inputs=geqrf_errors),
    OpInfo("ormqr", ormqr_samples, dtypes=LINALG_TYPES, method="ormqr", supports_out=True,
           tolerances=DECOMP_TOLERANCE, error_inputs=ormqr_errors),
    OpInfo("histogramdd", histogramdd_samples, call=_histogramdd, dtypes=("float32", "float64"), grad=False,
           meta=False, error_inputs=histogramdd_errors),
]
