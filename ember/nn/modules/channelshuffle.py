"""torch.nn.modules.channelshuffle: the same classes, defined in misc.py (where ember keeps
that layer family); this module lets code that names torch's file (`nn.modules.channelshuffle.ChannelShuffle`) run."""

from .misc import (  # noqa: F401
    ChannelShuffle,
)

__all__ = ["ChannelShuffle"]
