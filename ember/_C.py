"""ember._C: the few names of torch._C that Python programs use directly (the ``__torch_function__`` protocol's
switches); ember has no C extension behind it."""

from ._torch_function import DisableTorchFunction, DisableTorchFunctionSubclass, _disabled_torch_function_impl

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "_disabled_torch_function_impl"]
