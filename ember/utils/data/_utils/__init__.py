"""Internals of the DataLoader: collation, fetching, the worker loop, the shared-memory transport.

`python_exit_status` follows torch: set to True by an atexit hook, so an
iterator's __del__ running during interpreter shutdown (when modules may
already be torn down) skips the worker shutdown handshake; multiprocessing's
own atexit hook terminates the daemonic workers then.
"""

from __future__ import annotations

import atexit

# How often (seconds) a blocked main process checks that its workers are alive, and a worker checks that
# its main process is.  torch uses 5.0; a shorter interval reports a dead worker sooner for a negligible
# cost (the check runs only when a queue read times out).
MP_STATUS_CHECK_INTERVAL = 1.0

python_exit_status = False


def _set_python_exit_flag() -> None:
    global python_exit_status
    python_exit_status = True


atexit.register(_set_python_exit_flag)

from . import collate, fetch, worker  # noqa: E402, F401
