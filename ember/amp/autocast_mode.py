"""Automatic mixed precision: torch.autocast / torch.amp.autocast.

Inside an autocast region an op runs in the dtype its policy names, as torch's
CPU autocast lists do (aten/src/ATen/autocast_mode.cpp):

- lower precision (the region's dtype, bfloat16 or float16): matmul-like ops and
  convolutions (mm, bmm, addmm, baddbmm, addbmm, matmul, linear, conv*,
  conv_transpose*, prelu, scaled_dot_product_attention, linalg.vecdot);
- float32: numerically touchy ops (losses, 3-d pooling, prod, trace, fft,
  the linalg factorizations and solvers, reflection/replication padding ...);
- promote: ops that take several tensors and need one dtype (cat, stack,
  index_copy) run in the widest floating dtype among their inputs.

Only floating tensors other than float64 on the region's device are cast; the
casts are ordinary differentiable `.to()` calls, so gradients reach float32
leaves in float32.  Casts of leaves that require grad (the weights) are cached
until the outermost region exits (cache_enabled).

NOTE [ Autocast hooks ]: two hooks apply the policies.
1. Dispatch: `ember._dispatch.autocast` is None unless a region is active; when
   set, `call` passes every op through `_dispatch_hook`, which looks the op's
   OpDef name up in `_OP_POLICIES`.  This reaches every route to a primitive op
   (functions, Tensor methods, ember internals).  Off, it costs one global test.
2. Functions: public functions that check operand dtypes before dispatch
   (F.linear: "mat1 and mat2 must have the same dtype") or that are compositions
   of other ops (the losses, prelu) are wrapped, on the first autocast region,
   by `_autocast_function`, which casts the arguments and runs the function with
   the dispatch hook suspended, as torch's autocast kernels run below the
   autocast key.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings

from .. import _dispatch
from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["autocast", "autocast_decorator", "is_autocast_available", "custom_fwd", "custom_bwd"]

LOWER = "lower_precision_fp"
FP32 = "fp32"
PROMOTE = "promote"
# a single kernel in torch (im2col, adaptive pooling): nothing is cast, and ember's decomposition runs with the
# dispatch hook suspended, so the convolutions or matmuls it is built from stay in the input's dtype
OPAQUE = "opaque"

# ---------------------------------------------------------------- per-device state (torch's thread-local state)


class _DeviceState:
    __slots__ = ("enabled", "dtype")

    def __init__(self, dtype) -> None:
        self.enabled = False
        self.dtype = dtype


_devices = {"cpu": _DeviceState(dt.bfloat16), "cuda": _DeviceState(dt.float16)}
_cache_enabled = True
_nesting = 0
_cache: dict = {}  # id(leaf) -> (leaf, dtype, cast)


def is_autocast_available(device_type: str) -> bool:
    return device_type in _devices


def _device_state(device_type) -> _DeviceState:
    if device_type is None:
        device_type = "cuda"  # torch.is_autocast_enabled() with no argument asks about CUDA
    state = _devices.get(device_type)
    if state is None:
        raise RuntimeError(f"unsupported autocast device_type '{device_type}'")
    return state


def is_autocast_enabled(device_type: str | None = None) -> bool:
    return _device_state(device_type).enabled


def set_autocast_enabled(device_type, enabled=None) -> None:
    if enabled is None:  # the deprecated one-argument form sets CUDA's flag
        device_type, enabled = "cuda", device_type
    _device_state(device_type).enabled = bool(enabled)
    _update_hook()


def get_autocast_dtype(device_type: str):
    return _device_state(device_type).dtype


def set_autocast_dtype(device_type: str, dtype) -> None:
    _device_state(device_type).dtype = dtype


def is_autocast_cpu_enabled() -> bool:
    return _devices["cpu"].enabled


def get_autocast_cpu_dtype():
    return _devices["cpu"].dtype


def get_autocast_gpu_dtype():
    return _devices["cuda"].dtype


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated form of set_autocast_enabled("cpu", enabled)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def _check_dtype(dtype) -> None:
    if not isinstance(dtype, dt.dtype):
        raise TypeError(f"dtype must be a torch.dtype (got {type(dtype).__name__})")


def set_autocast_cpu_dtype(dtype) -> None:
    """Deprecated form of set_autocast_dtype("cpu", dtype)."""
    _check_dtype(dtype)
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype) -> None:
    """Deprecated form of set_autocast_dtype("cuda", dtype)."""
    _check_dtype(dtype)
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    return _cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    global _cache_enabled
    _cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _cache.clear()


def autocast_increment_nesting() -> int:
    global _nesting
    _nesting += 1
    return _nesting


def autocast_decrement_nesting() -> int:
    global _nesting
    _nesting -= 1
    return _nesting


def _update_hook() -> None:
    active = any(state.enabled for state in _devices.values())
    if active:
        _install_function_wrappers()
    _dispatch.autocast = _dispatch_hook if active else None


# ---------------------------------------------------------------- the autocast context manager


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


class autocast:
    """Run a region (or, as a decorator, a function) with ops in mixed precision.

    Args:
        device_type (str): "cpu" or "cuda".
        dtype: bfloat16 or float16; default the device's autocast dtype (cpu: bfloat16, cuda: float16).
        enabled (bool): False makes the region a no-op (nested: disables autocast inside). Default: True.
        cache_enabled (bool): cache the casts of leaf tensors that require grad. Default: the current setting.

    Example::

        >>> with ember.autocast("cpu"):
        ...     y = model(x)          # linear/conv/matmul in bfloat16
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda":
                from .. import cuda

                if not cuda.is_available():
                    warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                    enabled = False
            elif self.fast_dtype not in (dt.bfloat16, dt.float16):
                name = device_type.upper()
                warnings.warn(
                    f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                    f"{name} Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                    stacklevel=2,
                )
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_dtype(self.device, self.fast_dtype)
        set_autocast_enabled(self.device, self._enabled)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_enabled(self.device, self.prev)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to use autocast "
                "as a context manager? For example:\n    with torch.autocast(device_type=...):\n"
                "        output = model(input)"
            )
        return autocast_decorator(self, func)


def _snapshot():
    """The CPU autocast settings, for re-entering them later (activation checkpointing's recomputation)."""
    state = _devices["cpu"]
    return (state.enabled, state.dtype, _cache_enabled)


def _restore(snapshot):
    enabled, dtype, cache_enabled = snapshot
    return autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


# ---------------------------------------------------------------- casting


def _eligible(value, device_type) -> bool:
    return (isinstance(value, Tensor) and value._dtype.is_floating_point and value._dtype is not dt.float64
            and value._device.type == device_type)


def _cast_tensor(tensor: Tensor, dtype) -> Tensor:
    if tensor._dtype is dtype:
        return tensor
    # (not while ember.compile captures: a cast cached before the capture is no op of its trace, and would be
    # frozen into the graph as a constant holding the weights of that moment)
    cacheable = _cache_enabled and tensor._requires_grad and tensor._grad_fn is None and _dispatch.tracer is None
    if cacheable:
        hit = _cache.get(id(tensor))
        if hit is not None and hit[0] is tensor and hit[1] is dtype:
            return hit[2]
    cast = tensor.to(dtype)
    if cacheable:
        _cache[id(tensor)] = (tensor, dtype, cast)
    return cast


def _cast(value, device_type, dtype):
    """Cast eligible tensors in `value` (and in lists, tuples and dicts of them) to `dtype`."""
    if isinstance(value, Tensor):
        return _cast_tensor(value, dtype) if _eligible(value, device_type) else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def _tensors_in(values):
    for value in values:
        if isinstance(value, Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _tensors_in(value)


def _target_dtype(policy, device_type, values):
    state = _devices[device_type]
    if policy == LOWER:
        return state.dtype
    if policy == FP32:
        return dt.float32
    # promote: torch's at::autocast::prioritize: float32 wins over the region dtype, float64 inputs are ignored
    # (and left uncast), any other floating dtype is an error
    current = state.dtype
    for tensor in _tensors_in(values):
        if not _eligible(tensor, device_type):
            continue
        if tensor._dtype is dt.float32 or current is dt.float32:
            current = dt.float32
        elif tensor._dtype is not state.dtype or current is not state.dtype:
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _region_device(values):
    """The device type whose autocast applies: that of the first tensor, if autocast is on there."""
    for tensor in _tensors_in(values):
        device_type = tensor._device.type
        state = _devices.get(device_type)
        if state is not None and state.enabled:
            return device_type
        return None
    return None


def _dispatch_hook(op, args):
    policy = _OP_POLICIES.get(op.name)
    if policy is None:
        return args
    device_type = _region_device(args)
    if device_type is None:
        return args
    dtype = _target_dtype(policy, device_type, args)
    return tuple(_cast(a, device_type, dtype) for a in args)


# ---------------------------------------------------------------- policies

# By OpDef name (the dispatch hook).
_OP_POLICIES = {
    **dict.fromkeys(("linear", "convolution", "mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm",
                     "scaled_dot_product_attention"), LOWER),
    **dict.fromkeys(("prod", "linalg_qr", "linalg_svd", "linalg_svdvals", "linalg_eigh", "linalg_eigvalsh",
                     "linalg_inv", "linalg_cholesky", "linalg_solve"), FP32),
    "cat": PROMOTE,
}

# By public function (the function wrappers): (namespace, names, policy); namespaces are resolved lazily.
_FUNCTION_POLICIES = (
    ("ember", ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "prelu", "conv1d", "conv2d", "conv3d",
               "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"), LOWER),
    ("Tensor", ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "__matmul__", "__rmatmul__"), LOWER),
    ("ember.linalg", ("vecdot", "matmul"), LOWER),
    ("ember.nn.functional", ("linear", "prelu", "scaled_dot_product_attention", "conv1d", "conv2d",
                             "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"), LOWER),
    ("ember.nn.functional", ("avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
                             "max_unpool2d", "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d",
                             "grid_sample", "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
                             "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "kl_div",
                             "cosine_embedding_loss", "hinge_embedding_loss", "poisson_nll_loss",
                             "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
                             "multilabel_margin_loss", "ctc_loss"), FP32),
    ("ember", ("prod", "trace", "cdist", "quantile", "nanquantile", "polar", "stft", "pinverse", "inverse",
               "cholesky", "cholesky_inverse", "cholesky_solve", "lu_solve", "triangular_solve", "orgqr", "ormqr",
               "geqrf", "qr", "svd"), FP32),
    ("Tensor", ("prod", "trace", "pinverse", "inverse", "cholesky", "qr", "svd"), FP32),
    ("ember.linalg", ("cond", "matrix_rank", "solve", "cholesky", "cholesky_ex", "svdvals", "eigvals", "eigvalsh",
                      "inv", "inv_ex", "householder_product", "tensorinv", "tensorsolve", "qr", "svd", "eig", "eigh",
                      "lstsq"), FP32),
    ("ember.fft", ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn",
                   "irfftn", "hfft", "ihfft"), FP32),
    ("ember", ("stack", "index_copy"), PROMOTE),
    ("Tensor", ("index_copy",), PROMOTE),
    ("ember.nn.functional", ("unfold", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d",
                             "lp_pool1d", "lp_pool2d"), OPAQUE),
    ("ember.linalg", ("multi_dot",), LOWER),
    ("ember", ("chain_matmul",), LOWER),
)


def _einsum_policy(*args, **kwargs):
    """torch's einsum multiplies each pair of operands that shares a summed subscript with bmm (on autocast's
    lower-precision list) and the others with mul: lower precision when some subscript is contracted."""
    from .._ops import einsum as einsum_module

    if args and isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = einsum_module._sublist_equation(args)
    if not operands or not all(isinstance(o, Tensor) for o in operands):
        return None
    shapes = [tuple(o.shape) for o in operands]
    try:
        equation, _ = einsum_module._resolve(equation, operands)
    except RuntimeError:
        return None  # einsum raises its own error
    return LOWER if einsum_module._contracts(equation, shapes) else None


def _tensordot_policy(a, b, dims=2, *args, **kwargs):
    """torch's tensordot is an mm (lower precision) unless every dim is contracted: then it is a dot (as is)."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return None
    contracted = dims if isinstance(dims, int) else len(dims[0]) if dims else 0
    return None if contracted == a.ndim == b.ndim else LOWER


def _inner_policy(input, other, *args, **kwargs):
    """torch's inner is a mul (0-d operands), a dot (two vectors) or a tensordot's mm (lower precision)."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        return None
    return None if input.ndim == 0 or other.ndim == 0 or (input.ndim == 1 and other.ndim == 1) else LOWER


# Functions whose policy depends on their arguments: policy(*args, **kwargs) -> a policy, or None to run as is.
_CONDITIONAL_POLICIES = (
    ("ember", ("einsum",), _einsum_policy),
    ("ember", ("tensordot",), _tensordot_policy),
    ("ember", ("inner",), _inner_policy),
    ("Tensor", ("inner",), _inner_policy),
)

# F.pad runs reflection/replication padding (these sizes) in float32 and other modes as they are.
_FP32_PAD_MODES = {("reflect", 1), ("reflect", 2), ("replicate", 1), ("replicate", 2), ("replicate", 3)}

_installed = False


def _autocast_function(fn, policy):
    """Wrap a public function: inside a region, cast its tensor arguments by `policy` (a policy, or a function
    of the arguments giving one or None) and run it with the dispatch hook suspended (torch runs the op below
    its autocast kernel)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        hook = _dispatch.autocast
        if hook is None:
            return fn(*args, **kwargs)
        device_type = _region_device(args + tuple(kwargs.values()))
        if device_type is None:
            return fn(*args, **kwargs)
        chosen = policy(*args, **kwargs) if callable(policy) else policy
        if chosen is None:
            return fn(*args, **kwargs)
        if chosen != OPAQUE:
            dtype = _target_dtype(chosen, device_type, args + tuple(kwargs.values()))
            args = _cast(args, device_type, dtype)
            kwargs = _cast(kwargs, device_type, dtype)
        _dispatch.autocast = None
        try:
            return fn(*args, **kwargs)
        finally:
            _dispatch.autocast = hook

    wrapper._autocast_wrapped = fn
    return wrapper


def _pad_wrapper(fn):
    wrapped = _autocast_function(fn, FP32)

    @functools.wraps(fn)
    def pad(input, pad, mode="constant", value=None):
        if _dispatch.autocast is not None and (mode, len(pad) // 2) in _FP32_PAD_MODES:
            return wrapped(input, pad, mode, value)
        return fn(input, pad, mode, value)

    pad._autocast_wrapped = fn
    return pad


def _bilinear_wrapper(fn):
    """F.bilinear: torch's _trilinear kernel runs its products through bmm (lower precision under autocast) but
    returns its first input's dtype; the bias is added after, in that dtype."""

    @functools.wraps(fn)
    def bilinear(input1, input2, weight, bias=None):
        if _dispatch.autocast is None or _region_device((input1, input2, weight)) is None:
            return fn(input1, input2, weight, bias)
        out = fn(input1, input2, weight).to(input1.dtype)
        return out if bias is None else out + bias

    bilinear._autocast_wrapped = fn
    return bilinear


def _resolve(namespace):
    import importlib

    if namespace == "Tensor":
        return Tensor
    try:
        return importlib.import_module(namespace)
    except ImportError:
        return None


def _install_function_wrappers() -> None:
    """Wrap the functions of _FUNCTION_POLICIES in place, once (on the first autocast region)."""
    global _installed
    if _installed:
        return
    _installed = True
    for namespace, names, policy in _FUNCTION_POLICIES + _CONDITIONAL_POLICIES:
        owner = _resolve(namespace)
        if owner is None:
            continue
        for name in names:
            fn = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
            if fn is None or hasattr(fn, "_autocast_wrapped"):
                continue
            setattr(owner, name, _autocast_function(fn, policy))
    functional = _resolve("ember.nn.functional")
    if functional is None:
        return
    for name, make_wrapper in (("pad", _pad_wrapper), ("bilinear", _bilinear_wrapper)):
        fn = getattr(functional, name, None)
        if fn is not None and not hasattr(fn, "_autocast_wrapped"):
            setattr(functional, name, make_wrapper(fn))


# ---------------------------------------------------------------- custom autograd Functions


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom Function's forward: record the autocast state (for custom_bwd) and, with
    cast_inputs, run forward with autocast off on inputs cast to that dtype."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_all(args, device_type, cast_inputs), **_cast_all(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom Function's backward: run it in the autocast state its forward ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _cast_all(value, device_type, dtype):
    """torch.amp.autocast_mode._cast: every floating non-float64 tensor on the device, no cache."""
    if isinstance(value, Tensor):
        return value.to(dtype) if _eligible(value, device_type) else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {k: _cast_all(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_all(v, device_type, dtype) for v in value)
    return value
