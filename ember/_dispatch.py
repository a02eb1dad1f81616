"""One op declaration (`OpDef`) and the one dispatch path every op call takes.

    call(op, args, params):
        devices checked -> dtype rule (promotion) -> [meta: shapes only] ->
        cast operands -> backend impl -> wrap (views share storage) ->
        record the autograd node if grad mode is on and an input requires grad

An in-place method asks the first op call it makes to write straight into
its tensor (`inplace_target`); see NOTE [ In-place ops without a copy ].

`args` are the operands (Tensors, or Python scalars where the op takes them);
`params` are the op's non-tensor options, passed to `impl` and kept on the
autograd node.  The path is one plain function with no per-call lookups by
name: an op call costs a few microseconds over the NumPy call it makes.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from . import _dtype as dt
from ._autograd.grad_mode import state
from ._autograd.node import node_class
from ._backends import MetaArray
from ._backends.sparse_coo import SparseCOOArray

TRACE = os.environ.get("EMBER_TRACE_DISPATCH") == "1"
SAVE_INPUTS = 1
SAVE_RESULT = 2
EMPTY: dict = {}
HALF_TYPES = (dt.float16, dt.bfloat16)
Tensor = None  # set by ember._tensor (import cycle)
tracer = None  # graph capture (ember.compile) sets an object with record(op, args, params, results)
autocast = None  # ember.amp sets a function (op, args) -> args while an autocast region is active
# ember.profiler sets a function (op, args, params) -> results while a profile is recording; it times the call
# and runs it with this hook cleared (ember/profiler/_recorder.py)
profiler = None
# The generated in-place methods (ember/_ops/_api.py make_inplace) set inplace_target to their tensor; the next op
# call takes it (whether or not it writes) and sets inplace_written when it wrote its result there.
inplace_target = None
inplace_written = False
# ember/_ops/sparse_ops.py sets the function (op, args, params) -> results that runs a call with a sparse operand
# (NOTE [ Sparse COO tensors ] there)
sparse_dispatch = None
# ember/_autograd/forward_ad.py sets itself here while a dual level is active: each call's results get their
# tangents from `forward_ad.propagate` (NOTE [ Forward AD ] there)
forward_ad = None
INPLACE_OUT = os.environ.get("EMBER_INPLACE_OUT", "1") != "0"  # 0: every in-place op computes, then copies


class OpDef:
    """The single declaration of an op.

    impl(xp, *arrays, **params): the computation on an array module.
    backward(ctx, grad): input gradients, written in ember ops (so double backward works).
    dtype_rule(args, params) -> (compute dtype or None, result dtype).
    meta(args, params) -> result shape(s) without computing; None: evaluate impl on zero-stride dummies.
    saves: SAVE_INPUTS | SAVE_RESULT, what backward reads.
    view: the result is a view of args[0] (shares its storage).
    upcast_half: compute float16/bfloat16 in float32, as torch's CPU kernels do (opmath), then round.
    outputs: how many results impl returns (a tuple when > 1).
    data_dependent: the result's shape depends on the input's values (nonzero, unique); set after construction.
    out_impl(xp, out, *arrays, **params): optional, impl's exact computation written into `out` (an array of the
        result's shape and dtype) for in-place calls; arrays[0] may be `out` itself, so it writes `out` only after
        its last read of arrays[0].  It may return NotImplemented, before writing anything, to decline.
        See NOTE [ In-place ops without a copy ].
    """

    __slots__ = ("name", "impl", "backward", "dtype_rule", "meta", "saves", "view", "upcast_half", "grad_name",
                 "outputs", "node_class", "differentiable_outputs", "out_impl", "scatters_into_buffer", "snapshot",
                 "quantized", "quantized_capture", "data_dependent", "opmath_scalars", "grad_reads",
                 "opmath_backward", "half_impl")

    def __init__(self, name, impl, backward=None, *, dtype_rule=None, meta=None, saves=0, view=False,
                 upcast_half=True, grad_name=None, outputs=1, differentiable_outputs=None, out_impl=None) -> None:
        self.name = name
        self.impl = impl
        self.out_impl = out_impl
        self.backward = backward
        self.dtype_rule = dtype_rule or promote
        self.meta = meta
        self.saves = saves
        self.view = view
        self.upcast_half = upcast_half
        self.outputs = outputs
        self.differentiable_outputs = differentiable_outputs
        self.grad_name = grad_name or "".join(p.capitalize() for p in name.strip("_").split("_")) + "Backward0"
        self.node_class = node_class(self.grad_name)
        # a slicing view whose gradient the engine may add into its input's buffer (ember/_autograd/engine.py)
        self.scatters_into_buffer = False
        # the result's shape depends on the input's values (nonzero, unique, bincount): graph capture breaks here
        self.data_dependent = False
        # a Python number operand of a float16/bfloat16 call enters as float32, not rounded to the half type
        # (torch's mul and div kernels read a CPU scalar's original value; add, sub and pow round it)
        self.opmath_scalars = False
        # the backward is one kernel in torch (tanh_backward, gelu_backward, native_layer_norm_backward, ...),
        # which computes float16/bfloat16 in float32 and rounds each gradient once: the engine runs this op's
        # backward formula on float32 copies of the gradient and the saved tensors (ember/_autograd/node.py),
        # where the formula's ember ops would round after each step
        self.opmath_backward = False
        # half_impl(xp, half_np_dtype, *arrays, **params): impl for a float16/bfloat16 call whose torch kernel
        # rounds an intermediate to the half type (log_softmax's last-dim kernel); it gets the float32 arrays
        self.half_impl = None
        # for each input, the input positions its gradient formula reads (mul: the other operand), so that a
        # saved input no needed gradient reads may change in place before backward, as in torch (which saves
        # only what it reads); None: every saved input is checked
        self.grad_reads = None
        # params -> params for the backward node: copies of arrays the params share with tensors the caller
        # may still write (an index key built from a mask tensor), so backward sees the forward's values
        self.snapshot = None
        # what runs on quantized operands (NOTE [ Quantized dtypes ] in _dtype.py): False (refused, torch's
        # error), True (a movement op on the integers of a per-tensor tensor, the result keeps the qparams) or
        # a QuantizedCPU kernel (op, args, params) -> result, see _call_quantized and _ops/quantized_ops.py
        self.quantized = False
        # ember.compile records a call of this op with a quantized operand as a node (its kernel reads the
        # quantized operands at each replay) instead of breaking the graph; False: the call is a graph break
        self.quantized_capture = False

    def __repr__(self) -> str:
        return f"OpDef({self.name})"


# ---------------------------------------------------------------- dtype rules


def result_type_of_args(args) -> dt.dtype:
    """torch.result_type over operands: see NOTE [ Weak scalars ] in _dtype.py."""
    dims, zeros, scalars = [], [], []
    for a in args:
        if isinstance(a, Tensor):
            (dims if a._data.ndim else zeros).append(a._dtype)
        elif a is not None:
            scalars.append(dt.scalar_dtype(a))
    return dt.result_type_of(dims, zeros, scalars)


def promote(args, params):
    """Binary/ternary arithmetic: compute and return in the promoted type."""
    first = args[0]
    if isinstance(first, Tensor):
        # the common case first: tensors of one dtype, with Python numbers that can't lift it (NOTE [ Weak scalars ])
        dtype = first._dtype
        for a in args:
            if isinstance(a, Tensor):
                if a._dtype is not dtype:
                    break
            elif not (a is None or (type(a) is float and dtype.category >= 2)
                      or (type(a) is int and dtype.category >= 1)):
                break
        else:
            return dtype, dtype
    result = result_type_of_args(args)
    return result, result


def promote_float(args, params):
    """Float math (exp, sin, true division): integral and bool inputs compute in the default float dtype."""
    result = args[0]._dtype if len(args) == 1 else result_type_of_args(args)
    if result.category < 2:
        result = dt.get_default_dtype()
    return result, result


def compare(args, params):
    """Comparisons and logical ops: compute in the promoted type, return bool."""
    compute, _ = promote(args, params)
    return compute, dt.bool_


def keep(args, params):
    """Movement, view and indexing ops: the dtype of the first operand, no casting."""
    return None, args[0]._dtype


# ---------------------------------------------------------------- dispatch


def capture_break(reason: str) -> None:
    """Under graph capture (ember.compile's tracer), end the graph here: the call runs eagerly.  A stand-in
    tracer with only `record` and `inplace` (the protocol above) is left alone."""
    graph_break = getattr(tracer, "graph_break", None)
    if graph_break is not None:
        graph_break(reason)


def run_as_action(kind: str, fn, args: tuple, operand=None):
    """A training-loop call inside a function ember.compile captures -- `optimizer.zero_grad()` before the ops,
    `loss.backward()` and `optimizer.step()` after them: when the tracer can replay it around the graph
    (Tracer.take_action), it is recorded and run now with capture suspended; returns (True, its result).
    (False, None) when it cannot: the caller breaks the graph as before."""
    global tracer
    take = getattr(tracer, "take_action", None)
    if take is None or not take(kind, fn, args, operand):
        return False, None
    saved, tracer = tracer, None
    result = None
    try:
        result = fn(*args)
    finally:
        tracer = saved
        saved.after_action(result)
    return True, result


def note_made(tensor) -> None:
    """`tensor` holds new memory made during a capture (a factory's result): ember.compile keeps it local to
    each call (Tracer.created).  Tensor._make notes arrays that own their memory; torch.tensor() notes its
    copy of the data, whose array is a view of a temporary."""
    created = getattr(tracer, "created", None)
    if created is not None:
        created[id(tensor)] = tensor


def note_recipe(tensor, fn, args: tuple, kwargs: dict) -> None:
    """`tensor` was just made by `fn(*args, **kwargs)` from Python numbers alone (arange(T), zeros(B, T)):
    ember.compile may call it again with other sizes instead of keeping the tensor as a constant, so that a
    graph using it can serve every size (Tracer.recipes)."""
    recipes = getattr(tracer, "recipes", None)
    if recipes is not None:
        recipes[id(tensor)] = (tensor, fn, args, kwargs, False)


# The ops that run on torch's shell dtypes uint16/32/64 (NOTE [ Shell dtypes ] in _dtype.py), besides views:
# the kernels torch's CPU build has for them, and the movement ops beneath creation, casts and indexing.
_MOVEMENT_OPS = {"cat", "stack", "index", "clone", "_to_copy", "fill", "zero", "where", "eq", "ne", "isnan", "mul"}
_UNSIGNED_OPS = frozenset(_MOVEMENT_OPS | {
    "div", "bitwise_and", "bitwise_or", "bitwise_xor", "sum", "prod", "cumsum", "cumprod", "all", "any",
    "nan_to_num", "isfinite", "floor", "ceil", "round", "trunc", "sort", "unique", "unique_consecutive", "repeat",
    "roll", "diag_embed",
})
_FLOAT8_OPS = frozenset(_MOVEMENT_OPS | {"abs", "mm", "matmul", "bmm", "linear"})
SHELL_OPS = {dtype: _UNSIGNED_OPS if dtype.category == 1 else _FLOAT8_OPS for dtype in dt.SHELL_DTYPES}
SHELL_OPS[dt.float8_e8m0fnu] = frozenset(_MOVEMENT_OPS)  # a scale format: no abs, no matmul


def host_read(what: str) -> None:
    """Library code is about to compute a result from tensor values on the host, outside an op (a quantized
    kernel, matrix_rank's count): under graph capture that result would be a constant, so it is a break."""
    if tracer is not None:
        capture_break(f"{what}: computed from tensor values outside ember's ops, a replay would repeat it")


def call(op: OpDef, args: tuple, params: dict = EMPTY):
    """Run one op call through the one dispatch path; see the module docstring."""
    if profiler is not None:
        return profiler(op, args, params)
    if tracer is not None and getattr(tracer, "scalars", None) is not None:
        split = tracer.scalars.split(args, params)
        if split is not None:  # a float argument's stand-in (ember/_compile/scalars.py): recorded as a marker
            return _call_with_stand_ins(op, args, params, split)
    if inplace_target is not None and _write_in_place(op, args, params):
        return args[0]
    if autocast is not None:
        args = autocast(op, args)
    device = None
    needs_grad = False
    shell = None
    for a in args:
        if isinstance(a, Tensor):
            if device is None:
                device = a._device
            elif a._device is not device:
                device = _merge_devices(op, device, a)
            if a._base is not None:
                a._refresh_view()
            if a._requires_grad:
                needs_grad = True
            if a._dtype.restricted:  # quantized and shell dtypes: NOTE [ Shell dtypes ] in _dtype.py
                if a._dtype.category < 0:
                    return _call_quantized(op, args, params)
                shell = a._dtype
            if type(a._data) is SparseCOOArray:
                return sparse_dispatch(op, args, params)
    if device is None:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got {[type(a).__name__ for a in args]}")
    if TRACE:
        print(f"[ember dispatch] {op.name} {[_describe(a) for a in args]} {params or ''}", file=sys.stderr)
    compute, out_dtype = op.dtype_rule(args, params)
    if shell is not None and (compute is None or compute.restricted) and not op.view and \
            op.name not in SHELL_OPS[shell]:  # a kernel torch lacks (one computing in float32, as u16 + f32, runs)
        raise NotImplementedError(f'"{op.name}_cpu" not implemented for \'{dt.SCALAR_NAMES[shell.name]}\'')
    if tracer is not None:
        tracer.drawing = "generator" in params  # a recorded random op's draw (see Generator._rng)
    if device.type == "meta":
        results = _call_meta(op, args, params, compute, out_dtype)
    else:
        results = _call_backend(op, args, params, compute, out_dtype, device)
    if needs_grad and state.enabled and op.backward is not None:
        _record(op, args, params, results)
    if forward_ad is not None:
        forward_ad.propagate(op, args, params, results)
    if tracer is not None:
        tracer.record(op, args, params, results)
    return results


def _call_with_stand_ins(op: OpDef, args: tuple, params: dict, split: tuple):
    """The op runs on the plain numbers and the tracer's record takes the markers (tracer.scalars.pending).  (Its
    autograd node saves the plain numbers: a backward() in the function is replayed as an action around the
    graph, on the replay's own autograd nodes, made with each call's values.)"""
    plain_args, plain_params, marked_args, marked_params = split
    pending = tracer.scalars.pending
    pending.append((op, marked_args, marked_params))
    try:
        results = call(op, plain_args, plain_params)
    finally:
        pending.pop()
    return results


# NOTE [ In-place ops without a copy ]
# An in-place method is its out-of-place function followed by Tensor._inplace_from (NOTE [ In-place ops and
# views ] in _tensor.py): a full-size result is allocated, computed, then copied into self -- two passes over
# memory where torch makes one, and optimizer steps are chains of such ops.  So the generated method
# (make_inplace in _ops/_api.py) sets `inplace_target = self` and calls the function; the first op call the
# function makes takes the target and, when nothing can tell the difference, runs the op's `out_impl` straight
# into self's array, bumps the storage version and returns self.  That needs all of:
#   - the op declares out_impl, and self is its first operand;
#   - no autograd node would be recorded (grad mode off, or no operand requires grad), no graph capture
#     (`tracer`, which must see an op call and an inplace) and no autocast;
#   - a writable NumPy array (cpu; meta and cuda take the general path), all operands on its device;
#   - the op computes and returns self's dtype (float16/bfloat16 compute in float32: general path), and the
#     operands broadcast to self's shape;
#   - no other operand overlaps self's memory (out_impls may write in several steps; an exact alias of self
#     through another tensor is rare enough to take the general path too).
# Otherwise nothing is written and the function runs as usual.  Values are the out-of-place op's bit for bit:
# out_impl performs impl's operations in impl's order.  make_inplace checks that the function returned self
# whenever its first op call wrote in place, so a function doing more work after that call fails loudly.


def _write_in_place(op, args, params) -> bool:
    """The fast path of NOTE [ In-place ops without a copy ]: True when op's result was written into args[0]."""
    global inplace_target, inplace_written
    target = inplace_target
    inplace_target = None  # only the function's first op call may write into the target
    if op.out_impl is None or args[0] is not target or tracer is not None or autocast is not None:
        return False
    if forward_ad is not None:  # the tangent needs the general path (NOTE [ Forward AD ])
        return False
    if target._dtype.restricted:  # quantized or shell: the general path decides (NOTE [ Quantized dtypes ])
        return False
    out = target._data
    if type(out) is not np.ndarray or not out.flags.writeable:
        return False
    if target._base is not None:
        target._refresh_view()
    needs_grad = target._requires_grad
    device = target._device
    shape = out.shape
    for a in args[1:]:
        if isinstance(a, Tensor):
            if a._device is not device:
                return False
            if a._base is not None:
                a._refresh_view()
            if a._requires_grad:
                needs_grad = True
            array = a._data
            if type(array) is SparseCOOArray:  # sparse kernels compute out of place (sparse_ops.py)
                return False
            if array.shape != shape and not _broadcasts_to(array.shape, shape):
                return False
            if _overlaps(array, out):
                return False
    if needs_grad and state.enabled:
        return False
    compute, out_dtype = op.dtype_rule(args, params)
    dtype = target._dtype
    if out_dtype is not dtype or (compute is not None and compute is not dtype):
        return False
    if op.upcast_half and dtype in HALF_TYPES:
        return False
    arrays = [out]
    for a in args[1:]:
        if isinstance(a, Tensor):
            array = a._data
            if compute is not None and a._dtype is not compute:
                array = array.astype(compute.np_dtype)
            arrays.append(array)
        else:
            arrays.append(a)
    if TRACE:
        print(f"[ember dispatch] {op.name} (in place) {[_describe(a) for a in args]} {params or ''}", file=sys.stderr)
    if op.out_impl(np, out, *arrays, **params) is NotImplemented:
        return False
    target._bump_version()
    inplace_written = True
    return True


def _call_quantized(op, args, params):
    """An op with a quantized operand: the op's QuantizedCPU kernel, as torch's dispatcher picks one
    (NOTE [ Quantized dtypes ] in _dtype.py).  `op.quantized` is
      True:      a movement op: the op on the integers of its one per-tensor operand; the result (a view when the
                 op makes one) keeps the dtype and quantization parameters;
      a kernel:  kernel(op, args, params) -> result (ember/_ops/quantized_ops.py);
      False:     torch has no QuantizedCPU kernel: its NotImplementedError.
    No autograd: torch's quantized tensors do not require grad."""
    kernel = op.quantized
    if not kernel:
        raise _quantized_error(op)
    if tracer is not None and not (op.quantized_capture and kernel is not True):
        # ember.compile does not capture quantized tensors, except as operands of an op declaring
        # quantized_capture (the dynamic quantized linear's weight): its replay runs the kernel again
        tracer.graph_break("an op on a quantized tensor", next(a for a in args if isinstance(a, Tensor)))
    if kernel is not True:
        result = kernel(op, args, params)
        if tracer is not None and op.quantized_capture:
            tracer.record(op, args, params, result)
        return result
    tensor = args[0]
    if len(args) != 1 or tensor._qparams is None or tensor._qparams.axis is not None:
        raise _quantized_error(op)
    xp = device_module(tensor._device)
    array = op.impl(xp, tensor._data, **params) if params else op.impl(xp, tensor._data)
    result = _wrap(op, array, tensor._dtype, tensor._device, (tensor,))
    result._qparams = tensor._qparams
    return result


def _quantized_error(op) -> NotImplementedError:
    """torch's error for an op without a QuantizedCPU kernel (NOTE [ Quantized dtypes ] in _dtype.py)."""
    return quantized_error(f"aten::{op.name}")


def quantized_error(name: str) -> NotImplementedError:
    """torch's error for the operator `name` (e.g. 'aten::add') called with QuantizedCPU tensors."""
    return NotImplementedError(
        f"Could not run '{name}' with arguments from the 'QuantizedCPU' backend. This could be because "
        "the operator doesn't exist for this backend, or was omitted during the selective/custom build process "
        "(if using custom build)."
    )


def _broadcasts_to(shape, target_shape) -> bool:
    """Whether an operand of `shape` broadcasts to `target_shape` without growing it."""
    if len(shape) > len(target_shape):
        return False
    for size, target_size in zip(reversed(shape), reversed(target_shape)):
        if size != target_size and size != 1:
            return False
    return True


def _overlaps(array, out) -> bool:
    """Whether an operand may share memory with the output; the bounds check runs only when both come from
    the same base array (views of one storage), so unrelated tensors cost two attribute reads."""
    base = array.base
    out_base = out.base
    if base is None and out_base is None:
        return array is out
    if (array if base is None else base) is not (out if out_base is None else out_base):
        return False
    return np.may_share_memory(array, out)


def _call_backend(op, args, params, compute, out_dtype, device):
    if compute is None:
        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    elif op.upcast_half and compute in HALF_TYPES:
        # operands are first rounded to the half type (torch casts them to the common dtype), then widened
        arrays = [_as_half_compute_array(a, compute.np_dtype, op.opmath_scalars) for a in args]
    else:
        arrays = []
        for a in args:
            if isinstance(a, Tensor):
                array = a._data
                if a._dtype is not compute:
                    array = array.astype(compute.np_dtype)
                arrays.append(array)
            else:
                arrays.append(a)
    xp = _device_modules.get(device.type) or device_module(device)
    if xp is not np:
        arrays = _device_operands(arrays, args, device)
    try:
        if op.half_impl is not None and compute in HALF_TYPES and op.upcast_half:
            out = op.half_impl(xp, compute.np_dtype, *arrays, **params)
        else:
            out = op.impl(xp, *arrays, **params) if params else op.impl(xp, *arrays)
    except ValueError as error:
        raise _translate_value_error(op, args, params, error) from None
    if op.outputs == 1:
        return _wrap(op, out, out_dtype, device, args, xp)
    dtypes = out_dtype if isinstance(out_dtype, tuple) else (out_dtype,) * op.outputs
    return tuple(_wrap(op, o, d, device, args, xp) for o, d in zip(out, dtypes))


def _device_operands(arrays, args, device):
    """A 0-d CPU tensor in a cuda op (allowed, as torch) enters as a scalar, never as a host array."""
    for index, a in enumerate(args):
        if isinstance(a, Tensor) and a._device is not device and type(arrays[index]) is np.ndarray:
            arrays[index] = arrays[index][()]
    return arrays


def _translate_value_error(op, args, params, error):
    """NumPy's ValueError for operands that don't broadcast becomes torch's RuntimeError naming the sizes."""
    if op.meta is not None and "broadcast" in str(error):
        try:
            op.meta(args, params)
        except RuntimeError as translated:
            return translated
    return error


def _as_compute_array(value, np_dtype):
    if isinstance(value, Tensor):
        array = value._data
        if array.dtype != np_dtype:
            array = array.astype(np_dtype)
        return array
    return value


def _as_half_compute_array(value, half_dtype, opmath_scalars=False):
    """Round an operand (Python numbers too, unless opmath_scalars) to the half type, as torch casts operands
    to the common dtype, then widen it to float32 for the computation."""
    if isinstance(value, Tensor):
        array = value._data
        if opmath_scalars and array.ndim == 0 and array.dtype != half_dtype and array.dtype.kind == "f":
            return array.astype(np.float32)  # a 0-d tensor is a CPU scalar to torch's kernels: its own value
    elif type(value) in (int, float):
        # a NumPy float32 scalar, not a 0-d array: a host array must never meet device arrays (cuda)
        if opmath_scalars:
            return np.float32(value)
        return np.asarray(value).astype(half_dtype).astype(np.float32)[()]
    else:
        return value
    if array.dtype != half_dtype:
        array = array.astype(half_dtype)
    return array.astype(np.float32)


def _wrap(op, array, dtype, device, args, xp=np):
    if type(array) is not np.ndarray:
        # NumPy scalars and Python numbers from impls become arrays of the device's module
        if xp is np or not isinstance(array, xp.ndarray):
            array = xp.asarray(array)
    np_dtype = dtype.np_dtype
    if array.dtype is not np_dtype and array.dtype != np_dtype:  # identity first: NumPy's builtin dtypes are
        array = array.astype(np_dtype)                          # singletons, so the comparison rarely runs
    if op.view:
        source = args[0]
        return Tensor._make_view(array, dtype, device, source)
    return Tensor._make(array, dtype, device)


def _call_meta(op, args, params, compute, out_dtype):
    """Shapes and dtypes only: the op's meta function, or its impl run on zero-stride dummy arrays."""
    if op.meta is not None:
        shapes = op.meta(args, params)
    else:
        dummies = [_dummy(a, compute) for a in args]
        out = op.impl(np, *dummies, **params)
        shapes = tuple(np.shape(o) for o in out) if op.outputs > 1 else np.shape(out)
    if op.outputs == 1:
        return _meta_tensor(shapes, out_dtype, args, op)
    dtypes = out_dtype if isinstance(out_dtype, tuple) else (out_dtype,) * op.outputs
    return tuple(_meta_tensor(s, d, args, op) for s, d in zip(shapes, dtypes))


def _dummy(value, compute):
    if isinstance(value, Tensor):
        np_dtype = value._dtype.np_dtype if compute is None else compute.np_dtype
        return MetaArray(value._data.shape, np_dtype).dummy()
    return value


def _meta_tensor(shape, dtype, args, op):
    array = MetaArray(shape, dtype.np_dtype)
    if op.view:
        return Tensor._make_view(array, dtype, args[0]._device, args[0])
    return Tensor._make(array, dtype, args[0]._device if isinstance(args[0], Tensor) else _first_device(args))


def _first_device(args):
    for a in args:
        if isinstance(a, Tensor):
            return a._device
    raise RuntimeError("no tensor operand")


def _merge_devices(op, device, tensor):
    """Two devices in one op: torch allows a 0-dim CPU tensor beside a cuda tensor, nothing else."""
    other = tensor._device
    if other == device:
        return device
    if other.type == "cpu" and tensor._data.ndim == 0 and device.type == "cuda":
        return device
    if "meta" in (device.type, other.type):
        raise RuntimeError(f"Tensor on device {other} is not on the expected device {device}!")
    raise RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, {device} and {other}!"
    )


_device_modules: dict = {}


def device_module(device):
    """The array module of a device (numpy for cpu)."""
    xp = _device_modules.get(device.type)
    if xp is None:
        from ._backends import array_module

        xp = _device_modules[device.type] = array_module(device.type)
    return xp


# ---------------------------------------------------------------- autograd recording


def _record(op, args, params, results):
    """Attach a backward node to the results (only the float/complex ones are differentiable)."""
    if op.outputs == 1:
        if results._dtype.category < 2:
            return
        outputs = (results,)
        differentiable = (True,)
    else:
        outputs = results
        differentiable = op.differentiable_outputs
        if differentiable is None:
            differentiable = tuple(r._dtype.category >= 2 for r in outputs)
        if not any(differentiable):
            return
    needs, input_meta, edges = [], [], []
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            needs.append(True)
            input_meta.append((a._data.shape, a._dtype))
            grad_fn = a._grad_fn  # call() refreshed views already: Tensor._edge without its property reads
            edges.append((grad_fn, a._output_nr) if grad_fn is not None else a._edge())
        else:
            needs.append(False)
            input_meta.append(None)
            edges.append(_NO_EDGE)
    if op.snapshot is not None:
        params = op.snapshot(params)
    node = op.node_class(op, params, args, outputs, input_meta, tuple(needs))
    node.next_functions = tuple(edges)
    for nr, result in enumerate(outputs):
        if differentiable[nr]:
            result._grad_fn = node
            result._output_nr = nr
            result._requires_grad = True
            if result._base is not None:
                result._view_version = result._counter_value()


_NO_EDGE = (None, 0)


def _describe(value) -> str:
    if isinstance(value, Tensor):
        return f"{value._dtype.name}{list(value._data.shape)}@{value._device}"
    return repr(value)
