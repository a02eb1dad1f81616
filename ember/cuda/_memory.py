"""Memory statistics from CuPy's device memory pool (cupy.get_default_memory_pool()).

UNVERIFIED on a GPU.  CuPy's pool counts what ember's arrays hold (used_bytes ~ torch's memory_allocated) and
what the pool keeps from the driver (total_bytes ~ memory_reserved).  Peaks are sampled when asked, not
tracked per allocation as torch's caching allocator does, so max_memory_allocated can under-report a peak that
came and went between calls.  Without a GPU, or under emulated cuda, every figure is 0.
"""

from __future__ import annotations

from .._backends import cupy_backend, emulated

_peak_allocated = 0
_peak_reserved = 0


def _pool():
    if emulated.is_enabled() or not cupy_backend.available():
        return None
    return cupy_backend.load().get_default_memory_pool()


def memory_allocated(device=None) -> int:
    global _peak_allocated
    pool = _pool()
    used = 0 if pool is None else int(pool.used_bytes())
    _peak_allocated = max(_peak_allocated, used)
    return used


def memory_reserved(device=None) -> int:
    global _peak_reserved
    pool = _pool()
    total = 0 if pool is None else int(pool.total_bytes())
    _peak_reserved = max(_peak_reserved, total)
    return total


def max_memory_allocated(device=None) -> int:
    memory_allocated(device)
    return _peak_allocated


def max_memory_reserved(device=None) -> int:
    memory_reserved(device)
    return _peak_reserved


def reset_peak_memory_stats(device=None) -> None:
    global _peak_allocated, _peak_reserved
    _peak_allocated, _peak_reserved = 0, 0
    memory_allocated(device)
    memory_reserved(device)


reset_max_memory_allocated = reset_peak_memory_stats
reset_max_memory_cached = reset_peak_memory_stats
memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_accumulated_memory_stats(device=None) -> None:
    """Nothing accumulates beyond the peaks in ember's view of CuPy's pool."""


def memory_stats(device=None) -> dict:
    """The subset of torch's keys that CuPy's pool can answer."""
    return {
        "allocated_bytes.all.current": memory_allocated(device),
        "allocated_bytes.all.peak": max_memory_allocated(device),
        "reserved_bytes.all.current": memory_reserved(device),
        "reserved_bytes.all.peak": max_memory_reserved(device),
    }


def memory_summary(device=None, abbreviated: bool = False) -> str:
    lines = [f"{key}: {value}" for key, value in memory_stats(device).items()]
    return "ember cuda memory (CuPy pool)\n" + "\n".join(lines)


def memory_snapshot(mempool_id=None) -> list:
    return []


def empty_cache() -> None:
    """Return the pool's free blocks to the driver."""
    pool = _pool()
    if pool is not None:
        pool.free_all_blocks()
        cupy_backend.load().get_default_pinned_memory_pool().free_all_blocks()


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes on the device, from the driver."""
    if emulated.is_enabled():
        return (0, 0)
    if not cupy_backend.available():
        raise RuntimeError("ember's cuda device needs CuPy and an NVIDIA GPU; ember.cuda.is_available() is False here")
    free, total = cupy_backend.load().cuda.runtime.memGetInfo()
    return int(free), int(total)


_fraction = 1.0


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap the pool at a fraction of the device's memory (cupy MemoryPool.set_limit(fraction=...))."""
    global _fraction
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    _fraction = float(fraction)
    pool = _pool()
    if pool is not None:
        pool.set_limit(fraction=_fraction)


def get_per_process_memory_fraction(device=None) -> float:
    return _fraction


def caching_allocator_alloc(size: int, device=None, stream=None):
    pool = _pool()
    if pool is None:
        raise RuntimeError("caching_allocator_alloc needs CuPy and a GPU")
    return pool.malloc(int(size))


def caching_allocator_delete(mem_ptr) -> None:
    """CuPy frees a block when its MemoryPointer is dropped; nothing to do here."""


def ipc_collect() -> None:
    """No inter-process memory handles are kept."""


def list_gpu_processes(device=None) -> str:
    return "ember.cuda.list_gpu_processes: needs NVML (pynvml), which ember does not use"


def host_memory_stats() -> dict:
    pool = None if emulated.is_enabled() or not cupy_backend.available() else (
        cupy_backend.load().get_default_pinned_memory_pool())
    return {"n_free_blocks": 0 if pool is None else int(pool.n_free_blocks())}
