"""Process-wide knobs torch scripts call: thread counts, determinism, matmul precision, print options."""

from __future__ import annotations

import functools
import os
import types

_threads = int(os.environ.get("OMP_NUM_THREADS", "0") or 0) or (os.cpu_count() or 1)
_deterministic = False
_deterministic_warn_only = False
_matmul_precision = "highest"


def set_num_threads(count: int) -> None:
    """Record the intra-op thread count; NumPy's BLAS threads follow it when threadpoolctl is installed."""
    global _threads
    if count <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _threads = int(count)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(count)


def get_num_threads() -> int:
    return _threads


def set_num_interop_threads(count: int) -> None:
    """Accepted for compatibility: ember runs one op at a time."""


def get_num_interop_threads() -> int:
    return 1


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """ember's CPU kernels are deterministic already; the flag is stored for scripts that read it."""
    global _deterministic, _deterministic_warn_only
    _deterministic, _deterministic_warn_only = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic_warn_only


def set_float32_matmul_precision(precision: str) -> None:
    global _matmul_precision
    if precision not in ("highest", "high", "medium"):
        raise RuntimeError(f"Invalid precision: {precision}, expected highest, high or medium")
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision


def init_num_threads() -> None:
    """torch initialises a new thread's OpenMP pool here; ember's thread count is process-wide, so nothing to do."""


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """use_deterministic_algorithms by level: 0 / "default" off, 1 / "warn" warn only, 2 / "error" on."""
    if not isinstance(debug_mode, (int, str)):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if isinstance(debug_mode, str):
        levels = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in levels:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = levels[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The use_deterministic_algorithms state as a level: 0 off, 1 warn only, 2 on."""
    if not _deterministic:
        return 0
    return 1 if _deterministic_warn_only else 2


def get_device_module(device=None) -> types.ModuleType:
    """The module of a device type (ember.cuda for "cuda:1", ember.cpu for "cpu"); with no device, the current
    accelerator's, or ember.cpu when there is none."""
    import sys

    from ._device import as_device
    from ._device import device as device_class

    if isinstance(device, device_class):
        name = device.type
    elif isinstance(device, str):
        name = as_device(device).type
    elif device is None:
        from . import cuda

        name = "cuda" if cuda.is_available() else "cpu"
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    module = getattr(sys.modules["ember"], name, None)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as 'torch.{name}'.")
    return module


# NOTE [ torch's CPU kernel arithmetic ]
# torch compiles its CPU kernels once per instruction set and picks one when it starts
# (torch.backends.cpu.get_cpu_capability(), lowered with ATEN_CPU_CAPABILITY=default|avx2|avx512).  Two
# consequences matter for ops that must give torch's last bits:
# - the AVX2 and AVX512 builds are compiled with FMA, and the compiler contracts `a + b * c` in scalar kernel
#   loops into one fused multiply-add (rounded once): linspace's `start + step * i` is such a loop (measured:
#   torch 2.13 matches an exact fma on avx2/avx512 and the two-rounding form with ATEN_CPU_CAPABILITY=default).
#   Builds for other architectures (aarch64, clang's default -ffp-contract=on) contract too.  The same holds
#   for the vectorised binary kernels: add/sub with alpha (fma(other, alpha, input)), lerp (fma(w, end - a, a)
#   for |w| < 0.5, fma(a - end, 1 - w, end) otherwise) and addcmul (fma(value * t1, t2, a)); addcdiv is not
#   fused.  ember computes those with C loops (ember/_compile/loops.py), bit-equal to torch.
# - torch's float sqrt is not always correctly rounded (1 ulp off in ~16 % of float32 inputs on this
#   machine's AVX512 build, likely MKL's vector math); ember's is (IEEE), so optimizers that take a square
#   root (Adam, RMSprop) still drift from torch by an ulp here and there.
# - torch's sum kernel adds in 32-byte vectors (8 floats) on every x86 build, AVX512 included (measured on
#   torch 2.13; see `_torch_float_sum` in ember/ao/quantization/observer.py).
_CAPABILITY_ORDER = ("DEFAULT", "AVX2", "AVX512")


@functools.cache
def cpu_flags() -> frozenset:
    """The CPU feature flags /proc/cpuinfo lists ("avx2", "fma", "avx512_vnni", ...); empty where there is none."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _detected_x86_capability() -> str:
    """What torch's cpuinfo check would pick on this x86 machine: AVX512 needs avx512 f/vl/bw/dq and fma,
    AVX2 needs avx2 and fma."""
    flags = cpu_flags()
    if not flags:  # no /proc (macOS): every x86 Mac torch supports has AVX2
        return "AVX2"
    if {"avx512f", "avx512vl", "avx512bw", "avx512dq", "fma"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"


@functools.cache
def _is_x86() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def cpu_capability() -> str:
    """torch.backends.cpu.get_cpu_capability(): the instruction set torch's CPU kernels would run with here
    ("DEFAULT", "AVX2" or "AVX512" on x86; "DEFAULT" elsewhere), lowered by ATEN_CPU_CAPABILITY as in torch."""
    if not _is_x86():
        return "DEFAULT"
    detected = _detected_x86_capability()
    requested = os.environ.get("ATEN_CPU_CAPABILITY", "").upper()
    if requested in _CAPABILITY_ORDER and _CAPABILITY_ORDER.index(requested) < _CAPABILITY_ORDER.index(detected):
        return requested
    return detected


def kernels_fuse_multiply_add() -> bool:
    """Whether torch's scalar CPU loops round `a + b * c` once (NOTE [ torch's CPU kernel arithmetic ])."""
    return not _is_x86() or cpu_capability() != "DEFAULT"
