"""OpInfos for reductions (sum, mean, max, prod, var, norm, ...) and scans (cumsum, cummax, diff, ...)."""

from __future__ import annotations

import numpy as np

from ..core import ALL_TYPES, FLOAT_AND_COMPLEX, FLOATING, INTEGRAL, DType, ErrorSample, OpInfo, Sample, make_array

NAN = float("nan")


def _distinct(shape, dtype, rng):
    """Values without ties (a shuffled range), so value-selecting gradients are unambiguous."""
    count = int(np.prod(shape)) if shape else 1
    values = rng.permutation(count) - count // 2
    if dtype in FLOATING:
        values = values + 0.25
    return np.asarray(values.reshape(shape)).astype(make_array((), dtype, rng).dtype)


def reduction_samples(dtype, rng, low=None, high=None, empty_all=True, tuple_dims=True):
    """dim None / int / negative / tuple, keepdim both ways, 0-d, empty and non-contiguous inputs."""

    def array(shape):
        return make_array(shape, dtype, rng, low, high)

    samples = [
        Sample((array(()),)),
        Sample((array((5,)),)),
        Sample((array((3, 4)),), {"dim": 1}),
        Sample((array((2, 3, 4)),), {"dim": -1, "keepdim": True}),
        Sample((array((3, 4)),), {"dim": 0}, noncontiguous=True),
        Sample((array(()),), {"dim": 0, "keepdim": True}),
        Sample((array((0, 3)),), {"dim": 1}),
    ]
    if tuple_dims:
        samples.append(Sample((array((2, 3, 4)),), {"dim": (0, 2)}))
        samples.append(Sample((array((2, 3)),), {"dim": None, "keepdim": True}))
    if empty_all:
        samples.append(Sample((array((0, 3)),)))
    return samples


def _nan_samples(dtype, rng):
    if dtype not in FLOATING:
        return []
    data = make_array((3, 4), dtype, rng)
    data[0, 1] = data[2, 3] = NAN
    data[1, :] = NAN
    return [Sample((data,), {"dim": 1}, grad=False, name="nan"), Sample((data,), grad=False, name="nan all")]


def _sum_samples(dtype, rng):
    samples = reduction_samples(dtype, rng)
    samples.append(Sample((make_array((3, 4), dtype, rng),), {"dim": 0, "dtype": DType("float64")}, grad=False))
    return samples


def _nan_reduction_samples(dtype, rng):
    return reduction_samples(dtype, rng)[:9] + _nan_samples(dtype, rng)


def _ties(dtype, rng):
    """Repeated values (ties) for forward parity of max/min indices; not for gradients."""
    data = rng.integers(0, 3, size=(4, 5)).astype(make_array((), dtype, rng).dtype)
    return [Sample((data,), {"dim": 1}, grad=False, name="ties"), Sample((data,), {"dim": 0}, grad=False)]


def _extreme_samples(dtype, rng):
    samples = [
        Sample((_distinct((5,), dtype, rng),)),
        Sample((_distinct((), dtype, rng),)),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 1}),
        Sample((_distinct((2, 3, 4), dtype, rng),), {"dim": -2, "keepdim": True}),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 0}, noncontiguous=True),
        Sample((make_array((0, 3), dtype, rng),), {"dim": 1}),
        Sample((_distinct((), dtype, rng),), {"dim": 0}),
    ]
    return samples + _ties(dtype, rng) + _nan_samples(dtype, rng)[:1]


def _max_samples(dtype, rng):
    samples = _extreme_samples(dtype, rng)
    samples.append(Sample((make_array((3, 4), dtype, rng), make_array((4,), dtype, rng)), name="binary"))
    if dtype in FLOATING:
        samples.append(_nan_samples(dtype, rng)[1])
    return samples


def _amax_samples(dtype, rng):
    samples = [
        Sample((_distinct((5,), dtype, rng),)),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 1}),
        Sample((_distinct((2, 3, 4), dtype, rng),), {"dim": (0, 2), "keepdim": True}),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": -1}, noncontiguous=True),
        Sample((_distinct((), dtype, rng),)),
        Sample((make_array((0, 3), dtype, rng),), {"dim": 1}),
        Sample((np.asarray([[1, 3, 3], [2, 2, 0]]).astype(make_array((), dtype, rng).dtype),), {"dim": 1},
               name="ties share the gradient"),
    ]
    return samples + _nan_samples(dtype, rng)


def _arg_samples(dtype, rng):
    samples = _extreme_samples(dtype, rng)[:7] + _ties(dtype, rng) + _nan_samples(dtype, rng)
    samples.append(Sample((_distinct((2, 3), dtype, rng),), {"keepdim": True}))
    return samples


def _aminmax_samples(dtype, rng):
    return [
        Sample((_distinct((3, 4), dtype, rng),)),
        Sample((_distinct((3, 4), dtype, rng),), {"dim": 1}),
        Sample((_distinct((2, 3, 4), dtype, rng),), {"dim": -1, "keepdim": True}),
        Sample((_distinct((2, 3), dtype, rng),), {"keepdim": True}),
        Sample((_distinct((), dtype, rng),), {"dim": 0}),
        Sample((make_array((2, 0), dtype, rng),), {"dim": 0}),
    ]


def _empty_reduction_errors(name):
    def errors():
        return [ErrorSample(Sample((np.ones((0, 3), np.float32),)), RuntimeError,
                            "Expected reduction dim to be specified"),
                ErrorSample(Sample((np.ones((0, 3), np.float32),), {"dim": 0}), IndexError,
                            "Expected reduction dim 0 to have non-zero size")]

    return errors


def _mean_errors():
    return [ErrorSample(Sample((np.ones((2, 3), np.int64),)), RuntimeError, "Got: Long"),
            ErrorSample(Sample((np.ones((2, 3), np.float32),), {"dim": 2}), IndexError, "Dimension out of range")]


def _prod_samples(dtype, rng):
    samples = reduction_samples(dtype, rng, -2, 2, tuple_dims=False)
    samples = [s for s in samples if not isinstance(s.kwargs.get("dim"), tuple)]
    if dtype != "bool":
        one_zero = make_array((3, 4), dtype, rng, 1, 3)
        one_zero[1, 2] = 0
        two_zeros = one_zero.copy()
        two_zeros[1, 0] = 0
        samples += [Sample((one_zero,), {"dim": 1}, name="one zero"), Sample((one_zero,), name="one zero all"),
                    Sample((two_zeros,), name="two zeros all"), Sample((two_zeros,), {"dim": 1, "keepdim": True})]
    samples.append(Sample((make_array((3, 4), dtype, rng, -2, 2),), {"dim": 0, "dtype": DType("float64")},
                          grad=False))
    return samples


def _variance_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng)

    return [
        Sample((array((5,)),)),
        Sample((array((3, 4)),), {"dim": 1}),
        Sample((array((2, 3, 4)),), {"dim": (0, 2), "keepdim": True}),
        Sample((array((3, 4)),), {"dim": -1, "correction": 0}, noncontiguous=True),
        Sample((array((3, 4)),), {"dim": 0, "unbiased": False}),
        Sample((array((3, 4)),), {"correction": 2}),
        Sample((array((3, 4)), False)),
        Sample((array((3, 4)), 1, True, True)),
        Sample((array((0, 3)),), {"dim": 1}),
        Sample((array((3, 1)),), {"dim": 1}, grad=False, name="n == correction gives nan"),
        Sample((array(()),), {"correction": 0}),
    ]


def _variance_errors(name):
    def errors():
        message = {"var": "std and var only", "std": "std and var only"}.get(name, f"{name} only")
        return [ErrorSample(Sample((np.ones((2, 3), np.int64),)), RuntimeError, message)]

    return errors


def _logsumexp_samples(dtype, rng):
    samples = [s for s in reduction_samples(dtype, rng) if s.kwargs.get("dim") is not None]
    big = make_array((2, 3), dtype, rng, 500, 700) if dtype in ("float64",) else make_array((2, 3), dtype, rng)
    samples.append(Sample((big,), {"dim": 1}, name="large values stay finite"))
    if dtype in FLOATING:
        edge = np.asarray([[np.inf, 1.0], [-np.inf, -np.inf], [NAN, 0.0]]).astype(make_array((), dtype, rng).dtype)
        samples.append(Sample((edge,), {"dim": 1}, grad=False, name="inf and nan"))
    return samples


def _norm_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng, exclude_zero=True)

    return [
        Sample((array((3, 4)),)),
        Sample((array((3, 4)),), {"p": 1, "dim": 1}),
        Sample((array((2, 3, 4)),), {"p": 3, "dim": (0, 2), "keepdim": True}),
        Sample((array((3, 4)),), {"p": float("inf"), "dim": -1}, noncontiguous=True),
        Sample((array((3, 4)),), {"p": float("-inf"), "dim": 0}),
        Sample((array((3, 4)),), {"p": 0, "dim": 1}),
        Sample((array((3, 4)),), {"p": 1.5}),
        Sample((array((3, 4)),), {"p": 0.5, "dim": 1}),
        Sample((array((3, 4)),), {"p": "fro", "dim": (0, 1)}),
        Sample((array(()),), {"p": 2}),
        Sample((array((0, 3)),), {"dim": 1}),
        Sample((np.zeros((2, 3), make_array((), dtype, rng).dtype),), {"dim": 1}, name="zero norm"),
    ]


def _norm_errors():
    return [
        ErrorSample(Sample((np.ones((2, 3), np.int64),)), RuntimeError, "Expected a floating point or complex"),
        ErrorSample(Sample((np.ones((0, 3), np.float32),), {"p": float("inf")}), RuntimeError, "inf norm"),
        ErrorSample(Sample((np.ones((2, 3), np.float32),), {"dtype": DType("float16")}), RuntimeError,
                    "without narrowing"),
    ]


# ---------------------------------------------------------------- scans


def _scan_samples(dtype, rng, low=None, high=None):
    def array(shape):
        return make_array(shape, dtype, rng, low, high)

    return [
        Sample((array((5,)), 0)),
        Sample((array((3, 4)), 1)),
        Sample((array((2, 3, 4)), -2)),
        Sample((array((3, 4)), 0), noncontiguous=True),
        Sample((array(()), 0)),
        Sample((array((0, 3)), 1)),
        Sample((array((3, 0)), 1)),
    ]


def _cumsum_samples(dtype, rng):
    samples = _scan_samples(dtype, rng)
    samples.append(Sample((make_array((3, 4), dtype, rng), 1), {"dtype": DType("float64")}, grad=False))
    return samples


def _cumprod_samples(dtype, rng):
    samples = _scan_samples(dtype, rng, -2, 2)
    if dtype != "bool":
        zeros = make_array((3, 4), dtype, rng, 1, 3)
        zeros[0, 1] = 0
        zeros[2, 0] = zeros[2, 2] = 0
        samples.insert(0, Sample((zeros, 1), name="zeros"))
        samples.insert(1, Sample((zeros[:, :3].copy(), 0), name="zeros dim 0"))
    return samples


def _cumulative_extreme_samples(dtype, rng):
    samples = [
        Sample((_distinct((5,), dtype, rng), 0)),
        Sample((_distinct((3, 4), dtype, rng), 1)),
        Sample((_distinct((2, 3, 4), dtype, rng), -1)),
        Sample((_distinct((3, 4), dtype, rng), 0), noncontiguous=True),
        Sample((_distinct((), dtype, rng), 0)),
        Sample((make_array((0, 3), dtype, rng), 1)),
    ]
    samples += [Sample((s.args[0], s.kwargs["dim"]), grad=False, name="ties") for s in _ties(dtype, rng)]
    if dtype in FLOATING:
        data = np.asarray([1.0, 3, 3, NAN, 2, NAN, 5]).astype(make_array((), dtype, rng).dtype)
        samples.append(Sample((data, 0), grad=False, name="nan"))
    return samples


def _logcumsumexp_samples(dtype, rng):
    samples = _scan_samples(dtype, rng, -3, 3)
    if dtype in FLOATING:
        edge = np.asarray([[-np.inf, 1.0, np.inf], [NAN, 0.0, -np.inf]]).astype(make_array((), dtype, rng).dtype)
        samples.append(Sample((edge, 1), grad=False, name="inf and nan"))
        samples.append(Sample((make_array((4,), "float64", rng, 500, 700).astype(edge.dtype), 0), name="large"))
    return samples


def _diff_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng)

    return [
        Sample((array((5,)),)),
        Sample((array((3, 4)),), {"n": 2, "dim": 0}),
        Sample((array((2, 3, 4)),), {"dim": 1}),
        Sample((array((3, 4)),), {"n": 3}, noncontiguous=True),
        Sample((array((3, 4)),), {"prepend": array((3, 1)), "append": array((3, 2))}),
        Sample((array((3, 4)),), {"n": 2, "dim": 0, "prepend": array((2, 4))}),
        Sample((array((3,)),), {"n": 5}),
        Sample((array((3,)),), {"n": 0}),
        Sample((array((0, 3)),), {"dim": 0}),
    ]


def _diff_errors():
    x = np.ones((2, 3), np.float32)
    return [
        ErrorSample(Sample((np.ones((), np.float32),)), RuntimeError, "at least one-dimensional"),
        ErrorSample(Sample((x,), {"n": -1}), RuntimeError, "order must be non-negative"),
        ErrorSample(Sample((x,), {"prepend": np.ones((3,), np.float32)}), RuntimeError, "same dimension"),
        ErrorSample(Sample((x,), {"prepend": np.ones((3, 2), np.float32)}), RuntimeError, r"input.size\(0\) = 2"),
    ]


def _call_method(name):
    return lambda lib, x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


SUM_TYPES = ALL_TYPES + ("complex64",)
# floating types first: the in-place test takes the first two (bool/uint8 cumsum_ only differ in corner cases)
SCAN_TYPES = FLOATING + ("bool",) + INTEGRAL + ("complex64",)

OPS = [
    OpInfo("sum", _sum_samples, dtypes=SUM_TYPES, method="sum", supports_out=True),
    OpInfo("nansum", _nan_reduction_samples, dtypes=ALL_TYPES, method="nansum", supports_out=True),
    OpInfo("mean", _sum_samples, dtypes=FLOAT_AND_COMPLEX + ("int64",), method="mean", supports_out=True,
           error_inputs=_mean_errors),
    OpInfo("nanmean", _nan_reduction_samples, dtypes=FLOATING + ("int64",), method="nanmean", supports_out=True,
           error_inputs=lambda: [ErrorSample(Sample((np.ones((2, 3), np.int64),)), RuntimeError, "but got Long")]),
    OpInfo("amax", _amax_samples, dtypes=ALL_TYPES, method="amax", supports_out=True,
           error_inputs=_empty_reduction_errors("amax")),
    OpInfo("amin", _amax_samples, dtypes=ALL_TYPES, method="amin", supports_out=True,
           error_inputs=_empty_reduction_errors("amin")),
    OpInfo("max", _max_samples, dtypes=ALL_TYPES, method="max", error_inputs=_empty_reduction_errors("max")),
    OpInfo("min", _max_samples, dtypes=ALL_TYPES, method="min", error_inputs=_empty_reduction_errors("min")),
    OpInfo("argmax", _arg_samples, dtypes=ALL_TYPES, method="argmax", supports_out=True, grad=False),
    OpInfo("argmin", _arg_samples, dtypes=ALL_TYPES, method="argmin", supports_out=True, grad=False),
    OpInfo("aminmax", _aminmax_samples, dtypes=ALL_TYPES, method="aminmax",
           error_inputs=lambda: [ErrorSample(Sample((np.ones((0, 3), np.float32),)), RuntimeError, "no identity"),
                                 ErrorSample(Sample((np.ones((2, 0), np.float32),), {"dim": 1}), IndexError,
                                             "non-zero size")]),
    OpInfo("all", reduction_samples, dtypes=ALL_TYPES, method="all", supports_out=True, grad=False),
    OpInfo("any", reduction_samples, dtypes=ALL_TYPES, method="any", supports_out=True, grad=False),
    OpInfo("count_nonzero", lambda d, rng: [s for s in reduction_samples(d, rng) if "keepdim" not in s.kwargs],
           dtypes=ALL_TYPES, method="count_nonzero", grad=False),
    OpInfo("prod", _prod_samples, dtypes=SUM_TYPES, method="prod", supports_out=True, max_samples=14),
    OpInfo("var", _variance_samples, dtypes=FLOAT_AND_COMPLEX + ("int64",), method="var", supports_out=True,
           error_inputs=_variance_errors("var")),
    OpInfo("std", _variance_samples, dtypes=FLOAT_AND_COMPLEX + ("int64",), method="std", supports_out=True,
           error_inputs=_variance_errors("std")),
    OpInfo("var_mean", _variance_samples, dtypes=FLOAT_AND_COMPLEX, error_inputs=_variance_errors("var_mean")),
    OpInfo("std_mean", _variance_samples, dtypes=FLOAT_AND_COMPLEX, error_inputs=_variance_errors("std_mean")),
    OpInfo("logsumexp", _logsumexp_samples, dtypes=FLOATING + ("int64", "bool"), method="logsumexp",
           supports_out=True),
    # torch.norm lives in ember/_ops/norms.py (linalg); these are its vector-norm cases, the reductions' way
    OpInfo("norm (vector)", _norm_samples, call=lambda lib, *args, **kwargs: lib.norm(*args, **kwargs),
           dtypes=FLOATING + ("complex64",), method="norm", error_inputs=_norm_errors),
    OpInfo("cumsum", _cumsum_samples, dtypes=SCAN_TYPES, method="cumsum", inplace="cumsum_", supports_out=True),
    OpInfo("cumprod", _cumprod_samples, dtypes=SCAN_TYPES, method="cumprod", inplace="cumprod_",
           supports_out=True),
    OpInfo("cummax", _cumulative_extreme_samples, dtypes=ALL_TYPES, method="cummax"),
    OpInfo("cummin", _cumulative_extreme_samples, dtypes=ALL_TYPES, method="cummin"),
    OpInfo("logcumsumexp", _logcumsumexp_samples, dtypes=FLOAT_AND_COMPLEX + ("int64",), method="logcumsumexp",
           supports_out=True),
    OpInfo("diff", _diff_samples, dtypes=ALL_TYPES, method="diff", supports_out=True, error_inputs=_diff_errors),
]
