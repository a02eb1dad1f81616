"""OpInfos for indexing: getitem/setitem keys, gather/scatter, index_* ops, masks, take, nonzero.

Index tensors are NumPy int64/bool arrays in the samples (build_value makes them tensors, never requiring
grad); ints and slices in keys pass through.  Ops whose output shape depends on the data (nonzero,
masked_select, boolean keys) set meta=False.  scatter/scatter_add/index_copy samples use distinct target
positions where torch's result would otherwise depend on write order.
"""

from __future__ import annotations

import numpy as np

from ..core import ALL_TYPES, FLOATING, ErrorSample, OpInfo, Sample, make_array

DATA_TYPES = ALL_TYPES + ("complex64",)
NUMERIC = tuple(d for d in ALL_TYPES if d != "bool")


def _i(*values):
    return np.array(values, np.int64)


def _getitem(lib, tensor, key):
    return tensor[key]


def _setitem(lib, tensor, key, value):
    out = tensor.clone()
    out[key] = value
    return out


def _getitem_samples(dtype, rng):
    x = make_array((3, 4, 5), dtype, rng)
    keys = [1, (slice(None), slice(1, None, 2)), (Ellipsis, None, 2), _i(2, 0, 2), (slice(None), _i(1, 1, 3)),
            (_i(0, 2), slice(None), _i(1, 4)), (1, slice(None), _i(0, 4)), (np.array([[0], [2]]), _i(1, 3)),
            (None, _i(0, 1), None, _i(1, 2)), np.array(1), (Ellipsis, _i())]
    samples = [Sample((x, key)) for key in keys]
    samples.append(Sample((make_array((4, 3), dtype, rng), (_i(3, 0), 1)), noncontiguous=True, name="noncontiguous"))
    return samples


def _getitem_bool_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    mask = np.array([[True, False, True, True], [False] * 4, [True, True, False, False]])
    return [Sample((x, mask)), Sample((x, (np.array([True, False, True]),))), Sample((x, (slice(None), mask[0]))),
            Sample((x, (np.array([False, True, True]), _i(1, 3)))), Sample((x, True)), Sample((x, np.array(False))),
            Sample((make_array((), dtype, rng), np.array(True)), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), mask.T), noncontiguous=True, name="noncontiguous")]


def _getitem_errors():
    x = np.zeros((3, 4), np.float32)
    return [
        ErrorSample(Sample((x, 5)), IndexError, r"^index 5 is out of bounds for dimension 0 with size 3$"),
        ErrorSample(Sample((x, (0, 0, 0))), IndexError, "too many indices for tensor of dimension 2"),
        ErrorSample(Sample((x, (slice(None), _i(0, 4)))), IndexError,
                    "index 4 is out of bounds for dimension 0 with size 4"),
        ErrorSample(Sample((x, np.array([1.0], np.float32))), IndexError, "tensors used as indices must be long"),
        ErrorSample(Sample((x, np.array([True, False]))), IndexError, r"shape of the mask \[2\] at index 0"),
        ErrorSample(Sample((x, slice(None, None, -1))), ValueError, "step must be greater than zero"),
        ErrorSample(Sample((x, (_i(0, 1), _i(0, 1, 2)))), IndexError,
                    r"could not be broadcast together with shapes \[2\], \[3\]"),
    ]


def _setitem_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    value = make_array((), dtype, rng)
    return [Sample((x, 1, make_array((4,), dtype, rng))), Sample((x, (slice(None), 2), value)),
            Sample((x, (_i(0, 2), slice(1, 3)), make_array((2, 2), dtype, rng))),
            Sample((x, (slice(None), _i(3, 0)), make_array((1, 2), dtype, rng))),
            Sample((x, (1, slice(None), None), make_array((4, 1), dtype, rng))),
            Sample((x, Ellipsis, make_array((4,), dtype, rng))),
            Sample((make_array((4, 3), dtype, rng), (_i(1, 3), 0), make_array((2,), dtype, rng)), noncontiguous=True,
                   name="noncontiguous")]


def _setitem_bool_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    mask = np.array([[True, False, True, True], [False] * 4, [True, True, False, False]])
    return [Sample((x, mask, make_array((5,), dtype, rng))), Sample((x, mask, make_array((), dtype, rng))),
            Sample((x, np.array([True, False, True]), make_array((4,), dtype, rng)))]


# ---------------------------------------------------------------- gather / scatter


def _distinct_rows(rng, rows, columns, size):
    """An index (rows, columns) whose entries are distinct within each column, all < size."""
    return np.stack([rng.permutation(size)[:rows] for _ in range(columns)], axis=1).astype(np.int64)


def _gather_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, 1, rng.integers(0, 4, (3, 2)))), Sample((x, 0, rng.integers(0, 3, (2, 4)))),
            Sample((x, -1, rng.integers(0, 4, (2, 3))), name="smaller"), Sample((x, 1, np.zeros((3, 0), np.int64))),
            Sample((make_array((), dtype, rng), 0, np.array(0)), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), 0, rng.integers(0, 4, (4, 3))), noncontiguous=True, name="nc")]


def _gather_errors():
    x = np.zeros((3, 4), np.float32)
    return [ErrorSample(Sample((x, 1, _i(7).reshape(1, 1))), RuntimeError,
                        "index 7 is out of bounds for dimension 1 with size 4"),
            ErrorSample(Sample((x, 1, np.array([[0.0]]))), RuntimeError, "Expected dtype int32/int64 for index"),
            ErrorSample(Sample((x, 1, _i(0, 1))), RuntimeError, "same number of dimensions")]


def _scatter_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    scalar = True if dtype == "bool" else 2
    return [Sample((x, 0, _distinct_rows(rng, 2, 4, 3), make_array((2, 4), dtype, rng))),
            Sample((x, 1, _distinct_rows(rng, 2, 3, 4).T.copy(), make_array((3, 3), dtype, rng)), name="src larger",
                   grad=False),  # torch: "ScatterBackward0 returned an invalid gradient" when src is larger
            Sample((x, 0, _distinct_rows(rng, 3, 2, 3), scalar), name="value"),
            Sample((x, 1, rng.integers(0, 4, (3, 3)), make_array((3, 3), dtype, rng)), {"reduce": "add"}, grad=False),
            Sample((x, 0, rng.integers(0, 3, (3, 4)), make_array((3, 4), dtype, rng)), {"reduce": "multiply"},
                   grad=False),
            Sample((make_array((), dtype, rng), 0, np.array(0), make_array((), dtype, rng)), name="0-d")]


def _scatter_add_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, 0, rng.integers(0, 3, (4, 4)), make_array((4, 4), dtype, rng))),
            Sample((x, 1, rng.integers(0, 4, (2, 6)), make_array((3, 6), dtype, rng)), grad=False),
            Sample((x, -1, np.zeros((3, 0), np.int64), make_array((3, 0), dtype, rng))),
            Sample((make_array((4, 3), dtype, rng), 0, rng.integers(0, 4, (4, 3)), make_array((4, 3), dtype, rng)),
                   noncontiguous=True, name="nc")]


def _scatter_errors():
    x = np.zeros((3, 4), np.float32)
    return [ErrorSample(Sample((x, 1, _i(7).reshape(1, 1), np.ones((1, 1), np.float32))), RuntimeError,
                        "index 7 is out of bounds for dimension 1 with size 4"),
            ErrorSample(Sample((x, 1, _i(0).reshape(1, 1), np.ones((1, 1), np.float64))), RuntimeError,
                        "Expected self.dtype to be equal to src.dtype")]


def _scatter_reduce_samples(dtype, rng):
    samples = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            x = make_array((3, 4), dtype, rng, exclude_zero=True)
            index = rng.integers(0, 3, (4, 2))
            samples.append(Sample((x, 0, index, make_array((4, 2), dtype, rng, exclude_zero=True), reduce),
                                  {"include_self": include_self}, name=f"{reduce} {include_self}"))
    return samples


# ---------------------------------------------------------------- index_* along a dim


def _index_select_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, 0, _i(2, 0, 2))), Sample((x, 1, _i(3, 1))), Sample((x, -1, _i())),
            Sample((x, 0, np.array([1, 0], np.int32)), name="int32"), Sample((x, 1, np.array(2)), name="0-d index"),
            Sample((make_array((), dtype, rng), 0, _i(0, 0)), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), 1, _i(2, 0)), noncontiguous=True, name="nc")]


def _index_select_errors():
    x = np.zeros((3, 4), np.float32)
    return [ErrorSample(Sample((x, 0, _i(5))), IndexError, "index out of range in self"),
            ErrorSample(Sample((x, 0, np.array([0.0]))), RuntimeError, "Expected dtype int32 or int64 for index")]


def _index_add_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    alpha = True if dtype == "bool" else 2
    return [Sample((x, 0, _i(2, 0, 2), make_array((3, 4), dtype, rng))),
            Sample((x, 1, _i(3, 1), make_array((3, 2), dtype, rng)), {"alpha": alpha}),
            Sample((make_array((4, 3), dtype, rng), 0, _i(1, 1), make_array((2, 3), dtype, rng)), noncontiguous=True,
                   name="nc")]


def _index_copy_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, 0, _i(2, 0), make_array((2, 4), dtype, rng))),
            Sample((x, -1, _i(3, 1, 0), make_array((3, 3), dtype, rng))),
            Sample((make_array((4, 3), dtype, rng), 1, _i(1), make_array((4, 1), dtype, rng)), noncontiguous=True,
                   name="nc")]


def _index_along_errors(name):
    def errors():
        x = np.zeros((3, 4), np.float32)
        source = np.ones((1, 4), np.float32)
        bad = ErrorSample(Sample((x, 0, _i(5), source)), (IndexError, RuntimeError), "index 5 is out of bounds")
        return [bad] if name != "index_fill" else [ErrorSample(Sample((x, 0, _i(5), 1.0)), IndexError, "out of bounds")]
    return errors


def _index_fill_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    value = True if dtype == "bool" else 3
    return [Sample((x, 0, _i(2, 0), value)), Sample((x, 1, _i(3, 3, -4), value)),
            Sample((x, 1, _i(1), make_array((), dtype, rng)), name="0-d value"),
            Sample((make_array((4, 3), dtype, rng), 1, _i(0), value), noncontiguous=True, name="nc")]


def _index_put_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, (_i(0, 2),), make_array((2, 4), dtype, rng))),
            Sample((x, (_i(0, 2, 0), _i(1, 3, 1)), make_array((3,), dtype, rng)), {"accumulate": True}),
            Sample((x, (_i(2), _i(0, 3)), make_array((), dtype, rng))),
            Sample((x, (_i(1, 1),), make_array((4,), dtype, rng)), {"accumulate": True})]


# ---------------------------------------------------------------- masks, take, nonzero


def _masked_fill_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    value = True if dtype == "bool" else 2
    return [Sample((x, make_array((3, 4), "bool", rng), value)), Sample((x, make_array((4,), "bool", rng), value)),
            Sample((x, make_array((3, 1), "bool", rng), make_array((), dtype, rng)), name="0-d value"),
            Sample((make_array((), dtype, rng), np.array(True), value), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), make_array((4, 3), "bool", rng), value), noncontiguous=True,
                   name="nc")]


def _masked_fill_errors():
    x = np.zeros((3, 4), np.float32)
    return [ErrorSample(Sample((x, np.ones(2, bool), 1.0)), RuntimeError, r"size of tensor a \(4\) must match"),
            ErrorSample(Sample((x, np.ones(4, np.float32), 1.0)), RuntimeError, "only supports boolean masks"),
            ErrorSample(Sample((x, np.ones(4, bool), np.ones(2, np.float32))), RuntimeError, "0-dimensional value")]


def _masked_select_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, make_array((3, 4), "bool", rng))), Sample((x, make_array((4,), "bool", rng))),
            Sample((make_array((4,), dtype, rng), make_array((3, 1), "bool", rng)), name="broadcast input"),
            Sample((make_array((), dtype, rng), np.array(True)), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), make_array((4, 3), "bool", rng)), noncontiguous=True, name="nc")]


def _masked_scatter_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, make_array((3, 4), "bool", rng), make_array((3, 4), dtype, rng))),
            Sample((x, make_array((4,), "bool", rng), make_array((20,), dtype, rng))),
            Sample((make_array((4, 3), dtype, rng), make_array((4, 3), "bool", rng), make_array((4, 3), dtype, rng)),
                   noncontiguous=True, name="nc")]


def _take_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, rng.integers(-12, 12, (2, 3)))), Sample((x, _i())), Sample((x, np.array(5)), name="0-d index"),
            Sample((make_array((), dtype, rng), _i(0, 0, -1)), name="0-d"),
            Sample((make_array((4, 3), dtype, rng), _i(11, 0, 4)), noncontiguous=True, name="nc")]


def _take_errors():
    x = np.zeros((3, 4), np.float32)
    return [ErrorSample(Sample((x, _i(12))), IndexError, "out of range: tried to access index 12 on a tensor of 12"),
            ErrorSample(Sample((x, np.array([1], np.int32))), RuntimeError, "Expected a long tensor for index")]


def _take_along_dim_samples(dtype, rng):
    x = make_array((3, 4), dtype, rng)
    return [Sample((x, rng.integers(0, 4, (3, 2)), 1)), Sample((x, rng.integers(0, 3, (2, 1)), 0), name="broadcast"),
            Sample((x, rng.integers(0, 12, (5,))), name="flat"),
            Sample((make_array((4, 3), dtype, rng), rng.integers(0, 3, (4, 3)), -1), noncontiguous=True, name="nc")]


def _nonzero_samples(dtype, rng):
    samples = [Sample((make_array(s, dtype, rng, -1, 2),)) for s in ((), (0,), (6,), (3, 4), (2, 3, 2))]
    samples.append(Sample((make_array((3, 4), dtype, rng, -1, 2),), {"as_tuple": True}, name="as_tuple"))
    samples.append(Sample((make_array((), dtype, rng, -1, 2),), {"as_tuple": True}, name="0-d as_tuple"))
    return samples


def _where_samples(dtype, rng):
    return [Sample((make_array(s, dtype, rng, -1, 2),)) for s in ((), (5,), (3, 4))]


OPS = [
    OpInfo("getitem", _getitem_samples, call=_getitem, dtypes=DATA_TYPES, error_inputs=_getitem_errors),
    OpInfo("getitem_bool", _getitem_bool_samples, call=_getitem, dtypes=DATA_TYPES, meta=False),
    OpInfo("setitem", _setitem_samples, call=_setitem, dtypes=DATA_TYPES),
    OpInfo("setitem_bool", _setitem_bool_samples, call=_setitem, dtypes=DATA_TYPES, meta=False),
    OpInfo("index_select", _index_select_samples, dtypes=DATA_TYPES, method="index_select", supports_out=True,
           error_inputs=_index_select_errors),
    OpInfo("gather", _gather_samples, dtypes=DATA_TYPES, method="gather", supports_out=True,
           error_inputs=_gather_errors),
    OpInfo("scatter", _scatter_samples, dtypes=DATA_TYPES, method="scatter", inplace="scatter_",
           error_inputs=_scatter_errors, tolerances={"float16": (1e-3, 1e-2), "bfloat16": (1.6e-2, 1e-1)}),
    OpInfo("scatter_add", _scatter_add_samples, dtypes=NUMERIC, method="scatter_add", inplace="scatter_add_",
           tolerances={"float16": (2e-3, 2e-2), "bfloat16": (2e-2, 1e-1)}),
    OpInfo("scatter_reduce", _scatter_reduce_samples, dtypes=FLOATING + ("int64", "int32"), method="scatter_reduce",
           inplace="scatter_reduce_", max_samples=10, tolerances={"float16": (2e-3, 5e-2), "bfloat16": (2e-2, 5e-1)}),
    OpInfo("index_add", _index_add_samples, dtypes=NUMERIC, method="index_add", inplace="index_add_",
           error_inputs=_index_along_errors("index_add"), tolerances={"bfloat16": (2e-2, 1e-1)}),
    OpInfo("index_copy", _index_copy_samples, dtypes=DATA_TYPES, method="index_copy", inplace="index_copy_",
           error_inputs=_index_along_errors("index_copy")),
    OpInfo("index_fill", _index_fill_samples, dtypes=DATA_TYPES, method="index_fill", inplace="index_fill_",
           error_inputs=_index_along_errors("index_fill")),
    OpInfo("index_put", _index_put_samples, dtypes=DATA_TYPES, method="index_put", inplace="index_put_",
           tolerances={"bfloat16": (2e-2, 1e-1)}),
    OpInfo("masked_fill", _masked_fill_samples, dtypes=DATA_TYPES, method="masked_fill", inplace="masked_fill_",
           error_inputs=_masked_fill_errors),
    OpInfo("masked_select", _masked_select_samples, dtypes=DATA_TYPES, method="masked_select", supports_out=True,
           meta=False),
    OpInfo("masked_scatter", _masked_scatter_samples, dtypes=DATA_TYPES, method="masked_scatter",
           inplace="masked_scatter_"),
    OpInfo("take", _take_samples, dtypes=DATA_TYPES, method="take", error_inputs=_take_errors),
    OpInfo("take_along_dim", _take_along_dim_samples, dtypes=DATA_TYPES, method="take_along_dim", supports_out=True),
    OpInfo("nonzero", _nonzero_samples, dtypes=DATA_TYPES, method="nonzero", grad=False, meta=False),
    OpInfo("argwhere", _where_samples, dtypes=DATA_TYPES, method="argwhere", grad=False, meta=False),
    OpInfo("where_condition", _where_samples, call=lambda lib, t: lib.where(t), dtypes=DATA_TYPES, grad=False,
           meta=False),
]
