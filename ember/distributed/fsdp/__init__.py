"""ember.distributed.fsdp: fully sharded data parallel, FSDP2's API (`fully_shard`)."""

from ._fully_shard import FSDPModule, MixedPrecisionPolicy, ShardedTensor, fully_shard

__all__ = ["FSDPModule", "MixedPrecisionPolicy", "ShardedTensor", "fully_shard"]
