"""nn.utils: rnn packing helpers, gradient clipping, parametrizations, pruning and friends."""

from . import rnn  # noqa: F401
