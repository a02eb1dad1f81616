"""Devices: where a tensor's data lives ("cpu", "meta", later "cuda:N")."""

from __future__ import annotations

__all__ = ["device"]

_KNOWN_TYPES = ("cpu", "cuda", "meta")


class device:
    """ember.device("cpu"), device("cuda", 0), device("cuda:1"): a device type and optional index."""

    __slots__ = ("type", "index")

    def __new__(cls, type, index: int | None = None):
        if isinstance(type, device):
            return type
        if isinstance(type, int):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({type.__class__.__name__})")
        cached = _CACHE.get((type, index))
        if cached is not None:
            return cached
        kind, _, idx = type.partition(":")
        if idx:
            if index is not None:
                raise RuntimeError(
                    f"type (string) must not include an index because index was passed explicitly: {type}"
                )
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if kind not in _KNOWN_TYPES:
            raise RuntimeError(
                f"Expected one of cpu, cuda, meta device type at start of device string: {type}"
            )
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self = object.__new__(cls)
        object.__setattr__(self, "type", kind)
        object.__setattr__(self, "index", index)
        _CACHE[(type, index if not idx else None)] = self
        return self

    def __setattr__(self, name, value):
        raise AttributeError("ember.device is immutable")

    def __eq__(self, other) -> bool:
        # torch compares devices only with devices: torch.device("cpu") == "cpu" is False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))

    def __enter__(self):
        """`with torch.device("meta"):` makes this the default device inside the block, as torch's DeviceContext."""
        global _default_device
        _ENTERED.append(_default_device)
        _default_device = self
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        global _default_device
        _default_device = _ENTERED.pop()


_CACHE: dict = {}
_ENTERED: list = []  # the default devices that `with device(...)` blocks replaced, innermost last
CPU = device("cpu")
META = device("meta")


_default_device = CPU


_current_cuda = device("cuda", 0)


def current_cuda_device() -> device:
    """The device a tensor made with device='cuda' lands on (ember.cuda.set_device changes it)."""
    return _current_cuda


def set_current_cuda_index(index: int) -> None:
    global _current_cuda
    _current_cuda = device("cuda", int(index))


def set_default_device(value) -> None:
    """torch.set_default_device: the device factory functions use when given none (None restores cpu)."""
    global _default_device
    _default_device = CPU if value is None else device(value)


def get_default_device() -> device:
    """torch.get_default_device."""
    return _default_device


def as_device(value) -> device:
    """Normalise a device argument (str, int, device, None -> the default device, cpu unless set)."""
    if value is None:
        return _default_device
    if type(value) is device:
        return value
    return device(value)
