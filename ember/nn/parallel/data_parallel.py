"""DataParallel (torch.nn.DataParallel): single-process data parallelism over the visible CUDA devices.

With no CUDA device (torch's case too) it only holds the module and calls it: `.module` is the wrapped
module and state_dict keys carry the "module." prefix.  With CUDA devices the module is moved to
device_ids[0] and inputs are moved there before the call.  Deviation from torch: with several device_ids the
batch is not scattered over replicas; it runs whole on device_ids[0], which gives the same outputs and
gradients (only BatchNorm's batch statistics, computed per replica in torch, differ).
"""

from __future__ import annotations

from itertools import chain

from ..._device import device as Device
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _device_index(device) -> int:
    if isinstance(device, int):
        return device
    index = Device(device).index
    return 0 if index is None else index


def _to_device(value, device):
    """Tensors inside (nested) tuples, lists and dicts moved to device; anything else as is."""
    if hasattr(value, "to") and hasattr(value, "device") and not isinstance(value, Module):
        return value.to(device)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_to_device(v, device) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _to_device(v, device)) for k, v in value.items())
    return value


def _available_device_ids():
    from ... import cuda

    return list(range(cuda.device_count())) if cuda.is_available() else []


class DataParallel(Module):
    """Wraps `module`; forward(*inputs, **kwargs) runs it on device_ids[0] (or directly without CUDA)."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        available = _available_device_ids()
        if not available:
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = available
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = Device("cuda", self.device_ids[0])
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        inputs = _to_device(inputs, self.src_device_obj)
        kwargs = _to_device(kwargs, self.src_device_obj)
        output = self.module(*inputs, **kwargs)
        if self.output_device != self.device_ids[0]:
            output = _to_device(output, Device("cuda", self.output_device))
        return output


def data_parallel(module: Module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """Functional DataParallel: module(*inputs, **module_kwargs) on device_ids[0] (see the module docstring)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    available = _available_device_ids()
    if not available:
        raise RuntimeError("device type could not be determined")
    device_ids = available if device_ids is None else [_device_index(d) for d in device_ids]
    output_device = device_ids[0] if output_device is None else _device_index(output_device)
    source = Device("cuda", device_ids[0])
    for t in chain(module.parameters(), module.buffers()):
        if t.device != source:
            raise RuntimeError(f"module must have its parameters and buffers on device {source} (device_ids[0]) but "
                               f"found one of them on device: {t.device}")
    output = module(*_to_device(inputs, source), **_to_device(module_kwargs or {}, source))
    return output if output_device == device_ids[0] else _to_device(output, Device("cuda", output_device))
