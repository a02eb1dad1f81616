"""OpInfos for pointwise ops: arithmetic, math functions, comparisons, logical, bitwise and ternary ops.

Every entry calls the op through `_caller`, which also runs the in-place
variant when an error sample asks for it (kwarg `variant="inplace"`), so error
parity covers in-place casting rules.  Samples respect each op's domain, add
edge values (±inf, nan, ±0) for floating types, and add cross-dtype operands
(Python scalars, 0-d tensors of another dtype) so type promotion is compared
against torch's for every dtype.
"""

from __future__ import annotations

import numpy as np

from ..core import (
    ALL_TYPES,
    ALL_WITH_COMPLEX,
    COMPLEX,
    FLOAT_AND_COMPLEX,
    FLOATING,
    INTEGRAL,
    ErrorSample,
    OpInfo,
    Sample,
    binary_samples,
    make_array,
    unary_samples,
)

NO_COMPLEX = ALL_TYPES
NO_BOOL = INTEGRAL + FLOATING
NO_BOOL_WITH_COMPLEX = INTEGRAL + FLOAT_AND_COMPLEX
INTEGRAL_AND_BOOL = ("bool",) + INTEGRAL
# edge= value for ops that read a NaN's sign bit: torch rounds NaN to bfloat16 as a negative NaN,
# NumPy (ml_dtypes) as a positive one, so the inputs would differ before the op runs.
NO_NAN = "no nan"
EDGE = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0])


def _ordered(dtypes) -> tuple:
    """float32 first (meta, method and out= tests use the first dtype), then int64, then the rest."""
    first = [d for d in ("float32", "int64") if d in dtypes]
    return tuple(first + [d for d in dtypes if d not in first])


def _caller(name):
    """lib.<name>(...), or the in-place method when a sample says variant="inplace"."""

    def run(lib, *args, variant=None, **kwargs):
        if variant == "inplace":
            return getattr(args[0], name + "_")(*args[1:], **kwargs)
        return getattr(lib, name)(*args, **kwargs)

    return run


def _is_inexact(dtype: str) -> bool:
    return dtype in FLOATING or dtype in COMPLEX


def _edge_array(dtype: str, nan: bool = True) -> np.ndarray:
    """±inf, nan, ±0 and small values; complex gets signed zeros and finite values only (torch's complex
    inf/nan arithmetic follows C++ std::complex corner cases that are not part of the contract)."""
    if dtype in COMPLEX:
        finite = EDGE[3:]
        values = finite + 1j * np.roll(finite, 3)
        return values.astype(_numpy_type(dtype))
    values = EDGE if nan else EDGE[~np.isnan(EDGE)]
    return values.astype(_numpy_type(dtype))


def _bounds(dtype: str, low, high):
    """Integer sample ranges that cover a float domain [low, high) (make_array truncates bounds to ints)."""
    if dtype in INTEGRAL and low is not None and high is not None:
        import math

        low, high = math.floor(low), math.ceil(high)
        if dtype == "uint8":
            low = max(low, 0)
        high = max(high, low + 1)
    return low, high


def _numpy_type(dtype: str):
    from ..core import NUMPY_TYPES

    return NUMPY_TYPES[dtype]


def _array(values, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return np.asarray(values, np.float32).astype(_numpy_type(dtype))
    return np.asarray(values).astype(_numpy_type(dtype))


# ---------------------------------------------------------------- unary


def _unary_sampler(low=None, high=None, exclude_zero=False, edge=True, kwargs=None):
    def samples(dtype, rng):
        low_, high_ = _bounds(dtype, low, high)
        result = unary_samples(dtype, rng, low_, high_, exclude_zero)
        if edge and _is_inexact(dtype):
            result.append(Sample((_edge_array(dtype, edge != NO_NAN),), name="edge values", grad=False))
        if kwargs:
            for each in kwargs:
                result.append(Sample((make_array((3, 4), dtype, rng, low_, high_, exclude_zero),), dict(each),
                                     name=f"kwargs {each}"))
        return result

    return samples


def unary(name, dtypes=ALL_WITH_COMPLEX, *, low=None, high=None, exclude_zero=False, edge=True, method=True,
          inplace=True, out=True, kwargs=None, **options):
    """An OpInfo for a one-operand op with the usual shapes, plus edge values for floating types."""
    return OpInfo(name, _unary_sampler(low, high, exclude_zero, edge, kwargs), call=_caller(name),
                  dtypes=_ordered(dtypes), method=name if method else None, inplace=name + "_" if inplace else None,
                  supports_out=out, **options)


# ---------------------------------------------------------------- binary


def _promotion_samples(dtype, rng, low, high, exclude_zero, scalars, scalar_lhs):
    """Operands of another dtype: Python int/float scalars, a float64 0-d tensor, an int32 tensor."""
    base = make_array((3, 4), dtype, rng, low, high)
    int_scalar = 3 if exclude_zero or low is not None and low > 0 else -1
    samples = [
        Sample((base, int_scalar), name="int scalar"),
        Sample((base, 1.5), name="float scalar"),
    ] if scalars else []
    samples += [
        Sample((make_array((2, 3), dtype, rng, low, high),
                make_array((), "float64", rng, low, high, exclude_zero)), name="float64 0-d"),
        Sample((make_array((4,), dtype, rng, low, high), make_array((4,), "int32", rng, low, high, exclude_zero)),
               name="int32 tensor"),
    ]
    if scalar_lhs:
        samples.append(Sample((2, make_array((3,), dtype, rng, low, high, exclude_zero)), name="scalar lhs",
                              grad=scalar_lhs != "no grad"))
    return samples


def _binary_sampler(low=None, high=None, exclude_zero=False, edge=True, promotion=True, scalars=True,
                    scalar_lhs=False, kwargs=None, extra=None):
    def samples(dtype, rng):
        result = binary_samples(dtype, rng, low, high, exclude_zero, scalars=scalars)
        if kwargs:
            for each in kwargs:
                result.append(Sample((make_array((3, 4), dtype, rng, low, high),
                                      make_array((4,), dtype, rng, low, high, exclude_zero)), dict(each),
                                     name=f"kwargs {each}"))
        if edge and _is_inexact(dtype):
            values = _edge_array(dtype, edge != NO_NAN)
            result.append(Sample((values[:, None], values[None, :]), name="edge values", grad=False))
        if promotion:
            scalar_first = scalar_lhs if scalars else False
            result.extend(_promotion_samples(dtype, rng, low, high, exclude_zero, scalars, scalar_first))
        if extra is not None:
            result.extend(extra(dtype, rng))
        return result

    return samples


def binary(name, dtypes=ALL_WITH_COMPLEX, *, low=None, high=None, exclude_zero=False, edge=True, promotion=True,
           scalars=True, scalar_lhs=False, kwargs=None, extra=None, method=True, inplace=True, out=True,
           **options):
    """An OpInfo for a two-operand op: broadcasting, 0-d, empty, scalars, promotion and edge samples."""
    sampler = _binary_sampler(low, high, exclude_zero, edge, promotion, scalars, scalar_lhs, kwargs, extra)
    options.setdefault("max_samples", 20)
    call = options.pop("call", None) or _caller(name)
    return OpInfo(name, sampler, call=call, dtypes=_ordered(dtypes), method=name if method else None,
                  inplace=name + "_" if inplace else None, supports_out=out, **options)


# ---------------------------------------------------------------- error samples


def _f32(*shape):
    return np.ones(shape, np.float32)


def _i64(*shape):
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)


def _broadcast_error():
    return ErrorSample(Sample((_f32(2, 3), _f32(4))), RuntimeError,
                       r"size of tensor a \(3\) must match the size of tensor b \(4\)")


def _inplace_errors(other=1.5):
    return [
        ErrorSample(Sample((_i64(3), other), {"variant": "inplace"}), RuntimeError,
                    "result type Float can't be cast to the desired output type Long"),
        ErrorSample(Sample((_f32(3), _f32(2, 3)), {"variant": "inplace"}), RuntimeError,
                    r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"),
    ]


def _arithmetic_errors(name):
    def errors():
        result = [_broadcast_error()] + _inplace_errors()
        if name in ("add", "sub"):
            result.append(ErrorSample(Sample((_i64(3), _i64(3)), {"alpha": 0.5}), RuntimeError,
                                      "argument alpha must not be a floating point number"))
        if name == "sub":
            result.append(ErrorSample(Sample((np.ones(3, bool), np.ones(3, bool))), RuntimeError,
                                      "Subtraction, the `-` operator, with two bool tensors is not supported"))
        return result

    return errors


def _zero_division_errors(kwargs=None):
    def errors():
        zero = np.array([1, 0, 2], np.int64)
        return [
            ErrorSample(Sample((_i64(3), zero), dict(kwargs or {})), RuntimeError, "ZeroDivisionError"),
            ErrorSample(Sample((_i64(3), 0), dict(kwargs or {})), RuntimeError, "ZeroDivisionError"),
            _broadcast_error(),
        ]

    return errors


def _not_implemented(name, dtype_label="Float", arity=2):
    def errors():
        args = (_f32(3),) * arity
        return [ErrorSample(Sample(args), NotImplementedError, f'"{name}_cpu" not implemented for \'{dtype_label}\'')]

    return errors


def _div_errors():
    return [
        _broadcast_error(),
        ErrorSample(Sample((_f32(3), _f32(3)), {"rounding_mode": "bad"}), RuntimeError,
                    "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'bad'"),
        ErrorSample(Sample((_i64(3), 2), {"variant": "inplace"}), RuntimeError,
                    "result type Float can't be cast to the desired output type Long"),
    ]


def _pow_errors():
    return [
        ErrorSample(Sample((_i64(3), -1)), RuntimeError, "Integers to negative integer powers are not allowed."),
        _broadcast_error(),
        *_inplace_errors(0.5),
    ]


def _neg_errors():
    return [ErrorSample(Sample((np.ones(3, bool),)), RuntimeError,
                        "Negation, the `-` operator, on a bool tensor is not supported")]


def _float_only_inplace_error():
    return [ErrorSample(Sample((_i64(3),), {"variant": "inplace"}), RuntimeError,
                        "result type Float can't be cast to the desired output type Long")]


# ---------------------------------------------------------------- special samplers


def _pow_extra(dtype, rng):
    if _is_inexact(dtype):
        base = make_array((3, 4), dtype, rng, 0.5, 3)
        return [Sample((base, 0.5), name="sqrt exponent"), Sample((base, -2), name="negative int exponent"),
                Sample((base, 0), name="zero exponent", grad=False),
                Sample((2.5, make_array((3,), dtype, rng, -2, 2)), name="float scalar base"),
                Sample((make_array((2, 1), dtype, rng, 0.5, 3), make_array((3,), "int64", rng, 0, 3)),
                       name="int tensor exponent")]
    if dtype == "bool":
        return []
    return [Sample((make_array((3, 4), dtype, rng, 0, 4), 0.5), name="float exponent"),
            Sample((make_array((3, 4), dtype, rng, 0, 4), 2), name="int exponent"),
            Sample((make_array((3,), dtype, rng, -3, 4), make_array((), "float64", rng, 0.5, 2)), name="float 0-d")]


def _maximum_extra(dtype, rng):
    values = make_array((5,), dtype, rng)
    return [Sample((values, values.copy()), name="ties")]


def _where_samples(dtype, rng):
    def condition(shape):
        return np.asarray(rng.random(shape) < 0.5)

    return [
        Sample((condition((3, 4)), make_array((3, 4), dtype, rng), make_array((3, 4), dtype, rng))),
        Sample((condition((3, 1)), make_array((4,), dtype, rng), make_array((2, 1, 1), dtype, rng)),
               name="broadcast"),
        Sample((condition(()), make_array((), dtype, rng), make_array((), dtype, rng)), name="0-d"),
        Sample((condition((0, 3)), make_array((0, 3), dtype, rng), make_array((3,), dtype, rng)), name="empty"),
        Sample((condition((4, 3)), make_array((4, 3), dtype, rng), make_array((4, 3), dtype, rng)),
               noncontiguous=True, name="noncontiguous"),
        Sample((condition((3, 4)), make_array((3, 4), dtype, rng), 0.0), name="float scalar other"),
        Sample((condition((3, 4)), 1, make_array((3, 4), dtype, rng)), name="int scalar input"),
        Sample((condition((3,)), make_array((3,), dtype, rng), make_array((3,), "float64", rng)),
               name="mixed dtypes"),
        Sample((condition((3,)), 1.5, 2), name="two scalars", grad=False),
    ]


def _where_errors():
    return [
        ErrorSample(Sample((_i64(3), _f32(3), _f32(3))), RuntimeError,
                    "where expected condition to be a boolean tensor, but got a tensor with dtype Long"),
        ErrorSample(Sample((np.ones(3, bool), _f32(2), _f32(3))), RuntimeError, "must match the size"),
    ]


def _lerp_samples(dtype, rng):
    def array(shape, low=None, high=None):
        return make_array(shape, dtype, rng, low, high)

    return [
        Sample((array((3, 4)), array((3, 4)), 0.3), name="scalar weight"),
        Sample((array((3, 4)), array((3, 4)), array((3, 4), 0, 1)), name="tensor weight"),
        Sample((array((3, 4)), array((4,)), array((3, 1), 0, 1)), name="broadcast"),
        Sample((array(()), array(()), 0.75), name="0-d"),
        Sample((array((0, 3)), array((0, 3)), 0.5), name="empty"),
        Sample((array((4, 3)), array((4, 3)), array((4, 3), 0, 1)), noncontiguous=True, name="noncontiguous"),
        Sample((array((5,)), array((5,)), 1.5), name="weight > 1"),
        Sample((array((5,)), array((5,)), array((5,), 0.5, 1)), name="weight >= 0.5"),
    ]


def _lerp_errors():
    return [
        ErrorSample(Sample((_f32(3), np.ones(3, np.float64), 0.5)), RuntimeError,
                    "expected dtype float for `end` but got dtype double"),
        ErrorSample(Sample((_f32(3), _f32(3), np.ones(3, np.int64))), RuntimeError,
                    "expected dtype float for `weight` but got dtype long int"),
    ]


def _addc_samples(division):
    def samples(dtype, rng):
        def array(shape):
            return make_array(shape, dtype, rng, exclude_zero=division)

        value = 0.5 if _is_inexact(dtype) else 2
        return [
            Sample((array((3, 4)), array((3, 4)), array((3, 4)))),
            Sample((array((3, 4)), array((4,)), array((3, 1))), {"value": value}, name="broadcast, value"),
            Sample((array(()), array(()), array(())), name="0-d"),
            Sample((array((0, 3)), array((3,)), array((0, 1))), name="empty"),
            Sample((array((4, 3)), array((4, 3)), array((4, 3))), noncontiguous=True, name="noncontiguous"),
            Sample((array((3,)), array((3,)), array((3,))), {"value": -1}, name="negative value"),
        ]

    return samples


def _addcdiv_errors():
    return [ErrorSample(Sample((_i64(3), _i64(3), _i64(3))), RuntimeError,
                        "Integer division with addcdiv is no longer supported")]


def _clamp_samples(dtype, rng):
    def array(shape, low=None, high=None):
        return make_array(shape, dtype, rng, low, high)

    low, high = (2, 6) if dtype in INTEGRAL else (-3.0, 3.0)
    if dtype == "bool":
        low, high = False, True
    samples = [
        Sample((array((3, 4)),), {"min": low, "max": high}, name="scalar bounds"),
        Sample((array((3, 4)),), {"min": low}, name="min only"),
        Sample((array((3, 4)),), {"max": high}, name="max only"),
        Sample((array(()),), {"min": low, "max": high}, name="0-d"),
        Sample((array((0, 2)),), {"min": low}, name="empty"),
        Sample((array((4, 3)),), {"min": low, "max": high}, noncontiguous=True, name="noncontiguous"),
        Sample((array((3, 4)), array((3, 4), -5, 0), array((4,), 0, 5)), name="tensor bounds"),
        Sample((array((3, 4)), array((3, 1), -5, 0)), name="tensor min only"),
        Sample((array((3, 4)),), {"min": high, "max": low}, name="min > max"),
        Sample((array((3, 4)),), {"min": 1.5}, name="float bound"),
    ]
    if _is_inexact(dtype):
        samples.append(Sample((_edge_array(dtype),), {"min": -1.0, "max": 2.0}, name="edge values", grad=False))
        samples.append(Sample((array((3,)),), {"min": float("nan")}, name="nan bound", grad=False))
    return samples


def _clamp_bound_samples(keyword):
    def samples(dtype, rng):
        bound = 2 if dtype in INTEGRAL else 0.5
        return [
            Sample((make_array((3, 4), dtype, rng), bound)),
            Sample((make_array((3, 4), dtype, rng), make_array((4,), dtype, rng)), name="tensor bound"),
            Sample((make_array((), dtype, rng), bound), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), bound), noncontiguous=True, name="noncontiguous"),
        ]

    return samples


def _clamp_errors():
    return [
        ErrorSample(Sample((_f32(3),)), RuntimeError, "At least one of 'min' or 'max' must not be None"),
        ErrorSample(Sample((_i64(3),), {"min": 0.5, "variant": "inplace"}), RuntimeError,
                    "result type Float can't be cast to the desired output type Long"),
    ]


def _shift_samples(dtype, rng):
    values = make_array((3, 4), dtype, rng)
    amounts = make_array((3, 4), dtype, rng, 0, 8)
    return [
        Sample((values, amounts)),
        Sample((make_array((3, 4), dtype, rng), make_array((4,), dtype, rng, 0, 8)), name="broadcast"),
        Sample((make_array((), dtype, rng), make_array((3,), dtype, rng, 0, 4)), name="0-d"),
        Sample((make_array((0, 2), dtype, rng), make_array((2,), dtype, rng, 0, 4)), name="empty"),
        Sample((make_array((4, 3), dtype, rng), make_array((4, 3), dtype, rng, 0, 8)), noncontiguous=True,
               name="noncontiguous"),
        Sample((make_array((3,), dtype, rng), 2), name="scalar shift"),
        Sample((3, make_array((3,), dtype, rng, 0, 4)), name="scalar lhs"),
    ]


def _round_samples(dtype, rng):
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1.25, -2.675, 123.456, 0.0])
    return [Sample((_array(values, dtype),), {"decimals": 1}, name="decimals=1", grad=False),
            Sample((make_array((3, 4), dtype, rng),), {"decimals": 2}, name="decimals=2"),
            Sample((make_array((3, 4), dtype, rng, -500, 500),), {"decimals": -1}, name="decimals=-1")]


def _half_values_sampler(dtype, rng):
    samples = _unary_sampler()(dtype, rng)
    if _is_inexact(dtype):
        values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1e20])
        samples.append(Sample((_array(values, dtype),), name="halves", grad=False))
    return samples


def _nan_to_num_samples(dtype, rng):
    samples = _unary_sampler()(dtype, rng)
    if _is_inexact(dtype):
        edges = _edge_array(dtype)
        samples.append(Sample((edges,), {"nan": 1.0, "posinf": 100.0, "neginf": -100.0}, name="replacements",
                              grad=False))
        samples.append(Sample((edges,), {"posinf": 7.0}, name="posinf only", grad=False))
    return samples


def _logit_samples(dtype, rng):
    samples = _unary_sampler(0.05, 0.95)(dtype, rng)
    samples.append(Sample((make_array((3, 4), dtype, rng, 0, 1),), {"eps": 0.2}, name="eps"))
    samples.append(Sample((make_array((6,), dtype, rng, *_bounds(dtype, 0.05, 0.95)),), {"eps": 0.0}, name="eps=0",
                          grad=False))
    return samples


def _heaviside_errors():
    return [ErrorSample(Sample((_f32(3), _i64(3))), RuntimeError,
                        "heaviside is not yet implemented for tensors with different dtypes.")]


def _gcd_extra(dtype, rng):
    if dtype == "uint8":
        return []
    values = np.array([-4, 6, 0, -9, 12, 0], np.int64).astype(_numpy_type(dtype))
    others = np.array([6, -4, 0, 6, -8, 5], np.int64).astype(_numpy_type(dtype))
    return [Sample((values, others), name="signs and zeros")]


def _float_power_extra(dtype, rng):
    if dtype == "bool":
        return []
    return [Sample((make_array((3, 4), dtype, rng, 0.5, 3), 2), name="int exponent"),
            Sample((2, make_array((3,), dtype, rng, -2, 2)), name="scalar base")]


def _rounding_modes():
    return [{"rounding_mode": "trunc"}, {"rounding_mode": "floor"}, {"rounding_mode": None}]


def _division_extra(dtype, rng):
    if dtype in INTEGRAL:
        numerator = np.array([7, -7, 7, -7, 0, 5], np.int64).astype(_numpy_type(dtype), casting="unsafe")
        denominator = np.array([2, 2, -2, -2, 3, 5], np.int64).astype(_numpy_type(dtype), casting="unsafe")
        return [Sample((numerator, denominator), name="signs", grad=False)]
    if dtype in FLOATING:
        numerator = _array([7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, -1.0, 5.5], dtype)
        denominator = _array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, -0.5], dtype)
        return [Sample((numerator, denominator), name="signs", grad=False)]
    return []


def _kw(name, **kwargs):
    """An OpInfo name for a keyword variant ("div_trunc"), calling `name` with `kwargs` always passed."""
    base = _caller(name)

    def run(lib, *args, **more):
        return base(lib, *args, **{**kwargs, **more})

    return run


# ---------------------------------------------------------------- the table

FLOAT_UNARY = [
    # name, low, high, dtypes, options
    ("exp", -3, 3, ALL_WITH_COMPLEX, {}),
    ("exp2", -3, 3, ALL_WITH_COMPLEX, {}),
    ("expm1", -3, 3, ALL_WITH_COMPLEX, {}),
    ("log", 0.1, 9, ALL_WITH_COMPLEX, {}),
    ("log2", 0.1, 9, ALL_WITH_COMPLEX, {}),
    ("log10", 0.1, 9, ALL_WITH_COMPLEX, {}),
    ("log1p", -0.9, 9, ALL_WITH_COMPLEX, {}),
    ("sin", None, None, ALL_WITH_COMPLEX, {}),
    ("cos", None, None, ALL_WITH_COMPLEX, {}),
    ("tan", -1.4, 1.4, ALL_WITH_COMPLEX, {}),
    ("asin", -0.95, 0.95, ALL_WITH_COMPLEX, {}),
    ("acos", -0.95, 0.95, ALL_WITH_COMPLEX, {}),
    ("atan", None, None, ALL_WITH_COMPLEX, {}),
    ("sinh", -3, 3, ALL_WITH_COMPLEX, {}),
    ("cosh", -3, 3, ALL_WITH_COMPLEX, {}),
    ("tanh", -3, 3, ALL_WITH_COMPLEX, {}),
    ("asinh", None, None, ALL_WITH_COMPLEX, {}),
    ("acosh", 1.05, 9, ALL_WITH_COMPLEX, {}),
    ("atanh", -0.95, 0.95, ALL_WITH_COMPLEX, {}),
    ("sqrt", 0.1, 9, ALL_WITH_COMPLEX, {}),
    ("rsqrt", 0.1, 9, ALL_WITH_COMPLEX, {}),
    ("sigmoid", None, None, ALL_WITH_COMPLEX, {}),
    ("erf", -3, 3, NO_COMPLEX, {}),
    ("erfc", -3, 3, NO_COMPLEX, {}),
    ("erfinv", -0.95, 0.95, NO_COMPLEX, {}),
    ("deg2rad", None, None, NO_COMPLEX, {}),
    ("rad2deg", None, None, NO_COMPLEX, {}),
    ("sinc", None, None, ALL_WITH_COMPLEX, {}),
]

OPS = [
    unary(name, dtypes, low=low, high=high,
          error_inputs=_float_only_inplace_error, **options)
    for name, low, high, dtypes, options in FLOAT_UNARY
]

OPS += [
    unary("reciprocal", exclude_zero=True, error_inputs=_float_only_inplace_error),
    unary("neg", NO_BOOL_WITH_COMPLEX, error_inputs=_neg_errors),
    unary("negative", NO_BOOL_WITH_COMPLEX),
    unary("abs", NO_BOOL_WITH_COMPLEX, exclude_zero=True),
    unary("absolute", NO_BOOL_WITH_COMPLEX, exclude_zero=True),
    unary("square", ALL_WITH_COMPLEX),
    unary("sign", NO_COMPLEX, exclude_zero=True),
    unary("sgn", ALL_WITH_COMPLEX, exclude_zero=True),
    unary("floor", NO_BOOL),
    unary("ceil", NO_BOOL),
    unary("trunc", NO_BOOL),
    unary("fix", NO_BOOL),
    OpInfo("round", _half_values_sampler, call=_caller("round"), dtypes=_ordered(NO_BOOL), method="round",
           inplace="round_", supports_out=True),
    OpInfo("round_decimals", _round_samples, call=_caller("round"), dtypes=_ordered(FLOATING), method="round",
           inplace="round_", supports_out=True),
    unary("frac", FLOATING),
    unary("positive", NO_BOOL_WITH_COMPLEX, inplace=False, out=False),
    unary("conj", ALL_WITH_COMPLEX, inplace=False, out=False, grad=True),
    OpInfo("logit", _logit_samples, call=_caller("logit"), dtypes=_ordered(NO_COMPLEX), method="logit",
           inplace="logit_", supports_out=True),
    OpInfo("nan_to_num", _nan_to_num_samples, call=_caller("nan_to_num"), dtypes=_ordered(ALL_WITH_COMPLEX),
           method="nan_to_num", inplace="nan_to_num_", supports_out=True),
    unary("logical_not", ALL_WITH_COMPLEX, grad=False),
    unary("bitwise_not", INTEGRAL_AND_BOOL, grad=False, error_inputs=_not_implemented("bitwise_not", arity=1)),
]

PREDICATES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "signbit"]
OPS += [
    unary(name, ALL_WITH_COMPLEX if name in ("isnan", "isinf", "isfinite", "isreal") else NO_COMPLEX,
          inplace=False, out=name in ("isposinf", "isneginf", "signbit"), grad=False,
          edge=NO_NAN if name == "signbit" else True)
    for name in PREDICATES
]

OPS += [
    binary("add", kwargs=[{"alpha": 2}], scalar_lhs=True, error_inputs=_arithmetic_errors("add")),
    binary("sub", NO_BOOL_WITH_COMPLEX, kwargs=[{"alpha": 2}], scalar_lhs=True,
           error_inputs=_arithmetic_errors("sub")),
    binary("subtract", NO_BOOL_WITH_COMPLEX),
    binary("mul", scalar_lhs=True, error_inputs=_arithmetic_errors("mul")),
    binary("multiply", ALL_WITH_COMPLEX),
    binary("div", exclude_zero=True, scalar_lhs=True, extra=_division_extra, error_inputs=_div_errors),
    binary("divide", exclude_zero=True),
    binary("true_divide", exclude_zero=True, scalar_lhs=True),
    binary("div_trunc", NO_BOOL, exclude_zero=True, extra=_division_extra, call=_kw("div", rounding_mode="trunc"),
           method=False, inplace=False, error_inputs=_zero_division_errors({"rounding_mode": "trunc"})),
    binary("div_floor", NO_BOOL, exclude_zero=True, extra=_division_extra, call=_kw("div", rounding_mode="floor"),
           method=False, inplace=False, error_inputs=_zero_division_errors({"rounding_mode": "floor"})),
    binary("floor_divide", NO_BOOL, exclude_zero=True, scalar_lhs=True, extra=_division_extra, grad=False,
           error_inputs=_zero_division_errors()),
    binary("remainder", NO_BOOL, exclude_zero=True, scalar_lhs="no grad", extra=_division_extra,
           error_inputs=_zero_division_errors()),
    binary("fmod", NO_BOOL, exclude_zero=True, extra=_division_extra, error_inputs=_zero_division_errors()),
    binary("pow", NO_BOOL_WITH_COMPLEX, low=0.5, high=3, scalar_lhs=True, extra=_pow_extra,
           error_inputs=_pow_errors),
    binary("float_power", ALL_WITH_COMPLEX, low=0.5, high=3, scalar_lhs=True, extra=_float_power_extra),
    binary("maximum", NO_COMPLEX, scalars=False, extra=_maximum_extra, inplace=False,
           error_inputs=lambda: [_broadcast_error()]),
    binary("minimum", NO_COMPLEX, scalars=False, extra=_maximum_extra, inplace=False),
    binary("fmax", NO_COMPLEX, scalars=False, inplace=False),
    binary("fmin", NO_COMPLEX, scalars=False, inplace=False),
    binary("hypot", FLOATING, scalars=False),
    binary("atan2", NO_COMPLEX, scalars=False),
    binary("arctan2", NO_COMPLEX, scalars=False),
    binary("copysign", NO_COMPLEX, exclude_zero=True, edge=NO_NAN),
    binary("xlogy", NO_COMPLEX, low=0.1, high=5, scalar_lhs=True),
    binary("logaddexp", FLOAT_AND_COMPLEX, scalars=False, inplace=False, low=-5, high=5),
    binary("logaddexp2", FLOATING, scalars=False, inplace=False, low=-5, high=5),
    binary("heaviside", NO_COMPLEX, scalars=False, promotion=False, grad=False, error_inputs=_heaviside_errors),
    binary("gcd", INTEGRAL, scalars=False, extra=_gcd_extra, grad=False,
           error_inputs=_not_implemented("gcd")),
    binary("lcm", INTEGRAL, scalars=False, extra=_gcd_extra, grad=False),
]

COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge"]
OPS += [
    binary(name, ALL_WITH_COMPLEX if name in ("eq", "ne") else NO_COMPLEX, grad=False,
           error_inputs=lambda: [_broadcast_error()])
    for name in COMPARISONS
]
OPS += [binary(name, ALL_WITH_COMPLEX, scalars=False, grad=False) for name in
        ("logical_and", "logical_or", "logical_xor")]
OPS += [
    binary(name, INTEGRAL_AND_BOOL, grad=False, scalar_lhs=True, error_inputs=_not_implemented(name))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor")
]
OPS += [
    OpInfo(name, _shift_samples, call=_caller(name), dtypes=_ordered(INTEGRAL), method=name, inplace=name + "_",
           supports_out=True, grad=False)
    for name in ("bitwise_left_shift", "bitwise_right_shift")
]

OPS += [
    OpInfo("where", _where_samples, call=_caller("where"), dtypes=_ordered(ALL_WITH_COMPLEX),
           supports_out=True, error_inputs=_where_errors),
    OpInfo("lerp", _lerp_samples, call=_caller("lerp"), dtypes=_ordered(FLOAT_AND_COMPLEX), method="lerp",
           inplace="lerp_", supports_out=True, error_inputs=_lerp_errors),
    OpInfo("addcmul", _addc_samples(False), call=_caller("addcmul"), dtypes=_ordered(NO_BOOL_WITH_COMPLEX),
           method="addcmul", inplace="addcmul_", supports_out=True),
    OpInfo("addcdiv", _addc_samples(True), call=_caller("addcdiv"), dtypes=_ordered(FLOAT_AND_COMPLEX),
           method="addcdiv", inplace="addcdiv_", supports_out=True, error_inputs=_addcdiv_errors),
    OpInfo("clamp", _clamp_samples, call=_caller("clamp"), dtypes=_ordered(NO_COMPLEX), method="clamp",
           inplace="clamp_", supports_out=True, error_inputs=_clamp_errors),
    OpInfo("clip", _clamp_samples, call=_caller("clip"), dtypes=_ordered(NO_COMPLEX), method="clip",
           inplace="clip_", supports_out=True),
    OpInfo("clamp_min", _clamp_bound_samples("min"), call=_caller("clamp_min"), dtypes=_ordered(NO_BOOL),
           method="clamp_min", inplace="clamp_min_"),
    OpInfo("clamp_max", _clamp_bound_samples("max"), call=_caller("clamp_max"), dtypes=_ordered(NO_BOOL),
           method="clamp_max", inplace="clamp_max_"),
]
