"""torch.ao.nn: quantized and quantization-aware-training module families."""

# isort: off
from . import intrinsic, qat, quantized  # noqa: F401
from .intrinsic import qat as _intrinsic_qat  # noqa: F401  (ember.ao.nn.intrinsic.qat)
from .intrinsic import quantized as _intrinsic_quantized  # noqa: F401  (ember.ao.nn.intrinsic.quantized)

# torch.nn.qat / torch.nn.intrinsic, the older names: attributes of ember.nn as in torch (after the above)
from ...nn import intrinsic as _nn_intrinsic  # noqa: F401
from ...nn import qat as _nn_qat  # noqa: F401
# isort: on
