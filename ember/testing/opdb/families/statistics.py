"""OpInfos for statistics, distances, numerical calculus and matrix functions: quantile, cov, corrcoef, dist,
cdist, pdist, renorm, trapezoid, cumulative_trapezoid, gradient, ldexp, frexp, nextafter, matrix_exp and LU.

Inputs of value-selecting ops (quantile, distances with p = inf) have no ties, so their gradients are
unambiguous; LU inputs are well conditioned.  histogram lives in tests/test_statistics.py (its bins are data).
"""

from __future__ import annotations

import numpy as np

from ..core import COMPLEX, FLOATING, ErrorSample, OpInfo, Sample, make_array

NAN = float("nan")
INF = float("inf")
REAL = ("float32", "float64")
LINALG_TYPES = REAL + COMPLEX
LOOSE = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}


def _distinct(shape, dtype, rng):
    """Values without ties: a shuffled range, scaled (exact in every float type)."""
    count = int(np.prod(shape)) if shape else 1
    values = (rng.permutation(count) - count // 2) * 0.5 + 0.25
    return np.asarray(values.reshape(shape)).astype(make_array((), dtype, rng).dtype)


def _error(args, error, match, **kwargs):
    return ErrorSample(Sample(args, kwargs), error, match)


def _f32(*shape):
    return np.ones(shape, np.float32)


# ---------------------------------------------------------------- quantile


def _quantile_samples(dtype, rng):
    def q(values):
        return np.asarray(values).astype(make_array((), dtype, rng).dtype)

    samples = [
        Sample((_distinct((7,), dtype, rng), 0.3)),
        Sample((_distinct((3, 5), dtype, rng), q([0.1, 0.55, 0.95])), {"dim": 1}),
        Sample((_distinct((2, 3, 4), dtype, rng), 0.75), {"dim": 0, "keepdim": True, "interpolation": "lower"}),
        Sample((_distinct((3, 5), dtype, rng), q([0.2, 0.9])), {"dim": -1, "interpolation": "higher"}),
        Sample((_distinct((4, 5), dtype, rng), q([0.3, 0.625])), {"dim": 0, "interpolation": "nearest"}),
        Sample((_distinct((4, 3), dtype, rng), 0.4), {"interpolation": "midpoint", "keepdim": True}),
        Sample((_distinct((4, 3), dtype, rng), q(0.5)), {"dim": 1}, noncontiguous=True),
        Sample((_distinct((), dtype, rng), 0.5), {"dim": 0}),
    ]
    if dtype in FLOATING:
        data = make_array((3, 4), dtype, rng)
        data[0, 1] = data[2, 0] = data[2, 3] = NAN
        data[1, :] = NAN
        samples.append(Sample((data, q([0.0, 0.5, 1.0])), {"dim": 1}, grad=False, name="nan"))
        samples.append(Sample((data, 0.5), grad=False, name="nan all"))
    return samples


def _quantile_errors(name):
    def errors():
        x = _f32(3, 4)
        return [
            _error((x, 1.5), RuntimeError, r"q must be in the range \[0, 1\] but got 1.5"),
            _error((x, np.array([0.5, 1.5], np.float32)), RuntimeError, r"q values must be in the range \[0, 1\]"),
            _error((x, np.array([0.5], np.float64)), RuntimeError, "q tensor must be same dtype as the input"),
            _error((x, np.full((1, 1), 0.5, np.float32)), RuntimeError, "q must be a scalar or 1D tensor"),
            _error((_f32(0), 0.5), RuntimeError, "input tensor must be non-empty"),
            _error((np.ones(3, np.int64), 0.5), RuntimeError, "input tensor must be either float or double dtype"),
            _error((x, 0.5), RuntimeError, "interpolation must be one of linear, lower, higher, midpoint or "
                   "nearest, but got cubic", interpolation="cubic"),
            _error((x, 0.5), IndexError, "Dimension out of range", dim=2),
        ]

    return errors


# ---------------------------------------------------------------- cov, corrcoef


def _cov_samples(dtype, rng):
    samples = [
        Sample((make_array((3, 5), dtype, rng),)),
        Sample((make_array((5,), dtype, rng),)),
        Sample((make_array((2, 6), dtype, rng),), {"correction": 0}),
        Sample((make_array((4, 3), dtype, rng),), noncontiguous=True),
        Sample((make_array((2, 4), dtype, rng), np.array([1, 2, 0, 3]))),
    ]
    if dtype not in COMPLEX:
        weights = rng.uniform(0.5, 2.0, size=4).astype(np.float64 if dtype == "float64" else np.float32)
        samples.append(Sample((make_array((2, 4), dtype, rng), None, weights), {"correction": 2}))
        samples.append(Sample((make_array((3, 4), dtype, rng), np.array([2, 1, 1, 3]), weights)))
    return samples


def _cov_errors():
    x = _f32(2, 4)
    return [
        _error((_f32(2, 3, 4),), RuntimeError, "expected input to have two or fewer dimensions but got an input "
               "with 3 dimensions"),
        _error((np.ones((2, 3), bool),), RuntimeError, "bool dtype is not supported for input"),
        _error((x,), RuntimeError, "expected fweights to have integral dtype but got fweights with Float dtype",
               fweights=_f32(4)),
        _error((x,), RuntimeError, "expected fweights to have the same numel as there are observations in the "
               "input but got 3 != 4", fweights=np.ones(3, np.int64)),
        _error((x,), RuntimeError, "fweights cannot be negative", fweights=-np.ones(4, np.int64)),
        _error((x,), RuntimeError, "expected aweights to have floating point dtype but got aweights with Long",
               aweights=np.ones(4, np.int64)),
        _error((x,), RuntimeError, "aweights cannot be negative", aweights=-_f32(4)),
        _error((x,), RuntimeError, "weights sum to zero, can't be normalized", aweights=np.zeros(4, np.float32)),
    ]


def _corrcoef_samples(dtype, rng):
    return [
        Sample((make_array((3, 5), dtype, rng),)),
        Sample((make_array((5,), dtype, rng),)),
        Sample((make_array((4, 3), dtype, rng),), noncontiguous=True),
    ]


# ---------------------------------------------------------------- distances


def _dist_samples(dtype, rng):
    pairs = [((3, 4), (3, 4), 2), ((3, 4), (4,), 1), ((2, 3), (2, 3), INF), ((5,), (5,), 3),
             ((2, 3), (2, 3), 0.5), ((), (3,), 2), ((4, 3), (4, 3), 2)]
    samples = [Sample((_distinct(a, dtype, rng), _distinct(b, dtype, rng) * 1.5), {"p": p} if p != 2 else {})
               for a, b, p in pairs]
    samples[-1].noncontiguous = True
    # torch's own backward of dist at p = 0 fails ("Expected a proper Tensor but got None")
    samples.append(Sample((_distinct((3,), dtype, rng), _distinct((3,), dtype, rng)), {"p": 0}, grad=False))
    return samples


def _cdist_samples(dtype, rng):
    def pair(a, b):
        return _distinct(a, dtype, rng), _distinct(b, dtype, rng) * 0.75

    return [
        Sample(pair((3, 2), (4, 2))),
        Sample(pair((2, 3, 2), (2, 4, 2)), {"p": 1.0}),
        Sample((make_array((2, 1, 3, 2), dtype, rng), make_array((3, 2, 2), dtype, rng)), {"p": INF}),
        Sample((np.array([[0.0, 1.0], [2.0, 2.0]]).astype(make_array((), dtype, rng).dtype),
                np.array([[1.0, 2.0], [1.0, 1.0]]).astype(make_array((), dtype, rng).dtype)), {"p": INF},
               name="ties"),
        Sample(pair((3, 2), (2, 2)), {"p": 3.0}),
        Sample(pair((3, 2), (2, 2)), {"p": 0.5}),
        Sample(pair((3, 2), (2, 2)), {"p": 0.0}),
        Sample(pair((3, 2), (4, 2)), {"compute_mode": "use_mm_for_euclid_dist"}),
        Sample(pair((3, 2), (4, 2)), {"compute_mode": "donot_use_mm_for_euclid_dist"}),
        Sample(pair((27, 2), (3, 2)), name="mm if necessary"),
        Sample(pair((0, 2), (3, 2))),
        Sample(pair((4, 3), (2, 3)), noncontiguous=True),
    ]


def _cdist_errors():
    return [
        _error((_f32(3), _f32(3, 3)), RuntimeError, "cdist only supports at least 2D tensors, X1 got: 1D"),
        _error((_f32(3, 4), _f32(3, 5)), RuntimeError, "X1 and X2 must have the same number of columns. X1: 4 X2: 5"),
        _error((np.ones((3, 4), np.int64), np.ones((3, 4), np.int64)), RuntimeError,
               "cdist only supports floating-point dtypes, X1 got: Long"),
        _error((_f32(3, 4), _f32(3, 4)), RuntimeError, "cdist only supports non-negative p values", p=-1.0),
        _error((_f32(3, 4), _f32(3, 4)), ValueError, "foo is not a valid value for compute_mode", compute_mode="foo"),
        _error((_f32(3, 4), np.ones((3, 4))), RuntimeError, "expected scalar type Float but found Double"),
    ]


def _pdist_samples(dtype, rng):
    return [
        Sample((_distinct((4, 3), dtype, rng),)),
        Sample((_distinct((5, 2), dtype, rng),), {"p": 1.0}),
        Sample((make_array((3, 3), dtype, rng),), {"p": INF}),
        Sample((np.array([[0.0, 1.0], [1.0, 2.0]]).astype(make_array((), dtype, rng).dtype),), {"p": INF},
               name="ties"),
        Sample((_distinct((3, 2), dtype, rng),), {"p": 3.0}),
        Sample((_distinct((4, 2), dtype, rng),), noncontiguous=True),
        Sample((_distinct((1, 3), dtype, rng),)),
    ]


def _pdist_errors():
    return [
        _error((_f32(3),), RuntimeError, "pdist only supports 2D tensors, got: 1D"),
        _error((np.ones((3, 4), np.int64),), RuntimeError, "pdist only supports floating-point dtypes"),
        _error((_f32(3, 4),), RuntimeError, "pdist only supports non-negative p values", p=-1.0),
    ]


def _renorm_samples(dtype, rng):
    return [
        Sample((make_array((3, 4), dtype, rng), 2, 0, 5.0)),
        Sample((make_array((3, 4), dtype, rng), 1, 1, 6.0)),
        Sample((make_array((2, 3, 4), dtype, rng), INF, -1, 4.0)),
        Sample((make_array((4, 3), dtype, rng), 2, 1, 1e9)),
        Sample((make_array((4, 3), dtype, rng), 2, 0, 3.0), noncontiguous=True),
    ]


def _renorm_errors():
    x = _f32(3, 4)
    return [
        _error((x, -1, 0, 1.0), RuntimeError, "renorm: non-positive-norm not supported"),
        _error((x, 2, 0, -1.0), RuntimeError, "renorm: expected maxnorm to be >= 0 but got -1"),
        _error((_f32(4), 2, 0, 1.0), RuntimeError, "renorm: input needs at least 2 dimensions, got 1 dimensions"),
        _error((x, 2, 5, 1.0), IndexError, "Dimension out of range"),
    ]


# ---------------------------------------------------------------- calculus


def _trapezoid_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng, -3, 3)

    return [
        Sample((array((5,)),)),
        Sample((array((3, 4)),), {"dx": 0.5}),
        Sample((array((3, 4)),), {"dim": 0, "dx": 2}),
        Sample((array((3, 4)), array((4,))),),
        Sample((array((2, 3, 4)), array((3, 4))), {"dim": 1}),
        Sample((array((3, 4)), array((3, 4))), {"dim": 0}),
        Sample((array((4, 3)),), {"dim": 0}, noncontiguous=True),
        Sample((array((0, 3)),), {"dim": 0}),
        Sample((array((1, 3)),), {"dim": 0}),
    ]


def _trapezoid_errors(name):
    def errors():
        return [
            _error((_f32(4), _f32(3)), RuntimeError, "There must be one `x` value for each sample point"),
            _error((np.ones(4, bool),), RuntimeError, "received a bool input for `y`, but bool is not supported"),
            _error((_f32(4),), RuntimeError, "we only support dx as a real number", dx=True),
        ]

    return errors


def _gradient_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng, -3, 3)

    coordinates = np.array([0.0, 0.5, 1.5, 1.75, 3.0])
    if dtype in ("float32", "float16", "bfloat16"):
        coordinates = coordinates.astype(np.float32)
    return [
        Sample((array((5,)),)),
        Sample((array((3, 4)),), {"spacing": 2.0}),
        Sample((array((3, 4)),), {"spacing": [0.5, 2.0], "edge_order": 2}),
        Sample((array((3, 5)), coordinates), {"dim": 1}),
        Sample((array((5, 3)), coordinates), {"dim": 0, "edge_order": 2}),
        Sample((array((2, 3, 4)),), {"dim": (0, -1)}),
        Sample((array((4, 3)),), {"dim": 1, "spacing": 3}, noncontiguous=True),
    ]


def _gradient_errors():
    x = _f32(3, 4)
    return [
        _error((np.ones(4, np.uint8),), RuntimeError, "torch.gradient does not support uint8 input."),
        _error((x,), RuntimeError, r"expected spacing to be unspecified, a scalar, or a list of length equal to "
               r"'self.dim\(\) = 2'", spacing=[2.0]),
        _error((x,), RuntimeError, "spacing argument of length 2 and a dim argument of length 1",
               spacing=[2.0, 3.0], dim=1),
        _error((x,), RuntimeError, "only supports edge_order=1 and edge_order=2.", edge_order=3),
        _error((_f32(2, 4),), RuntimeError, "expected each dimension size to be at least edge_order\\+1",
               edge_order=2),
        _error((x,), RuntimeError, "dim 0 appears multiple times in the list of dims", dim=(0, 0)),
        _error((x,), RuntimeError, "expected each element of spacing to have one dimension",
               spacing=(np.ones((3, 1), np.float32),), dim=0),
    ]


# ---------------------------------------------------------------- ldexp, frexp, nextafter


def _ldexp_samples(dtype, rng):
    pairs = [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (3,)), ((0, 3), (3,))]
    # integer exponents are >= 0 where gradients are compared: torch's backward computes 2 ** other in integer
    # arithmetic (0 for a negative exponent); ember's gradient is 2 ** other for every exponent
    samples = [Sample((make_array(a, dtype, rng, -3, 3), rng.integers(0, 5, size=b))) for a, b in pairs]
    samples.append(Sample((make_array((4, 3), dtype, rng, -3, 3), rng.integers(0, 5, size=(4, 3))),
                          noncontiguous=True))
    samples.append(Sample((make_array((2, 3), dtype, rng, -3, 3), rng.integers(-4, 0, size=(2, 3))), grad=False,
                          name="negative exponents"))
    samples.append(Sample((make_array((3,), dtype, rng, -3, 3), make_array((3,), dtype, rng, -2, 2))))
    return samples


def _frexp_samples(dtype, rng):
    samples = [Sample((make_array(s, dtype, rng, -100, 100),)) for s in [(), (0,), (5,), (3, 4)]]
    samples.append(Sample((make_array((4, 3), dtype, rng, -100, 100),), noncontiguous=True))
    if dtype in FLOATING:
        edges = np.array([0.0, -0.0, INF, -INF, NAN, 1e-40, -3.5, 1.0, 0.75])
        samples.append(Sample((edges.astype(make_array((), dtype, rng).dtype),), grad=False, name="edges"))
    return samples


def _nextafter_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng, -3, 3)

    samples = [Sample((array(a), array(b))) for a, b in [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (3,)), ((0,), ())]]
    if dtype in FLOATING:
        edges = np.array([0.0, -0.0, 0.0, 1.0, INF, -INF, NAN, 1.0]).astype(make_array((), dtype, rng).dtype)
        toward = np.array([1.0, -1.0, -1.0, 1.0, 0.0, INF, 0.0, NAN]).astype(edges.dtype)
        samples.append(Sample((edges, toward), grad=False, name="edges"))
    return samples


# ---------------------------------------------------------------- matrix functions


def _matrix_exp_samples(dtype, rng):
    def matrix(shape, scale=1.0):
        return (make_array(shape, dtype, rng, -1, 1) * scale).astype(make_array((), dtype, rng).dtype)

    return [
        Sample((matrix((3, 3)),)),
        Sample((matrix((2, 3, 3)),)),
        Sample((matrix((1, 1)),)),
        Sample((matrix((2, 2), 8.0),), name="large norm"),
        Sample((matrix((2, 2, 2), 0.01),), name="small norm"),
        Sample((matrix((0, 2, 2)),)),
        Sample((matrix((3, 3)),), noncontiguous=True),
    ]


def _matrix_exp_errors():
    return [
        _error((_f32(3),), RuntimeError, "linalg.matrix_exp: The input tensor A must have at least 2 dimensions."),
        _error((_f32(3, 4),), RuntimeError, "A must be batches of square matrices, but they are 3 by 4 matrices"),
        _error((np.ones((3, 3), np.int64),), RuntimeError, "Expected a floating point or complex tensor as input. "
               "Got Long"),
    ]


def _lu_samples(dtype, rng):
    def matrix(shape):
        values = make_array(shape, dtype, rng, -1, 1)
        return values

    return [
        Sample((matrix((3, 3)),)),
        Sample((matrix((2, 3, 3)),)),
        Sample((matrix((3, 4)),)),
        Sample((matrix((4, 3)),)),
        Sample((matrix((1, 1)),)),
        Sample((matrix((0, 2, 2)),)),
        Sample((matrix((3, 3)),), noncontiguous=True),
        Sample((np.zeros((2, 2), make_array((), dtype, rng).dtype),), grad=False, name="singular"),
    ]


def _lu_errors(name):
    def errors():
        return [
            _error((_f32(3),), RuntimeError, "Expected tensor with 2 or more dimensions. Got size: \\[3\\] instead"),
            _error((np.ones((3, 3), np.int64),), NotImplementedError, "\"lu_cpu\" not implemented for 'Long'"),
        ]

    return errors


def _lu_unpack_call(lib, A, **kwargs):
    packed, pivots = lib.linalg.lu_factor(A)
    return lib.lu_unpack(packed, pivots, **kwargs)


def _torch_lu_call(lib, A, **kwargs):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(lib.lu(A, **kwargs))


def _cov_call(lib, input, fweights=None, aweights=None, **kwargs):
    """Weights travel as operands (so every harness moves them with the input)."""
    return lib.cov(input, fweights=fweights, aweights=aweights, **kwargs)


def _gradient_call(lib, input, *coordinates, **kwargs):
    """Sample coordinates travel as operands; without them, spacing (if any) comes as a keyword."""
    if coordinates:
        kwargs["spacing"] = coordinates
    return lib.gradient(input, **kwargs)


def _nonsingular(samples):
    return lambda dtype, rng: [s for s in samples(dtype, rng) if s.name != "singular"]


OPS = [
    OpInfo("quantile", _quantile_samples, dtypes=REAL + ("int64",), method="quantile", supports_out=True,
           error_inputs=_quantile_errors("quantile")),
    OpInfo("nanquantile", _quantile_samples, dtypes=REAL, method="nanquantile", supports_out=True,
           error_inputs=_quantile_errors("nanquantile")),
    OpInfo("cov", _cov_samples, call=_cov_call, dtypes=REAL + ("int64", "complex128"), error_inputs=_cov_errors,
           meta=False),  # weight checks read values, as torch's do
    OpInfo("corrcoef", _corrcoef_samples, dtypes=REAL + ("int64", "complex128"), method="corrcoef", meta=False,
           error_inputs=lambda: [_error((_f32(2, 3, 4),), RuntimeError, "corrcoef\\(\\): expected input to have "
                                 "two or fewer dimensions but got an input with 3 dimensions")]),
    OpInfo("dist", _dist_samples, dtypes=FLOATING + ("int64",), method="dist", tolerances=LOOSE,
           error_inputs=lambda: [_error((np.ones(3, np.int64), np.ones(3, np.int64)), RuntimeError,
                                        "norm\\(\\): input dtype should be either floating point or complex. Got Long "
                                        "instead.")]),
    OpInfo("cdist", _cdist_samples, dtypes=REAL + ("float16",), error_inputs=_cdist_errors,
           tolerances={"float32": (1e-5, 1e-5)}, grad_tolerance=(1e-6, 1e-6)),
    OpInfo("pdist", _pdist_samples, dtypes=REAL + ("float16",), error_inputs=_pdist_errors),
    OpInfo("renorm", _renorm_samples, dtypes=FLOATING + ("complex64",), method="renorm", inplace="renorm_",
           tolerances=LOOSE, error_inputs=_renorm_errors),
    OpInfo("trapezoid", _trapezoid_samples, dtypes=REAL + ("int64", "float16"), tolerances=LOOSE,
           error_inputs=_trapezoid_errors("trapezoid")),
    OpInfo("trapz", _trapezoid_samples, dtypes=REAL + ("int64",)),
    OpInfo("cumulative_trapezoid", _trapezoid_samples, dtypes=REAL + ("int64",),
           error_inputs=_trapezoid_errors("cumulative_trapezoid")),
    OpInfo("gradient", _gradient_samples, call=_gradient_call, dtypes=REAL + ("int64",), error_inputs=_gradient_errors),
    OpInfo("ldexp", _ldexp_samples, dtypes=FLOATING + ("int32",), method="ldexp", inplace="ldexp_",
           supports_out=True, tolerances=LOOSE),
    OpInfo("frexp", _frexp_samples, dtypes=FLOATING + ("int64",), method="frexp",
           error_inputs=lambda: [_error((np.ones(3, np.int64),), RuntimeError,
                                        "torch.frexp\\(\\) only supports floating-point dtypes")]),
    OpInfo("nextafter", _nextafter_samples, dtypes=FLOATING + ("int64",), method="nextafter", inplace="nextafter_",
           supports_out=True),
    OpInfo("matrix_exp", _matrix_exp_samples, dtypes=LINALG_TYPES, method="matrix_exp",
           tolerances=LOOSE, error_inputs=_matrix_exp_errors),
    OpInfo("linalg.matrix_exp", _matrix_exp_samples, call=lambda lib, A: lib.linalg.matrix_exp(A),
           dtypes=LINALG_TYPES, tolerances=LOOSE),
    OpInfo("linalg.lu_factor", _nonsingular(_lu_samples), call=lambda lib, A: tuple(lib.linalg.lu_factor(A)),
           dtypes=LINALG_TYPES, tolerances=LOOSE, error_inputs=_lu_errors("linalg.lu_factor")),
    OpInfo("linalg.lu_factor_ex", _lu_samples, call=lambda lib, A: tuple(lib.linalg.lu_factor_ex(A)),
           dtypes=LINALG_TYPES, tolerances=LOOSE),
    # gradgradcheck of lu_factor covers these composites (their P output has no gradient)
    OpInfo("linalg.lu", _lu_samples, call=lambda lib, A: tuple(lib.linalg.lu(A)), dtypes=LINALG_TYPES,
           tolerances=LOOSE, gradgradcheck=False),
    OpInfo("lu_unpack", _nonsingular(_lu_samples), call=lambda lib, A: tuple(_lu_unpack_call(lib, A)),
           dtypes=LINALG_TYPES, tolerances=LOOSE, gradgradcheck=False),
    OpInfo("lu", _lu_samples, call=_torch_lu_call, dtypes=LINALG_TYPES, tolerances=LOOSE,
           error_inputs=_lu_errors("lu")),
]


