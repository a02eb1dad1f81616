"""QConfig (torch.ao.quantization.qconfig): which observers quantize a module's activations and weights, and
`get_default_qconfig(backend)`, torch's post-training recipe per backend."""

from __future__ import annotations

import warnings
from collections import namedtuple

import ember as torch

from .fake_quantize import (
    FakeQuantize,
    FusedMovingAvgObsFakeQuantize,
    default_dynamic_fake_quant,
    default_fake_quant,
    default_fused_act_fake_quant,
    default_fused_per_channel_wt_fake_quant,
    default_fused_wt_fake_quant,
    default_per_channel_weight_fake_quant,
    default_weight_fake_quant,
    fused_per_channel_wt_fake_quant_range_neg_127_to_127,
    fused_wt_fake_quant_range_neg_127_to_127,
)
from .observer import (
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
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
    "default_qat_qconfig", "default_dynamic_qat_qconfig", "default_qat_qconfig_v2", "default_weight_only_qconfig",
    "default_activation_only_qconfig", "default_symmetric_qnnpack_qat_qconfig",
    "default_per_channel_symmetric_qnnpack_qat_qconfig", "get_default_qat_qconfig",
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


# ---------------------------------------------------------------- quantization-aware training

default_qat_qconfig = QConfig(activation=default_fake_quant, weight=default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=default_dynamic_fake_quant, weight=default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=torch.nn.Identity, weight=default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=default_fake_quant, weight=torch.nn.Identity)
# the fused observer + fake quant modules (one op per call)
default_qat_qconfig_v2 = QConfig(activation=default_fused_act_fake_quant, weight=default_fused_wt_fake_quant)
default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                       quant_max=127, dtype=torch.qint8, reduce_range=False,
                                                       eps=2**-12),
    weight=fused_wt_fake_quant_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=FusedMovingAvgObsFakeQuantize.with_args(observer=MovingAverageMinMaxObserver, quant_min=-128,
                                                       quant_max=127, dtype=torch.qint8, reduce_range=False,
                                                       eps=2**-12),
    weight=fused_per_channel_wt_fake_quant_range_neg_127_to_127)


def get_default_qat_qconfig(backend: str = "x86", version: int = 1) -> QConfig:
    """torch's default quantization-aware-training qconfig for a backend: moving-average min/max fake quant on
    activations (quint8 [0, 255], reduce_range on x86 and fbgemm) and symmetric qint8 weights, per channel
    except on qnnpack.  Version 1 (the default) uses the fused FusedMovingAvgObsFakeQuantize, version 0
    FakeQuantize.

    Args:
        backend: "x86" (default), "fbgemm", "qnnpack" or "onednn".
        version: 0 or 1.
    """
    if backend not in _SUPPORTED_BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {_SUPPORTED_BACKENDS}")
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not supported. Version number "
                             "must be 0 or 1")
    fake_quant = FakeQuantize if version == 0 else FusedMovingAvgObsFakeQuantize
    if version == 0:
        per_channel, per_tensor = default_per_channel_weight_fake_quant, default_weight_fake_quant
    else:
        per_channel, per_tensor = default_fused_per_channel_wt_fake_quant, default_fused_wt_fake_quant
    if backend == "onednn":
        activation = fake_quant.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    else:
        activation = fake_quant.with_args(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                                          reduce_range=backend != "qnnpack")
    return QConfig(activation=activation, weight=per_tensor if backend == "qnnpack" else per_channel)
