"""OpInfos for shape ops: views (view, reshape, transpose, expand, narrow, split, ...) and copying movement ops
(cat, stack, repeat, flip, roll, tril, diag, meshgrid, ...).

These ops only move data, so they are tested in every dtype; samples cover
negative dims, 0-d and empty tensors and non-contiguous inputs.  Ops that
return tuples (split, chunk, unbind, meshgrid) are compared element by element.
"""

from __future__ import annotations

import numpy as np

from ..core import ALL_WITH_COMPLEX, COMPLEX, ErrorSample, OpInfo, Sample, make_array


def _array(shape, dtype, rng):
    return make_array(shape, dtype, rng)


def _samples(cases, dtype, rng):
    """cases: (shape or [shapes], args tuple, kwargs dict[, noncontiguous]) -> Samples."""
    samples = []
    for case in cases:
        shape, args, kwargs = case[:3]
        noncontiguous = len(case) > 3 and case[3]
        if isinstance(shape, list):
            first = [_array(s, dtype, rng) for s in shape]
        else:
            first = _array(shape, dtype, rng)
        samples.append(Sample((first,) + tuple(args), dict(kwargs), noncontiguous=noncontiguous))
    return samples


def _maker(cases):
    return lambda dtype, rng: _samples(cases, dtype, rng)


def _float(shape):
    return np.ones(shape, np.float32)


def _error(args, error, match="", **kwargs):
    return lambda: [ErrorSample(Sample(args, kwargs), error, match)]


def _errors(*items):
    return lambda: [item() for item in items]


def _one(args, error, match="", **kwargs):
    return lambda: ErrorSample(Sample(args, kwargs), error, match)


def _shapes_op(name, cases, *, method=None, call=None, errors=None, **options):
    options.setdefault("dtypes", ALL_WITH_COMPLEX)
    return OpInfo(name, _maker(cases), call=call, method=method, error_inputs=errors, **options)


def _method_call(name):
    return lambda lib, a, *args, **kwargs: getattr(a, name)(*args, **kwargs)


def _view_call(lib, a, *shape, transpose=False):
    return (a.t() if transpose else a).view(*shape)


def _two_tensor_method(name):
    return lambda lib, a, b: getattr(a, name)(b)


VIEW_OPS = [
    _shapes_op("view", [((2, 3), (6,), {}), ((2, 3, 4), (-1, 4), {}), ((), (1,), {}), ((1,), ((),), {}),
                        ((0, 3), (3, 0), {}), ((0, 3), (-1,), {}), ((4, 3), (2, 2, 3), {}, True),
                        ((4, 3), (4, 3, 1), {}, True), ((2, 3), ((3, 2),), {})],
               call=_view_call, method=None,
               errors=_errors(_one((_float((2, 3)), 6), RuntimeError, r"Use \.reshape", transpose=True),
                              _one((_float((2, 3)), 2, 5), RuntimeError, r"shape '\[2, 5\]' is invalid for input "
                                   r"of size 6"),
                              _one((_float((2, 3)), -1, -1), RuntimeError, "only one dimension can be inferred"))),
    _shapes_op("reshape", [((2, 3), ((6,),), {}), ((2, 3, 4), ((-1, 4),), {}), ((), ((1,),), {}),
                           ((1, 1), ((),), {}), ((0, 3), ((3, 0, -1),), {}), ((4, 3), ((12,),), {}, True),
                           ((4, 3), ((3, 4),), {}, True), ((2, 3, 2), ((-1,),), {})],
               method="reshape",
               errors=_error((_float((2, 3)), (2, 5)), RuntimeError,
                             r"shape '\[2, 5\]' is invalid for input of size 6")),
    OpInfo("view_as", lambda d, rng: [Sample((_array((2, 3), d, rng), _array((3, 2), d, rng))),
                                      Sample((_array((), d, rng), _array((1, 1), d, rng)))],
           call=_two_tensor_method("view_as"), dtypes=ALL_WITH_COMPLEX),
    OpInfo("reshape_as", lambda d, rng: [Sample((_array((2, 3), d, rng), _array((3, 2), d, rng))),
                                         Sample((_array((4, 3), d, rng), _array((12,), d, rng)),
                                                noncontiguous=True)],
           call=_two_tensor_method("reshape_as"), dtypes=ALL_WITH_COMPLEX),
    _shapes_op("flatten", [((2, 3, 4), (), {}), ((2, 3, 4), (1,), {}), ((2, 3, 4), (), {"start_dim": -2}),
                           ((2, 3, 4, 2), (1, -2), {}), ((), (), {}), ((0, 3), (), {}), ((3,), (), {}),
                           ((4, 3), (), {}, True)],
               method="flatten",
               errors=_error((_float((2, 3)), 1, 0), RuntimeError, "start_dim cannot come after end_dim")),
    _shapes_op("unflatten", [((6, 4), (0, (2, 3)), {}), ((4, 6), (-1, (2, -1)), {}), ((4, 6), (1, (6,)), {}),
                             ((0, 6), (1, (3, 2)), {}), ((4, 6), (1, (3, 2)), {}, True)],
               method="unflatten",
               errors=_error((_float((2, 3)), 1, (2, 2)), RuntimeError, "don't multiply up to the size of dim 1")),
    _shapes_op("squeeze", [((2, 1, 3, 1), (), {}), ((2, 1, 3), (1,), {}), ((2, 1, 3), (-2,), {}),
                           ((2, 1, 3), (0,), {}), ((1, 2, 1), ((0, -1),), {}), ((1, 1), ((),), {}),
                           ((), (), {}), ((), (0,), {}), ((), (-1,), {}), ((0, 1), (), {}),
                           ((4, 1, 3), (1,), {}, True)],
               method="squeeze",
               errors=_errors(_one((_float((2, 1)), (0, 0)), RuntimeError, "appears multiple times"),
                              _one((_float(()), 1), IndexError, "Dimension out of range"))),
    _shapes_op("unsqueeze", [((2, 3), (0,), {}), ((2, 3), (-1,), {}), ((2, 3), (1,), {}), ((), (0,), {}),
                             ((), (-1,), {}), ((0,), (1,), {}), ((4, 3), (1,), {}, True)],
               method="unsqueeze",
               errors=_error((_float((2, 3)), 3), IndexError, r"expected to be in range of \[-3, 2\]")),
    _shapes_op("permute", [((2, 3, 4), ((2, 0, 1),), {}), ((2, 3, 4), ((-1, 0, -2),), {}), ((), ((),), {}),
                           ((0, 3), ((1, 0),), {}), ((4, 3), ((1, 0),), {}, True)],
               method="permute",
               errors=_errors(_one((_float((2, 3)), (0,)), RuntimeError, "does not match the length"),
                              _one((_float((2, 3)), (0, 0)), RuntimeError, "duplicate dims"))),
    *[
        _shapes_op(name, [((2, 3, 4), (0, 2), {}), ((2, 3, 4), (-1, 1), {}), ((2, 3), (1, 1), {}),
                          ((), (0, -1), {}), ((0, 3), (0, 1), {}), ((4, 3), (0, 1), {}, True)],
                   method=name,
                   errors=_error((_float((2, 3)), 0, 2), IndexError, "Dimension out of range"))
        for name in ("transpose", "swapaxes", "swapdims")
    ],
    _shapes_op("t", [((2, 3), (), {}), ((3,), (), {}), ((), (), {}), ((0, 2), (), {}), ((4, 3), (), {}, True)],
               method="t", errors=_error((_float((2, 3, 4)),), RuntimeError, "expects a tensor with <= 2 dimensions")),
    _shapes_op("adjoint", [((2, 3), (), {}), ((2, 3, 4), (), {}), ((0, 2), (), {}), ((4, 3), (), {}, True)],
               method="adjoint"),
    *[
        _shapes_op(name, [((2, 3, 4), (0, 2), {}), ((2, 3, 4), (-1, 0), {}), ((2, 3, 4), ((0, 1), (2, 0)), {}),
                          ((2, 3, 4), ((0, -1), (-1, 0)), {}), ((), (0, 0), {}), ((4, 3), (0, 1), {}, True)],
                   method=name,
                   errors=_error((_float((2, 3)), (0, 1), (0,)), RuntimeError, "should contain the same number"))
        for name in ("movedim", "moveaxis")
    ],
    _shapes_op("expand", [((3, 1), (3, 4), {}), ((3, 1), ((2, 3, 4),), {}), ((3, 1), (-1, 4), {}),
                          ((), (2, 3), {}), ((1,), (0,), {}), ((2, 3), (2, 3), {}), ((4, 1), (2, 4, 3), {}, True)],
               call=_method_call("expand"),
               errors=_errors(_one((_float((2, 3)), 3, 3), RuntimeError,
                                   r"expanded size of the tensor \(3\) must match the existing size \(2\) at "
                                   r"non-singleton dimension 0"),
                              _one((_float((2, 3)), 3), RuntimeError, "the number of sizes provided"),
                              _one((_float((2, 3)), -1, 2, 3), RuntimeError, "non-existing dimension 0"))),
    OpInfo("expand_as", lambda d, rng: [Sample((_array((3, 1), d, rng), _array((2, 3, 4), d, rng))),
                                        Sample((_array((), d, rng), _array((2,), d, rng)))],
           call=_two_tensor_method("expand_as"), dtypes=ALL_WITH_COMPLEX),
    _shapes_op("broadcast_to", [((3, 1), ((3, 4),), {}), ((), ((2, 3),), {}), ((1,), ((0,),), {}),
                                ((4, 1), ((2, 4, 3),), {}, True)],
               method="broadcast_to",
               errors=_error((_float((2, 3)), (3, 3)), RuntimeError, "must match the existing size")),
    OpInfo("broadcast_tensors",
           lambda d, rng: [Sample((_array((3, 1), d, rng), _array((4,), d, rng))),
                           Sample((_array((), d, rng), _array((2, 3), d, rng), _array((1, 3), d, rng))),
                           Sample((_array((0, 1), d, rng), _array((3,), d, rng)))],
           dtypes=ALL_WITH_COMPLEX,
           error_inputs=_error((_float((2, 3)), _float((4,))), RuntimeError, r"tensor a \(3\) must match")),
    OpInfo("broadcast_shapes", lambda d, rng: [Sample(((3, 1), (4,))), Sample(((2, 1, 3), (1, 5, 1), 3)),
                                               Sample(((), (0, 2)))],
           dtypes=("float32",), grad=False, meta=False,
           error_inputs=_error(((2, 3), (4,)), RuntimeError, r"\(3\) must match")),
    _shapes_op("narrow", [((4, 3), (0, 1, 2), {}), ((4, 3), (-1, 0, 3), {}), ((4, 3), (1, -2, 2), {}),
                          ((4, 3), (0, 4, 0), {}), ((0, 3), (1, 1, 2), {}), ((4, 3), (1, 1, 1), {}, True)],
               method="narrow",
               errors=_error((_float((2, 3)), 1, 2, 2), RuntimeError, r"start \(2\) \+ length \(2\) exceeds")),
    _shapes_op("select", [((4, 3), (0, 1), {}), ((4, 3), (-1, -1), {}), ((2, 3, 4), (1, 2), {}),
                          ((3,), (0, 2), {}), ((0, 3), (1, 2), {}), ((4, 3), (1, 0), {}, True)],
               method="select",
               errors=_errors(_one((_float((2, 3)), 1, 3), IndexError, "index 3 out of range"),
                              _one((_float(()), 0, 0), IndexError, "cannot be applied to a 0-dim tensor"))),
    _shapes_op("diagonal", [((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-2,), {}), ((2, 3, 4), (0, 0, 2), {}),
                            ((2, 3, 4), (), {"offset": 1, "dim1": -1, "dim2": 0}), ((3, 4), (5,), {}),
                            ((0, 3), (), {}), ((4, 3), (), {}, True)],
               method="diagonal",
               errors=_error((_float((2, 3)), 0, 0, 0), RuntimeError, "diagonal dimensions cannot be identical")),
    _shapes_op("unfold", [((7,), (0, 2, 1), {}), ((7,), (0, 3, 2), {}), ((3, 5), (-1, 2, 2), {}),
                          ((3, 5), (0, 3, 1), {}), ((), (0, 1, 1), {}), ((0, 4), (1, 2, 1), {}),
                          ((4, 3), (0, 2, 1), {}, True)],
               call=_method_call("unfold"),
               errors=_errors(_one((_float((2, 3)), 1, 4, 1), RuntimeError, "maximum size for tensor at dimension 1"),
                              _one((_float((2, 3)), 1, 2, 0), RuntimeError, "step is 0 but must be > 0"))),
    _shapes_op("as_strided", [((3, 4), ((2, 2), (1, 2)), {}), ((3, 4), ((3, 3), (4, 1), 1), {}),
                              ((3, 4), ((2,), (5,)), {}), ((6,), ((3, 2), (1, 1)), {}), ((3, 4), ((0,), (1,)), {})],
               method="as_strided"),
    _shapes_op("unbind", [((3, 2), (), {}), ((3, 2), (1,), {}), ((2, 3, 2), (-1,), {}), ((0, 2), (1,), {}),
                          ((4, 3), (0,), {}, True)],
               method="unbind",
               errors=_error((_float(()),), IndexError, "Dimension specified as 0 but tensor has no dim")),
    _shapes_op("split", [((5, 2), (2,), {}), ((5, 2), ([1, 4],), {}), ((2, 5), (3, -1), {}),
                         ((2, 5), ((2, 0, 3),), {"dim": 1}), ((0, 2), (1,), {}), ((0, 2), (0,), {}),
                         ((4, 3), (2, 1), {}, True)],
               method="split",
               errors=_errors(_one((_float((2, 3)), 0), RuntimeError, "split_size can only be 0"),
                              _one((_float((2, 3)), [1, 2]), RuntimeError, "split_with_sizes expects split_sizes"))),
    _shapes_op("chunk", [((5, 2), (2,), {}), ((5, 2), (3,), {}), ((6, 2), (4,), {}), ((2, 5), (3, -1), {}),
                         ((0, 2), (2,), {}), ((2, 2), (5,), {}), ((4, 3), (2, 1), {}, True)],
               method="chunk",
               errors=_error((_float((2, 3)), 0), RuntimeError, "chunk expects `chunks` to be greater than 0")),
    _shapes_op("tensor_split", [((7, 2), (3,), {}), ((7, 2), ([1, 5],), {}), ((2, 7), ((1, -2, 9),), {"dim": 1}),
                                ((2, 7), ([3, 1],), {"dim": -1}), ((0, 2), (2,), {}), ((4, 3), (2, 1), {}, True)],
               method="tensor_split",
               errors=_error((_float((2, 3)), 0), RuntimeError, "number of sections must be larger than 0")),
    _shapes_op("hsplit", [((4, 6), (3,), {}), ((6,), (2,), {}), ((4, 6), ([1, 4],), {}), ((4, 6), (2,), {}, True)],
               method="hsplit",
               errors=_error((_float((2, 3)), 2), RuntimeError, "not divisible by the split_size 2")),
    _shapes_op("vsplit", [((4, 6), (2,), {}), ((4, 6), ([1, 3],), {}), ((4, 3), (2,), {}, True)],
               method="vsplit",
               errors=_error((_float((3,)), 2), RuntimeError, "requires a tensor with at least 2 dimension")),
    _shapes_op("dsplit", [((2, 2, 4), (2,), {}), ((2, 2, 4), ([3],), {}), ((2, 2, 4), (2,), {}, True)],
               method="dsplit"),
    _shapes_op("real", [((3, 2), (), {}), ((), (), {}), ((0,), (), {}), ((4, 3), (), {}, True)]),
    OpInfo("imag", lambda d, rng: _samples([((3, 2), (), {}), ((), (), {}), ((4, 3), (), {}, True)],
                                           "complex128" if d == "float64" else d, rng),
           dtypes=COMPLEX),  # float64 (the gradient tests' dtype) -> complex128: imag rejects real input
]


def _list_cases(shapes_list, dims, noncontiguous=False):
    return [(shapes, (), {"dim": d} if d is not None else {}, noncontiguous) for shapes, d in zip(shapes_list, dims)]


_CAT_CASES = [
    ([(2, 3), (4, 3)], (), {}), ([(2, 3), (2, 1)], (1,), {}), ([(2, 3), (2, 2), (2, 1)], (), {"dim": -1}),
    ([(2, 3), (0,)], (), {}), ([(0,), (2, 3), (0,)], (1,), {}), ([(2, 0), (2, 3)], (1,), {}),
    ([(3,)], (), {}), ([(0,), (0,)], (), {}), ([(2, 3), (4, 3)], (), {}, True),
]
_STACK_CASES = [
    ([(2, 3), (2, 3)], (), {}), ([(2, 3), (2, 3), (2, 3)], (-1,), {}), ([(2, 3), (2, 3)], (1,), {}),
    ([(), ()], (), {}), ([(0, 2)], (), {}), ([(4, 3), (4, 3)], (), {"dim": 2}, True),
]
_HSTACK_CASES = [
    ([(2, 3), (2, 1)], (), {}), ([(3,), (2,)], (), {}), ([(), (2,)], (), {}), ([(2, 3, 1), (2, 1, 1)], (), {}),
    ([(4, 3), (4, 3)], (), {}, True),
]
_VSTACK_CASES = [
    ([(2, 3), (1, 3)], (), {}), ([(3,), (3,)], (), {}), ([(), ()], (), {}), ([(2, 3, 1), (1, 3, 1)], (), {}),
    ([(4, 3), (4, 3)], (), {}, True),
]
_DSTACK_CASES = [
    ([(2, 3), (2, 3)], (), {}), ([(3,), (3,)], (), {}), ([(), ()], (), {}), ([(2, 3, 1), (2, 3, 2)], (), {}),
    ([(4, 3), (4, 3)], (), {}, True),
]
_COLUMN_STACK_CASES = [
    ([(3,), (3, 2), (3,)], (), {}), ([(), ()], (), {}), ([(2, 3), (2, 1)], (), {}), ([(4, 3), (4,)], (), {}, True),
]


def _list_call(name):
    return lambda lib, tensors, *args, **kwargs: getattr(lib, name)(tensors, *args, **kwargs)


def _cat_errors():
    return [
        ErrorSample(Sample(([_float((2, 3)), _float((2, 4))],)), RuntimeError,
                    r"Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor "
                    r"number 1 in the list\."),
        ErrorSample(Sample(([_float((2, 3)), _float((3, 4))], 1)), RuntimeError,
                    r"Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor "
                    r"number 1 in the list\."),
        ErrorSample(Sample(([_float((2, 3)), _float((2, 3, 1))], 1)), RuntimeError,
                    "Tensors must have same number of dimensions: got 2 and 3"),
        ErrorSample(Sample(([_float(()), _float(())],)), RuntimeError, "zero-dimensional tensor"),
        ErrorSample(Sample(([_float((2, 3)), _float((2, 3))], 2)), IndexError, "Dimension out of range"),
    ]


def _cat_promotion_samples(dtype, rng):
    samples = _samples(_CAT_CASES, dtype, rng)
    other = "float16" if dtype != "float16" else "int32"
    samples.insert(3, Sample(([_array((2, 3), dtype, rng), _array((1, 3), other, rng)],), name="promotion"))
    return samples


def _cat_op(name):
    return OpInfo(name, _cat_promotion_samples, call=_list_call(name), dtypes=ALL_WITH_COMPLEX, supports_out=True,
                  error_inputs=_cat_errors)


def _list_op(name, cases, errors=None, out=True):
    return OpInfo(name, _maker(cases), call=_list_call(name), dtypes=ALL_WITH_COMPLEX, supports_out=out,
                  error_inputs=errors)


def _interleave_samples(dtype, rng):
    samples = _samples([((2, 3), (2,), {}), ((2, 3), (3,), {"dim": 1}), ((2, 3), (2,), {"dim": -2}),
                        ((), (3,), {}), ((0, 2), (2,), {"dim": 0}), ((2, 3), (0,), {"dim": 1}),
                        ((4, 3), (2,), {"dim": 1}, True)], dtype, rng)
    samples.append(Sample((_array((3, 2), dtype, rng), np.array([1, 0, 2], np.int64)), {"dim": 0}))
    samples.append(Sample((_array((3, 2), dtype, rng), np.array([2, 1], np.int64)), {"dim": 1}))
    samples.append(Sample((_array((3,), dtype, rng), np.array([2], np.int64))))
    return samples


def _meshgrid_samples(dtype, rng):
    return [
        Sample((_array((3,), dtype, rng), _array((2,), dtype, rng)), {"indexing": "ij"}),
        Sample((_array((3,), dtype, rng), _array((2,), dtype, rng)), {"indexing": "xy"}),
        Sample((_array((3,), dtype, rng), _array((), dtype, rng), _array((4,), dtype, rng)), {"indexing": "xy"}),
        Sample((_array((3,), dtype, rng),), {"indexing": "ij"}),
        Sample((_array((0,), dtype, rng), _array((2,), dtype, rng)), {"indexing": "ij"}),
        Sample((_array((4,), dtype, rng), _array((3,), dtype, rng)), {"indexing": "xy"}, noncontiguous=True),
    ]


def _cartesian_samples(dtype, rng):
    return [
        Sample((_array((3,), dtype, rng), _array((2,), dtype, rng))),
        Sample((_array((2,), dtype, rng), _array((2,), dtype, rng), _array((3,), dtype, rng))),
        Sample((_array((3,), dtype, rng),)),
        Sample((_array((0,), dtype, rng), _array((2,), dtype, rng))),
    ]


def _atleast_samples(dtype, rng):
    samples = [Sample((_array(s, dtype, rng),)) for s in [(), (3,), (2, 3), (2, 3, 2), (1, 2, 1, 2), (0,)]]
    samples.append(Sample((_array((), dtype, rng), _array((2,), dtype, rng))))
    samples.append(Sample(([_array((), dtype, rng), _array((2, 2), dtype, rng)],)))
    samples.append(Sample((_array((4, 3), dtype, rng),), noncontiguous=True))
    return samples


MOVEMENT_OPS = [
    _cat_op("cat"),
    _cat_op("concat"),
    _cat_op("concatenate"),
    _list_op("stack", _STACK_CASES, errors=_errors(
        _one(([_float((2, 3)), _float((2, 4))],), RuntimeError,
             r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 and \[2, 4\] at entry 1"),
        _one(([],), RuntimeError, "stack expects a non-empty TensorList"),
        _one(([_float((2, 3))], 3), IndexError, "Dimension out of range"))),
    _list_op("hstack", _HSTACK_CASES),
    _list_op("vstack", _VSTACK_CASES),
    _list_op("row_stack", _VSTACK_CASES),
    _list_op("dstack", _DSTACK_CASES),
    _list_op("column_stack", _COLUMN_STACK_CASES),
    _shapes_op("repeat", [((2, 3), (2, 1), {}), ((2, 3), ((1, 2, 3),), {}), ((3,), (2,), {}), ((), (2, 3), {}),
                          ((2, 3), (0, 2), {}), ((0, 2), (2, 2), {}), ((4, 3), (2, 1, 2), {}, True)],
               call=_method_call("repeat"),
               errors=_errors(_one((_float((2, 3)), 2), RuntimeError, "can not be smaller than number of dimensions"),
                              _one((_float((2, 3)), -1, 2), RuntimeError, "negative dimension"))),
    _shapes_op("tile", [((2, 3), ((2, 1),), {}), ((2, 3), ((2,),), {}), ((3,), ((2, 2),), {}), ((), ((2,),), {}),
                        ((0, 2), ((2, 2),), {}), ((4, 3), ((2, 1, 2),), {}, True)], method="tile"),
    OpInfo("repeat_interleave", _interleave_samples, method="repeat_interleave", dtypes=ALL_WITH_COMPLEX,
           meta=False,
           error_inputs=_errors(
               _one((_float((3,)), np.array([1, 2])), RuntimeError, "repeats must have the same size as input"),
               _one((_float((3,)), np.array([1, -2, 1])), RuntimeError, "repeats can not be negative"),
               _one((_float((3,)), -1), RuntimeError, "Repeats must be non-negative"))),
    _shapes_op("flip", [((2, 3), ((0,),), {}), ((2, 3, 4), ((0, -1),), {}), ((2, 3), ((),), {}),
                        ((), ((0,),), {}), ((0, 3), ((1,),), {}), ((4, 3), ((0, 1),), {}, True)],
               method="flip", errors=_error((_float((2, 3)), (0, 0)), RuntimeError, "appears multiple times")),
    _shapes_op("fliplr", [((2, 3), (), {}), ((2, 3, 2), (), {}), ((0, 2), (), {}), ((4, 3), (), {}, True)],
               method="fliplr", errors=_error((_float((2,)),), RuntimeError, r"Input must be >= 2-d\.")),
    _shapes_op("flipud", [((2, 3), (), {}), ((3,), (), {}), ((0,), (), {}), ((4, 3), (), {}, True)],
               method="flipud", errors=_error((_float(()),), RuntimeError, r"Input must be >= 1-d\.")),
    _shapes_op("roll", [((2, 3), (1,), {}), ((2, 3), (-4,), {}), ((2, 3), (1, 0), {}), ((2, 3), ((1, 2), (0, -1)), {}),
                        ((2, 3), (5, 1), {}), ((), (1,), {}), ((0, 3), (1, 1), {}), ((4, 3), (1, 0), {}, True),
                        ((4, 3), (2,), {}, True)],
               method="roll",
               errors=_errors(_one((_float((2, 3)), 1, (0, 1)), RuntimeError, "shifts and dimensions must align"),
                              _one((_float((2, 3)), (1, 2)), RuntimeError, "shifts and dimensions must align"))),
    _shapes_op("rot90", [((2, 3), (), {}), ((2, 3), (2,), {}), ((2, 3), (3,), {}), ((2, 3), (-1,), {}),
                         ((2, 3), (0,), {}), ((2, 3, 4), (1, (2, 0)), {}), ((2, 3, 4), (1, (-1, -2)), {}),
                         ((0, 3), (1,), {}), ((4, 3), (1,), {}, True)],
               method="rot90",
               errors=_errors(_one((_float((2, 3)), 1, (0, 0)), RuntimeError, "expected rotation dims to be different"),
                              _one((_float((2, 3)), 1, (0,)), RuntimeError, "expected total rotation dims == 2"),
                              _one((_float((2,)),), RuntimeError, "expected total dims >= 2"))),
    *[
        _shapes_op(name, [((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}), ((2, 3, 3), (), {}),
                          ((3, 4), (), {"diagonal": 5}), ((3, 4), (-5,), {}), ((0, 3), (), {}),
                          ((4, 3), (), {}, True)],
                   method=name, inplace=name + "_", supports_out=True,
                   errors=_error((_float((2,)),), RuntimeError, "must have at least 2 dimensions"))
        for name in ("tril", "triu")
    ],
    _shapes_op("diag", [((3,), (), {}), ((3,), (1,), {}), ((3,), (-2,), {}), ((3, 4), (), {}), ((3, 4), (2,), {}),
                        ((3, 4), (-1,), {}), ((3, 4), (6,), {}), ((0,), (), {}), ((4, 3), (), {}, True)],
               method="diag", supports_out=True,
               errors=_errors(_one((_float((2, 3, 4)),), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
                              _one((_float(()),), RuntimeError, "Got 0D"))),
    _shapes_op("diag_embed", [((3,), (), {}), ((2, 3), (), {}), ((2, 3), (1,), {}), ((2, 3), (-1, 0, 2), {}),
                              ((2, 3), (), {"offset": 2, "dim1": -1, "dim2": 0}), ((0,), (), {}),
                              ((4, 3), (), {}, True)],
               method="diag_embed",
               errors=_error((_float((2,)), 0, 0, 0), RuntimeError, "diagonal dimensions cannot be identical")),
    _shapes_op("diagflat", [((3,), (), {}), ((2, 2), (), {}), ((2, 2), (-1,), {}), ((), (), {}), ((0,), (), {}),
                            ((4, 3), (1,), {}, True)], method="diagflat"),
    OpInfo("meshgrid", _meshgrid_samples, dtypes=ALL_WITH_COMPLEX,
           error_inputs=_errors(
               _one((_float((2, 2)),), RuntimeError, "Expected 0D or 1D tensor", indexing="ij"),
               _one((_float((2,)),), RuntimeError, 'indexing must be one of "xy" or "ij"', indexing="foo"),
               _one((_float((2,)), np.ones(2, np.int64)), RuntimeError, "same dtype", indexing="ij"))),
    OpInfo("cartesian_prod", _cartesian_samples, dtypes=ALL_WITH_COMPLEX,
           error_inputs=_error((_float((2, 2)),), RuntimeError, r"Expect a 1D vector, but got shape \[2, 2\]")),
    _shapes_op("combinations", [((4,), (), {}), ((4,), (3,), {}), ((3,), (), {"with_replacement": True}),
                                ((3,), (1,), {}), ((3,), (4,), {}), ((0,), (), {}), ((5,), (2,), {}, True)],
               errors=_error((_float((2, 2)),), RuntimeError, "Expect a 1D vector")),
    OpInfo("atleast_1d", _atleast_samples, dtypes=ALL_WITH_COMPLEX),
    OpInfo("atleast_2d", _atleast_samples, dtypes=ALL_WITH_COMPLEX),
    OpInfo("atleast_3d", _atleast_samples, dtypes=ALL_WITH_COMPLEX),
]

OPS = VIEW_OPS + MOVEMENT_OPS
