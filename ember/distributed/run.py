"""`python -m ember.distributed.run`: torchrun's command line, launched by MPI.

    python -m ember.distributed.run --nproc-per-node 4 train.py --lr 0.1
    python -m ember.distributed.run --standalone --nproc_per_node=2 -m mypackage.train
    python -m ember.distributed.run --nnodes 2 --nproc-per-node 8 --hostfile hosts train.py   # two machines

It builds an `mpirun` command and execs it; mpirun starts the ranks, each of which runs
`python -m ember.distributed._bootstrap`, which sets torchrun's environment (RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GROUP_RANK) from the MPI launcher's variables and
runs the script as __main__.  There is no rendezvous of ember's own: MPI's launcher is the transport's
bootstrap, so --master-addr/--master-port are only exported for scripts that read them, and a job over
several machines is one mpirun over a hostfile (see docs/distributed.md), started on one machine:
--nnodes > 1 needs --hostfile, and --node-rank is accepted for torchrun compatibility and unused.
mpirun ends the whole job when a rank exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ember.distributed.run", description=__doc__.split("\n\n")[0],
                                allow_abbrev=False)
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", default="1",
                   help="ranks per machine: a number, or 'cpu' (one per core)")
    p.add_argument("--nnodes", default="1", help="number of machines (a number or MIN:MAX; MAX is used)")
    p.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0)
    p.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1")
    p.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=29500)
    p.add_argument("--standalone", action="store_true", help="one machine (the default here)")
    p.add_argument("--hostfile", default=None, help="MPI hostfile listing the machines (multi-machine jobs)")
    p.add_argument("--mpirun", default=None, help="the MPI launcher to use (default: mpirun, then mpiexec on PATH)")
    p.add_argument("--mpirun-args", dest="mpirun_args", default="", help="extra arguments for mpirun, quoted")
    p.add_argument("-m", "--module", action="store_true", help="run the script argument as a module")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    return p


def _processes_per_node(value: str) -> int:
    if value in ("cpu", "auto", "gpu"):
        return os.cpu_count() or 1
    return int(value)


def _flavour(mpirun: str) -> str:
    try:
        text = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text or "prterun" in text:
        return "openmpi"
    if "HYDRA" in text or "MPICH" in text or "Intel" in text:
        return "mpich"
    return "unknown"


def command(args: argparse.Namespace) -> list[str]:
    mpirun = args.mpirun or shutil.which("mpirun") or shutil.which("mpiexec")
    if mpirun is None:
        raise SystemExit("ember.distributed.run: no mpirun/mpiexec on PATH; install MPI: "
                         "pip install 'ember[distributed]' (see docs/distributed.md)")
    per_node = _processes_per_node(args.nproc_per_node)
    nodes = int(str(args.nnodes).split(":")[-1])
    if nodes > 1 and args.hostfile is None and "host" not in args.mpirun_args:
        raise SystemExit("ember.distributed.run: --nnodes > 1 needs --hostfile (or --mpirun-args with hosts): "
                         "MPI starts every machine's ranks from this one (see docs/distributed.md)")
    total = per_node * nodes
    flavour = _flavour(mpirun)
    line = [mpirun, "-n", str(total)]
    if flavour == "openmpi":
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            line.append("--allow-run-as-root")
        if total > (os.cpu_count() or 1) or nodes > 1:
            line.append("--oversubscribe")
        if nodes > 1:
            line += ["--map-by", f"ppr:{per_node}:node"]
        for variable in ("MASTER_ADDR", "MASTER_PORT", "PYTHONPATH", "EMBER_DISTRIBUTED_DEBUG", "OMP_NUM_THREADS"):
            if variable in os.environ:
                line += ["-x", variable]
        if args.hostfile:
            line += ["--hostfile", args.hostfile]
    elif flavour == "mpich":
        if nodes > 1:
            line += ["-ppn", str(per_node)]
        if args.hostfile:
            line += ["-f", args.hostfile]
    elif args.hostfile:
        line += ["--hostfile", args.hostfile]
    line += args.mpirun_args.split()
    if args.no_python:
        return line + [args.training_script, *args.training_script_args]
    target = ["-m", args.training_script] if args.module else [args.training_script]
    return line + [sys.executable, "-u", "-m", "ember.distributed._bootstrap", *target, *args.training_script_args]


def main(argv: list[str] | None = None) -> None:
    args = parser().parse_args(argv)
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # torchrun's default too: ranks share the cores
    line = command(args)  # after the variables above exist: Open MPI's -x only forwards variables that are set
    if args.hostfile is None and int(str(args.nnodes).split(":")[-1]) == 1:
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    sys.stdout.flush()
    os.execvp(line[0], line)


if __name__ == "__main__":
    main()
