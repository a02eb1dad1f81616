"""Process-wide knobs torch scripts call: thread counts, determinism, matmul precision, print options."""

from __future__ import annotations

import os

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
