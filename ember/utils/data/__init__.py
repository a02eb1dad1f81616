"""ember.utils.data: datasets, samplers and the DataLoader (torch.utils.data's API), plus
StatefulDataLoader (torchdata's resumable loader) and SerializedList (NOTE [ Copy-on-read in forked workers ]).
"""

from ._utils.collate import default_collate, default_convert
from ._utils.worker import get_worker_info
from .dataloader import DataLoader, _DatasetKind  # noqa: F401 - torch exposes it here too
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .serialized import SerializedList
from .stateful import StatefulDataLoader

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SerializedList",
    "StackDataset",
    "StatefulDataLoader",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
