"""Generated kernels behind eager ops: NOTE [ Eager ops on generated kernels ].

Eager softmax, log_softmax, GELU and layer norm are several NumPy passes each (GELU's erf is a NumPy polynomial: ~10
passes forward, more backward), where torch runs one fused loop.  ember.compile's fusion and C printer
already produce those loops for any group of ops; this module reuses them for single eager ops: it builds
the one-node graph of an op (its params fixed, e.g. dim=-1), lowers it to a kernel and its backward kernel
with the compiler's own code (fusion.build_kernel, autodiff.build_backward_kernel), prints them with the C
printer once per (op, params, dtype), and runs them on arrays of any size: the C kernels take their row
count R and row length K at run time.  The library is cached on disk like every compiled kernel, so a
second process loads it without compiling.

Used only where it is exact and worth it: float32/float64, the last dim, contiguous rows of at least
`MIN_ELEMENTS` elements, and a backward run with grad mode off (create_graph=True keeps the ops' own
backward, which double backward needs).  Without a C compiler, or with EMBER_EAGER_KERNELS=0, `kernels()`
returns None and the ops keep their NumPy implementations.
"""

from __future__ import annotations

import os
import re
import threading

import numpy as np

from . import autodiff, codegen, fusion

MIN_ELEMENTS = 1 << 14  # below this NumPy's passes are cheaper than a ctypes call

_built: dict = {}  # (op name, params, dtype name) -> _Kernels or None (could not be built)
_lock = threading.Lock()
_enabled = [None]


def enabled() -> bool:
    if _enabled[0] is None:
        _enabled[0] = os.environ.get("EMBER_EAGER_KERNELS", "1") != "0" and codegen.find_compiler() is not None
    return _enabled[0]


class _Kernels:
    """An op's forward and backward kernels, callable on (R, K) row arrays."""

    def __init__(self, group, placeholders, forward, backward, run_forward, run_backward) -> None:
        # kernel arguments name group inputs; callers pass arrays in the traced function's argument order
        self.position = [placeholders.index(value) for value in group.inputs]
        self.n_arguments = len(placeholders)
        self.forward = forward
        self.backward = backward
        self.run_forward = run_forward
        self.run_backward = run_backward

    def __call__(self, *arrays):
        """The op's results for `arrays` (one per placeholder, in order), each shaped as the first."""
        first = arrays[0]
        K = first.shape[-1]
        R = first.size // K
        prepared = [_prepare(arrays[self.position[index]], kind, R, K) for index, kind, _ in self.forward.args]
        results = [np.empty((R, K) if level == "elem" else (R, 1), first.dtype) for _, level in self.forward.outputs]
        self.run_forward(prepared + results, R, K)
        shapes = [first.shape if level == "elem" else first.shape[:-1] + (1,) for _, level in self.forward.outputs]
        return [r.reshape(s) for r, s in zip(results, shapes)]

    def gradients(self, inputs: list, grads: list) -> list:
        """The input gradients (elem: input-shaped; col: K sums; row: (R, 1) sums) from the saved inputs and
        output gradients."""
        first = inputs[0]
        K = first.shape[-1]
        R = first.size // K
        n = self.backward.n_inputs
        arrays = []
        for index, kind, _ in self.backward.kernel.args:
            source = inputs[self.position[index]] if index < n else grads[index - n]
            arrays.append(_prepare(source.astype(first.dtype, copy=False), kind, R, K))
        results = [np.zeros(K, np.float64) if level == "col" else
                   np.empty((R, K) if level == "elem" else (R, 1), first.dtype)
                   for _, level in self.backward.output_specs]
        self.run_backward(arrays + results, R, K)
        out = [None] * self.n_arguments
        for (indices, level), array in zip(self.backward.output_specs, results):
            value = (array.astype(first.dtype) if level == "col" else array if level == "row"
                     else array.reshape(first.shape))
            for index in indices:
                position = self.position[index]
                out[position] = value if out[position] is None else out[position] + value
        return out


def _prepare(array, kind, R, K):
    if kind in ("full", "dense"):
        return np.ascontiguousarray(array).reshape(R, K)
    if kind == "row":
        return np.ascontiguousarray(array).reshape(R, 1)
    return np.ascontiguousarray(array).reshape(-1)


def kernels(key: str, fn, dtype, n_inputs: int = 1, backward: bool = False, vectors: int = 0,
            columns: int = 0) -> _Kernels | None:
    """The kernels of `fn` (ember ops on `n_inputs` row-shaped tensors, then `vectors` tensors of one row's
    length such as a norm's weight and bias; e.g. `lambda x: softmax(x, -1)`) for `dtype`, built on first use;
    with `backward`, also its backward kernel.  None: not available here (use the NumPy implementation)."""
    if not enabled() or dtype.name not in fusion.FLOAT_TYPES or _building[0]:
        return None
    cache_key = (key, dtype.name, n_inputs, backward, vectors, columns)
    found = _built.get(cache_key, False)
    if found is not False:
        return found
    with _lock:
        if cache_key not in _built:
            _built[cache_key] = _build(key, fn, dtype, n_inputs, backward, vectors, columns)
    return _built[cache_key]


_building = [False]  # while tracing an op's graph the ops run their NumPy code (no recursion into here)


def _trace(fn, dtype, n_inputs, vectors=0, columns=0):
    """fn's graph, traced on (4, 8) example tensors (and (8,) vectors) with the other dispatch hooks off and
    grad mode on."""
    from .. import _dispatch
    from .._autograd.grad_mode import state
    from .._ops.creation import ones
    from .tracer import Tracer

    saved = (_dispatch.autocast, _dispatch.profiler, _dispatch.inplace_target, state.enabled)
    _dispatch.autocast = _dispatch.profiler = _dispatch.inplace_target = None
    state.enabled = True
    _building[0] = True
    try:
        args = tuple(ones(4, 8, dtype=dtype, requires_grad=True) for _ in range(n_inputs)) + tuple(
            ones(8, dtype=dtype, requires_grad=True) for _ in range(vectors)) + tuple(
            ones(4, 1, dtype=dtype, requires_grad=True) for _ in range(columns))
        tracer = Tracer()
        with tracer:
            tracer.bind_inputs(args, {})
            result = fn(*args)
        ok = tracer.finish(result)
    finally:
        _dispatch.autocast, _dispatch.profiler, _dispatch.inplace_target, state.enabled = saved
        _building[0] = False
    return tracer.graph if ok else None


def _build(key, fn, dtype, n_inputs, backward, vectors=0, columns=0):
    """fn's one-group graph, lowered and printed by the compiler (see the module docstring)."""
    graph = _trace(fn, dtype, n_inputs, vectors, columns)
    if graph is None:
        return None
    groups = fusion.find_groups(graph.nodes, 1)
    calls = [n for n in graph.nodes if n.kind == "call"]
    if len(groups) != 1 or len(groups[0].nodes) != len(calls):
        return None  # not one kernel: leave the op to NumPy
    group = groups[0]
    placeholders = [n.results[0] for n in graph.nodes if n.kind == "placeholder"]
    name = re.sub(r"\W", "_", f"eager_{key}_{dtype.name}")  # a C identifier (keys may hold eps=1e-05)
    forward = fusion.build_kernel(group, name, graph.users())
    if any(value not in placeholders for value in group.inputs):
        return None
    back = None
    if backward:
        back = autodiff.build_backward_kernel(group, name + "_backward", set(range(len(group.inputs))))
        if back is None:
            return None
    try:
        built, _ = codegen.CPrinter().build([forward] + ([back.kernel] if back else []))
    except (codegen.CompilerMissing, codegen.CompileError, OSError):  # OSError: no writable kernel cache
        return None
    return _Kernels(group, placeholders, forward, back, built[forward.name],
                    built[back.kernel.name] if back else None)


def usable(array, dim) -> bool:
    """Whether an eager op on `array` over `dim` runs on its kernel (last dim, float, big enough)."""
    return (array.ndim >= 1 and dim in (array.ndim - 1, -1) and array.size >= MIN_ELEMENTS and array.shape[-1] > 0
            and array.dtype in (np.float32, np.float64) and type(array) is np.ndarray)

