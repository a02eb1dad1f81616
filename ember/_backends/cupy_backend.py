"""The CUDA backend: CuPy as the array module, loaded only when a cuda tensor is made.

UNVERIFIED: no code in this file has run on a GPU yet (see docs/cuda.md); the CPU test suite covers the same
paths through the emulated backend (emulated.py), which checks the plumbing, not CuPy itself.

Ops reach CuPy through `xp` exactly as they reach NumPy: cupy.matmul goes to cuBLAS, convolution is the
im2col + GEMM written against `xp` in ember/_ops/conv.py (cuDNN through cupyx.cudnn is future work), and
reductions, elementwise math and indexing are CuPy's kernels.  This file adds only what NumPy code cannot
say: which device a copy lands on, pinned host memory, and the TF32 switch.
"""

from __future__ import annotations

import os
from functools import lru_cache

_INSTALL_HINT = "pip install 'ember[cuda12]' (or 'ember[cuda13]')"


@lru_cache(maxsize=1)
def _import():
    """CuPy, or the ImportError that explains why not."""
    try:
        import cupy
        import cupy.lib.stride_tricks  # noqa: F401  (ops use xp.lib.stride_tricks.as_strided)
    except ImportError as error:
        return error
    return cupy


def load():
    """Import CuPy lazily so that `import ember` never needs it."""
    cupy = _import()
    if isinstance(cupy, ImportError):
        raise RuntimeError(f"ember's cuda device needs CuPy: {_INSTALL_HINT}") from cupy
    _apply_tf32(cupy)
    return cupy


@lru_cache(maxsize=1)
def available() -> bool:
    """CuPy imports and sees at least one device."""
    cupy = _import()
    if isinstance(cupy, ImportError):
        return False
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CUDARuntimeError: no driver, or no device
        return False


def device_count() -> int:
    return int(_import().cuda.runtime.getDeviceCount()) if available() else 0


def to_device(array, index: int):
    """Copy a host array, or another device's array, onto device `index` (cupy.asarray under that device)."""
    cupy = load()
    with cupy.cuda.Device(index):
        if isinstance(array, cupy.ndarray):
            return array.copy() if array.device.id == index else cupy.asarray(array.get())
        return cupy.asarray(array)


def is_pinned(array) -> bool:
    """Whether a NumPy array's memory came from CuPy's pinned allocator."""
    if not available():
        return False
    try:
        import cupyx

        return bool(cupyx.is_pinned(array))  # cupyx >= 13 (hedged: absent on older CuPy)
    except (ImportError, AttributeError):
        return False


# ---------------------------------------------------------------- TF32

_tf32_applied = None


def _apply_tf32(cupy) -> None:
    """Map ember.backends.cuda.matmul.allow_tf32 onto CuPy's TF32 switch.

    CuPy reads the CUPY_TF32 environment variable ('1': cuBLAS may use TF32 tensor cores for float32 GEMM)
    when it creates a cuBLAS handle, and has no public runtime setter, so the flag is applied by setting the
    variable before the first matmul; a later change takes effect for new handles only (a caveat to verify on
    a GPU).  torch's default is False (full float32), and so is ember's.
    """
    global _tf32_applied
    from .. import backends

    wanted = bool(backends.cuda.matmul.allow_tf32)
    if wanted is _tf32_applied:
        return
    os.environ["CUPY_TF32"] = "1" if wanted else "0"
    _tf32_applied = wanted
