"""Seeding the cuda generators.

ember draws random numbers for every device from its own Generator objects (torch's CPU generator, run on
the host; NOTE [ Random streams ] in ember/_ops/random.py) and copies the draws to the device, so a cuda
tensor made after manual_seed(s) holds the same values as the CPU tensor made after the same seed -- torch's
CPU numbers, not those of torch's Philox CUDA generator: reproducible, slower than cuRAND for large draws (a
known cost; cupy.random is the future fast path).  Their saved states are CPU generator states (5056 bytes),
not torch's 16-byte CUDA ones.  These functions seed and save
the per-device generators in ember/_ops/_generator.py.
"""

from __future__ import annotations


def _generators(all_devices: bool):
    from .._device import current_cuda_device
    from .._ops._generator import _default_for
    from . import device_count

    if all_devices:
        from .._device import device

        return [_default_for(device("cuda", index)) for index in range(max(device_count(), 1))]
    return [_default_for(current_cuda_device())]


def manual_seed(seed: int) -> None:
    """Seed the current cuda device's generator (allowed without a GPU, as torch defers it)."""
    for generator in _generators(False):
        generator.manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for generator in _generators(True):
        generator.manual_seed(int(seed))


def seed() -> None:
    for generator in _generators(False):
        generator.seed()


def seed_all() -> None:
    for generator in _generators(True):
        generator.seed()


def initial_seed() -> int:
    return _generators(False)[0].initial_seed()


def get_rng_state(device="cuda"):
    from .._device import device as Device
    from .._ops._generator import _default_for

    device = Device(device) if not isinstance(device, int) else Device("cuda", device)
    if device.index is None:
        device = Device("cuda", 0)
    return _default_for(device).get_state()


def get_rng_state_all() -> list:
    return [generator.get_state() for generator in _generators(True)]


def set_rng_state(new_state, device="cuda") -> None:
    from .._device import device as Device
    from .._ops._generator import _default_for

    device = Device(device) if not isinstance(device, int) else Device("cuda", device)
    if device.index is None:
        device = Device("cuda", 0)
    _default_for(device).set_state(new_state)


def set_rng_state_all(new_states) -> None:
    from .._device import device as Device
    from .._ops._generator import _default_for

    for index, state in enumerate(new_states):
        _default_for(Device("cuda", index)).set_state(state)
