"""OpInfos for sorting and selection (sort, topk, median, mode, unique, ...) and searching/counting ops."""

from __future__ import annotations

import numpy as np

from ..core import FLOATING, INTEGRAL, ErrorSample, OpInfo, Sample, make_array
from .reduction import NAN, _distinct

SORT_TYPES = FLOATING + ("bool",) + INTEGRAL


def _typed(values, dtype, rng):
    return np.asarray(values).astype(make_array((), dtype, rng).dtype)


def _nan_row(dtype, rng):
    return _typed([[3.0, NAN, 1.0, 3.0, -0.0, 0.0, NAN], [2.0, 1.0, NAN, 0.5, 4.0, -1.0, 2.5]], dtype, rng)


def _sort_samples(dtype, rng):
    ties = rng.integers(0, 3, size=(3, 8))
    samples = [
        Sample((_distinct((6,), dtype, rng),)),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 0}),
        Sample((_distinct((2, 3, 4), dtype, rng),), {"dim": -2, "descending": True}),
        Sample((_distinct((4, 3), dtype, rng),), {"descending": True}, noncontiguous=True),
        Sample((_distinct((), dtype, rng),)),
        Sample((make_array((0, 3), dtype, rng),), {"dim": 0}),
        Sample((_typed(ties, dtype, rng),), {"stable": True}, grad=False, name="ties stable"),
        Sample((_typed(ties, dtype, rng),), {"stable": True, "descending": True}, grad=False),
    ]
    if dtype in FLOATING:
        samples.append(Sample((_nan_row(dtype, rng),), {"stable": True}, grad=False, name="nan last"))
        samples.append(Sample((_nan_row(dtype, rng),), {"stable": True, "descending": True}, grad=False))
    return samples


def _values_only_samples(dtype, rng):
    return [s for s in _sort_samples(dtype, rng)]


def _msort_samples(dtype, rng):
    return [Sample(s.args, {}, grad=s.grad, noncontiguous=s.noncontiguous) for s in _sort_samples(dtype, rng)
            if "stable" not in s.kwargs or s.name]


def _topk_samples(dtype, rng):
    samples = [
        Sample((_distinct((6,), dtype, rng), 3)),
        Sample((_distinct((3, 4), dtype, rng), 2), {"dim": 0}),
        Sample((_distinct((2, 3, 4), dtype, rng), 2), {"dim": -1, "largest": False}),
        Sample((_distinct((4, 5), dtype, rng), 5), noncontiguous=True),
        Sample((_distinct((), dtype, rng), 1)),
        Sample((_distinct((3, 4), dtype, rng), 0)),
        Sample((make_array((0, 3), dtype, rng), 2)),
    ]
    if dtype in FLOATING:
        samples.append(Sample((_typed([3.0, NAN, 1.0, 2.0, 0.5, NAN], dtype, rng), 3), grad=False, name="nan"))
    return samples


def _kthvalue_samples(dtype, rng):
    return [
        Sample((_distinct((6,), dtype, rng), 3)),
        Sample((_distinct((3, 4), dtype, rng), 1), {"dim": 0}),
        Sample((_distinct((2, 3, 4), dtype, rng), 4), {"dim": -1, "keepdim": True}),
        Sample((_distinct((4, 5), dtype, rng), 5), noncontiguous=True),
        Sample((_distinct((), dtype, rng), 1)),
        Sample((make_array((0, 3), dtype, rng), 2)),
    ]


def _median_samples(dtype, rng):
    ties = _typed(rng.integers(0, 3, size=(3, 5)), dtype, rng)
    samples = [
        Sample((_distinct((6,), dtype, rng),)),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 1}),
        Sample((_distinct((2, 3, 4), dtype, rng),), {"dim": -2, "keepdim": True}),
        Sample((_distinct((4, 5), dtype, rng),), {"dim": 0}, noncontiguous=True),
        Sample((_distinct((), dtype, rng),)),
        Sample((_distinct((), dtype, rng),), {"dim": 0}),
        Sample((make_array((0, 3), dtype, rng),), {"dim": 1}),
        Sample((ties,), grad=False, name="ties, values only"),
    ]
    if dtype in FLOATING:
        samples.append(Sample((make_array((0, 3), dtype, rng),), name="empty is nan"))
        samples.append(Sample((_nan_row(dtype, rng),), {"dim": 1}, grad=False, name="nan"))
        samples.append(Sample((_nan_row(dtype, rng),), grad=False, name="nan all"))
        samples.append(Sample((_typed([[NAN, NAN], [1.0, NAN]], dtype, rng),), {"dim": 1}, grad=False))
    return samples


def _median_errors():
    return [ErrorSample(Sample((np.ones((0, 3), np.float32),), {"dim": 0}), IndexError, "non-zero size")]


def _mode_samples(dtype, rng):
    return [
        Sample((_typed([3, 1, 1, 3, 0, 0, 2, 1, 3], dtype, rng),), grad=False, name="last index of the mode"),
        Sample((_typed([3, 1, 1, 3, 0, 0, 2], dtype, rng),), grad=False, name="smallest of equally frequent"),
        Sample((_typed(rng.integers(0, 3, size=(3, 6)), dtype, rng),), {"dim": 1}, grad=False),
        Sample((_typed(rng.integers(0, 3, size=(2, 4, 3)), dtype, rng),), {"dim": 0, "keepdim": True}, grad=False),
        Sample((_typed(rng.integers(0, 3, size=(4, 5)), dtype, rng),), grad=False, noncontiguous=True),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 0}),
        Sample((_distinct((), dtype, rng),)),
        Sample((make_array((0, 3), dtype, rng),), {"dim": 1}),
    ]


def _unique_samples(dtype, rng):
    values = _typed(rng.integers(0, 4, size=(3, 5)), dtype, rng)
    rows = _typed([[3, 1], [2, 1], [3, 1], [0, 4]], dtype, rng)
    samples = [
        Sample((values,)),
        Sample((values,), {"return_inverse": True, "return_counts": True}),
        Sample((values,), {"sorted": False, "return_counts": True}),
        Sample((rows,), {"dim": 0, "return_inverse": True, "return_counts": True}),
        Sample((rows,), {"dim": -1, "return_inverse": True}),
        Sample((values,), {"return_inverse": True}, noncontiguous=True),
        Sample((_typed(2, dtype, rng),), {"return_inverse": True, "return_counts": True}),
        Sample((make_array((0,), dtype, rng),), {"return_inverse": True, "return_counts": True}),
    ]
    if dtype in FLOATING:
        samples.append(Sample((_typed([3.0, NAN, 2.0, NAN], dtype, rng),), {"return_counts": True}, name="nan"))
    return samples


def _consecutive_samples(dtype, rng):
    values = _typed(rng.integers(0, 2, size=(3, 6)), dtype, rng)
    rows = _typed([[3, 1], [3, 1], [2, 1], [3, 1]], dtype, rng)
    return [
        Sample((values,)),
        Sample((values,), {"return_inverse": True, "return_counts": True}),
        Sample((rows,), {"dim": 0, "return_inverse": True, "return_counts": True}),
        Sample((rows,), {"dim": 1, "return_counts": True}),
        Sample((values,), {"return_inverse": True}, noncontiguous=True),
        Sample((_typed(2, dtype, rng),), {"return_inverse": True, "return_counts": True}),
        Sample((make_array((0,), dtype, rng),), {"return_inverse": True, "return_counts": True}),
    ]


def _sorted(array):
    return np.sort(array, axis=-1)


def _searchsorted_samples(dtype, rng):
    sequence = _sorted(make_array((6,), dtype, rng))
    rows = _sorted(make_array((2, 5), dtype, rng))
    scalar = 2 if dtype in INTEGRAL else 2.5
    permutation = rng.permutation(6)
    return [
        Sample((sequence, make_array((3, 4), dtype, rng))),
        Sample((sequence, sequence[[0, 2, 5]].copy()), {"right": True}, name="right on exact values"),
        Sample((sequence, sequence[[1, 3]].copy()), {"side": "left"}),
        Sample((sequence, sequence[[1, 4]].copy()), {"side": "right", "out_int32": True}),
        Sample((rows, make_array((2, 3), dtype, rng))),
        Sample((sequence, scalar)),
        Sample((sequence[permutation].copy(), make_array((4,), dtype, rng)), {"sorter": permutation.argsort()}),
        Sample((sequence, make_array((0,), dtype, rng))),
        Sample((sequence, make_array((4, 3), dtype, rng)), noncontiguous=True),
    ]


def _searchsorted_errors():
    sequence = np.asarray([1.0, 2.0, 3.0], np.float32)
    return [
        ErrorSample(Sample((sequence, 2.0), {"right": True, "side": "left"}), RuntimeError,
                    "can't be set to opposites"),
        ErrorSample(Sample((sequence, 2.0), {"side": "bad"}), RuntimeError, "side can only be 'left' or 'right'"),
        ErrorSample(Sample((np.ones((2, 3), np.float32), np.ones((3, 3), np.float32))), RuntimeError,
                    r"boundaries tensor \[2, 3\] and input value tensor \[3, 3\]"),
    ]


def _bucketize_samples(dtype, rng):
    boundaries = _sorted(make_array((5,), dtype, rng))
    return [
        Sample((make_array((3, 4), dtype, rng), boundaries)),
        Sample((boundaries[[0, 2, 4]].copy(), boundaries), {"right": True}),
        Sample((boundaries[[1, 3]].copy(), boundaries), {"out_int32": True}),
        Sample((make_array((), dtype, rng), boundaries)),
        Sample((make_array((4, 3), dtype, rng), boundaries), noncontiguous=True),
    ]


def _histc_samples(dtype, rng):
    return [
        Sample((make_array((20,), dtype, rng),)),
        Sample((make_array((4, 5), dtype, rng),), {"bins": 4}),
        Sample((make_array((30,), dtype, rng),), {"bins": 5, "min": -5, "max": 5}),
        Sample((make_array((4, 5), dtype, rng),), {"bins": 3, "min": 0, "max": 0}, noncontiguous=True),
        Sample((_typed([2.0, 2.0], dtype, rng),), {"bins": 4}, name="min == max widens by 1"),
        Sample((make_array((0,), dtype, rng),), {"bins": 3}),
    ]


def _histc_errors():
    data = np.asarray([1.0, 2.0, 3.0], np.float32)
    return [
        ErrorSample(Sample((data,), {"bins": 4, "min": 3, "max": 1}), RuntimeError, "max must be larger than min"),
        ErrorSample(Sample((data,), {"bins": 0}), RuntimeError, "bins must be > 0"),
    ]


def _bincount_samples(dtype, rng):
    data = make_array((12,), dtype, rng, 0, 6)
    samples = [
        Sample((data,)),
        Sample((data,), {"minlength": 10}),
        Sample((make_array((0,), dtype, rng),), {"minlength": 3}),
        Sample((make_array((0,), dtype, rng),)),
        Sample((data,), noncontiguous=True),
    ]
    for weight_type in ("float32", "float64", "int64", "float16"):
        samples.append(Sample((data, make_array((12,), weight_type, rng))))
    return samples


def _bincount_errors():
    return [
        ErrorSample(Sample((np.asarray([1, -2, 3]),)), RuntimeError, "non-negative integral inputs"),
        ErrorSample(Sample((np.asarray([[1, 2]]),)), RuntimeError, "non-negative integral inputs"),
        ErrorSample(Sample((np.asarray([1, 2]),), {"minlength": -1}), RuntimeError, "minlength should be >= 0"),
        ErrorSample(Sample((np.asarray([1, 2]), np.ones(3))), RuntimeError, "same length as input"),
    ]


OPS = [
    OpInfo("sort", _sort_samples, dtypes=SORT_TYPES, method="sort"),
    OpInfo("argsort", _values_only_samples, dtypes=SORT_TYPES, method="argsort", grad=False),
    OpInfo("msort", _msort_samples, dtypes=SORT_TYPES, method="msort", supports_out=True),
    OpInfo("topk", _topk_samples, dtypes=SORT_TYPES, method="topk",
           error_inputs=lambda: [ErrorSample(Sample((np.ones((3,), np.float32), 4)), RuntimeError,
                                             "selected index k out of range")]),
    OpInfo("kthvalue", _kthvalue_samples, dtypes=FLOATING + INTEGRAL, method="kthvalue",
           error_inputs=lambda: [ErrorSample(Sample((np.ones((3,), np.float32), 4)), RuntimeError,
                                             "k out of range for dimension 0")]),
    OpInfo("median", _median_samples, dtypes=FLOATING + INTEGRAL, method="median", error_inputs=_median_errors,
           max_samples=13),
    OpInfo("nanmedian", _median_samples, dtypes=FLOATING + INTEGRAL, method="nanmedian", max_samples=13),
    OpInfo("mode", _mode_samples, dtypes=SORT_TYPES, method="mode",
           error_inputs=lambda: [ErrorSample(Sample((np.ones((0, 3), np.float32), 0)), IndexError, "non-zero size")]),
    OpInfo("unique", _unique_samples, dtypes=SORT_TYPES, method="unique", grad=False, meta=False),
    OpInfo("unique_consecutive", _consecutive_samples, dtypes=SORT_TYPES, method="unique_consecutive", grad=False,
           meta=False),
    OpInfo("searchsorted", _searchsorted_samples, dtypes=FLOATING + INTEGRAL, grad=False, supports_out=True,
           error_inputs=_searchsorted_errors),
    OpInfo("bucketize", _bucketize_samples, dtypes=FLOATING + INTEGRAL, grad=False, supports_out=True,
           error_inputs=lambda: [ErrorSample(Sample((np.ones(3, np.float32), np.ones((2, 2), np.float32))),
                                             RuntimeError, r"must be 1 dimension, but got dim\(2\)")]),
    # bfloat16 left out: torch rounds each step of its bin arithmetic to bfloat16, which can put an element past
    # the last bin, where torch's kernel writes out of bounds (undefined behaviour; ember clamps it to the last)
    OpInfo("histc", _histc_samples, dtypes=("float32", "float64", "float16", "int64"), method="histc", grad=False,
           supports_out=True, error_inputs=_histc_errors),
    OpInfo("bincount", _bincount_samples, dtypes=INTEGRAL + ("bool", "float32"), method="bincount", grad=False,
           meta=False, error_inputs=_bincount_errors),
]
