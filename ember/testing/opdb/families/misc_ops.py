"""OpInfos for closeness and membership (isclose, isin), complex construction and views (complex, polar, angle,
view_as_real, view_as_complex), structured matrices and indices (vander, block_diag, unravel_index), ravel and
the view scatters (select/slice/diagonal/as_strided_scatter).

Ops with complex results are also wrapped in view_as_real (the `*_as_real` entries) so the gradient tests, which
compare real outputs, reach their backward.  Functions returning Python values (equal, allclose, is_nonzero, ...)
and the factories without tensor inputs (tril_indices, triu_indices) are tested in tests/test_misc_ops.py.
"""

from __future__ import annotations

import numpy as np

from ..core import (
    ALL_WITH_COMPLEX,
    COMPLEX,
    FLOATING,
    INTEGRAL,
    ErrorSample,
    OpInfo,
    Sample,
    make_array,
)

NAN, INF = float("nan"), float("inf")


def _float(shape, dtype="float32"):
    return np.ones(shape, dtype)


def _errors(*cases):
    """cases: (args, kwargs, error type, message pattern); kwargs may hold noncontiguous=True for the sample."""

    def make():
        samples = []
        for args, kwargs, error, match in cases:
            kwargs = dict(kwargs)
            noncontiguous = kwargs.pop("noncontiguous", False)
            samples.append(ErrorSample(Sample(args, kwargs, noncontiguous=noncontiguous), error, match))
        return samples

    return make


# ---------------------------------------------------------------- isclose, isin


def _isclose_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng)

    base = array((3, 4))
    near = base.copy()
    samples = [
        Sample((base, near)),
        Sample((array((3, 4)), array((4,)))),
        Sample((array(()), array((3,)))),
        Sample((array((0, 3)), array((3,)))),
        Sample((array((4, 3)), array((4, 3))), noncontiguous=True),
        Sample((array((3, 4)), array((3, 4))), {"rtol": 0.5, "atol": 2}),
        Sample((array((3, 4)), array((3, 4))), {"rtol": 0, "atol": 0}),
    ]
    if dtype in FLOATING or dtype in COMPLEX:
        edge = np.asarray([NAN, INF, -INF, 0.0, -0.0, 1.0, NAN, 1e-9]).astype(base.dtype)
        other = np.asarray([NAN, INF, INF, -0.0, 1e-9, 1.0 + 1e-6, 1.0, 0.0]).astype(base.dtype)
        samples.append(Sample((edge, other), name="edge values"))
        samples.append(Sample((edge, other), {"equal_nan": True}, name="equal_nan"))
    return samples


def _isin_samples(dtype, rng):
    def array(shape, high=None):
        return make_array(shape, dtype, rng, high=high)

    samples = [
        Sample((array((3, 4)), array((5,)))),
        Sample((array((3, 4)), array((2, 3))), {"invert": True}),
        Sample((array(()), array((4,)))),
        Sample((array((0,)), array((3,)))),
        Sample((array((5,)), array((0,)))),
        Sample((array((4, 3)), array((3,))), noncontiguous=True),
        Sample((array((6,)), 3), name="scalar test_elements"),
        Sample((2, array((6,))), {"assume_unique": True}, name="scalar elements"),
        Sample((array((6,)), array((2,)).astype(np.float64)), name="promoted"),
    ]
    if dtype in FLOATING:
        samples.append(Sample((np.asarray([NAN, 1.0, -0.0]).astype(samples[0].args[0].dtype),
                               np.asarray([NAN, 0.0]).astype(samples[0].args[0].dtype)), name="nan and zeros"))
    return samples


# ---------------------------------------------------------------- complex numbers


def _pair_samples(dtype, rng, low=None):
    def array(shape):
        return make_array(shape, dtype, rng, low=low)

    return [
        Sample((array((3, 4)), array((3, 4)))),
        Sample((array((3, 4)), array((4,)))),
        Sample((array(()), array((3,)))),
        # torch's view_as_real backward rejects the (empty) gradient's strides
        Sample((array((0, 3)), array((3,))), grad=False),
        Sample((array((4, 3)), array((4, 3))), noncontiguous=True),
    ]


def _complex_edge_samples(dtype, rng):
    samples = _pair_samples(dtype, rng)
    edge = np.asarray([INF, -INF, NAN, -0.0]).astype(samples[0].args[0].dtype)
    samples.append(Sample((edge, edge[::-1].copy()), name="edge values", grad=False))
    return samples


def _polar_samples(dtype, rng):
    return _pair_samples(dtype, rng, low=0.5)


def _angle_samples(dtype, rng):
    shapes = [(), (0,), (5,), (3, 4)]
    samples = [Sample((make_array(s, dtype, rng),)) for s in shapes]
    samples.append(Sample((make_array((4, 3), dtype, rng),), noncontiguous=True))
    if dtype in FLOATING:
        edge = np.asarray([NAN, INF, -INF, 0.0, -0.0, -2.0]).astype(samples[0].args[0].dtype)
        samples.append(Sample((edge,), name="edge values", grad=False))
    if dtype in COMPLEX:
        edge = np.asarray([0j, -1 + 0j, complex(-1, -0.0), 1j, complex(INF, 1)]).astype(samples[0].args[0].dtype)
        samples.append(Sample((edge,), name="edge values", grad=False))
    return samples


def _angle_complex_grad_samples(dtype, rng):
    """Complex inputs for the float64 gradient tests (which only run the first dtype's samples as float64)."""
    return [Sample((make_array(shape, "complex128", rng),)) for shape in [(), (5,), (3, 4)]]


def _view_as_real_samples(dtype, rng):
    samples = [Sample((make_array(shape, dtype, rng),)) for shape in [(), (5,), (3, 4), (0, 2)]]
    samples.append(Sample((make_array((4, 3), dtype, rng),), noncontiguous=True))
    return samples


def _view_as_real_grad_samples(dtype, rng):
    return _view_as_real_samples("complex128", rng)


def _view_as_complex_samples(dtype, rng):
    # no empty sample: torch.tensor of an empty NumPy array has strides (0, 0), which view_as_complex rejects
    samples = [Sample((make_array(shape, dtype, rng),)) for shape in [(2,), (5, 2), (3, 4, 2)]]
    return samples


def _view_as_real_call(lib, a):
    return lib.view_as_real(a) * 1.0  # a copy, so the gradient tests see an ordinary output


def _complex_as_real_call(lib, a, b):
    return lib.view_as_real(lib.complex(a, b))


def _polar_as_real_call(lib, a, b):
    return lib.view_as_real(lib.polar(a, b))


def _view_as_complex_as_real_call(lib, a):
    return lib.view_as_real(lib.view_as_complex(a) * (2 - 1j))


_COMPLEX_DTYPES = ("float32", "float64")  # float16 makes complex32 in torch, which ember does not have


COMPLEX_OPS = [
    OpInfo("isclose", _isclose_samples, dtypes=ALL_WITH_COMPLEX, grad=False, method="isclose",
           error_inputs=_errors(
               ((_float(3), _float(3, "float64")), {}, RuntimeError, "Float did not match Double"),
               ((_float(3), _float(3)), {"rtol": -1.0}, RuntimeError, "rtol must be greater than or equal to zero"),
               ((_float(3), _float(3)), {"atol": -1.0}, RuntimeError, "atol must be greater than or equal to zero"),
               ((_float(3), _float(4)), {}, RuntimeError, r"size of tensor a \(3\) must match"))),
    OpInfo("isin", _isin_samples, dtypes=INTEGRAL + FLOATING, grad=False, supports_out=True,
           error_inputs=_errors(
               ((np.ones(3, bool), _float(3)), {}, RuntimeError, "Unsupported input type encountered for isin"),
               ((_float(3), np.ones(3, np.complex64)), {}, RuntimeError, "isin\\(\\): ComplexFloat"))),
    OpInfo("complex", _complex_edge_samples, dtypes=_COMPLEX_DTYPES, grad=False, supports_out=True,
           error_inputs=_errors(
               ((_float(3), _float(3, "float64")), {}, RuntimeError,
                "Expected object of scalar type Float but got scalar type Double for second argument"),
               ((np.ones(3, np.int64), np.ones(3, np.int64)), {}, RuntimeError,
                "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
               ((_float(2), _float(3)), {}, RuntimeError, r"size of tensor a \(2\) must match"))),
    OpInfo("complex_as_real", _pair_samples, call=_complex_as_real_call, dtypes=_COMPLEX_DTYPES),
    OpInfo("polar", _polar_samples, dtypes=_COMPLEX_DTYPES, grad=False, supports_out=True,
           tolerances={"complex64": (1e-5, 1e-5)},
           error_inputs=_errors(
               ((np.ones(3, np.int64), np.ones(3, np.int64)), {}, RuntimeError,
                "Expected both inputs to be Half, Float or Double tensors"),)),
    OpInfo("polar_as_real", _polar_samples, call=_polar_as_real_call, dtypes=_COMPLEX_DTYPES,
           tolerances={"float32": (1e-5, 1e-5)}),
    OpInfo("angle", _angle_samples, dtypes=ALL_WITH_COMPLEX, method="angle", supports_out=True),
    # complex inputs: gradient parity only (ember's gradcheck keeps only the real part of a complex input's grad)
    OpInfo("angle_complex_input", _angle_complex_grad_samples, call=lambda lib, a: lib.angle(a),
           dtypes=("float64",), gradcheck=False, gradgradcheck=False),
    OpInfo("view_as_real", _view_as_real_samples, dtypes=COMPLEX, grad=False,
           error_inputs=_errors(((_float(3),), {}, RuntimeError, "view_as_real is only supported for complex"),)),
    OpInfo("view_as_real_grad", _view_as_real_grad_samples, call=_view_as_real_call, dtypes=("float64",),
           gradcheck=False, gradgradcheck=False),
    OpInfo("view_as_complex", _view_as_complex_samples, dtypes=_COMPLEX_DTYPES, grad=False,
           error_inputs=_errors(
               ((_float((3, 3)),), {}, RuntimeError, "Tensor must have a last dimension of size 2"),
               ((_float((3, 2)),), {"noncontiguous": True}, RuntimeError,
                "Tensor must have a last dimension with stride 1"),
               ((_float(()),), {}, RuntimeError, "Input tensor must have one or more dimensions"),
               ((np.ones((3, 2), np.int64),), {}, RuntimeError,
                "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar "
                "type: Long"))),
    OpInfo("view_as_complex_as_real", _view_as_complex_samples, call=_view_as_complex_as_real_call,
           dtypes=_COMPLEX_DTYPES),
]


# ---------------------------------------------------------------- structured matrices and indices


def _unravel_samples(dtype, rng):
    def indices(shape, high):
        return make_array(shape, dtype, rng, low=0, high=high)

    samples = [
        Sample((indices((5,), 6), (2, 3))),
        Sample((indices((), 24), (2, 3, 4))),
        Sample((indices((2, 3), 24), [4, 6])),
        Sample((indices((4,), 7), 7)),
        Sample((indices((0,), 1), (0, 3))),
        Sample((indices((3,), 1), ())),
        Sample((indices((4, 3), 12), (3, 4)), noncontiguous=True),
    ]
    if dtype != "uint8":
        samples.append(Sample((make_array((5,), dtype, rng, low=-6, high=0), (2, 3)), name="negative"))
    return samples


def _vander_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng, low=-3, high=3)

    return [
        Sample((array((4,)),)),
        Sample((array((3,)),), {"N": 5}),
        Sample((array((3,)),), {"N": 2, "increasing": True}),
        Sample((array((3,)),), {"N": 1}),
        Sample((array((3,)),), {"N": 0}),
        Sample((array((0,)),)),
        Sample((array((5,)),), {"increasing": True}, noncontiguous=True),
    ]


def _block_diag_samples(dtype, rng):
    def array(shape):
        return make_array(shape, dtype, rng)

    return [
        Sample((array((2, 2)), array((2, 3)), array(()), array((3,)), array((3, 1)))),
        Sample((array((3, 4)),)),
        Sample((array(()),)),
        Sample((array((0, 2)), array((2, 0)), array((0,)))),
        Sample((array((2, 3)), array((3, 2))), noncontiguous=True),
    ]


def _block_diag_call(lib, *tensors):
    return lib.block_diag(*tensors)


STRUCTURED_OPS = [
    OpInfo("unravel_index", _unravel_samples, dtypes=INTEGRAL, grad=False,
           error_inputs=_errors(
               ((_float(3), (2, 3)), {}, TypeError, "expected 'indices' to be integer dtype, but got"),
               ((np.ones(3, np.int64), (-1, 3)), {}, ValueError, r"'shape' cannot have negative values"),
               ((np.ones(3, np.int64), (2.0, 3)), {}, TypeError, "expected 'shape' sequence to only contain ints"),
               ((np.ones(3, np.int64), (0, 3)), {}, RuntimeError, "ZeroDivisionError"))),
    OpInfo("vander", _vander_samples, dtypes=ALL_WITH_COMPLEX, tolerances={"float16": (2e-3, 1e-2)},
           xfail={"grad": "torch 2.13's vander backward raises (its cumprod overwrites a tensor autograd saved); "
                          "ember's gradient is checked by gradcheck and against x ** k in tests/test_misc_ops.py"},
           error_inputs=_errors(
               ((_float((2, 2)),), {}, RuntimeError, "x must be a one-dimensional tensor"),
               ((_float(3),), {"N": -1}, RuntimeError, "N must be non-negative"))),
    OpInfo("block_diag", _block_diag_samples, call=_block_diag_call, dtypes=ALL_WITH_COMPLEX,
           error_inputs=_errors(
               ((_float((2, 2, 2)),), {}, RuntimeError,
                "Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),)),
    OpInfo("ravel", lambda dtype, rng: [Sample((make_array(s, dtype, rng),)) for s in [(), (0, 3), (2, 3, 4)]]
           + [Sample((make_array((4, 3), dtype, rng),), noncontiguous=True)],
           dtypes=ALL_WITH_COMPLEX, method="ravel"),
]


# ---------------------------------------------------------------- view scatters


def _scatter_samples(cases):
    """cases: (input shape, src shape, args, kwargs[, noncontiguous])."""

    def samples(dtype, rng):
        out = []
        for case in cases:
            shape, src_shape, args, kwargs = case[:4]
            noncontiguous = len(case) > 4 and case[4]
            out.append(Sample((make_array(shape, dtype, rng), make_array(src_shape, dtype, rng)) + tuple(args),
                              dict(kwargs), noncontiguous=noncontiguous))
        return out

    return samples


def _mixed_src_sample(maker):
    """Also a src of another dtype (cast to input's, as torch's copy_)."""

    def samples(dtype, rng):
        out = maker(dtype, rng)
        first = out[0]
        out.append(Sample((first.args[0], np.real(first.args[1]).astype(np.float64)) + first.args[2:], first.kwargs,
                          grad=False, name="float64 src"))
        return out

    return samples


_SELECT_SCATTER_CASES = [((3, 4), (4,), (0, 1), {}), ((3, 4), (3,), (1, -1), {}), ((2, 3, 4), (2, 4), (1, 2), {}),
                         ((5,), (), (0, 2), {}), ((4, 3), (3,), (0, 0), {}, True), ((0, 3), (0,), (1, 2), {})]
_SLICE_SCATTER_CASES = [((3, 4), (1, 4), (0, 1, 2), {}), ((3, 4), (3, 2), (), {"dim": 1, "step": 2}),
                        ((3, 4), (3, 4), (), {}), ((3, 4), (2, 4), (0, -2), {}), ((3, 4), (2, 4), (0, None, -1), {}),
                        ((3, 4), (0, 4), (0, 5, 7), {}), ((4, 3), (4, 2), (1, 1), {}, True),
                        ((2, 3, 4), (2, 3, 1), (-1, 3), {})]
_DIAGONAL_SCATTER_CASES = [((3, 4), (3,), (), {}), ((3, 4), (3,), (1,), {}), ((3, 4), (2,), (-1,), {}),
                           ((3, 4), (3,), (0, 1, 0), {}), ((2, 3, 4), (2, 3), (0, 1, 2), {}),
                           ((4, 3), (3,), (), {}, True), ((3, 4), (0,), (5,), {})]
_AS_STRIDED_SCATTER_CASES = [((3, 4), (2, 2), ((2, 2), (1, 2)), {}), ((3, 4), (2, 2), ((2, 2), (1, 2), 1), {}),
                             ((3, 4), (12,), ((12,), (1,)), {}), ((3, 4), (), ((), ()), {"storage_offset": 5}),
                             ((2, 3), (3, 2), ((3, 2), (1, 3)), {}), ((3, 4), (0, 2), ((0, 2), (1, 1)), {})]


def _noncontiguous_as_strided_scatter(dtype, rng):
    samples = _scatter_samples(_AS_STRIDED_SCATTER_CASES)(dtype, rng)
    samples.append(Sample((make_array((4, 3), dtype, rng), make_array((2, 2), dtype, rng), (2, 2), (1, 2)),
                          noncontiguous=True, grad=False, name="noncontiguous input"))
    return samples


SCATTER_OPS = [
    OpInfo("select_scatter", _mixed_src_sample(_scatter_samples(_SELECT_SCATTER_CASES)), dtypes=ALL_WITH_COMPLEX,
           method="select_scatter",
           error_inputs=_errors(
               ((_float((3, 4)), _float(5), 0, 0), {}, RuntimeError,
                r"expected src to have a size equal to the slice of self. src size = \[5\], slice size = \[4\]"),
               ((_float((3, 4)), _float(3), 1, 4), {}, IndexError, "select\\(\\): index 4 out of range"),
               ((_float(()), _float(()), 0, 0), {}, IndexError, "select\\(\\) cannot be applied to a 0-dim tensor"))),
    OpInfo("slice_scatter", _mixed_src_sample(_scatter_samples(_SLICE_SCATTER_CASES)), dtypes=ALL_WITH_COMPLEX,
           method="slice_scatter", supports_out=True,
           error_inputs=_errors(
               ((_float((3, 4)), _float((3, 3))), {}, RuntimeError,
                r"src size = \[3, 3\], slice size = \[3, 4\]"),
               ((_float((3, 4)), _float((1, 4)), 0, 1, 2, 0), {}, RuntimeError, "slice step must be positive"),
               ((_float(()), _float(())), {}, IndexError, "slice\\(\\) cannot be applied to a 0-dim tensor"))),
    OpInfo("diagonal_scatter", _mixed_src_sample(_scatter_samples(_DIAGONAL_SCATTER_CASES)),
           dtypes=ALL_WITH_COMPLEX, method="diagonal_scatter",
           error_inputs=_errors(
               ((_float((3, 4)), _float(2)), {}, RuntimeError, r"src size = \[2\], slice size = \[3\]"),
               ((_float((3, 4)), _float(3), 0, 1, 1), {}, RuntimeError, "diagonal dimensions cannot be identical"))),
    OpInfo("as_strided_scatter", _noncontiguous_as_strided_scatter, dtypes=ALL_WITH_COMPLEX,
           method="as_strided_scatter",
           xfail={"grad": "torch 2.13's input gradient is wrong (grad inside the scattered region, zeros outside: "
                          "it fails torch's own gradcheck); ember's passes gradcheck, and src's gradient is compared "
                          "with torch's in tests/test_misc_ops.py"},
           error_inputs=_errors(
               ((_float((3, 4)), _float((2, 3)), (2, 2), (1, 2)), {}, RuntimeError,
                r"src size = \[2, 3\], slice size = \[2, 2\]"),
               ((_float((3, 4)), _float((2, 2)), (2, 2), (0, 0)), {}, RuntimeError,
                "more than one element of the written-to tensor refers to a single memory location"),
               ((_float((3, 4)), _float((2, 2)), (2, 2), (10, 10)), {}, RuntimeError,
                "requiring a storage size of 84 are out of bounds for storage of size 48"))),
]

OPS = COMPLEX_OPS + STRUCTURED_OPS + SCATTER_OPS
