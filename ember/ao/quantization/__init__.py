"""torch.ao.quantization: observers, qconfigs, stubs, static prepare/convert and quantize_dynamic
(see docs/quantization.md)."""

from .fuse_modules import fuse_known_modules, fuse_modules  # noqa: F401
from .observer import (  # noqa: F401
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    ObserverBase,
    PerChannelMinMaxObserver,
    PlaceholderObserver,
    UniformQuantizationObserverBase,
    default_dynamic_quant_observer,
    default_float_qparams_observer,
    default_histogram_observer,
    default_observer,
    default_per_channel_weight_observer,
    default_placeholder_observer,
    default_weight_observer,
    per_channel_weight_observer_range_neg_127_to_127,
    weight_observer_range_neg_127_to_127,
)
from .qconfig import (  # noqa: F401
    QConfig,
    default_dynamic_qconfig,
    default_per_channel_qconfig,
    default_per_channel_symmetric_qnnpack_qconfig,
    default_qconfig,
    default_quint8_weight_qconfig,
    default_symmetric_qnnpack_qconfig,
    float_qparams_weight_only_qconfig,
    get_default_qconfig,
    per_channel_dynamic_qconfig,
)
from .quantize import (  # noqa: F401
    convert,
    get_default_dynamic_quant_module_mappings,
    get_default_qconfig_propagation_list,
    get_default_static_quant_module_mappings,
    prepare,
    propagate_qconfig_,
    quantize,
    quantize_dynamic,
)
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401
