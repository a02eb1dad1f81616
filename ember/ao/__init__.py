"""torch.ao: architecture optimisation; in ember, quantization (docs/quantization.md)."""

from . import nn, quantization  # noqa: F401
