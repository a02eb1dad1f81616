"""Random numbers: Generator and seeding, sampling factories (rand, randn, normal ...) and in-place fills.

NOTE [ Random streams ]
Each ember `Generator` is torch's CPU generator (at::CPUGeneratorImpl): an mt19937
seeded from the low 32 bits of the seed, the same raw words, the same transforms
(_rng_engine.py holds the engine, _rng_kernels.py the kernels, vectorised over
NumPy), so after `manual_seed(s)` ember draws torch's numbers: rand/uniform_,
randint/random_, randperm, bernoulli/dropout, multinomial, exponential_,
geometric_, cauchy_, log_normal_, normal/randn (including the >= 16-element
block fill, the cached second Box-Muller sample, and torch's fill order for
strided in-place fills), and nn.init, samplers and DataLoader shuffling built on
them.  Integer and uniform draws are bit-exact; float32/half/bfloat16 normals
are bit-exact too (torch's AVX2 kernel is emulated; a CPU without AVX2 runs
torch's libm path, an ulp away); float64 normals and the double-based samplers
use NumPy's log/cos/sin for large arrays and may differ from glibc's by an ulp.
`get_state()` is torch's 5056-byte CPUGeneratorImplState, interchangeable with
torch.get_rng_state().  poisson, _standard_gamma, _sample_dirichlet and binomial
run torch's rejection samplers draw for draw (_rng_samplers.py).  Attention
dropout runs torch's math backend (at::dropout on the probabilities), so it
draws torch's masks too; rand_like / randn_like / randint_like and dropout
draw into torch's preserve_format layout (memory order for a transposed input);
rrelu draws only for its elements <= 0, as torch.  The exception, seeded and
reproducible but not torch's numbers: device generators, which run
this CPU engine on the host (torch's CUDA Philox streams differ).  Draws happen
on the host and are moved to the tensor's device.  Meta tensors never draw.
Sampling ops record autograd nodes whose gradient is zero (torch's derivatives
for them), so a sampled value is a constant to autograd.
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._backends import MetaArray
from .._device import as_device
from .._dispatch import OpDef, call, device_module
from .._tensor import SCALAR_NAMES, Tensor
from . import _rng_kernels as kernels
from ._api import export, inplace_call, write_out
from ._api import not_implemented as _not_implemented
from ._generator import (  # noqa: F401 - re-exported: ember.Generator, ember.manual_seed ...
    Generator,
    _device_generators,
    _generator_for,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)
from ._shapes import broadcast_meta
from .creation import _sizes, _with_grad, cast_fill_value, empty_like, like_layout, like_order, zeros_like

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]

# ---------------------------------------------------------------- host samplers
# Each takes the generator's Engine, the result's shape and dtype and, for an in-place fill, the tensor's byte
# strides (None: a fresh contiguous tensor), and returns a NumPy array of `shape` holding torch's values in
# torch's order (the kernels are in _rng_kernels.py).


def _real_layout(shape, dtype: dt.dtype, strides) -> tuple:
    """(real dtype, shape, strides) of the values drawn: a complex tensor is filled as view_as_real(self)."""
    if not dtype.is_complex:
        return dtype.np_dtype, tuple(shape), strides
    real = np.dtype(np.float64 if dtype is dt.complex128 else np.float32)
    return real, tuple(shape) + (2,), None if strides is None else tuple(strides) + (real.itemsize,)


def _as_complex(values, dtype: dt.dtype):
    if not dtype.is_complex:
        return values
    return values[..., 0] + 1j * values[..., 1]


def _contiguous(shape, strides, itemsize: int) -> bool:
    """Tensor.is_contiguous for these byte strides (size-1 dims do not count)."""
    if strides is None:
        return True
    expected = itemsize
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _draw_uniform(engine, shape, dtype, low=0.0, high=1.0, strides=None):
    real, shape, strides = _real_layout(shape, dtype, strides)
    values = kernels.uniform(engine, math.prod(shape), real, low, high)
    return _as_complex(kernels.place(values, shape, strides), dtype)


def _draw_normal(engine, shape, dtype, mean=0.0, std=1.0, strides=None):
    if dtype.is_complex:
        std = std / math.sqrt(2.0)  # torch: each of the real and imaginary parts has variance std**2 / 2
    real, shape, strides = _real_layout(shape, dtype, strides)
    values = kernels.normal(engine, math.prod(shape), real, mean, std, _contiguous(shape, strides, real.itemsize))
    return _as_complex(kernels.place(values, shape, strides), dtype)


def _draw_integers(engine, shape, dtype, low, high_inclusive, strides=None):
    """random_(from, to) (randint): uniform on [low, high_inclusive] by torch's modulo."""
    values = kernels.random_from_to(engine, math.prod(shape), high_inclusive - low + 1, low)
    return kernels.place(kernels.int64_to(values, dtype.np_dtype), shape, strides)


def _draw_random_bits(engine, shape, dtype, strides=None, *, kind):
    """random_() ("default": [0, max] by uniform_int) or random_(int64 min, None) ("full": 64 random bits)."""
    n = math.prod(shape)
    if kind == "full":
        values = kernels.random_full_64(engine, n)
    else:
        values = kernels.random_default(engine, n, dtype.np_dtype)
    return kernels.place(kernels.int64_to(values, dtype.np_dtype), shape, strides)


def _draw_permutation(engine, shape, dtype, strides=None):
    return kernels.randperm(engine, shape[0])


def _draw_bernoulli(engine, shape, dtype, p, strides=None):
    """bernoulli_(float p): a double uniform below p, as 0/1 in the tensor's dtype."""
    values = kernels.bernoulli_scalar(engine, math.prod(shape), p)
    return kernels.place(values.astype(dtype.np_dtype), shape, strides)


def _draw_bernoulli_tensor(engine, p, dtype, strides=None):
    """bernoulli_(p tensor), p already broadcast to the result's shape: drawn in the result's fill order."""
    order = None if strides is None else kernels.memory_order(p.shape, strides)
    flat = (p if order is None else np.transpose(p, order)).reshape(-1)
    values = kernels.bernoulli_tensor(engine, flat)
    return kernels.place(values.astype(dtype.np_dtype), p.shape, strides)


def _draw_from_double(sample):
    """An in-place draw of a kernel returning doubles (exponential, geometric, ...), cast to the dtype."""
    def draw(engine, shape, dtype, strides=None):
        values = sample(engine, math.prod(shape))
        return kernels.place(kernels.to_dtype(values, dtype.np_dtype), shape, strides)

    return draw


def _on_device(host, dtype: dt.dtype, device):
    host = np.asarray(host).astype(dtype.np_dtype, copy=False)
    if device.type == "cpu":
        return host
    return device_module(device).asarray(host)


# ---------------------------------------------------------------- checks with torch's messages


def _fmt(value) -> str:
    """A double printed as C++ streams do (2.0 -> 2, 0.5 -> 0.5)."""
    return f"{value:g}"


def _require_float(kernel: str, dtype: dt.dtype, complex_ok: bool = True) -> None:
    if not (dtype.is_floating_point or (complex_ok and dtype.is_complex)):
        raise _not_implemented(kernel, dtype)


def _check_int64(*values) -> None:
    for value in values:
        if not -(2**63) <= value < 2**63:
            raise ValueError("Overflow when unpacking long long")


def _check_random_bounds(low: int, high: int, dtype: dt.dtype) -> None:
    """torch's check_random_bounds: from < to, both representable in dtype (floats warn past 2**digits)."""
    _check_int64(low, high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype.is_complex:
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    name = dt.CPP_TYPE_NAMES[dtype.name]
    if dtype.is_floating_point:
        info = dt.finfo(dtype)
        lowest, highest = info.min, info.max
    elif dtype is dt.bool_:
        lowest, highest = 0, 1
    else:
        info = dt.iinfo(dtype)
        lowest, highest = info.min, info.max
    if not lowest <= low <= highest:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not lowest <= high - 1 <= highest:
        raise RuntimeError(f"to - 1 is out of bounds for {name}")
    if dtype.is_floating_point:
        digits = np.finfo(dt.float32.np_dtype if dtype is dt.bfloat16 else dtype.np_dtype).nmant + 1
        if dtype is dt.bfloat16:
            digits = 8
        for label, value in (("from", low), ("to - 1", high - 1)):
            if abs(value) > 2**digits:
                warnings.warn(
                    f"{label} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations {name} "
                    "can support discrete uniform distribution only within this range. This warning will become "
                    "an error in version 1.7 release, please fix the code in advance",
                    UserWarning,
                    stacklevel=3,
                )


_FLOAT_DIGITS = {dt.float16: 11, dt.bfloat16: 8, dt.float32: 24, dt.float64: 53}


def _full_random_range(dtype: dt.dtype, low: int = 0) -> tuple:
    """random_(from, None): [from, max] inclusive; floats up to 2**mantissa digits."""
    if dtype is dt.bool_:
        return low, 1
    if dtype.category == 1:
        return low, dt.iinfo(dtype).max
    return low, 2 ** _FLOAT_DIGITS[dtype]


def _round_bits(value: int, digits: int) -> int:
    """An integer rounded to `digits` significant bits, ties to even (a float's rounding of it)."""
    shift = abs(value).bit_length() - digits
    if shift <= 0:
        return value
    quotient, remainder = divmod(abs(value), 1 << shift)
    half = 1 << (shift - 1)
    if remainder > half or (remainder == half and quotient & 1):
        quotient += 1
    return (quotient << shift) * (1 if value > 0 else -1)


def _as_float_and_back(value: int, dtype: dt.dtype):
    """static_cast<int64_t>(static_cast<scalar_t>(value)), or None where the float overflows."""
    for digits in ((24,) if dtype.itemsize == 2 else ()) + (_FLOAT_DIGITS[dtype],):
        value = _round_bits(value, digits)
    return value if abs(value) <= dt.finfo(dtype).max else None


def _update_from(low: int, dtype: dt.dtype) -> int:
    """torch's update_from: a `from` whose successor the float dtype rounds below it moves up to the next
    representable integer."""
    rounded = _as_float_and_back(low + 1, dtype)
    if rounded is not None and rounded < low:
        low = rounded + (1 << (abs(low + 1).bit_length() - 1 - _FLOAT_DIGITS[dtype] + 1))
    return low


def _update_to(high: int, dtype: dt.dtype) -> int:
    """torch's update_to: the mirror of _update_from for the exclusive bound."""
    rounded = _as_float_and_back(high - 1, dtype)
    if rounded is not None and rounded >= high:
        high = rounded - (1 << (abs(high - 1).bit_length() - 1 - _FLOAT_DIGITS[dtype] + 1))
    return high


# ---------------------------------------------------------------- factories


_DRAWS = {
    "uniform": _draw_uniform,
    "normal": _draw_normal,
    "integers": _draw_integers,
    "permutation": _draw_permutation,
}


def _factory(size, dtype, device, requires_grad, out, generator, how: tuple) -> Tensor:
    """A new tensor of `size` drawn as `how` says (("normal", mean, std), ("integers", low, high), ...: a
    description, not a function, so that ember.compile can compare and repeat the draw; no draw on meta)."""
    if device is None and out is not None:
        device = out._device
    device = as_device(device)
    tracer = _dispatch.tracer
    traced = tracer is not None and out is None and not requires_grad and device.type != "meta"
    if device.type == "meta":
        array = MetaArray(size, dtype.np_dtype)
    else:
        if generator is not None:  # vmap's randomness="error" check (func/_batching.py): no op is dispatched here
            check = getattr(_dispatch.forward_ad, "explicit_draw", None)
            if check is not None:
                check()
        source = _generator_for(generator, device)
        if traced:
            tracer.drawing = True  # a draw the capture records (Tracer.random_factory), not an untraced one
        try:
            array = _on_device(_DRAWS[how[0]](source._rng, size, dtype, *how[1:]), dtype, device)
        finally:
            if traced:
                tracer.drawing = False
    result = _with_grad(Tensor._make(array, dtype, device), requires_grad)
    if out is not None:
        return write_out(out, result)
    if traced:  # each replay draws anew from the same generator, at this point of the call
        tracer.random_factory(result, source, (_factory, (tuple(size), dtype, device, False, None, source, how), {}))
    return result


def _factory_size(size_args, size) -> tuple:
    return _sizes((size,)) if size is not None else _sizes(size_args)


def _float_dtype(dtype, out) -> dt.dtype:
    if dtype is not None:
        return dtype
    return out._dtype if out is not None else dt.get_default_dtype()


@export(method=False)
def rand(*size_args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform samples on [0, 1)."""
    if not size_args and size is None:
        raise TypeError("rand() received an invalid combination of arguments - got (), but expected one of:\n"
                        " * (tuple of ints size, *, torch.Generator generator, tuple of names names, torch.dtype dtype"
                        " = None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, "
                        "bool requires_grad = False)\n")
    dtype = _float_dtype(dtype, out)
    _require_float("check_uniform_bounds", dtype)
    return _factory(_factory_size(size_args, size), dtype, device, requires_grad, out, generator,
                    ("uniform",))


@export(method=False)
def randn(*size_args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal samples (complex: each part has variance 1/2)."""
    dtype = _float_dtype(dtype, out)
    _require_float("normal_kernel_cpu", dtype)
    return _factory(_factory_size(size_args, size), dtype, device, requires_grad, out, generator,
                    ("normal",))


def _randint_arguments(args, low, high, size):
    """randint(high, size) or randint(low, high, size), positionally or by keyword."""
    args = list(args)
    if size is None and args and isinstance(args[-1], (tuple, list)):
        size = args.pop()
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        size = None
    low = 0 if low is None else low
    values = (low, high)
    if size is None or high is None or not all(isinstance(v, numbers.Integral) for v in values):
        got = ", ".join(type(v).__name__ for v in [*args, *([size] if size is not None else [])])
        raise TypeError(
            f"randint() received an invalid combination of arguments - got ({got}), but expected one of:\n"
            " * (int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype dtype = "
            "None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool "
            "requires_grad = False)\n"
            " * (int low, int high, tuple of ints size, *, torch.Generator generator, Tensor out = None, torch.dtype "
            "dtype = None, torch.layout layout = None, torch.device device = None, bool pin_memory = False, bool "
            "requires_grad = False)\n"
        )
    return int(low), int(high), size


@export(method=False)
def randint(*args, low=None, high=None, size=None, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Integers uniform on [low, high); int64 unless dtype says otherwise."""
    low, high, size = _randint_arguments(args, low, high, size)
    dtype = dtype or (out._dtype if out is not None else dt.int64)
    _check_random_bounds(low, high, dtype)
    return _factory(_sizes((size,)), dtype, device, requires_grad, out, generator,
                    ("integers", low, high - 1))


@export(method=False)
def randperm(n: int, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1."""
    if not isinstance(n, numbers.Integral) or isinstance(n, bool):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    dtype = dtype or (out._dtype if out is not None else dt.int64)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if dtype is dt.bool_ or dtype.is_complex:
        raise _not_implemented("randperm", dtype)
    if dtype.category == 1 and n - 1 > dt.iinfo(dtype).max:

        raise RuntimeError(f"value cannot be converted to type {dt.CONVERSION_TYPE_NAMES[dtype.name]} without overflow")
    return _factory((int(n),), dtype, device, requires_grad, out, generator,
                    ("permutation",))


def _like_args(input, dtype, device):
    return input.shape, dtype or input._dtype, device if device is not None else input._device


def _sampled_like(input: Tensor, dtype, device, requires_grad: bool, memory_format, fresh, fill) -> Tensor:
    """torch's rand_like / randn_like / randint_like are empty_like(input) filled in place: for an input laid
    out other than in C order (a transposed view, channels_last) the draws land in memory order, so a C-order
    draw relaid afterwards puts other numbers in each place.  fresh(): the C-order factory (the common case);
    fill(empty): the in-place draw into the laid-out tensor."""
    order = like_order(input, memory_format, input.ndim)
    if order is None:  # C order
        return like_layout(fresh(), input, memory_format)
    result = fill(empty_like(input, dtype=dtype, device=device, memory_format=memory_format))
    return result.requires_grad_(requires_grad)


@export(method=False)
def rand_like(input: Tensor, *, generator=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
              memory_format=None) -> Tensor:
    size, dtype, device = _like_args(input, dtype, device)
    return _sampled_like(input, dtype, device, requires_grad, memory_format,
                         lambda: rand(size, generator=generator, dtype=dtype, device=device,
                                      requires_grad=requires_grad),
                         lambda empty: empty.uniform_(0, 1, generator=generator))


@export(method=False)
def randn_like(input: Tensor, *, generator=None, dtype=None, layout=None, device=None, requires_grad: bool = False,
               memory_format=None) -> Tensor:
    size, dtype, device = _like_args(input, dtype, device)
    return _sampled_like(input, dtype, device, requires_grad, memory_format,
                         lambda: randn(size, generator=generator, dtype=dtype, device=device,
                                       requires_grad=requires_grad),
                         lambda empty: empty.normal_(0, 1, generator=generator))


@export(method=False)
def randint_like(input: Tensor, low: int = 0, high: int | None = None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad: bool = False, memory_format=None) -> Tensor:
    """randint_like(input, high) or randint_like(input, low, high), in input's dtype by default."""
    if high is None:
        low, high = 0, low
    size, dtype, device = _like_args(input, dtype, device)
    return _sampled_like(input, dtype, device, requires_grad, memory_format,
                         lambda: randint(low, high, size, generator=generator, dtype=dtype, device=device,
                                         requires_grad=requires_grad),
                         lambda empty: empty.random_(low, high, generator=generator))


# ---------------------------------------------------------------- sampling ops with (zero) gradients


def _zero_grads(ctx, grad):
    zeros = tuple(zeros_like(grad) if need else None for need in ctx.needs_input_grad)
    return zeros if len(zeros) > 1 else zeros[0]


def _shape_of_first(args, params):
    return args[0].shape


def _result_dtype(args, params):
    return None, params["dtype"]


def _sampling_op(name: str, impl, grad_name: str, meta=_shape_of_first) -> OpDef:
    return OpDef(name, impl, _zero_grads, dtype_rule=_result_dtype, meta=meta, upcast_half=False,
                 grad_name=grad_name)


def _rrelu_noise_impl(xp, a, **params):
    """torch's _rrelu_with_noise_train: walking the input in (contiguous) order, each element <= 0 draws
    uniform_real_distribution<double>(lower, upper) (one random64(): u * (upper - lower) + lower in double) and
    is multiplied by it; the others keep slope 1.  The noise is those slopes (cast to the dtype)."""
    host = np.ascontiguousarray(_host(a))
    negative = host <= 0
    lower, upper = params["lower"], params["upper"]
    if params["dtype"] is not dt.float64:  # the bounds are opmath_t (float) before the double draw
        lower, upper = float(np.float32(lower)), float(np.float32(upper))
    slopes = kernels.uniform64(params["generator"]._rng, int(np.count_nonzero(negative)))
    noise = np.ones(host.shape, np.float64)
    noise[negative] = slopes * (upper - lower) + lower
    return xp.asarray(kernels.to_dtype(noise, params["dtype"].np_dtype))


def rrelu_noise(input: Tensor, lower: float, upper: float, generator=None) -> Tensor:
    """The slopes nn.functional.rrelu multiplies a training input by, drawn as torch draws them (only for the
    elements <= 0, in order), so rrelu's values and the generator's stream after it are torch's; a constant to
    autograd (the gradient is grad * noise, as torch's)."""
    return call(_RRELU_NOISE, (input,), {"dtype": input._dtype, "lower": float(lower), "upper": float(upper),
                                         "generator": _generator_of(input, generator)})


def _draw_impl(xp, a, **params):
    """An in-place fill's values: params['draw'](engine, shape, dtype, strides), in the order torch fills `a`."""
    return xp.asarray(params["draw"](params["generator"]._rng, a.shape, params["dtype"], a.strides))


def _normal_impl(xp, *arrays, **params):
    """torch's normal_out_impl: with a float std, normal_(0, std) then + mean; with a tensor std, normal_(0, 1),
    then * std, then + mean (each step rounded to the result's dtype, as its in-place ops are)."""
    np_dtype = params["dtype"].np_dtype
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    engine = params["generator"]._rng
    if params["std"] is not None:
        values = xp.asarray(kernels.normal(engine, math.prod(shape), np_dtype, 0.0, params["std"]).reshape(shape))
        return (values + arrays[0]).astype(np_dtype, copy=False)
    values = xp.asarray(kernels.normal(engine, math.prod(shape), np_dtype).reshape(shape))
    values = (values * arrays[-1]).astype(np_dtype, copy=False)
    mean = arrays[0] if params["mean"] is None else xp.asarray(kernels.to_dtype(np.array(params["mean"]), np_dtype))
    return (values + mean).astype(np_dtype, copy=False)


_RRELU_NOISE = _sampling_op("rrelu_with_noise", _rrelu_noise_impl, "RreluWithNoiseBackward0")
_NORMAL_TENSOR_FLOAT = _sampling_op("normal", _normal_impl, "NormalBackward1", broadcast_meta)
_NORMAL_FLOAT_TENSOR = _sampling_op("normal", _normal_impl, "NormalBackward2", broadcast_meta)
_NORMAL_TENSOR_TENSOR = _sampling_op("normal", _normal_impl, "NormalBackward3", broadcast_meta)


def _check_std(std) -> None:
    if isinstance(std, Tensor):
        if std._device.type != "meta" and bool((std._data < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std)}")


@export(method=False)
def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None, device=None,
           pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Normal samples: tensor/tensor (broadcast), tensor/float, float/tensor, or float/float with size."""
    mean_is_tensor, std_is_tensor = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_is_tensor and not std_is_tensor:
        if size is None:
            raise TypeError(
                f"normal() received an invalid combination of arguments - got ({type(mean).__name__}, "
                f"{type(std).__name__}), but expected one of:\n * (Tensor mean, Tensor std, *, torch.Generator "
                "generator = None, Tensor out = None)\n * (Tensor mean, float std = 1, *, torch.Generator generator "
                "= None, Tensor out = None)\n * (float mean, Tensor std, *, torch.Generator generator = None, Tensor "
                "out = None)\n * (float mean, float std, tuple of ints size, *, torch.Generator generator = None, "
                "Tensor out = None, torch.dtype dtype = None, torch.layout layout = None, torch.device device = "
                "None, bool pin_memory = False, bool requires_grad = False)\n"
            )
        dtype = _float_dtype(dtype, out)
        _require_float("normal_kernel_cpu", dtype)
        _check_std(std)
        return _factory(_sizes((size,)), dtype, device, requires_grad, out, generator,
                        ("normal", float(mean), float(std)))
    tensors = tuple(t for t in (mean, std) if isinstance(t, Tensor))
    result_dtype = tensors[0]._dtype  # torch's output is empty_like(mean), or of std when mean is a float
    _require_float("normal_kernel_cpu", result_dtype, complex_ok=False)
    _check_std(std)
    if mean_is_tensor and std_is_tensor:
        op = _NORMAL_TENSOR_TENSOR
        from ._shapes import broadcast_shapes

        broadcast_shapes(mean.shape, std.shape)
    else:
        op = _NORMAL_TENSOR_FLOAT if mean_is_tensor else _NORMAL_FLOAT_TENSOR
    params = {
        "mean": None if mean_is_tensor else float(mean),
        "std": None if std_is_tensor else float(std),
        "dtype": result_dtype,
        "generator": _generator_for(generator, tensors[0]._device) if tensors[0]._device.type != "meta" else None,
    }
    result = call(op, tensors, params)
    return write_out(out, result) if out is not None else result


def _host(array) -> np.ndarray:
    """A NumPy view of an operand (a CuPy array is copied to the host: every sampler draws there)."""
    return array.get() if hasattr(array, "get") else np.asarray(array)


def _bernoulli_tensor_impl(xp, *arrays, **params):
    """bernoulli(p) (fresh, C order) or self.bernoulli_(p) (self's fill order; p broadcast to self's shape)."""
    target = arrays[0]
    p = np.broadcast_to(_host(arrays[-1]), target.shape)
    strides = target.strides if len(arrays) == 2 else None
    return xp.asarray(_draw_bernoulli_tensor(params["generator"]._rng, p, params["dtype"], strides))


def _bernoulli_float_impl(xp, a, **params):
    strides = a.strides if params["inplace"] else None
    return xp.asarray(_draw_bernoulli(params["generator"]._rng, a.shape, params["dtype"], params["p"], strides))


_BERNOULLI_TENSOR = _sampling_op("bernoulli", _bernoulli_tensor_impl, "BernoulliBackward0")
_BERNOULLI_FLOAT = _sampling_op("bernoulli", _bernoulli_float_impl, "BernoulliBackward2")
_BERNOULLI_INPLACE_TENSOR = _sampling_op("bernoulli", _bernoulli_tensor_impl, "BernoulliBackward1")


def _check_probability(p) -> None:
    if isinstance(p, Tensor):
        if p._device.type != "meta":
            values = p._data
            if not bool(((values >= 0) & (values <= 1)).all()):
                raise RuntimeError(
                    "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be "
                    "improved?  If so, please report an enhancement request to PyTorch.)"
                )
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_fmt(p)}")


def _generator_of(tensor: Tensor, generator):
    return None if tensor._device.type == "meta" else _generator_for(generator, tensor._device)


@export
def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """Draw 0/1 with probability `input` (or the float `p`, keeping input's dtype and shape)."""
    if p is None:
        _require_float("bernoulli_tensor_cpu_p_", input._dtype)
        _check_probability(input)
        result = call(_BERNOULLI_TENSOR, (input,), {"dtype": input._dtype,
                                                    "generator": _generator_of(input, generator)})
    else:
        _check_probability(p)
        result = call(_BERNOULLI_FLOAT, (input,), {"dtype": input._dtype, "p": float(p), "inplace": False,
                                                   "generator": _generator_of(input, generator)})
    return write_out(out, result) if out is not None else result


def _poisson_impl(xp, rate, **params):
    """torch's sample_poisson, draw for draw on the generator (_rng_samplers.py): torch's numbers."""
    from . import _rng_samplers

    return xp.asarray(_rng_samplers.poisson(params["generator"]._rng, np.ascontiguousarray(_host(rate))))


_POISSON = _sampling_op("poisson", _poisson_impl, "PoissonBackward0")


@export(method=False)
def poisson(input: Tensor, generator=None) -> Tensor:
    """Poisson samples with rates `input` (float dtypes only)."""
    _require_float("poisson_cpu", input._dtype, complex_ok=False)
    if input._device.type != "meta" and not bool((input._data >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return call(_POISSON, (input,), {"dtype": input._dtype, "generator": _generator_of(input, generator)})


@export
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *, generator=None, out=None) -> Tensor:
    """Category indices drawn from the (unnormalised) rows of `input`, with or without replacement."""
    if not (input._dtype.is_floating_point):
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {SCALAR_NAMES[input._dtype.name]}"
        )
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 2**24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    # an op drawing from its generator when it runs (as bernoulli), not Python reading the probabilities, so that
    # a compiled sampling step keeps it in the graph and each replay draws anew
    result = call(_MULTINOMIAL, (input.detach(),), {"dtype": dt.int64, "num_samples": num_samples,
                                                    "replacement": bool(replacement),
                                                    "generator": _generator_of(input, generator)})
    return write_out(out, result) if out is not None else result


def _multinomial_impl(xp, a, num_samples, replacement, generator, dtype):
    rows = _host(a).reshape(-1, a.shape[-1])
    wide = rows.astype(np.float64)
    if not (np.isfinite(wide).all() and (wide >= 0).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (wide.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    shape = (num_samples,) if a.ndim == 1 else (a.shape[0], num_samples)
    return xp.asarray(_sample_categories(generator._rng, rows, num_samples, replacement).reshape(shape))


def _multinomial_meta(args, params):
    a = args[0]
    return (params["num_samples"],) if a.ndim == 1 else (a.shape[0], params["num_samples"])


_MULTINOMIAL = _sampling_op("multinomial", _multinomial_impl, "MultinomialBackward0", _multinomial_meta)


def _sample_categories(engine, rows: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """torch's multinomial on CPU.  Without replacement, or for one sample: the top-k of p / q, q ~ Exp(1) drawn
    into a tensor of p's dtype (ties, such as zero-probability categories, in index order).  With
    replacement: inverse-CDF sampling (multinomial_with_replacement)."""
    if replacement and num_samples > 1:
        return kernels.multinomial_with_replacement(engine, rows, num_samples)
    q = kernels.to_dtype(kernels.exponential(engine, rows.size, 1.0), rows.dtype).reshape(rows.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = (rows / q).astype(rows.dtype).astype(np.float64)
    if num_samples == 1:
        return np.argmax(keys, axis=1)[:, None]
    return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]


# ---------------------------------------------------------------- in-place fills

_FILL_OPS: dict = {}


def _inplace_sample(self: Tensor, grad_name: str, draw, generator, extra=()) -> Tensor:
    """self <- draw(engine, shape, dtype, strides) through a zero-gradient op, so views, versions and autograd
    follow."""
    self._check_inplace()
    op = _FILL_OPS.get(grad_name)
    if op is None:
        op = _FILL_OPS[grad_name] = _sampling_op(grad_name.lower(), _draw_impl, grad_name)
    params = {"dtype": self._dtype, "draw": draw, "generator": _generator_of(self, generator)}
    return self._inplace_from(call(op, (self, *extra), params))


def _from_keyword(value, kwargs, name: str = "from"):
    if name in kwargs:
        value = kwargs.pop(name)
    if kwargs:
        raise TypeError(f"got unexpected keyword arguments {sorted(kwargs)}")
    return value


def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *, generator=None, **kwargs) -> Tensor:
    """Fill with samples uniform on [from, to)."""
    from_ = _from_keyword(from_, kwargs)
    _require_float("check_uniform_bounds", self._dtype)
    if from_ > to:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={_fmt(from_)} > to={_fmt(to)}"
        )
    real = dt.float64 if self._dtype is dt.complex128 else dt.float32 if self._dtype.is_complex else self._dtype
    lowest, highest = float(dt.finfo(real).min), float(dt.finfo(real).max)
    from_, to = min(max(from_, lowest), highest), max(min(to, highest), lowest)  # uniform_impl_ clamps them
    return _inplace_sample(self, "UniformBackward0",
                           lambda engine, shape, dtype, strides: _draw_uniform(engine, shape, dtype, from_, to,
                                                                               strides), generator)


def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator=None) -> Tensor:
    """Fill with normal samples."""
    _require_float("normal_kernel_cpu", self._dtype)
    _check_std(std)
    return _inplace_sample(self, "NormalBackward0",
                           lambda engine, shape, dtype, strides: _draw_normal(engine, shape, dtype, mean, std,
                                                                              strides), generator)


def _random_fill(self, low, high, generator):
    """random_(from, to) and random_(from, None) (torch's random_from_to_impl)."""
    dtype = self._dtype
    if high is None and low == -(2**63):
        if dtype not in (dt.int64, dt.float64, dt.float32, dt.bfloat16):
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")
        return _inplace_sample(self, "RandomBackward0", functools.partial(_draw_random_bits, kind="full"),
                               generator)
    if high is None:
        low, high_inclusive = _full_random_range(dtype, low)
        if dtype.is_floating_point:
            low = _update_from(low, dtype)
            if low >= high_inclusive:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                                   f"casted to dtype, but got from={low} > to_inc={high_inclusive}")
        _check_random_bounds(low, high_inclusive, dtype)
    else:
        _check_int64(low, high)
        if dtype.is_floating_point and low < high:
            low, high = _update_from(low, dtype), _update_to(high, dtype)
            if low >= high:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                                   f"but got from={low} >= to={high}")
        _check_random_bounds(low, high, dtype)
        high_inclusive = high - 1
    return _inplace_sample(self, "RandomBackward0",
                           lambda engine, shape, dtype, strides: _draw_integers(engine, shape, dtype, low,
                                                                                high_inclusive, strides), generator)


def _random_method(self: Tensor, *args, generator=None, **kwargs) -> Tensor:
    """Tensor.random_ overloads: random_(), random_(to), random_(from, to), random_(from, None)."""
    if self._dtype.is_complex:
        raise _not_implemented("random_kernel_cpu", self._dtype)
    if "from" in kwargs or "to" in kwargs:
        low, high = kwargs.pop("from", 0), kwargs.pop("to", None)
        if args:
            low = args[0]
    elif len(args) == 2:
        low, high = args
    elif len(args) == 1:
        low, high = 0, args[0]
    else:  # random_(): uniform_int_distribution, not random_(0, None) (int32 differs: 32- vs 64-bit words)
        _from_keyword(None, kwargs)
        return _inplace_sample(self, "RandomBackward0", functools.partial(_draw_random_bits, kind="default"),
                               generator)
    _from_keyword(None, kwargs)
    return _random_fill(self, low, high, generator)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 draws of probability p (a float, or a tensor broadcast to self's shape)."""
    _check_probability(p)
    self._check_inplace()
    generator = _generator_of(self, generator)
    if isinstance(p, Tensor):
        p = p.expand(self.shape)
        result = call(_BERNOULLI_INPLACE_TENSOR, (self, p), {"dtype": self._dtype, "generator": generator})
    else:
        result = call(_BERNOULLI_FLOAT, (self,), {"dtype": self._dtype, "p": float(p), "inplace": True,
                                                  "generator": generator})
    return self._inplace_from(result)


def _continuous_only(distribution: str, dtype: dt.dtype) -> None:
    if not dtype.is_floating_point:
        cpp_name = dt.CPP_TYPE_NAMES.get(dtype.name, dtype.name)
        name = SCALAR_NAMES[dtype.name] if distribution == "Exponential" else cpp_name
        raise RuntimeError(
            f"{distribution} distribution is a continuous probability distribution. dtype must be a floating "
            f"point but you specified {name}"
        )


def exponential_(self: Tensor, lambd: float = 1.0, *, generator=None) -> Tensor:
    _continuous_only("Exponential", self._dtype)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    return _inplace_sample(self, "ExponentialBackward0",
                           _draw_from_double(lambda engine, n: kernels.exponential(engine, n, lambd)), generator)


def geometric_(self: Tensor, p: float, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    if self._dtype.is_complex:
        raise _not_implemented("geometric_cpu", self._dtype)
    return _inplace_sample(self, "GeometricBackward0",
                           _draw_from_double(lambda engine, n: kernels.geometric(engine, n, p)), generator)


def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator=None) -> Tensor:
    """Fill with exp(Normal(mean, std)) samples."""
    _require_float("log_normal_cpu", self._dtype, complex_ok=False)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    return _inplace_sample(self, "LogNormalBackward0",
                           _draw_from_double(lambda engine, n: kernels.log_normal(engine, n, mean, std)), generator)


def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator=None) -> Tensor:
    _continuous_only("Cauchy", self._dtype)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    return _inplace_sample(self, "CauchyBackward0",
                           _draw_from_double(lambda engine, n: kernels.cauchy(engine, n, median, sigma)), generator)


for _function in (uniform_, normal_, bernoulli_, exponential_, geometric_, log_normal_, cauchy_):
    export(_function, function=False)
export(_random_method, name="random_", function=False)


# ---------------------------------------------------------------- fill_ and zero_


def _fill_scalar_impl(xp, a, value, dtype):
    return xp.full(a.shape, value, dtype.np_dtype)


def _fill_tensor_impl(xp, a, value, dtype):
    if not dtype.is_complex and np.iscomplexobj(value):
        value = value.real
    return xp.broadcast_to(xp.asarray(value).astype(dtype.np_dtype), a.shape).copy()


def _fill_tensor_backward(ctx, grad):
    needs_self, needs_value = ctx.needs_input_grad
    return (zeros_like(grad) if needs_self else None, grad.sum() if needs_value else None)


def _fill_scalar_out(xp, out, a, value, dtype):
    out.fill(value)


_FILL_SCALAR = OpDef("fill", _fill_scalar_impl, _zero_grads, dtype_rule=_result_dtype, meta=_shape_of_first,
                     upcast_half=False, grad_name="FillBackward2", out_impl=_fill_scalar_out)
_FILL_TENSOR = OpDef("fill", _fill_tensor_impl, _fill_tensor_backward, dtype_rule=_result_dtype,
                     meta=_shape_of_first, upcast_half=False, grad_name="FillBackward3")
_ZERO = OpDef("zero", lambda xp, a, dtype: xp.zeros(a.shape, dtype.np_dtype), _zero_grads, dtype_rule=_result_dtype,
              meta=_shape_of_first, upcast_half=False, grad_name="ZeroBackward0",
              out_impl=lambda xp, out, a, dtype: out.fill(0))


def _fill_result(input: Tensor, value) -> Tensor:
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
            )
        return call(_FILL_TENSOR, (input, value), {"dtype": input._dtype})
    if not isinstance(value, (numbers.Number, np.generic)):
        name = type(value).__name__
        raise TypeError(
            f"fill_() received an invalid combination of arguments - got ({name}), but expected one of:\n"
            f" * (Tensor value)\n      didn't match because some of the arguments have invalid types: (!{name}!)\n"
            f" * (Number value)\n      didn't match because some of the arguments have invalid types: (!{name}!)\n"
        )
    return call(_FILL_SCALAR, (input,), {"value": cast_fill_value(value, input._dtype), "dtype": input._dtype})


@export
def fill_(input: Tensor, value) -> Tensor:
    """Set every element to `value` (a number or a 0-d tensor); the old values get no gradient."""
    return inplace_call(input, _fill_result, value)


@export(method=False)
def fill(input: Tensor, value) -> Tensor:
    """Out-of-place fill: a new tensor like input, filled with value."""
    return _fill_result(input, value)


@export
def zero_(input: Tensor) -> Tensor:
    """Set every element to zero."""
    return inplace_call(input, _zero_result)


def _zero_result(input: Tensor) -> Tensor:
    return call(_ZERO, (input,), {"dtype": input._dtype})
