"""A rank that raises, exits, or hangs ends the job within a bounded time with a clear error."""

import time

import pytest

from ._launch import launch, requires_mpi

pytestmark = requires_mpi


@pytest.mark.parametrize("mode, message", [
    ("raise", "rank 1 failed on purpose"),
    ("exit", "exited with non-zero status"),
    ("hang", "timed out after 0:00:03"),
])
def test_failing_rank_ends_the_job(mode, message):
    start = time.monotonic()
    code, output = launch("faults.py", 2, mode, timeout=60)
    elapsed = time.monotonic() - start
    assert code != 0, output
    assert message in output, output
    assert "should not happen" not in output
    assert elapsed < 40, f"took {elapsed:.1f}s"
