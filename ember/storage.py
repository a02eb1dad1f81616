"""ember.storage: torch.storage, the module of the storage classes (ember defines them with its tensors)."""

from ._ops.tensor_storage import TypedStorage
from ._tensor import UntypedStorage

__all__ = ["TypedStorage", "UntypedStorage"]
