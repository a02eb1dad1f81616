"""torch.ao.nn.intrinsic: float modules that stand for a fused sequence (conv + relu, linear + relu, and for
quantization-aware training conv + bn (+ relu)), made by
`ember.ao.quantization.fuse_modules` so that static quantization treats the pair as one layer: one observer on
the pair's output, one quantized kernel with the relu in its requantization clamp."""

from __future__ import annotations

from ember import nn


class _FusedModule(nn.Sequential):
    """A fused float sequence: runs its modules in order; prepare observes its output as one layer's."""


class ConvReLU2d(_FusedModule):
    """Conv2d followed by ReLU, as one layer for quantization."""

    def __init__(self, conv: nn.Module, relu: nn.Module) -> None:
        if type(conv) is not nn.Conv2d or type(relu) is not nn.ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(conv)}{type(relu)}")
        super().__init__(conv, relu)


class LinearReLU(_FusedModule):
    """Linear followed by ReLU, as one layer for quantization."""

    def __init__(self, linear: nn.Module, relu: nn.Module) -> None:
        if type(linear) is not nn.Linear or type(relu) is not nn.ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(linear)}{type(relu)}")
        super().__init__(linear, relu)


class ConvBn2d(_FusedModule):
    """Conv2d followed by BatchNorm2d, for quantization-aware training (ember.ao.nn.intrinsic.qat.ConvBn2d)."""

    def __init__(self, conv: nn.Module, bn: nn.Module) -> None:
        if type(conv) is not nn.Conv2d or type(bn) is not nn.BatchNorm2d:
            raise AssertionError(f"Incorrect types for input modules{type(conv)}{type(bn)}")
        super().__init__(conv, bn)


class ConvBnReLU2d(_FusedModule):
    """Conv2d, BatchNorm2d and ReLU, for quantization-aware training (ember.ao.nn.intrinsic.qat.ConvBnReLU2d)."""

    def __init__(self, conv: nn.Module, bn: nn.Module, relu: nn.Module) -> None:
        if type(conv) is not nn.Conv2d or type(bn) is not nn.BatchNorm2d or type(relu) is not nn.ReLU:
            raise AssertionError(f"Incorrect types for input modules{type(conv)}{type(bn)}{type(relu)}")
        super().__init__(conv, bn, relu)


__all__ = ["ConvBn2d", "ConvBnReLU2d", "ConvReLU2d", "LinearReLU"]
