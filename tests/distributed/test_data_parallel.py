"""DDP (buckets, gradient_as_bucket_view, find_unused_parameters, no_sync) and ZeRO on 2 and 4 ranks equal
single-process training on the combined batch after 20 steps (workers/data_parallel.py)."""

import pytest

from ._launch import expect_ok, requires_mpi

pytestmark = requires_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_ddp_and_zero_equal_single_process(ranks):
    expect_ok("data_parallel.py", ranks, timeout=150)


@pytest.mark.parametrize("ranks", [2, 3])
def test_sync_batch_norm_equals_batch_norm_on_the_combined_batch(ranks):
    expect_ok("sync_batch_norm.py", ranks, timeout=120)
