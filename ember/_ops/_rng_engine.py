"""torch's CPU random engine, bit for bit: the mt19937 inside at::CPUGeneratorImpl (NOTE [ Random streams ]).

torch seeds a 32-bit Mersenne Twister from the low 32 bits of the seed with the reference `init_genrand`
recurrence (ATen/core/MT19937RNGEngine.h), draws `random()` as one 32-bit output and `random64()` as two,
the first one the high half (CPUGeneratorImpl.cpp, make64BitsFrom32Bits).  Box-Muller samplers cache a
second normal in the generator (one double, one float).  This module keeps that state and hands out the raw
words in bulk through NumPy's MT19937, whose recurrence and tempering are the same: its 624-word key is
torch's state array and its `pos` is torch's `625 - left`.  `torch_state()` / `set_torch_state()` read and
write torch's `CPUGeneratorImplState` bytes, so a state moves between ember and torch in both directions.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

__all__ = ["Engine", "FRESH_SEED", "STATE_SIZE"]

FRESH_SEED = 67280421310721  # torch's seed for a newly constructed Generator (default_rng_seed_val)
_N = 624  # MERSENNE_STATE_N
_MASK32 = 0xFFFFFFFF

# CPUGeneratorImplState: legacy_pod {uint64 the_initial_seed; int left; int seeded; uint64 next;
# uint64 state[624]; double normal_x, normal_y, normal_rho; int normal_is_valid; (4 bytes padding)},
# then float next_float_normal_sample; bool is_next_float_normal_sample_valid; (3 bytes padding).
_HEAD = struct.Struct("<QiiQ")
_HEAD_SIZE = _HEAD.size  # 24
_WORDS_END = _HEAD_SIZE + 8 * _N  # 5016
_NORMAL = struct.Struct("<dddi4x")  # normal_x, normal_y, normal_rho, normal_is_valid
_FLOAT_NORMAL = struct.Struct("<f?3x")
STATE_SIZE = _WORDS_END + _NORMAL.size + _FLOAT_NORMAL.size  # 5056 = sizeof(CPUGeneratorImplState)


@functools.lru_cache(maxsize=64)
def _seeded_key(seed32: int) -> np.ndarray:
    """mt19937's init_with_uint32: the 624-word state for a 32-bit seed (a sequential recurrence, run once per
    seed; manual_seed in a loop reuses it)."""
    words = [seed32]
    x = seed32
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & _MASK32
        words.append(x)
    key = np.array(words, np.uint32)
    key.flags.writeable = False
    return key


class Engine:
    """One CPU generator's state: the mt19937 words and position, the seed, and the two cached normals.

    `fresh` is torch's `next == 0` right after seeding (the first draw regenerates the words); it only
    matters to the bytes of torch_state, where torch writes next = 0 rather than 624.
    """

    __slots__ = ("_bits", "_words", "initial_seed", "fresh", "next_double_normal", "next_float_normal")

    def __init__(self, seed: int = FRESH_SEED) -> None:
        self._bits = np.random.MT19937(0)
        self._words = np.random.Generator(self._bits)  # its integers() hands out whole raw words in C
        self.reseed(seed)

    def reseed(self, seed: int) -> None:
        """mt19937(seed), as CPUGeneratorImpl::set_current_seed: the cached normals are dropped."""
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": _seeded_key(seed & _MASK32), "pos": _N}}
        self.initial_seed = seed
        self.fresh = True
        self.next_double_normal = None
        self.next_float_normal = None

    # ------------------------------------------------------------ raw draws

    def random(self, n: int) -> np.ndarray:
        """n calls of CPUGeneratorImpl::random(): 32-bit words (uint32)."""
        if n:
            self.fresh = False
        return self._words.integers(0, 1 << 32, size=n, dtype=np.uint32)

    def random64(self, n: int) -> np.ndarray:
        """n calls of CPUGeneratorImpl::random64(): (first word << 32) | second word (uint64).  NumPy's MT19937
        builds its 64-bit draws the same way, high word first."""
        if n:
            self.fresh = False
        return self._words.integers(0, 1 << 64, size=n, dtype=np.uint64)

    # ------------------------------------------------------------ state

    @property
    def state(self) -> tuple:
        """A comparable snapshot of everything above (restore it by assigning it back)."""
        bits = self._bits.state["state"]
        return (bits["key"].tobytes(), int(bits["pos"]), self.initial_seed, self.fresh, self.next_double_normal,
                self.next_float_normal)

    @state.setter
    def state(self, value: tuple) -> None:
        key, pos, self.initial_seed, self.fresh, self.next_double_normal, self.next_float_normal = value
        self._bits.state = {"bit_generator": "MT19937",
                            "state": {"key": np.frombuffer(key, np.uint32), "pos": pos}}

    def torch_state(self) -> np.ndarray:
        """torch.Generator.get_state()'s bytes (CPUGeneratorImpl::get_state; unused fields and padding zero)."""
        bits = self._bits.state["state"]
        pos = int(bits["pos"])
        left = _N + 1 - pos
        next_index = 0 if self.fresh else pos
        double_valid = self.next_double_normal is not None
        float_valid = self.next_float_normal is not None
        raw = bytearray(STATE_SIZE)
        _HEAD.pack_into(raw, 0, self.initial_seed, left, 1, next_index)
        raw[_HEAD_SIZE:_WORDS_END] = bits["key"].astype("<u8").tobytes()
        _NORMAL.pack_into(raw, _WORDS_END, 0.0, self.next_double_normal if double_valid else 0.0, 0.0,
                          int(double_valid))
        _FLOAT_NORMAL.pack_into(raw, _WORDS_END + _NORMAL.size,
                                self.next_float_normal if float_valid else 0.0, float_valid)
        return np.frombuffer(bytes(raw), np.uint8).copy()

    def set_torch_state(self, raw: bytes) -> None:
        """CPUGeneratorImpl::set_state from torch's bytes (the caller checked the size)."""
        seed, left, seeded, next_index = _HEAD.unpack_from(raw, 0)
        if not (seeded and 0 < left <= _N and 0 <= next_index <= _N):
            raise RuntimeError("Invalid mt19937 state")
        words = np.frombuffer(raw, "<u8", _N, _HEAD_SIZE).astype(np.uint32)  # torch copies uint64 -> uint32
        _, normal_y, _, normal_valid = _NORMAL.unpack_from(raw, _WORDS_END)
        float_sample, float_valid = _FLOAT_NORMAL.unpack_from(raw, _WORDS_END + _NORMAL.size)
        # The next output is word[625 - left] (or a regeneration when left == 1): NumPy's position.
        self._bits.state = {"bit_generator": "MT19937", "state": {"key": words, "pos": _N + 1 - left}}
        self.initial_seed = seed
        self.fresh = left == 1 and next_index == 0
        self.next_double_normal = normal_y if normal_valid else None
        self.next_float_normal = float_sample if float_valid else None
