"""ember.backends: the flags torch scripts set (torch.backends.cudnn.benchmark = True, ...).

They are accepted and stored; on the CPU none changes a result.  On CUDA,
`cuda.matmul.allow_tf32` is read by the cuBLAS matmul path.
"""

from __future__ import annotations

import sys
import types

from .. import _runtime


class _Flags(types.SimpleNamespace):
    """A namespace of flags with torch's defaults."""


cudnn = _Flags(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
               is_available=lambda: False, version=lambda: None)


def _sdp_switches() -> dict:
    """torch.backends.cuda's per-backend SDPA switches, over the flags nn.attention.sdpa_kernel sets."""
    from ..nn.attention import _flags

    switches = {}
    for name, backend in (("flash", _flags.FLASH), ("mem_efficient", _flags.EFFICIENT), ("math", _flags.MATH),
                          ("cudnn", _flags.CUDNN)):
        switches[f"{name}_sdp_enabled"] = lambda backend=backend: backend in _flags.enabled
        switches[f"enable_{name}_sdp"] = lambda enabled, backend=backend: _flags.set_enabled(backend, bool(enabled))
    return switches


cuda = _Flags(matmul=_Flags(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                            allow_bf16_reduced_precision_reduction=True),
              is_built=lambda: True, is_flash_attention_available=lambda: False, **_sdp_switches())
mps = _Flags(is_available=lambda: False, is_built=lambda: False)
mkldnn = _Flags(enabled=True, is_available=lambda: False)
cpu = _Flags(get_cpu_capability=_runtime.cpu_capability)
openmp = _Flags(is_available=lambda: True)
opt_einsum = _Flags(enabled=True, strategy="auto", is_available=lambda: True)


class _MhaFlags(types.SimpleNamespace):
    """torch.backends.mha: whether nn.TransformerEncoder may take its nested-tensor inference path."""

    def __init__(self) -> None:
        super().__init__(_fastpath_enabled=True)

    def get_fastpath_enabled(self) -> bool:
        return self._fastpath_enabled

    def set_fastpath_enabled(self, value: bool) -> None:
        self._fastpath_enabled = bool(value)


mha = _MhaFlags()

# `import torch.backends.cudnn as cudnn` (a training script's classic line) imports a submodule: each namespace
# above is registered under its module name, so such imports find it (attribute access needs nothing).
for _name in ("cpu", "cuda", "cudnn", "mha", "mkldnn", "mps", "openmp", "opt_einsum"):
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
del _name
