"""The communicator interface: what ember.distributed needs from a transport engine.

A `Communicator` moves contiguous backend arrays (NumPy on the CPU, CuPy on a
GPU) between the ranks of one group.  Every operation is non-blocking: it
starts the transfer in the engine (MPI, NCCL) and returns a `Request`; the
process-group layer (`_process_group.py`) polls requests against a deadline, so
a peer that died or hangs turns into a RuntimeError instead of a silent hang.
See NOTE [ Deadlines ] there.

Operations work in place on the arrays given; dtypes are the engine's
business only as far as the process-group layer already narrowed them
(see NOTE [ Wire dtypes ] in `_process_group.py`): reductions arrive as
float32/float64/complex/integer arrays, everything else as raw bytes.

Two implementations: `_mpi.MPICommunicator` (mpi4py) and `_nccl.NCCLCommunicator`
(CuPy's NCCL bindings; a stub that explains what is missing).
"""

from __future__ import annotations

# Reduction names the engines understand.
REDUCTIONS = ("sum", "product", "min", "max")


class Request:
    """A started operation: `test()` says whether it has finished (and drives progress)."""

    def test(self) -> bool:
        raise NotImplementedError


class DoneRequest(Request):
    """An operation that needed no transfer (a group of one, a rank outside the group)."""

    def test(self) -> bool:
        return True


class Communicator:
    """One group of ranks on one engine.  Ranks here are ranks *in this communicator*."""

    backend: str = "undefined"
    rank: int = 0
    size: int = 1

    # ---- collectives: every rank of the communicator calls them, in the same order
    def allreduce(self, array, op: str) -> Request:
        """Reduce `array` elementwise over all ranks; every rank gets the result in place."""
        raise NotImplementedError

    def broadcast(self, array, root: int) -> Request:
        """Copy root's `array` into every other rank's `array`."""
        raise NotImplementedError

    def reduce(self, array, op: str, root: int) -> Request:
        """Like allreduce, but only root's `array` receives the result; the others are left unchanged."""
        raise NotImplementedError

    def allgather(self, send, receive) -> Request:
        """receive (size * send.size elements) = the concatenation of every rank's `send`, in rank order."""
        raise NotImplementedError

    def reduce_scatter(self, send, receive, op: str) -> Request:
        """Reduce `send` (size * receive.size elements) over ranks; rank r keeps block r in `receive`."""
        raise NotImplementedError

    def gather(self, send, receive, root: int) -> Request:
        """root's `receive` = concatenation of every rank's `send`; `receive` is None off root."""
        raise NotImplementedError

    def scatter(self, send, receive, root: int) -> Request:
        """Block r of root's `send` goes to rank r's `receive`; `send` is None off root."""
        raise NotImplementedError

    def alltoallv(self, send, send_counts, receive, receive_counts) -> Request:
        """Send send_counts[r] consecutive elements to rank r; receive receive_counts[r] from rank r."""
        raise NotImplementedError

    def barrier(self) -> Request:
        raise NotImplementedError

    # ---- point to point
    def send(self, array, destination: int, tag: int) -> Request:
        raise NotImplementedError

    def receive(self, array, source: int | None, tag: int) -> Request:
        """Receive into `array`; source None means any rank.  The request's `source` says who sent."""
        raise NotImplementedError

    # ---- groups and lifetime
    def split(self, ranks: list[int]) -> Communicator | None:
        """A communicator over `ranks` (ranks of this communicator, sorted); None on ranks outside it.
        Every rank of this communicator must call it (it is collective, and blocking)."""
        raise NotImplementedError

    def abort(self, code: int = 1) -> None:
        """End every process of the job now (used when a rank dies with an uncaught exception)."""
        raise NotImplementedError

    def free(self) -> None:
        pass
