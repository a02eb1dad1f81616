"""LinearCrossEntropyOptions: how F.linear_cross_entropy chunks the batch (torch 2.13's; its validation, "auto"
resolution and chunk-size heuristic ported from torch/nn/modules/linear_cross_entropy_options.py, BSD licence).

ember runs every chunked policy the way torch's "accurate" runs on the CPU: logits, softmax and gradient
accumulation in `acc_dtype` (float32 for float16/bfloat16 inputs), so `acc_policy` is validated and reported
but does not change the numbers.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, NamedTuple

from ... import _dtype as dt

__all__ = ["LinearCrossEntropyOptions"]


class _AutoDefault(NamedTuple):
    acc_policy: str
    chunking_method: str


# torch's per-(device type, input dtype) picks for the "auto" sentinels, and its fallback
_AUTO_DEFAULTS = {
    ("cuda", "bfloat16"): _AutoDefault("compact", "aspect_ratio:2"),
    ("cuda", "float16"): _AutoDefault("compact", "aspect_ratio:2"),
    ("cpu", "bfloat16"): _AutoDefault("accurate", "aspect_ratio"),
    ("cpu", "float16"): _AutoDefault("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = _AutoDefault("compact", "aspect_ratio:2")
_POLICIES = {"auto", "accurate", "balanced", "compact"}


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """Configuration of linear_cross_entropy's chunked path: the batch is processed `batch_chunk_size` rows at
    a time, so the (num_batches, num_classes) logits are never materialized whole (an LLM's vocabulary head).
    `chunking_method` "aspect_ratio[:N]" sizes chunks so a chunk's logits take the input's memory (divided by
    N); "auto" picks per device and dtype; None uses `batch_chunk_size`.  `allow_retain_graph=False` lets the
    mean/sum backward consume gradients computed during forward (a second backward raises)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: object = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, separator, factor = self.chunking_method.partition(":")
            if not separator:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None
                or (isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (dt.float16, dt.bfloat16, dt.float32, dt.float64):
            raise ValueError(
                f"acc_dtype must be one of {{None, ember.float16, ember.bfloat16, ember.float32, ember.float64}}, "
                f"got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick automatically.")

    @staticmethod
    def _ceil_div(a: int, b: int) -> int:
        return -(-a // b)

    def _compute_batch_chunk_size(self, num_batches: int, in_features: int, num_classes: int,
                                  method: str | None = None) -> int:
        """"aspect_ratio[:N]": the next power of two at or above num_batches / ceil(num_classes / in_features),
        divided by N, at most num_batches."""
        method = str(method if method is not None else self.chunking_method)
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        target = self._ceil_div(num_batches, self._ceil_div(num_classes, in_features))
        chunk_size = 1 << (target - 1).bit_length()
        return min(chunk_size // factor, num_batches)

    def _adjust(self, num_batches: int, in_features: int, num_classes: int, dtype, device=None
                ) -> LinearCrossEntropyOptions:
        """The options with "auto" and None resolved for one call (torch's _adjust)."""
        acc_policy, chunking_method = self.acc_policy, self.chunking_method
        if chunking_method == "auto" and self.batch_chunk_size is not None:
            chunking_method = None  # (an explicit size wins over the automatic one)
        if acc_policy == "auto" or chunking_method == "auto":
            picked = (_AUTO_DEFAULTS.get((device.type, dtype.name), _AUTO_FALLBACK) if device is not None
                      else _AUTO_FALLBACK)
            acc_policy = picked.acc_policy if acc_policy == "auto" else acc_policy
            chunking_method = picked.chunking_method if chunking_method == "auto" else chunking_method
        batch_chunk_size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if chunking_method is not None:
            batch_chunk_size = self._compute_batch_chunk_size(num_batches, in_features, num_classes, chunking_method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != batch_chunk_size:
                raise ValueError(
                    f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{chunking_method}') give "
                    f"different chunk sizes ({self.batch_chunk_size} vs {batch_chunk_size}); pass only one.")
        acc_dtype = self.acc_dtype
        if acc_dtype is None:  # float32 for half inputs under "auto" (ember's CPU and CUDA both have the mm)
            half = dtype in (dt.float16, dt.bfloat16) and device is not None and device.type in ("cpu", "cuda")
            acc_dtype = dt.float32 if self.acc_policy == "auto" and half else dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=chunking_method,
                                   batch_chunk_size=max(1, batch_chunk_size), acc_dtype=acc_dtype)
