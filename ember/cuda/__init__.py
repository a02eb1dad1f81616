"""ember.cuda: torch.cuda's API over CuPy.

Without CuPy or without an NVIDIA GPU, the queries answer as torch's CPU build
does (is_available() is False, device_count() is 0) and anything that needs a
device raises a RuntimeError that says what is missing.  `import ember` never
imports CuPy; it is loaded on first use.

Under emulated cuda (EMBER_EMULATE_CUDA=1, NOTE [ Emulated cuda ] in
ember/_backends/emulated.py) one device is reported, streams and events are
no-ops, and memory statistics are zero: the emulation checks ember's plumbing,
it is not a GPU.  UNVERIFIED: the CuPy paths here have not run on a GPU yet
(docs/cuda.md says how to check them when one is lent).
"""

from __future__ import annotations

from .. import _device
from .._backends import cupy_backend, emulated
from ._memory import (
    caching_allocator_alloc,
    caching_allocator_delete,
    empty_cache,
    get_per_process_memory_fraction,
    host_memory_stats,
    ipc_collect,
    list_gpu_processes,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ._random import (
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from ._streams import (
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    get_sync_debug_mode,
    set_stream,
    set_sync_debug_mode,
    stream,
    synchronize,
)

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of", "get_device_name",
    "get_device_properties", "get_device_capability", "get_arch_list", "is_bf16_supported", "is_tf32_supported",
    "is_initialized", "init", "can_device_access_peer", "synchronize", "Stream", "Event", "ExternalStream",
    "StreamContext", "stream", "current_stream", "default_stream", "set_stream", "get_sync_debug_mode",
    "set_sync_debug_mode", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "memory_reserved",
    "max_memory_reserved", "memory_cached", "max_memory_cached", "reset_max_memory_allocated",
    "reset_max_memory_cached", "reset_accumulated_memory_stats", "memory_stats", "memory_summary",
    "memory_snapshot", "empty_cache", "mem_get_info", "set_per_process_memory_fraction",
    "get_per_process_memory_fraction", "caching_allocator_alloc", "caching_allocator_delete", "ipc_collect",
    "list_gpu_processes", "host_memory_stats", "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
    "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "OutOfMemoryError",
    "is_emulated", "utilization", "temperature", "power_draw", "clock_rate", "memory_usage",
]

OutOfMemoryError = MemoryError  # torch.cuda.OutOfMemoryError subclasses RuntimeError; CuPy raises this family


def is_emulated() -> bool:
    """True when the cuda device is NumPy standing in for CuPy (EMBER_EMULATE_CUDA=1): not a GPU."""
    return emulated.is_enabled()


def _cupy():
    """CuPy if it imports and sees a device (and cuda is not emulated), else None."""
    if emulated.is_enabled() or not cupy_backend.available():
        return None
    return cupy_backend.load()


def _require():
    cupy = _cupy()
    if cupy is None:
        raise RuntimeError(
            "ember's cuda device needs CuPy and an NVIDIA GPU with its driver (pip install 'ember[cuda12]'); "
            "ember.cuda.is_available() is False here"
        )
    return cupy


def is_available() -> bool:
    return emulated.is_enabled() or cupy_backend.available()


def is_initialized() -> bool:
    return is_available()


def init() -> None:
    if not emulated.is_enabled():
        _require()


def device_count() -> int:
    if emulated.is_enabled():
        return 1
    return cupy_backend.device_count()


def _index(device) -> int:
    """A device argument (None, int, 'cuda:1', ember.device) as a device index."""
    if device is None:
        return _device.current_cuda_device().index
    if isinstance(device, int):
        return device
    device = _device.device(device)
    if device.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return _device.current_cuda_device().index if device.index is None else device.index


def current_device() -> int:
    if not emulated.is_enabled():
        _require()
    return _device.current_cuda_device().index


def set_device(device) -> None:
    index = _index(device)
    if index < 0:
        return  # torch ignores negative indices here
    if index >= device_count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    if not emulated.is_enabled():
        _require().cuda.Device(index).use()
    _device.set_current_cuda_index(index)


class device:
    """Context manager that makes a device current (torch.cuda.device)."""

    def __init__(self, device) -> None:
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = _device.current_cuda_device().index
        if self.index >= 0 and self.index != self.previous:
            set_device(self.index)
        return self

    def __exit__(self, *exc) -> None:
        if self.index >= 0 and self.index != self.previous:
            set_device(self.previous)


class device_of(device):
    """Context manager that makes the device of a tensor current (a no-op for CPU tensors)."""

    def __init__(self, obj) -> None:
        super().__init__(obj.get_device() if obj.is_cuda else None)


def get_device_properties(device=None):
    if emulated.is_enabled():
        return {"name": "Emulated CUDA device (NumPy)", "major": 8, "minor": 0, "totalGlobalMem": 0,
                "multiProcessorCount": 0}
    return _require().cuda.runtime.getDeviceProperties(_index(device))


def get_device_name(device=None) -> str:
    name = get_device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else name


def get_device_capability(device=None) -> tuple:
    properties = get_device_properties(device)
    return properties["major"], properties["minor"]


def get_arch_list() -> list:
    """The architectures kernels are built for: CuPy compiles at run time for the device it finds."""
    if not is_available() or emulated.is_enabled():
        return []
    major, minor = get_device_capability()
    return [f"sm_{major}{minor}"]


def is_bf16_supported(including_emulation: bool = True) -> bool:
    # CuPy has no bfloat16 arrays (see docs/cuda.md), whatever the hardware can do
    return False


def is_tf32_supported() -> bool:
    return is_available() and not emulated.is_enabled() and get_device_capability()[0] >= 8


def can_device_access_peer(device, peer_device) -> bool:
    if emulated.is_enabled():
        return False
    return bool(_require().cuda.runtime.deviceCanAccessPeer(_index(device), _index(peer_device)))


# -------------------------------------------------------------- NVML queries (torch reads them through pynvml)


def _nvml_unsupported(name: str):
    def query(device=None) -> int:
        raise RuntimeError(f"ember.cuda.{name}() needs NVML (pynvml), which ember does not use")

    query.__name__ = name
    return query


utilization = _nvml_unsupported("utilization")
temperature = _nvml_unsupported("temperature")
power_draw = _nvml_unsupported("power_draw")
clock_rate = _nvml_unsupported("clock_rate")
memory_usage = _nvml_unsupported("memory_usage")



def __getattr__(name: str):
    # torch.cuda.amp, the deprecated spelling of torch.amp, loaded on first use (it imports ember.amp)
    if name == "amp":
        import importlib

        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
