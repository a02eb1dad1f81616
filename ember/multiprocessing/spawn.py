"""torch.multiprocessing.spawn / start_processes: run fn(i, *args) in nprocs processes, report the first failure.

Each process writes its traceback, if fn raises, to its own error file (a
one-shot message; a queue could deadlock on a dying process).  `join()` waits
for any process to end; on the first non-zero exit it terminates the rest and
raises ProcessRaisedException (with the child's traceback) or
ProcessExitedException (exit code or signal), naming the failed process's index.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable


class ProcessException(Exception):
    """A spawned process failed; error_index is its rank (the i passed to fn), error_pid its pid."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed because fn raised an exception."""


class ProcessExitedException(ProcessException):
    """A process failed by a signal or a non-zero exit code without a Python exception."""

    __slots__ = ["exit_code"]

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable, i: int, args: tuple, error_file: str) -> None:
    """The child's entry point: fn(i, *args); an exception's traceback goes to error_file, exit code 1."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT from the parent: nothing to report
    except Exception:
        import traceback

        with open(error_file, "wb") as file:
            pickle.dump(traceback.format_exc(), file)
        sys.exit(1)


class ProcessContext:
    """The processes of one start_processes call; join() them, all or until the first failure."""

    def __init__(self, processes: list, error_files: list) -> None:
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self) -> list[int]:
        return [int(process.pid) for process in self.processes]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """True once every process has exited cleanly, False if some still run after `timeout`; raises on a
        failure (after terminating the others)."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_others(grace_period)
        failed = self.processes[error_index]
        error_file = self.error_files[error_index]
        if not os.access(error_file, os.R_OK):
            code = failed.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {error_index:d} terminated with signal {name}",
                                             error_index=error_index, error_pid=failed.pid, exit_code=code,
                                             signal_name=name)
            raise ProcessExitedException(f"process {error_index:d} terminated with exit code {code:d}",
                                         error_index=error_index, error_pid=failed.pid, exit_code=code)
        with open(error_file, "rb") as file:
            original_trace = pickle.load(file)
        os.unlink(error_file)
        message = f"\n\n-- Process {error_index:d} terminated with the following error:\n" + original_trace
        raise ProcessRaisedException(message, error_index, failed.pid)

    def _stop_others(self, grace_period: float | None) -> None:
        """SIGTERM, then SIGKILL after a grace period, for every process still running."""
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()

    def _join_all(self, timeout: float) -> None:
        import time

        deadline = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, deadline - time.monotonic()))


class SpawnContext(ProcessContext):
    """What spawn(join=False) returned in older torch; kept as an alias."""


def start_processes(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Start nprocs processes of `start_method` running fn(i, *args); join them unless join=False."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        descriptor, error_file = tempfile.mkstemp(prefix="ember-errorfile-", suffix=".pickle")
        os.close(descriptor)
        os.unlink(error_file)  # created only by a child that fails
        process = context.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    process_context = ProcessContext(processes, error_files)
    if not join:
        return process_context
    while not process_context.join():
        pass
    return None


def spawn(fn: Callable, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """torch.multiprocessing.spawn: start_processes with the "spawn" start method (others warn, as torch)."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t ember.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
