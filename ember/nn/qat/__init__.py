"""torch.nn.qat: the older name of ember.ao.nn.qat (quantization-aware-training modules)."""

from ember.ao.nn.qat import *  # noqa: F401,F403
from ember.ao.nn.qat import Conv1d, Conv2d, Conv3d, Linear, modules  # noqa: F401
