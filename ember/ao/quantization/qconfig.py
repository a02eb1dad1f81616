"""QConfig (torch.ao.quantization.qconfig): which observers quantize a module's activations and weights."""

from __future__ import annotations

from collections import namedtuple

from .observer import (
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
)

__all__ = [
    "QConfig", "default_qconfig", "default_per_channel_qconfig", "default_dynamic_qconfig",
    "float_qparams_weight_only_qconfig",
]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """Observer factories (classes or `with_args` partials) for activations and weights."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        from ... import nn

        if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. "
                             "Use MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
default_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer, weight=default_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
