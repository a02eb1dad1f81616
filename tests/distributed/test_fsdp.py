"""fully_shard on 2 and 4 ranks equals single-process training, holds ~1/N of the state per rank, and a
distributed checkpoint saved on N ranks loads on M (workers/sharded.py)."""

import pytest

from ._launch import expect_ok, requires_mpi

pytestmark = requires_mpi


@pytest.mark.parametrize("ranks", [2, 4])
def test_fsdp_equals_single_process_with_sharded_memory(ranks):
    output = expect_ok("sharded.py", ranks, "train", timeout=150)
    assert "memory ratio per rank" in output


def test_checkpoint_saved_on_4_ranks_loads_on_2_and_3(tmp_path):
    expect_ok("sharded.py", 4, "save", str(tmp_path), timeout=120)
    assert (tmp_path / ".metadata").exists() and (tmp_path / "__3_0.distcp").exists()
    expect_ok("sharded.py", 2, "load", str(tmp_path), timeout=120)
    expect_ok("sharded.py", 3, "load", str(tmp_path), timeout=120)


def test_mixed_precision_policy_computes_in_bf16_and_keeps_float32_shards():
    expect_ok("sharded.py", 2, "mixed", timeout=120)
