"""The NCCL communicator, through CuPy's NCCL bindings (cupy.cuda.nccl).

Recognised so that `init_process_group("nccl")` says what is missing instead of
failing obscurely.  The data path is not written yet: ember has no CUDA tensors
to feed it until its CuPy backend lands (see docs/distributed.md).
"""

from __future__ import annotations

from ._communicator import Communicator


def unavailable_reason() -> str | None:
    """Why NCCL cannot be used here (None if it could be)."""
    try:
        import cupy
        from cupy.cuda import nccl  # noqa: F401
    except ImportError:
        return "the 'nccl' backend needs CuPy with NCCL support (pip install cupy-cuda12x) and a CUDA GPU"
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return "the 'nccl' backend needs a CUDA GPU, and none is visible"
    except Exception as error:  # cupy raises its own CUDARuntimeError without a driver
        return f"the 'nccl' backend needs a CUDA GPU: {error}"
    return None


class NCCLCommunicator(Communicator):
    backend = "nccl"

    def __init__(self, *args, **kwargs) -> None:
        reason = unavailable_reason() or (
            "the 'nccl' backend's data path is not implemented yet in ember (no CUDA tensors); use backend='mpi'"
        )
        raise RuntimeError(f"ember.distributed: {reason}")
