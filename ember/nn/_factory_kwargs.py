"""torch.nn.factory_kwargs: the factory keyword arguments (device, dtype, memory_format) a module was given."""

from __future__ import annotations

from typing import Any

__all__ = ["factory_kwargs"]


def factory_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """A dict of factory kwargs to pass to ember.empty and kin, checked early: unknown keys are a TypeError, and
    a `factory_kwargs` entry supplies keys the caller's own signature shadows (given twice: TypeError)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    result = dict(kwargs.get("factory_kwargs", {}))
    for key in simple_keys:
        if key in kwargs:
            if key in result:
                raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
            result[key] = kwargs[key]
    return result
