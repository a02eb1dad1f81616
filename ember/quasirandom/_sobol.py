"""torch.quasirandom.SobolEngine: (scrambled) Sobol' low-discrepancy sequences.

The engine follows torch/quasirandom.py step for step (state tensors `sobolstate`, `shift`, `quasi`, the
first-point special case, `num_generated`), and its C++ kernels (ATen/native/SobolEngineOps.cpp) are the
functions below, on the host: a draw XORs, for each point i, the direction numbers of the rightmost zero bit of
i into the running integer state (Gray-code order, Antonov and Saleev) and scales by 2**-30.

Scrambling (Owen's linear matrix scrambling plus a digital shift) draws its random bits as torch does:
randint(2, ...) from Generator().manual_seed(seed), or from the default generator when seed is None; ember's
generators are torch's (NOTE [ Random streams ] in ember/_ops/random.py), so a scrambled engine gives torch's
points bit for bit under the same seed (or the same manual_seed).
"""

from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import SCALAR_NAMES, Tensor
from ._direction_numbers import MAXBIT, MAXDIM, direction_numbers


def _parity(values: np.ndarray) -> np.ndarray:
    """The parity of the set bits of each (non-negative, < 2**32) int64."""
    for shift in (16, 8, 4, 2, 1):
        values = values ^ (values >> shift)
    return values & 1


def _scramble(sobolstate: np.ndarray, ltm: np.ndarray) -> np.ndarray:
    """_sobol_engine_scramble_: each direction number v[d, j] multiplied, over GF(2), by the lower-triangular
    matrix ltm[d] with its diagonal set to one (bit 29 - p of the result is row p of the matrix dot v)."""
    matrices = ltm.copy()
    index = np.arange(MAXBIT)
    matrices[:, index, index] = 1
    rows = (matrices << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)).sum(-1)  # cdot_pow2: (dimension, MAXBIT)
    result = np.zeros_like(sobolstate)
    for p in range(MAXBIT):
        result |= _parity(rows[:, p:p + 1] & sobolstate) << (MAXBIT - 1 - p)
    return result


def _trailing_ones(counts: np.ndarray) -> np.ndarray:
    """rightmost_zero: the position of the lowest zero bit of each count."""
    positions = np.zeros(counts.shape, dtype=np.int64)
    remaining = counts.copy()
    while True:
        odd = (remaining & 1) == 1
        if not odd.any():
            return positions
        positions += odd
        remaining = np.where(odd, remaining >> 1, 0)


def _advance(quasi: np.ndarray, n: int, sobolstate: np.ndarray, num_generated: int) -> np.ndarray:
    """The states after each of n steps from `quasi`, shape (n, dimension): step i XORs in the direction
    numbers of rightmost_zero(num_generated + i)."""
    columns = _trailing_ones(np.arange(num_generated, num_generated + n, dtype=np.int64))
    steps = sobolstate[:, columns].T  # (n, dimension)
    if n == 0:
        return steps
    states = np.bitwise_xor.accumulate(steps, axis=0)
    return states ^ quasi


class SobolEngine:
    r"""An engine for (scrambled) Sobol' sequences, low-discrepancy quasi-random points in [0, 1)^dimension.

    Args:
        dimension (int): the dimensionality of the points, 1 to 21201 (Joe and Kuo's direction numbers,
            search criterion D(6)).
        scramble (bool, optional): produce scrambled points (Owen's scrambling); default ``False``.
        seed (int, optional): the seed of the scrambling's random bits; default ``None`` (a random seed).

    Example::

        >>> engine = ember.quasirandom.SobolEngine(dimension=3)
        >>> engine.draw(3)
        tensor([[0.0000, 0.0000, 0.0000],
                [0.5000, 0.5000, 0.5000],
                [0.7500, 0.2500, 0.2500]])
    """

    MAXBIT = MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None) -> None:
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        from .. import tensor

        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        state = direction_numbers(dimension)
        if not scramble:
            shift = np.zeros(dimension, dtype=np.int64)
        else:
            state, shift = self._scrambled(state)
        self.sobolstate = tensor(state, dtype=dt.int64)
        self.shift = tensor(shift, dtype=dt.int64)
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2**self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def _scrambled(self, state: np.ndarray) -> tuple:
        """(scrambled direction numbers, digital shift), from torch's random bits for `seed`."""
        from .. import Generator, randint

        generator = None if self.seed is None else Generator().manual_seed(self.seed)
        shift_bits = randint(2, (self.dimension, self.MAXBIT), generator=generator).numpy()
        shift = (shift_bits << np.arange(self.MAXBIT, dtype=np.int64)).sum(-1)
        ltm = np.tril(randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=generator).numpy())
        return _scramble(state, ltm), shift

    def _draw_kernel(self, n: int, num_generated: int, dtype) -> Tensor:
        """_sobol_engine_draw: n points after the current state; advances `quasi`."""
        from .. import tensor

        if dtype not in (dt.float32, dt.float64):
            raise NotImplementedError(f'"_sobol_engine_draw" not implemented for \'{SCALAR_NAMES[dtype.name]}\'')
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}, {self.dimension}]")
        states = _advance(self.quasi.numpy(), n, self.sobolstate.numpy(), num_generated)
        if n:
            self.quasi = tensor(states[-1], dtype=dt.int64)
        np_dtype = dtype.np_dtype
        return tensor(states.astype(np_dtype) * np_dtype.type(1.0 / 2**self.MAXBIT), dtype=dtype)

    def draw(self, n: int = 1, out: Tensor | None = None, dtype=None) -> Tensor:
        """Draw the next `n` points of the sequence, a (n, dimension) tensor; they continue the earlier draws.

        Args:
            n (int, optional): how many points; default 1.
            out (Tensor, optional): the output tensor (resized to (n, dimension)).
            dtype (ember.dtype, optional): float32 or float64; default the default dtype.
        """
        from .. import cat, get_default_dtype

        if dtype is None:
            dtype = get_default_dtype()
        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                result = self._draw_kernel(n - 1, self.num_generated, dtype)
                result = cat((self._first_point.to(dtype), result), dim=-2)
        else:
            result = self._draw_kernel(n, self.num_generated - 1, dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype=None) -> Tensor:
        """Draw the next 2**m points; the total drawn must stay a power of two (the balance properties of
        Sobol' points hold for such prefixes only)."""
        n = 2**m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require n to be a power of 2. "
                f"{self.num_generated} points have been previously generated, then: "
                f"n={self.num_generated}+2**{m}={total_n}. If you still want to do this, please use "
                "'SobolEngine.draw()' instead."
            )
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> SobolEngine:
        """Back to the first point."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> SobolEngine:
        """Skip `n` points, as drawing them would, without making them."""
        from .. import tensor

        start = self.num_generated if self.num_generated == 0 else self.num_generated - 1
        steps = n - 1 if self.num_generated == 0 else n
        if steps > 0:
            states = _advance(self.quasi.numpy(), steps, self.sobolstate.numpy(), start)
            self.quasi.copy_(tensor(states[-1], dtype=dt.int64))
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"]
        if self.scramble:
            parts += ["scramble=True"]
        if self.seed is not None:
            parts += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(parts) + ")"
