"""ember.Generator and seeding: the random streams every sampler draws from (NOTE [ Random streams ] in random.py)."""

from __future__ import annotations

import numbers
import secrets

import numpy as np

from .. import _dispatch
from .. import _dtype as dt
from .._device import as_device
from .._tensor import Tensor
from ._rng_engine import FRESH_SEED, STATE_SIZE, Engine

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state"]


def _not_under_capture(what: str) -> None:
    """Reseeding inside a function ember.compile captures is Python state a replay would skip: a graph break."""
    if _dispatch.tracer is not None:
        _dispatch.capture_break(f"{what}() inside the compiled function: a replay would not reseed the generator")


class Generator:
    """torch.Generator: an independent random stream with its own seed and state -- torch's CPU generator, so a
    seed gives torch's numbers and get_state is torch's state (NOTE [ Random streams ] in random.py).  Device
    generators draw on the host from the same kind of engine."""

    def __init__(self, device="cpu") -> None:
        device = as_device(device)
        if device.type == "meta":
            raise RuntimeError("META device type not an accelerator.")
        self.device = device
        self._bits = Engine(FRESH_SEED)

    @property
    def _rng(self) -> Engine:
        """The engine every sampler draws through.  Under graph capture a draw outside a recorded random op (a
        factory such as randn, multinomial) is noted, since a replay would repeat its values (ember.compile)."""
        tracer = _dispatch.tracer
        if tracer is not None and not getattr(tracer, "drawing", False):
            tracer.untraced_draw = True
        return self._bits

    def manual_seed(self, seed) -> Generator:
        """Reseed the stream; negative seeds wrap to 64 bits as in torch (the engine takes the low 32 bits)."""
        _not_under_capture("manual_seed")
        if not isinstance(seed, numbers.Integral):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(2**63) <= seed < 2**64:
            raise ValueError("Overflow when unpacking long long")
        self._bits.reseed(seed % 2**64)
        return self

    def seed(self) -> int:
        """Reseed from the operating system's entropy; returns the new seed."""
        new_seed = secrets.randbits(64)
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self) -> int:
        return self._bits.initial_seed

    def get_state(self) -> Tensor:
        """torch's CPUGeneratorImplState bytes (5056 uint8): torch.Generator.set_state continues this stream."""
        return Tensor._make(self._bits.torch_state(), dt.uint8)

    def set_state(self, new_state) -> Generator:
        """Restore a state from get_state (ember's or torch's): the stream continues exactly from there."""
        _not_under_capture("set_rng_state")
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype is not dt.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if new_state.numel() != STATE_SIZE:
            raise RuntimeError(
                f"Expected a CPUGeneratorImplState of size {STATE_SIZE} but found the input RNG state size to be "
                f"{new_state.numel()}"
            )
        if not new_state.is_contiguous():
            raise RuntimeError("RNG state must be contiguous")
        self._bits.set_torch_state(np.asarray(new_state.cpu()._data).tobytes())
        return self

    def __reduce__(self):
        return (_rebuild_generator, (str(self.device), self.get_state()))

    def __repr__(self) -> str:
        return f"<ember.Generator object at {hex(id(self))}>"


def _rebuild_generator(device, state) -> Generator:
    return Generator(device).set_state(state)


default_generator = Generator()
default_generator.seed()  # torch seeds its default generator nondeterministically at startup
_device_generators: dict = {}  # (type, index) -> Generator, created on first use


def _default_for(device) -> Generator:
    if device.type == "cpu":
        return default_generator
    key = (device.type, device.index or 0)
    generator = _device_generators.get(key)
    if generator is None:
        generator = _device_generators[key] = Generator(f"{key[0]}:{key[1]}")
        generator.manual_seed(default_generator.initial_seed())
    return generator


def _generator_for(generator, device) -> Generator:
    """The generator to draw from for a result on `device` (the device's default when None)."""
    if generator is None:
        return _default_for(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a torch.Generator, not {type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(
            f"Expected a '{device.type}' device type for generator but found '{generator.device.type}'"
        )
    return generator


def manual_seed(seed) -> Generator:
    """Seed the default generators of every device; returns the CPU default generator."""
    seed = int(seed)
    default_generator.manual_seed(seed)
    for generator in _device_generators.values():
        generator.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed every default generator from the operating system's entropy; returns the seed."""
    new_seed = default_generator.seed()
    for generator in _device_generators.values():
        generator.manual_seed(new_seed)
    return new_seed


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    default_generator.set_state(new_state)
