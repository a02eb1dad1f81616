"""parameters_to_vector / vector_to_parameters: a model's parameters as one flat vector and back."""

from __future__ import annotations

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """Flatten `parameters` into one vector (differentiable: a cat of views)."""
    import ember

    device = None
    vec = []
    for param in parameters:
        device = _check_param_device(param, device)
        vec.append(param.view(-1))
    return ember.cat(vec)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy slices of `vec` into `parameters` (their .data now views `vec`)."""
    if not isinstance(vec, Tensor):
        from ... import typename

        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_param_device(param, device)
        num_param = param.numel()
        param.data = vec[pointer:pointer + num_param].view_as(param).data
        pointer += num_param


def _check_param_device(param: Tensor, old_param_device):
    """All parameters must live on one device (cuda index, or -1 for cpu)."""
    here = param.get_device() if param.device.type == "cuda" else -1
    if old_param_device is None:
        return here
    if here != old_param_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_param_device
