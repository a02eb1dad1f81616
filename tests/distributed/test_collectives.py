"""Every collective against its definition, on 2 and 4 real MPI ranks (workers/collectives.py)."""

import pytest

from ._launch import expect_ok, requires_mpi

pytestmark = requires_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_collectives_match_their_definitions(ranks):
    expect_ok("collectives.py", ranks, timeout=120)
