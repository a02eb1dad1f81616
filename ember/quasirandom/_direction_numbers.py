"""Sobol' direction numbers from Joe and Kuo's table, as torch's _sobol_engine_initialize_state_ builds them.

The table (new-joe-kuo-6.21201: a primitive polynomial and initial direction numbers per dimension) ships as
_sobol_direction_numbers.npz next to this file, written by tools/make_sobol_table.py, and is read the first
time a SobolEngine is made.
"""

from __future__ import annotations

import os

import numpy as np

MAXBIT = 30
MAXDIM = 21201
_TABLE = os.path.join(os.path.dirname(__file__), "_sobol_direction_numbers.npz")
_table: tuple | None = None


def _load() -> tuple:
    global _table
    if _table is None:
        with np.load(_TABLE) as data:
            _table = (data["poly"].astype(np.int64), data["vinit"].astype(np.int64))
    return _table


def direction_numbers(dimension: int) -> np.ndarray:
    """The (dimension, MAXBIT) int64 direction numbers v[d, j], shifted left to MAXBIT bits.

    Row 0 is all ones (the van der Corput sequence); row d extends its polynomial's initial numbers m_1..m_s
    by the recurrence v_j = v_{j-s} ^ (2^s v_{j-s}) ^ XOR_k a_k 2^k v_{j-k} (Bratley and Fox)."""
    poly, vinit = _load()
    poly, vinit = poly[:dimension], vinit[:dimension]
    degree = np.zeros(dimension, dtype=np.int64)  # bit_length(poly) - 1, and 0 for dimension 0 (all ones)
    for bit in range(1, 64):
        degree[(poly >> bit) > 0] = bit
    degree[0] = 0
    rows = np.arange(dimension)
    state = np.zeros((dimension, MAXBIT), dtype=np.int64)
    state[0] = 1
    for j in range(MAXBIT):  # every dimension at once, column by column
        initial = j < degree
        value = state[rows, np.maximum(j - degree, 0)]
        for k in range(vinit.shape[1]):
            tap = (k < degree) & (((poly >> np.maximum(degree - 1 - k, 0)) & 1) == 1)
            value = value ^ np.where(tap, (2 << k) * state[rows, max(j - k - 1, 0)], 0)
        column = np.where(initial, vinit[:, min(j, vinit.shape[1] - 1)], value)
        column[0] = 1
        state[:, j] = column
    return state << np.arange(MAXBIT - 1, -1, -1, dtype=np.int64)
