"""QConfig (torch.ao.quantization.qconfig): which observers quantize a module's activations and weights, and
`get_default_qconfig(backend)`, torch's post-training recipe per backend."""

from __future__ import annotations

import warnings
from collections import namedtuple

import ember as torch

from .observer import (
    HistogramObserver,
    MinMaxObserver,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
    per_channel_weight_observer_range_neg_127_to_127,
    weight_observer_range_neg_127_to_127,
)

__all__ = [
    "QConfig", "default_qconfig", "default_per_channel_qconfig", "default_dynamic_qconfig",
    "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig", "default_quint8_weight_qconfig",
    "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig", "get_default_qconfig",
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
per_channel_dynamic_qconfig = QConfig(activation=default_dynamic_quant_observer,
                                      weight=default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=default_placeholder_observer,
                                            weight=default_float_qparams_observer)
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)
# signed activations and weights, weights in [-127, 127] (qnnpack running xnnpack kernels)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=torch.qint8, reduce_range=False, eps=2**-12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=torch.qint8, reduce_range=False, eps=2**-12),
    weight=per_channel_weight_observer_range_neg_127_to_127)

_SUPPORTED_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def get_default_qconfig(backend: str = "x86", version: int = 0) -> QConfig:
    """torch's default post-training qconfig for a backend: HistogramObserver activations (quint8; reduce_range
    on x86 and fbgemm, whose int8 kernels could overflow otherwise) and symmetric qint8 weights, per channel
    except on qnnpack.

    Args:
        backend: "x86" (default), "fbgemm", "qnnpack" or "onednn".
        version: 0, the only version.
    """
    if backend not in _SUPPORTED_BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {_SUPPORTED_BACKENDS}")
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not supported. Version number "
                             "must be 0")
    if backend in ("x86", "fbgemm"):
        return QConfig(activation=HistogramObserver.with_args(reduce_range=True),
                       weight=default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=HistogramObserver.with_args(reduce_range=False), weight=default_weight_observer)
    if not torch.cpu._is_vnni_supported():  # onednn
        warnings.warn("Default qconfig of oneDNN backend with reduce_range of false may have accuracy issues on CPU "
                      "without Vector Neural Network Instruction support.", stacklevel=2)
    return QConfig(activation=HistogramObserver.with_args(reduce_range=False),
                   weight=default_per_channel_weight_observer)
