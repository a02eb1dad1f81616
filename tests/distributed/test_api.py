"""What needs no MPI job: the launcher's command line, errors before init, the nccl backend's message."""

import os
import sys

import pytest

import ember
import ember.distributed as dist
from ember.distributed import run


def test_launcher_builds_an_mpirun_command(monkeypatch):
    monkeypatch.setattr(run, "_flavour", lambda mpirun: "openmpi")
    args = run.parser().parse_args(["--nproc_per_node=3", "--master-port", "1234", "train.py", "--lr", "0.1"])
    line = run.command(args)
    assert line[1:3] == ["-n", "3"]
    assert line[-7:-3] == [sys.executable, "-u", "-m", "ember.distributed._bootstrap"]
    assert line[-3:] == ["train.py", "--lr", "0.1"]
    assert "ember.distributed._bootstrap" in line


def test_launcher_module_mode_and_multinode_needs_hostfile(monkeypatch):
    monkeypatch.setattr(run, "_flavour", lambda mpirun: "openmpi")
    line = run.command(run.parser().parse_args(["--nproc-per-node", "2", "-m", "pkg.train"]))
    assert line[-2:] == ["-m", "pkg.train"]
    with pytest.raises(SystemExit, match="hostfile"):
        run.command(run.parser().parse_args(["--nnodes", "2", "--nproc-per-node", "2", "train.py"]))
    line = run.command(run.parser().parse_args(["--nnodes", "2", "--nproc-per-node", "2", "--hostfile", "h",
                                                "train.py"]))
    assert line[1:3] == ["-n", "4"] and "--hostfile" in line


def test_bootstrap_sets_torchrun_variables(monkeypatch):
    from ember.distributed import _bootstrap

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2")
    _bootstrap.export()
    assert (os.environ["RANK"], os.environ["WORLD_SIZE"], os.environ["LOCAL_RANK"],
            os.environ["LOCAL_WORLD_SIZE"]) == ("3", "4", "1", "2")


def test_before_init():
    assert dist.is_available() and not dist.is_initialized()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(ValueError, match="init_process_group"):
        dist.all_reduce(ember.ones(2))


def test_nccl_without_cupy_says_what_is_missing():
    with pytest.raises(RuntimeError, match="nccl"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_unknown_backend():
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.init_process_group("carrier-pigeon")


def test_reduce_op_names():
    assert [op.name for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN,
                               dist.ReduceOp.MAX)] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
