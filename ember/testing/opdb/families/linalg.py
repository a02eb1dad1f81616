"""OpInfos for matrix products (matmul family, einsum, tensordot, ...) and torch.linalg.

Factorization samples are well conditioned: general matrices get n * I added,
Hermitian positive-definite ones are built as X X^H + n I inside the call (so
gradcheck perturbs X freely), and Hermitian inputs are symmetrized inside the
call.  Decompositions whose factors carry an arbitrary sign or phase (qr, svd,
eigh) are compared after fixing it the same way in both libraries (a detached
sign, so gradients still flow through every factor and a wrong formula fails).
"""

from __future__ import annotations

import math

import numpy as np

from ..core import COMPLEX, ErrorSample, OpInfo, Sample, make_array

PRODUCT_TYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "bool") + COMPLEX
LINALG_TYPES = ("float32", "float64") + COMPLEX
LOOSE = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4)}
DECOMP_TOLERANCE = {"float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4), "float64": (1e-9, 1e-9),
                    "complex128": (1e-9, 1e-9)}


def _small(shape, dtype, rng):
    """Products: small values so half-precision sums stay exact enough."""
    return make_array(shape, dtype, rng, -3, 3)


def _pairs(shapes, dtype, rng, noncontiguous_last=True):
    samples = [Sample((_small(a, dtype, rng), _small(b, dtype, rng))) for a, b in shapes]
    if noncontiguous_last:
        a, b = shapes[0]
        samples.append(Sample((_small(a, dtype, rng), _small(b, dtype, rng)), noncontiguous=True, name="noncontig"))
    return samples


def _f32(*shape):
    return np.ones(shape, np.float32)


def _error(args, error, match, **kwargs):
    return ErrorSample(Sample(args, kwargs), error, match)


# ---------------------------------------------------------------- products


def matmul_samples(dtype, rng):
    shapes = [((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((2, 2, 3), (3, 2)),
              ((2, 1, 2, 3), (3, 3, 2)), ((3,), (2, 3, 2)), ((2, 2, 3), (3,)), ((0, 2, 3), (3, 2)), ((2, 0), (0, 3))]
    return _pairs(shapes, dtype, rng)


def matmul_errors():
    return [
        _error((_f32(2, 3), _f32(4, 5)), RuntimeError, r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
        _error((_f32(3), _f32(4)), RuntimeError, r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
        _error((_f32(2, 3), _f32(4)), RuntimeError, r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
        _error((_f32(2, 2, 3), _f32(2, 4, 5)), RuntimeError, r"batch2 tensor to be: \[2, 3\] but got: \[2, 4\]"),
        _error((_f32(2, 2, 3), _f32(4, 5)), RuntimeError, r"shapes cannot be multiplied \(4x3 and 4x5\)"),
        _error((np.ones((), np.float32), _f32(3)), RuntimeError, "at least 1D"),
        _error((_f32(2, 3), np.ones((3, 4), np.float64)), RuntimeError, "same dtype, but got: float != double"),
    ]


def _shaped(shapes):
    return lambda dtype, rng: _pairs(shapes, dtype, rng)


def add_product_samples(input_shapes, a_shape, b_shape):
    def samples(dtype, rng):
        out = []
        for shape in input_shapes:
            out.append(Sample((_small(shape, dtype, rng), _small(a_shape, dtype, rng), _small(b_shape, dtype, rng))))
        scale = {"beta": 2, "alpha": 3} if dtype in ("int64", "int32", "bool") else {"beta": 0.5, "alpha": -2.0}
        if dtype == "bool":
            scale = {"beta": True, "alpha": True}
        out.append(Sample((_small(input_shapes[0], dtype, rng), _small(a_shape, dtype, rng),
                           _small(b_shape, dtype, rng)), scale))
        zero = np.full(input_shapes[0], np.nan if dtype in ("float32", "float64") else 1).astype(
            _small((1,), dtype, rng).dtype)
        out.append(Sample((zero, _small(a_shape, dtype, rng), _small(b_shape, dtype, rng)), {"beta": 0},
                          name="beta=0 ignores nan", grad=False))
        out.append(Sample((_small(input_shapes[0], dtype, rng), _small(a_shape, dtype, rng),
                           _small(b_shape, dtype, rng)), noncontiguous=True, name="noncontig"))
        return out

    return samples


def einsum_samples(dtype, rng):
    cases = [("ij,jk->ik", (2, 3), (3, 4)), ("i,i", (3,), (3,)), ("bij,bjk->bik", (2, 2, 3), (2, 3, 2)),
             ("...ij,...jk", (2, 1, 2, 3), (3, 3, 2)), ("ij,jk", (2, 1), (3, 2)), ("i,j->ij", (3,), (2,)),
             ("ij,ij->", (2, 3), (2, 3))]
    samples = [Sample((_small(a, dtype, rng), _small(b, dtype, rng)), {"equation": eq}) for eq, a, b in cases]
    for eq, shape in [("ii->i", (3, 3)), ("ii", (3, 3)), ("ij->ji", (2, 3)), ("i...->...", (3, 2, 2))]:
        samples.append(Sample((_small(shape, dtype, rng),), {"equation": eq}))
    samples.append(Sample((_small((2, 3), dtype, rng), _small((3, 4), dtype, rng), _small((4, 2), dtype, rng)),
                          {"equation": "ij,jk,kl->il"}))
    return samples


def einsum_errors():
    return [
        _error((_f32(2, 3), _f32(4, 5)), RuntimeError, "subscript j has size 4 for operand 1", equation="ij,jk->ik"),
        _error((_f32(2, 3),), RuntimeError, "fewer operands", equation="ij,jk->ik"),
        _error((_f32(2, 3),), RuntimeError, r"number of subscripts in the equation \(3\)", equation="ijk->i"),
        _error((_f32(2, 3), _f32(3, 4)), RuntimeError, "output subscript z", equation="ij,jk->ikz"),
    ]


def tensordot_samples(dtype, rng):
    cases = [((2, 3, 4), (3, 4, 2), 2), ((2, 3), (3, 2), 1), ((2,), (3,), 0), ((2, 3, 4), (3, 2, 2), ([1, 0], [0, 1]))]
    return [Sample((_small(a, dtype, rng), _small(b, dtype, rng)), {"dims": d}) for a, b, d in cases]


def kron_samples(dtype, rng):
    return _pairs([((2, 3), (2, 2)), ((2,), (3, 2)), ((), (2,)), ((2, 1, 2), (2, 2))], dtype, rng)


def cross_samples(dtype, rng):
    samples = _pairs([((4, 3), (4, 3)), ((2, 3), (1, 3)), ((3,), (3,))], dtype, rng)
    samples.append(Sample((_small((3, 2), dtype, rng), _small((3, 2), dtype, rng)), {"dim": 0}))
    return samples


def trace_samples(dtype, rng):
    return [Sample((_small(s, dtype, rng),)) for s in [(3, 3), (2, 4), (4, 2), (0, 0)]] + [
        Sample((_small((3, 3), dtype, rng),), noncontiguous=True)]


def multi_dot_samples(dtype, rng):
    chains = [[(2, 3), (3, 4), (4, 2)], [(3,), (3, 2), (2, 4), (4,)], [(2, 3), (3, 1)], [(3,), (3,)]]
    return [Sample(([_small(s, dtype, rng) for s in chain],)) for chain in chains]


def chain_matmul_samples(dtype, rng):
    return [Sample(tuple(_small(s, dtype, rng) for s in [(2, 3), (3, 4), (4, 2)])),
            Sample(tuple(_small(s, dtype, rng) for s in [(2, 3), (3, 2)]))]


# ---------------------------------------------------------------- torch.linalg inputs


def _general(shape, dtype, rng):
    """A well-conditioned square (batch of) matrix: random entries plus n * I."""
    n = shape[-1]
    values = make_array(shape, dtype, rng, -1, 1)
    return (values + n * np.eye(n, dtype=values.dtype)).astype(values.dtype)


def square_samples(dtype, rng):
    shapes = [(3, 3), (2, 3, 3), (1, 2, 2), (0, 2, 2), (1, 1)]
    samples = [Sample((_general(s, dtype, rng),)) for s in shapes]
    samples.append(Sample((_general((3, 3), dtype, rng),), noncontiguous=True, name="noncontig"))
    return samples


def rect_samples(dtype, rng):
    """Matrices of full rank (random entries plus a dominant diagonal) in tall, wide and square shapes."""
    samples = []
    for shape in [(3, 2), (2, 3), (3, 3), (2, 3, 2), (2, 2, 3)]:
        values = make_array(shape, dtype, rng, -1, 1)
        k = min(shape[-2:])
        values[..., range(k), range(k)] += 3 * np.arange(1, k + 1)
        samples.append(Sample((values,)))
    return samples


def singular_errors(name):
    def errors():
        zeros = np.zeros((3, 3), np.float32)
        return [
            _error((_f32(2, 3),), RuntimeError, f"{name}: A must be batches of square matrices, but they are 2 by 3"),
            _error((_f32(3),), RuntimeError, "must have at least 2 dimensions"),
            _error((np.ones((2, 2), np.int64),), RuntimeError, "Expected a floating point or complex tensor"),
        ] + ([_error((zeros,), RuntimeError, "The diagonal element 1 is zero")] if name == "linalg.inv" else [])

    return errors


def solve_samples(dtype, rng):
    cases = [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3, 1)), ((3, 3), (2, 3, 2))]
    samples = [Sample((_general(a, dtype, rng), make_array(b, dtype, rng, -1, 1))) for a, b in cases]
    samples.append(Sample((_general((3, 3), dtype, rng), make_array((3, 2), dtype, rng, -1, 1)), {"left": False}))
    return samples[:5] + [Sample((_general((2, 2), dtype, rng), make_array((3, 2), dtype, rng, -1, 1)),
                                 {"left": False})]


def solve_errors():
    return [_error((_f32(3, 3), _f32(4)), RuntimeError, r"Incompatible shapes of A and B for the equation AX = B "
                                                        r"\(3x3 and 4x1\)"),
            _error((np.zeros((3, 3), np.float32), _f32(3)), RuntimeError, "singular")]


def spd_call(lib, X, raw=False, **kwargs):
    """cholesky of X X^H + n I: positive-definite for every X, so gradcheck may perturb X freely."""
    if raw:  # error inputs go in as they are
        return lib.linalg.cholesky(X, **kwargs)
    n = X.shape[-1]
    A = lib.matmul(X, X.mH) + n * lib.eye(n, dtype=X.dtype, device=X.device)
    return lib.linalg.cholesky(A, **kwargs)


def cholesky_samples(dtype, rng):
    shapes = [(3, 3), (2, 2, 2), (0, 2, 2), (1, 1)]
    samples = [Sample((make_array(s, dtype, rng, -1, 1),)) for s in shapes]
    samples.append(Sample((make_array((3, 3), dtype, rng, -1, 1),), {"upper": True}))
    return samples


def cholesky_errors():
    errors = [_error((-np.eye(3, dtype=np.float32),), RuntimeError, "the leading minor of order 1 is not "
                                                                    "positive-definite")]
    for error in singular_errors("linalg.cholesky")():
        error.sample.kwargs["raw"] = True
        errors.append(error)
    errors[0].sample.kwargs["raw"] = True
    return errors


def _phase(lib, vectors):
    """The detached phase that makes row 0 of each column real and positive (sign for real matrices)."""
    return vectors.detach()[..., 0, :].sgn().conj()


def qr_call(lib, A, **kwargs):
    Q, R = lib.linalg.qr(A, **kwargs)
    if kwargs.get("mode") == "r":
        return R.abs()
    d = R.detach().diagonal(dim1=-2, dim2=-1).sgn().conj()
    return Q * d.unsqueeze(-2), R * d.conj().unsqueeze(-1)


def qr_samples(dtype, rng):
    samples = rect_samples(dtype, rng)
    samples.append(Sample((make_array((2, 3), dtype, rng, -1, 1),), {"mode": "complete"}))
    samples.append(Sample((make_array((3, 2), dtype, rng, -1, 1),), {"mode": "r"}, grad=False))
    return samples


def svd_call(lib, A, **kwargs):
    U, S, Vh = lib.linalg.svd(A, **kwargs)
    d = _phase(lib, U)
    return U * d.unsqueeze(-2), S, Vh * d.conj().unsqueeze(-1)


def svd_samples(dtype, rng):
    samples = [Sample(s.args, {"full_matrices": False}) for s in rect_samples(dtype, rng)]
    samples.append(Sample((_general((3, 3), dtype, rng),), {"full_matrices": True}))
    return samples


def _hermitian(lib, X):
    return (X + X.mH) / 2


def eigh_call(lib, X, **kwargs):
    L, V = lib.linalg.eigh(_hermitian(lib, X), **kwargs)
    return L, V * _phase(lib, V).unsqueeze(-2)


def hermitian_samples(dtype, rng):
    samples = []
    for shape in [(3, 3), (2, 3, 3), (1, 1), (0, 2, 2)]:
        n = shape[-1]
        values = make_array(shape, dtype, rng, -1, 1)
        values = values + np.diag(np.arange(n) * 3.0).astype(values.dtype)  # well separated eigenvalues
        samples.append(Sample((values,)))
    samples.append(Sample((samples[0].args[0],), {"UPLO": "U"}))
    return samples


def pinv_samples(dtype, rng):
    samples = rect_samples(dtype, rng)
    samples.append(Sample((samples[2].args[0],), {"hermitian": False, "rtol": 1e-3}))
    samples.append(Sample((np.zeros((2, 2), samples[0].args[0].dtype),), grad=False, name="zero"))
    return samples


def pinv_hermitian_call(lib, X):
    return lib.linalg.pinv(_hermitian(lib, X), hermitian=True)


def lstsq_call(lib, A, B, **kwargs):
    result = lib.linalg.lstsq(A, B, **kwargs)
    if A.requires_grad:  # singular values are not differentiable: compared in the forward test only
        return result.solution, result.residuals, result.rank
    return result.solution, result.residuals, result.rank, result.singular_values


def lstsq_samples(dtype, rng):
    tall = rect_samples(dtype, rng)
    return [Sample((tall[0].args[0], make_array((3, 2), dtype, rng, -1, 1))),
            Sample((tall[0].args[0], make_array((3, 2), dtype, rng, -1, 1)), {"driver": "gelsd"}),
            Sample((tall[2].args[0], make_array((3,), dtype, rng, -1, 1))),
            Sample((tall[3].args[0], make_array((2, 3, 1), dtype, rng, -1, 1)), {"driver": "gelss"})]


def rank_samples(dtype, rng):
    full = rect_samples(dtype, rng)
    low = make_array((4, 1), dtype, rng, -1, 1) @ make_array((1, 3), dtype, rng, -1, 1)
    return full[:3] + [Sample((low,)), Sample((low,), {"atol": 0.5}), Sample((low,), {"hermitian": False})]


def power_samples(dtype, rng):
    samples = []
    for n in (0, 1, 2, 3, -1, -2):
        samples.append(Sample((_general((2, 2, 2) if n == 2 else (3, 3), dtype, rng) / 3, n)))
    return samples


def vector_norm_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng, -2, 2, exclude_zero=True)
    cases = [{}, {"ord": 1}, {"ord": math.inf}, {"ord": -math.inf}, {"ord": 3, "dim": 1}, {"ord": 0.5, "dim": 0},
             {"ord": 0}, {"dim": (0, 1), "keepdim": True}, {"ord": -1, "dim": -1, "keepdim": True}]
    samples = [Sample((x,), kwargs) for kwargs in cases]
    samples.append(Sample((make_array((), dtype, rng, -2, 2, exclude_zero=True),)))
    samples.append(Sample((np.zeros((0, 3), x.dtype),), {"dim": 1}))
    samples.append(Sample((x,), {"ord": 1.5}, noncontiguous=True))
    return samples


def matrix_norm_samples(dtype, rng):
    x = rect_samples(dtype, rng)[3].args[0]
    orders = ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]
    samples = [Sample((x,), {"ord": ord}) for ord in orders]
    samples.append(Sample((x,), {"ord": 1, "dim": (0, 2), "keepdim": True}))
    return samples


def norm_samples(dtype, rng):
    x = rect_samples(dtype, rng)[0].args[0]
    return [Sample((x,)), Sample((x,), {"ord": "nuc"}), Sample((x,), {"ord": 2}), Sample((x,), {"dim": 1}),
            Sample((x[:, 0].copy(),), {"ord": 3}), Sample((x,), {"ord": math.inf, "dim": (0, 1), "keepdim": True})]


def _linalg(name):
    return lambda lib, *args, **kwargs: getattr(lib.linalg, name)(*args, **kwargs)


def _errors(*items):
    return lambda: list(items)


OPS = [
    OpInfo("matmul", matmul_samples, dtypes=PRODUCT_TYPES, method="matmul", supports_out=True,
           tolerances=LOOSE, error_inputs=matmul_errors, max_samples=11),
    OpInfo("mm", _shaped([((2, 3), (3, 4)), ((0, 3), (3, 2)), ((2, 0), (0, 2))]), dtypes=PRODUCT_TYPES, method="mm",
           supports_out=True, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 3), _f32(4, 5)), RuntimeError, r"\(2x3 and 4x5\)"),
                                _error((_f32(3), _f32(3)), RuntimeError, "self must be a matrix"))),
    OpInfo("bmm", _shaped([((2, 2, 3), (2, 3, 4)), ((0, 2, 3), (0, 3, 1))]), dtypes=PRODUCT_TYPES, method="bmm",
           supports_out=True, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 2, 3), _f32(2, 4, 5)), RuntimeError, r"to be: \[2, 3\] but got: "
                                                                                     r"\[2, 4\]"),
                                _error((_f32(2, 2, 3), _f32(3, 4)), RuntimeError, "batch2 must be a 3D tensor"))),
    OpInfo("mv", _shaped([((2, 3), (3,)), ((0, 3), (3,))]), dtypes=PRODUCT_TYPES, method="mv", supports_out=True,
           tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 3), _f32(4)), RuntimeError, r"size mismatch, got input \(2\)"))),
    OpInfo("dot", _shaped([((3,), (3,)), ((0,), (0,))]), dtypes=PRODUCT_TYPES, method="dot", supports_out=True,
           tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(3), np.ones(3, np.float64)), RuntimeError, "same dtype"))),
    OpInfo("vdot", _shaped([((3,), (3,)), ((0,), (0,))]), dtypes=PRODUCT_TYPES, method="vdot", tolerances=LOOSE),
    OpInfo("inner", _shaped([((2, 3), (4, 3)), ((3,), (3,)), ((), (2, 3)), ((2, 1, 3), (3,))]),
           dtypes=PRODUCT_TYPES, method="inner", tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(3), _f32(4)), RuntimeError, r"shapes \[3\] and \[4\]"))),
    OpInfo("outer", _shaped([((3,), (2,)), ((0,), (2,))]), dtypes=PRODUCT_TYPES, method="outer", tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 2), _f32(2)), RuntimeError, "Expected 1-D argument self"))),
    OpInfo("ger", _shaped([((3,), (2,))]), dtypes=("float32", "float64"), method="ger"),
    OpInfo("einsum", einsum_samples, call=lambda lib, *ops, equation: lib.einsum(equation, *ops),
           dtypes=PRODUCT_TYPES, tolerances=LOOSE, error_inputs=einsum_errors),
    OpInfo("tensordot", tensordot_samples, dtypes=PRODUCT_TYPES, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 3), _f32(4, 5)), RuntimeError, "first has size 3 in dim -1 and "
                                                                               "second has size 4 in dim 0", dims=1))),
    OpInfo("addmm", add_product_samples([(2, 4), (4,), ()], (2, 3), (3, 4)), dtypes=PRODUCT_TYPES, method="addmm",
           inplace="addmm_", supports_out=True, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(3, 3), _f32(2, 3), _f32(3, 4)), RuntimeError,
                                       r"expanded size of the tensor \(4\) must match the existing size \(3\)"))),
    OpInfo("baddbmm", add_product_samples([(2, 2, 4), (4,)], (2, 2, 3), (2, 3, 4)), dtypes=PRODUCT_TYPES,
           method="baddbmm", inplace="baddbmm_", supports_out=True, tolerances=LOOSE),
    OpInfo("addbmm", add_product_samples([(2, 4)], (3, 2, 3), (3, 3, 4)), dtypes=PRODUCT_TYPES,
           method="addbmm", inplace="addbmm_", supports_out=True, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 4), _f32(2, 2, 3), _f32(3, 3, 4)), RuntimeError,
                                       "same number of batches, got 2 and 3"))),
    OpInfo("addmv", add_product_samples([(2,), (1,), ()], (2, 3), (3,)), dtypes=PRODUCT_TYPES, method="addmv",
           inplace="addmv_", supports_out=True, tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(3), _f32(2, 3), _f32(3)), RuntimeError,
                                       r"size mismatch, got input \(3\), mat \(2x3\), vec \(3\)"))),
    OpInfo("addr", add_product_samples([(2, 3), (3,)], (2,), (3,)), dtypes=PRODUCT_TYPES, method="addr",
           inplace="addr_", supports_out=True, tolerances=LOOSE),
    OpInfo("kron", kron_samples, dtypes=PRODUCT_TYPES, method="kron", supports_out=True, tolerances=LOOSE),
    OpInfo("cross", cross_samples, dtypes=("float32", "float64", "int64") + COMPLEX, method="cross",
           supports_out=True,
           error_inputs=_errors(_error((_f32(2, 2), _f32(2, 2)), RuntimeError, "must have length 3. Got 2 and 2",
                                       dim=-1))),
    OpInfo("linalg.cross", cross_samples, call=_linalg("cross"), dtypes=("float32", "float64") + COMPLEX),
    OpInfo("trace", trace_samples, dtypes=PRODUCT_TYPES, method="trace", tolerances=LOOSE,
           error_inputs=_errors(_error((_f32(2, 2, 2),), RuntimeError, "expected a matrix, but got tensor with "
                                                                        "dim 3"))),
    OpInfo("linalg.multi_dot", multi_dot_samples, call=_linalg("multi_dot"), dtypes=PRODUCT_TYPES,
           tolerances=LOOSE,
           error_inputs=_errors(_error(([_f32(2, 3), _f32(4, 5)],), RuntimeError, r"tensors 0 and 1 with shapes "
                                                                                   r"\[2, 3\] and \[4, 5\]"))),
    OpInfo("chain_matmul", chain_matmul_samples, dtypes=("float32", "float64")),
    OpInfo("linalg.matmul", matmul_samples, call=_linalg("matmul"), dtypes=("float64",), max_samples=4),
    # ---- torch.linalg
    OpInfo("linalg.inv", square_samples, call=_linalg("inv"), dtypes=LINALG_TYPES + ("float16",),
           tolerances=DECOMP_TOLERANCE, error_inputs=singular_errors("linalg.inv")),
    OpInfo("inverse", square_samples, dtypes=("float64",), method="inverse", supports_out=True,
           tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.det", square_samples, call=_linalg("det"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, error_inputs=singular_errors("linalg.det")),
    OpInfo("det", square_samples, dtypes=("float64",), method="det", tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.slogdet", square_samples, call=_linalg("slogdet"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE, error_inputs=singular_errors("linalg.slogdet")),
    OpInfo("logdet", square_samples, dtypes=("float64", "complex128"), method="logdet", tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.solve", solve_samples, call=_linalg("solve"), dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=solve_errors),
    OpInfo("linalg.cholesky", cholesky_samples, call=spd_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=cholesky_errors),
    OpInfo("linalg.qr", qr_samples, call=qr_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           grad_tolerance=(1e-6, 1e-6),
           error_inputs=_errors(_error((_f32(3, 3),), RuntimeError, "unrecognized mode 'foo'", mode="foo"))),
    OpInfo("linalg.svd", svd_samples, call=svd_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((np.ones((3, 3), np.int64),), RuntimeError, "Got Long"))),
    OpInfo("linalg.svdvals", rect_samples, call=_linalg("svdvals"), dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.eigh", hermitian_samples, call=eigh_call, dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((_f32(3, 3),), RuntimeError, "UPLO argument to be 'L' or 'U', but got X",
                                       UPLO="X"))),
    OpInfo("linalg.eigvalsh", hermitian_samples,
           call=lambda lib, X, **k: lib.linalg.eigvalsh(_hermitian(lib, X), **k), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.pinv", pinv_samples, call=_linalg("pinv"), dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((np.ones((2, 2), np.int64),), RuntimeError, "expected a tensor with 2 or more "
                                                                                     "dimensions"))),
    OpInfo("linalg.pinv hermitian", hermitian_samples, call=pinv_hermitian_call, dtypes=("float64", "float32"),
           tolerances=DECOMP_TOLERANCE, max_samples=4),
    OpInfo("linalg.lstsq", lstsq_samples, call=lstsq_call, dtypes=("float32", "float64"), meta=False,
           tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((_f32(3, 3), _f32(4, 2)), RuntimeError, r"input.size\(-2\) should match"))),
    OpInfo("linalg.matrix_rank", rank_samples, call=_linalg("matrix_rank"), dtypes=("float32", "float64"),
           grad=False, meta=False),  # the rank is data: no meta-device result
    OpInfo("linalg.matrix_power", power_samples, call=_linalg("matrix_power"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((_f32(2, 3), 2), RuntimeError, "batches of square matrices"))),
    OpInfo("matrix_power", power_samples, dtypes=("float64",), method="matrix_power", tolerances=DECOMP_TOLERANCE),
    OpInfo("linalg.vector_norm", vector_norm_samples, call=_linalg("vector_norm"),
           dtypes=("float32", "float64", "float16", "bfloat16", "int64") + COMPLEX, tolerances=LOOSE,
           max_samples=13),
    OpInfo("linalg.matrix_norm", matrix_norm_samples, call=_linalg("matrix_norm"), dtypes=LINALG_TYPES,
           tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((_f32(3, 3),), RuntimeError, "Order 3 not supported", ord=3))),
    OpInfo("linalg.norm", norm_samples, call=_linalg("norm"), dtypes=LINALG_TYPES, tolerances=DECOMP_TOLERANCE,
           error_inputs=_errors(_error((_f32(2, 2, 2),), RuntimeError, "must be 1D or 2D. Got 3D", ord=2))),
    OpInfo("norm", norm_samples, call=lambda lib, x, ord=None, **k: lib.norm(x, "fro" if ord is None else ord, **k),
           dtypes=("float32", "float64"), tolerances=DECOMP_TOLERANCE, max_samples=2),
]
