"""The random-stream bookkeeping behind vmap's (and jacfwd's) `randomness` flag.

ember's samplers all draw from `ember.Generator` objects (ember/_ops/_generator.py): the CPU default
generator and one default per device.  vmap runs its function once per sample, so:

* "error": a sample that advanced any default generator called a random op: raise as torch does;
* "same": every sample starts from the same generator state, so all samples draw the same numbers;
* "different": samples draw one after the other from the stream, so they differ (not torch's numbers,
  which come from one batched draw).

A random op given an explicit user `generator=` is not seen by "error" mode.
"""

from __future__ import annotations

from .._ops import _generator

__all__ = ["RANDOM_ERROR", "check_randomness_arg", "snapshot", "restore", "changed_since"]

RANDOM_ERROR = (
    "vmap: called random operation while in randomness error mode. Please either use the 'same' or "
    "'different' randomness flags on vmap or perform the randomness operation out of vmap"
)


def check_randomness_arg(randomness: str) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}"
        )


def _generators() -> list:
    return [_generator.default_generator, *_generator._device_generators.values()]


def snapshot() -> list:
    """The state of every default generator (its engine's words, position, seed and cached normals), to compare
    against or to restore."""
    return [(gen, gen._bits.state) for gen in _generators()]


def restore(saved: list) -> None:
    for gen, state in saved:
        gen._bits.state = state


def changed_since(saved: list) -> bool:
    """Whether any default generator drew (or was reseeded, or appeared) since `saved`."""
    if len(saved) != len(_generators()):
        return True
    return any(gen._bits.state != state for gen, state in saved)
