"""What quantized modules share (torch.ao.nn.quantized.modules.utils)."""

from __future__ import annotations

import ember as torch
from ember import nn


class OutputQParams(nn.Module):
    """A quantized module whose output scale and zero point are plain attributes, saved in its state dict as
    0-d tensors under `scale` and `zero_point` after the module's own entries, as torch's quantized Linear,
    Conv2d and QFunctional do."""

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        self._save_weights(destination, prefix)
        destination[prefix + "scale"] = torch.tensor(self.scale)
        destination[prefix + "zero_point"] = torch.tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        self._load_weights(state_dict, prefix)
        self.scale = float(state_dict.pop(prefix + "scale"))
        self.zero_point = int(state_dict.pop(prefix + "zero_point"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)

    def _save_weights(self, destination: dict, prefix: str) -> None:
        """Entries a subclass keeps outside parameters and buffers (a conv's quantized weight), written first."""

    def _load_weights(self, state_dict: dict, prefix: str) -> None:
        """Read (and pop) the entries `_save_weights` wrote."""
