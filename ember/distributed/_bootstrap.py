"""Run inside each rank by `ember.distributed.run`: set torchrun's variables, then run the script as __main__."""

from __future__ import annotations

import os
import runpy
import sys


def _first(names) -> str | None:
    for name in names:
        if name in os.environ:
            return os.environ[name]
    return None


def export() -> None:
    """RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK from Open MPI's / MPICH's / Slurm's variables."""
    table = {
        "RANK": ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"),
        "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"),
        "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"),
        "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"),
        "GROUP_RANK": ("OMPI_COMM_WORLD_NODE_RANK", "SLURM_NODEID"),
    }
    for variable, sources in table.items():
        value = _first(sources)
        if value is not None:
            os.environ[variable] = value
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")


def main() -> None:
    export()
    arguments = sys.argv[1:]
    if arguments and arguments[0] == "-m":
        sys.argv = arguments[1:]
        runpy.run_module(arguments[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = arguments
        sys.path.insert(0, os.path.dirname(os.path.abspath(arguments[0])))
        runpy.run_path(arguments[0], run_name="__main__")


if __name__ == "__main__":
    main()
