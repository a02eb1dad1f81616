"""torch.random: seeding and saving the default random number generator's state."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ._ops import random as _random
from ._ops.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str | None = None) -> Iterator:
    """Run a block with the RNG forked: on exit every default generator is back where it was.

    The CPU generator is always forked; so are the device generators already in use (or those of `devices`).
    """
    if not enabled:
        yield
        return
    if device_type == "meta":
        raise RuntimeError("torch has no module of `meta`, you should register a module by "
                           "`torch._register_device_module`.")
    cpu_state = default_generator.get_state()
    device_generators = list(_random._device_generators.items())
    if devices is not None:
        wanted = {int(index) if not hasattr(index, "index") else (index.index or 0) for index in devices}
        device_generators = [(key, g) for key, g in device_generators if key[1] in wanted]
    device_states = [(g, g.get_state()) for _, g in device_generators]
    try:
        yield
    finally:
        default_generator.set_state(cpu_state)
        for generator, state in device_states:
            generator.set_state(state)

